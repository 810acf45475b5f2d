// Routes from the kernel into BGP ([[originate]] with from_kernel = true,
// docs/kernel.md, "Routes from the kernel"): which of the kernel's routes
// are announced, worked out from the routes the kernel reports (a dump,
// then RTM_NEWROUTE/RTM_DELROUTE notifications: daemon/kernel_watch.h).
// Pure: fed fib::Route values, it says which prefixes to announce (with
// which entry's attributes) and which to withdraw.
//
// A kernel route is known by its table, prefix and metric (the kernel's
// own key, type of service aside). It counts for an entry when its table
// is the entry's, its protocol one of the entry's, its type a unicast,
// blackhole, unreachable or prohibit route, its prefix in one of the
// entry's ranges, and its protocol not RTPROT_BGP (186: Petrel's own
// routes, never announced again). A prefix is announced while at least one
// kernel route counts for it, with the attributes of the first entry (in
// file order) it counts for.
//
// Bounded: an entry takes at most max_prefixes prefixes; a route that
// would take one more is refused and counted (refused()), and is not taken
// later by itself when room comes back: the next full dump (a reload, or a
// lost notification) looks again.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "crates/net/ip.h"
#include "daemon/config.h"
#include "fib/netlink.h"
#include "fib/plan.h"

namespace petrel::daemon {

inline constexpr uint8_t kRtProtBgp = 186;

// "static" -> 4, "42" -> 42; the names of <linux/rtnetlink.h> and of
// /etc/iproute2/rt_protos (and /usr/share/iproute2/rt_protos).
std::optional<uint8_t> rt_protocol_number(std::string_view name);
// The name of <linux/rtnetlink.h> for a number, or the number as text.
std::string rt_protocol_name(uint8_t number);

// What the [[static]] installer's plan wants for a route (daemon/
// static_routes.h); ifindex: its interface's (0: none or not known).
fib::Want static_want(const StaticRouteConfig& r, uint32_t ifindex);
// The [[static]] installer's plan: kernel.table, kernel.static_metric,
// protocol 186, and a range of nexthop object ids of its own beside the
// BGP plan's, so that the BGP routes' objects its start-up dump finds are
// another's to it (never used, never deleted), not ours and unused.
fib::PlanOptions static_plan_options(const KernelConfig& k);

class KernelOrigins {
 public:
  explicit KernelOrigins(std::vector<KernelOriginConfig> entries);

  // What changed for a prefix: announced with entries()[*entry]'s
  // attributes, or withdrawn (nullopt).
  struct Change {
    net::Prefix prefix;
    std::optional<size_t> entry;
  };
  // The kernel added or replaced a route (present) or deleted it.
  void route(const fib::Route& r, bool present, std::vector<Change>& out);
  // Every route forgotten (each announced prefix withdrawn): before a new
  // full dump is fed in.
  void clear(std::vector<Change>& out);

  // Whether a route counts for entry i.
  [[nodiscard]] bool matches(size_t i, const fib::Route& r) const;
  [[nodiscard]] const std::vector<KernelOriginConfig>& entries() const { return entries_; }
  // The prefixes announced now, with their entry.
  [[nodiscard]] const std::map<net::Prefix, size_t>& announced() const { return announced_; }
  [[nodiscard]] uint64_t refused() const { return refused_; }
  // The routes refused by max_prefixes since the last call.
  uint64_t take_new_refusals() { return std::exchange(new_refusals_, 0); }

 private:
  using Key = std::pair<uint32_t, uint32_t>;  // table, metric
  void settle(const net::Prefix& p, std::vector<Change>& out);

  std::vector<KernelOriginConfig> entries_;
  // By entry: its prefixes and, for each, the kernel routes that count.
  std::vector<std::map<net::Prefix, std::set<Key>>> held_;
  std::map<net::Prefix, size_t> announced_;
  uint64_t refused_ = 0, new_refusals_ = 0;
};

}  // namespace petrel::daemon
