// Properties of fsm/fsm.h and fsm/session_pair.h over random event
// sequences: no invalid state, timers consistent with the state after every
// step (including next_deadline() being the earliest armed timer), a Tick
// leaves no timer overdue, SessionUp/SessionDown exactly on entering
// Established/Idle, and every fall to Idle from OpenSent, OpenConfirm or
// Established sends the NOTIFICATION RFC 4271 (with RFC 6608 and RFC 9687)
// asks for, with the right code; none is sent before our OPEN.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <set>
#include <tuple>

#include "fsm/fsm.h"
#include "fsm/session_pair.h"
#include "tests/fsm/fsm_testing.h"

namespace petrel::fsm {
namespace {

using namespace testing;

struct Op {
  uint8_t kind;     // EventKind
  uint8_t variant;  // which payload
  uint16_t delay;   // seconds before the event
};
using RawOps = std::vector<std::tuple<uint8_t, uint8_t, uint16_t>>;

std::vector<Op> ops_of(const RawOps& raw) {
  std::vector<Op> out;
  for (const auto& [k, v, d] : raw) out.push_back({k, v, d});
  return out;
}

// An event of kind k with a payload chosen by v: valid or refused OPENs,
// errors of several message types, version-error NOTIFICATIONs.
Event make_event(EventKind k, uint8_t v, Time now) {
  switch (k) {
    case EventKind::kOpenReceived: {
      PeerConfig peer = config_b();
      if (v % 4 == 1) peer.local_as = 64999;  // Bad Peer AS
      if (v % 4 == 2) peer.hold_time = 0;
      if (v % 4 == 3) peer.hold_time = 3;
      return OpenReceived{open_of(peer)};
    }
    case EventKind::kMessageError: {
      static constexpr std::optional<codec::MessageType> kTypes[] = {
          std::nullopt, codec::MessageType::kOpen, codec::MessageType::kUpdate,
          codec::MessageType::kRouteRefresh};
      auto type = kTypes[v % 4];
      codec::ErrorCode code = !type                                    ? codec::ErrorCode::kMessageHeader
                              : *type == codec::MessageType::kOpen     ? codec::ErrorCode::kOpenMessage
                              : *type == codec::MessageType::kUpdate   ? codec::ErrorCode::kUpdateMessage
                                                                       : codec::ErrorCode::kRouteRefresh;
      return MessageError{codec::NotifyError::make(code, 1), type};
    }
    case EventKind::kNotificationReceived:
      return NotificationReceived{v % 2 ? codec::Notification{2, 1, {}} : codec::Notification{6, 4, {}}};
    case EventKind::kSendProgress:
      return SendProgress{v % 2 ? std::optional<Time>(now - std::chrono::seconds(v)) : std::nullopt};
    case EventKind::kManualStart:
    case EventKind::kManualStop:
    case EventKind::kAutomaticStart:
    case EventKind::kAutomaticStop:
    case EventKind::kTcpConnected:
    case EventKind::kTcpAccepted:
    case EventKind::kTcpFailed:
    case EventKind::kConnectRetryTimerExpired:
    case EventKind::kHoldTimerExpired:
    case EventKind::kKeepaliveTimerExpired:
    case EventKind::kDelayOpenTimerExpired:
    case EventKind::kSendHoldTimerExpired:
    case EventKind::kKeepaliveReceived:
    case EventKind::kUpdateReceived:
    case EventKind::kRouteRefreshReceived:
    case EventKind::kCollisionDump:
    case EventKind::kUpdateSent:
    case EventKind::kTick: return sample_event(k);
  }
  return Tick{};
}

// The NOTIFICATION codes RFC 4271 allows for this fall to Idle; empty when
// none may be sent.
std::set<int> allowed_codes(State from, const Event& e) {
  EventKind k = event_kind(e);
  switch (k) {
    case EventKind::kManualStop:
    case EventKind::kAutomaticStop:
    case EventKind::kCollisionDump: return {6};
    case EventKind::kHoldTimerExpired: return {4};
    case EventKind::kSendHoldTimerExpired: return {8};
    case EventKind::kTick: return {4, 8};
    case EventKind::kTcpFailed:
    case EventKind::kNotificationReceived: return {};
    case EventKind::kOpenReceived: return {from == State::kOpenSent ? 2 : 5};
    case EventKind::kMessageError: {
      const auto& m = std::get<MessageError>(e);
      bool open_or_header = !m.type || *m.type == codec::MessageType::kOpen;
      if (from == State::kEstablished) return {m.type == codec::MessageType::kOpen ? 5 : int(m.error.code)};
      return {open_or_header ? int(m.error.code) : 5};
    }
    case EventKind::kManualStart:
    case EventKind::kAutomaticStart:
    case EventKind::kTcpConnected:
    case EventKind::kTcpAccepted:
    case EventKind::kConnectRetryTimerExpired:
    case EventKind::kKeepaliveTimerExpired:
    case EventKind::kDelayOpenTimerExpired:
    case EventKind::kKeepaliveReceived:
    case EventKind::kUpdateReceived:
    case EventKind::kRouteRefreshReceived:
    case EventKind::kSendProgress:
    case EventKind::kUpdateSent: return {5};
  }
  return {};
}

// RFC 6608: the subcode of an FSM Error for a message, per state.
int fsm_subcode(State from, EventKind k) {
  if (!is_message(k)) return 0;
  switch (from) {
    case State::kOpenSent: return 1;
    case State::kOpenConfirm: return 2;
    case State::kEstablished: return 3;
    case State::kIdle:
    case State::kConnect:
    case State::kActive: return -1;
  }
  return -1;
}

void check_step(const Fsm& f, State before, const Event& e, const Actions& out, Time now) {
  State after = f.state();
  RC_ASSERT(static_cast<int>(after) < kStateCount);
  std::string broken = check_invariants(f);
  RC_LOG() << state_name(before) << " + " << event_kind_name(event_kind(e)) << " -> " << state_name(after)
           << "\n";
  RC_ASSERT(broken == "");
  if (event_kind(e) == EventKind::kTick) {
    for (size_t i = 0; i < kTimerCount; ++i) {
      auto d = f.deadline(static_cast<Timer>(i));
      RC_ASSERT(!d || *d > now);
    }
  }
  bool down = before != State::kIdle && after == State::kIdle;
  RC_ASSERT(count<SessionDown>(out) == (down ? 1 : 0));
  if (down) RC_ASSERT(find<SessionDown>(out)->from == before);
  RC_ASSERT(count<SessionUp>(out) == (after == State::kEstablished && before != State::kEstablished ? 1 : 0));

  auto n = sent_notification(out);
  if (n) {
    // Nothing after the NOTIFICATION but closing and reporting it.
    bool seen = false, closed = false;
    for (const auto& a : out) {
      if (const auto* s = std::get_if<Send>(&a); s && s->type == codec::MessageType::kNotification) seen = true;
      if (seen && std::holds_alternative<Disconnect>(a)) closed = true;
      if (const auto* s = std::get_if<Send>(&a); seen && s) RC_ASSERT(s->type == codec::MessageType::kNotification);
    }
    RC_ASSERT(closed);
    RC_ASSERT(after == State::kIdle);
  }
  bool before_open = before == State::kIdle || before == State::kConnect || before == State::kActive;
  if (before_open) {
    RC_ASSERT(!n.has_value());
    return;
  }
  if (!down) return;
  std::set<int> codes = allowed_codes(before, e);
  if (codes.empty()) {
    RC_ASSERT(!n.has_value());
    return;
  }
  RC_ASSERT(n.has_value());
  RC_ASSERT(codes.count(n->code) == 1);
  if (n->code == 5) RC_ASSERT(int(n->subcode) == std::max(0, fsm_subcode(before, event_kind(e))));
}

RC_GTEST_PROP(FsmProperty, RandomEventSequencesKeepTheInvariants,
              (bool passive, uint8_t delay_open, uint16_t hold, RawOps raw)) {
  std::vector<Op> ops = ops_of(raw);
  PeerConfig c = config_a();
  c.passive = passive;
  c.delay_open = std::chrono::seconds(delay_open % 3 == 0 ? 0 : delay_open % 20);
  c.hold_time = hold % 5 == 0 ? 0 : static_cast<uint16_t>(3 + hold % 300);
  Fsm f(c);
  Time now = kT0;
  for (const Op& op : ops) {
    now += std::chrono::seconds(op.delay % 400);
    auto kind = static_cast<EventKind>(op.kind % kEventKindCount);
    Event e = make_event(kind, op.variant, now);
    State before = f.state();
    Actions out = f.step(e, now);
    check_step(f, before, e, out, now);
  }
}

// Walks mostly along the happy path, so the later states are visited often.
RC_GTEST_PROP(FsmProperty, GuidedSequencesReachEveryStateAndKeepTheInvariants, (RawOps raw)) {
  std::vector<Op> ops = ops_of(raw);
  Fsm f(config_a());
  Time now = kT0;
  bool reached_established = false;
  for (const Op& op : ops) {
    reached_established |= f.state() == State::kEstablished;
    now += std::chrono::seconds(op.delay % 100);
    // Two times in three the event that moves the session on; otherwise
    // any event at all.
    static constexpr EventKind kEstablishedTraffic[] = {
        EventKind::kUpdateReceived, EventKind::kKeepaliveReceived, EventKind::kTick,
        EventKind::kSendProgress, EventKind::kUpdateSent};
    EventKind forward = EventKind::kTick;
    switch (f.state()) {
      case State::kIdle: forward = EventKind::kManualStart; break;
      case State::kConnect:
      case State::kActive: forward = EventKind::kTcpConnected; break;
      case State::kOpenSent: forward = EventKind::kOpenReceived; break;
      case State::kOpenConfirm: forward = EventKind::kKeepaliveReceived; break;
      case State::kEstablished: forward = kEstablishedTraffic[op.kind % std::size(kEstablishedTraffic)]; break;
    }
    auto kind = op.kind % 3 == 0 ? static_cast<EventKind>(op.kind / 3 % kEventKindCount) : forward;
    Event e = make_event(kind, op.variant, now);
    State before = f.state();
    Actions out = f.step(e, now);
    check_step(f, before, e, out, now);
  }
  RC_CLASSIFY(reached_established);
}

// The pair: both machines keep their invariants whatever the daemon's side
// does, and an established session looks the same from both ends.
RC_GTEST_PROP(PairProperty, RandomOperationsKeepBothMachinesConsistent, (RawOps raw)) {
  std::vector<Op> ops = ops_of(raw);
  PeerConfig a = config_a();
  a.capabilities.extended_message = true;
  a.capabilities.add_path = {{codec::kIpv4Unicast, codec::AddPathMode::kSend}};
  PeerConfig b = mirror(a);
  b.capabilities.add_path = {{codec::kIpv4Unicast, codec::AddPathMode::kBoth}};
  b.passive = true;
  SessionPair p(a, b, kT0);
  for (const Op& op : ops) {
    Side s = op.variant % 2 ? Side::kA : Side::kB;
    switch (op.kind % 9) {
      case 0: p.step(s, ManualStart{}); break;
      case 1: p.step(s, AutomaticStart{}); break;
      case 2: p.step(s, ManualStop{}); break;
      case 3: p.advance(std::chrono::seconds(op.delay % 700)); break;
      case 4: p.set_reading(s, op.delay % 3 != 0); break;
      case 5: p.send_update(s, std::vector<std::byte>(4, std::byte{0})); break;
      case 6: p.break_connection(); break;
      case 7: p.inject(s, std::vector<std::byte>(op.delay % 40, std::byte{0xff})); break;
      case 8: p.step(s, CollisionDump{}); break;
    }
    RC_ASSERT(check_invariants(p.fsm(Side::kA)) == "");
    RC_ASSERT(check_invariants(p.fsm(Side::kB)) == "");
    if (p.fsm(Side::kA).state() == State::kEstablished && p.fsm(Side::kB).state() == State::kEstablished) {
      const Negotiated& na = *p.fsm(Side::kA).negotiated();
      const Negotiated& nb = *p.fsm(Side::kB).negotiated();
      RC_ASSERT(na.hold_time == nb.hold_time);
      RC_ASSERT(na.params.add_path_send == nb.params.add_path_receive);
      RC_ASSERT(na.params.add_path_send == codec::FamilySet{codec::kIpv4Unicast});
      RC_ASSERT(na.params.add_path_receive.empty());
      RC_ASSERT(na.params.extended_message && nb.params.extended_message);
    }
  }
}

}  // namespace
}  // namespace petrel::fsm
