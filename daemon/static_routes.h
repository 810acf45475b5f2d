// [[static]] routes: routes Petrel installs in the kernel itself, with a
// next hop, as a blackhole or as unreachable (docs/kernel.md, "Static
// routes").
//
// A second fib::Plan and fib::Driver beside the kernel syncer's, on the
// main loop: the same protocol (RTPROT_BGP, 186) and table ([kernel]
// table), with a metric of their own (kernel.static_metric, by default one
// below kernel.metric, so that the kernel prefers the static route to a
// BGP route of the same prefix). The plan's rules hold as for BGP routes
// (fib/plan.h): a route is ours by protocol, table and metric, nothing else
// is touched; ours found at start-up are reconciled (kept when still
// configured, removed otherwise), and every one is removed at shutdown.
// No nexthop objects (a handful of routes).
//
// A next hop not directly reachable is not installed (counted as
// unresolved) until an interface change makes it so; `interface` names
// the link of a link-local next hop.
#pragma once

#include <ev.h>

#include <memory>
#include <string>
#include <vector>

#include "daemon/config.h"
#include "fib/driver/driver.h"

namespace petrel::daemon {

struct StaticStatus {
  bool running = false;
  uint32_t table = 0, metric = 0;
  fib::PlanCounts counts;
  std::string last_error;
};

class StaticRoutes {
 public:
  StaticRoutes(struct ev_loop* loop, const KernelConfig& kernel, std::vector<StaticRouteConfig> routes);
  ~StaticRoutes();
  StaticRoutes(const StaticRoutes&) = delete;
  StaticRoutes& operator=(const StaticRoutes&) = delete;

  // Opens the driver, dumps the kernel (blocking), installs. False (logged)
  // when the driver cannot open.
  bool start();
  // A reload: the routes are these now (table and metric unchanged).
  void set(std::vector<StaticRouteConfig> routes);
  // Removes every route of ours (shutdown).
  void stop();
  [[nodiscard]] StaticStatus status() const;
  [[nodiscard]] uint32_t table() const { return table_; }
  [[nodiscard]] uint32_t metric() const { return metric_; }

 private:
  void want_all();
  void sync();
  static void on_notify(struct ev_loop*, ev_io* w, int);
  static void on_timer(struct ev_loop*, ev_timer* w, int);

  struct ev_loop* loop_;
  uint32_t table_, metric_;
  std::vector<StaticRouteConfig> routes_;
  std::unique_ptr<fib::Driver> driver_;
  ev_io io_{};
  ev_timer timer_{};
  std::string last_error_, reported_;
};

}  // namespace petrel::daemon
