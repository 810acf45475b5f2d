// Tests for fsm/fsm.h: every row of the RFC 4271 section 8.2.2 table that
// Petrel implements (each state x each event: next state, NOTIFICATION),
// then the rows with more to them: timers, DelayOpen, hold time 0, RFC 6608
// subcodes, RFC 9687 send hold timer.
#include "fsm/fsm.h"

#include <gtest/gtest.h>

#include <optional>
#include <tuple>

#include "tests/fsm/fsm_testing.h"

namespace petrel::fsm {
namespace {

using namespace testing;
using codec::MessageType;

struct Row {
  State from;
  EventKind event;
  State to;
  int code = -1;  // the NOTIFICATION sent, -1 for none
  int subcode = -1;
};

constexpr int kNone = -1;
using E = EventKind;
using S = State;

// RFC 4271 section 8.2.2 with RFC 6608 subcodes and RFC 9687, for the
// default configuration (active, no DelayOpen). Header error sample: 1/3.
constexpr Row kTable[] = {
    // Idle: only start events do anything.
    {S::kIdle, E::kManualStart, S::kConnect},
    {S::kIdle, E::kManualStop, S::kIdle},
    {S::kIdle, E::kAutomaticStart, S::kConnect},
    {S::kIdle, E::kAutomaticStop, S::kIdle},
    {S::kIdle, E::kTcpConnected, S::kIdle},
    {S::kIdle, E::kTcpAccepted, S::kIdle},
    {S::kIdle, E::kTcpFailed, S::kIdle},
    {S::kIdle, E::kConnectRetryTimerExpired, S::kIdle},
    {S::kIdle, E::kHoldTimerExpired, S::kIdle},
    {S::kIdle, E::kKeepaliveTimerExpired, S::kIdle},
    {S::kIdle, E::kDelayOpenTimerExpired, S::kIdle},
    {S::kIdle, E::kSendHoldTimerExpired, S::kIdle},
    {S::kIdle, E::kOpenReceived, S::kIdle},
    {S::kIdle, E::kKeepaliveReceived, S::kIdle},
    {S::kIdle, E::kUpdateReceived, S::kIdle},
    {S::kIdle, E::kNotificationReceived, S::kIdle},
    {S::kIdle, E::kRouteRefreshReceived, S::kIdle},
    {S::kIdle, E::kMessageError, S::kIdle},
    {S::kIdle, E::kCollisionDump, S::kIdle},
    {S::kIdle, E::kSendProgress, S::kIdle},
    {S::kIdle, E::kUpdateSent, S::kIdle},
    // Connect: no NOTIFICATION is ever sent before our OPEN.
    {S::kConnect, E::kManualStart, S::kConnect},
    {S::kConnect, E::kManualStop, S::kIdle},
    {S::kConnect, E::kAutomaticStart, S::kConnect},
    {S::kConnect, E::kAutomaticStop, S::kIdle},
    {S::kConnect, E::kTcpConnected, S::kOpenSent},
    {S::kConnect, E::kTcpAccepted, S::kOpenSent},
    {S::kConnect, E::kTcpFailed, S::kIdle},
    {S::kConnect, E::kConnectRetryTimerExpired, S::kConnect},
    {S::kConnect, E::kHoldTimerExpired, S::kIdle},
    {S::kConnect, E::kKeepaliveTimerExpired, S::kIdle},
    {S::kConnect, E::kDelayOpenTimerExpired, S::kOpenSent},
    {S::kConnect, E::kSendHoldTimerExpired, S::kIdle},
    {S::kConnect, E::kOpenReceived, S::kIdle},
    {S::kConnect, E::kKeepaliveReceived, S::kIdle},
    {S::kConnect, E::kUpdateReceived, S::kIdle},
    {S::kConnect, E::kNotificationReceived, S::kIdle},
    {S::kConnect, E::kRouteRefreshReceived, S::kIdle},
    {S::kConnect, E::kMessageError, S::kIdle},
    {S::kConnect, E::kCollisionDump, S::kIdle},
    {S::kConnect, E::kSendProgress, S::kConnect},
    {S::kConnect, E::kUpdateSent, S::kConnect},
    // Active (reached by a failed connection in OpenSent).
    {S::kActive, E::kManualStart, S::kActive},
    {S::kActive, E::kManualStop, S::kIdle},
    {S::kActive, E::kAutomaticStart, S::kActive},
    {S::kActive, E::kAutomaticStop, S::kIdle},
    {S::kActive, E::kTcpConnected, S::kOpenSent},
    {S::kActive, E::kTcpAccepted, S::kOpenSent},
    {S::kActive, E::kTcpFailed, S::kIdle},
    {S::kActive, E::kConnectRetryTimerExpired, S::kConnect},
    {S::kActive, E::kHoldTimerExpired, S::kIdle},
    {S::kActive, E::kKeepaliveTimerExpired, S::kIdle},
    {S::kActive, E::kDelayOpenTimerExpired, S::kOpenSent},
    {S::kActive, E::kSendHoldTimerExpired, S::kIdle},
    {S::kActive, E::kOpenReceived, S::kIdle},
    {S::kActive, E::kKeepaliveReceived, S::kIdle},
    {S::kActive, E::kUpdateReceived, S::kIdle},
    {S::kActive, E::kNotificationReceived, S::kIdle},
    {S::kActive, E::kRouteRefreshReceived, S::kIdle},
    {S::kActive, E::kMessageError, S::kIdle},
    {S::kActive, E::kCollisionDump, S::kIdle},
    {S::kActive, E::kSendProgress, S::kActive},
    {S::kActive, E::kUpdateSent, S::kActive},
    // OpenSent.
    {S::kOpenSent, E::kManualStart, S::kOpenSent},
    {S::kOpenSent, E::kManualStop, S::kIdle, 6, 2},
    {S::kOpenSent, E::kAutomaticStart, S::kOpenSent},
    {S::kOpenSent, E::kAutomaticStop, S::kIdle, 6, 8},
    {S::kOpenSent, E::kTcpConnected, S::kOpenSent},
    {S::kOpenSent, E::kTcpAccepted, S::kOpenSent},
    {S::kOpenSent, E::kTcpFailed, S::kActive},
    {S::kOpenSent, E::kConnectRetryTimerExpired, S::kIdle, 5, 0},
    {S::kOpenSent, E::kHoldTimerExpired, S::kIdle, 4, 0},
    {S::kOpenSent, E::kKeepaliveTimerExpired, S::kIdle, 5, 0},
    {S::kOpenSent, E::kDelayOpenTimerExpired, S::kIdle, 5, 0},
    {S::kOpenSent, E::kSendHoldTimerExpired, S::kIdle, 8, 0},
    {S::kOpenSent, E::kOpenReceived, S::kOpenConfirm},
    {S::kOpenSent, E::kKeepaliveReceived, S::kIdle, 5, 1},
    {S::kOpenSent, E::kUpdateReceived, S::kIdle, 5, 1},
    {S::kOpenSent, E::kNotificationReceived, S::kIdle},
    {S::kOpenSent, E::kRouteRefreshReceived, S::kIdle, 5, 1},
    {S::kOpenSent, E::kMessageError, S::kIdle, 1, 3},
    {S::kOpenSent, E::kCollisionDump, S::kIdle, 6, 7},
    {S::kOpenSent, E::kSendProgress, S::kOpenSent},
    {S::kOpenSent, E::kUpdateSent, S::kOpenSent},
    // OpenConfirm.
    {S::kOpenConfirm, E::kManualStart, S::kOpenConfirm},
    {S::kOpenConfirm, E::kManualStop, S::kIdle, 6, 2},
    {S::kOpenConfirm, E::kAutomaticStart, S::kOpenConfirm},
    {S::kOpenConfirm, E::kAutomaticStop, S::kIdle, 6, 8},
    {S::kOpenConfirm, E::kTcpConnected, S::kOpenConfirm},
    {S::kOpenConfirm, E::kTcpAccepted, S::kOpenConfirm},
    {S::kOpenConfirm, E::kTcpFailed, S::kIdle},
    {S::kOpenConfirm, E::kConnectRetryTimerExpired, S::kIdle, 5, 0},
    {S::kOpenConfirm, E::kHoldTimerExpired, S::kIdle, 4, 0},
    {S::kOpenConfirm, E::kKeepaliveTimerExpired, S::kOpenConfirm},
    {S::kOpenConfirm, E::kDelayOpenTimerExpired, S::kIdle, 5, 0},
    {S::kOpenConfirm, E::kSendHoldTimerExpired, S::kIdle, 8, 0},
    {S::kOpenConfirm, E::kOpenReceived, S::kIdle, 5, 2},
    {S::kOpenConfirm, E::kKeepaliveReceived, S::kEstablished},
    {S::kOpenConfirm, E::kUpdateReceived, S::kIdle, 5, 2},
    {S::kOpenConfirm, E::kNotificationReceived, S::kIdle},
    {S::kOpenConfirm, E::kRouteRefreshReceived, S::kIdle, 5, 2},
    {S::kOpenConfirm, E::kMessageError, S::kIdle, 1, 3},
    {S::kOpenConfirm, E::kCollisionDump, S::kIdle, 6, 7},
    {S::kOpenConfirm, E::kSendProgress, S::kOpenConfirm},
    {S::kOpenConfirm, E::kUpdateSent, S::kOpenConfirm},
    // Established.
    {S::kEstablished, E::kManualStart, S::kEstablished},
    {S::kEstablished, E::kManualStop, S::kIdle, 6, 2},
    {S::kEstablished, E::kAutomaticStart, S::kEstablished},
    {S::kEstablished, E::kAutomaticStop, S::kIdle, 6, 8},
    {S::kEstablished, E::kTcpConnected, S::kEstablished},
    {S::kEstablished, E::kTcpAccepted, S::kEstablished},
    {S::kEstablished, E::kTcpFailed, S::kIdle},
    {S::kEstablished, E::kConnectRetryTimerExpired, S::kIdle, 5, 0},
    {S::kEstablished, E::kHoldTimerExpired, S::kIdle, 4, 0},
    {S::kEstablished, E::kKeepaliveTimerExpired, S::kEstablished},
    {S::kEstablished, E::kDelayOpenTimerExpired, S::kIdle, 5, 0},
    {S::kEstablished, E::kSendHoldTimerExpired, S::kIdle, 8, 0},
    {S::kEstablished, E::kOpenReceived, S::kIdle, 5, 3},
    {S::kEstablished, E::kKeepaliveReceived, S::kEstablished},
    {S::kEstablished, E::kUpdateReceived, S::kEstablished},
    {S::kEstablished, E::kNotificationReceived, S::kIdle},
    {S::kEstablished, E::kRouteRefreshReceived, S::kEstablished},
    {S::kEstablished, E::kMessageError, S::kIdle, 1, 3},
    {S::kEstablished, E::kCollisionDump, S::kIdle, 6, 7},
    {S::kEstablished, E::kSendProgress, S::kEstablished},
    {S::kEstablished, E::kUpdateSent, S::kEstablished},
};

class Table : public ::testing::TestWithParam<Row> {};

TEST_P(Table, Row) {
  const Row& row = GetParam();
  Fsm f(config_a());
  drive_to(f, row.from);
  ASSERT_EQ(f.state(), row.from);
  Actions out = f.step(sample_event(row.event), kT0 + 1s);
  EXPECT_EQ(f.state(), row.to) << state_name(row.from) << " + " << event_kind_name(row.event);
  auto n = sent_notification(out);
  if (row.code == kNone) {
    EXPECT_FALSE(n.has_value()) << "code " << int(n ? n->code : 0);
  } else {
    ASSERT_TRUE(n.has_value());
    EXPECT_EQ(n->code, row.code);
    EXPECT_EQ(n->subcode, row.subcode);
  }
  EXPECT_EQ(check_invariants(f), "");
  // Leaving for Idle from any other state reports it once, and drops the
  // connection after whatever NOTIFICATION went out.
  bool down = row.from != State::kIdle && row.to == State::kIdle;
  EXPECT_EQ(count<SessionDown>(out), down ? 1 : 0);
  if (down) {
    EXPECT_EQ(find<SessionDown>(out)->from, row.from);
    EXPECT_EQ(count<Disconnect>(out), 1);
    EXPECT_TRUE(std::holds_alternative<SessionDown>(out.back()));
  }
  EXPECT_EQ(count<SessionUp>(out), row.to == State::kEstablished && row.from != row.to ? 1 : 0);
}

std::string row_name(const ::testing::TestParamInfo<Row>& info) {
  return std::string(state_name(info.param.from)) + "_" + std::string(event_kind_name(info.param.event));
}

INSTANTIATE_TEST_SUITE_P(Rfc4271, Table, ::testing::ValuesIn(kTable), row_name);

TEST(Table, CoversEveryStateAndEvent) {
  bool seen[kStateCount][kEventKindCount] = {};
  for (const Row& r : kTable) seen[static_cast<int>(r.from)][static_cast<int>(r.event)] = true;
  for (int s = 0; s < kStateCount; ++s)
    for (size_t e = 0; e < kEventKindCount; ++e) {
      if (static_cast<EventKind>(e) == EventKind::kTick) continue;
      EXPECT_TRUE(seen[s][e]) << state_name(static_cast<State>(s)) << " "
                              << event_kind_name(static_cast<EventKind>(e));
    }
}

TEST(Idle, StartDialsAndArmsConnectRetry) {
  Fsm f(config_a());
  Actions out = f.step(ManualStart{}, kT0);
  EXPECT_EQ(count<Connect>(out), 1);
  EXPECT_EQ(f.deadline(Timer::kConnectRetry), kT0 + 120s);
  EXPECT_EQ(f.next_deadline(), kT0 + 120s);
}

TEST(Idle, PassiveStartListensWithoutTimers) {
  PeerConfig c = config_a();
  c.passive = true;
  Fsm f(c);
  Actions out = f.step(AutomaticStart{}, kT0);
  EXPECT_EQ(f.state(), State::kActive);
  EXPECT_EQ(count<Connect>(out), 0);
  EXPECT_EQ(f.next_deadline(), std::nullopt);
  // A passive peer never dials, even if told its retry timer fired.
  out = f.step(ConnectRetryTimerExpired{}, kT0 + 1s);
  EXPECT_EQ(f.state(), State::kActive);
  EXPECT_EQ(count<Connect>(out), 0);
}

TEST(Idle, RefusesConnections) {
  Fsm f(config_a());
  Actions out = f.step(TcpAccepted{}, kT0);
  EXPECT_EQ(count<Disconnect>(out), 1);
  EXPECT_NE(find<Ignored>(out), nullptr);
}

TEST(Connect, RetryTimerDialsAgain) {
  Fsm f(config_a());
  drive_to(f, State::kConnect);
  Actions out = f.step(Tick{}, kT0 + 120s);
  EXPECT_EQ(f.state(), State::kConnect);
  EXPECT_EQ(count<Disconnect>(out), 1);
  EXPECT_EQ(count<Connect>(out), 1);
  EXPECT_EQ(f.deadline(Timer::kConnectRetry), kT0 + 240s);
}

TEST(Connect, TcpUpSendsOpenUnderTheLargeHoldTimer) {
  Fsm f(config_a());
  drive_to(f, State::kConnect);
  Actions out = f.step(TcpConnected{}, kT0 + 1s);
  EXPECT_EQ(sent_types(out), std::vector{MessageType::kOpen});
  const auto* s = find<Send>(out);
  auto open = codec::decode_open(bytes::Span(s->bytes).subspan(codec::kHeaderLen));
  ASSERT_TRUE(open);
  EXPECT_EQ(open->as(), 65001u);
  EXPECT_EQ(open->hold_time, 90);
  EXPECT_EQ(open->bgp_id, 0x01010101u);
  EXPECT_EQ(f.deadline(Timer::kHold), kT0 + 1s + 240s);
  EXPECT_EQ(f.deadline(Timer::kConnectRetry), std::nullopt);
}

TEST(Connect, FailureCountsTowardsTheBackOffOnlyAfterOpenSent) {
  Fsm f(config_a());
  drive_to(f, State::kConnect);
  (void)f.step(TcpFailed{}, kT0);
  EXPECT_EQ(f.connect_retry_counter(), 0u);
  drive_to(f, State::kOpenSent);
  (void)f.step(HoldTimerExpired{}, kT0);
  EXPECT_EQ(f.connect_retry_counter(), 1u);
  (void)f.step(ManualStart{}, kT0);
  EXPECT_EQ(f.connect_retry_counter(), 0u);
}

TEST(OpenSent, AcceptsOpenNegotiatesAndConfirms) {
  Fsm f(config_a());
  drive_to(f, State::kOpenSent);
  PeerConfig peer = config_b();
  peer.hold_time = 60;
  Actions out = f.step(OpenReceived{open_of(peer)}, kT0 + 2s);
  EXPECT_EQ(f.state(), State::kOpenConfirm);
  EXPECT_EQ(sent_types(out), std::vector{MessageType::kKeepalive});
  ASSERT_TRUE(f.negotiated());
  EXPECT_EQ(f.negotiated()->hold_time, 60);
  EXPECT_EQ(f.negotiated()->keepalive, 20);
  EXPECT_EQ(f.deadline(Timer::kHold), kT0 + 62s);
  EXPECT_EQ(f.deadline(Timer::kKeepalive), kT0 + 22s);
  const auto* acc = find<OpenAccepted>(out);
  ASSERT_NE(acc, nullptr);
  EXPECT_EQ(acc->peer_id, peer.local_id);
  EXPECT_EQ(acc->peer_as, 65002u);
}

TEST(OpenSent, RefusedOpenSendsTheReason) {
  Fsm f(config_a());
  drive_to(f, State::kOpenSent);
  PeerConfig peer = config_b();
  peer.local_as = 65099;
  Actions out = f.step(OpenReceived{open_of(peer)}, kT0);
  EXPECT_EQ(f.state(), State::kIdle);
  auto n = sent_notification(out);
  ASSERT_TRUE(n);
  EXPECT_EQ(n->code, 2);
  EXPECT_EQ(n->subcode, codec::open_error::kBadPeerAs);
  const auto* d = find<SessionDown>(out);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->cause, DownCause::kOpenRefused);
  EXPECT_TRUE(d->notification_sent);
  EXPECT_EQ(d->code, 2);
}

TEST(OpenSent, UnexpectedUpdateErrorIsAnFsmError) {
  Fsm f(config_a());
  drive_to(f, State::kOpenSent);
  Actions out = f.step(
      MessageError{codec::NotifyError::make(codec::ErrorCode::kUpdateMessage, 1), MessageType::kUpdate}, kT0);
  auto n = sent_notification(out);
  ASSERT_TRUE(n);
  EXPECT_EQ(n->code, 5);
  EXPECT_EQ(n->subcode, codec::fsm_error::kUnexpectedInOpenSent);
}

TEST(OpenSent, BadOpenSendsTheDecoderError) {
  Fsm f(config_a());
  drive_to(f, State::kOpenSent);
  Actions out = f.step(MessageError{codec::NotifyError::with_u16(codec::ErrorCode::kOpenMessage, 1, 4),
                                    MessageType::kOpen},
                       kT0);
  auto n = sent_notification(out);
  ASSERT_TRUE(n);
  EXPECT_EQ(n->code, 2);
  EXPECT_EQ(n->subcode, 1);
  EXPECT_EQ(bytes::to_hex(n->data), "0004");
}

TEST(OpenSent, VersionErrorDoesNotCountAsAFailure) {
  Fsm f(config_a());
  drive_to(f, State::kOpenSent);
  Actions out = f.step(NotificationReceived{{2, 1, {std::byte{0}, std::byte{3}}}}, kT0);
  EXPECT_EQ(f.state(), State::kIdle);
  EXPECT_EQ(f.connect_retry_counter(), 0u);
  const auto* d = find<SessionDown>(out);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->cause, DownCause::kNotificationReceived);
  EXPECT_FALSE(d->notification_sent);
  EXPECT_EQ(d->code, 2);
  EXPECT_EQ(d->subcode, 1);
}

TEST(OpenSent, TcpFailureGoesBackToListening) {
  Fsm f(config_a());
  drive_to(f, State::kOpenSent);
  Actions out = f.step(TcpFailed{}, kT0 + 5s);
  EXPECT_EQ(f.state(), State::kActive);
  EXPECT_EQ(count<Disconnect>(out), 1);
  EXPECT_EQ(count<SessionDown>(out), 0);
  EXPECT_EQ(f.deadline(Timer::kConnectRetry), kT0 + 125s);
  EXPECT_EQ(f.deadline(Timer::kHold), std::nullopt);
}

TEST(OpenConfirm, HoldTimeZeroRunsNoTimers) {
  PeerConfig c = config_a();
  Fsm f(c);
  drive_to(f, State::kOpenSent);
  PeerConfig peer = config_b();
  peer.hold_time = 0;
  (void)f.step(OpenReceived{open_of(peer)}, kT0);
  EXPECT_EQ(f.state(), State::kOpenConfirm);
  EXPECT_EQ(f.next_deadline(), std::nullopt);
  (void)f.step(KeepaliveReceived{}, kT0 + 1s);
  EXPECT_EQ(f.state(), State::kEstablished);
  EXPECT_EQ(f.next_deadline(), std::nullopt);
  Actions out = f.step(Tick{}, kT0 + 24h);
  EXPECT_EQ(f.state(), State::kEstablished);
  EXPECT_TRUE(out.empty());
}

TEST(OpenConfirm, KeepaliveEstablishes) {
  Fsm f(config_a());
  drive_to(f, State::kOpenConfirm);
  Actions out = f.step(KeepaliveReceived{}, kT0 + 3s);
  EXPECT_EQ(f.state(), State::kEstablished);
  const auto* up = find<SessionUp>(out);
  ASSERT_NE(up, nullptr);
  EXPECT_TRUE(up->params.four_octet_as);
  EXPECT_EQ(f.deadline(Timer::kHold), kT0 + 93s);
}

// Issue 19: a ROUTE-REFRESH was acted on even when route refresh was not
// negotiated. RFC 5492 section 3: a capability is used only when both
// sides advertised it; without it the type is unknown to the session, so
// RFC 4271 section 6.1: Message Header Error / Bad Message Type, the type
// as data.
TEST(Established, RouteRefreshWithoutTheCapabilityIsABadMessageType) {
  Fsm f(config_a());
  PeerConfig peer = config_b();
  peer.capabilities.route_refresh = false;
  peer.capabilities.enhanced_route_refresh = false;
  drive_to(f, State::kEstablished, peer);
  ASSERT_EQ(f.state(), State::kEstablished);
  ASSERT_FALSE(f.negotiated()->route_refresh);
  Actions out = f.step(sample_event(EventKind::kRouteRefreshReceived), kT0 + 1s);
  EXPECT_EQ(f.state(), State::kIdle);
  EXPECT_EQ(count<DeliverRouteRefresh>(out), 0);
  auto n = sent_notification(out);
  ASSERT_TRUE(n);
  EXPECT_EQ(n->code, 1);
  EXPECT_EQ(n->subcode, 3);
  EXPECT_EQ(n->data, std::vector<std::byte>{std::byte{5}});
  const auto* down = find<SessionDown>(out);
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(down->cause, DownCause::kMessageError);
}

// With route refresh, or enhanced route refresh alone, it is delivered.
TEST(Established, RouteRefreshWithTheCapabilityIsDelivered) {
  for (bool enhanced_only : {false, true}) {
    PeerConfig ours = config_a();
    ours.capabilities.enhanced_route_refresh = true;
    Fsm f(ours);
    PeerConfig peer = config_b();
    peer.capabilities.route_refresh = !enhanced_only;
    peer.capabilities.enhanced_route_refresh = enhanced_only;
    drive_to(f, State::kEstablished, peer);
    Actions out = f.step(sample_event(EventKind::kRouteRefreshReceived), kT0 + 1s);
    EXPECT_EQ(f.state(), State::kEstablished);
    EXPECT_EQ(count<DeliverRouteRefresh>(out), 1);
    EXPECT_FALSE(sent_notification(out));
  }
}

TEST(Established, KeepalivesAtAThirdOfTheHoldTime) {
  Fsm f(config_a());
  drive_to(f, State::kEstablished);
  EXPECT_EQ(f.deadline(Timer::kKeepalive), kT0 + 30s);
  Actions out = f.step(Tick{}, kT0 + 30s);
  EXPECT_EQ(sent_types(out), std::vector{MessageType::kKeepalive});
  EXPECT_EQ(f.deadline(Timer::kKeepalive), kT0 + 60s);
  // An UPDATE written restarts it (RFC 4271 section 8.2.2).
  (void)f.step(UpdateSent{}, kT0 + 50s);
  EXPECT_EQ(f.deadline(Timer::kKeepalive), kT0 + 80s);
}

TEST(Established, ConfiguredKeepaliveBelowAThird) {
  PeerConfig c = config_a();
  c.keepalive = 10;
  Fsm f(c);
  drive_to(f, State::kEstablished);
  EXPECT_EQ(f.negotiated()->keepalive, 10);
  EXPECT_EQ(f.deadline(Timer::kKeepalive), kT0 + 10s);
}

TEST(Established, UpdateIsDeliveredAndRestartsTheHoldTimer) {
  Fsm f(config_a());
  drive_to(f, State::kEstablished);
  std::vector<std::byte> body(4, std::byte{0});
  Actions out = f.step(UpdateReceived{body}, kT0 + 40s);
  const auto* d = find<DeliverUpdate>(out);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->body.data(), body.data());
  EXPECT_EQ(f.deadline(Timer::kHold), kT0 + 130s);
}

TEST(Established, HoldTimerExpiryEndsTheSession) {
  Fsm f(config_a());
  drive_to(f, State::kEstablished);
  // Keepalives go out on the way; the peer stays silent.
  Actions out = f.step(Tick{}, kT0 + 90s);
  EXPECT_EQ(f.state(), State::kIdle);
  auto n = sent_notification(out);
  ASSERT_TRUE(n);
  EXPECT_EQ(n->code, 4);
  const auto* d = find<SessionDown>(out);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->from, State::kEstablished);
  EXPECT_EQ(d->cause, DownCause::kHoldTimerExpired);
  EXPECT_EQ(f.next_deadline(), std::nullopt);
}

TEST(Established, UnexpectedOpenIsFsmErrorInEstablished) {
  Fsm f(config_a());
  drive_to(f, State::kEstablished);
  Actions out = f.step(
      MessageError{codec::NotifyError::make(codec::ErrorCode::kOpenMessage, 0), MessageType::kOpen}, kT0);
  auto n = sent_notification(out);
  ASSERT_TRUE(n);
  EXPECT_EQ(n->code, 5);
  EXPECT_EQ(n->subcode, codec::fsm_error::kUnexpectedInEstablished);
}

TEST(Established, UpdateErrorIsSentAsItself) {
  Fsm f(config_a());
  drive_to(f, State::kEstablished);
  Actions out = f.step(MessageError{codec::NotifyError::with_u8(codec::ErrorCode::kUpdateMessage,
                                                                codec::update_error::kInvalidOrigin, 7),
                                    MessageType::kUpdate},
                       kT0);
  auto n = sent_notification(out);
  ASSERT_TRUE(n);
  EXPECT_EQ(n->code, 3);
  EXPECT_EQ(n->subcode, codec::update_error::kInvalidOrigin);
  EXPECT_EQ(find<SessionDown>(out)->cause, DownCause::kMessageError);
}

TEST(Established, ManualStopSendsTheShutdownCommunication) {
  Fsm f(config_a());
  drive_to(f, State::kEstablished);
  Actions out = f.step(ManualStop{codec::cease::kAdministrativeShutdown, "maintenance"}, kT0);
  auto n = sent_notification(out);
  ASSERT_TRUE(n);
  EXPECT_EQ(n->code, 6);
  EXPECT_EQ(n->subcode, 2);
  EXPECT_EQ(codec::shutdown_communication(*n), "maintenance");
  EXPECT_EQ(find<SessionDown>(out)->cause, DownCause::kManualStop);
  EXPECT_EQ(f.connect_retry_counter(), 0u);
}

TEST(Established, AutomaticStopCarriesItsSubcodeAndData) {
  Fsm f(config_a());
  drive_to(f, State::kEstablished);
  Actions out = f.step(AutomaticStop{codec::cease::kMaxPrefixes, {std::byte{0}, std::byte{1}, std::byte{1}}},
                       kT0);
  auto n = sent_notification(out);
  ASSERT_TRUE(n);
  EXPECT_EQ(n->subcode, codec::cease::kMaxPrefixes);
  EXPECT_EQ(bytes::to_hex(n->data), "000101");
  EXPECT_EQ(f.connect_retry_counter(), 1u);
}

TEST(Established, PeerNotificationIsNotAnswered) {
  Fsm f(config_a());
  drive_to(f, State::kEstablished);
  Actions out = f.step(NotificationReceived{{4, 0, {}}}, kT0);
  EXPECT_EQ(sent_types(out), std::vector<MessageType>{});
  const auto* d = find<SessionDown>(out);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->cause, DownCause::kNotificationReceived);
  EXPECT_EQ(d->code, 4);
}

class DelayOpen : public ::testing::Test {
 protected:
  static PeerConfig config() {
    PeerConfig c = config_a();
    c.delay_open = 5s;
    return c;
  }
};

TEST_F(DelayOpen, ConnectionUpWaitsForThePeer) {
  Fsm f(config());
  drive_to(f, State::kConnect);
  Actions out = f.step(TcpConnected{}, kT0);
  EXPECT_EQ(f.state(), State::kConnect);
  EXPECT_TRUE(sent_types(out).empty());
  EXPECT_EQ(f.deadline(Timer::kDelayOpen), kT0 + 5s);
  EXPECT_EQ(f.deadline(Timer::kConnectRetry), std::nullopt);
}

TEST_F(DelayOpen, ExpirySendsOpen) {
  Fsm f(config());
  drive_to(f, State::kConnect);
  (void)f.step(TcpConnected{}, kT0);
  Actions out = f.step(Tick{}, kT0 + 5s);
  EXPECT_EQ(f.state(), State::kOpenSent);
  EXPECT_EQ(sent_types(out), std::vector{MessageType::kOpen});
  EXPECT_EQ(f.deadline(Timer::kHold), kT0 + 5s + 240s);
}

TEST_F(DelayOpen, UnsentBytesBeforeOurOpenDoNotArmTheSendHoldTimer) {
  // Found by FsmProperty.RandomEventSequencesKeepTheInvariants: progress
  // reported while the DelayOpenTimer ran was kept, and a late tick that
  // sent the OPEN also ended the session by a send hold timer armed from
  // that moment.
  Fsm f(config());
  drive_to(f, State::kConnect);
  (void)f.step(TcpConnected{}, kT0);
  Actions ignored = f.step(SendProgress{kT0 - 3s}, kT0);
  EXPECT_EQ(count<Ignored>(ignored), 1);
  Actions out = f.step(Tick{}, kT0 + 477s);
  EXPECT_EQ(f.state(), State::kOpenSent);
  EXPECT_EQ(count<SessionDown>(out), 0);
  EXPECT_EQ(f.deadline(Timer::kSendHold), std::nullopt);
}

TEST_F(DelayOpen, PeerOpenDuringTheDelayGoesToOpenConfirm) {
  Fsm f(config());
  drive_to(f, State::kConnect);
  (void)f.step(TcpAccepted{}, kT0);
  Actions out = f.step(OpenReceived{open_of(config_b())}, kT0 + 2s);
  EXPECT_EQ(f.state(), State::kOpenConfirm);
  EXPECT_EQ(sent_types(out), (std::vector{MessageType::kOpen, MessageType::kKeepalive}));
  EXPECT_EQ(f.deadline(Timer::kDelayOpen), std::nullopt);
  EXPECT_EQ(check_invariants(f), "");
}

TEST_F(DelayOpen, RefusedOpenDuringTheDelaySendsNothing) {
  Fsm f(config());
  drive_to(f, State::kConnect);
  (void)f.step(TcpAccepted{}, kT0);
  PeerConfig peer = config_b();
  peer.local_as = 1;
  Actions out = f.step(OpenReceived{open_of(peer)}, kT0 + 2s);
  EXPECT_EQ(f.state(), State::kIdle);
  EXPECT_TRUE(sent_types(out).empty());
  const auto* d = find<SessionDown>(out);
  ASSERT_NE(d, nullptr);
  EXPECT_FALSE(d->notification_sent);
  EXPECT_EQ(d->subcode, codec::open_error::kBadPeerAs);
}

TEST_F(DelayOpen, ConnectionLostDuringTheDelayListens) {
  Fsm f(config());
  drive_to(f, State::kConnect);
  (void)f.step(TcpConnected{}, kT0);
  (void)f.step(TcpFailed{}, kT0 + 1s);
  EXPECT_EQ(f.state(), State::kActive);
  EXPECT_EQ(f.deadline(Timer::kConnectRetry), kT0 + 121s);
  EXPECT_EQ(check_invariants(f), "");
}

// RFC 9687.
TEST(SendHold, DefaultIsEightMinutes) {
  Fsm f(config_a());
  drive_to(f, State::kEstablished);
  (void)f.step(SendProgress{kT0 + 10s}, kT0 + 20s);
  EXPECT_EQ(f.deadline(Timer::kSendHold), kT0 + 10s + 480s);
  // Progress made: everything written.
  (void)f.step(SendProgress{std::nullopt}, kT0 + 30s);
  EXPECT_EQ(f.deadline(Timer::kSendHold), std::nullopt);
}

TEST(SendHold, TwiceALongHoldTime) {
  PeerConfig c = config_a();
  c.hold_time = 400;
  PeerConfig peer = config_b();
  peer.hold_time = 400;
  Fsm f(c);
  drive_to(f, State::kEstablished, peer);
  (void)f.step(SendProgress{kT0}, kT0);
  EXPECT_EQ(f.deadline(Timer::kSendHold), kT0 + 800s);
}

TEST(SendHold, ExpiryClosesWithCode8) {
  PeerConfig c = config_a();
  c.send_hold = 60s;
  Fsm f(c);
  drive_to(f, State::kEstablished);
  (void)f.step(SendProgress{kT0}, kT0);
  // The peer keeps sending KEEPALIVEs (hold timer fine) but reads nothing.
  for (int i = 1; i <= 5; ++i) (void)f.step(KeepaliveReceived{}, kT0 + std::chrono::seconds(10 * i));
  Actions out = f.step(Tick{}, kT0 + 60s);
  EXPECT_EQ(f.state(), State::kIdle);
  auto n = sent_notification(out);
  ASSERT_TRUE(n);
  EXPECT_EQ(n->code, 8);
  EXPECT_EQ(find<SessionDown>(out)->cause, DownCause::kSendHoldTimerExpired);
}

TEST(SendHold, NotArmedBeforeOpenSentAndForgottenWithTheConnection) {
  Fsm f(config_a());
  drive_to(f, State::kConnect);
  (void)f.step(SendProgress{kT0}, kT0);
  EXPECT_EQ(f.deadline(Timer::kSendHold), std::nullopt);
  drive_to(f, State::kIdle);
  Fsm g(config_a());
  drive_to(g, State::kOpenSent);
  (void)g.step(SendProgress{kT0}, kT0);
  EXPECT_TRUE(g.deadline(Timer::kSendHold).has_value());
  (void)g.step(TcpFailed{}, kT0 + 1s);
  EXPECT_EQ(g.deadline(Timer::kSendHold), std::nullopt);
  EXPECT_EQ(check_invariants(g), "");
}

TEST(Tick, FiresDueTimersEarliestFirst) {
  Fsm f(config_a());
  drive_to(f, State::kEstablished);
  (void)f.step(SendProgress{kT0}, kT0);
  // At +600s: keepalive (30s) is due first, then the hold timer (90s) ends
  // the session before the send hold timer (480s) would.
  Actions out = f.step(Tick{}, kT0 + 600s);
  EXPECT_EQ(f.state(), State::kIdle);
  EXPECT_EQ(sent_types(out), (std::vector{MessageType::kKeepalive, MessageType::kNotification}));
  EXPECT_EQ(sent_notification(out)->code, 4);
}

TEST(Names, EveryStateHasOne) {
  for (int s = 0; s < kStateCount; ++s) EXPECT_NE(state_name(static_cast<State>(s)), "unknown");
  for (size_t t = 0; t < kTimerCount; ++t) EXPECT_NE(timer_name(static_cast<Timer>(t)), "unknown");
}

}  // namespace
}  // namespace petrel::fsm
