// A dry run of a policy against the live table (docs/policy.md, "Trying
// a policy"): GET /api/policy/test?peer=NAME&direction=import|export&
// policy=A,B&limit=N, and `petrel policy test` over it. Nothing changes.
//
// Export: for every prefix with a best route in a family the session
// carries, the peer's export gate as it is (its policy) and as it would
// be with the candidate chain: routes the peer would newly get, no longer
// get, or get with other attributes.
//
// Import: the peer's routes as the table holds them (after the current
// import policy's changes: a candidate that matches on what the current
// one sets sees it set) and the routes it refused that are kept
// (peer.keep_refused, as they came): which the candidate would refuse,
// accept, or change. Routes refused and not kept are not seen.
//
// Each shard is read under its lock while its routes are evaluated (a
// full table: tens of milliseconds a shard, during which that shard's
// writers wait); one dry run at a time (a second gets a 503).
#pragma once

#include "daemon/api.h"

namespace petrel::daemon {

class Server;

inline constexpr std::string_view kPolicyTestPath = "/api/policy/test";
api::Response policy_test(const Server& server, std::string_view method, const api::QueryArgs& args);

}  // namespace petrel::daemon
