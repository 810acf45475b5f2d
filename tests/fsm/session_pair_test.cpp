// Tests for fsm/session_pair.h: two Petrel FSMs talking through the codec
// on a fake clock: they establish a session, exchange keepalives and
// UPDATEs, time out, refuse each other, and close.
#include "fsm/session_pair.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "tests/fsm/fsm_testing.h"

namespace petrel::fsm {
namespace {

using namespace testing;
using codec::MessageType;

int sent_count(const Trace& t, MessageType type) {
  return static_cast<int>(std::count(t.sent.begin(), t.sent.end(), type));
}

SessionPair established(PeerConfig a = config_a(), PeerConfig b = config_b()) {
  SessionPair p(std::move(a), std::move(b), kT0);
  p.step_both(ManualStart{}, ManualStart{});
  return p;
}

TEST(Pair, Establishes) {
  PeerConfig b = config_b();
  b.passive = true;
  SessionPair p = established(config_a(), b);
  EXPECT_EQ(p.fsm(Side::kA).state(), State::kEstablished);
  EXPECT_EQ(p.fsm(Side::kB).state(), State::kEstablished);
  EXPECT_EQ(p.trace(Side::kA).sent, (std::vector{MessageType::kOpen, MessageType::kKeepalive}));
  EXPECT_EQ(p.trace(Side::kB).sent, (std::vector{MessageType::kOpen, MessageType::kKeepalive}));
  EXPECT_EQ(p.trace(Side::kA).ups, 1);
  EXPECT_EQ(p.trace(Side::kB).ups, 1);
  EXPECT_EQ(p.trace(Side::kA).dials, 1);
  EXPECT_EQ(p.trace(Side::kB).dials, 0);
  EXPECT_EQ(p.trace(Side::kA).accepted_opens, std::vector{config_b().local_id});
  EXPECT_EQ(p.fsm(Side::kA).negotiated()->peer_as, 65002u);
  EXPECT_EQ(p.fsm(Side::kB).negotiated()->peer_as, 65001u);
}

TEST(Pair, BothActiveShareOneConnection) {
  SessionPair p = established();
  EXPECT_EQ(p.fsm(Side::kA).state(), State::kEstablished);
  EXPECT_EQ(p.fsm(Side::kB).state(), State::kEstablished);
}

TEST(Pair, KeepalivesHoldTheSessionUp) {
  SessionPair p = established();
  p.advance(10min);
  EXPECT_EQ(p.fsm(Side::kA).state(), State::kEstablished);
  EXPECT_EQ(p.fsm(Side::kB).state(), State::kEstablished);
  // 600 s at one KEEPALIVE per 30 s, plus the one that confirmed the OPEN.
  EXPECT_EQ(sent_count(p.trace(Side::kA), MessageType::kKeepalive), 21);
  EXPECT_EQ(sent_count(p.trace(Side::kB), MessageType::kKeepalive), 21);
}

TEST(Pair, UpdatesAreDeliveredAndCountAsKeepalives) {
  SessionPair p = established();
  std::vector<std::byte> body(4, std::byte{0});
  p.advance(20s);
  p.send_update(Side::kA, body);
  ASSERT_EQ(p.trace(Side::kB).updates.size(), 1u);
  EXPECT_EQ(p.trace(Side::kB).updates[0], body);
  // The UPDATE restarted A's keepalive timer.
  EXPECT_EQ(p.fsm(Side::kA).deadline(Timer::kKeepalive), kT0 + 50s);
}

TEST(Pair, ExtendedMessagesWhenBothOffer) {
  PeerConfig a = config_a();
  a.capabilities.extended_message = true;
  SessionPair p = established(a, mirror(a));
  std::vector<std::byte> body(6000, std::byte{0});
  body[1] = std::byte{0};  // withdrawn length 0, then 5996 octets of attribute length
  body[2] = std::byte(5996 >> 8);
  body[3] = std::byte(5996 & 0xff);
  p.send_update(Side::kA, body);
  ASSERT_EQ(p.trace(Side::kB).updates.size(), 1u);
  EXPECT_EQ(p.trace(Side::kB).updates[0].size(), 6000u);
}

TEST(Pair, OversizedMessageWithoutExtendedMessagesIsAHeaderError) {
  SessionPair p = established();
  std::vector<std::byte> body(6000, std::byte{0});
  p.send_update(Side::kA, body);
  EXPECT_EQ(p.fsm(Side::kB).state(), State::kIdle);
  ASSERT_EQ(p.trace(Side::kB).notifications.size(), 1u);
  EXPECT_EQ(p.trace(Side::kB).notifications[0].code, 1);
  EXPECT_EQ(p.trace(Side::kB).notifications[0].subcode, codec::header_error::kBadMessageLength);
  EXPECT_EQ(p.fsm(Side::kA).state(), State::kIdle);
  EXPECT_EQ(p.trace(Side::kA).downs.back().cause, DownCause::kNotificationReceived);
}

TEST(Pair, ManualStopClosesBothWithTheCommunication) {
  SessionPair p = established();
  p.step(Side::kA, ManualStop{codec::cease::kAdministrativeShutdown, "moving racks"});
  EXPECT_EQ(p.fsm(Side::kA).state(), State::kIdle);
  EXPECT_EQ(p.fsm(Side::kB).state(), State::kIdle);
  ASSERT_EQ(p.trace(Side::kB).downs.size(), 1u);
  const SessionDown& d = p.trace(Side::kB).downs[0];
  EXPECT_EQ(d.from, State::kEstablished);
  EXPECT_EQ(d.cause, DownCause::kNotificationReceived);
  EXPECT_EQ(d.code, 6);
  EXPECT_EQ(d.subcode, 2);
  EXPECT_EQ(p.trace(Side::kA).downs.at(0).cause, DownCause::kManualStop);
  EXPECT_FALSE(p.connected());
}

TEST(Pair, ComesBackAfterAnAutomaticStart) {
  SessionPair p = established();
  p.step(Side::kA, ManualStop{});
  p.advance(30s);
  p.step_both(AutomaticStart{}, AutomaticStart{});
  EXPECT_EQ(p.fsm(Side::kA).state(), State::kEstablished);
  EXPECT_EQ(p.fsm(Side::kB).state(), State::kEstablished);
  EXPECT_EQ(p.trace(Side::kA).ups, 2);
}

TEST(Pair, HoldTimerExpiresWhenThePeerFallsSilent) {
  SessionPair p = established();
  // B reads nothing more: A's KEEPALIVEs never arrive.
  p.set_reading(Side::kB, false);
  p.advance(89s);
  EXPECT_EQ(p.fsm(Side::kB).state(), State::kEstablished);
  p.advance(2s);
  EXPECT_EQ(p.fsm(Side::kB).state(), State::kIdle);
  EXPECT_EQ(p.trace(Side::kB).downs.at(0).cause, DownCause::kHoldTimerExpired);
  // B's NOTIFICATION reached A.
  EXPECT_EQ(p.fsm(Side::kA).state(), State::kIdle);
  EXPECT_EQ(p.trace(Side::kA).downs.at(0).code, 4);
}

TEST(Pair, SendHoldTimerCatchesAPeerThatStopsReading) {
  // Hold time 0: neither side would ever notice through the hold timer.
  PeerConfig a = config_a();
  a.hold_time = 0;
  SessionPair p = established(a, mirror(a));
  ASSERT_EQ(p.fsm(Side::kA).state(), State::kEstablished);
  EXPECT_EQ(p.fsm(Side::kA).next_deadline(), std::nullopt);
  p.set_reading(Side::kB, false);
  p.advance(1min);
  p.send_update(Side::kA, std::vector<std::byte>(4, std::byte{0}));
  EXPECT_EQ(p.fsm(Side::kA).deadline(Timer::kSendHold), kT0 + 1min + 8min);
  p.advance(8min - 1s);
  EXPECT_EQ(p.fsm(Side::kA).state(), State::kEstablished);
  p.advance(1s);
  EXPECT_EQ(p.fsm(Side::kA).state(), State::kIdle);
  EXPECT_EQ(p.trace(Side::kA).downs.at(0).cause, DownCause::kSendHoldTimerExpired);
  EXPECT_EQ(p.trace(Side::kA).notifications.at(0).code, 8);
  // B learns only that the connection went away.
  EXPECT_EQ(p.fsm(Side::kB).state(), State::kIdle);
  EXPECT_EQ(p.trace(Side::kB).downs.at(0).cause, DownCause::kTcpFailed);
}

TEST(Pair, ReadingAgainClearsTheSendHoldTimer) {
  PeerConfig a = config_a();
  a.hold_time = 0;
  SessionPair p = established(a, mirror(a));
  p.set_reading(Side::kB, false);
  p.send_update(Side::kA, std::vector<std::byte>(4, std::byte{0}));
  EXPECT_TRUE(p.fsm(Side::kA).deadline(Timer::kSendHold).has_value());
  p.advance(1min);
  p.set_reading(Side::kB, true);
  EXPECT_EQ(p.fsm(Side::kA).deadline(Timer::kSendHold), std::nullopt);
  EXPECT_EQ(p.trace(Side::kB).updates.size(), 1u);
  p.advance(1h);
  EXPECT_EQ(p.fsm(Side::kA).state(), State::kEstablished);
}

TEST(Pair, WrongAsIsRefused) {
  PeerConfig b = config_b();
  b.peer_as = 65099;
  SessionPair p(config_a(), b, kT0);
  p.step_both(ManualStart{}, ManualStart{});
  EXPECT_EQ(p.trace(Side::kB).notifications.at(0).subcode, codec::open_error::kBadPeerAs);
  EXPECT_EQ(p.trace(Side::kA).downs.at(0).cause, DownCause::kNotificationReceived);
  EXPECT_EQ(p.trace(Side::kA).downs.at(0).from, State::kOpenConfirm);
  EXPECT_EQ(p.fsm(Side::kA).state(), State::kIdle);
  EXPECT_EQ(p.fsm(Side::kB).state(), State::kIdle);
}

TEST(Pair, RoleMismatchIsRefused) {
  PeerConfig a = config_a();
  a.capabilities.role = codec::Role::kProvider;
  PeerConfig b = mirror(a);  // also a provider
  SessionPair p = established(a, b);
  EXPECT_EQ(p.fsm(Side::kA).state(), State::kIdle);
  EXPECT_EQ(p.trace(Side::kA).downs.at(0).subcode, codec::open_error::kRoleMismatch);
}

TEST(Pair, DelayOpenWaitsForThePeersOpen) {
  PeerConfig a = config_a();
  a.delay_open = 10s;
  PeerConfig b = config_b();
  b.passive = true;
  SessionPair p = established(a, b);
  // B sent its OPEN at once; A answered it instead of waiting out the delay.
  EXPECT_EQ(p.fsm(Side::kA).state(), State::kEstablished);
  EXPECT_EQ(p.now(), kT0);
}

TEST(Pair, DelayOpenOnBothSidesSendsAfterTheDelay) {
  PeerConfig a = config_a();
  a.delay_open = 10s;
  SessionPair p = established(a, mirror(a));
  EXPECT_EQ(p.fsm(Side::kA).state(), State::kConnect);
  p.advance(10s);
  EXPECT_EQ(p.fsm(Side::kA).state(), State::kEstablished);
  EXPECT_EQ(p.fsm(Side::kB).state(), State::kEstablished);
}

TEST(Pair, ConnectionLossTakesBothDown) {
  SessionPair p = established();
  p.break_connection();
  EXPECT_EQ(p.fsm(Side::kA).state(), State::kIdle);
  EXPECT_EQ(p.fsm(Side::kB).state(), State::kIdle);
  EXPECT_EQ(p.trace(Side::kA).downs.at(0).cause, DownCause::kTcpFailed);
}

TEST(Pair, GarbageIsAHeaderError) {
  SessionPair p = established();
  p.inject(Side::kA, std::vector<std::byte>(19, std::byte{0}));
  EXPECT_EQ(p.trace(Side::kB).notifications.at(0).code, 1);
  EXPECT_EQ(p.trace(Side::kB).notifications.at(0).subcode, codec::header_error::kConnectionNotSynchronized);
  EXPECT_EQ(p.fsm(Side::kA).state(), State::kIdle);
}

TEST(Pair, RouteRefreshIsDelivered) {
  SessionPair p = established();
  std::vector<std::byte> rr;
  codec::RouteRefresh r;
  r.family = codec::kIpv6Unicast;
  codec::encode_route_refresh(r, rr);
  p.inject(Side::kA, rr);
  ASSERT_EQ(p.trace(Side::kB).refreshes.size(), 1u);
  EXPECT_EQ(p.trace(Side::kB).refreshes[0].family, codec::kIpv6Unicast);
}

TEST(Pair, DialToAPeerThatIsNotListeningFails) {
  SessionPair p(config_a(), config_b(), kT0);
  p.step(Side::kA, ManualStart{});
  EXPECT_EQ(p.fsm(Side::kA).state(), State::kIdle);
  EXPECT_EQ(p.trace(Side::kA).downs.at(0).cause, DownCause::kTcpFailed);
}

}  // namespace
}  // namespace petrel::fsm
