// The BGP session state machine: RFC 4271 section 8.2.2, RFC 6608,
// RFC 9687; a ROUTE-REFRESH without the capability (RFC 2918, RFC 7313,
// RFC 5492 section 3). One handler per state, each a switch over every event kind with
// no default, so -Wswitch-enum points at any event a state forgets.
#include "fsm/fsm.h"

#include <algorithm>
#include <utility>

#include "codec/framer.h"
#include "codec/open.h"
#include "fsm/graceful.h"

namespace petrel::fsm {

namespace {

using codec::ErrorCode;
using codec::Notification;

constexpr auto kCeaseCode = static_cast<uint8_t>(ErrorCode::kCease);
constexpr Duration kMinTimer = std::chrono::seconds(1);

Notification notice(ErrorCode code, uint8_t subcode) {
  return Notification{static_cast<uint8_t>(code), subcode, {}};
}

Notification cease(uint8_t subcode, std::string_view text) {
  if (subcode == codec::cease::kAdministrativeShutdown || subcode == codec::cease::kAdministrativeReset)
    return Notification::shutdown(subcode, text);
  return notice(ErrorCode::kCease, subcode);
}

// Event 24: the peer does not speak our version (RFC 4271 section 7).
bool version_error(const Notification& n) {
  return n.error_code() == ErrorCode::kOpenMessage && n.subcode == codec::open_error::kUnsupportedVersion;
}

Duration at_least_a_second(Duration d) { return std::max(d, kMinTimer); }

// RFC 9687: from OpenSent on, bytes unsent for longer than the send hold
// time end the session; before our OPEN there is nothing it measures.
bool send_hold_applies(State s) {
  return s == State::kOpenSent || s == State::kOpenConfirm || s == State::kEstablished;
}

EventKind expiry_event(Timer t) {
  switch (t) {
    case Timer::kConnectRetry: return EventKind::kConnectRetryTimerExpired;
    case Timer::kHold: return EventKind::kHoldTimerExpired;
    case Timer::kKeepalive: return EventKind::kKeepaliveTimerExpired;
    case Timer::kDelayOpen: return EventKind::kDelayOpenTimerExpired;
    case Timer::kSendHold: return EventKind::kSendHoldTimerExpired;
  }
  return EventKind::kTick;
}

Event make_expiry(Timer t) {
  switch (t) {
    case Timer::kConnectRetry: return ConnectRetryTimerExpired{};
    case Timer::kHold: return HoldTimerExpired{};
    case Timer::kKeepalive: return KeepaliveTimerExpired{};
    case Timer::kDelayOpen: return DelayOpenTimerExpired{};
    case Timer::kSendHold: return SendHoldTimerExpired{};
  }
  return Tick{};
}

// The timer whose expiry this event is, if it is one.
std::optional<Timer> expired_timer(EventKind k) {
  for (size_t i = 0; i < kTimerCount; ++i)
    if (expiry_event(static_cast<Timer>(i)) == k) return static_cast<Timer>(i);
  return std::nullopt;
}

}  // namespace

std::string_view state_name(State s) {
  switch (s) {
    case State::kIdle: return "Idle";
    case State::kConnect: return "Connect";
    case State::kActive: return "Active";
    case State::kOpenSent: return "OpenSent";
    case State::kOpenConfirm: return "OpenConfirm";
    case State::kEstablished: return "Established";
  }
  return "unknown";
}

Fsm::Fsm(PeerConfig config) : config_(std::move(config)) {}

Actions Fsm::step(const Event& event, Time now) {
  Actions out;
  step(event, now, out);
  return out;
}

void Fsm::step(const Event& event, Time now, Actions& out) {
  EventKind kind = event_kind(event);
  if (kind == EventKind::kTick) return tick(now, out);
  if (const auto* p = std::get_if<SendProgress>(&event)) {
    // Idle has no connection whose bytes could wait, and before our OPEN
    // (Connect, Active: a connection may wait out the DelayOpenTimer) the
    // send hold timer does not apply (RFC 9687); a moment recorded there
    // would arm it from the past once the OPEN went out.
    if (!send_hold_applies(state_)) return out.push_back(Ignored{state_, kind});
    unsent_since_ = p->unsent_since;
    return update_send_hold(now, out);
  }
  // A timer event given directly means that timer fired.
  if (auto t = expired_timer(kind)) timers_[static_cast<size_t>(*t)].reset();
  dispatch(kind, event, now, out);
}

std::optional<Time> Fsm::next_deadline() const {
  std::optional<Time> best;
  for (const auto& t : timers_)
    if (t && (!best || *t < *best)) best = t;
  return best;
}

void Fsm::tick(Time now, Actions& out) {
  // Each expiry re-arms only into the future (every period is at least a
  // second past `now`), so this ends; the bound is a second guard.
  for (size_t round = 0; round < 4 * kTimerCount; ++round) {
    std::optional<size_t> due;
    for (size_t i = 0; i < kTimerCount; ++i)
      if (timers_[i] && *timers_[i] <= now && (!due || *timers_[i] < *timers_[*due])) due = i;
    if (!due) return;
    timers_[*due].reset();
    auto t = static_cast<Timer>(*due);
    dispatch(expiry_event(t), make_expiry(t), now, out);
  }
}

void Fsm::dispatch(EventKind kind, const Event& e, Time now, Actions& out) {
  switch (state_) {
    case State::kIdle: return on_idle(kind, e, now, out);
    case State::kConnect:
    case State::kActive: return on_connecting(kind, e, now, out);
    case State::kOpenSent: return on_open_sent(kind, e, now, out);
    case State::kOpenConfirm: return on_open_confirm(kind, e, now, out);
    case State::kEstablished: return on_established(kind, e, now, out);
  }
}

// Idle: refuses connections; only a start event does anything.
void Fsm::on_idle(EventKind kind, const Event&, Time now, Actions& out) {
  switch (kind) {
    case EventKind::kManualStart:
    case EventKind::kAutomaticStart: return start(now, out);
    case EventKind::kTcpConnected:
    case EventKind::kTcpAccepted:
      out.push_back(Disconnect{});
      out.push_back(Ignored{state_, kind});
      return;
    case EventKind::kManualStop:
    case EventKind::kAutomaticStop:
    case EventKind::kTcpFailed:
    case EventKind::kConnectRetryTimerExpired:
    case EventKind::kHoldTimerExpired:
    case EventKind::kKeepaliveTimerExpired:
    case EventKind::kDelayOpenTimerExpired:
    case EventKind::kSendHoldTimerExpired:
    case EventKind::kOpenReceived:
    case EventKind::kKeepaliveReceived:
    case EventKind::kUpdateReceived:
    case EventKind::kNotificationReceived:
    case EventKind::kRouteRefreshReceived:
    case EventKind::kMessageError:
    case EventKind::kCollisionDump:
    case EventKind::kUpdateSent:
    case EventKind::kSendProgress:  // handled in step()
    case EventKind::kTick:          // handled in step()
      out.push_back(Ignored{state_, kind});
      return;
  }
}

// Connect (dialling, under the ConnectRetryTimer) and Active (listening;
// the ConnectRetryTimer dials again unless passive) share most rows. With
// DelayOpen, either may hold a connection and wait for the peer's OPEN
// under the DelayOpenTimer.
void Fsm::on_connecting(EventKind kind, const Event& e, Time now, Actions& out) {
  bool connect = state_ == State::kConnect;
  switch (kind) {
    case EventKind::kManualStart:
    case EventKind::kAutomaticStart:
    case EventKind::kUpdateSent:
    case EventKind::kSendProgress:
    case EventKind::kTick:
      out.push_back(Ignored{state_, kind});
      return;
    case EventKind::kTcpConnected:
    case EventKind::kTcpAccepted: return connection_up(now, out);
    case EventKind::kManualStop: return close(DownCause::kManualStop, Counter::kReset, nullptr, now, out);
    case EventKind::kAutomaticStop:
      return close(DownCause::kAutomaticStop, Counter::kIncrement, nullptr, now, out);
    case EventKind::kConnectRetryTimerExpired:
      if (config_.passive) {
        out.push_back(Ignored{state_, kind});
        return;
      }
      if (connect) out.push_back(Disconnect{});  // give up the dial in progress
      stop(Timer::kDelayOpen, out);
      arm(Timer::kConnectRetry, now + at_least_a_second(config_.connect_retry), out);
      out.push_back(Connect{});
      return change_state(State::kConnect, now, out);
    case EventKind::kDelayOpenTimerExpired: return open_sent(now, out);
    case EventKind::kTcpFailed:
      if (connect && running(Timer::kDelayOpen)) {
        stop(Timer::kDelayOpen, out);
        arm(Timer::kConnectRetry, now + at_least_a_second(config_.connect_retry), out);
        return change_state(State::kActive, now, out);
      }
      return close(DownCause::kTcpFailed, connect ? Counter::kKeep : Counter::kIncrement, nullptr, now, out);
    case EventKind::kOpenReceived:
      if (running(Timer::kDelayOpen)) return open_received(std::get<OpenReceived>(e).open, now, out);
      return unexpected(kind, now, out);
    case EventKind::kNotificationReceived: {
      const auto& n = std::get<NotificationReceived>(e).notification;
      bool quiet = version_error(n) && running(Timer::kDelayOpen);
      return peer_notification(n, quiet ? Counter::kKeep : Counter::kIncrement, now, out);
    }
    case EventKind::kMessageError: {
      // No NOTIFICATION before our OPEN; the error is reported all the same.
      Notification n = Notification::from(std::get<MessageError>(e).error);
      return close(DownCause::kMessageError, Counter::kIncrement, nullptr, now, out, &n);
    }
    case EventKind::kHoldTimerExpired:
    case EventKind::kKeepaliveTimerExpired:
    case EventKind::kSendHoldTimerExpired:
    case EventKind::kKeepaliveReceived:
    case EventKind::kUpdateReceived:
    case EventKind::kRouteRefreshReceived:
    case EventKind::kCollisionDump: return unexpected(kind, now, out);
  }
}

// OpenSent: our OPEN is out; waiting for theirs under the large hold timer.
void Fsm::on_open_sent(EventKind kind, const Event& e, Time now, Actions& out) {
  switch (kind) {
    case EventKind::kManualStart:
    case EventKind::kAutomaticStart:
    case EventKind::kTcpConnected:  // a second connection: the daemon tracks it
    case EventKind::kTcpAccepted:
    case EventKind::kUpdateSent:
    case EventKind::kSendProgress:
    case EventKind::kTick:
      out.push_back(Ignored{state_, kind});
      return;
    case EventKind::kManualStop:
    case EventKind::kAutomaticStop:
    case EventKind::kHoldTimerExpired:
    case EventKind::kSendHoldTimerExpired:
    case EventKind::kCollisionDump: return stop_session(kind, e, now, out);
    case EventKind::kTcpFailed:
      out.push_back(Disconnect{});
      if (!config_.passive) arm(Timer::kConnectRetry, now + at_least_a_second(config_.connect_retry), out);
      return change_state(State::kActive, now, out);
    case EventKind::kOpenReceived: return open_received(std::get<OpenReceived>(e).open, now, out);
    case EventKind::kMessageError: {
      const auto& m = std::get<MessageError>(e);
      // Events 21 and 22; an UPDATE or ROUTE-REFRESH was unexpected at all.
      if (m.type && *m.type != codec::MessageType::kOpen) return unexpected(kind, now, out);
      return close_with(DownCause::kMessageError, Notification::from(m.error), now, out);
    }
    case EventKind::kNotificationReceived: {
      const auto& n = std::get<NotificationReceived>(e).notification;
      return peer_notification(n, version_error(n) ? Counter::kKeep : Counter::kIncrement, now, out);
    }
    case EventKind::kConnectRetryTimerExpired:
    case EventKind::kKeepaliveTimerExpired:
    case EventKind::kDelayOpenTimerExpired:
    case EventKind::kKeepaliveReceived:
    case EventKind::kUpdateReceived:
    case EventKind::kRouteRefreshReceived: return unexpected(kind, now, out);
  }
}

// OpenConfirm: both OPENs exchanged; waiting for the peer's KEEPALIVE.
void Fsm::on_open_confirm(EventKind kind, const Event& e, Time now, Actions& out) {
  switch (kind) {
    case EventKind::kManualStart:
    case EventKind::kAutomaticStart:
    case EventKind::kTcpConnected:
    case EventKind::kTcpAccepted:
    case EventKind::kUpdateSent:
    case EventKind::kSendProgress:
    case EventKind::kTick:
      out.push_back(Ignored{state_, kind});
      return;
    case EventKind::kManualStop:
    case EventKind::kAutomaticStop:
    case EventKind::kHoldTimerExpired:
    case EventKind::kSendHoldTimerExpired:
    case EventKind::kCollisionDump: return stop_session(kind, e, now, out);
    case EventKind::kKeepaliveTimerExpired: return send_keepalive(now, out);
    case EventKind::kTcpFailed:
      return close(DownCause::kTcpFailed, Counter::kIncrement, nullptr, now, out);
    case EventKind::kNotificationReceived:
      return peer_notification(std::get<NotificationReceived>(e).notification, Counter::kIncrement, now, out);
    case EventKind::kMessageError: {
      const auto& m = std::get<MessageError>(e);
      if (m.type && *m.type != codec::MessageType::kOpen) return unexpected(kind, now, out);
      return close_with(DownCause::kMessageError, Notification::from(m.error), now, out);
    }
    case EventKind::kKeepaliveReceived:
      restart_hold(now, out);
      return change_state(State::kEstablished, now, out);
    case EventKind::kConnectRetryTimerExpired:
    case EventKind::kDelayOpenTimerExpired:
    case EventKind::kOpenReceived:  // a collision comes as CollisionDump
    case EventKind::kUpdateReceived:
    case EventKind::kRouteRefreshReceived: return unexpected(kind, now, out);
  }
}

// Established: UPDATEs flow.
void Fsm::on_established(EventKind kind, const Event& e, Time now, Actions& out) {
  switch (kind) {
    case EventKind::kManualStart:
    case EventKind::kAutomaticStart:
    case EventKind::kTcpConnected:
    case EventKind::kTcpAccepted:
    case EventKind::kSendProgress:
    case EventKind::kTick:
      out.push_back(Ignored{state_, kind});
      return;
    case EventKind::kManualStop:
    case EventKind::kAutomaticStop:
    case EventKind::kHoldTimerExpired:
    case EventKind::kSendHoldTimerExpired:
    case EventKind::kCollisionDump: return stop_session(kind, e, now, out);
    case EventKind::kKeepaliveTimerExpired: return send_keepalive(now, out);
    case EventKind::kUpdateSent:
      if (negotiated_ && negotiated_->keepalive > 0)
        arm(Timer::kKeepalive, now + std::chrono::seconds(negotiated_->keepalive), out);
      return;
    case EventKind::kTcpFailed:
      return close(DownCause::kTcpFailed, Counter::kIncrement, nullptr, now, out);
    case EventKind::kNotificationReceived:
      return peer_notification(std::get<NotificationReceived>(e).notification, Counter::kIncrement, now, out);
    case EventKind::kKeepaliveReceived: return restart_hold(now, out);
    case EventKind::kUpdateReceived:
      restart_hold(now, out);
      out.push_back(DeliverUpdate{std::get<UpdateReceived>(e).body});
      return;
    case EventKind::kRouteRefreshReceived:
      // RFC 5492 section 3: a capability is used only when both sides
      // advertised it, so a ROUTE-REFRESH on a session without route
      // refresh (RFC 2918) or enhanced route refresh (RFC 7313) is a
      // message of a type the session does not know: RFC 4271 section
      // 6.1, Message Header Error / Bad Message Type with the type as data.
      if (negotiated_ && !negotiated_->route_refresh && !negotiated_->enhanced_route_refresh) {
        Notification n = notice(ErrorCode::kMessageHeader, codec::header_error::kBadMessageType);
        n.data = {std::byte{static_cast<uint8_t>(codec::MessageType::kRouteRefresh)}};
        return close_with(DownCause::kMessageError, std::move(n), now, out);
      }
      restart_hold(now, out);
      out.push_back(DeliverRouteRefresh{std::get<RouteRefreshReceived>(e).refresh});
      return;
    case EventKind::kMessageError: {
      const auto& m = std::get<MessageError>(e);
      if (m.type == codec::MessageType::kOpen) return unexpected(kind, now, out);
      return close_with(DownCause::kMessageError, Notification::from(m.error), now, out);
    }
    case EventKind::kConnectRetryTimerExpired:
    case EventKind::kDelayOpenTimerExpired:
    case EventKind::kOpenReceived: return unexpected(kind, now, out);
  }
}

// The rows shared by OpenSent, OpenConfirm and Established that end the
// session with a NOTIFICATION of our own: stops, timers, collisions.
void Fsm::stop_session(EventKind kind, const Event& e, Time now, Actions& out) {
  switch (kind) {
    case EventKind::kManualStop: {
      const auto& s = std::get<ManualStop>(e);
      // RFC 8538: a hard Cease goes as a Hard Reset when both set the N bit.
      Notification n = for_session(cease(s.cease_subcode, s.communication), negotiated_ ? &*negotiated_ : nullptr);
      return close(DownCause::kManualStop, Counter::kReset, &n, now, out);
    }
    case EventKind::kAutomaticStop: {
      const auto& s = std::get<AutomaticStop>(e);
      Notification n{kCeaseCode, s.cease_subcode, s.data};
      return close_with(DownCause::kAutomaticStop, for_session(std::move(n), negotiated_ ? &*negotiated_ : nullptr),
                        now, out);
    }
    case EventKind::kHoldTimerExpired:
      return close_with(DownCause::kHoldTimerExpired, notice(ErrorCode::kHoldTimerExpired, 0), now, out);
    case EventKind::kSendHoldTimerExpired:
      return close_with(DownCause::kSendHoldTimerExpired, notice(ErrorCode::kSendHoldTimerExpired, 0), now, out);
    case EventKind::kCollisionDump:
      return close_with(DownCause::kCollision, notice(ErrorCode::kCease, codec::cease::kConnectionCollision),
                        now, out);
    case EventKind::kManualStart:
    case EventKind::kAutomaticStart:
    case EventKind::kTcpConnected:
    case EventKind::kTcpAccepted:
    case EventKind::kTcpFailed:
    case EventKind::kConnectRetryTimerExpired:
    case EventKind::kKeepaliveTimerExpired:
    case EventKind::kDelayOpenTimerExpired:
    case EventKind::kOpenReceived:
    case EventKind::kKeepaliveReceived:
    case EventKind::kUpdateReceived:
    case EventKind::kNotificationReceived:
    case EventKind::kRouteRefreshReceived:
    case EventKind::kMessageError:
    case EventKind::kSendProgress:
    case EventKind::kUpdateSent:
    case EventKind::kTick: break;
  }
  unexpected(kind, now, out);  // not reached: only the kinds above come here
}

void Fsm::change_state(State to, Time now, Actions& out, const SessionDown* down) {
  State from = state_;
  state_ = to;
  switch (to) {
    case State::kIdle:
      for (size_t i = 0; i < kTimerCount; ++i) stop(static_cast<Timer>(i), out);
      if (down && from != State::kIdle) {
        SessionDown d = *down;
        d.from = from;
        d.graceful = from == State::kEstablished && negotiated_ &&
                     helper_keeps_routes(*negotiated_, d.cause, d.code, d.subcode);
        out.push_back(d);
      }
      negotiated_.reset();
      unsent_since_.reset();
      return;
    case State::kConnect:
    case State::kActive:
      // No connection (or a fresh one): nothing negotiated, nothing unsent.
      stop(Timer::kHold, out);
      stop(Timer::kKeepalive, out);
      negotiated_.reset();
      unsent_since_.reset();
      return update_send_hold(now, out);
    case State::kOpenSent:
      stop(Timer::kConnectRetry, out);
      stop(Timer::kDelayOpen, out);
      stop(Timer::kKeepalive, out);
      return update_send_hold(now, out);
    case State::kOpenConfirm:
      stop(Timer::kConnectRetry, out);
      stop(Timer::kDelayOpen, out);
      return update_send_hold(now, out);
    case State::kEstablished:
      out.push_back(SessionUp{negotiated_ ? negotiated_->params : codec::SessionParams{}});
      return;
  }
}

void Fsm::start(Time now, Actions& out) {
  connect_retry_counter_ = 0;
  if (config_.passive) return change_state(State::kActive, now, out);
  arm(Timer::kConnectRetry, now + at_least_a_second(config_.connect_retry), out);
  out.push_back(Connect{});
  change_state(State::kConnect, now, out);
}

// Events 16 and 17 in Connect or Active.
void Fsm::connection_up(Time now, Actions& out) {
  stop(Timer::kConnectRetry, out);
  if (config_.delay_open.count() > 0) return arm(Timer::kDelayOpen, now + config_.delay_open, out);
  open_sent(now, out);
}

void Fsm::open_sent(Time now, Actions& out) {
  Send s{codec::MessageType::kOpen, {}};
  codec::encode_open(our_open(config_), s.bytes);
  out.push_back(std::move(s));
  change_state(State::kOpenSent, now, out);
  arm(Timer::kHold, now + at_least_a_second(config_.open_hold), out);
}

// Event 19 in OpenSent, or 20 in Connect/Active with the DelayOpenTimer
// running (then our OPEN goes out now).
void Fsm::open_received(const codec::Open& open, Time now, Actions& out) {
  auto neg = negotiate(config_, open);
  bool delayed = state_ != State::kOpenSent;
  if (!neg) {
    // Before our OPEN went out no NOTIFICATION is sent (RFC 4271 8.2.2,
    // SendNOTIFICATIONwithoutOPEN off), but the reason is still reported.
    return close(DownCause::kOpenRefused, Counter::kIncrement, delayed ? nullptr : &neg.error(), now, out,
                 &neg.error());
  }
  if (delayed) {
    stop(Timer::kConnectRetry, out);
    stop(Timer::kDelayOpen, out);
    Send s{codec::MessageType::kOpen, {}};
    codec::encode_open(our_open(config_), s.bytes);
    out.push_back(std::move(s));
  }
  negotiated_ = std::move(neg).value();
  change_state(State::kOpenConfirm, now, out);
  send_keepalive(now, out);
  if (negotiated_->hold_time > 0) {
    restart_hold(now, out);
  } else {
    stop(Timer::kHold, out);
    stop(Timer::kKeepalive, out);
  }
  out.push_back(OpenAccepted{negotiated_->peer_id, negotiated_->peer_as});
}

void Fsm::send_keepalive(Time now, Actions& out) {
  Send s{codec::MessageType::kKeepalive, {}};
  codec::encode_keepalive(s.bytes);
  out.push_back(std::move(s));
  if (negotiated_ && negotiated_->keepalive > 0)
    arm(Timer::kKeepalive, now + std::chrono::seconds(negotiated_->keepalive), out);
}

void Fsm::send(const Notification& n, Actions& out) {
  Send s{codec::MessageType::kNotification, {}};
  size_t max_len = negotiated_ ? negotiated_->params.max_message_len() : codec::kMaxMessageLen;
  codec::encode_notification(n, s.bytes, max_len);
  out.push_back(std::move(s));
}

void Fsm::close(DownCause cause, Counter counter, const Notification* sent, Time now, Actions& out,
                const Notification* reason) {
  if (sent) send(*sent, out);
  out.push_back(Disconnect{});
  switch (counter) {
    case Counter::kKeep: break;
    case Counter::kIncrement: ++connect_retry_counter_; break;
    case Counter::kReset: connect_retry_counter_ = 0; break;
  }
  SessionDown down{state_, cause, sent != nullptr, 0, 0};
  const Notification* n = reason ? reason : sent;
  if (n) {
    down.code = n->code;
    down.subcode = n->subcode;
  }
  change_state(State::kIdle, now, out, &down);
}

void Fsm::close_with(DownCause cause, Notification n, Time now, Actions& out) {
  close(cause, Counter::kIncrement, &n, now, out);
}

// RFC 4271 "any other event": FSM Error, with the RFC 6608 subcode when
// the event is a message; before OpenSent just close.
void Fsm::unexpected(EventKind kind, Time now, Actions& out) {
  uint8_t sub = codec::fsm_error::kUnspecified;
  switch (state_) {
    case State::kIdle:
    case State::kConnect:
    case State::kActive: {
      Notification n = notice(ErrorCode::kFsm, sub);
      return close(DownCause::kUnexpectedEvent, Counter::kIncrement, nullptr, now, out, &n);
    }
    case State::kOpenSent: sub = codec::fsm_error::kUnexpectedInOpenSent; break;
    case State::kOpenConfirm: sub = codec::fsm_error::kUnexpectedInOpenConfirm; break;
    case State::kEstablished: sub = codec::fsm_error::kUnexpectedInEstablished; break;
  }
  if (!is_message(kind)) sub = codec::fsm_error::kUnspecified;
  close_with(DownCause::kUnexpectedEvent, notice(ErrorCode::kFsm, sub), now, out);
}

// The peer closes with a NOTIFICATION: never answered with another.
void Fsm::peer_notification(const Notification& n, Counter counter, Time now, Actions& out) {
  close(DownCause::kNotificationReceived, counter, nullptr, now, out, &n);
}

void Fsm::restart_hold(Time now, Actions& out) {
  if (negotiated_ && negotiated_->hold_time > 0)
    arm(Timer::kHold, now + std::chrono::seconds(negotiated_->hold_time), out);
}

// RFC 9687: from OpenSent on, bytes unsent for longer than the send hold
// time end the session.
void Fsm::update_send_hold(Time, Actions& out) {
  if (!send_hold_applies(state_) || !unsent_since_) return stop(Timer::kSendHold, out);
  uint16_t hold = negotiated_ ? negotiated_->hold_time : config_.hold_time;
  Time deadline = *unsent_since_ + send_hold_time(config_, hold);
  if (timers_[static_cast<size_t>(Timer::kSendHold)] != deadline) arm(Timer::kSendHold, deadline, out);
}

void Fsm::arm(Timer t, Time deadline, Actions& out) {
  timers_[static_cast<size_t>(t)] = deadline;
  out.push_back(TimerArmed{t, deadline});
}

void Fsm::stop(Timer t, Actions& out) {
  auto& slot = timers_[static_cast<size_t>(t)];
  if (!slot) return;
  slot.reset();
  out.push_back(TimerStopped{t});
}

}  // namespace petrel::fsm
