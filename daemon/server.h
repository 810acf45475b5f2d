// The daemon's main loop: configuration, signals, listeners, and the
// session workers that the peers live on (docs/DESIGN.md, "Threads").
//
// Listeners accept only configured peers' addresses (address and, for
// link-local IPv6, interface); others are closed at once, counted and
// logged at a bounded rate. SIGTERM and SIGINT send every peer a Cease /
// Administrative Shutdown with the configured RFC 9003 message and end
// with status 0; a fatal error in a core component does the same and ends
// with status 1. SIGHUP reloads the configuration file: what can change
// live is applied, the rest is logged as needing a restart (reload();
// the sections [kernel], [rpki], [http], [log]: server_sections.cpp).
#pragma once

#include <ev.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "daemon/bmp.h"
#include "daemon/config.h"
#include "daemon/control.h"
#include "daemon/history.h"
#include "daemon/kernel.h"
#include "daemon/kernel_origin.h"
#include "daemon/kernel_watch.h"
#include "daemon/origin_api.h"
#include "daemon/static_routes.h"
#include "daemon/log.h"
#include "daemon/mrt_dump.h"
#include "daemon/mrt_api.h"
#include "daemon/mrt_log.h"
#include "daemon/peer.h"
#include "daemon/rpki.h"
#include "daemon/sockets.h"
#include "daemon/worker.h"
#include "table/table.h"

namespace petrel::daemon {

struct ServerOptions {
  unsigned workers = 0;  // 0: one per core
  // RFC 9003 text when a peer's shutdown_message is "": none, so the Cease
  // carries no data (some peers, ExaBGP 4.2, cannot decode the text).
  std::string shutdown_message;
  std::string config_path;  // read again on SIGHUP; empty: no reload
  // Runs once the listeners and the control socket are open, before any
  // thread starts (the privilege drop, daemon/privileges.h); false (it
  // logged why) stops the start.
  std::function<bool()> after_bind;
  // [http] changed on reload: the HTTP server (run.cpp's) takes the new
  // configuration and returns why it could not, empty when it did (then
  // the old listener stays). Unset: [http] needs a restart.
  std::function<std::string(const Config&)> reload_http;
  // --log-format, --log-level: they win over [log], on reload too.
  std::optional<LogFormat> log_format;
  std::optional<LogLevel> log_level;
};

class Server {
 public:
  Server(Config config, ServerOptions options);
  ~Server();

  // Binds the listeners and starts the workers and peers. False (with a
  // log line saying why) when a listener cannot be opened.
  bool start();
  // Runs the main loop until a signal or a fatal error; the exit status.
  int run();
  // Reads the configuration file again (main loop; SIGHUP). An invalid
  // file changes nothing and its errors are logged. Otherwise peers
  // (added, removed, reset or updated: reload_peers), their policies
  // (import, export, the [[filter]]s they name, allow_own_as,
  // router.rfc8212), [[originate]], [kernel], [rpki], [http] and [log]
  // change live (apply_sections), and every other change is logged by key
  // as taking effect at the next restart (docs/export.md, "Reload";
  // docs/operations.md, "Reloads"). False when the file was not valid.
  // errors: the file's errors when it was not valid (the control socket
  // answers with them).
  bool reload(std::vector<std::string>* errors = nullptr);

 private:
  // The sections of `next` that change live, each as its part allows:
  // [kernel], [rpki], [http], [log] (daemon/server_sections.cpp,
  // docs/operations.md "Reloads"); what cannot goes to plan.restart_keys.
  void apply_sections(const Config& next, ReloadPlan& plan);

 public:
  // One request from the control socket (main loop); its answer line.
  std::string control(const control::ControlRequest& request);

  // The peers now (a copy: a reload adds and removes peers). Any thread.
  [[nodiscard]] std::vector<std::shared_ptr<Peer>> peers() const;
  [[nodiscard]] uint64_t refused_connections() const { return refused_.load(); }
  [[nodiscard]] const table::Table& table() const { return table_; }
  [[nodiscard]] const table::ExportGroups& export_groups() const { return export_groups_; }
  [[nodiscard]] const VrpStore& vrps() const { return vrps_; }
  [[nodiscard]] uint32_t asn() const { return config_.router.asn; }  // constant while running
  // The configuration's [[policy]]s and [[filter]]s (as policies), as the
  // last reload left them, for dry runs (GET /api/policy/test). Any thread.
  [[nodiscard]] std::shared_ptr<const std::vector<table::PolicyDef>> named_policies() const {
    std::lock_guard lock(sections_mu_);
    return named_policies_;
  }
  // For the HTTP threads (a reload replaces these parts on the main loop):
  // the RPKI caches' status (nullopt: RPKI is off, no [[rpki.cache]]) and
  // the kernel syncer's (nullopt: [kernel] is off).
  [[nodiscard]] std::optional<std::vector<RpkiCacheStatus>> rpki_status() const {
    std::lock_guard lock(sections_mu_);
    if (!rpki_) return std::nullopt;
    return rpki_->status();
  }
  [[nodiscard]] SlurmStatus rpki_slurm() const {
    std::lock_guard lock(sections_mu_);
    return rpki_ ? rpki_->slurm_status() : SlurmStatus{};
  }
  [[nodiscard]] bool rpki_reject_invalid() const { return table_.reject_invalid(); }
  // Routes from the kernel, [[static]] routes and link-down endings
  // (GET /api/kernel/origin). Any thread.
  [[nodiscard]] OriginStatus origin_status() const {
    std::lock_guard lock(sections_mu_);
    return origin_status_;
  }
  // The BMP stations (empty: no [[bmp]]). Any thread.
  // The periodic dumps and the UPDATE log (GET /api/mrt). Any thread.
  [[nodiscard]] MrtStatus mrt_status() const;
  [[nodiscard]] std::vector<BmpStationStatus> bmp_status() const {
    return bmp_ ? bmp_->status() : std::vector<BmpStationStatus>{};
  }
  // The last hour's samples of the peers and the table (GET /api/history,
  // the status page's charts). Any thread.
  [[nodiscard]] const History& history() const { return history_; }
  // The next hops the table met and how the kernel resolves them (GET
  // /api/nexthops). Any thread.
  [[nodiscard]] NexthopsStatus nexthops_status() const { return nexthops_.status(); }
  [[nodiscard]] std::optional<KernelStatus> kernel_status() const {
    std::lock_guard lock(sections_mu_);
    if (!kernel_) return std::nullopt;
    return kernel_->status();
  }

 private:
  struct Listener {
    Server* server;
    int fd;
    ev_io io;
    SocketAddress where;
    // accept() ran out of descriptors (EMFILE, ENFILE): the watcher rests
    // until this fires, instead of waking at once for the same backlog.
    ev_timer rest{};
  };

  static void on_accept(struct ev_loop*, ev_io* w, int);
  static void on_signal(struct ev_loop*, ev_signal* w, int);
  static void on_watchdog(struct ev_loop*, ev_timer* w, int);
  void accept_from(Listener& l);
  static void on_listener_rested(struct ev_loop*, ev_timer* w, int);
  // The peers' TCP MD5 and TCP-AO keys on a listener of their family, and
  // for GTSM peers the SYN kept (its TTL is checked) and TTL 255 for the
  // SYN-ACK. False (logged) when the kernel refuses one.
  bool secure_listener(int fd, const SocketAddress& where);
  // Whether the kernel takes each TCP-AO peer's key (logged when not).
  bool check_tcp_ao();
  // An accepted connection of `peer` passes its TTL rules (GTSM: the SYN's
  // TTL) and gets its TTLs; false when it is refused.
  bool admit_ttl(Peer& peer, int fd, const SocketAddress& remote);
  void begin_shutdown(int exit_code, std::string_view why, Peer::Stop how = Peer::Stop::kWithdraw);
  Peer* find_peer(const SocketAddress& remote);
  // reload() between systemd's RELOADING=1 and READY=1.
  bool reload_file(std::vector<std::string>* errors);
  // A reload's peer changes (reload()): peers added start, peers removed
  // close with Cease / Peer De-configured, peers whose session keys
  // changed get a new session, the others take their new policies and
  // live keys. `applied`: the configuration in effect afterwards.
  void reload_peers(const ReloadPlan& plan, const Config& applied);
  // A new Peer for `pc` on the worker with the fewest peers (a new worker
  // while there are fewer than the daemon may have), its keys on the
  // listeners. Not started.
  std::shared_ptr<Peer> make_peer(const PeerConfig& pc, const Config& applied);
  // The peer's TCP MD5 / TCP-AO keys and GTSM on the listeners of its
  // family. False (logged) when the kernel refuses one.
  bool secure_listener_for(int fd, const SocketAddress& where, const Peer& peer);
  // Closes `old` (on its worker) with Cease / `subcode`; once it is closed,
  // it retires and `then` (if any) starts on the same worker.
  void retire_peer(std::shared_ptr<Peer> old, uint8_t subcode, std::shared_ptr<Peer> then);
  size_t max_workers() const;
  // [[originate]] routes into the table (a slot of their own, "local",
  // taken at the first), and those of `withdraw` out of it.
  void originate(const std::vector<OriginateConfig>& announce, const std::vector<OriginateConfig>& withdraw);
  // Routes into and out of the table from a local slot of their own
  // (named `name`, taken at the first use). False when the table has no
  // free slot.
  bool apply_local(std::optional<uint16_t>& slot, const char* name, const std::vector<OriginateConfig>& announce,
                   const std::vector<OriginateConfig>& withdraw);
  // ---- sections changed live (daemon/server_sections.cpp)
  // The RTR caches of c, whose new data revalidates the table's routes.
  std::unique_ptr<RpkiService> make_rpki(const RpkiConfig& c);
  void apply_rpki(const RpkiConfig& next);
  // Asks the validator again about the routes to covered() prefixes.
  void revalidate(const std::function<bool(const net::Prefix&)>& covered, std::string_view why);
  // The ASPAs of these customers changed: their paths verified again.
  void reverify_paths(const std::vector<uint32_t>& customers);
  // [kernel]: the change under way, one step at a time (a timer on the
  // main loop while one is).
  void apply_kernel(const KernelConfig& next);
  void kernel_step();
  static void on_kernel_step(struct ev_loop*, ev_timer* w, int);
  [[nodiscard]] KernelConfig kernel_in_effect() const;
  std::string control_peer(const control::PeerCommand& c);
  // `petrel dump`: starts the dump thread and answers when it is done
  // (on_dump_done); an error now when one is running or we are stopping.
  std::optional<std::string> control_dump(const control::Dump& d, ControlServer::Reply reply);
  // One way for `petrel dump` and the periodic dumps of [mrt]: the dump
  // thread writes `path`, then (keep != 0) removes the oldest files of
  // the pattern past `keep`. An error now when one is running already.
  std::optional<std::string> start_dump(const std::string& path, bool gzip, const std::string& pattern,
                                        uint32_t keep, ControlServer::Reply reply);
  static void on_dump_done(struct ev_loop*, ev_async* w, int);
  static void on_dump_period(struct ev_loop*, ev_periodic* w, int);
  void join_dump();
  std::string control_announce(const OriginateConfig& route);
  std::string control_withdraw(const net::Prefix& prefix);
  // control.injected_routes_file: the injected routes read back at start
  // (each line an announce request; a bad line is logged by file and line
  // and skipped), and written again (a new file renamed over the old)
  // kInjectedSaveDelay after a change, and at shutdown.
  void restore_injected();
  void injected_changed();
  void save_injected();

  // ---- daemon/server_kernel.cpp: routes from the kernel ([[originate]]
  // from_kernel), [[static]] routes, and carrier loss ending sessions
  // (peer.link_down_ends_session). All on the main loop.
  // Starts (or, for a reload, adjusts) what `c` asks for.
  void start_kernel_parts(const Config& c);
  void stop_kernel_parts();
  // The routes dumped again into a fresh KernelOrigins for these entries;
  // the difference with what is announced goes to the table.
  void resync_kernel_origins(std::vector<KernelOriginConfig> entries);
  void kernel_route(const fib::Route& r, bool present);
  void apply_origin_changes(const std::vector<KernelOrigins::Change>& changes);
  void link_changed(uint32_t ifindex, const std::string& name, bool up);
  void announce_statics(const std::vector<StaticRouteConfig>& before, const std::vector<StaticRouteConfig>& now);
  void publish_origin();
  std::unique_ptr<KernelWatch> watch_;
  bool watch_routes_ = false;          // watch_ follows routes too
  std::unique_ptr<KernelOrigins> origins_;
  std::optional<uint16_t> kernel_slot_;  // the kernel's routes' table slot ("kernel")
  std::optional<uint16_t> static_slot_;  // [[static]] announce = true ("static")
  std::unique_ptr<StaticRoutes> statics_;
  std::vector<StaticRouteConfig> statics_announced_;  // as announce_statics() last left them
  std::string watch_error_;
  uint64_t links_down_ = 0;
  OriginStatus origin_status_;  // under sections_mu_
  ev_timer origin_publish_{};

  Config config_;
  ServerOptions options_;
  struct ev_loop* loop_;
  std::vector<std::unique_ptr<Worker>> workers_;
  VrpStore vrps_;  // before the table: its validator reads them
  RpkiValidator validator_;
  NexthopTracker nexthops_;  // before the table that asks it (table/nexthop.h)
  table::Table table_;  // before the peers: they withdraw into it as they go
  table::Interner out_sets_;  // the exporters' outgoing attribute sets (before the peers too)
  table::ExportGroups export_groups_{table_, out_sets_};  // the peers' update groups (before the peers)
  std::unique_ptr<RpkiService> rpki_;
  std::unique_ptr<KernelSyncer> kernel_;  // after the table it follows
  std::unique_ptr<BmpClient> bmp_;        // after the table it follows; before the peers that tell it
  std::unique_ptr<MrtUpdateLog> mrt_log_;  // before the peers that feed it
  // Reloads (server_sections.cpp): the syncer started beside kernel_ until
  // it caught up; those stopping (removing their routes) until their
  // threads end; a [kernel] change waiting to start; the step timer.
  std::unique_ptr<KernelSyncer> kernel_next_;
  std::vector<std::unique_ptr<KernelSyncer>> kernel_retired_;
  std::optional<KernelConfig> kernel_target_;
  ev_timer kernel_timer_{};
  double kernel_next_since_ = 0;  // ev_now() when kernel_next_ started
  bool kernel_wait_logged_ = false;
  // [http] as in effect when a reload could not apply it (nullopt: running_'s).
  std::optional<HttpConfig> http_in_effect_;
  // kernel_ and rpki_ are replaced on the main loop and read by the HTTP
  // threads (kernel_status(), rpki_status()) under this lock.
  mutable std::mutex sections_mu_;
  // The peers, in the running configuration's order. The main thread
  // changes it (under peers_mu_) and reads it without the lock; others
  // read peers().
  std::vector<std::shared_ptr<Peer>> peers_;
  mutable std::mutex peers_mu_;
  // Peers a reload removed or replaced, closing; dropped at a later reload
  // once retired (Peer::retire), or with the server.
  std::vector<std::shared_ptr<Peer>> retiring_;
  uint64_t seed_ = 0;  // the peers' back-off jitter
  std::vector<std::unique_ptr<Listener>> listeners_;
  // What is in effect: config_ with the changes reloads applied (peers
  // keep reading config_, whose router and peer list do not change).
  Config running_;
  std::shared_ptr<const std::vector<table::PolicyDef>> named_policies_;  // under sections_mu_
  void note_policies(const Config& c);
  std::optional<uint16_t> local_slot_;  // [[originate]]'s table slot
  // Routes injected through the control socket: their own slot
  // ("injected"), kept across reloads, gone with a restart.
  std::optional<uint16_t> injected_slot_;
  std::map<net::Prefix, OriginateConfig> injected_;
  ev_timer injected_save_{};  // a change waits to be written
  bool restoring_ = false;    // restore_injected() is putting the file's routes back
  std::unique_ptr<ControlServer> control_;
  ev_signal sigterm_{}, sigint_{}, sighup_{};
  ev_timer watchdog_{};
  ev_timer service_alive_{};  // systemd's watchdog keep-alive (WatchdogSec)
  // Every kHistoryIntervalSeconds: a sample of each peer and the table.
  ev_timer history_timer_{};
  History history_;
  void sample_history();
  ev_async shutdown_done_{};
  // The MRT dump running (at most one): its thread, the answer it owes,
  // and its outcome, handed to the main loop through dump_done_.
  std::thread dump_thread_;
  ControlServer::Reply dump_reply_;
  mutable std::mutex dump_mu_;
  std::optional<DumpOutcome> dump_outcome_;
  ev_async dump_done_{};
  ev_periodic dump_period_{};  // [mrt] dump_interval
  MrtDumpStatus dump_status_;  // under dump_mu_
  std::atomic<size_t> peers_closed_{0};
  std::atomic<uint64_t> refused_{0};
  bool shutting_down_ = false;
  int exit_code_ = 0;
};

}  // namespace petrel::daemon
