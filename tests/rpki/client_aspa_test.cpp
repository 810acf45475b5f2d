// Tests of rpki/client.h in RTR version 2 (draft-ietf-sidrops-8210bis):
// ASPA records through reset and incremental answers, their errors and
// bounds, version negotiation from 2 down to 1 and 0, and a property: a
// random cache's ASPA changes leave the client holding exactly the cache's
// ASPAs, and the updates it reports rebuild them.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <map>

#include "rpki/client.h"
#include "tests/rpki/client_testing.h"
#include "tests/rpki/rpki_testing.h"

namespace petrel::rpki {
namespace {

using std::chrono::seconds;

using testing::find;
using testing::sent;
using V2 = testing::ClientDriver;

AspaPdu announce(uint32_t customer, std::vector<uint32_t> providers) {
  return AspaPdu{true, Aspa{customer, std::move(providers)}, std::nullopt};
}
AspaPdu withdraw(uint32_t customer) { return AspaPdu{false, Aspa{customer, {}}, std::nullopt}; }

TEST(ClientAspa, ResetAnswerThenIncrementalChanges) {
  V2 h;
  auto q = sent(h.step(Connected{}));
  ASSERT_EQ(q.size(), 1u);
  EXPECT_EQ(q[0].version, kVersion2);
  auto a = h.cache(2, {CacheResponse{7}, announce(64500, {64501, 64502}), announce(64510, {0}),
                       EndOfData{7, 1, Intervals{100, 50, 1000}}});
  const auto* up = find<ApplyUpdate>(a);
  ASSERT_NE(up, nullptr);
  EXPECT_EQ(h.client.version(), kVersion2);
  EXPECT_EQ(up->aspas_announced, (std::vector<Aspa>{{64500, {64501, 64502}}, {64510, {0}}}));
  EXPECT_TRUE(up->aspas_withdrawn.empty());
  EXPECT_EQ(h.client.aspas().size(), 2u);

  // An announcement for a customer held replaces its ASPA (8210bis); a
  // withdrawal removes it; an unchanged re-announcement is no change.
  (void)h.advance(seconds(100));
  auto b = h.cache(2, {CacheResponse{7}, announce(64500, {64503}), withdraw(64510), announce(64520, {64521}),
                       withdraw(64520), EndOfData{7, 2, Intervals{100, 50, 1000}}});
  up = find<ApplyUpdate>(b);
  ASSERT_NE(up, nullptr);
  EXPECT_EQ(up->aspas_announced, (std::vector<Aspa>{{64500, {64503}}}));
  EXPECT_EQ(up->aspas_withdrawn, (std::vector<uint32_t>{64510}));
  EXPECT_EQ(h.client.aspas(), (std::vector<Aspa>{{64500, {64503}}}));

  // A new reset answer reports only the difference from the data in force.
  (void)h.advance(seconds(100));
  (void)h.cache(2, {CacheReset{}});
  auto c = h.cache(2, {CacheResponse{7}, announce(64500, {64503}), announce(64530, {1}),
                       EndOfData{7, 3, Intervals{100, 50, 1000}}});
  up = find<ApplyUpdate>(c);
  ASSERT_NE(up, nullptr);
  EXPECT_TRUE(up->reset);
  EXPECT_EQ(up->aspas_announced, (std::vector<Aspa>{{64530, {1}}}));
  EXPECT_TRUE(up->aspas_withdrawn.empty());
  (void)h.advance(seconds(100));
  (void)h.cache(2, {CacheReset{}});
  auto d = h.cache(2, {CacheResponse{7}, EndOfData{7, 4, Intervals{100, 50, 1000}}});
  up = find<ApplyUpdate>(d);
  ASSERT_NE(up, nullptr);
  EXPECT_EQ(up->aspas_withdrawn, (std::vector<uint32_t>{64500, 64530}));
  EXPECT_TRUE(h.client.aspas().empty());
}

TEST(ClientAspa, WithdrawingAnUnknownCustomerIsAnErrorKeepingTheData) {
  V2 h;
  (void)h.step(Connected{});
  (void)h.cache(2, {CacheResponse{7}, announce(64500, {64501}), EndOfData{7, 1, Intervals{100, 50, 1000}}});
  (void)h.advance(seconds(100));
  auto a = h.cache(2, {CacheResponse{7}, withdraw(64999), EndOfData{7, 2, Intervals{100, 50, 1000}}});
  EXPECT_EQ(find<ApplyUpdate>(a), nullptr);
  auto s = sent(a);
  ASSERT_EQ(s.size(), 1u);
  const auto& e = std::get<ErrorReport>(s[0].pdu);
  EXPECT_EQ(e.code, ErrorCode::kWithdrawalOfUnknownRecord);
  EXPECT_EQ(e.pdu, encode(2, withdraw(64999)));
  EXPECT_EQ(s[0].version, kVersion2);
  ASSERT_NE(find<CloseConnection>(a), nullptr);
  EXPECT_EQ(h.client.aspas(), (std::vector<Aspa>{{64500, {64501}}}));
}

TEST(ClientAspa, AspaOutsideAnAnswerIsCorruptData) {
  V2 h;
  (void)h.step(Connected{});
  (void)h.cache(2, {CacheResponse{7}, EndOfData{7, 1, Intervals{100, 50, 1000}}});
  auto a = h.cache(2, {announce(64500, {64501})});
  auto s = sent(a);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(std::get<ErrorReport>(s[0].pdu).code, ErrorCode::kCorruptData);
}

TEST(ClientAspa, AnAspaPduInVersion1IsUnsupportedPduType) {
  V2 h;
  (void)h.step(Connected{});
  (void)h.cache(1, {CacheResponse{7}});
  EXPECT_EQ(h.client.version(), kVersion1);
  // Type 11 with version 1 in its header.
  auto wire = encode(2, announce(64500, {64501}));
  wire[0] = std::byte{1};
  auto a = h.step(Received{wire});
  auto s = sent(a);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(std::get<ErrorReport>(s[0].pdu).code, ErrorCode::kUnsupportedPduType);
}

TEST(ClientAspa, Legacy8210bis10LayoutIsReadAndItsIpv6CopySkipped) {
  V2 h;
  (void)h.step(Connected{});
  // What StayRTR 0.5.1 sends for one ASPA listed for both families.
  auto a = h.step(Received{testing::hex(
      "02 03 9c67 00000008"
      " 02 0b 0000 00000018 01000002 0000fbf4 0000fbf5 0000fbf6"
      " 02 0b 0000 00000018 01010002 0000fbf4 0000fbf5 0000fbf6"
      " 02 07 9c67 00000018 00000001 00000e10 00000258 00001c20")});
  const auto* up = find<ApplyUpdate>(a);
  ASSERT_NE(up, nullptr);
  EXPECT_EQ(h.client.aspas(), (std::vector<Aspa>{{64500, {64501, 64502}}}));
}

TEST(ClientAspa, FallsBackFrom2To1To0) {
  V2 h;
  (void)h.step(Connected{});
  // A version 1 cache: Unsupported Protocol Version, in version 1.
  auto a = h.cache(1, {ErrorReport{ErrorCode::kUnsupportedProtocolVersion, encode(2, ResetQuery{}), ""}});
  ASSERT_NE(find<CloseConnection>(a), nullptr);
  EXPECT_EQ(find<CloseConnection>(a)->reason, CloseReason::kVersionFallback);
  EXPECT_EQ(h.client.version(), kVersion1);
  (void)h.step(Disconnected{});
  ASSERT_NE(find<Reconnect>(h.step(Tick{})), nullptr);
  auto q = sent(h.step(Connected{}));
  ASSERT_EQ(q.size(), 1u);
  EXPECT_EQ(q[0].version, kVersion1);
  // ... which turns out to be a version 0 cache after all.
  auto b = h.cache(0, {ErrorReport{ErrorCode::kUnsupportedProtocolVersion, encode(1, ResetQuery{}), ""}});
  ASSERT_NE(find<CloseConnection>(b), nullptr);
  EXPECT_EQ(h.client.version(), kVersion0);
  (void)h.step(Disconnected{});
  ASSERT_NE(find<Reconnect>(h.step(Tick{})), nullptr);
  q = sent(h.step(Connected{}));
  ASSERT_EQ(q.size(), 1u);
  EXPECT_EQ(q[0].version, kVersion0);
}

TEST(ClientAspa, ACacheAnsweringInVersion1IsFollowedWithoutReconnecting) {
  V2 h;
  (void)h.step(Connected{});
  auto a = h.cache(1, {CacheResponse{3}, EndOfData{3, 1, Intervals{}}});
  ASSERT_NE(find<ApplyUpdate>(a), nullptr);
  EXPECT_EQ(find<CloseConnection>(a), nullptr);
  EXPECT_EQ(h.client.version(), kVersion1);
  // Agreed: a version 2 PDU now is Unexpected Protocol Version.
  auto b = h.cache(2, {SerialNotify{3, 2}});
  auto s = sent(b);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(std::get<ErrorReport>(s[0].pdu).code, ErrorCode::kUnexpectedProtocolVersion);
}

TEST(ClientAspa, MaxVersionCapsTheFirstQuery) {
  ClientConfig cfg;
  cfg.max_version = kVersion1;
  V2 h(cfg);
  auto q = sent(h.step(Connected{}));
  ASSERT_EQ(q.size(), 1u);
  EXPECT_EQ(q[0].version, kVersion1);
}

TEST(ClientAspa, ProvidersCountTowardsMaxVrps) {
  ClientConfig cfg;
  cfg.max_vrps = 10;
  V2 h(cfg);
  (void)h.step(Connected{});
  // Two ASPAs of 4 providers: 10 records, allowed.
  auto a = h.cache(2, {CacheResponse{1}, announce(1, {2, 3, 4, 5}), announce(6, {7, 8, 9, 10}),
                       EndOfData{1, 1, Intervals{100, 50, 1000}}});
  ASSERT_NE(find<ApplyUpdate>(a), nullptr);
  (void)h.advance(seconds(100));
  auto b = h.cache(2, {CacheResponse{1}, announce(11, {12}), EndOfData{1, 2, Intervals{100, 50, 1000}}});
  auto s = sent(b);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(std::get<ErrorReport>(s[0].pdu).code, ErrorCode::kInternalError);
  EXPECT_EQ(h.client.aspas().size(), 2u);
  // One PDU alone past the limit is refused when it arrives.
  V2 g(cfg);
  (void)g.step(Connected{});
  std::vector<uint32_t> many(11);
  for (uint32_t i = 0; i < 11; ++i) many[i] = 100 + i;
  auto c = g.cache(2, {CacheResponse{1}, announce(1, many)});
  s = sent(c);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(std::get<ErrorReport>(s[0].pdu).code, ErrorCode::kInternalError);
  // So is one whose providers would take the answer past it (5 + 6 records),
  // before End of Data: its providers are counted before they are buffered.
  V2 k(cfg);
  (void)k.step(Connected{});
  auto d = k.cache(2, {CacheResponse{1}, announce(1, {2, 3, 4, 5}), announce(6, {7, 8, 9, 10, 11})});
  s = sent(d);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(std::get<ErrorReport>(s[0].pdu).code, ErrorCode::kInternalError);
}

TEST(ClientAspa, FlushAndExpiryDropTheAspas) {
  V2 h;
  (void)h.step(Connected{});
  (void)h.cache(2, {CacheResponse{7}, announce(64500, {64501}), EndOfData{7, 1, Intervals{100, 50, 1000}}});
  auto a = h.cache(2, {SerialNotify{8, 2}});  // another session id: Corrupt Data and flush
  const auto* up = find<ApplyUpdate>(a);
  ASSERT_NE(up, nullptr);
  EXPECT_EQ(up->aspas_withdrawn, (std::vector<uint32_t>{64500}));
  EXPECT_TRUE(h.client.aspas().empty());

  V2 g;
  (void)g.step(Connected{});
  (void)g.cache(2, {CacheResponse{7}, announce(64500, {64501}), EndOfData{7, 1, Intervals{100, 50, 1000}}});
  (void)g.step(Disconnected{});
  auto b = g.advance(seconds(1000));
  EXPECT_NE(find<DataExpired>(b), nullptr);
  EXPECT_TRUE(g.client.aspas().empty());
}

// A cache with random ASPAs that change at random (announcements that
// replace, withdrawals), sent split at random points: after every End of
// Data the client holds exactly the cache's ASPAs, and the reported
// updates, applied in order, rebuild them.
RC_GTEST_PROP(ClientAspa, FollowsARandomCache, ()) {
  V2 h;
  std::map<uint32_t, std::vector<uint32_t>> cache, mirror;
  uint32_t serial = 1;
  auto apply = [&](const ClientActions& acts) {
    for (const auto& a : acts) {
      if (const auto* up = std::get_if<ApplyUpdate>(&a)) {
        for (uint32_t c : up->aspas_withdrawn) RC_ASSERT(mirror.erase(c) == 1u);
        for (const Aspa& x : up->aspas_announced) mirror[x.customer] = x.providers;
      }
      RC_ASSERT(!std::holds_alternative<CloseConnection>(a));
    }
  };
  auto send_split = [&](const std::vector<std::byte>& wire) {
    size_t at = 0;
    while (at < wire.size()) {
      size_t n = std::min(wire.size() - at, *rc::gen::inRange<size_t>(1, 64));
      apply(h.step(Received{bytes::Span(wire).subspan(at, n)}));
      at += n;
    }
  };
  auto providers = [] {
    auto p = *rc::gen::container<std::vector<uint32_t>>(rc::gen::inRange<uint32_t>(0, 8));
    std::sort(p.begin(), p.end());
    p.erase(std::unique(p.begin(), p.end()), p.end());
    return p;
  };
  auto check = [&] {
    std::vector<Aspa> want;
    for (const auto& [c, p] : cache) want.push_back(Aspa{c, p});
    RC_ASSERT(h.client.aspas() == want);
    RC_ASSERT(mirror == cache);
  };
  (void)h.step(Connected{});
  std::vector<std::byte> wire;
  encode(2, CacheResponse{42}, wire);
  for (uint32_t c : *rc::gen::container<std::vector<uint32_t>>(rc::gen::inRange<uint32_t>(0, 16))) {
    cache[c] = providers();
    encode(2, announce(c, cache[c]), wire);  // a repeat replaces
  }
  encode(2, EndOfData{42, serial, Intervals{60, 30, 600}}, wire);
  send_split(wire);
  check();
  int rounds = *rc::gen::inRange(1, 6);
  for (int r = 0; r < rounds; ++r) {
    (void)h.advance(seconds(60));
    wire.clear();
    encode(2, CacheResponse{42}, wire);
    for (uint32_t c : *rc::gen::container<std::vector<uint32_t>>(rc::gen::inRange<uint32_t>(0, 16))) {
      if (cache.count(c) && *rc::gen::arbitrary<bool>()) {
        cache.erase(c);
        encode(2, withdraw(c), wire);
      } else {
        cache[c] = providers();
        encode(2, announce(c, cache[c]), wire);
      }
    }
    encode(2, EndOfData{42, ++serial, Intervals{60, 30, 600}}, wire);
    send_split(wire);
    RC_ASSERT(h.client.serial() == serial);
    check();
  }
}

}  // namespace
}  // namespace petrel::rpki
