// The BGP session state machine of RFC 4271 section 8 as a pure function:
// step(event, now) appends the actions the daemon performs, in order. No
// sockets, no clock, no threads, no logging; one Fsm per TCP connection
// (collision resolution picks between two, see fsm/collision.h).
//
// RFC 4271 section 8.2.2 (the state/event table), RFC 6608 (FSM Error
// subcodes for unexpected messages), RFC 9687 (Send Hold Timer), RFC 4486
// and RFC 9003 (Cease subcodes and shutdown communication).
//
// Timers: after each step the daemon arms one timer at next_deadline() and,
// when it fires, steps a Tick. Where this differs from the RFC text:
//  - Idle holds no timer at all (the RFC restarts the ConnectRetryTimer on
//    some paths into Idle, where its expiry is ignored); the daemon's
//    back-off sends AutomaticStart instead.
//  - A passive peer never dials, so Active arms no ConnectRetryTimer.
//  - No NOTIFICATION is sent in reply to a NOTIFICATION, and none before
//    our OPEN (SendNOTIFICATIONwithoutOPEN is off).
//  - In Established a header or UPDATE error is sent as itself rather than
//    as FSM Error, which is what the peer needs to see.
#pragma once

#include <array>
#include <cstdint>
#include <optional>

#include "codec/notification.h"
#include "fsm/actions.h"
#include "fsm/config.h"
#include "fsm/events.h"
#include "fsm/negotiate.h"
#include "fsm/state.h"

namespace petrel::fsm {

class Fsm {
 public:
  explicit Fsm(PeerConfig config);

  // Feeds one event at time `now` (never earlier than a previous step's).
  void step(const Event& event, Time now, Actions& out);
  [[nodiscard]] Actions step(const Event& event, Time now);

  [[nodiscard]] State state() const { return state_; }
  // The earliest armed timer's deadline; nothing when no timer is armed.
  [[nodiscard]] std::optional<Time> next_deadline() const;
  [[nodiscard]] std::optional<Time> deadline(Timer t) const { return timers_[static_cast<size_t>(t)]; }
  // Set from the peer's accepted OPEN until the session goes back to Idle.
  [[nodiscard]] const std::optional<Negotiated>& negotiated() const { return negotiated_; }
  // RFC 4271 ConnectRetryCounter: consecutive failures, for the back-off.
  [[nodiscard]] uint32_t connect_retry_counter() const { return connect_retry_counter_; }
  [[nodiscard]] const PeerConfig& config() const { return config_; }

 private:
  enum class Counter : uint8_t { kKeep, kIncrement, kReset };

  void dispatch(EventKind kind, const Event& e, Time now, Actions& out);
  void on_idle(EventKind kind, const Event& e, Time now, Actions& out);
  void on_connecting(EventKind kind, const Event& e, Time now, Actions& out);
  void on_open_sent(EventKind kind, const Event& e, Time now, Actions& out);
  void on_open_confirm(EventKind kind, const Event& e, Time now, Actions& out);
  void on_established(EventKind kind, const Event& e, Time now, Actions& out);
  void stop_session(EventKind kind, const Event& e, Time now, Actions& out);
  void tick(Time now, Actions& out);

  // The one place that changes state_: keeps the timers consistent with
  // the new state and reports entering Established or Idle.
  void change_state(State to, Time now, Actions& out, const SessionDown* down = nullptr);

  void start(Time now, Actions& out);
  void connection_up(Time now, Actions& out);
  void open_sent(Time now, Actions& out);
  void open_received(const codec::Open& open, Time now, Actions& out);
  void send_keepalive(Time now, Actions& out);
  void send(const codec::Notification& n, Actions& out);
  // Into Idle: sends `sent` if given, drops the connection, reports why
  // (`reason` when it is not what was sent: received, or found but not sent).
  void close(DownCause cause, Counter counter, const codec::Notification* sent, Time now, Actions& out,
             const codec::Notification* reason = nullptr);
  void close_with(DownCause cause, codec::Notification n, Time now, Actions& out);
  void unexpected(EventKind kind, Time now, Actions& out);
  void peer_notification(const codec::Notification& n, Counter counter, Time now, Actions& out);
  void restart_hold(Time now, Actions& out);
  void update_send_hold(Time now, Actions& out);

  void arm(Timer t, Time deadline, Actions& out);
  void stop(Timer t, Actions& out);
  [[nodiscard]] bool running(Timer t) const { return timers_[static_cast<size_t>(t)].has_value(); }

  PeerConfig config_;
  State state_ = State::kIdle;
  std::array<std::optional<Time>, kTimerCount> timers_{};
  uint32_t connect_retry_counter_ = 0;
  std::optional<Negotiated> negotiated_;
  std::optional<Time> unsent_since_;  // RFC 9687
};

}  // namespace petrel::fsm
