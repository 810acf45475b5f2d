// Tests for codec/route_refresh: RFC 2918 section 3, RFC 7313 sections 3
// and 5, RFC 5291 (ORF entries kept as bytes). Several vectors are
// ROUTE-REFRESH messages from real captures (tcpdump's test captures).
#include "codec/route_refresh.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include "codec/framer.h"
#include "tests/codec/open_gen.h"

namespace petrel::codec {
namespace {

constexpr std::string_view kMarker = "ffffffffffffffffffffffffffffffff";

std::vector<std::byte> whole(std::string_view rest_hex) {
  return bytes::from_hex(std::string(kMarker) + std::string(rest_hex)).value();
}

Result<RouteRefresh, NotifyError> decode(const std::vector<std::byte>& w) {
  bytes::Span s(w);
  return decode_route_refresh(s.subspan(kHeaderLen), s);
}

TEST(RouteRefresh, Rfc7313Sec3SubtypesFromACapture) {
  const char* msgs[] = {"00170500010001", "00170500010101", "00170500010201"};
  RefreshSubtype want[] = {RefreshSubtype::kRequest, RefreshSubtype::kBeginOfRefresh,
                           RefreshSubtype::kEndOfRefresh};
  for (int i = 0; i < 3; ++i) {
    auto w = whole(msgs[i]);
    auto r = decode(w);
    ASSERT_TRUE(r.ok()) << msgs[i];
    EXPECT_EQ(r->family, kIpv4Unicast);
    EXPECT_EQ(r->subtype, want[i]);
    EXPECT_FALSE(r->ignored());
    EXPECT_TRUE(r->orf.empty());
    std::vector<std::byte> out;
    encode_route_refresh(*r, out);
    EXPECT_EQ(out, w);
  }
}

TEST(RouteRefresh, Rfc2918Sec3EncodesAKnownVector) {
  std::vector<std::byte> out;
  encode_route_refresh(RouteRefresh{kIpv6Unicast, RefreshSubtype::kRequest, {}}, out);
  EXPECT_EQ(bytes::to_hex(out), std::string(kMarker) + "00170500020001");
}

TEST(RouteRefresh, Rfc5291OrfEntriesOfANormalRequestAreKept) {
  auto w = whole("001c050001000102400001c0");  // from a capture
  auto r = decode(w);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->subtype, RefreshSubtype::kRequest);
  EXPECT_EQ(bytes::to_hex(r->orf), "02400001c0");
  std::vector<std::byte> out;
  encode_route_refresh(*r, out);
  EXPECT_EQ(out, w);
}

TEST(RouteRefresh, Rfc7313Sec5DemarcationWithWrongLengthIsAnError) {
  for (const char* m : {"0018050001010100", "0018050001020100"}) {
    auto w = whole(m);
    auto r = decode(w);
    ASSERT_FALSE(r.ok()) << m;
    EXPECT_EQ(r.error().code, ErrorCode::kRouteRefresh);
    EXPECT_EQ(r.error().subcode, route_refresh_error::kInvalidMessageLength);
    EXPECT_EQ(bytes::to_hex(r.error().data()), bytes::to_hex(w));  // the whole message
  }
}

TEST(RouteRefresh, Rfc7313Sec5ShortBodyIsAnError) {
  auto w = whole("0016050001 00");
  auto r = decode(w);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().subcode, route_refresh_error::kInvalidMessageLength);
  EXPECT_EQ(r.error().data().size(), w.size());
}

TEST(RouteRefresh, Rfc7313Sec5UnknownSubtypeIsIgnored) {
  auto w = whole("00170500010301");
  auto r = decode(w);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->ignored());
  EXPECT_EQ(static_cast<uint8_t>(r->subtype), 3);
  auto longer = whole("0019050001ff01abcd");
  auto l = decode(longer);
  ASSERT_TRUE(l.ok());
  EXPECT_TRUE(l->ignored());
}

RC_GTEST_PROP(RouteRefresh, DecodeEncodeRoundTrip, ()) {
  RouteRefresh rr = *gen::route_refresh();
  std::vector<std::byte> out;
  encode_route_refresh(rr, out);
  auto r = decode(out);
  RC_ASSERT(r.ok());
  RC_ASSERT(*r == rr);
}

RC_GTEST_PROP(RouteRefresh, ArbitraryBodiesNeverCrash, (std::vector<uint8_t> raw)) {
  std::vector<std::byte> v;
  for (uint8_t b : raw) v.push_back(std::byte{b});
  (void)decode_route_refresh(v, v);
}

}  // namespace
}  // namespace petrel::codec
