// The main loop: listeners, signals, workers and the orderly shutdown.
#include "daemon/server.h"

#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <future>
#include <thread>

namespace petrel::daemon {

namespace {

constexpr int kListenBacklog = 64;
constexpr int kAcceptsPerWakeup = 64;
constexpr double kShutdownGraceSeconds = 3.0;
// A listener rests this long when accept() runs out of file descriptors:
// the pending connection stays in the backlog, and a level-triggered
// watcher would otherwise spin on it.
constexpr double kAcceptRestSeconds = 0.5;
// Injected routes at once (a bound on what one local client can make the
// table hold), and how long a peer command waits for its worker.
constexpr size_t kMaxInjectedRoutes = 100'000;
constexpr auto kPeerCommandWait = std::chrono::seconds(5);

// RPKI validation in the table: always its validator, which answers
// "unchecked" while no cache is configured (a reload may add one).
table::TableOptions table_options(const Config& c, const table::Validator& v) {
  table::TableOptions o;
  o.validator = &v;
  o.reject_invalid = c.rpki.reject_invalid;
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
      table_(table_options(config_, validator_)),
      running_(config_) {
  unsigned n = options_.workers ? options_.workers : std::max(1u, std::thread::hardware_concurrency());
  if (n > config_.peers.size() && !config_.peers.empty()) n = static_cast<unsigned>(config_.peers.size());
  for (unsigned i = 0; i < n; ++i) workers_.push_back(std::make_unique<Worker>("worker-" + std::to_string(i)));
  uint64_t seed = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  for (size_t i = 0; i < config_.peers.size(); ++i) {
    Worker& w = *workers_[i % workers_.size()];
    peers_.push_back(std::make_unique<Peer>(config_, config_.peers[i], w, table_, export_groups_, seed + i));
  }
}

Server::~Server() {
  ev_timer_stop(loop_, &kernel_timer_);
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
  peers_.clear();
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

bool Server::secure_listener(int fd, const SocketAddress& where) {
  bool gtsm = false;
  for (const auto& p : peers_) {
    const PeerConfig& pc = p->config();
    if (pc.address.family() != where.addr.family()) continue;
    const TransportOptions& t = p->transport();
    SocketAddress remote{pc.address, pc.port, pc.interface, 0};
    std::string err;
    bool ok = true;
    if (!t.md5_password.empty()) ok = set_md5_key(fd, remote, t.md5_password, err);
    if (ok && t.ao) ok = set_ao_key(fd, remote, *t.ao, err);
    if (!ok) {
      log(LogLevel::kError, "listen-failed", {{"address", where.to_string()}, {"peer", pc.name}},
          "the peer's key: " + err);
      return false;
    }
    gtsm = gtsm || t.min_ttl > 0;
  }
  std::string err;
  if (gtsm && (!keep_syn(fd, err) || !set_ttl(fd, where.addr.family(), 255, 0, err))) {
    log(LogLevel::kError, "listen-failed", {{"address", where.to_string()}}, "ttl_security: " + err);
    return false;
  }
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
    control_ = std::make_unique<ControlServer>(loop_, [this](const control::ControlRequest& r) { return control(r); });
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
  // Watches the workers: one that died of an error is fatal for the daemon.
  ev_timer_init(&watchdog_, &Server::on_watchdog, 1.0, 1.0);
  watchdog_.data = this;
  ev_timer_start(loop_, &watchdog_);

  if (!config_.rpki.caches.empty()) {
    rpki_ = make_rpki(config_.rpki);
    rpki_->start();
  }
  originate(config_.originate, {});
  if (config_.kernel.enabled) {
    kernel_ = std::make_unique<KernelSyncer>(config_.kernel, table_, config_.peers);
    kernel_->start({config_.router.graceful.enabled, config_.router.selection_deferral_time});
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
  exit_code_ = exit_code;
  log(exit_code == 0 ? LogLevel::kInfo : LogLevel::kError, "shutting-down",
      {{"reason", std::string(why)}, {"graceful_restart", how == Peer::Stop::kRestart}});
  // A restart keeps the kernel's routes: the syncer stops before the
  // sessions close, so their routes leaving the table touch nothing.
  if (kernel_ && how == Peer::Stop::kRestart) kernel_->stop(KernelSyncer::Stop::kKeep);
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
    std::string msg = peer->config().shutdown_message.empty() ? options_.shutdown_message
                                                                : peer->config().shutdown_message;
    peer->worker().post([this, peer, msg, how] {
      peer->shutdown(msg, [this] {
        if (peers_closed_.fetch_add(1) + 1 == peers_.size()) ev_async_send(loop_, &shutdown_done_);
      }, how);
    });
  }
  // Lingering sockets get a moment for the peer to read our NOTIFICATION;
  // the loop ends when every peer reported (or after the grace period).
  ev_timer_stop(loop_, &watchdog_);
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
  auto next = load_config(options_.config_path);
  if (!next) {
    for (const ConfigError& e : next.error()) {
      log(LogLevel::kError, "reload-failed", {{"error", e.to_string()}}, "the configuration was not changed");
      if (errors) errors->push_back(e.to_string());
    }
    return false;
  }
  ReloadPlan plan = plan_reload(running_, *next);
  // Policies are resolved in what will be in effect: the new policies with
  // the peer as it runs (a changed AS waits for a restart, and so does
  // what RFC 8212 makes of it).
  Config applied = applied_config(running_, *next);
  size_t policies = 0;
  for (const PeerReload& r : plan.peers) {
    Peer* peer = peers_[r.running].get();
    const PeerConfig& np = applied.peers[r.running];
    if (!r.restart_keys.empty())
      log(LogLevel::kWarn, "reload-needs-restart", {{"peer", peer->config().name}, {"keys", joined(r.restart_keys)}},
          "these keys take effect when petrel restarts");
    if (!r.import_changed && !r.export_changed) continue;
    ++policies;
    peer->worker().post([peer, in = import_policy(applied, np), out = export_policy(applied, np), own = np.allow_own_as,
                         ic = r.import_changed, ec = r.export_changed]() mutable {
      peer->reload(std::move(in), std::move(out), own, ic, ec);
    });
  }
  // An operator's reload starts again the sessions max_prefixes closed and
  // holds down (docs/export.md, "max_prefixes").
  for (auto& p : peers_) {
    Peer* peer = p.get();
    if (peer->held_down()) peer->worker().post([peer] { peer->resume_after_limit(); });
  }
  if (!plan.restart_keys.empty())
    log(LogLevel::kWarn, "reload-needs-restart", {{"keys", joined(plan.restart_keys)}},
        "these changes take effect when petrel restarts");
  originate(plan.announce, plan.withdraw);
  apply_sections(*next, plan);
  running_ = std::move(applied);
  log(LogLevel::kInfo, "reloaded",
      {{"file", options_.config_path}, {"peer_policies_changed", policies},
       {"originate_announced", plan.announce.size()}, {"originate_withdrawn", plan.withdraw.size()}},
      plan.empty() ? "nothing changed" : "");
  return true;
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

std::string Server::control_peer(const control::PeerCommand& c) {
  Peer* peer = nullptr;
  for (auto& p : peers_)
    if (p->config().name == c.peer) peer = p.get();
  if (!peer) return control::answer_error("no peer is named \"" + c.peer.substr(0, 64) + "\"");
  if (!peer->config().enabled) return control::answer_error("the peer is disabled in the configuration (enabled = false)");
  // The worker does it; the answer says what it did. A worker busy for
  // longer than kPeerCommandWait still does it, later.
  auto done = std::make_shared<std::promise<AdminResult>>();
  std::future<AdminResult> result = done->get_future();
  peer->worker().post([peer, c, done] { done->set_value(peer->admin(c.action, c.message)); });
  if (result.wait_for(kPeerCommandWait) != std::future_status::ready)
    return control::answer_error("the peer's worker is busy: the command is queued and runs when it is free");
  AdminResult r = result.get();
  if (!r.ok) return control::answer_error(r.text);
  return control::answer_ok(r.text);
}

std::string Server::control_announce(const OriginateConfig& route) {
  auto it = injected_.find(route.prefix);
  if (it == injected_.end() && injected_.size() >= kMaxInjectedRoutes)
    return control::answer_error("at most " + std::to_string(kMaxInjectedRoutes) + " routes can be injected");
  if (it != injected_.end() && it->second == route) return control::answer_ok("unchanged");
  if (!apply_local(injected_slot_, "injected", {route}, {}))
    return control::answer_error("the routing table has no free slot for injected routes");
  injected_[route.prefix] = route;
  log(LogLevel::kInfo, "route-injected", {{"prefix", route.prefix.to_string()}});
  return control::answer_ok();
}

std::string Server::control_withdraw(const net::Prefix& prefix) {
  auto it = injected_.find(prefix);
  if (it == injected_.end()) return control::answer_error("no injected route for " + prefix.to_string());
  (void)apply_local(injected_slot_, "injected", {}, {it->second});
  injected_.erase(it);
  log(LogLevel::kInfo, "route-uninjected", {{"prefix", prefix.to_string()}});
  return control::answer_ok();
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
    set_network_control_tos(fd, remote.addr.family());
    if (!admit_ttl(*peer, fd, remote)) {
      ::close(fd);
      continue;
    }
    peer->worker().post([peer, fd, remote] { peer->incoming(fd, remote); });
  }
}

}  // namespace petrel::daemon
