// Helpers shared by the fsm tests: two mirrored peer configurations, the
// events of each kind with sample payloads, looking into action lists, and
// the invariants every state must keep.
#pragma once

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "codec/notification.h"
#include "fsm/fsm.h"

namespace petrel::fsm::testing {

using namespace std::chrono_literals;

inline constexpr Time kT0 = Time{} + std::chrono::hours(1);

inline PeerConfig config_a() {
  PeerConfig c;
  c.local_as = 65001;
  c.peer_as = 65002;
  c.local_id = 0x01010101;
  c.hold_time = 90;
  c.capabilities.multiprotocol = {codec::kIpv4Unicast, codec::kIpv6Unicast};
  c.capabilities.route_refresh = true;
  return c;
}

inline PeerConfig mirror(const PeerConfig& c) {
  PeerConfig m = c;
  m.local_as = c.peer_as;
  m.peer_as = c.local_as;
  m.local_id = c.local_id + 0x01010101;
  return m;
}

inline PeerConfig config_b() { return mirror(config_a()); }

// The OPEN a peer configured as `peer` sends.
inline codec::Open open_of(const PeerConfig& peer) { return our_open(peer); }

// An event of each kind with an ordinary payload.
inline Event sample_event(EventKind k, const PeerConfig& peer = config_b()) {
  static const std::vector<std::byte> kEmptyUpdate(4, std::byte{0});
  switch (k) {
    case EventKind::kManualStart: return ManualStart{};
    case EventKind::kManualStop: return ManualStop{};
    case EventKind::kAutomaticStart: return AutomaticStart{};
    case EventKind::kAutomaticStop: return AutomaticStop{};
    case EventKind::kTcpConnected: return TcpConnected{};
    case EventKind::kTcpAccepted: return TcpAccepted{};
    case EventKind::kTcpFailed: return TcpFailed{};
    case EventKind::kConnectRetryTimerExpired: return ConnectRetryTimerExpired{};
    case EventKind::kHoldTimerExpired: return HoldTimerExpired{};
    case EventKind::kKeepaliveTimerExpired: return KeepaliveTimerExpired{};
    case EventKind::kDelayOpenTimerExpired: return DelayOpenTimerExpired{};
    case EventKind::kSendHoldTimerExpired: return SendHoldTimerExpired{};
    case EventKind::kOpenReceived: return OpenReceived{open_of(peer)};
    case EventKind::kKeepaliveReceived: return KeepaliveReceived{};
    case EventKind::kUpdateReceived: return UpdateReceived{kEmptyUpdate};
    case EventKind::kNotificationReceived:
      return NotificationReceived{codec::Notification{6, codec::cease::kAdministrativeReset, {}}};
    case EventKind::kRouteRefreshReceived: {
      codec::RouteRefresh rr;
      rr.family = codec::kIpv4Unicast;
      return RouteRefreshReceived{rr};
    }
    case EventKind::kMessageError:
      return MessageError{codec::NotifyError::with_u8(codec::ErrorCode::kMessageHeader,
                                                      codec::header_error::kBadMessageType, 9),
                          std::nullopt};
    case EventKind::kCollisionDump: return CollisionDump{};
    case EventKind::kSendProgress: return SendProgress{kT0};
    case EventKind::kUpdateSent: return UpdateSent{};
    case EventKind::kTick: return Tick{};
  }
  return Tick{};
}

template <class T>
int count(const Actions& as) {
  int n = 0;
  for (const auto& a : as) n += std::holds_alternative<T>(a) ? 1 : 0;
  return n;
}

template <class T>
const T* find(const Actions& as) {
  for (const auto& a : as)
    if (const T* p = std::get_if<T>(&a)) return p;
  return nullptr;
}

inline std::vector<codec::MessageType> sent_types(const Actions& as) {
  std::vector<codec::MessageType> out;
  for (const auto& a : as)
    if (const auto* s = std::get_if<Send>(&a)) out.push_back(s->type);
  return out;
}

// The NOTIFICATION among the actions, decoded.
inline std::optional<codec::Notification> sent_notification(const Actions& as) {
  for (const auto& a : as) {
    const auto* s = std::get_if<Send>(&a);
    if (!s || s->type != codec::MessageType::kNotification) continue;
    auto n = codec::decode_notification(bytes::Span(s->bytes).subspan(codec::kHeaderLen));
    if (n) return *n;
  }
  return std::nullopt;
}

// Drives a fresh FSM to `s` the ordinary way (the config must not be
// passive nor use DelayOpen for Active).
inline void drive_to(Fsm& f, State s, const PeerConfig& peer = config_b(), Time now = kT0) {
  auto go = [&](const Event& e) { (void)f.step(e, now); };
  switch (s) {
    case State::kIdle: return;
    case State::kConnect: return go(ManualStart{});
    case State::kActive:
      go(ManualStart{});
      go(TcpConnected{});
      return go(TcpFailed{});
    case State::kOpenSent:
      go(ManualStart{});
      return go(TcpConnected{});
    case State::kOpenConfirm:
      go(ManualStart{});
      go(TcpConnected{});
      return go(OpenReceived{open_of(peer)});
    case State::kEstablished:
      go(ManualStart{});
      go(TcpConnected{});
      go(OpenReceived{open_of(peer)});
      return go(KeepaliveReceived{});
  }
}

// The invariants that tie timers and negotiated values to the state. An
// empty string means all hold; otherwise what broke.
inline std::string check_invariants(const Fsm& f) {
  auto on = [&](Timer t) { return f.deadline(t).has_value(); };
  bool cr = on(Timer::kConnectRetry), hold = on(Timer::kHold), ka = on(Timer::kKeepalive);
  bool dopen = on(Timer::kDelayOpen), shold = on(Timer::kSendHold);
  std::optional<Time> earliest;
  for (size_t i = 0; i < kTimerCount; ++i) {
    auto d = f.deadline(static_cast<Timer>(i));
    if (d && (!earliest || *d < *earliest)) earliest = d;
  }
  if (earliest != f.next_deadline()) return "next_deadline is not the earliest timer";
  bool negotiated = f.negotiated().has_value();
  bool holds = negotiated && f.negotiated()->hold_time > 0;
  switch (f.state()) {
    case State::kIdle:
      if (cr || hold || ka || dopen || shold) return "a timer runs in Idle";
      if (negotiated) return "negotiated values in Idle";
      return "";
    case State::kConnect:
    case State::kActive:
      if (hold || ka || shold) return "hold, keepalive or send hold timer before OpenSent";
      if (negotiated) return "negotiated values before OpenConfirm";
      if (f.config().passive && cr) return "a passive peer runs the ConnectRetryTimer";
      if (!f.config().passive && cr == dopen) return "not exactly one of ConnectRetry and DelayOpen";
      return "";
    case State::kOpenSent:
      if (!hold) return "no hold timer in OpenSent";
      if (cr || ka || dopen) return "ConnectRetry, Keepalive or DelayOpen in OpenSent";
      if (negotiated) return "negotiated values in OpenSent";
      return "";
    case State::kOpenConfirm:
    case State::kEstablished:
      if (!negotiated) return "no negotiated values after the OPEN exchange";
      if (cr || dopen) return "ConnectRetry or DelayOpen after the OPEN exchange";
      if (hold != holds) return "hold timer not armed iff the hold time is non-zero";
      if (ka != holds) return "keepalive timer not armed iff the hold time is non-zero";
      return "";
  }
  return "invalid state";
}

}  // namespace petrel::fsm::testing
