// Tests for fsm/graceful.h: which Cease goes as a Hard Reset (RFC 8538
// section 5), when a session's end leaves the routes with the helper
// (RFC 4724 section 4.2, RFC 8538 section 3), the Forwarding State bit on
// return; and the same through two FSMs back to back.
#include "fsm/graceful.h"

#include <gtest/gtest.h>

#include "fsm/negotiate.h"
#include "fsm/session_pair.h"
#include "tests/fsm/fsm_testing.h"

namespace petrel::fsm {
namespace {

using namespace testing;
using codec::Family;
using codec::GracefulRestart;

constexpr Family kV4{1, 1};
constexpr Family kV6{2, 1};

GracefulRestart gr(bool notification, std::vector<GracefulRestart::PerFamily> fams = {{kV4, true}}) {
  GracefulRestart g;
  g.notification = notification;
  g.restart_time = 120;
  g.families = std::move(fams);
  return g;
}

Negotiated negotiated(bool graceful, bool notification) {
  Negotiated n;
  if (graceful) n.graceful_restart = gr(notification);
  n.graceful_notification = graceful && notification;
  return n;
}

TEST(Graceful, HardCeaseSubcodesFollowRfc8538Section5) {
  for (uint8_t s : {codec::cease::kMaxPrefixes, codec::cease::kAdministrativeShutdown,
                    codec::cease::kPeerDeconfigured, codec::cease::kAdministrativeReset, codec::cease::kHardReset})
    EXPECT_TRUE(cease_is_hard(s)) << int(s);
  for (uint8_t s : {codec::cease::kConnectionRejected, codec::cease::kOtherConfigurationChange,
                    codec::cease::kConnectionCollision, codec::cease::kOutOfResources, codec::cease::kBfdDown})
    EXPECT_FALSE(cease_is_hard(s)) << int(s);
}

TEST(Graceful, HardResetCarriesTheNotificationItStandsFor) {
  codec::Notification inner{6, codec::cease::kAdministrativeShutdown, {std::byte{3}, std::byte{'b'}, std::byte{'y'},
                                                                       std::byte{'e'}}};
  codec::Notification n = hard_reset(inner);
  EXPECT_EQ(n.code, 6);
  EXPECT_EQ(n.subcode, codec::cease::kHardReset);
  std::vector<std::byte> want{std::byte{6}, std::byte{2}, std::byte{3}, std::byte{'b'}, std::byte{'y'}, std::byte{'e'}};
  EXPECT_EQ(n.data, want);
  EXPECT_TRUE(is_hard_reset(n.code, n.subcode));
  EXPECT_FALSE(is_hard_reset(6, 2));
}

TEST(Graceful, OnlyAHardCeaseToAPeerWithTheNBitIsWrapped) {
  const codec::Notification shutdown{6, codec::cease::kAdministrativeShutdown, {}};
  const codec::Notification collision{6, codec::cease::kConnectionCollision, {}};
  const codec::Notification hold{4, 0, {}};
  const Negotiated with_n = negotiated(true, true), without_n = negotiated(true, false);
  EXPECT_EQ(for_session(shutdown, &with_n).subcode, codec::cease::kHardReset);
  EXPECT_EQ(for_session(shutdown, &without_n), shutdown);  // RFC 8538 section 3: not without N
  EXPECT_EQ(for_session(shutdown, nullptr), shutdown);
  EXPECT_EQ(for_session(collision, &with_n), collision);
  EXPECT_EQ(for_session(hold, &with_n), hold);
  const codec::Notification hard{6, codec::cease::kHardReset, {}};
  EXPECT_EQ(for_session(hard, &with_n), hard);  // not wrapped twice
}

TEST(Graceful, HelperKeepsRoutesOnlyWhenTheEndAllowsIt) {
  const Negotiated none = negotiated(false, false), plain = negotiated(true, false), n = negotiated(true, true);
  // Without the capability on both sides: never.
  EXPECT_FALSE(helper_keeps_routes(none, DownCause::kTcpFailed, 0, 0));
  // TCP lost, hold timers: kept with the capability alone.
  for (DownCause c : {DownCause::kTcpFailed, DownCause::kHoldTimerExpired, DownCause::kSendHoldTimerExpired}) {
    EXPECT_TRUE(helper_keeps_routes(plain, c, 0, 0));
    EXPECT_TRUE(helper_keeps_routes(n, c, 0, 0));
  }
  // A NOTIFICATION either way: only with the N bit, and never a Hard Reset.
  EXPECT_FALSE(helper_keeps_routes(plain, DownCause::kNotificationReceived, 3, 1));
  EXPECT_TRUE(helper_keeps_routes(n, DownCause::kNotificationReceived, 3, 1));
  EXPECT_TRUE(helper_keeps_routes(n, DownCause::kNotificationReceived, 6, codec::cease::kOutOfResources));
  EXPECT_FALSE(helper_keeps_routes(n, DownCause::kNotificationReceived, 6, codec::cease::kHardReset));
  EXPECT_TRUE(helper_keeps_routes(n, DownCause::kMessageError, 3, 1));
  EXPECT_FALSE(helper_keeps_routes(plain, DownCause::kMessageError, 3, 1));
  EXPECT_FALSE(helper_keeps_routes(n, DownCause::kManualStop, 6, codec::cease::kHardReset));
  EXPECT_FALSE(helper_keeps_routes(plain, DownCause::kManualStop, 6, codec::cease::kAdministrativeShutdown));
}

TEST(Graceful, StaleRoutesStayOnReturnOnlyWithTheForwardingStateBit) {
  EXPECT_FALSE(keeps_stale_on_return(std::nullopt, kV4));  // no capability in the new OPEN
  const GracefulRestart again = gr(false, {{kV4, true}, {kV6, false}});
  EXPECT_TRUE(keeps_stale_on_return(again, kV4));
  EXPECT_FALSE(keeps_stale_on_return(again, kV6));               // F = 0
  EXPECT_FALSE(keeps_stale_on_return(again, Family{1, 2}));      // not listed
}

TEST(Graceful, NegotiatedOnlyWhenBothOfferIt) {
  PeerConfig a = config_a();
  a.capabilities.graceful_restart = gr(true);
  PeerConfig b = config_b();
  b.capabilities.graceful_restart = gr(false);
  auto r = negotiate(a, open_of(b));
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(r->graceful_restart.has_value());
  EXPECT_FALSE(r->graceful_notification);  // only A set N
  b.capabilities.graceful_restart = gr(true);
  r = negotiate(a, open_of(b));
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->graceful_notification);
}

SessionPair graceful_pair(bool notification) {
  PeerConfig a = config_a(), b = config_b();
  a.capabilities.graceful_restart = gr(notification);
  b.capabilities.graceful_restart = gr(notification);
  SessionPair p(std::move(a), std::move(b), kT0);
  p.step_both(ManualStart{}, ManualStart{});
  return p;
}

// RFC 8538: an operator's stop goes as a Hard Reset when both set N, and
// neither side keeps the other's routes.
TEST(Graceful, ManualStopIsAHardResetWithTheNBit) {
  SessionPair p = graceful_pair(true);
  ASSERT_EQ(p.fsm(Side::kA).state(), State::kEstablished);
  p.step(Side::kA, ManualStop{codec::cease::kAdministrativeShutdown, "maintenance"});
  ASSERT_EQ(p.trace(Side::kA).notifications.size(), 1u);
  const codec::Notification& sent = p.trace(Side::kA).notifications[0];
  EXPECT_EQ(sent.subcode, codec::cease::kHardReset);
  EXPECT_EQ(sent.data.at(0), std::byte{6});
  EXPECT_EQ(sent.data.at(1), std::byte{codec::cease::kAdministrativeShutdown});
  ASSERT_EQ(p.trace(Side::kB).downs.size(), 1u);
  EXPECT_EQ(p.trace(Side::kB).downs[0].subcode, codec::cease::kHardReset);
  EXPECT_FALSE(p.trace(Side::kB).downs[0].graceful);
  EXPECT_FALSE(p.trace(Side::kA).downs.at(0).graceful);
}

// A soft Cease (Out of Resources) with the N bit leaves the routes with
// both helpers; without it, with neither.
TEST(Graceful, SoftCeaseKeepsRoutesOnlyWithTheNBit) {
  for (bool n : {true, false}) {
    SessionPair p = graceful_pair(n);
    p.step(Side::kA, AutomaticStop{codec::cease::kOutOfResources, {}});
    EXPECT_EQ(p.trace(Side::kA).notifications.at(0).subcode, codec::cease::kOutOfResources);
    EXPECT_EQ(p.trace(Side::kB).downs.at(0).graceful, n);
    EXPECT_EQ(p.trace(Side::kA).downs.at(0).graceful, n);
  }
}

// The hold timer: the silent side's routes stay with the other.
TEST(Graceful, HoldTimerExpiryKeepsRoutes) {
  SessionPair p = graceful_pair(false);
  p.set_reading(Side::kB, false);
  p.advance(std::chrono::seconds(91));
  ASSERT_EQ(p.trace(Side::kB).downs.size(), 1u);
  EXPECT_EQ(p.trace(Side::kB).downs[0].cause, DownCause::kHoldTimerExpired);
  EXPECT_TRUE(p.trace(Side::kB).downs[0].graceful);
}

// RFC 9494 section 4.2: what a family's routes become when the session
// goes down, and for how long they are kept long-lived stale.
TEST(Graceful, LongLivedStaleTimeAndWhatRoutesAreKeptAs) {
  codec::LongLivedGracefulRestart llgr;
  llgr.families = {{kV4, false, 3600}, {kV6, true, 0}};
  const std::optional<GracefulRestart> g = gr(true, {{kV4, true}});
  EXPECT_EQ(long_lived_stale_time(g, llgr, kV4, 86400), 3600u);
  EXPECT_EQ(long_lived_stale_time(g, llgr, kV4, 60), 60u);  // ours is smaller
  EXPECT_EQ(long_lived_stale_time(g, llgr, kV6, 86400), 0u);
  EXPECT_EQ(long_lived_stale_time(g, std::nullopt, kV4, 86400), 0u);
  // Section 4.1: without the graceful restart capability, LLGR is disregarded.
  EXPECT_EQ(long_lived_stale_time(std::nullopt, llgr, kV4, 86400), 0u);
  EXPECT_EQ(kept_as(std::nullopt, llgr, kV4, 86400), KeptAs::kWithdraw);
  // Listed with a restart time: graceful restart first.
  EXPECT_EQ(kept_as(g, llgr, kV4, 86400), KeptAs::kRestart);
  // Not listed (or a restart time of 0): long-lived at once, if LLGR covers it.
  std::optional<GracefulRestart> none = gr(true, {});
  EXPECT_EQ(kept_as(none, llgr, kV4, 86400), KeptAs::kLongLived);
  EXPECT_EQ(kept_as(none, llgr, kV4, 0), KeptAs::kWithdraw);  // LLGR off here
  std::optional<GracefulRestart> zero = gr(true, {{kV4, true}});
  zero->restart_time = 0;
  EXPECT_EQ(kept_as(zero, llgr, kV4, 86400), KeptAs::kLongLived);
  EXPECT_EQ(kept_as(none, llgr, kV6, 86400), KeptAs::kWithdraw);  // stale time 0
  // On return: the LLGR capability's Forwarding State bit.
  EXPECT_FALSE(keeps_long_lived_on_return(llgr, kV4));
  EXPECT_TRUE(keeps_long_lived_on_return(llgr, kV6));
  EXPECT_FALSE(keeps_long_lived_on_return(std::nullopt, kV6));
}

// LLGR is negotiated only with graceful restart on both sides (RFC 9494
// section 4.1).
TEST(Graceful, LongLivedIsNegotiatedWithGracefulRestartOnly) {
  codec::LongLivedGracefulRestart llgr;
  llgr.families = {{kV4, false, 600}};
  PeerConfig a = config_a(), b = config_b();
  a.capabilities.long_lived_graceful_restart = b.capabilities.long_lived_graceful_restart = llgr;
  a.capabilities.graceful_restart = b.capabilities.graceful_restart = gr(true);
  auto both = negotiate(a, open_of(b));
  ASSERT_TRUE(both.ok());
  ASSERT_TRUE(both->long_lived_graceful_restart);
  EXPECT_EQ(both->long_lived_graceful_restart->families[0].stale_time, 600u);
  b.capabilities.graceful_restart.reset();
  auto no_gr = negotiate(a, open_of(b));
  ASSERT_TRUE(no_gr.ok());
  EXPECT_FALSE(no_gr->long_lived_graceful_restart);
  b.capabilities.graceful_restart = gr(true);
  a.capabilities.long_lived_graceful_restart.reset();
  auto not_ours = negotiate(a, open_of(b));
  ASSERT_TRUE(not_ours.ok());
  EXPECT_FALSE(not_ours->long_lived_graceful_restart);
}

}  // namespace
}  // namespace petrel::fsm
