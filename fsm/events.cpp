// Event and action names, and the event for a message from the framer.
#include "fsm/events.h"

#include "fsm/actions.h"

namespace petrel::fsm {

std::string_view event_kind_name(EventKind k) {
  switch (k) {
    case EventKind::kManualStart: return "ManualStart";
    case EventKind::kManualStop: return "ManualStop";
    case EventKind::kAutomaticStart: return "AutomaticStart";
    case EventKind::kAutomaticStop: return "AutomaticStop";
    case EventKind::kTcpConnected: return "TcpConnected";
    case EventKind::kTcpAccepted: return "TcpAccepted";
    case EventKind::kTcpFailed: return "TcpFailed";
    case EventKind::kConnectRetryTimerExpired: return "ConnectRetryTimerExpired";
    case EventKind::kHoldTimerExpired: return "HoldTimerExpired";
    case EventKind::kKeepaliveTimerExpired: return "KeepaliveTimerExpired";
    case EventKind::kDelayOpenTimerExpired: return "DelayOpenTimerExpired";
    case EventKind::kSendHoldTimerExpired: return "SendHoldTimerExpired";
    case EventKind::kOpenReceived: return "OpenReceived";
    case EventKind::kKeepaliveReceived: return "KeepaliveReceived";
    case EventKind::kUpdateReceived: return "UpdateReceived";
    case EventKind::kNotificationReceived: return "NotificationReceived";
    case EventKind::kRouteRefreshReceived: return "RouteRefreshReceived";
    case EventKind::kMessageError: return "MessageError";
    case EventKind::kCollisionDump: return "CollisionDump";
    case EventKind::kSendProgress: return "SendProgress";
    case EventKind::kUpdateSent: return "UpdateSent";
    case EventKind::kTick: return "Tick";
  }
  return "unknown";
}

bool is_message(EventKind k) {
  switch (k) {
    case EventKind::kOpenReceived:
    case EventKind::kKeepaliveReceived:
    case EventKind::kUpdateReceived:
    case EventKind::kNotificationReceived:
    case EventKind::kRouteRefreshReceived:
    case EventKind::kMessageError: return true;
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
    case EventKind::kCollisionDump:
    case EventKind::kSendProgress:
    case EventKind::kUpdateSent:
    case EventKind::kTick: return false;
  }
  return false;
}

Event event_from_message(const codec::Message& m) {
  switch (m.type) {
    case codec::MessageType::kOpen: {
      auto open = codec::decode_open(m.body);
      if (!open) return MessageError{open.error(), m.type};
      return OpenReceived{std::move(open).value()};
    }
    case codec::MessageType::kUpdate: return UpdateReceived{m.body};
    case codec::MessageType::kNotification: {
      // A NOTIFICATION is never answered; one too short for its code (the
      // framer already refuses that) still closes the session.
      auto n = codec::decode_notification(m.body);
      return NotificationReceived{n ? std::move(n).value() : codec::Notification{}};
    }
    case codec::MessageType::kKeepalive: return KeepaliveReceived{};
    case codec::MessageType::kRouteRefresh: {
      auto rr = codec::decode_route_refresh(m.body, m.whole);
      if (!rr) return MessageError{rr.error(), m.type};
      return RouteRefreshReceived{*rr};
    }
  }
  return MessageError{codec::NotifyError::with_u8(codec::ErrorCode::kMessageHeader,
                                                  codec::header_error::kBadMessageType,
                                                  static_cast<uint8_t>(m.type)),
                      std::nullopt};
}

std::string_view timer_name(Timer t) {
  switch (t) {
    case Timer::kConnectRetry: return "ConnectRetry";
    case Timer::kHold: return "Hold";
    case Timer::kKeepalive: return "Keepalive";
    case Timer::kDelayOpen: return "DelayOpen";
    case Timer::kSendHold: return "SendHold";
  }
  return "unknown";
}

std::string_view down_cause_name(DownCause c) {
  switch (c) {
    case DownCause::kManualStop: return "manual-stop";
    case DownCause::kAutomaticStop: return "automatic-stop";
    case DownCause::kTcpFailed: return "tcp-failed";
    case DownCause::kHoldTimerExpired: return "hold-timer-expired";
    case DownCause::kSendHoldTimerExpired: return "send-hold-timer-expired";
    case DownCause::kNotificationReceived: return "notification-received";
    case DownCause::kMessageError: return "message-error";
    case DownCause::kOpenRefused: return "open-refused";
    case DownCause::kUnexpectedEvent: return "unexpected-event";
    case DownCause::kCollision: return "collision";
  }
  return "unknown";
}

}  // namespace petrel::fsm
