// Next-hop resolution against the kernel's routes (docs/kernel.md,
// "Next-hop resolution"). Pure: a mirror of the foreign routes of one
// kernel table (kernel.resolve_table, main by default), fed the same
// RTM_NEWROUTE/RTM_DELROUTE messages as the plan (a dump, then
// notifications), and the question the plan and the table ask of it: how
// is this BGP next hop reached?
//
// - directly connected: in a network of an interface that is up
//   (fib/interfaces.h), reached through that interface, cost 0;
// - recursive: through the longest-matching foreign route of the table
//   whose type is unicast and one of whose next hops is on a link that is
//   up: its gateways and interfaces (all of them, ECMP), or the next hop
//   itself on the route's device for a route without a gateway; cost: the
//   route's metric (RTA_PRIORITY). Among routes of one prefix the lowest
//   metric is used; one whose links are all down is skipped (the kernel
//   skips dead next hops the same way);
// - unresolved: no such route, or the longest match is a blackhole,
//   unreachable, prohibit or throw route.
//
// Never through Petrel's own routes: routes of its protocol (RTPROT_BGP)
// are not mirrored, whatever their table. The default route (/0) is used
// only with ResolverOptions::via_default: a default route reaches
// everything, so every next hop would resolve and a dead BGP next hop
// would never leave best path.
//
// Memory: at most max_routes routes are mirrored (a hostile or huge
// kernel table); one beyond is not, and is counted (over_limit()).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "crates/net/ip.h"
#include "fib/interfaces.h"
#include "fib/netlink.h"

namespace petrel::fib {

struct ResolverOptions {
  uint32_t table = 254;     // RT_TABLE_MAIN
  uint8_t own_protocol = 186;  // RTPROT_BGP: never resolved through
  bool via_default = false;
  size_t max_routes = 1'000'000;
};

enum class Resolution : uint8_t { kConnected, kRecursive, kUnresolved };
const char* to_string(Resolution r);

struct Resolved {
  Resolution how = Resolution::kUnresolved;
  std::vector<NextHop> hops;  // sorted, with a gateway each (none: unresolved)
  uint32_t metric = 0;        // the route's metric; 0 connected
  std::optional<net::Prefix> via;  // the kernel route it resolves through (recursive)
  [[nodiscard]] bool resolved() const { return how != Resolution::kUnresolved; }
  friend bool operator==(const Resolved&, const Resolved&) = default;
};

class Resolver {
 public:
  explicit Resolver(ResolverOptions o = {}) : o_(o) {}
  [[nodiscard]] const ResolverOptions& options() const { return o_; }

  // Applies one message (routes of the table; others are ignored). True
  // when what resolve() answers may have changed.
  bool apply(const Message& m);
  // Forgets every route (before the table is dumped again).
  void clear();
  // Link ifindex was set down (IFF_UP cleared) or deleted: the kernel
  // removes the routes whose next hops are all on it, without a
  // notification; so does the mirror. True if any went.
  bool link_gone(uint32_t ifindex);

  // How next_hop is reached; via_ifindex: the interface the route was
  // learnt on (0: unknown), which a link-local next hop needs.
  [[nodiscard]] Resolved resolve(const net::IpAddress& next_hop, uint32_t via_ifindex, const Interfaces& ifs) const;

  [[nodiscard]] size_t routes() const { return count_; }
  // Routes not mirrored because max_routes were (each time one came).
  [[nodiscard]] uint64_t over_limit() const { return over_limit_; }

 private:
  struct Foreign {
    uint32_t metric = 0;
    uint8_t type = 0;  // RTN_*
    std::vector<NextHop> hops;
  };
  static size_t fi(net::IpFamily f) { return f == net::IpFamily::V4 ? 0 : 1; }

  ResolverOptions o_;
  // By prefix, sorted by metric (the key the kernel tells routes of a
  // table apart by: prefix and metric).
  std::unordered_map<net::Prefix, std::vector<Foreign>> routes_;
  std::array<std::array<uint32_t, 129>, 2> lens_{};  // prefixes held per family and length
  size_t count_ = 0;
  uint64_t over_limit_ = 0;
};

}  // namespace petrel::fib
