// Connection collision resolution (RFC 4271 section 6.8, RFC 6286 section
// 2.3): when two TCP connections to the same peer both reach the OPEN
// exchange, exactly one survives, and both speakers pick the same one.
//
// The daemon runs one Fsm per TCP connection. When one of them has taken
// the peer's OPEN (it enters OpenConfirm, so the peer's BGP Identifier is
// known), the daemon calls resolve_collision() with both connections and
// steps the loser with a CollisionDump event, which sends Cease /
// Connection Collision Resolution (subcode 7) and closes it.
#pragma once

#include <cstdint>
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
//    CollisionDetectEstablishedState of section 8.1.1 is off);
//  - otherwise the connection opened by the speaker with the higher BGP
//    Identifier survives; with equal identifiers (possible between ASes,
//    RFC 6286 section 2.3) the one opened by the speaker in the larger AS.
[[nodiscard]] CollisionVerdict resolve_collision(const CollisionInput& in);

}  // namespace petrel::fsm
