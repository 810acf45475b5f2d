// The kernel syncer: keeps the kernel's routes equal to the routing
// table's best routes (docs/kernel.md). It follows the table's journals
// (table::Table::follow/read) and drives fib/'s plan and driver.
//
// Thread: its own (docs/DESIGN.md, "Threads"). Installing a full table takes
// the kernel seconds of system time inside sendmsg, and the driver waits
// for each batch's acks; on the main loop that would stall the HTTP API's
// and the sessions' hand-offs. When idle, the thread waits in poll() on
// the link/address notification socket and an eventfd the table's writers
// wake (table::Table::subscribe), at most a second (kSafetyWait) or until
// the next thing due (a status update, the stale routes' grace, retries).
//
// With `multipath`, a prefix's routes that are multipath-equal to the best
// (table/multipath.h) become one route with a next hop each.
//
// An IPv6 link-local next hop (RFC 2545: the only address of a 16-octet
// MP_REACH_NLRI next hop, or the second of 32 octets when the global one
// is not directly reachable) is installed on the interface of the session
// the route came from: the one a peer configured as "fe80::2%veth0"
// names; for a peer with a global address, the interface that holds its
// local_address, else the one its address is directly reachable through.
//
// A next hop further than one link is installed through the kernel route
// that resolves it (fib/resolver.h, kernel.resolve_table), and the syncer
// feeds the server's next-hop tracker (daemon/nexthops.h): after each
// batch of kernel notifications, the next hops whose state changed go to
// Table::nexthops_changed.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <memory>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "daemon/config.h"
#include "daemon/nexthops.h"
#include "fib/driver/driver.h"
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
  bool nexthop_objects = false;   // routes refer to kernel nexthop objects
  bool removals_allowed = false;  // stale routes of an earlier run go
  std::vector<std::string> deferred;  // families whose changes wait (Petrel's own restart)
  std::string last_error;         // the driver's last error, or the last refusal
  // Every change read from the table since start is in the kernel:
  // the first read of the table is in the plan and nothing is pending
  // (the syncer a reload started may now replace the one before it).
  bool caught_up = false;
  fib::PlanCounts counts;
  fib::DriverStats stats;
  uint64_t table_resyncs = 0;     // journal overruns (the table read again)
  uint64_t queued = 0;            // changes read from the table, not yet in the plan (in counts.pending)
  // The syncer thread's time (steady clock, nanoseconds) outside the
  // driver's sync() (whose split is in stats): reading the journals and
  // turning changes into wishes, and waiting (idle, in poll).
  uint64_t read_ns = 0, wait_ns = 0;
  std::vector<KernelInterface> interfaces;
};

// Petrel's own graceful restart, as KernelSyncer::start() takes it.
struct KernelRestart {
  bool graceful = false;            // [router] graceful_restart
  uint32_t deferral_seconds = 360;  // [router] selection_deferral_time
  // Started by a reload (daemon/server_sections.cpp), not at start-up:
  // the table is complete and its sessions will not send End-of-RIB
  // again, so nothing is deferred and Petrel's own restart is not
  // touched; the kernel dump runs on the syncer's thread (start() does
  // not block); routes of ours found in the kernel that the table does
  // not want go as soon as the first read of the table is in the plan.
  // kInPlace: no other syncer runs (the one before stopped keeping its
  // routes, which are found and taken over, nexthop objects too).
  // kBeside: the syncer before runs on, in another table or with another
  // metric, until this one has caught up: the nexthop objects found are
  // its, never used nor deleted by this one (fib::PlanOptions).
  enum class Reload : uint8_t { kNo, kInPlace, kBeside };
  Reload reload = Reload::kNo;
};

class KernelSyncer {
 public:
  // peers: the configured peers (their interfaces, for link-local next hops).
  // nexthops: the server's tracker, fed while the thread runs (null: none).
  KernelSyncer(const KernelConfig& config, table::Table& table, const std::vector<PeerConfig>& peers = {},
               NexthopTracker* nexthops = nullptr);
  ~KernelSyncer();
  KernelSyncer(const KernelSyncer&) = delete;
  KernelSyncer& operator=(const KernelSyncer&) = delete;

  // Opens the netlink sockets and dumps the kernel (blocking: the routes
  // of ours found are known when it returns), then starts the thread.
  // With `restart` (graceful restart on in [router]) and routes of ours
  // found for a family, that family's kernel changes are deferred
  // (RFC 4724 section 4.1: daemon/restart.h) until the peers' End-of-RIB
  // markers or `deferral_seconds`; the R and F bits follow.
  void start(KernelRestart restart = {});
  // Joins the thread; kRemove: every route of ours leaves the kernel
  // first; kKeep: they stay (a restart follows, docs/graceful-restart.md).
  enum class Stop : uint8_t { kRemove, kKeep };
  void stop(Stop how = Stop::kRemove);
  // stop() without the wait: the thread removes (or keeps) the routes and
  // ends on its own; finished() says when (then stop() returns at once).
  void request_stop(Stop how = Stop::kRemove);
  [[nodiscard]] bool finished() const { return finished_.load(std::memory_order_acquire); }
  [[nodiscard]] const KernelConfig& config() const { return config_; }
  [[nodiscard]] KernelStatus status() const;
  // The configured peers changed (a reload): link-local next hops are
  // worked out again from these. Any thread.
  void set_peers(const std::vector<PeerConfig>& peers);

 private:
  // set_peers()'s list taken in (the syncer's thread).
  void adopt_peers();
  void open_driver(KernelRestart restart);
  void run();
  // Ends the restart deferral of the families settled (daemon/restart.h)
  // before the round's journal read, all of whose wishes are in the plan
  // (`settled`, by family: IPv4, IPv6), or, after a start that was no
  // graceful restart, allows removals once grace_over.
  void settle_restart(fib::Driver& d, bool grace_over, std::array<bool, 2> settled);
  // A family released by settle_restart whose kernel changes are all
  // done (idle: the plan has nothing waiting), or that has waited
  // kForwardingWait: its sessions' UPDATEs may go (OwnRestart::kernel_updated).
  void report_updated(bool idle);
  // Ends the thread's wait (from a table writer's thread, or stop()).
  void wake() const;
  void publish(const fib::Driver& d, bool running);
  // The gateways of p's routes that are multipath-equal to its best (none:
  // no best, or none with a gateway).
  [[nodiscard]] fib::Want multipath_want(table::FamilyIndex f, const net::Prefix& p, const fib::Interfaces& ifs);
  // The interface of the session a route came from (0: unknown), by the
  // peer's table slot; worked out again when the interfaces change.
  uint32_t session_ifindex(const table::RouteView& v, const fib::Interfaces& ifs);

  // What a link-local next hop needs of a configured peer.
  struct SessionLink {
    std::string interface;  // a link-local peer's
    std::optional<net::IpAddress> local_address;
    net::IpAddress address;
  };
  struct SlotLink {  // session_ifindex()'s answer for a slot
    std::string peer;  // the slot's peer then (slots are reused)
    uint64_t generation = 0;
    uint32_t ifindex = 0;
  };

  KernelConfig config_;
  table::Table& table_;  // non-const: next hops' changes go to it
  NexthopTracker* nexthops_ = nullptr;
  // Hands the tracker's changes to the table (none: nothing).
  void tell_table(const std::vector<table::NexthopUpdate>& changed);
  bool resolve_limit_logged_ = false;
  std::unique_ptr<fib::Driver> driver_;  // from start(); the thread's
  std::vector<PeerConfig> peers_;        // the configured peers (restart deferral)
  bool restarting_ = false;              // some family deferred at start
  // Released families (IPv4, IPv6) whose kernel changes are still going in,
  // since when.
  std::array<std::optional<std::chrono::steady_clock::time_point>, 2> updating_{};
  KernelRestart::Reload reload_ = KernelRestart::Reload::kNo;
  bool began_restart_ = false;           // own_restart() calls our wake
  bool first_read_ = false;              // the thread's: the first read of the table is in the plan
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> keep_{false};
  std::atomic<bool> finished_{false};  // the thread's last step is done (or it never ran)
  int wake_fd_ = -1;  // an eventfd, from start(); -1: none (the thread then polls every kIdleWaitMs)
  mutable std::mutex mu_;
  KernelStatus status_;
  std::string last_error_;
  uint64_t table_resyncs_ = 0;
  uint64_t queued_ = 0;  // the run loop's wishes not yet applied to the plan
  uint64_t read_ns_ = 0, wait_ns_ = 0;
  bool removals_ = false;
  std::unordered_map<std::string, SessionLink> links_;  // by peer name
  std::vector<SlotLink> slot_links_;                     // by table slot (the syncer's thread)
  std::mutex links_mu_;
  std::optional<std::unordered_map<std::string, SessionLink>> next_links_;  // set_peers()'s, under links_mu_
  std::atomic<bool> links_changed_{false};
  uint64_t interfaces_generation_ = 1;                   // + 1 at each change of the interfaces
};

}  // namespace petrel::daemon
