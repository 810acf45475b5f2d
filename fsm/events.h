// What the daemon feeds the state machine: the events of RFC 4271 section
// 8.1 that Petrel uses, the Send Hold Timer of RFC 9687, and a few inputs
// of its own (Tick, SendProgress, UpdateSent). Event numbers from RFC 4271
// section 8.1 are in the comments.
//
// Not modelled: the optional events for peer oscillation damping (6, 7,
// 13; the daemon holds a flapping peer back itself, Peer::damp_after) and
// TCP connection validation (14, 15) -- the daemon's dialer and listener
// do that.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "codec/framer.h"
#include "codec/notification.h"
#include "codec/open.h"
#include "codec/route_refresh.h"
#include "codec/types.h"
#include "crates/bytes/bytes.h"
#include "fsm/config.h"

namespace petrel::fsm {

// Event 1, or 4 when the peer is configured passive.
struct ManualStart {};
// Event 2: sends Cease with this subcode (RFC 4486) and, for subcodes 2
// and 4, the shutdown communication (RFC 9003) if not empty.
struct ManualStop {
  uint8_t cease_subcode = codec::cease::kAdministrativeShutdown;
  std::string communication;
};
// Event 3, or 5 when passive: the daemon's dialer (re)starting the peer,
// e.g. after its back-off.
struct AutomaticStart {};
// Event 8: the daemon stops the session itself (maximum prefixes, peer
// deconfigured, a failure inside the session's processing): sends Cease
// with this subcode and data.
struct AutomaticStop {
  uint8_t cease_subcode = codec::cease::kOutOfResources;
  std::vector<std::byte> data;
};
// Event 16 (Tcp_CR_Acked): the connection we dialled is up.
struct TcpConnected {};
// Event 17 (TcpConnectionConfirmed): the peer's connection was accepted.
struct TcpAccepted {};
// Event 18: the connection failed or the peer closed it.
struct TcpFailed {};
// Events 9 to 12 and RFC 9687's SendHoldTimer_Expires. The daemon need not
// send these: a Tick fires whichever timers are due.
struct ConnectRetryTimerExpired {};
struct HoldTimerExpired {};
struct KeepaliveTimerExpired {};
struct DelayOpenTimerExpired {};
struct SendHoldTimerExpired {};
// Events 19 and 20 (with the DelayOpenTimer running): a well-formed OPEN.
struct OpenReceived {
  codec::Open open;
};
// Event 26.
struct KeepaliveReceived {};
// Event 27. The body views the framer's buffer; it is handed back in a
// DeliverUpdate action, so the daemon must act before it reads on.
struct UpdateReceived {
  bytes::Span body;
};
// Events 24 (Unsupported Version Number) and 25.
struct NotificationReceived {
  codec::Notification notification;
};
// RFC 2918 / RFC 7313.
struct RouteRefreshReceived {
  codec::RouteRefresh refresh;
};
// Events 21, 22 and 28: the framer or a decoder refused a message. `type`
// is the message's type, or nothing for a framing (header) error. The
// error's data may view the message; it is copied during step().
struct MessageError {
  codec::NotifyError error;
  std::optional<codec::MessageType> type;
};
// Event 23: resolve_collision() chose this connection to close.
struct CollisionDump {};
// RFC 9687: the daemon reports whether bytes are waiting to be written.
// `unsent_since` is the last time the socket accepted bytes while some
// remain unsent, or nothing once everything is written.
struct SendProgress {
  std::optional<Time> unsent_since;
};
// The daemon wrote an UPDATE: RFC 4271 section 8.2.2 (Established) restarts
// the KeepaliveTimer on every KEEPALIVE or UPDATE sent.
struct UpdateSent {};
// Time passed: fires every timer whose deadline is at or before `now`,
// earliest first. Call it when the one timer armed at next_deadline() fires.
struct Tick {};

using Event = std::variant<ManualStart, ManualStop, AutomaticStart, AutomaticStop, TcpConnected,
                           TcpAccepted, TcpFailed, ConnectRetryTimerExpired, HoldTimerExpired,
                           KeepaliveTimerExpired, DelayOpenTimerExpired, SendHoldTimerExpired,
                           OpenReceived, KeepaliveReceived, UpdateReceived, NotificationReceived,
                           RouteRefreshReceived, MessageError, CollisionDump, SendProgress,
                           UpdateSent, Tick>;

// The alternatives of Event, in order, for switches.
enum class EventKind : uint8_t {
  kManualStart,
  kManualStop,
  kAutomaticStart,
  kAutomaticStop,
  kTcpConnected,
  kTcpAccepted,
  kTcpFailed,
  kConnectRetryTimerExpired,
  kHoldTimerExpired,
  kKeepaliveTimerExpired,
  kDelayOpenTimerExpired,
  kSendHoldTimerExpired,
  kOpenReceived,
  kKeepaliveReceived,
  kUpdateReceived,
  kNotificationReceived,
  kRouteRefreshReceived,
  kMessageError,
  kCollisionDump,
  kSendProgress,
  kUpdateSent,
  kTick,
};
inline constexpr size_t kEventKindCount = 22;
static_assert(std::variant_size_v<Event> == kEventKindCount);

inline EventKind event_kind(const Event& e) { return static_cast<EventKind>(e.index()); }
std::string_view event_kind_name(EventKind k);

// Whether the event is a BGP message received (RFC 6608 names these when
// they come unexpectedly).
bool is_message(EventKind k);

// The event for one whole message from the framer: decodes OPEN,
// NOTIFICATION and ROUTE-REFRESH; a decoding error becomes MessageError.
// An UPDATE's body is passed on undecoded (the routing side decodes it with
// the negotiated SessionParams and reports a session reset as a
// MessageError with type kUpdate).
Event event_from_message(const codec::Message& m);

}  // namespace petrel::fsm
