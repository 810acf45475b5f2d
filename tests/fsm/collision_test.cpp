// Tests for fsm/collision.h: RFC 4271 section 6.8 and RFC 6286 section 2.3.
#include "fsm/collision.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <optional>
#include <utility>

#include "codec/notification.h"
#include "fsm/fsm.h"

namespace petrel::fsm {
namespace {

constexpr ConnectionView kOut{State::kOpenConfirm, Direction::kOutgoing};
constexpr ConnectionView kIn{State::kOpenConfirm, Direction::kIncoming};

CollisionInput input(ConnectionView a, ConnectionView b, uint32_t local_id, uint32_t remote_id) {
  CollisionInput in;
  in.first = a;
  in.second = b;
  in.local_id = local_id;
  in.remote_id = remote_id;
  in.local_as = 65001;
  in.remote_as = 65002;
  return in;
}

TEST(Collision, HigherRemoteIdentifierKeepsItsConnection) {
  // Theirs is higher: keep the connection they opened (incoming).
  EXPECT_EQ(resolve_collision(input(kOut, kIn, 1, 2)), CollisionVerdict::kCloseFirst);
  EXPECT_EQ(resolve_collision(input(kIn, kOut, 1, 2)), CollisionVerdict::kCloseSecond);
}

TEST(Collision, HigherLocalIdentifierKeepsOurs) {
  EXPECT_EQ(resolve_collision(input(kOut, kIn, 2, 1)), CollisionVerdict::kCloseSecond);
  EXPECT_EQ(resolve_collision(input(kIn, kOut, 2, 1)), CollisionVerdict::kCloseFirst);
}

TEST(Collision, EqualIdentifiersCompareAses) {
  CollisionInput in = input(kOut, kIn, 7, 7);  // RFC 6286: remote AS is larger
  EXPECT_EQ(resolve_collision(in), CollisionVerdict::kCloseFirst);
  std::swap(in.local_as, in.remote_as);
  EXPECT_EQ(resolve_collision(in), CollisionVerdict::kCloseSecond);
}

TEST(Collision, NothingBeforeTheOpenExchange) {
  for (State s : {State::kIdle, State::kConnect, State::kActive, State::kOpenSent}) {
    EXPECT_EQ(resolve_collision(input({s, Direction::kOutgoing}, kIn, 1, 2)), CollisionVerdict::kNoCollision);
    EXPECT_EQ(resolve_collision(input(kIn, {s, Direction::kOutgoing}, 1, 2)), CollisionVerdict::kNoCollision);
  }
}

TEST(Collision, OpenSentWhenTheIdentifierIsKnown) {
  CollisionInput in = input({State::kOpenSent, Direction::kOutgoing}, kIn, 1, 2);
  in.examine_open_sent = true;
  EXPECT_EQ(resolve_collision(in), CollisionVerdict::kCloseFirst);
}

TEST(Collision, EstablishedWins) {
  ConnectionView up{State::kEstablished, Direction::kOutgoing};
  // Even where the identifiers would pick the other one.
  EXPECT_EQ(resolve_collision(input(up, kIn, 1, 2)), CollisionVerdict::kCloseSecond);
  EXPECT_EQ(resolve_collision(input(kIn, up, 1, 2)), CollisionVerdict::kCloseFirst);
}

// RFC 4724 section 4.2: with graceful restart negotiated on the
// Established session, a new connection that got the peer's OPEN means the
// peer restarted: the Established one goes.
TEST(Collision, EstablishedWithGracefulRestartLoses) {
  ConnectionView up{State::kEstablished, Direction::kOutgoing};
  ConnectionView fresh{State::kOpenConfirm, Direction::kIncoming};
  CollisionInput in = input(up, fresh, 2, 1);
  in.graceful_restart = true;
  EXPECT_EQ(resolve_collision(in), CollisionVerdict::kCloseFirst);
  in = input(fresh, up, 2, 1);
  in.graceful_restart = true;
  EXPECT_EQ(resolve_collision(in), CollisionVerdict::kCloseSecond);
  // A new connection that has not had the OPEN yet collides with nothing.
  in = input(up, {State::kActive, Direction::kIncoming}, 2, 1);
  in.graceful_restart = true;
  EXPECT_EQ(resolve_collision(in), CollisionVerdict::kNoCollision);
}

TEST(Collision, Names) {
  EXPECT_EQ(collision_verdict_name(CollisionVerdict::kCloseFirst), "close-first");
}

// Both speakers close the same TCP connection: our outgoing connection is
// the peer's incoming one.
RC_GTEST_PROP(Collision, BothEndsCloseTheSameConnection,
              (uint32_t id_a, uint32_t id_b, uint32_t as_a, uint32_t as_b, bool order_a, bool order_b)) {
  RC_PRE(id_a != id_b || as_a != as_b);
  // The connection A opened, seen by A as outgoing and by B as incoming.
  auto views = [](bool order, Direction first) {
    Direction second = first == Direction::kOutgoing ? Direction::kIncoming : Direction::kOutgoing;
    return order ? std::pair{first, second} : std::pair{second, first};
  };
  auto [a1, a2] = views(order_a, Direction::kOutgoing);
  auto [b1, b2] = views(order_b, Direction::kIncoming);
  CollisionInput at{{State::kOpenConfirm, a1}, {State::kOpenConfirm, a2}, id_a, id_b, as_a, as_b, false, false};
  CollisionInput bt{{State::kOpenConfirm, b1}, {State::kOpenConfirm, b2}, id_b, id_a, as_b, as_a, false, false};
  CollisionVerdict va = resolve_collision(at);
  CollisionVerdict vb = resolve_collision(bt);
  RC_ASSERT(va != CollisionVerdict::kNoCollision);
  RC_ASSERT(vb != CollisionVerdict::kNoCollision);
  // Whether A closes the connection A opened, and whether B does.
  bool a_closes_a_opened = (va == CollisionVerdict::kCloseFirst) == (a1 == Direction::kOutgoing);
  bool b_closes_a_opened = (vb == CollisionVerdict::kCloseFirst) == (b1 == Direction::kIncoming);
  RC_ASSERT(a_closes_a_opened == b_closes_a_opened);
}

// A new incoming connection from the peer's address: an earlier incoming
// one that never received an OPEN is replaced (a silent connect must not
// keep the real peer out for the open-hold time), one that did is kept.
TEST(AdmitIncoming, AnEstablishedGracefulSessionRestarts) {
  EXPECT_EQ(admit_incoming(State::kEstablished, true), IncomingVerdict::kRestartExisting);
  EXPECT_EQ(admit_incoming(State::kEstablished, false), IncomingVerdict::kRefuseNew);
  // Only an Established session: one in OpenConfirm holds the OPEN as before.
  EXPECT_EQ(admit_incoming(State::kOpenConfirm, true), IncomingVerdict::kRefuseNew);
  EXPECT_EQ(incoming_verdict_name(IncomingVerdict::kRestartExisting), "restart-existing");
}

TEST(AdmitIncoming, ReplacesAConnectionThatNeverReceivedAnOpen) {
  EXPECT_EQ(admit_incoming(std::nullopt), IncomingVerdict::kAccept);
  EXPECT_EQ(admit_incoming(State::kIdle), IncomingVerdict::kAccept);
  EXPECT_EQ(admit_incoming(State::kConnect), IncomingVerdict::kReplaceExisting);
  EXPECT_EQ(admit_incoming(State::kActive), IncomingVerdict::kReplaceExisting);  // DelayOpen
  EXPECT_EQ(admit_incoming(State::kOpenSent), IncomingVerdict::kReplaceExisting);
  EXPECT_EQ(admit_incoming(State::kOpenConfirm), IncomingVerdict::kRefuseNew);
  EXPECT_EQ(admit_incoming(State::kEstablished), IncomingVerdict::kRefuseNew);
  EXPECT_EQ(incoming_verdict_name(IncomingVerdict::kReplaceExisting), "replace-existing");
}

// What replacing does on the wire: the daemon steps the old connection
// with AutomaticStop / Connection Rejected. In OpenSent (our OPEN went
// out) that is Cease 6/5 and a close; before our OPEN (DelayOpen) just a
// close (RFC 4271 8.2.2: no NOTIFICATION without an OPEN).
TEST(AdmitIncoming, ReplacedConnectionIsClosedWithConnectionRejected) {
  using namespace std::chrono_literals;
  const Time t0 = Time{} + std::chrono::hours(1);
  PeerConfig cfg;
  cfg.local_as = 65001;
  cfg.peer_as = 65002;
  cfg.local_id = 1;
  cfg.passive = true;
  for (bool delay_open : {false, true}) {
    SCOPED_TRACE(delay_open ? "delay_open" : "no delay_open");
    cfg.delay_open = delay_open ? std::chrono::seconds(5) : std::chrono::seconds(0);
    Fsm f(cfg);
    (void)f.step(ManualStart{}, t0);
    (void)f.step(TcpAccepted{}, t0);
    ASSERT_EQ(admit_incoming(f.state()), IncomingVerdict::kReplaceExisting);
    Actions out = f.step(AutomaticStop{codec::cease::kConnectionRejected, {}}, t0 + 1s);
    std::optional<std::pair<uint8_t, uint8_t>> sent;
    bool disconnect = false;
    for (const Action& a : out) {
      if (const auto* s = std::get_if<Send>(&a); s && s->type == codec::MessageType::kNotification) {
        auto n = codec::decode_notification(bytes::Span(s->bytes).subspan(codec::kHeaderLen));
        ASSERT_TRUE(n.ok());
        sent = std::pair{n->code, n->subcode};
      }
      if (std::holds_alternative<Disconnect>(a)) disconnect = true;
    }
    EXPECT_TRUE(disconnect);
    EXPECT_EQ(f.state(), State::kIdle);
    if (delay_open) EXPECT_FALSE(sent.has_value());
    else EXPECT_EQ(sent, (std::pair<uint8_t, uint8_t>{6, codec::cease::kConnectionRejected}));
  }
}

}  // namespace
}  // namespace petrel::fsm
