// Tests of rpki/client.h: conversations with a scripted cache, bytes in and
// bytes out, on a fake clock; and a property: a random cache's changes,
// sent split anywhere, leave the client holding exactly the cache's data.
#include "rpki/client.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <set>

#include "tests/rpki/client_testing.h"
#include "tests/rpki/rpki_testing.h"

namespace petrel::rpki {
namespace {

using std::chrono::seconds;

Vrp V(const char* p, uint8_t max, uint32_t as) { return Vrp{*net::Prefix::parse(p), max, as}; }

using testing::error_sent;
using testing::find;
using testing::sent;

struct Harness : testing::ClientDriver {
  using ClientDriver::ClientDriver;
  // After a lost connection: a Reconnect after `wait` (at once when zero),
  // then connected; what the client sent.
  std::vector<Message> redial(Duration wait) {
    auto r = wait == Duration::zero() ? step(Tick{}) : advance(wait);
    EXPECT_NE(find<Reconnect>(r), nullptr);
    return sent(step(Connected{}));
  }
  // In sync with one VRP, the connection lost, redialled after the retry
  // interval: a Serial Query is out.
  void serial_query_out() {
    synced({V("192.0.2.0/24", 24, 1)});
    (void)step(Disconnected{});
    auto q = redial(seconds(50));
    ASSERT_EQ(q.size(), 1u);
    ASSERT_TRUE(std::holds_alternative<SerialQuery>(q[0].pdu));
  }
  // The connection lost after a refused Serial Query: the one VRP kept,
  // redialled at once (not after the retry interval) with a Reset Query.
  void disconnected_resets_at_once() {
    (void)step(Disconnected{});
    EXPECT_TRUE(client.has_data());
    EXPECT_EQ(client.vrps().size(), 1u);
    EXPECT_EQ(client.next_deadline(), now);
    auto q = redial(Duration::zero());
    ASSERT_EQ(q.size(), 1u);
    EXPECT_TRUE(std::holds_alternative<ResetQuery>(q[0].pdu));
  }
  // Connected, answered Reset Query with `vrps`.
  void synced(const std::vector<Vrp>& vrps, uint16_t session = 5, uint32_t serial = 10) {
    auto a = step(Connected{});
    std::vector<std::byte> wire;
    encode(1, CacheResponse{session}, wire);
    for (const auto& v : vrps) encode(1, PrefixPdu{true, v}, wire);
    encode(1, EndOfData{session, serial, Intervals{100, 50, 1000}}, wire);
    auto b = step(Received{wire});
    ASSERT_NE(find<ApplyUpdate>(b), nullptr);
  }
};

TEST(Client, StartsWithResetQueryAndAppliesOnlyAtEndOfData) {
  Harness h;
  EXPECT_EQ(h.client.next_deadline(), std::nullopt);
  auto a = h.step(Connected{});
  auto s = sent(a);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].version, kVersion2);  // the highest we speak; this cache answers in 1
  EXPECT_TRUE(std::holds_alternative<ResetQuery>(s[0].pdu));
  EXPECT_EQ(h.client.state(), Client::State::kQuerySent);

  auto b = h.cache(1, {CacheResponse{5}, PrefixPdu{true, V("192.0.2.0/24", 24, 64496)},
                       PrefixPdu{true, V("2001:db8::/32", 48, 64497)}});
  EXPECT_EQ(find<ApplyUpdate>(b), nullptr);
  EXPECT_TRUE(h.client.vrps().empty());

  auto c = h.cache(1, {EndOfData{5, 10, Intervals{100, 50, 1000}}});
  const auto* up = find<ApplyUpdate>(c);
  ASSERT_NE(up, nullptr);
  EXPECT_TRUE(up->reset);
  EXPECT_EQ(up->announced.size(), 2u);
  EXPECT_TRUE(up->withdrawn.empty());
  EXPECT_EQ(up->session_id, 5);
  EXPECT_EQ(up->serial, 10u);
  EXPECT_EQ(h.client.vrps().size(), 2u);
  EXPECT_EQ(h.client.intervals(), (Intervals{100, 50, 1000}));
  EXPECT_EQ(h.client.next_deadline(), h.now + seconds(100));
  EXPECT_EQ(h.client.state(), Client::State::kIdle);
}

TEST(Client, SerialQueryAtRefreshAppliesTheDifference) {
  Harness h;
  h.synced({V("192.0.2.0/24", 24, 1), V("198.51.100.0/24", 24, 2)});
  EXPECT_TRUE(sent(h.advance(seconds(99))).empty());
  auto q = sent(h.advance(seconds(1)));
  ASSERT_EQ(q.size(), 1u);
  EXPECT_EQ(std::get<SerialQuery>(q[0].pdu), (SerialQuery{5, 10}));
  auto a = h.cache(1, {CacheResponse{5}, PrefixPdu{false, V("192.0.2.0/24", 24, 1)},
                       PrefixPdu{true, V("203.0.113.0/24", 24, 3)}, EndOfData{5, 11, Intervals{100, 50, 1000}}});
  const auto* up = find<ApplyUpdate>(a);
  ASSERT_NE(up, nullptr);
  EXPECT_FALSE(up->reset);
  EXPECT_EQ(up->announced, std::vector<Vrp>{V("203.0.113.0/24", 24, 3)});
  EXPECT_EQ(up->withdrawn, std::vector<Vrp>{V("192.0.2.0/24", 24, 1)});
  EXPECT_EQ(h.client.vrps(), (std::vector<Vrp>{V("198.51.100.0/24", 24, 2), V("203.0.113.0/24", 24, 3)}));
  EXPECT_EQ(h.client.serial(), 11u);
}

TEST(Client, SerialNotify) {
  Harness h;
  h.synced({});
  (void)h.advance(kDefaultNotifyGap);
  EXPECT_TRUE(sent(h.cache(1, {SerialNotify{5, 10}})).empty());  // nothing new
  auto q = sent(h.cache(1, {SerialNotify{5, 12}}));
  ASSERT_EQ(q.size(), 1u);
  EXPECT_TRUE(std::holds_alternative<SerialQuery>(q[0].pdu));
  // A second notify while the query is out asks nothing more.
  EXPECT_TRUE(sent(h.cache(1, {SerialNotify{5, 13}})).empty());
}

// A cache that notifies at once after each answer gets one query per
// notify_gap, not one per notify: the notifies in between move the query
// timer forward to the end of the gap and ask nothing themselves.
TEST(Client, SerialNotifiesSoonAfterAnAnswerWaitOutTheGap) {
  ClientConfig cfg;
  cfg.notify_gap = seconds(5);
  Harness h(cfg);
  h.synced({V("192.0.2.0/24", 24, 1)});  // refresh in 100 s
  const Time answered = h.now;
  EXPECT_TRUE(sent(h.cache(1, {SerialNotify{5, 11}})).empty());
  EXPECT_EQ(h.client.next_deadline(), answered + seconds(5));
  EXPECT_TRUE(sent(h.advance(seconds(2))).empty());
  EXPECT_TRUE(sent(h.cache(1, {SerialNotify{5, 12}})).empty());
  EXPECT_EQ(h.client.next_deadline(), answered + seconds(5));
  EXPECT_TRUE(sent(h.advance(seconds(2))).empty());
  auto q = sent(h.advance(seconds(1)));
  ASSERT_EQ(q.size(), 1u);
  EXPECT_EQ(std::get<SerialQuery>(q[0].pdu), (SerialQuery{5, 10}));
  auto a = h.cache(1, {CacheResponse{5}, PrefixPdu{true, V("198.51.100.0/24", 24, 2)},
                       EndOfData{5, 12, Intervals{100, 50, 1000}}});
  ASSERT_NE(find<ApplyUpdate>(a), nullptr);
  // The next notify, at once, waits again; one after the gap asks at once.
  EXPECT_TRUE(sent(h.cache(1, {SerialNotify{5, 13}})).empty());
  EXPECT_EQ(h.client.next_deadline(), h.now + seconds(5));
  Harness g(cfg);
  g.synced({});
  (void)g.advance(seconds(5));
  EXPECT_EQ(sent(g.cache(1, {SerialNotify{5, 11}})).size(), 1u);
  // A gap of zero: every notify asks at once, as before the gap existed.
  cfg.notify_gap = Duration::zero();
  Harness z(cfg);
  z.synced({});
  EXPECT_EQ(sent(z.cache(1, {SerialNotify{5, 11}})).size(), 1u);
}

// The same bound for the refresh timer: a cache that sets a Refresh
// Interval of 1 s (RFC 8210's least) is asked again after notify_gap, not
// every second; one whose refresh is longer than the gap is asked at its
// refresh interval, and a gap of zero leaves the cache's 1 s.
TEST(Client, RefreshSoonerThanTheGapWaitsOutTheGap) {
  ClientConfig cfg;
  cfg.notify_gap = seconds(5);
  Harness h(cfg);
  (void)h.step(Connected{});
  auto answer = [&](Harness& x, uint32_t serial, uint32_t refresh) {
    auto a = x.cache(1, {CacheResponse{5}, PrefixPdu{true, V("192.0.2.0/24", 24, serial)},
                         EndOfData{5, serial, Intervals{refresh, 50, 1000}}});
    ASSERT_NE(find<ApplyUpdate>(a), nullptr);
  };
  answer(h, 10, 1);
  EXPECT_EQ(h.client.intervals().refresh, 1u);  // what the cache asked, kept
  EXPECT_EQ(h.client.next_deadline(), h.now + seconds(5));
  EXPECT_TRUE(sent(h.advance(seconds(4))).empty());
  auto q = sent(h.advance(seconds(1)));
  ASSERT_EQ(q.size(), 1u);
  EXPECT_EQ(std::get<SerialQuery>(q[0].pdu), (SerialQuery{5, 10}));
  // Longer than the gap: the cache's own interval.
  answer(h, 11, 30);
  EXPECT_EQ(h.client.next_deadline(), h.now + seconds(30));
  cfg.notify_gap = Duration::zero();
  Harness z(cfg);
  (void)z.step(Connected{});
  answer(z, 10, 1);
  EXPECT_EQ(z.client.next_deadline(), z.now + seconds(1));
}

// And for a new connection: a cache that closes the connection after each
// answer, with a Retry Interval of 1 s, is asked on the connection after
// the gap, not as soon as it is dialled again; so is a Reset Query after a
// connection closed on our Serial Query. Past the gap a connection asks at
// once (the other tests' redials).
TEST(Client, QueryOnANewConnectionWaitsOutTheGap) {
  ClientConfig cfg;
  cfg.notify_gap = seconds(5);
  Harness h(cfg);
  (void)h.step(Connected{});
  auto a = h.cache(1, {CacheResponse{5}, PrefixPdu{true, V("192.0.2.0/24", 24, 1)},
                       EndOfData{5, 10, Intervals{100, 1, 1000}}});
  ASSERT_NE(find<ApplyUpdate>(a), nullptr);
  const Time answered = h.now;
  (void)h.step(Disconnected{});
  auto r = h.advance(seconds(1));
  ASSERT_NE(find<Reconnect>(r), nullptr);
  EXPECT_TRUE(sent(h.step(Connected{})).empty());
  EXPECT_TRUE(h.client.first_query_deferred());  // the daemon's silence check waits
  EXPECT_EQ(h.client.next_deadline(), answered + seconds(5));
  EXPECT_TRUE(sent(h.advance(seconds(3))).empty());
  auto q = sent(h.advance(seconds(1)));
  ASSERT_EQ(q.size(), 1u);
  EXPECT_EQ(std::get<SerialQuery>(q[0].pdu), (SerialQuery{5, 10}));
  EXPECT_FALSE(h.client.first_query_deferred());
  // The cache closes on the query: redialled at once, the Reset Query
  // still after the gap from the last answer (here, already past).
  (void)h.step(Disconnected{});
  EXPECT_EQ(h.client.next_deadline(), h.now);
  q = h.redial(Duration::zero());
  ASSERT_EQ(q.size(), 1u);
  EXPECT_TRUE(std::holds_alternative<ResetQuery>(q[0].pdu));
  EXPECT_FALSE(h.client.first_query_deferred());
  a = h.cache(1, {CacheResponse{6}, PrefixPdu{true, V("192.0.2.0/24", 24, 1)},
                  EndOfData{6, 1, Intervals{100, 1, 1000}}});
  ASSERT_NE(find<ApplyUpdate>(a), nullptr);
  (void)h.step(Disconnected{});
  EXPECT_TRUE(h.redial(seconds(1)).empty());
  EXPECT_EQ(std::get<SerialQuery>(sent(h.advance(seconds(4))).at(0).pdu), (SerialQuery{6, 1}));
}

TEST(Client, WithdrawalOfUnknownRecordKeepsTheDataAndResets) {
  Harness h;
  h.synced({V("192.0.2.0/24", 24, 1)});
  (void)h.advance(seconds(100));
  auto bad = PrefixPdu{false, V("203.0.113.0/24", 24, 3)};
  auto a = h.cache(1, {CacheResponse{5}, PrefixPdu{true, V("198.51.100.0/24", 24, 2)}, bad,
                       EndOfData{5, 11, Intervals{100, 50, 1000}}});
  EXPECT_EQ(find<ApplyUpdate>(a), nullptr);
  auto e = error_sent(a);
  EXPECT_EQ(e.code, ErrorCode::kWithdrawalOfUnknownRecord);
  EXPECT_EQ(e.pdu, encode(1, bad));
  ASSERT_NE(find<CloseConnection>(a), nullptr);
  EXPECT_EQ(h.client.vrps(), std::vector<Vrp>{V("192.0.2.0/24", 24, 1)});
  // Reconnect after the retry interval, then a Reset Query.
  (void)h.step(Disconnected{});
  EXPECT_EQ(h.client.next_deadline(), h.now + seconds(50));
  auto q = h.redial(seconds(50));
  ASSERT_EQ(q.size(), 1u);
  EXPECT_TRUE(std::holds_alternative<ResetQuery>(q[0].pdu));
}

TEST(Client, DuplicateAnnouncement) {
  Harness h;
  h.synced({V("192.0.2.0/24", 24, 1)});
  (void)h.advance(seconds(100));
  auto a = h.cache(1, {CacheResponse{5}, PrefixPdu{true, V("192.0.2.0/24", 24, 1)},
                       EndOfData{5, 11, Intervals{100, 50, 1000}}});
  EXPECT_EQ(error_sent(a).code, ErrorCode::kDuplicateAnnouncement);
  // The same within one reset answer.
  Harness g;
  (void)g.step(Connected{});
  auto b = g.cache(1, {CacheResponse{1}, PrefixPdu{true, V("192.0.2.0/24", 24, 1)},
                       PrefixPdu{true, V("192.0.2.0/24", 24, 1)}, EndOfData{1, 1, Intervals{}}});
  EXPECT_EQ(error_sent(b).code, ErrorCode::kDuplicateAnnouncement);
  // Announce then withdraw in one answer is no change, and fine.
  Harness k;
  k.synced({});
  (void)k.advance(seconds(100));
  auto c = k.cache(1, {CacheResponse{5}, PrefixPdu{true, V("192.0.2.0/24", 24, 1)},
                       PrefixPdu{false, V("192.0.2.0/24", 24, 1)}, EndOfData{5, 11, Intervals{}}});
  ASSERT_NE(find<ApplyUpdate>(c), nullptr);
  EXPECT_TRUE(find<ApplyUpdate>(c)->announced.empty());
}

TEST(Client, CacheResetLeadsToResetQuery) {
  Harness h;
  h.synced({V("192.0.2.0/24", 24, 1)});
  (void)h.advance(seconds(100));
  auto q = sent(h.cache(1, {CacheReset{}}));
  ASSERT_EQ(q.size(), 1u);
  EXPECT_TRUE(std::holds_alternative<ResetQuery>(q[0].pdu));
  auto a = h.cache(1, {CacheResponse{6}, PrefixPdu{true, V("198.51.100.0/24", 24, 2)}, EndOfData{6, 1, Intervals{}}});
  const auto* up = find<ApplyUpdate>(a);
  ASSERT_NE(up, nullptr);
  EXPECT_TRUE(up->reset);
  EXPECT_EQ(up->announced, std::vector<Vrp>{V("198.51.100.0/24", 24, 2)});
  EXPECT_EQ(up->withdrawn, std::vector<Vrp>{V("192.0.2.0/24", 24, 1)});
  EXPECT_EQ(h.client.session_id(), 6);
}

TEST(Client, SessionIdMismatchIsCorruptDataAndFlushes) {
  Harness h;
  h.synced({V("192.0.2.0/24", 24, 1)});
  (void)h.advance(seconds(100));
  auto a = h.cache(1, {CacheResponse{9}});
  EXPECT_EQ(error_sent(a).code, ErrorCode::kCorruptData);
  const auto* up = find<ApplyUpdate>(a);
  ASSERT_NE(up, nullptr);
  EXPECT_EQ(up->withdrawn.size(), 1u);
  EXPECT_TRUE(h.client.vrps().empty());
  EXPECT_FALSE(h.client.has_data());
  ASSERT_NE(find<CloseConnection>(a), nullptr);
}

TEST(Client, SerialBehindOursLeadsToResetQuery) {
  Harness h;
  h.synced({}, 5, 10);
  (void)h.advance(seconds(100));
  auto q = sent(h.cache(1, {CacheResponse{5}, EndOfData{5, 9, Intervals{}}}));
  ASSERT_EQ(q.size(), 1u);
  EXPECT_TRUE(std::holds_alternative<ResetQuery>(q[0].pdu));
}

TEST(Client, FallsBackToVersion0OnUnsupportedVersionReport) {
  Harness h;
  (void)h.step(Connected{});
  auto a = h.cache(0, {ErrorReport{ErrorCode::kUnsupportedProtocolVersion, encode(1, ResetQuery{}), ""}});
  const auto* close = find<CloseConnection>(a);
  ASSERT_NE(close, nullptr);
  EXPECT_EQ(close->reason, CloseReason::kVersionFallback);
  EXPECT_TRUE(sent(a).empty());  // no report about a report
  (void)h.step(Disconnected{});
  EXPECT_EQ(h.client.next_deadline(), h.now);
  ASSERT_NE(find<Reconnect>(h.step(Tick{})), nullptr);
  auto q = sent(h.step(Connected{}));
  ASSERT_EQ(q.size(), 1u);
  EXPECT_EQ(q[0].version, kVersion0);
  EXPECT_TRUE(std::holds_alternative<ResetQuery>(q[0].pdu));
  auto b = h.cache(0, {CacheResponse{3}, PrefixPdu{true, V("192.0.2.0/24", 24, 1)}, EndOfData{3, 1, std::nullopt}});
  ASSERT_NE(find<ApplyUpdate>(b), nullptr);
  EXPECT_EQ(h.client.intervals(), Intervals{});  // RFC 8210 section 6 defaults
  EXPECT_EQ(h.client.version(), kVersion0);
}

TEST(Client, FallsBackWhenTheCacheAnswersInVersion0) {
  Harness h;
  (void)h.step(Connected{});
  auto a = h.cache(0, {CacheResponse{3}, EndOfData{3, 1, std::nullopt}});
  ASSERT_NE(find<ApplyUpdate>(a), nullptr);
  EXPECT_EQ(h.client.version(), kVersion0);
  // Once agreed, a PDU of another version is Unexpected Protocol Version.
  auto b = h.cache(1, {SerialNotify{3, 2}});
  EXPECT_EQ(error_sent(b).code, ErrorCode::kUnexpectedProtocolVersion);
}

TEST(Client, VersionFallbackDuringASerialQueryStartsOver) {
  Harness h;
  ASSERT_NO_FATAL_FAILURE(h.serial_query_out());
  auto a = h.cache(0, {CacheResponse{5}});
  ASSERT_NE(find<CloseConnection>(a), nullptr);
  EXPECT_EQ(find<CloseConnection>(a)->reason, CloseReason::kVersionFallback);
  EXPECT_EQ(h.client.vrps().size(), 1u);  // kept until the reset answer
  (void)h.step(Disconnected{});
  auto r = h.redial(Duration::zero());
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].version, kVersion0);
  EXPECT_TRUE(std::holds_alternative<ResetQuery>(r[0].pdu));
  EXPECT_EQ(state_name(h.client.state()), "query-sent");
}

TEST(Client, SerialNotifyIgnoredDuringStartUp) {
  Harness h;
  (void)h.step(Connected{});
  auto a = h.cache(0, {SerialNotify{3, 2}});
  EXPECT_TRUE(a.empty());
  EXPECT_EQ(h.client.version(), kVersion2);
}

TEST(Client, NoDataAvailableRetriesWithoutClosing) {
  Harness h;
  (void)h.step(Connected{});
  auto a = h.cache(1, {ErrorReport{ErrorCode::kNoDataAvailable, {}, "warming up"}});
  EXPECT_EQ(find<CloseConnection>(a), nullptr);
  const auto* d = find<Diagnostic>(a);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->kind, Diagnostic::Kind::kErrorReceived);
  EXPECT_EQ(d->text, "warming up");
  EXPECT_EQ(h.client.next_deadline(), h.now + seconds(600));
  auto q = sent(h.advance(seconds(600)));
  ASSERT_EQ(q.size(), 1u);
  EXPECT_TRUE(std::holds_alternative<ResetQuery>(q[0].pdu));
}

TEST(Client, FatalReportReceivedCloses) {
  Harness h;
  (void)h.step(Connected{});
  auto a = h.cache(1, {ErrorReport{ErrorCode::kInternalError, {}, ""}});
  ASSERT_NE(find<CloseConnection>(a), nullptr);
  EXPECT_EQ(find<CloseConnection>(a)->reason, CloseReason::kErrorReceived);
  EXPECT_TRUE(sent(a).empty());
}

// A cache that restarted with a new session id answers our Serial Query
// with Corrupt Data (StayRTR does): the client reconnects at once and sends
// a Reset Query, and the data is kept meanwhile.
TEST(Client, CorruptDataReportToSerialQueryResetsOnTheNextConnection) {
  Harness h;
  ASSERT_NO_FATAL_FAILURE(h.serial_query_out());
  auto a = h.cache(1, {ErrorReport{ErrorCode::kCorruptData, {}, "session id mismatch"}});
  ASSERT_NE(find<CloseConnection>(a), nullptr);
  EXPECT_EQ(find<CloseConnection>(a)->reason, CloseReason::kResynchronise);
  EXPECT_TRUE(sent(a).empty());  // no report about a report
  ASSERT_NO_FATAL_FAILURE(h.disconnected_resets_at_once());
  // The Reset Query refused as well: a failure like any other (the caller's
  // back-off), not another reconnection at once.
  auto b = h.cache(1, {ErrorReport{ErrorCode::kCorruptData, {}, "still not"}});
  ASSERT_NE(find<CloseConnection>(b), nullptr);
  EXPECT_EQ(find<CloseConnection>(b)->reason, CloseReason::kErrorReceived);
  (void)h.step(Disconnected{});
  EXPECT_EQ(h.client.next_deadline(), h.now + seconds(50));
  EXPECT_TRUE(h.client.has_data());
}

// A cache that closes the connection without answering our Serial Query
// (StayRTR restarted with a new session id loses its Corrupt Data report
// under load): the next connection, at once, asks for everything; the data
// is kept meanwhile. A Reset Query closed on likewise waits for the retry
// interval, and a close after the answer has begun keeps the Serial Query.
TEST(Client, SerialQueryClosedOnUnansweredResetsAtOnce) {
  Harness h;
  ASSERT_NO_FATAL_FAILURE(h.serial_query_out());
  EXPECT_TRUE(h.client.serial_query_unanswered());
  ASSERT_NO_FATAL_FAILURE(h.disconnected_resets_at_once());
  EXPECT_FALSE(h.client.serial_query_unanswered());
  (void)h.step(Disconnected{});  // the Reset Query closed on too
  EXPECT_EQ(h.client.next_deadline(), h.now + seconds(50));
  EXPECT_TRUE(h.client.has_data());
  // A Reset Query answered: in sync again; then a Serial Query whose answer
  // has begun, and the connection lost: still a Serial Query next time.
  ASSERT_EQ(h.redial(seconds(50)).size(), 1u);
  auto a = h.cache(1, {CacheResponse{6}, PrefixPdu{true, V("192.0.2.0/24", 24, 1)},
                       EndOfData{6, 1, Intervals{100, 50, 1000}}});
  ASSERT_NE(find<ApplyUpdate>(a), nullptr);
  (void)h.step(Disconnected{});
  auto q3 = h.redial(seconds(50));
  ASSERT_EQ(q3.size(), 1u);
  ASSERT_TRUE(std::holds_alternative<SerialQuery>(q3[0].pdu));
  (void)h.cache(1, {CacheResponse{6}});
  EXPECT_FALSE(h.client.serial_query_unanswered());
  (void)h.step(Disconnected{});
  EXPECT_EQ(h.client.next_deadline(), h.now + seconds(50));
  auto q4 = h.redial(seconds(50));
  ASSERT_EQ(q4.size(), 1u);
  EXPECT_TRUE(std::holds_alternative<SerialQuery>(q4[0].pdu));
}

TEST(Client, DataExpiresWithoutRefresh) {
  Harness h;
  h.synced({V("192.0.2.0/24", 24, 1)});
  (void)h.step(Disconnected{});
  // Reconnects keep failing; the data expires 1000 s after it came.
  for (int i = 0; i < 19; ++i) {
    auto a = h.advance(seconds(50));
    EXPECT_EQ(find<DataExpired>(a), nullptr);
    if (find<Reconnect>(a)) (void)h.step(Disconnected{});
  }
  auto a = h.advance(seconds(50));
  EXPECT_NE(find<DataExpired>(a), nullptr);
  EXPECT_TRUE(h.client.vrps().empty());
  EXPECT_FALSE(h.client.has_data());
}

TEST(Client, GarbageGetsCorruptDataQuotingTheHeader) {
  Harness h;
  (void)h.step(Connected{});
  auto wire = testing::hex("01 04 0000 00000099");
  auto a = h.step(Received{wire});
  auto e = error_sent(a);
  EXPECT_EQ(e.code, ErrorCode::kCorruptData);
  EXPECT_EQ(e.pdu, wire);
  // A broken Error Report is not answered with one.
  Harness g;
  (void)g.step(Connected{});
  auto b = g.step(Received{testing::hex("01 0a 0000 00000003")});
  EXPECT_TRUE(sent(b).empty());
  EXPECT_NE(find<CloseConnection>(b), nullptr);
  // Bytes after we asked to close are ignored.
  EXPECT_TRUE(g.step(Received{wire}).empty());
}

TEST(Client, RouterKeysAreKept) {
  Harness h;
  (void)h.step(Connected{});
  RouterKey k;
  k.ski.fill(1);
  k.asn = 64496;
  k.spki = {1, 2, 3};
  auto a = h.cache(1, {CacheResponse{1}, RouterKeyPdu{true, k}, EndOfData{1, 1, Intervals{}}});
  const auto* up = find<ApplyUpdate>(a);
  ASSERT_NE(up, nullptr);
  EXPECT_EQ(up->keys_announced, std::vector<RouterKey>{k});
  EXPECT_EQ(h.client.router_keys().size(), 1u);
  (void)h.advance(seconds(3600));
  auto b = h.cache(1, {CacheResponse{1}, RouterKeyPdu{false, k}, EndOfData{1, 2, Intervals{}}});
  ASSERT_NE(find<ApplyUpdate>(b), nullptr);
  EXPECT_EQ(find<ApplyUpdate>(b)->keys_withdrawn, std::vector<RouterKey>{k});
  EXPECT_TRUE(h.client.router_keys().empty());
}

// A cache with random data that changes at random, talking to the client
// through a stream split at random points: after every End of Data the
// client holds exactly the cache's VRPs, and the updates it reported,
// applied in order to a mirror, give the same set.
RC_GTEST_PROP(Client, FollowsARandomCache, ()) {
  Harness h;
  std::set<Vrp> cache;
  std::set<Vrp> mirror;
  uint32_t serial = 1;
  auto apply = [&](const ClientActions& acts) {
    for (const auto& a : acts) {
      if (const auto* up = std::get_if<ApplyUpdate>(&a)) {
        for (const auto& v : up->withdrawn) RC_ASSERT(mirror.erase(v) == 1u);
        for (const auto& v : up->announced) RC_ASSERT(mirror.insert(v).second);
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
  auto vrp_gen = rc::gen::apply(
      [](uint8_t a, uint8_t len, uint32_t as) {
        uint8_t b[16] = {10, a, 0, 0};
        auto p = net::Prefix::make(net::IpAddress::from_bytes(net::IpFamily::V4, b), 8 + len % 9);
        return Vrp{*p, 24, as % 4};
      },
      rc::gen::arbitrary<uint8_t>(), rc::gen::arbitrary<uint8_t>(), rc::gen::arbitrary<uint32_t>());

  auto first = sent(h.step(Connected{}));
  RC_ASSERT(std::holds_alternative<ResetQuery>(first.at(0).pdu));
  for (const auto& v : *rc::gen::container<std::vector<Vrp>>(vrp_gen)) cache.insert(v);
  std::vector<std::byte> wire;
  encode(1, CacheResponse{42}, wire);
  for (const auto& v : cache) encode(1, PrefixPdu{true, v}, wire);
  encode(1, EndOfData{42, serial, Intervals{60, 30, 600}}, wire);
  send_split(wire);
  RC_ASSERT(h.client.vrps() == std::vector<Vrp>(cache.begin(), cache.end()));
  RC_ASSERT(mirror == cache);

  int rounds = *rc::gen::inRange(1, 6);
  for (int r = 0; r < rounds; ++r) {
    auto q = sent(h.advance(seconds(60)));
    RC_ASSERT(q.size() == 1u);
    RC_ASSERT(std::get<SerialQuery>(q[0].pdu) == (SerialQuery{42, serial}));
    wire.clear();
    encode(1, CacheResponse{42}, wire);
    for (const auto& v : *rc::gen::container<std::vector<Vrp>>(vrp_gen)) {
      if (cache.count(v)) {
        cache.erase(v);
        encode(1, PrefixPdu{false, v}, wire);
      } else {
        cache.insert(v);
        encode(1, PrefixPdu{true, v}, wire);
      }
    }
    encode(1, EndOfData{42, ++serial, Intervals{60, 30, 600}}, wire);
    send_split(wire);
    RC_ASSERT(h.client.serial() == serial);
    RC_ASSERT(h.client.vrps() == std::vector<Vrp>(cache.begin(), cache.end()));
    RC_ASSERT(mirror == cache);
  }
}

// ---- Bounds on what a cache can make the client hold (issue 19).

// `n` distinct IPv4 VRPs, 10.x.y.0/24 by index.
std::vector<Vrp> many_vrps(size_t n, uint32_t asn = 64496) {
  std::vector<Vrp> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    auto addr = net::IpAddress::v4(0x0a000000u + static_cast<uint32_t>(i << 8));
    out.push_back(Vrp{*net::Prefix::make(addr, 24), 24, asn});
  }
  return out;
}

TEST(ClientBounds, ResetAnswerPastMaxVrpsIsCutOffWithInternalErrorKeepingTheOldSet) {
  ClientConfig cfg;
  cfg.max_vrps = 100;
  Harness h(cfg);
  h.synced({V("192.0.2.0/24", 24, 1)});
  // The cache resets us (Cache Reset) and floods: 101 announcements.
  auto q = sent(h.advance(seconds(100)));
  ASSERT_EQ(q.size(), 1u);
  (void)h.cache(1, {CacheReset{}});
  std::vector<Pdu> flood{CacheResponse{5}};
  for (const Vrp& v : many_vrps(100)) flood.emplace_back(PrefixPdu{true, v});
  EXPECT_TRUE(sent(h.cache(1, flood)).empty());  // 100 are allowed
  auto over = many_vrps(101).back();
  auto a = h.cache(1, {PrefixPdu{true, over}});
  auto e = error_sent(a);
  EXPECT_EQ(e.code, ErrorCode::kInternalError);
  EXPECT_EQ(e.pdu, encode(1, PrefixPdu{true, over}));  // the PDU that went past the limit
  ASSERT_NE(find<CloseConnection>(a), nullptr);
  EXPECT_EQ(find<CloseConnection>(a)->reason, CloseReason::kErrorSent);
  EXPECT_EQ(find<ApplyUpdate>(a), nullptr);
  // The previous set is still in force, and nothing of the flood is held.
  EXPECT_EQ(h.client.vrps(), std::vector<Vrp>{V("192.0.2.0/24", 24, 1)});
  EXPECT_TRUE(h.client.has_data());
  (void)h.step(Disconnected{});
  EXPECT_EQ(h.client.held_bytes(), h.client.vrps().capacity() * sizeof(Vrp));
}

TEST(ClientBounds, ExactlyMaxVrpsIsAccepted) {
  ClientConfig cfg;
  cfg.max_vrps = 50;
  Harness h(cfg);
  h.synced(many_vrps(50));
  EXPECT_EQ(h.client.vrps().size(), 50u);
  // An incremental answer that replaces all 50 with 50 others (100 records
  // received) leaves 50: accepted.
  (void)h.advance(seconds(100));
  std::vector<Pdu> swap{CacheResponse{5}};
  for (const Vrp& v : many_vrps(50)) swap.emplace_back(PrefixPdu{false, v});
  for (const Vrp& v : many_vrps(50, 64497)) swap.emplace_back(PrefixPdu{true, v});
  swap.emplace_back(EndOfData{5, 11, Intervals{100, 50, 1000}});
  auto a = h.cache(1, swap);
  ASSERT_NE(find<ApplyUpdate>(a), nullptr);
  EXPECT_EQ(h.client.vrps(), many_vrps(50, 64497));
}

TEST(ClientBounds, IncrementalAnswerLeavingMoreThanMaxVrpsIsRefused) {
  ClientConfig cfg;
  cfg.max_vrps = 50;
  Harness h(cfg);
  h.synced(many_vrps(40));
  (void)h.advance(seconds(100));
  std::vector<Pdu> grow{CacheResponse{5}};
  for (const Vrp& v : many_vrps(20, 64497)) grow.emplace_back(PrefixPdu{true, v});
  grow.emplace_back(EndOfData{5, 11, Intervals{100, 50, 1000}});
  auto a = h.cache(1, grow);
  EXPECT_EQ(error_sent(a).code, ErrorCode::kInternalError);
  EXPECT_EQ(find<ApplyUpdate>(a), nullptr);
  EXPECT_EQ(h.client.vrps(), many_vrps(40));
  EXPECT_EQ(h.client.serial(), 10u);
}

TEST(ClientBounds, RouterKeysCountTowardsTheLimit) {
  ClientConfig cfg;
  cfg.max_vrps = 3;
  Harness h(cfg);
  (void)h.step(Connected{});
  std::vector<Pdu> pdus{CacheResponse{1}};
  for (uint8_t i = 0; i < 3; ++i) {
    RouterKey k;
    k.ski.fill(i);
    k.asn = 64496;
    pdus.emplace_back(RouterKeyPdu{true, k});
  }
  pdus.emplace_back(PrefixPdu{true, V("192.0.2.0/24", 24, 1)});
  auto a = h.cache(1, pdus);
  EXPECT_EQ(error_sent(a).code, ErrorCode::kInternalError);
  EXPECT_FALSE(h.client.has_data());
}

TEST(ClientBounds, HalfFinishedAnswerTimesOutKeepingTheOldSet) {
  ClientConfig cfg;
  cfg.answer_timeout = seconds(30);
  Harness h(cfg);
  h.synced({V("192.0.2.0/24", 24, 1)});
  auto q = sent(h.advance(seconds(100)));
  ASSERT_EQ(q.size(), 1u);  // the Serial Query at the refresh interval
  EXPECT_EQ(h.client.next_deadline(), h.now + seconds(30));
  // Cache Response, some records, and then nothing: no End of Data.
  std::vector<Pdu> part{CacheResponse{5}};
  for (const Vrp& v : many_vrps(1000)) part.emplace_back(PrefixPdu{true, v});
  (void)h.cache(1, part);
  EXPECT_EQ(h.client.state(), Client::State::kReceiving);
  EXPECT_GT(h.client.held_bytes(), 1000 * sizeof(Vrp));
  EXPECT_EQ(h.client.next_deadline(), h.now + seconds(30));
  EXPECT_EQ(find<CloseConnection>(h.advance(seconds(29))), nullptr);
  auto a = h.advance(seconds(1));
  const auto* close = find<CloseConnection>(a);
  ASSERT_NE(close, nullptr);
  EXPECT_EQ(close->reason, CloseReason::kTimedOut);
  const auto* d = find<Diagnostic>(a);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->kind, Diagnostic::Kind::kTimedOut);
  EXPECT_TRUE(sent(a).empty());  // no Error Report: the cache did nothing wrong in form
  EXPECT_EQ(find<ApplyUpdate>(a), nullptr);
  EXPECT_EQ(h.client.vrps(), std::vector<Vrp>{V("192.0.2.0/24", 24, 1)});
  EXPECT_TRUE(h.client.has_data());
  (void)h.step(Disconnected{});
  // What the half answer held is gone.
  EXPECT_EQ(h.client.held_bytes(), h.client.vrps().capacity() * sizeof(Vrp));
  // The next connection may go on from our serial: nothing was applied.
  auto q2 = h.redial(seconds(50));
  ASSERT_EQ(q2.size(), 1u);
}

TEST(ClientBounds, AQueryNeverAnsweredTimesOutToo) {
  ClientConfig cfg;
  cfg.answer_timeout = seconds(20);
  Harness h(cfg);
  (void)h.step(Connected{});
  EXPECT_EQ(h.client.next_deadline(), h.now + seconds(20));
  auto a = h.advance(seconds(20));
  ASSERT_NE(find<CloseConnection>(a), nullptr);
  EXPECT_EQ(find<CloseConnection>(a)->reason, CloseReason::kTimedOut);
  EXPECT_FALSE(h.client.has_data());
}

TEST(ClientBounds, ACompleteAnswerStopsTheAnswerTimer) {
  ClientConfig cfg;
  cfg.answer_timeout = seconds(20);
  Harness h(cfg);
  h.synced({V("192.0.2.0/24", 24, 1)});
  // Idle: the next deadline is the refresh (100 s), not the answer timer.
  EXPECT_EQ(h.client.next_deadline(), h.now + seconds(100));
  EXPECT_EQ(find<CloseConnection>(h.advance(seconds(50))), nullptr);
}

TEST(ClientBounds, AnAbandonedAnswerFreesItsBuffers) {
  Harness h;
  (void)h.step(Connected{});
  std::vector<Pdu> part{CacheResponse{1}};
  for (const Vrp& v : many_vrps(20000)) part.emplace_back(PrefixPdu{true, v});
  (void)h.cache(1, part);
  EXPECT_GE(h.client.held_bytes(), 20000 * sizeof(Vrp));
  (void)h.step(Disconnected{});
  // Not kept as spare capacity for the life of the client (it was: clear()
  // only, so a 60 million record flood held 1.7 GB after the cache went).
  EXPECT_EQ(h.client.held_bytes(), 0u);
}

TEST(ClientBounds, ExpiredDataIsFreed) {
  Harness h;
  h.synced(many_vrps(5000));
  (void)h.step(Disconnected{});
  for (int i = 0; i < 21 && h.client.has_data(); ++i) {
    auto a = h.advance(seconds(50));
    if (find<Reconnect>(a)) (void)h.step(Disconnected{});
  }
  EXPECT_FALSE(h.client.has_data());
  EXPECT_EQ(h.client.held_bytes(), 0u);
}

}  // namespace
}  // namespace petrel::rpki
