// Graceful restart as the session decides it: which NOTIFICATIONs go out
// as a Hard Reset, whether a session that went down leaves its routes with
// the helper (the receiving speaker), and what the peer's next OPEN says
// about the routes kept. Pure functions of negotiated values; the daemon
// holds the routes and the timers (daemon/peer_graceful.cpp).
//
// RFC 4724 sections 3 and 4.2 (graceful restart, receiving speaker),
// RFC 8538 sections 2 to 5 (the N bit, Hard Reset, which Cease subcodes are
// hard), RFC 9494 section 4.2 (long-lived graceful restart as the helper).
#pragma once

#include <cstdint>

#include "codec/capabilities.h"
#include "codec/notification.h"
#include "codec/types.h"
#include "fsm/actions.h"

namespace petrel::fsm {

struct Negotiated;

// RFC 8538 section 5: the Cease subcodes that end a session for good (sent
// as a Hard Reset when both sides set the N bit): Maximum Number of
// Prefixes Reached, Administrative Shutdown, Peer De-configured, Hard
// Reset itself, and Administrative Reset (the RFC leaves that one to the
// operator; Petrel's resets come from an operator, who wants the routes
// gone). The rest (Connection Rejected, Other Configuration Change,
// Connection Collision Resolution, Out of Resources, BFD Down) are
// graceful.
[[nodiscard]] bool cease_is_hard(uint8_t subcode);

// RFC 8538 section 4: a Hard Reset carries the NOTIFICATION it stands for
// (code, subcode, data) as its data.
[[nodiscard]] codec::Notification hard_reset(const codec::Notification& inner);
[[nodiscard]] bool is_hard_reset(uint8_t code, uint8_t subcode);

// The NOTIFICATION to send on a session: a Cease whose subcode is hard,
// wrapped in a Hard Reset when both sides set the N bit (RFC 8538 section
// 3: a Hard Reset is not sent to a peer that did not set it).
[[nodiscard]] codec::Notification for_session(codec::Notification n, const Negotiated* negotiated);

// Whether a helper keeps the peer's routes (marked stale) when an
// Established session ends this way (RFC 4724 section 4.2, RFC 8538
// section 3): only when both sides sent the graceful restart capability,
// and then
//  - on the loss of the TCP connection (no NOTIFICATION either way);
//  - when a hold timer expired (ours or, RFC 9687, the send hold timer):
//    the peer that stopped talking is the one graceful restart is for, so
//    Petrel keeps its routes whether or not the N bit was exchanged (with
//    it this is RFC 8538's rule);
//  - after any other NOTIFICATION, sent or received, only when both sides
//    set the N bit and it was not a Hard Reset.
[[nodiscard]] bool helper_keeps_routes(const Negotiated& negotiated, DownCause cause, uint8_t code,
                                       uint8_t subcode);

// RFC 4724 section 4.2: once the session is up again, a family keeps its
// stale routes (until the peer's End-of-RIB for it, or the stale timer)
// only when the new OPEN's graceful restart capability lists it with the
// Forwarding State bit set; otherwise they go at once. `again` is the
// peer's new capability as negotiated (nothing when either side left it
// out).
[[nodiscard]] bool keeps_stale_on_return(const std::optional<codec::GracefulRestart>& again, codec::Family f);

// RFC 9494 section 4.2: how long the helper keeps a family's routes as
// long-lived stale routes once the restart time is over: the Long-lived
// Stale Time the peer gave the family (the last entry for it), at most
// `local_limit` (Petrel's long_lived_stale_time). 0: not kept, the family
// did not negotiate LLGR. `gr` and `llgr`: the peer's capabilities as
// negotiated (Negotiated::graceful_restart, long_lived_graceful_restart).
[[nodiscard]] uint32_t long_lived_stale_time(const std::optional<codec::GracefulRestart>& gr,
                                             const std::optional<codec::LongLivedGracefulRestart>& llgr,
                                             codec::Family f, uint32_t local_limit);

// What the helper does with a family's routes when a session goes down
// in a way that keeps them (helper_keeps_routes):
//  - kRestart: kept stale for the restart time (RFC 4724): the peer's
//    graceful restart capability lists the family and its Restart Time is
//    not 0; then long-lived if long_lived_stale_time is not 0;
//  - kLongLived: straight to long-lived stale (RFC 9494 section 4.2: the
//    family has LLGR but the restart time is 0 or does not cover it);
//  - kWithdraw: neither.
enum class KeptAs : uint8_t { kWithdraw, kRestart, kLongLived };
[[nodiscard]] KeptAs kept_as(const std::optional<codec::GracefulRestart>& gr,
                             const std::optional<codec::LongLivedGracefulRestart>& llgr, codec::Family f,
                             uint32_t local_limit);

// RFC 9494 section 4.2 with RFC 4724 section 4.2: once the session is up
// again, a family whose routes are long-lived stale keeps them (until the
// End-of-RIB) only when the new LLGR capability lists it with the
// Forwarding State bit set.
[[nodiscard]] bool keeps_long_lived_on_return(const std::optional<codec::LongLivedGracefulRestart>& again,
                                              codec::Family f);

}  // namespace petrel::fsm
