// Connection collision resolution (RFC 4271 section 6.8, RFC 6286 section
// 2.3): when two TCP connections to the same peer both reach the OPEN
// exchange, exactly one survives, and both speakers pick the same one.
//
// The daemon runs one Fsm per TCP connection. When one of them has taken
// the peer's OPEN (it enters OpenConfirm, so the peer's BGP Identifier is
// known), the daemon calls resolve_collision() with both connections and
// steps the loser with a CollisionDump event, which sends Cease /
// Connection Collision Resolution (subcode 7) and closes it.
//
// Before that, admit_incoming() decides what a new connection from the
// peer's address does to an earlier incoming one: a connection that never
// received an OPEN must not keep the real peer out until its open-hold
// time runs out (a silent connect from a spoofed or stale source).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "fsm/state.h"

namespace petrel::fsm {

// Who opened the TCP connection.
enum class Direction : uint8_t { kOutgoing, kIncoming };

struct ConnectionView {
  State state = State::kIdle;
  Direction direction = Direction::kOutgoing;
};

struct CollisionInput {
  ConnectionView first;
  ConnectionView second;
  uint32_t local_id = 0;
  uint32_t remote_id = 0;  // from the peer's OPEN
  uint32_t local_as = 0;
  uint32_t remote_as = 0;
  // RFC 4271 section 6.8 lets a speaker also examine a connection in
  // OpenSent when it knows the peer's identifier by other means.
  bool examine_open_sent = false;
  // The Established connection's session negotiated graceful restart (the
  // peer sent the capability). A new connection from the peer that gets
  // as far as its OPEN then means that the peer restarted and the old
  // connection is dead to it (RFC 4724 section 4.2): the Established one
  // is closed, as if its TCP connection had failed, so that its routes are
  // kept stale, and the new one goes on.
  bool graceful_restart = false;
};

enum class CollisionVerdict : uint8_t {
  kNoCollision,  // keep both: at most one of them is past OpenSent
  kCloseFirst,
  kCloseSecond,
};
std::string_view collision_verdict_name(CollisionVerdict v);

// Which connection to close, if any:
//  - a connection still in Idle, Connect or Active collides with nothing;
//  - an Established connection wins against any other (the optional
//    CollisionDetectEstablishedState of section 8.1.1 is off), unless it
//    negotiated graceful restart (graceful_restart above): then it loses;
//  - otherwise the connection opened by the speaker with the higher BGP
//    Identifier survives; with equal identifiers (possible between ASes,
//    RFC 6286 section 2.3) the one opened by the speaker in the larger AS.
[[nodiscard]] CollisionVerdict resolve_collision(const CollisionInput& in);

enum class IncomingVerdict : uint8_t {
  kAccept,           // no earlier incoming connection (or one already closed)
  kReplaceExisting,  // close the earlier one (it never got an OPEN) and take the new one
  kRefuseNew,        // the earlier one holds the peer's OPEN: keep it, close the new one
  // The earlier one is Established with graceful restart negotiated: the
  // peer restarted (RFC 4724 section 4.2). Close it as if its TCP
  // connection had failed (its routes stay, stale) and take the new one.
  kRestartExisting,
};
std::string_view incoming_verdict_name(IncomingVerdict v);

// A new incoming connection from a peer while `existing` (the state of the
// earlier incoming connection from the same peer, nothing when there is
// none) is open. An earlier connection that has not received an OPEN
// (Connect, Active, OpenSent) is replaced: the daemon stops it with
// AutomaticStop / Cease Connection Rejected (RFC 4486 section 4), which
// the FSM sends only if our OPEN went out (RFC 4271 section 8.2.2). One
// that has (OpenConfirm, Established) is kept and the new connection
// closed, as RFC 4271 section 6.8 does with a connection that collides
// with an Established one; our outgoing connection is not affected and
// goes through resolve_collision() as before. graceful: the existing
// connection's session negotiated graceful restart (kRestartExisting).
[[nodiscard]] IncomingVerdict admit_incoming(std::optional<State> existing, bool graceful = false);

}  // namespace petrel::fsm
