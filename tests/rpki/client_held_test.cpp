// Tests of rpki/client.h: what a hostile cache can make the client hold
// and spend. Router keys: an SPKI over kMaxSpkiLen is Corrupt Data, real
// P-256 keys pass.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <set>

#include "rpki/client.h"
#include "tests/rpki/client_testing.h"

namespace petrel::rpki {
namespace {

using std::chrono::seconds;

using testing::find;
using testing::sent;
using Driver = testing::ClientDriver;

// A key of `ski` whose SPKI is `len` octets (the first ones those of a
// DER SEQUENCE, the rest filler: the client keeps it as received).
RouterKey key_of(uint8_t ski, size_t len, uint32_t asn = 64496) {
  RouterKey k;
  k.ski.fill(ski);
  k.asn = asn;
  k.spki.assign(len, 0x42);
  if (len > 0) k.spki[0] = 0x30;
  return k;
}

constexpr size_t kP256SpkiLen = 91;  // RFC 8208 section 3.1's key, as DER SubjectPublicKeyInfo

ErrorReport error_sent(const ClientActions& acts) {
  for (const auto& m : sent(acts)) {
    if (const auto* e = std::get_if<ErrorReport>(&m.pdu)) return *e;
  }
  ADD_FAILURE() << "no Error Report sent";
  return {};
}

TEST(ClientRouterKeys, AnSpkiOverTheBoundIsCorruptDataLikeAnyCorruptPdu) {
  Driver h;
  (void)h.step(Connected{});
  auto first = h.cache(1, {CacheResponse{1}, RouterKeyPdu{true, key_of(1, kP256SpkiLen)},
                           EndOfData{1, 1, Intervals{100, 50, 1000}}});
  ASSERT_NE(find<ApplyUpdate>(first), nullptr);
  ASSERT_EQ(h.client.router_keys().size(), 1u);

  // At the next refresh the cache answers with a key of 1,025 octets.
  (void)h.advance(seconds(100));
  const RouterKeyPdu big{true, key_of(2, kMaxSpkiLen + 1)};
  auto a = h.cache(1, {CacheResponse{1}, big});
  const ErrorReport e = error_sent(a);
  EXPECT_EQ(e.code, ErrorCode::kCorruptData);
  EXPECT_EQ(e.pdu, encode(1, big));  // the whole PDU quoted: it is far below kMaxPduLen / 2
  EXPECT_NE(e.text.find("SPKI"), std::string::npos) << e.text;
  ASSERT_NE(find<CloseConnection>(a), nullptr);
  EXPECT_EQ(find<CloseConnection>(a)->reason, CloseReason::kErrorSent);
  EXPECT_EQ(find<ApplyUpdate>(a), nullptr);
  // As for any corrupt PDU: the data in force stays, nothing of the
  // answer is held, and the next connection asks for everything.
  EXPECT_EQ(h.client.router_keys(), (std::set<RouterKey>{key_of(1, kP256SpkiLen)}));
  EXPECT_TRUE(h.client.has_data());
  (void)h.step(Disconnected{});
  auto r = h.advance(seconds(50));
  ASSERT_NE(find<Reconnect>(r), nullptr);
  auto q = sent(h.step(Connected{}));
  ASSERT_EQ(q.size(), 1u);
  EXPECT_TRUE(std::holds_alternative<ResetQuery>(q[0].pdu));
}

TEST(ClientRouterKeys, KeysUpToTheBoundAreKept) {
  Driver h;
  (void)h.step(Connected{});
  auto a = h.cache(1, {CacheResponse{1}, RouterKeyPdu{true, key_of(1, kP256SpkiLen)},
                       RouterKeyPdu{true, key_of(2, kMaxSpkiLen)}, RouterKeyPdu{true, key_of(3, 0)},
                       EndOfData{1, 1, Intervals{100, 50, 1000}}});
  const auto* up = find<ApplyUpdate>(a);
  ASSERT_NE(up, nullptr);
  EXPECT_TRUE(sent(a).empty());
  EXPECT_EQ(up->keys_announced.size(), 3u);
  EXPECT_EQ(h.client.router_keys().size(), 3u);
}

}  // namespace
}  // namespace petrel::rpki
