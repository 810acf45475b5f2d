// The server's parts that follow the kernel on the main loop (server.h):
// routes from the kernel into BGP ([[originate]] from_kernel,
// daemon/kernel_origin.h), [[static]] routes (daemon/static_routes.h), and
// carrier loss ending sessions (peer.link_down_ends_session). How they
// behave: docs/kernel.md.
#include "daemon/server.h"

#include <algorithm>

namespace petrel::daemon {
namespace {

constexpr double kOriginPublishSeconds = 0.25;  // the API's view follows changes this late at most

// Whether any peer may have its session ended by a link going down.
bool wants_links(const Config& c) {
  return std::any_of(c.peers.begin(), c.peers.end(), [](const PeerConfig& p) { return p.link_down_ends_session; });
}

std::string protocols_text(const KernelOriginConfig& k) {
  std::string s;
  for (uint8_t p : k.protocols) s += (s.empty() ? "" : ",") + rt_protocol_name(p);
  return s;
}

// A static route announced into BGP: default attributes (origin IGP, our
// address as next hop on each session).
OriginateConfig static_origin(const StaticRouteConfig& r) {
  OriginateConfig o;
  o.prefix = r.prefix;
  return o;
}

}  // namespace

void Server::start_kernel_parts(const Config& c) {
  if (!ev_is_active(&origin_publish_) && origin_publish_.data == nullptr) {
    ev_timer_init(&origin_publish_, [](struct ev_loop*, ev_timer* w, int) { static_cast<Server*>(w->data)->publish_origin(); },
                  kOriginPublishSeconds, 0);
    origin_publish_.data = this;
  }
  // The watcher: routes when a kernel source is configured, links when a
  // peer may end on a link-down. A change of what it follows opens it again.
  const bool routes = !c.kernel_origins.empty();
  const bool links = wants_links(c);
  if (watch_ && (watch_routes_ != routes || (!routes && !links))) watch_.reset();
  if (!watch_ && (routes || links)) {
    KernelWatch::Callbacks cb;
    cb.route = [this](const fib::Route& r, bool present) { kernel_route(r, present); };
    cb.link = [this](uint32_t ifindex, const std::string& name, bool up) { link_changed(ifindex, name, up); };
    cb.lost = [this] {
      log(LogLevel::kWarn, "kernel-watch-resync", {}, "kernel notifications were lost: the routes are read again");
      if (origins_) resync_kernel_origins(origins_->entries());
    };
    auto w = std::make_unique<KernelWatch>(loop_, routes, std::move(cb));
    if (auto r = w->start(); !r) {
      watch_error_ = r.error();
      log(LogLevel::kError, "kernel-watch-failed", {}, watch_error_ + ": routes from the kernel and link-down "
                                                                        "endings do not work");
    } else {
      watch_error_.clear();
      watch_ = std::move(w);
      watch_routes_ = routes;
    }
  }
  if (!origins_ || origins_->entries() != c.kernel_origins) resync_kernel_origins(c.kernel_origins);

  // [[static]]: a change of table or metric starts the installer again
  // (the old one removes its routes first).
  if (statics_ && (c.statics.empty() || statics_->table() != c.kernel.table ||
                   statics_->metric() != c.kernel.static_metric)) {
    statics_->stop();
    statics_.reset();
  }
  if (!c.statics.empty()) {
    if (!statics_) {
      statics_ = std::make_unique<StaticRoutes>(loop_, c.kernel, c.statics);
      if (!statics_->start()) statics_.reset();
    } else {
      statics_->set(c.statics);
    }
  }
  announce_statics(statics_announced_, c.statics);
  publish_origin();
}

void Server::stop_kernel_parts() {
  ev_timer_stop(loop_, &origin_publish_);
  watch_.reset();
  if (statics_) statics_->stop();
  statics_.reset();
}

void Server::resync_kernel_origins(std::vector<KernelOriginConfig> entries) {
  auto next = std::make_unique<KernelOrigins>(entries);
  std::vector<KernelOrigins::Change> ignored;
  if (!entries.empty() && watch_ && watch_routes_) {
    auto r = watch_->dump_routes([&](const fib::Route& route) { next->route(route, true, ignored); });
    if (!r) log(LogLevel::kError, "kernel-watch-failed", {}, r.error());
  }
  // The difference between what is announced and what the dump says.
  std::vector<KernelOrigins::Change> changes;
  static const std::map<net::Prefix, size_t> kNone;
  const auto& was = origins_ ? origins_->announced() : kNone;
  const auto& now = next->announced();
  for (const auto& [p, e] : was)
    if (!now.count(p)) changes.push_back({p, std::nullopt});
  for (const auto& [p, e] : now) {
    auto it = was.find(p);
    // The same entry index of another configuration may differ: announced again.
    if (it == was.end() || it->second != e || !origins_ || origins_->entries() != entries) changes.push_back({p, e});
  }
  origins_ = std::move(next);
  apply_origin_changes(changes);
  if (!entries.empty())
    log(LogLevel::kInfo, "kernel-origin", {{"sources", entries.size()}, {"prefixes", origins_->announced().size()},
                                           {"refused", origins_->refused()}},
        "the kernel's routes were read: matching prefixes are announced while the kernel holds them");
}

void Server::kernel_route(const fib::Route& r, bool present) {
  if (!origins_ || origins_->entries().empty()) return;
  std::vector<KernelOrigins::Change> changes;
  origins_->route(r, present, changes);
  apply_origin_changes(changes);
}

void Server::apply_origin_changes(const std::vector<KernelOrigins::Change>& changes) {
  if (origins_) {
    if (uint64_t n = origins_->take_new_refusals())
      log(LogLevel::kWarn, "kernel-origin-limit", {{"refused", n}, {"refused_total", origins_->refused()}},
          "an [[originate]] from_kernel entry has max_prefixes prefixes: further kernel routes are not announced");
  }
  if (changes.empty()) return;
  std::vector<OriginateConfig> announce, withdraw;
  for (const KernelOrigins::Change& c : changes) {
    OriginateConfig o;
    if (c.entry) {
      o = origins_->entries()[*c.entry].attributes;
      // An IPv4 next hop cannot go with an IPv6 prefix: our address then.
      if (o.next_hop && c.prefix.family() == net::IpFamily::V6 && o.next_hop->family() != net::IpFamily::V6)
        o.next_hop.reset();
    }
    o.prefix = c.prefix;
    (c.entry ? announce : withdraw).push_back(std::move(o));
  }
  if (!apply_local(kernel_slot_, "kernel", announce, withdraw)) {
    log(LogLevel::kError, "originate-failed", {}, "the routing table has no free slot for routes from the kernel");
    return;
  }
  log(LogLevel::kDebug, "kernel-originated", {{"announced", announce.size()}, {"withdrawn", withdraw.size()}});
  if (!ev_is_active(&origin_publish_)) ev_timer_start(loop_, &origin_publish_);
}

void Server::announce_statics(const std::vector<StaticRouteConfig>& before, const std::vector<StaticRouteConfig>& now) {
  std::vector<OriginateConfig> announce, withdraw;
  for (const StaticRouteConfig& r : before)
    if (r.announce && std::none_of(now.begin(), now.end(), [&](const StaticRouteConfig& x) {
          return x.prefix == r.prefix && x.announce;
        }))
      withdraw.push_back(static_origin(r));
  for (const StaticRouteConfig& r : now)
    if (r.announce && std::none_of(before.begin(), before.end(), [&](const StaticRouteConfig& x) {
          return x.prefix == r.prefix && x.announce;
        }))
      announce.push_back(static_origin(r));
  statics_announced_ = now;
  if (announce.empty() && withdraw.empty()) return;
  if (!apply_local(static_slot_, "static", announce, withdraw))
    log(LogLevel::kError, "originate-failed", {}, "the routing table has no free slot for [[static]] routes");
}

void Server::link_changed(uint32_t ifindex, const std::string& name, bool up) {
  if (!watch_) return;
  const fib::Interfaces& ifs = watch_->interfaces();
  for (const std::shared_ptr<Peer>& peer : peers_) {
    const std::shared_ptr<const PeerConfig> pc = peer->shown();
    if (!pc->link_down_ends_session) continue;
    // The peer's link: its interface (link-local), else the one holding
    // our local address, else the network its address is in.
    std::optional<uint32_t> via;
    if (!pc->interface.empty()) via = ifs.index_of(pc->interface);
    else if (pc->local_address) via = ifs.holding(*pc->local_address);
    if (!via && pc->interface.empty()) via = ifs.network_of(pc->address);
    if (!via || *via != ifindex) continue;
    if (up) {
      std::shared_ptr<Peer> p = peer;
      peer->worker().post([p] { p->link_up(); });
      continue;
    }
    if (peer->status().state == fsm::State::kIdle) continue;
    ++links_down_;
    log(LogLevel::kInfo, "link-down-ends-session", {{"peer", pc->name}, {"interface", name}},
        "the interface to the peer went down: its session ends now");
    std::shared_ptr<Peer> p = peer;
    peer->worker().post([p, name] { p->link_down(name); });
  }
  if (!ev_is_active(&origin_publish_)) ev_timer_start(loop_, &origin_publish_);
}

void Server::publish_origin() {
  OriginStatus s;
  s.watching = watch_ != nullptr && watch_routes_;
  s.watch_error = watch_error_;
  if (watch_) {
    s.notifications = watch_->notifications();
    s.resyncs = watch_->resyncs();
  }
  if (origins_) {
    s.refused = origins_->refused();
    s.originated.reserve(origins_->announced().size());
    for (const auto& [p, e] : origins_->announced()) {
      const KernelOriginConfig& k = origins_->entries()[e];
      s.originated.push_back(OriginatedPrefix{p.to_string(), e, protocols_text(k), k.table});
    }
  }
  s.links_down = links_down_;
  s.statics = !running_.statics.empty();
  if (statics_) s.static_status = statics_->status();
  for (const StaticRouteConfig& r : running_.statics)
    if (r.announce) s.announced_statics.push_back(r.prefix.to_string());
  std::lock_guard lock(sections_mu_);
  origin_status_ = std::move(s);
}

}  // namespace petrel::daemon
