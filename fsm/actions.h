// What the state machine asks the daemon to do, in order: write bytes, dial
// or close the connection, hand an UPDATE to the routing side, report the
// session up or down. Timer actions say what changed; a daemon that arms one
// timer at Fsm::next_deadline() after each step may ignore them.
#pragma once

#include <cstdint>
#include <string_view>
#include <variant>
#include <vector>

#include "codec/route_refresh.h"
#include "codec/types.h"
#include "crates/bytes/bytes.h"
#include "fsm/config.h"
#include "fsm/events.h"
#include "fsm/state.h"

namespace petrel::fsm {

enum class Timer : uint8_t {
  kConnectRetry,
  kHold,
  kKeepalive,
  kDelayOpen,
  kSendHold,  // RFC 9687
};
inline constexpr size_t kTimerCount = 5;
std::string_view timer_name(Timer t);

// Write a whole message (header included) on the connection.
struct Send {
  codec::MessageType type;
  std::vector<std::byte> bytes;
};
// Dial the peer (RFC 4271: "initiates a TCP connection").
struct Connect {};
// Close the connection after writing what was queued before this action;
// abandon a dial in progress.
struct Disconnect {};
struct TimerArmed {
  Timer timer;
  Time deadline;
};
struct TimerStopped {
  Timer timer;
};
// The peer's OPEN passed the checks (the FSM is now in OpenConfirm): the
// daemon runs resolve_collision() against any other connection to this
// peer.
struct OpenAccepted {
  uint32_t peer_id = 0;
  uint32_t peer_as = 0;
};
// Entered Established; Fsm::negotiated() holds the rest.
struct SessionUp {
  codec::SessionParams params;
};
// An UPDATE for the routing side; views the bytes of the UpdateReceived.
struct DeliverUpdate {
  bytes::Span body;
};
// A ROUTE-REFRESH on a session that negotiated route refresh (one without
// it is closed with Message Header Error / Bad Message Type instead).
struct DeliverRouteRefresh {
  codec::RouteRefresh refresh;
};

enum class DownCause : uint8_t {
  kManualStop,
  kAutomaticStop,
  kTcpFailed,             // connection failed or closed by the peer
  kHoldTimerExpired,      // we sent Hold Timer Expired
  kSendHoldTimerExpired,  // RFC 9687: we sent (or tried) Send Hold Timer Expired
  kNotificationReceived,  // the peer sent code/subcode
  kMessageError,          // the peer's message was malformed; we sent code/subcode
  kOpenRefused,           // the peer's OPEN failed our checks; code/subcode
  kUnexpectedEvent,       // FSM Error (RFC 6608 subcodes) or, before OpenSent, no NOTIFICATION
  kCollision,             // Cease / Connection Collision Resolution
};
std::string_view down_cause_name(DownCause c);

// Entered Idle. From Established, the routing side flushes the peer's
// routes. `code`/`subcode` are those of the NOTIFICATION sent, or received
// for kNotificationReceived; 0 when there was none.
struct SessionDown {
  State from = State::kIdle;
  DownCause cause = DownCause::kTcpFailed;
  bool notification_sent = false;
  uint8_t code = 0;
  uint8_t subcode = 0;
  // From Established: the routing side keeps the peer's routes, marked
  // stale, as a graceful restart helper (fsm/graceful.h).
  bool graceful = false;
};
// A diagnostic: the event did nothing in this state (RFC 4271 says to
// ignore it). Nothing is dropped silently.
struct Ignored {
  State state;
  EventKind event;
};

using Action = std::variant<Send, Connect, Disconnect, TimerArmed, TimerStopped, OpenAccepted, SessionUp,
                            DeliverUpdate, DeliverRouteRefresh, SessionDown, Ignored>;
using Actions = std::vector<Action>;

}  // namespace petrel::fsm
