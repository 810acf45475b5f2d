// The kernel syncer: keeps the kernel's routes equal to the routing
// table's best routes (docs/kernel.md). It follows the table's journals
// (table::Table::follow/read) and drives fib/'s plan and driver.
//
// Thread: its own (DESIGN.md, "Threads"). Installing a full table takes
// the kernel seconds of system time inside sendmsg, and the driver waits
// for each batch's acks; on the main loop that would stall the HTTP API's
// and the sessions' hand-offs. The thread polls the table's journals and
// the link/address notification socket every few milliseconds when idle.
//
// With `multipath`, a prefix's routes that are multipath-equal to the best
// (table/multipath.h) become one route with a next hop each.
//
// What it does not do yet (said in docs/kernel.md): a next hop further than
// one link is counted as unresolved, never installed; IPv6 link-local next
// hops are unresolved (the table does not say which interface a route was
// learnt on).
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "daemon/config.h"
#include "fib/driver.h"
#include "table/table.h"

namespace petrel::daemon {

struct KernelInterface {
  uint32_t index = 0;
  std::string name;
  bool up = false;
  std::vector<std::string> addresses;  // "10.0.0.1/24"
};

// What the syncer shows (GET /api/kernel, metrics).
struct KernelStatus {
  bool enabled = false;
  bool running = false;
  uint32_t table = 0, metric = 0;
  bool multipath = false;
  bool removals_allowed = false;  // stale routes of an earlier run go
  std::string last_error;         // the driver's last error, or the last refusal
  fib::PlanCounts counts;
  fib::DriverStats stats;
  uint64_t table_resyncs = 0;     // journal overruns (the table read again)
  std::vector<KernelInterface> interfaces;
};

class KernelSyncer {
 public:
  KernelSyncer(const KernelConfig& config, const table::Table& table);
  ~KernelSyncer();
  KernelSyncer(const KernelSyncer&) = delete;
  KernelSyncer& operator=(const KernelSyncer&) = delete;

  void start();
  // Removes every route of ours from the kernel and joins the thread.
  void stop();
  [[nodiscard]] KernelStatus status() const;

 private:
  void run();
  void publish(const fib::Driver& d, bool running);
  // The gateways of p's routes that are multipath-equal to its best (none:
  // no best, or none with a gateway).
  [[nodiscard]] fib::Want multipath_want(table::FamilyIndex f, const net::Prefix& p) const;

  KernelConfig config_;
  const table::Table& table_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;
  KernelStatus status_;
  std::string last_error_;
  uint64_t table_resyncs_ = 0;
  bool removals_ = false;
};

}  // namespace petrel::daemon
