// Connection collision resolution: RFC 4271 section 6.8, RFC 6286 section 2.3;
// replacing an incoming connection that never received an OPEN.
#include "fsm/collision.h"

namespace petrel::fsm {

namespace {

// Whether a connection takes part in collision detection.
bool in_exchange(State s, bool examine_open_sent) {
  switch (s) {
    case State::kIdle:
    case State::kConnect:
    case State::kActive: return false;
    case State::kOpenSent: return examine_open_sent;
    case State::kOpenConfirm:
    case State::kEstablished: return true;
  }
  return false;
}

}  // namespace

std::string_view collision_verdict_name(CollisionVerdict v) {
  switch (v) {
    case CollisionVerdict::kNoCollision: return "no-collision";
    case CollisionVerdict::kCloseFirst: return "close-first";
    case CollisionVerdict::kCloseSecond: return "close-second";
  }
  return "unknown";
}

CollisionVerdict resolve_collision(const CollisionInput& in) {
  const ConnectionView& a = in.first;
  const ConnectionView& b = in.second;
  if (!in_exchange(a.state, in.examine_open_sent) || !in_exchange(b.state, in.examine_open_sent))
    return CollisionVerdict::kNoCollision;
  bool a_up = a.state == State::kEstablished;
  bool b_up = b.state == State::kEstablished;
  if (a_up != b_up) {
    if (in.graceful_restart) return a_up ? CollisionVerdict::kCloseFirst : CollisionVerdict::kCloseSecond;
    return a_up ? CollisionVerdict::kCloseSecond : CollisionVerdict::kCloseFirst;
  }
  // Two connections opened the same way cannot be told apart by who opened
  // them: keep the older (the first).
  if (a_up || a.direction == b.direction) return CollisionVerdict::kCloseSecond;

  bool remote_wins;
  if (in.local_id != in.remote_id) {
    remote_wins = in.local_id < in.remote_id;
  } else if (in.local_as != in.remote_as) {
    remote_wins = in.local_as < in.remote_as;
  } else {
    return CollisionVerdict::kCloseSecond;  // the OPEN check refuses this peer anyway
  }
  // The winner's connection is the one the winner opened.
  Direction keep = remote_wins ? Direction::kIncoming : Direction::kOutgoing;
  return a.direction == keep ? CollisionVerdict::kCloseSecond : CollisionVerdict::kCloseFirst;
}

std::string_view incoming_verdict_name(IncomingVerdict v) {
  switch (v) {
    case IncomingVerdict::kAccept: return "accept";
    case IncomingVerdict::kReplaceExisting: return "replace-existing";
    case IncomingVerdict::kRefuseNew: return "refuse-new";
    case IncomingVerdict::kRestartExisting: return "restart-existing";
  }
  return "unknown";
}

IncomingVerdict admit_incoming(std::optional<State> existing, bool graceful) {
  if (!existing) return IncomingVerdict::kAccept;
  switch (*existing) {
    case State::kIdle: return IncomingVerdict::kAccept;
    case State::kConnect:
    case State::kActive:
    case State::kOpenSent: return IncomingVerdict::kReplaceExisting;
    case State::kOpenConfirm: return IncomingVerdict::kRefuseNew;
    case State::kEstablished: return graceful ? IncomingVerdict::kRestartExisting : IncomingVerdict::kRefuseNew;
  }
  return IncomingVerdict::kRefuseNew;
}

}  // namespace petrel::fsm
