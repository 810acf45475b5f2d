// Next-hop tracking (docs/kernel.md, "Next-hop resolution"): the table's
// NexthopResolver (table/nexthop.h), owned by the server and created
// before the table. While no kernel syncer feeds it (`[kernel]` off, or
// not started yet) every next hop is resolved at cost 0, as before
// tracking existed. A running syncer attaches its driver's resolver and
// interfaces (fib/resolver.h, fib/interfaces.h); from then on a next hop
// the table meets is answered from them, and after each batch of kernel
// notifications the syncer asks refresh() for the next hops whose state
// changed and hands them to Table::nexthops_changed.
//
// Thread safety: resolve() runs on the table's writer threads; the syncer
// changes the resolver and the interfaces only while it holds update()'s
// lock, under which resolve() waits.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "crates/net/ip.h"
#include "fib/interfaces.h"
#include "fib/resolver.h"
#include "table/nexthop.h"

namespace petrel::daemon {

// One tracked next hop as GET /api/nexthops shows it.
struct NexthopInfo {
  net::IpAddress address;
  table::NexthopState state;
  fib::Resolved resolved;  // how (kUnresolved also while no syncer runs: see `tracking`)
  std::vector<std::string> interfaces;  // resolved.hops' interfaces by name ("" unknown)
};

struct NexthopsStatus {
  bool tracking = false;  // a kernel syncer feeds the tracker
  uint32_t resolve_table = 0;
  bool resolve_via_default = false;
  uint64_t resolve_routes = 0;             // foreign routes mirrored
  uint64_t resolve_routes_over_limit = 0;  // not mirrored (kernel.max_resolve_routes)
  uint64_t untracked = 0;  // next hops answered without being tracked (kMaxTracked)
  std::vector<NexthopInfo> nexthops;
};

class NexthopTracker final : public table::NexthopResolver {
 public:
  // The most next hops tracked; beyond, a next hop is answered but not
  // followed (counted): the table meets next hops from peers' UPDATEs.
  static constexpr size_t kMaxTracked = 1'000'000;

  [[nodiscard]] table::NexthopState resolve(const net::IpAddress& next_hop) const override;

  // The syncer's: under this lock it may change what it attached.
  [[nodiscard]] std::unique_lock<std::mutex> update() const { return std::unique_lock(mu_); }
  // Attaches a syncer's resolver and interfaces (owner: a tag for
  // detach()); returns the next hops whose state changed. Under update().
  // Several syncers may be attached (a reload starts one beside the
  // running one): the last attached answers.
  std::vector<table::NexthopUpdate> attach(const void* owner, const fib::Resolver* r, const fib::Interfaces* ifs,
                                           const std::unique_lock<std::mutex>& held);
  // Every tracked next hop worked out again; those that changed. Under update().
  std::vector<table::NexthopUpdate> refresh(const std::unique_lock<std::mutex>& held);
  // The syncer `owner` stops feeding: the one attached before it answers
  // again (if it is still attached), else every next hop is resolved at
  // cost 0 again; returns those that changed.
  std::vector<table::NexthopUpdate> detach(const void* owner);

  [[nodiscard]] NexthopsStatus status() const;

 private:
  struct Tracked {
    table::NexthopState state;
    fib::Resolved resolved;
  };
  [[nodiscard]] Tracked work_out(const net::IpAddress& a) const;  // under mu_

  struct Source {
    const void* owner;
    const fib::Resolver* resolver;
    const fib::Interfaces* ifs;
  };
  void use_last();  // resolver_, ifs_: the last attached source's (none: null)

  mutable std::mutex mu_;
  std::vector<Source> sources_;  // in attach order
  const fib::Resolver* resolver_ = nullptr;
  const fib::Interfaces* ifs_ = nullptr;
  mutable std::unordered_map<net::IpAddress, Tracked> tracked_;
  mutable uint64_t untracked_ = 0;
};

}  // namespace petrel::daemon
