// The main loop: listeners, signals, workers and the orderly shutdown.
#include "daemon/server.h"

#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <future>
#include <limits>
#include <thread>

#include "daemon/memory.h"
#include "daemon/service.h"

namespace petrel::daemon {

namespace {

constexpr int kListenBacklog = 64;
constexpr int kAcceptsPerWakeup = 64;
constexpr double kShutdownGraceSeconds = 3.0;
// A listener rests this long when accept() runs out of file descriptors:
// the pending connection stays in the backlog, and a level-triggered
// watcher would otherwise spin on it.
constexpr double kAcceptRestSeconds = 0.5;
// How long a peer command waits for its worker.
constexpr auto kPeerCommandWait = std::chrono::seconds(5);
// control.injected_routes_file is written this long after a change: a
// health checker flipping routes does not rewrite it for each command.
constexpr double kInjectedSaveDelay = 0.2;

// RPKI validation in the table: always its validator, which answers
// "unchecked" while no cache is configured (a reload may add one).
table::TableOptions table_options(const Config& c, const table::Validator& v, const NexthopTracker& n) {
  table::TableOptions o;
  o.validator = &v;
  o.nexthops = &n;  // resolved at cost 0 while no kernel syncer feeds it
  o.reject_invalid = c.rpki.reject_invalid;
  o.reject_aspa_invalid = c.rpki.reject_aspa_invalid;
  o.sweep_threads = c.router.withdraw_threads;  // 0: the table's default
  o.expected_ipv4_prefixes = c.router.expected_ipv4_prefixes;
  o.expected_ipv6_prefixes = c.router.expected_ipv6_prefixes;
  return o;
}

// An [[originate]] entry as a route: its family and attribute set.
std::pair<table::FamilyIndex, codec::AttributeSet> originated_route(const OriginateConfig& o) {
  const bool v6 = o.prefix.family() == net::IpFamily::V6;
  const codec::Family fam{static_cast<uint16_t>(v6 ? codec::Afi::kIpv6 : codec::Afi::kIpv4), 1};
  codec::PathAttributes pa;
  pa.origin = o.origin;
  pa.as_path = codec::AsPath{};
  if (o.next_hop && o.next_hop->is_v4() && !v6) {
    pa.next_hop = o.next_hop;
  } else if (o.next_hop) {
    pa.mp_family = fam;
    pa.mp_next_hop = codec::NextHop{*o.next_hop, std::nullopt};
  }
  pa.communities = o.communities;
  pa.large_communities = o.large_communities;
  pa.med = o.med;
  pa.local_pref = o.local_pref;
  return {static_cast<table::FamilyIndex>(codec::known_index(fam)), codec::AttributeSet::from(pa)};
}

std::string joined(const std::vector<std::string>& keys) {
  std::string out;
  for (const auto& k : keys) out += (out.empty() ? "" : ", ") + k;
  return out;
}

}  // namespace

Server::Server(Config config, ServerOptions options)
    : config_(std::move(config)),
      options_(std::move(options)),
      loop_(ev_default_loop(EVFLAG_AUTO)),
      validator_(vrps_, config_.router.asn, !config_.rpki.caches.empty()),
      table_(table_options(config_, validator_, nexthops_)),
      running_(config_) {
  note_policies(running_);
  // One worker per peer up to max_workers(); a reload adding peers adds
  // workers up to that too (make_peer).
  size_t n = std::min(max_workers(), std::max<size_t>(1, config_.peers.size()));
  for (size_t i = 0; i < n; ++i) workers_.push_back(std::make_unique<Worker>("worker-" + std::to_string(i)));
  seed_ = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  for (size_t i = 0; i < config_.peers.size(); ++i) {
    Worker& w = *workers_[i % workers_.size()];
    peers_.push_back(std::make_shared<Peer>(config_, config_.peers[i], w, table_, export_groups_, seed_++));
  }
}

size_t Server::max_workers() const {
  return options_.workers ? options_.workers : std::max(1u, std::thread::hardware_concurrency());
}

std::vector<std::shared_ptr<Peer>> Server::peers() const {
  std::lock_guard<std::mutex> lock(peers_mu_);
  return peers_;
}

Server::~Server() {
  ev_periodic_stop(loop_, &dump_period_);
  join_dump();  // it reads the table
  set_mrt_update_log(nullptr);
  if (mrt_log_) mrt_log_->stop();
  if (bmp_) bmp_->stop();
  set_bmp_feed(nullptr);
  ev_timer_stop(loop_, &kernel_timer_);
  ev_timer_stop(loop_, &history_timer_);
  control_.reset();  // its socket file goes
  for (auto& l : listeners_) {
    ev_io_stop(loop_, &l->io);
    ev_timer_stop(loop_, &l->rest);
    if (l->fd >= 0) ::close(l->fd);
  }
  for (auto& w : workers_) {
    w->stop();
    w->join();
  }
  // Peers are destroyed after their workers stopped; each stops its own
  // watchers on its (now idle) loop.
  {
    std::lock_guard<std::mutex> lock(peers_mu_);
    peers_.clear();
  }
  retiring_.clear();
}

bool Server::check_tcp_ao() {
  for (const auto& p : peers_) {
    const PeerConfig& pc = p->config();
    if (!p->transport().ao) continue;
    int fd = ::socket(pc.address.is_v4() ? AF_INET : AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
    std::string err = fd < 0 ? std::string(std::strerror(errno)) : std::string();
    bool ok = fd >= 0 && set_ao_key(fd, SocketAddress{pc.address, pc.port, pc.interface, 0}, *p->transport().ao, err);
    if (fd >= 0) ::close(fd);
    if (!ok) {
      log(LogLevel::kError, "tcp-ao-failed", {{"peer", pc.name}}, "peer[].tcp_ao: " + err);
      return false;
    }
  }
  return true;
}

bool Server::secure_listener_for(int fd, const SocketAddress& where, const Peer& peer) {
  const PeerConfig& pc = peer.config();
  if (pc.address.family() != where.addr.family()) return true;
  const TransportOptions& t = peer.transport();
  SocketAddress remote{pc.address, pc.port, pc.interface, 0};
  std::string err;
  bool ok = true;
  if (!t.md5_password.empty()) ok = set_md5_key(fd, remote, t.md5_password, err);
  if (ok && t.ao) ok = set_ao_key(fd, remote, *t.ao, err);
  if (ok && t.min_ttl > 0) ok = keep_syn(fd, err) && set_ttl(fd, where.addr.family(), 255, 0, err);
  if (!ok)
    log(LogLevel::kError, "listen-failed", {{"address", where.to_string()}, {"peer", pc.name}},
        "the peer's key or ttl_security: " + err);
  return ok;
}

bool Server::secure_listener(int fd, const SocketAddress& where) {
  for (const auto& p : peers_)
    if (!secure_listener_for(fd, where, *p)) return false;
  return true;
}

bool Server::start() {
  for (const std::string& w : secret_file_warnings(config_))
    log(LogLevel::kWarn, "secret-file-readable", {}, w);
  if (!check_tcp_ao()) return false;
  for (const auto& addr : config_.router.listen) {
    SocketAddress where{addr, config_.router.port, {}, 0};
    std::string err;
    int fd = open_listener(where, kListenBacklog, err);
    if (fd < 0) {
      std::string hint;
      if (err.find("Permission denied") != std::string::npos && config_.router.port < 1024)
        hint = " (ports below 1024 need root or CAP_NET_BIND_SERVICE)";
      if (err.find("Address already in use") != std::string::npos)
        hint = " (another BGP daemon may be running)";
      log(LogLevel::kError, "listen-failed", {{"address", where.to_string()}}, err + hint);
      return false;
    }
    if (!secure_listener(fd, where)) {
      ::close(fd);
      return false;
    }
    auto l = std::make_unique<Listener>(Listener{this, fd, {}, where});
    ev_io_init(&l->io, &Server::on_accept, fd, EV_READ);
    l->io.data = l.get();
    ev_timer_init(&l->rest, &Server::on_listener_rested, kAcceptRestSeconds, 0);
    l->rest.data = l.get();
    ev_io_start(loop_, &l->io);
    log(LogLevel::kInfo, "listening", {{"address", where.to_string()}});
    listeners_.push_back(std::move(l));
  }
  if (!config_.control.socket.empty()) {
    control_ = std::make_unique<ControlServer>(
        loop_, [this](const control::ControlRequest& r) { return control(r); },
        [this](const control::ControlRequest& r, ControlServer::Reply reply) -> std::optional<std::string> {
          if (const auto* d = std::get_if<control::Dump>(&r)) return control_dump(*d, std::move(reply));
          return control(r);
        });
    std::string err;
    if (!control_->start(config_.control, err)) {
      control_.reset();
      // The default path is best effort (another petrel, no /run): only a
      // socket the configuration names must open.
      const bool configured = config_.control.socket != kDefaultControlSocket;
      log(configured ? LogLevel::kError : LogLevel::kWarn, "control-failed", {{"socket", config_.control.socket}},
          err + (configured ? "" : "; petrel runs without a control socket"));
      if (configured) return false;
    } else {
      log(LogLevel::kInfo, "control-listening", {{"socket", config_.control.socket}});
    }
  }
  if (options_.after_bind && !options_.after_bind()) return false;
  ::signal(SIGPIPE, SIG_IGN);
  ev_signal_init(&sigterm_, &Server::on_signal, SIGTERM);
  sigterm_.data = this;
  ev_signal_start(loop_, &sigterm_);
  ev_signal_init(&sigint_, &Server::on_signal, SIGINT);
  sigint_.data = this;
  ev_signal_start(loop_, &sigint_);
  ev_signal_init(&sighup_, [](struct ev_loop*, ev_signal* w, int) { static_cast<Server*>(w->data)->reload(); },
                 SIGHUP);
  sighup_.data = this;
  ev_signal_start(loop_, &sighup_);
  ev_async_init(&shutdown_done_, [](struct ev_loop* loop, ev_async*, int) { ev_break(loop, EVBREAK_ALL); });
  ev_async_start(loop_, &shutdown_done_);
  ev_async_init(&dump_done_, &Server::on_dump_done);
  dump_done_.data = this;
  ev_async_start(loop_, &dump_done_);
  // [mrt] dump_interval: at every multiple of the interval since the epoch
  // (an hour's dumps on the hour).
  ev_periodic_init(&dump_period_, &Server::on_dump_period, 0., config_.mrt.dump_interval, nullptr);
  dump_period_.data = this;
  if (config_.mrt.dump_interval != 0) ev_periodic_start(loop_, &dump_period_);
  // Watches the workers: one that died of an error is fatal for the daemon.
  if (auto interval = service::watchdog_interval()) {
    // systemd's WatchdogSec: the main loop says it is alive twice a period.
    ev_timer_init(&service_alive_, [](struct ev_loop*, ev_timer*, int) { service::alive(); }, 0, *interval / 2);
    ev_timer_start(loop_, &service_alive_);
  }
  ev_timer_init(&watchdog_, &Server::on_watchdog, 1.0, 1.0);
  watchdog_.data = this;
  ev_timer_start(loop_, &watchdog_);
  // The first sample at once, so the charts start with the daemon.
  ev_timer_init(&history_timer_, [](struct ev_loop*, ev_timer* w, int) { static_cast<Server*>(w->data)->sample_history(); },
                0.0, kHistoryIntervalSeconds);
  history_timer_.data = this;
  ev_timer_start(loop_, &history_timer_);

  if (!config_.rpki.caches.empty()) {
    rpki_ = make_rpki(config_.rpki);
    rpki_->start();
  }
  originate(config_.originate, {});
  start_kernel_parts(config_);
  ev_timer_init(&injected_save_, [](struct ev_loop*, ev_timer* w, int) { static_cast<Server*>(w->data)->save_injected(); },
                kInjectedSaveDelay, 0);
  injected_save_.data = this;
  restoring_ = true;
  restore_injected();
  restoring_ = false;
  if (config_.kernel.enabled) {
    kernel_ = std::make_unique<KernelSyncer>(config_.kernel, table_, config_.peers, &nexthops_);
    kernel_->start({config_.router.graceful.enabled, config_.router.selection_deferral_time});
  }
  if (!config_.bmp.empty()) {
    // The Statistics Reports' counters: the peer of that name, if any.
    bmp_ = std::make_unique<BmpClient>(config_, table_, [this](const std::string& name) -> std::optional<BmpPeerCounters> {
      for (const auto& p : peers())
        if (p->config().name == name) {
          const PeerCounters& c = p->counters();
          BmpPeerCounters b;
          for (const auto& r : c.refused) b.rejected += r.load(std::memory_order_relaxed);
          b.as_path_loops = c.own_as_loops.load(std::memory_order_relaxed);
          b.reflection_loops = c.reflection_loops.load(std::memory_order_relaxed);
          b.treat_as_withdraw = c.treat_as_withdraw.load(std::memory_order_relaxed);
          b.duplicate_prefixes = c.duplicate_announcements.load(std::memory_order_relaxed);
          return b;
        }
      return std::nullopt;
    }, [this] {
      // (A shared pointer each: a reload may remove the peer meanwhile.)
      for (const std::shared_ptr<Peer>& peer : peers()) peer->worker().post([peer] { peer->bmp_refresh(); });
    });
    set_bmp_feed(bmp_.get());
    bmp_->start();
  }
  if (!config_.mrt.updates_file.empty()) {
    mrt_log_ = std::make_unique<MrtUpdateLog>(config_.mrt);
    set_mrt_update_log(mrt_log_.get());
    mrt_log_->start();
  }
  for (auto& w : workers_) w->start();
  for (auto& p : peers_) {
    Peer* peer = p.get();
    peer->worker().post([peer] { peer->start(); });
  }
  log(LogLevel::kInfo, "started",
      {{"asn", config_.router.asn}, {"router_id", config_.router.router_id.to_string()},
       {"peers", config_.peers.size()}, {"workers", workers_.size()}});
  if (config_.router.expected_ipv4_prefixes || config_.router.expected_ipv6_prefixes)
    log(LogLevel::kInfo, "table-sized",
        {{"expected_ipv4_prefixes", config_.router.expected_ipv4_prefixes},
         {"expected_ipv6_prefixes", config_.router.expected_ipv6_prefixes},
         {"map_bytes", table_.memory().map_bytes}},
        "the table's maps made for the expected prefixes at start");
  return true;
}

int Server::run() {
  ev_run(loop_, 0);
  if (kernel_) kernel_->stop();  // our routes leave the kernel
  stop_kernel_parts();            // [[static]] routes too
  if (bmp_) bmp_->stop();  // the sessions' Peer Downs, then Termination
  for (auto& w : workers_) {
    w->stop();
    w->join();
  }
  log(LogLevel::kInfo, "stopped", {{"exit_code", exit_code_}});
  return exit_code_;
}

void Server::on_signal(struct ev_loop*, ev_signal* w, int) {
  auto* s = static_cast<Server*>(w->data);
  // SIGTERM with graceful restart on: Petrel stops to restart, keeping
  // forwarding (docs/graceful-restart.md, "Planned restart"); SIGINT, or
  // graceful restart off: everything is withdrawn.
  const bool restart = w->signum == SIGTERM && s->config_.router.graceful.enabled;
  s->begin_shutdown(0, w->signum == SIGTERM ? "SIGTERM" : "SIGINT", restart ? Peer::Stop::kRestart : Peer::Stop::kWithdraw);
}

void Server::sample_history() {
  const auto now = std::chrono::system_clock::now();
  const int64_t steady = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::steady_clock::now().time_since_epoch()).count();
  constexpr size_t kUpdate = static_cast<size_t>(codec::MessageType::kUpdate);
  std::vector<PeerCounts> counts;
  for (const auto& p : peers()) {
    PeerCounts c;
    c.name = p->config().name;
    for (size_t i = 0; i < codec::kKnownFamilies; ++i) c.prefixes += p->table_routes(i);
    c.updates_in = p->counters().messages_in[kUpdate].load(std::memory_order_relaxed);
    c.updates_out = p->counters().messages_out[kUpdate].load(std::memory_order_relaxed);
    counts.push_back(std::move(c));
  }
  TableCounts t;
  for (size_t i = 0; i < codec::kKnownFamilies; ++i) t.prefixes += table_.prefixes(static_cast<table::FamilyIndex>(i));
  t.routes = table_.routes();
  const MemoryStats mem = read_memory();
  if (mem.available) {
    t.memory = mem.allocated;
  } else {
    const auto m = table_.memory();
    t.memory = m.map_bytes + m.journal_bytes + m.attr_bytes;
  }
  history_.sample(std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count(), steady, counts, t);
}

void Server::on_watchdog(struct ev_loop*, ev_timer* w, int) {
  auto* s = static_cast<Server*>(w->data);
  for (auto& wk : s->workers_) {
    if (wk->failed()) {
      s->begin_shutdown(1, "worker " + wk->name() + " failed: " + wk->failure());
      return;
    }
  }
}

void Server::begin_shutdown(int exit_code, std::string_view why, Peer::Stop how) {
  if (shutting_down_) return;
  shutting_down_ = true;
  service::stopping();
  exit_code_ = exit_code;
  log(exit_code == 0 ? LogLevel::kInfo : LogLevel::kError, "shutting-down",
      {{"reason", std::string(why)}, {"graceful_restart", how == Peer::Stop::kRestart}});
  // A restart keeps the kernel's routes: the syncer stops before the
  // sessions close, so their routes leaving the table touch nothing.
  if (kernel_ && how == Peer::Stop::kRestart) kernel_->stop(KernelSyncer::Stop::kKeep);
  if (how == Peer::Stop::kRestart) statics_.reset();  // [[static]] routes stay for the next process too
  if (ev_is_active(&injected_save_)) save_injected();
  if (rpki_) rpki_->stop();
  if (control_) control_->stop();
  // Closed, not just unwatched: a peer dialling while our NOTIFICATIONs
  // linger is refused now instead of sitting in the backlog until exit
  // resets it.
  for (auto& l : listeners_) {
    ev_io_stop(loop_, &l->io);
    ev_timer_stop(loop_, &l->rest);
    ::close(l->fd);
    l->fd = -1;
  }
  if (peers_.empty()) {
    ev_break(loop_, EVBREAK_ALL);
    return;
  }
  for (auto& p : peers_) {
    Peer* peer = p.get();
    const std::string& configured = peer->shown()->shutdown_message;
    std::string msg = configured.empty() ? options_.shutdown_message : configured;
    peer->worker().post([this, peer, msg, how] {
      peer->shutdown(msg, [this] {
        if (peers_closed_.fetch_add(1) + 1 == peers_.size()) ev_async_send(loop_, &shutdown_done_);
      }, how);
    });
  }
  // Lingering sockets get a moment for the peer to read our NOTIFICATION;
  // the loop ends when every peer reported (or after the grace period).
  ev_timer_stop(loop_, &watchdog_);
  ev_timer_stop(loop_, &history_timer_);
  ev_timer_init(&watchdog_, [](struct ev_loop* loop, ev_timer*, int) { ev_break(loop, EVBREAK_ALL); },
                kShutdownGraceSeconds, 0);
  ev_timer_start(loop_, &watchdog_);
}

bool Server::apply_local(std::optional<uint16_t>& slot, const char* name, const std::vector<OriginateConfig>& announce,
                         const std::vector<OriginateConfig>& withdraw) {
  if (!slot) {
    table::PeerInfo me;
    me.name = name;
    me.address = config_.router.router_id;
    me.router_id = config_.router.router_id.v4_value();
    me.asn = config_.router.asn;
    me.local = true;
    slot = table_.add_peer(me);
    if (!slot) return false;
  }
  for (const OriginateConfig& o : withdraw) {
    codec::NlriPrefix p{o.prefix, 0};
    table_.apply(*slot, originated_route(o).first, nullptr, {}, {&p, 1});
  }
  for (const OriginateConfig& o : announce) {
    auto [family, set] = originated_route(o);
    codec::NlriPrefix p{o.prefix, 0};
    table_.apply(*slot, family, &set, {&p, 1}, {});
  }
  return true;
}

void Server::originate(const std::vector<OriginateConfig>& announce, const std::vector<OriginateConfig>& withdraw) {
  if (announce.empty() && withdraw.empty()) return;
  if (!apply_local(local_slot_, "local", announce, withdraw)) {
    log(LogLevel::kError, "originate-failed", {}, "the routing table has no free slot for [[originate]]");
    return;
  }
  log(LogLevel::kInfo, "originated", {{"prefixes", announce.size()}, {"withdrawn", withdraw.size()}},
      "[[originate]] routes are in the table");
}

bool Server::reload(std::vector<std::string>* errors) {
  if (options_.config_path.empty() || shutting_down_) {
    if (errors) errors->push_back(shutting_down_ ? "petrel is shutting down" : "petrel runs without a configuration file");
    return false;
  }
  service::reloading();
  const bool ok = reload_file(errors);
  service::ready(ok ? "running; configuration reloaded" : "running; the last reload failed, nothing changed");
  return ok;
}

bool Server::reload_file(std::vector<std::string>* errors) {
  auto next = load_config(options_.config_path);
  if (!next) {
    for (const ConfigError& e : next.error()) {
      log(LogLevel::kError, "reload-failed", {{"error", e.to_string()}}, "the configuration was not changed");
      if (errors) errors->push_back(e.to_string());
    }
    return false;
  }
  ReloadPlan plan = plan_reload(running_, *next);
  // Policies are resolved in what will be in effect: the new policies and
  // peers with the [router] that runs (a changed AS waits for a restart,
  // and so does what RFC 8212 makes of it).
  Config applied = applied_config(running_, *next);
  // An operator's reload starts again the sessions max_prefixes closed and
  // holds down (docs/export.md, "max_prefixes").
  for (auto& p : peers_) {
    Peer* peer = p.get();
    if (peer->held_down()) peer->worker().post([peer] { peer->resume_after_limit(); });
  }
  reload_peers(plan, applied);
  if (!plan.restart_keys.empty())
    log(LogLevel::kWarn, "reload-needs-restart", {{"keys", joined(plan.restart_keys)}},
        "these changes take effect when petrel restarts");
  originate(plan.announce, plan.withdraw);
  apply_sections(*next, plan);
  start_kernel_parts(applied);
  running_ = std::move(applied);
  publish_origin();
  note_policies(running_);
  size_t policies = 0, reset = 0, updated = 0;
  for (const PeerReload& r : plan.peers) {
    policies += r.import_changed || r.export_changed;
    reset += !r.reset_keys.empty();
    updated += r.updated;
  }
  log(LogLevel::kInfo, "reloaded",
      {{"file", options_.config_path}, {"peers_added", plan.added.size()}, {"peers_removed", plan.removed.size()},
       {"peers_reset", reset}, {"peers_updated", updated}, {"peer_policies_changed", policies},
       {"originate_announced", plan.announce.size()}, {"originate_withdrawn", plan.withdraw.size()}},
      plan.empty() ? "nothing changed" : "");
  return true;
}

void Server::reload_peers(const ReloadPlan& plan, const Config& applied) {
  std::vector<std::shared_ptr<Peer>> now(applied.peers.size());
  std::vector<bool> placed(applied.peers.size(), false);
  for (const PeerReload& r : plan.peers) {
    std::shared_ptr<Peer> peer = peers_[r.running];
    const PeerConfig& np = applied.peers[r.next];
    placed[r.next] = true;
    if (!r.reset_keys.empty()) {
      // A new session with the new keys: the old one closes first.
      log(LogLevel::kInfo, "peer-reset-by-reload", {{"peer", np.name}, {"keys", joined(r.reset_keys)}},
          "the session starts again with the new configuration (Cease / Other Configuration Change)");
      now[r.next] = make_peer(np, applied);
      retire_peer(peer, np.enabled ? codec::cease::kOtherConfigurationChange : codec::cease::kAdministrativeShutdown,
                  now[r.next]);
      continue;
    }
    now[r.next] = peer;
    if (r.updated) peer->worker().post([peer, np] { peer->update(np); });
    if (!r.import_changed && !r.export_changed) continue;
    peer->worker().post([peer, in = import_policy(applied, np), out = export_policy(applied, np),
                         own = np.allow_own_as, ic = r.import_changed, ec = r.export_changed]() mutable {
      peer->reload(std::move(in), std::move(out), own, ic, ec);
    });
  }
  for (size_t i : plan.added) {
    placed[i] = true;
    now[i] = make_peer(applied.peers[i], applied);
    log(LogLevel::kInfo, "peer-added", {{"peer", applied.peers[i].name}, {"address", applied.peers[i].address_text()}},
        "a reload added the peer");
    Peer* peer = now[i].get();
    peer->worker().post([held = now[i]] { held->start(); });
  }
  for (size_t i = 0; i < applied.peers.size(); ++i) {
    if (placed[i]) continue;
    // Unchanged: the same Peer, found by address and interface.
    for (auto& p : peers_)
      if (p->config().address == applied.peers[i].address && p->config().interface == applied.peers[i].interface)
        now[i] = p;
  }
  for (size_t i : plan.removed) {
    std::shared_ptr<Peer> peer = peers_[i];
    log(LogLevel::kInfo, "peer-removed", {{"peer", peer->config().name}, {"address", peer->config().address_text()}},
        "a reload removed the peer (Cease / Peer De-configured)");
    retire_peer(peer, codec::cease::kPeerDeconfigured, nullptr);
  }
  std::erase_if(retiring_, [](const std::shared_ptr<Peer>& p) { return p->retired(); });
  {
    std::lock_guard<std::mutex> lock(peers_mu_);
    peers_ = std::move(now);
  }
  if (!plan.added.empty() || !plan.removed.empty() || !plan.peers.empty()) {
    if (kernel_) kernel_->set_peers(applied.peers);
    if (kernel_next_) kernel_next_->set_peers(applied.peers);
  }
}

std::shared_ptr<Peer> Server::make_peer(const PeerConfig& pc, const Config& applied) {
  // The worker with the fewest peers, or a new one while there are fewer
  // workers than the daemon may have and each has a peer.
  std::vector<size_t> load(workers_.size(), 0);
  for (const auto& p : peers_)
    for (size_t w = 0; w < workers_.size(); ++w)
      if (&p->worker() == workers_[w].get()) ++load[w];
  size_t best = static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
  if (load[best] > 0 && workers_.size() < max_workers()) {
    workers_.push_back(std::make_unique<Worker>("worker-" + std::to_string(workers_.size())));
    workers_.back()->start();
    best = workers_.size() - 1;
  }
  auto peer = std::make_shared<Peer>(config_, pc, *workers_[best], table_, export_groups_, seed_++, &applied);
  for (auto& l : listeners_)
    if (l->fd >= 0) (void)secure_listener_for(l->fd, l->where, *peer);  // logged when refused
  return peer;
}

void Server::retire_peer(std::shared_ptr<Peer> old, uint8_t subcode, std::shared_ptr<Peer> then) {
  // A TCP MD5 key the next session does not use leaves the listeners (a
  // peer configured again without a password could not connect).
  const PeerConfig& pc = old->config();
  if (!old->transport().md5_password.empty() && (!then || then->transport().md5_password.empty())) {
    for (auto& l : listeners_) {
      if (l->fd < 0 || l->where.addr.family() != pc.address.family()) continue;
      std::string err;
      (void)set_md5_key(l->fd, SocketAddress{pc.address, pc.port, pc.interface, 0}, "", err);
    }
  }
  retiring_.push_back(old);
  Peer* peer = old.get();  // retiring_ holds it until it has retired
  const std::string& configured = peer->shown()->shutdown_message;
  std::string msg = configured.empty() ? options_.shutdown_message : configured;
  peer->worker().post([peer, msg, subcode, then] {
    peer->shutdown(msg, [peer, then] {
      // Not from inside the peer's own call: a task of its own.
      peer->worker().post([peer, then] {
        peer->retire();
        if (then) then->worker().post([then] { then->start(); });
      });
    }, Peer::Stop::kWithdraw, subcode);
  });
}

std::string Server::control(const control::ControlRequest& request) {
  if (shutting_down_) return control::answer_error("petrel is shutting down");
  if (std::holds_alternative<control::Reload>(request)) {
    std::vector<std::string> errors;
    if (!reload(&errors)) return control::answer_error("the configuration was not changed", errors);
    return control::answer_ok();
  }
  if (const auto* p = std::get_if<control::PeerCommand>(&request)) return control_peer(*p);
  if (const auto* a = std::get_if<control::Announce>(&request)) return control_announce(a->route);
  if (const auto* w = std::get_if<control::Withdraw>(&request)) return control_withdraw(w->prefix);
  std::vector<OriginateConfig> routes;
  for (const auto& [prefix, route] : injected_) routes.push_back(route);
  return control::answer_routes(routes);
}

std::optional<std::string> Server::control_dump(const control::Dump& d, ControlServer::Reply reply) {
  if (shutting_down_) return control::answer_error("petrel is shutting down");
  const std::string path = d.file.empty() ? default_dump_path(std::time(nullptr)) : d.file;
  if (auto busy = start_dump(path, false, {}, 0, std::move(reply))) return control::answer_error(*busy);
  return std::nullopt;
}

std::optional<std::string> Server::start_dump(const std::string& path, bool gzip, const std::string& pattern,
                                              uint32_t keep, ControlServer::Reply reply) {
  if (dump_thread_.joinable()) return "a dump is running already: try again when it is done";
  const std::time_t now = std::time(nullptr);
  const uint32_t id = config_.router.router_id.v4_value();
  const uint32_t as = config_.router.asn;
  dump_reply_ = std::move(reply);
  log(LogLevel::kInfo, "dump-started", {{"file", path}});
  dump_thread_ = std::thread([this, path, gzip, pattern, keep, id, as, now] {
    DumpOutcome o = dump_table(table_, path, gzip, id, as, now);
    if (o.ok && keep != 0) o.removed = rotate_mrt_files(pattern, keep);
    {
      std::lock_guard lock(dump_mu_);
      dump_outcome_ = std::move(o);
    }
    ev_async_send(loop_, &dump_done_);
  });
  return std::nullopt;
}

void Server::on_dump_period(struct ev_loop* loop, ev_periodic* w, int) {
  auto* s = static_cast<Server*>(w->data);
  if (s->shutting_down_) return;
  const MrtConfig& m = s->config_.mrt;
  // The multiple of the interval it is for (libev may call a little early).
  const auto due = static_cast<std::time_t>(std::llround(ev_now(loop)));
  const std::string path = mrt_file_name(m.dump_file, due);
  if (path.empty()) {
    log(LogLevel::kWarn, "dump-failed", {{"file", m.dump_file}}, "mrt.dump_file gives an empty or too long name");
    std::lock_guard lock(s->dump_mu_);
    ++s->dump_status_.failed;
    return;
  }
  if (auto busy = s->start_dump(path, m.dump_gzip, m.dump_file, m.dump_keep, nullptr)) {
    log(LogLevel::kWarn, "dump-skipped", {{"file", path}}, "the previous dump is still running");
    std::lock_guard lock(s->dump_mu_);
    ++s->dump_status_.skipped;
  }
}

MrtStatus Server::mrt_status() const {
  MrtStatus st;
  st.dump_interval = config_.mrt.dump_interval;
  {
    std::lock_guard lock(dump_mu_);
    st.dumps = dump_status_;
  }
  if (mrt_log_) st.updates = mrt_log_->status();
  return st;
}

void Server::on_dump_done(struct ev_loop*, ev_async* w, int) {
  auto* s = static_cast<Server*>(w->data);
  std::optional<DumpOutcome> o;
  {
    std::lock_guard lock(s->dump_mu_);
    o.swap(s->dump_outcome_);
    if (o && o->ok) {
      ++s->dump_status_.written;
      s->dump_status_.last_file = o->path;
    } else if (o) {
      ++s->dump_status_.failed;
      s->dump_status_.last_error = o->error;
    }
  }
  if (!o) return;
  s->join_dump();
  std::string answer;
  if (o->ok) {
    log(LogLevel::kInfo, "dump-written",
        {{"file", o->path}, {"prefixes", o->prefixes}, {"routes", o->routes}, {"bytes", o->bytes},
         {"routes_left_out", o->routes_left_out}});
    answer = control::answer_dump(
        control::DumpSummary{o->path, o->prefixes, o->routes, o->peers, o->bytes, o->routes_left_out});
  } else {
    log(LogLevel::kWarn, "dump-failed", {{"file", o->path}}, o->error);
    answer = control::answer_error(o->error);
  }
  for (const std::string& f : o->removed) log(LogLevel::kInfo, "mrt-file-removed", {{"file", f}});
  ControlServer::Reply reply = std::move(s->dump_reply_);
  s->dump_reply_ = nullptr;
  if (reply && s->control_) reply(std::move(answer));
}

void Server::join_dump() {
  if (dump_thread_.joinable()) dump_thread_.join();
}

std::string Server::control_peer(const control::PeerCommand& c) {
  Peer* peer = nullptr;
  std::shared_ptr<Peer> held;  // alive until its answer, whatever a reload does meanwhile
  for (auto& p : peers_)
    if (p->config().name == c.peer) held = p;
  peer = held.get();
  if (!peer) return control::answer_error("no peer is named \"" + c.peer.substr(0, 64) + "\"");
  if (!peer->config().enabled) return control::answer_error("the peer is disabled in the configuration (enabled = false)");
  // The worker does it; the answer says what it did. A worker busy for
  // longer than kPeerCommandWait still does it, later.
  auto done = std::make_shared<std::promise<AdminResult>>();
  std::future<AdminResult> result = done->get_future();
  peer->worker().post([held, c, done] { done->set_value(held->admin(c.action, c.message)); });
  if (result.wait_for(kPeerCommandWait) != std::future_status::ready)
    return control::answer_error("the peer's worker is busy: the command is queued and runs when it is free");
  AdminResult r = result.get();
  if (!r.ok) return control::answer_error(r.text);
  return control::answer_ok(r.text);
}

std::string Server::control_announce(const OriginateConfig& route) {
  auto it = injected_.find(route.prefix);
  const size_t cap = running_.control.max_injected_routes;
  if (it == injected_.end() && injected_.size() >= cap)
    return control::answer_error("at most " + std::to_string(cap) + " routes can be injected");
  if (it != injected_.end() && it->second == route) return control::answer_ok("unchanged");
  if (!apply_local(injected_slot_, "injected", {route}, {}))
    return control::answer_error("the routing table has no free slot for injected routes");
  injected_[route.prefix] = route;
  injected_changed();
  log(LogLevel::kInfo, "route-injected", {{"prefix", route.prefix.to_string()}});
  return control::answer_ok();
}

std::string Server::control_withdraw(const net::Prefix& prefix) {
  auto it = injected_.find(prefix);
  if (it == injected_.end()) return control::answer_error("no injected route for " + prefix.to_string());
  (void)apply_local(injected_slot_, "injected", {}, {it->second});
  injected_.erase(it);
  injected_changed();
  log(LogLevel::kInfo, "route-uninjected", {{"prefix", prefix.to_string()}});
  return control::answer_ok();
}

void Server::restore_injected() {
  const std::string& path = config_.control.injected_routes_file;
  if (path.empty()) return;
  std::ifstream in(path);
  if (!in) {
    if (errno != ENOENT)
      log(LogLevel::kWarn, "injected-restore-failed", {{"file", path}}, std::strerror(errno));
    return;
  }
  // Line by line into a bounded buffer: the file is read as hostile input.
  std::vector<char> buf(control::kMaxLineBytes + 2);
  size_t restored = 0, refused = 0;
  for (uint64_t line = 1; in; ++line) {
    in.getline(buf.data(), static_cast<std::streamsize>(buf.size()));
    std::string_view text(buf.data(), std::strlen(buf.data()));
    std::string why;
    if (in.fail() && !in.eof()) {  // longer than the buffer: the rest of it goes
      in.clear();
      in.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
      why = "longer than " + std::to_string(control::kMaxLineBytes) + " bytes";
    } else if (text.empty()) {
      continue;
    } else {
      control::ParseResult r = control::parse_request(text);
      const auto* a = r.request ? std::get_if<control::Announce>(&*r.request) : nullptr;
      if (!a) {
        why = r.request ? "not an announce request" : r.error;
      } else {
        std::string answer = control_announce(a->route);
        if (answer.find("\"ok\":true") == std::string::npos) why = answer;
      }
    }
    if (why.empty()) {
      ++restored;
      continue;
    }
    ++refused;
    if (refused <= 10)
      log(LogLevel::kWarn, "injected-restore-refused", {{"file", path}, {"line", line}}, why.substr(0, 200));
  }
  log(LogLevel::kInfo, "injected-restored", {{"file", path}, {"routes", restored}, {"refused", refused}},
      "routes injected before the restart are back");
}

void Server::injected_changed() {
  if (config_.control.injected_routes_file.empty() || restoring_) return;
  if (!ev_is_active(&injected_save_)) {
    ev_timer_set(&injected_save_, kInjectedSaveDelay, 0);
    ev_timer_start(loop_, &injected_save_);
  }
}

void Server::save_injected() {
  ev_timer_stop(loop_, &injected_save_);
  const std::string& path = config_.control.injected_routes_file;
  if (path.empty()) return;
  const std::string tmp = path + ".new";
  std::string err;
  {
    std::ofstream out(tmp, std::ios::trunc);
    for (const auto& [prefix, route] : injected_) out << control::announce_request(route) << '\n';
    out.flush();
    if (!out) err = "cannot write " + tmp;
  }
  if (err.empty() && std::rename(tmp.c_str(), path.c_str()) != 0)
    err = "cannot rename " + tmp + ": " + std::strerror(errno);
  if (!err.empty())
    log_limited("", LogLevel::kError, "injected-save-failed", {{"file", path}}, err);
}

Peer* Server::find_peer(const SocketAddress& remote) {
  for (auto& p : peers_) {
    const PeerConfig& pc = p->config();
    if (pc.address != remote.addr) continue;
    if (pc.address.is_link_local() && pc.interface != remote.ifname) continue;
    return p.get();
  }
  return nullptr;
}

void Server::on_accept(struct ev_loop*, ev_io* w, int) {
  auto* l = static_cast<Listener*>(w->data);
  l->server->accept_from(*l);
}

void Server::on_listener_rested(struct ev_loop* loop, ev_timer* w, int) {
  auto* l = static_cast<Listener*>(w->data);
  if (l->fd >= 0) ev_io_start(loop, &l->io);
}

bool Server::admit_ttl(Peer& peer, int fd, const SocketAddress& remote) {
  const TransportOptions& t = peer.transport();
  if (t.min_ttl > 0) {
    // RFC 5082 section 3: the SYN's TTL, checked before the connection is
    // handed on; IP_MINTTL on the socket then drops any later segment
    // that comes from further away.
    auto ttl = syn_ttl(fd);
    if (!ttl || *ttl < t.min_ttl) {
      refused_.fetch_add(1);
      log_limited(peer.config().name, LogLevel::kWarn, "connection-refused",
                  {{"remote", remote.to_string()}, {"peer", peer.config().name},
                   {"ttl", ttl ? static_cast<int64_t>(*ttl) : -1}, {"min_ttl", static_cast<int64_t>(t.min_ttl)}},
                  "ttl_security: the SYN came from further away than the peer's hops allow");
      return false;
    }
  }
  std::string err;
  if (!set_ttl(fd, remote.addr.family(), t.ttl, t.min_ttl, err)) {
    log(LogLevel::kWarn, "connection-refused", {{"remote", remote.to_string()}, {"peer", peer.config().name}}, err);
    return false;
  }
  return true;
}

void Server::accept_from(Listener& l) {
  for (int i = 0; i < kAcceptsPerWakeup; ++i) {
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    int fd = ::accept4(l.fd, reinterpret_cast<sockaddr*>(&ss), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      const int e = errno;
      const bool exhausted = e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM;
      if (exhausted) {
        // The connection stays queued: rest the watcher, or it would wake
        // again at once for the same backlog (a busy loop).
        ev_io_stop(loop_, &l.io);
        ev_timer_stop(loop_, &l.rest);
        ev_timer_set(&l.rest, kAcceptRestSeconds, 0);
        ev_timer_start(loop_, &l.rest);
      }
      log_limited("", LogLevel::kWarn, "accept-failed", {{"address", l.where.to_string()}},
                  std::string(std::strerror(e)) + (exhausted ? "; the listener rests for 0.5 s" : ""));
      return;
    }
    SocketAddress remote = from_sockaddr(ss);
    Peer* peer = shutting_down_ ? nullptr : find_peer(remote);
    if (!peer) {
      ::close(fd);
      refused_.fetch_add(1);
      log_limited("", LogLevel::kWarn, "connection-refused",
                  {{"remote", remote.to_string()}, {"listener", l.where.to_string()}},
                  shutting_down_ ? "shutting down" : "not a configured peer");
      continue;
    }
    set_session_options(fd, remote.addr.family());
    if (!admit_ttl(*peer, fd, remote)) {
      ::close(fd);
      continue;
    }
    peer->worker().post([peer, fd, remote] { peer->incoming(fd, remote); });
  }
}

void Server::note_policies(const Config& c) {
  auto all = std::make_shared<std::vector<table::PolicyDef>>(c.policies);
  for (const table::Filter& f : c.filters) all->push_back(table::policy_of_filter(f));
  for (std::string_view b : table::builtin_policy_names()) all->push_back(*table::builtin_policy(b));
  std::lock_guard lock(sections_mu_);
  named_policies_ = std::move(all);
}

}  // namespace petrel::daemon
