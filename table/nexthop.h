// Next hops as the table sees them: whether a route's NEXT_HOP resolves
// (RFC 4271 section 9.1.2.1: a route whose next hop does not is excluded
// from best path) and the interior cost to it (9.1.2.2 (e)). The table
// asks a NexthopResolver when it first meets a next hop; whoever follows
// the kernel (daemon/) tells it of later changes with
// Table::nexthops_changed, which re-decides the routes using them in bulk.
#pragma once

#include <cstdint>

#include "crates/net/ip.h"

namespace petrel::table {

struct NexthopState {
  bool resolved = true;
  uint32_t cost = 0;  // the interior cost (the kernel route's metric); lower wins
  friend bool operator==(const NexthopState&, const NexthopState&) = default;
};

// One next hop's new state, for Table::nexthops_changed.
struct NexthopUpdate {
  net::IpAddress address;
  NexthopState state;
};

// Thread-safe: the table asks it from its writers' threads, under its own
// locks, only when a next hop is first met (it must be quick and must not
// call into the table).
class NexthopResolver {
 public:
  virtual ~NexthopResolver() = default;
  [[nodiscard]] virtual NexthopState resolve(const net::IpAddress& next_hop) const = 0;
};

}  // namespace petrel::table
