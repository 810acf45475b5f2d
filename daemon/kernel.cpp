// The kernel syncer (see kernel.h).
#include "daemon/kernel.h"

#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <unordered_set>

#include "codec/communities.h"
#include "codec/types.h"
#include "crates/bytes/bytes.h"
#include "daemon/log.h"
#include "daemon/restart.h"
#include "table/multipath.h"

namespace petrel::daemon {
namespace {

using Clock = std::chrono::steady_clock;

// Routes of ours left by an earlier run stay this long after start-up, so
// that the peers' routes can arrive and replace them in place (no moment
// without a route); then those still not wanted are removed.
constexpr auto kStaleGrace = std::chrono::seconds(30);
constexpr auto kRetryRefused = std::chrono::seconds(10);
// Petrel restarting: the UPDATEs of a released family wait for its kernel
// changes (RFC 4724 section 4.1), at most this long.
constexpr auto kForwardingWait = std::chrono::seconds(10);
constexpr auto kPublish = std::chrono::milliseconds(250);
// Each round reads everything the journals have for us: a read bounded
// per shard falls behind a feed faster than the bound per round (rounds
// are longer while the kernel works and the sessions fill the table on
// the other core) until a journal overruns and hands its whole shard
// again (16 per 1M-route feed with 4096 events per shard a round). A
// shard's backlog is at most the journal's retention.
constexpr size_t kReadPerShard = SIZE_MAX;
// Idle, the thread waits for the table's wake (Table::subscribe), a
// kernel notification, or the next thing due; and at most kSafetyWait, so
// that a wake missed (none should be) delays a change by that much, never
// loses it. Without an eventfd (its creation failed), it polls every
// kIdleWaitMs as before wakes existed.
constexpr auto kSafetyWait = std::chrono::milliseconds(1000);
constexpr int kIdleWaitMs = 20;
// Requests per round, between journal reads: short rounds keep the
// journals' backlog small (reading it is cheap; the kernel's work in
// sendmsg is what takes the time).
constexpr size_t kSyncPerRound = 8 * 256;
// After a read that handed more than this (a quarter of the journals'
// retention of 8 x 32,768 changes: the table fills much faster than the
// syncer reads, e.g. when the machine is busy), the round sends one
// batch only, so that the next read comes sooner: a journal that
// overruns costs a whole shard handed again. Below it the kernel gets
// its 8 batches a round while the table fills (at 16,384 nearly every
// round of a 1M feed sent one batch, and the kernel idled until the
// table was full).
constexpr size_t kBacklogRead = 65536;
constexpr size_t kSyncBehind = 256;
// Wishes handed to the plan a round (the rest wait in the syncer's own
// list): several rounds' worth of requests.
constexpr size_t kWishesPerRound = 16384;

uint64_t ns_since(Clock::time_point t) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t).count());
}

const int kV4 = codec::known_index(codec::kIpv4Unicast);
const int kV6 = codec::known_index(codec::kIpv6Unicast);

// The gateway a route names for a prefix of family f: NEXT_HOP for IPv4,
// else MP_REACH_NLRI's next hop, its global address and RFC 2545's
// link-local second one (also for IPv4 over an IPv6 next hop, RFC 8950,
// installed with RTA_VIA). ifindex() gives the session's
// interface, asked only when a link-local address needs it.
template <typename F>
std::optional<fib::Gateway> gateway_of(const table::Attrs& a, int f, F&& ifindex) {
  const codec::AttributeSet s = a.decode();
  fib::Gateway g;
  if (auto nh = f == kV4 ? s.next_hop() : std::nullopt) {
    g.address = *nh;
  } else if (const auto& mp = s.mp_next_hop()) {
    g.address = mp->global;
    if (mp->link_local && mp->link_local->is_link_local()) g.link_local = mp->link_local;
  } else {
    return std::nullopt;
  }
  if (g.address.is_link_local() || g.link_local) g.via_ifindex = ifindex();
  return g;
}

// Whether the set carries BLACKHOLE (RFC 7999 section 3: 65535:666).
bool carries_blackhole(const table::Attrs& a) {
  const codec::AttributeSet s = a.decode();
  const bytes::Span c = s.communities();
  for (size_t i = 0; i + 4 <= c.size(); i += 4) {
    const uint32_t v = static_cast<uint32_t>(c[i]) << 24 | static_cast<uint32_t>(c[i + 1]) << 16 |
                       static_cast<uint32_t>(c[i + 2]) << 8 | static_cast<uint32_t>(c[i + 3]);
    if (v == codec::community::kBlackhole) return true;
  }
  return false;
}

// gateway_of()'s last answer: consecutive routes of a full table often
// share their attribute set. Keyed by the set's bytes (a set may be freed
// and its address reused; its bytes say what it is), the family, and the
// peer's slot and the interfaces (for a link-local next hop).
struct GatewayMemo {
  bool valid = false;
  int family = 0;
  uint16_t slot = 0;
  uint64_t generation = 0;
  std::vector<std::byte> wire;
  std::optional<fib::Gateway> gateway;
  bool blackhole = false;  // RFC 7999 BLACKHOLE, installed as such (kernel.blackhole_community)

  [[nodiscard]] bool holds(bytes::Span w, int f, uint16_t s, uint64_t gen) const {
    return valid && family == f && slot == s && generation == gen &&
           std::equal(w.begin(), w.end(), wire.begin(), wire.end());
  }
};

}  // namespace

fib::Want KernelSyncer::multipath_want(table::FamilyIndex f, const net::Prefix& p, const fib::Interfaces& ifs) {
  fib::Want w;
  std::vector<table::Candidate> c;
  (void)table_.lookup_all(f, p, [&](std::span<const table::RouteView> routes, int best) {
    for (const table::RouteView& v : routes) c.push_back(table_.candidate_of(v));
    for (size_t i : table::multipath_set(c, best, table_.best_path_options()))
      if (auto g = gateway_of(*routes[i].attrs, f, [&] { return session_ifindex(routes[i], ifs); }))
        w.gateways.push_back(*g);
  });
  return w;
}

void KernelSyncer::set_peers(const std::vector<PeerConfig>& peers) {
  std::unordered_map<std::string, SessionLink> links;
  for (const PeerConfig& p : peers) links[p.name] = SessionLink{p.interface, p.local_address, p.address};
  {
    std::lock_guard<std::mutex> lock(links_mu_);
    next_links_ = std::move(links);
  }
  links_changed_.store(true, std::memory_order_release);
  wake();
}

void KernelSyncer::adopt_peers() {
  std::lock_guard<std::mutex> lock(links_mu_);
  links_changed_.store(false, std::memory_order_relaxed);
  if (!next_links_) return;
  links_ = std::move(*next_links_);
  next_links_.reset();
  ++interfaces_generation_;  // every slot's interface is worked out again
}

uint32_t KernelSyncer::session_ifindex(const table::RouteView& v, const fib::Interfaces& ifs) {
  if (links_changed_.load(std::memory_order_acquire)) adopt_peers();
  if (v.slot >= slot_links_.size()) slot_links_.resize(v.slot + 1);
  SlotLink& l = slot_links_[v.slot];
  if (l.generation == interfaces_generation_ && l.peer == v.peer->name) return l.ifindex;
  l = SlotLink{v.peer->name, interfaces_generation_, 0};
  auto it = links_.find(v.peer->name);
  if (it == links_.end()) return 0;  // not a configured peer ([[originate]])
  const SessionLink& s = it->second;
  // The interface named, else the one holding the local address, else the
  // one whose network holds the peer's address (up or not).
  std::optional<uint32_t> ifindex = !s.interface.empty() ? ifs.index_of(s.interface)
                                    : s.local_address   ? ifs.holding(*s.local_address)
                                                        : ifs.network_of(s.address);
  l.ifindex = ifindex.value_or(0);
  return l.ifindex;
}

KernelSyncer::KernelSyncer(const KernelConfig& config, table::Table& table, const std::vector<PeerConfig>& peers,
                           NexthopTracker* nexthops)
    : config_(config), table_(table), nexthops_(nexthops) {
  status_.enabled = config.enabled;
  status_.table = config.table;
  status_.metric = config.metric;
  status_.multipath = config.multipath;
  for (const PeerConfig& p : peers) links_[p.name] = SessionLink{p.interface, p.local_address, p.address};
  peers_ = peers;
}

KernelSyncer::~KernelSyncer() {
  stop();
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

void KernelSyncer::start(KernelRestart restart) {
  if (thread_.joinable()) return;
  if (wake_fd_ < 0) wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  reload_ = restart.reload;
  if (reload_ == KernelRestart::Reload::kNo) open_driver(restart);
  // A reload's dump (seconds for a full table) is the thread's: the main
  // loop goes on meanwhile.
  thread_ = std::thread([this, restart] {
    if (reload_ != KernelRestart::Reload::kNo) open_driver(restart);
    run();
    finished_.store(true, std::memory_order_release);
  });
  // Named, for top -H and perf record -t (up to 15 characters).
  (void)pthread_setname_np(thread_.native_handle(), "petrel-kernel");
}

void KernelSyncer::stop(Stop how) {
  request_stop(how);
  if (thread_.joinable()) thread_.join();
}

void KernelSyncer::request_stop(Stop how) {
  if (how == Stop::kKeep) keep_ = true;
  if (began_restart_) {
    own_restart().stop_waking();
    // No session waits for a kernel this syncer no longer updates.
    own_restart().kernel_updated(codec::kIpv4Unicast);
    own_restart().kernel_updated(codec::kIpv6Unicast);
  }
  stop_ = true;
  wake();
}

void KernelSyncer::wake() const {
  if (wake_fd_ < 0) return;
  const uint64_t one = 1;
  const ssize_t r = ::write(wake_fd_, &one, sizeof one);  // fails only when the counter is full: awake anyway
  (void)r;
}

KernelStatus KernelSyncer::status() const {
  std::lock_guard lock(mu_);
  return status_;
}

void KernelSyncer::publish(const fib::Driver& d, bool running) {
  KernelStatus s;
  s.enabled = true;
  s.running = running;
  s.table = config_.table;
  s.metric = config_.metric;
  s.multipath = config_.multipath;
  s.nexthop_objects = d.nexthop_objects();
  s.counts = d.plan().counts();
  // Changes read from the table that the plan has not taken yet are
  // pending too: without them pending could read 0 while a full table's
  // backlog still waits in the syncer's list.
  s.queued = queued_;
  s.counts.pending += queued_;
  s.caught_up = first_read_ && s.counts.pending == 0;
  s.removals_allowed = removals_;
  if (d.plan().deferred(net::IpFamily::V4)) s.deferred.emplace_back("ipv4-unicast");
  if (d.plan().deferred(net::IpFamily::V6)) s.deferred.emplace_back("ipv6-unicast");
  s.stats = d.stats();
  s.table_resyncs = table_resyncs_;
  s.read_ns = read_ns_;
  s.wait_ns = wait_ns_;
  s.last_error = last_error_;
  for (const auto& [index, i] : d.interfaces().all()) {
    KernelInterface k{index, i.name, i.up(), {}};
    for (const auto& a : i.addresses) k.addresses.push_back(a.local.to_string() + "/" + std::to_string(a.prefix_len));
    s.interfaces.push_back(std::move(k));
  }
  std::lock_guard lock(mu_);
  status_ = std::move(s);
}

void KernelSyncer::open_driver(KernelRestart restart) {
  fib::DriverOptions o;
  o.plan.table = config_.table;
  o.plan.metric = config_.metric;
  o.plan.found_objects_foreign = restart.reload == KernelRestart::Reload::kBeside;
  o.nexthop_objects = config_.nexthop_objects;
  o.resolve.table = config_.resolve_table;
  o.resolve.via_default = config_.resolve_via_default;
  o.resolve.max_routes = static_cast<size_t>(config_.max_resolve_routes);
  auto opened = fib::Driver::open(o);
  if (!opened) {
    last_error_ = opened.error().text();
    log(LogLevel::kError, "kernel-failed", {}, last_error_);
    std::lock_guard lock(mu_);
    status_.last_error = last_error_;
    return;
  }
  fib::Driver& d = **opened;
  if (auto r = d.start(); !r) {
    last_error_ = r.error().text();
    log(LogLevel::kError, "kernel-failed", {}, last_error_);
    std::lock_guard lock(mu_);
    status_.last_error = last_error_;
    return;
  }
  driver_ = std::move(*opened);
  if (restart.reload != KernelRestart::Reload::kNo) {
    log(LogLevel::kInfo, "kernel-started",
        {{"table", config_.table}, {"metric", config_.metric}, {"routes_found", d.plan().counts().installed},
         {"nexthop_objects", d.nexthop_objects()},
         {"reload", restart.reload == KernelRestart::Reload::kBeside ? "beside" : "in-place"}},
        "started by a reload: the table is complete, nothing is deferred");
    return;
  }
  // Petrel's own restart (RFC 4724 section 4.1): a family whose routes of
  // ours survived the last process is deferred; the R and F bits follow.
  codec::FamilySet kept;
  const uint64_t found4 = d.plan().found(net::IpFamily::V4), found6 = d.plan().found(net::IpFamily::V6);
  if (restart.graceful) {
    if (found4) kept.add(codec::kIpv4Unicast);
    if (found6) kept.add(codec::kIpv6Unicast);
  }
  std::vector<fsm::RestartDeferral::Peer> waited;
  for (const PeerConfig& p : peers_)
    if (p.enabled && p.graceful.enabled) waited.push_back({p.name, p.families});
  own_restart().begin(fsm::RestartDeferral(std::move(waited), kept, OwnRestart::now() + restart.deferral_seconds),
                      [this] { wake(); });
  began_restart_ = true;
  if (found4 && kept.has(codec::kIpv4Unicast)) {
    d.plan().defer(net::IpFamily::V4);
    own_restart().kernel_deferred(codec::kIpv4Unicast);
  }
  if (found6 && kept.has(codec::kIpv6Unicast)) {
    d.plan().defer(net::IpFamily::V6);
    own_restart().kernel_deferred(codec::kIpv6Unicast);
  }
  restarting_ = !kept.empty();
  log(LogLevel::kInfo, "kernel-started",
      {{"table", config_.table}, {"metric", config_.metric}, {"routes_found", d.plan().counts().installed},
       {"interfaces", d.interfaces().all().size()}, {"nexthop_objects", d.nexthop_objects()},
       {"nexthop_objects_found", d.plan().counts().nexthop_objects}});
  if (restarting_)
    log(LogLevel::kInfo, "graceful-restart-deferral",
        {{"ipv4_routes_found", found4}, {"ipv6_routes_found", found6},
         {"selection_deferral_time", static_cast<uint64_t>(restart.deferral_seconds)}},
        "Petrel restarted with its kernel routes kept: they stay, and kernel changes wait for the graceful "
        "restart peers' End-of-RIB or the selection deferral timer (RFC 4724 section 4.1)");
  if (config_.nexthop_objects && !d.nexthop_objects_supported())
    log(LogLevel::kWarn, "kernel-no-nexthop-objects", {},
        "the kernel refused a nexthop object dump (RTM_GETNEXTHOP): routes carry their gateways");
}

void KernelSyncer::tell_table(const std::vector<table::NexthopUpdate>& changed) {
  if (changed.empty()) return;
  const uint64_t routes = table_.nexthops_changed(changed);
  log(LogLevel::kInfo, "nexthops-changed", {{"nexthops", changed.size()}, {"routes", routes}},
      "next hops' resolution or interior cost changed (the kernel's routes or links did)");
}

void KernelSyncer::run() {
  if (!driver_) return;
  fib::Driver& d = *driver_;
  publish(d, true);
  // From now on the table's next hops are resolved against this driver's
  // view of the kernel (daemon/nexthops.h); those met before are worked
  // out again.
  if (nexthops_) {
    std::vector<table::NexthopUpdate> changed;
    {
      auto lock = nexthops_->update();
      changed = nexthops_->attach(this, &d.resolver(), &d.interfaces(), lock);
    }
    tell_table(changed);
  }

  // A shard handed again from the start (the first read, or a journal
  // overrun): what was wanted of it and not handed again is unwanted after
  // the read, found by one scan of the plan for all such shards of the
  // read (no per-prefix memory is kept between reads for this).
  std::vector<uint8_t> resynced(table_.shard_count());
  bool any_resync = false;
  std::unordered_set<net::Prefix> handed;  // by the resynchronised shards
  // With multipath, the prefixes a read changed: their equal routes are
  // looked up after the read (which holds each shard's lock meanwhile).
  std::vector<std::pair<table::FamilyIndex, net::Prefix>> deferred;
  auto follower = table_.follow();
  // Subscribed for the thread's life: the writers' wakes end its wait.
  table::Subscription woken = table_.subscribe([this] { wake(); });
  const auto t0 = Clock::now();
  auto last_retry = t0, last_publish = t0;
  bool unpublished = false;  // the status has changed since the last publish()
  std::string reported;  // the last error logged, to log each once
  GatewayMemo memo;
  // A read's wishes, applied to the plan after it: the table hands them
  // out under each shard's lock, and a plan update (a hash map of every
  // prefix) costs more than the hand-over, so the sessions' writes to the
  // shard wait only for the latter. While the table fills, up to
  // kWishesPerRound of them go to the plan a round and the rest wait
  // here, in order: the journals' retention is bounded, this list is not,
  // so the reads stay short and frequent and the journals do not overrun.
  // gateway: an index into gateways (the distinct gateways of the wishes
  // not yet drained), or kUnwanted.
  struct Wish {
    net::Prefix prefix;
    uint32_t gateway;
  };
  constexpr uint32_t kUnwanted = UINT32_MAX;
  constexpr uint32_t kBlackhole = UINT32_MAX - 1;
  std::vector<Wish> wishes;
  size_t applied = 0;  // wishes before this one are in the plan
  std::vector<fib::Gateway> gateways;
  uint32_t memo_index = kUnwanted;  // memo.gateway's index in gateways (kUnwanted: not there yet)

  auto on_event = [&](const table::FollowEvent& ev) {
    if (ev.resync) {
      resynced[ev.shard] = 1;
      any_resync = true;
    }
    if (ev.change.family == UINT8_MAX) return;  // an empty shard
    if (resynced[ev.shard]) handed.insert(ev.change.prefix);
    if (ev.change.family != kV4 && ev.change.family != kV6) return;
    const net::Prefix& p = ev.change.prefix;
    const int f = ev.change.family;
    if (ev.best && !memo.holds(ev.best->attrs->wire(), f, ev.best->slot, interfaces_generation_)) {
      memo.gateway = gateway_of(*ev.best->attrs, f, [&] { return session_ifindex(*ev.best, d.interfaces()); });
      memo.blackhole = config_.blackhole_community && carries_blackhole(*ev.best->attrs);
      const bytes::Span w = ev.best->attrs->wire();
      memo.wire.assign(w.begin(), w.end());
      memo.family = f;
      memo.slot = ev.best->slot;
      memo.generation = interfaces_generation_;
      memo.valid = true;
      memo_index = kUnwanted;
    }
    if (ev.best && memo.blackhole) {
      wishes.push_back(Wish{p, kBlackhole});  // RTBH: no next hop needed
    } else if (!ev.best || !memo.gateway) {
      wishes.push_back(Wish{p, kUnwanted});
    } else if (config_.multipath) {
      deferred.emplace_back(ev.change.family, p);
    } else {
      if (memo_index == kUnwanted) {
        memo_index = static_cast<uint32_t>(gateways.size());
        gateways.push_back(*memo.gateway);
      }
      wishes.push_back(Wish{p, memo_index});
    }
  };

  while (!stop_) {
    const auto read_start = Clock::now();
    // Petrel restarting: the families settled before this read. A session
    // writes its routes to the table before it reports its End-of-RIB, so
    // this read holds every route that ended their deferral; a family
    // settled later waits for the next read (else its found routes would
    // be removed and added again).
    std::array<bool, 2> settled{};
    if (restarting_ && !removals_)
      for (size_t i = 0; i < 2; ++i)
        settled[i] = own_restart().settled(i == 0 ? codec::kIpv4Unicast : codec::kIpv6Unicast) !=
                     fsm::RestartDeferral::Settled::kNo;
    (void)woken.take();  // before the read: a change after it wakes the wait below
    uint64_t resyncs = follower.resyncs();
    size_t n = table_.read(follower, kReadPerShard, on_event);
    table_resyncs_ += follower.resyncs() - resyncs;
    // All of them before a resynchronised shard's scan or multipath's
    // look-ups (which must see the plan as the table was); else a part.
    size_t upto = any_resync || !deferred.empty() ? wishes.size() : std::min(wishes.size(), applied + kWishesPerRound);
    for (; applied < upto; ++applied) {
      const Wish& w = wishes[applied];
      if (w.gateway == kUnwanted) d.plan().unwant(w.prefix);
      else if (w.gateway == kBlackhole) d.plan().want(w.prefix, fib::Want{{}, false, true});
      else d.plan().want(w.prefix, fib::Want{{gateways[w.gateway]}, false});
    }
    queued_ = wishes.size() - applied;
    if (applied == wishes.size()) {
      first_read_ = true;  // (a reload's syncer: the whole table is in the plan)
      // A full table's backlog (24 octets a wish) is not kept once drained.
      if (wishes.capacity() > 4 * kWishesPerRound) std::vector<Wish>().swap(wishes);
      wishes.clear();
      gateways.clear();
      memo_index = kUnwanted;
      applied = 0;
    }
    for (const auto& [f, p] : deferred) {
      fib::Want w = multipath_want(f, p, d.interfaces());
      if (w.gateways.empty()) d.plan().unwant(p);
      else d.plan().want(p, std::move(w));
    }
    deferred.clear();
    if (any_resync) {
      std::vector<net::Prefix> gone;
      d.plan().for_each_wanted([&](const net::Prefix& p) {
        if (resynced[table_.shard_of(p)] && !handed.count(p)) gone.push_back(p);
      });
      for (const auto& p : gone) d.plan().unwant(p);
      std::fill(resynced.begin(), resynced.end(), 0);
      handed.clear();
      any_resync = false;
    }
    read_ns_ += ns_since(read_start);

    auto now = Clock::now();
    // A reload's syncer: the table is complete once its first read is in
    // the plan (KernelRestart::reload).
    const bool grace_over = reload_ != KernelRestart::Reload::kNo ? first_read_ : now - t0 >= kStaleGrace;
    if (!removals_) settle_restart(d, grace_over, applied == wishes.size() ? settled : std::array<bool, 2>{});
    if (now - last_retry >= kRetryRefused) {
      last_retry = now;
      d.plan().retry_refused();
    }
    Result<bool, fib::DriverError> changed = false;
    std::vector<table::NexthopUpdate> nexthops_changed;
    {
      // The tracker's resolve() (table writers' threads) waits meanwhile.
      std::unique_lock<std::mutex> lock;
      if (nexthops_) lock = nexthops_->update();
      changed = d.read_notifications();
      if (nexthops_ && changed && *changed) nexthops_changed = nexthops_->refresh(lock);
    }
    tell_table(nexthops_changed);
    if (!changed) last_error_ = changed.error().text();
    else if (*changed) ++interfaces_generation_;  // sessions' interfaces worked out again
    if (d.resolver().over_limit() != 0 && !resolve_limit_logged_) {
      resolve_limit_logged_ = true;
      log(LogLevel::kWarn, "kernel-resolve-limit", {{"max_resolve_routes", config_.max_resolve_routes}},
          "the resolve table holds more foreign routes than kernel.max_resolve_routes: those beyond are not "
          "used to resolve next hops (counted in GET /api/nexthops)");
    }
    // Whatever sync() is about to do, the status shows it by the next
    // publish (which an idle wait does not sleep past).
    if (n > 0 || !d.plan().idle() || (changed && *changed)) unpublished = true;
    // Bounded so a full table's installation still reads the journals
    // between rounds (they would overrun and resynchronise otherwise).
    if (auto r = d.sync(n > kBacklogRead ? kSyncBehind : kSyncPerRound); !r) last_error_ = r.error().text();
    report_updated(d.plan().idle());
    if (last_error_.empty() && d.plan().last_error() != 0)
      last_error_ = std::string("route refused: ") + std::strerror(-d.plan().last_error());
    if (!last_error_.empty() && last_error_ != reported) {
      reported = last_error_;
      unpublished = true;
      log(LogLevel::kWarn, "kernel-error", {}, last_error_);
    }
    // Idle, at the safety wait's pace (the time spent waiting goes on).
    if ((unpublished && now - last_publish >= kPublish) || now - last_publish >= kSafetyWait) {
      last_publish = now;
      unpublished = false;
      publish(d, true);
    }
    if (n == 0 && wishes.empty() && d.plan().idle()) {
      // Until woken, or the next thing due, or kSafetyWait.
      auto due = std::min(last_retry + kRetryRefused, Clock::now() + kSafetyWait);
      if (!removals_ && !restarting_) due = std::min(due, t0 + kStaleGrace);
      if (!removals_ && restarting_) due = std::min(due, Clock::now() + std::chrono::milliseconds(250));
      if (unpublished) due = std::min(due, last_publish + kPublish);
      auto ms = std::chrono::ceil<std::chrono::milliseconds>(due - Clock::now()).count();
      if (wake_fd_ < 0) ms = std::min<decltype(ms)>(ms, kIdleWaitMs);
      pollfd p[3] = {{d.notify_fd(), POLLIN, 0}, {d.route_fd(), POLLIN, 0}, {wake_fd_, POLLIN, 0}};
      const auto wait_start = Clock::now();
      (void)poll(p, wake_fd_ >= 0 ? 3 : 2, static_cast<int>(std::max<decltype(ms)>(ms, 0)));
      wait_ns_ += ns_since(wait_start);
      if (wake_fd_ >= 0 && (p[2].revents & POLLIN)) {
        uint64_t count = 0;
        const ssize_t r = ::read(wake_fd_, &count, sizeof count);  // resets it (nonblocking)
        (void)r;
      }
    }
  }
  // The tracker no longer follows this driver (which goes with the syncer).
  if (nexthops_) tell_table(nexthops_->detach(this));
  if (keep_) {
    // Petrel restarts: its routes stay for the next process to find.
    log(LogLevel::kInfo, "kernel-stopped", {{"routes_removed", 0}, {"routes_kept", d.plan().counts().installed}});
    publish(d, false);
    return;
  }
  auto before = d.plan().counts().installed;
  auto r = d.remove_all();
  if (!r) log(LogLevel::kError, "kernel-failed", {}, r.error().text());
  log(LogLevel::kInfo, "kernel-stopped", {{"routes_removed", before - d.plan().counts().installed}});
  publish(d, false);
}

void KernelSyncer::report_updated(bool idle) {
  for (size_t i = 0; i < 2; ++i) {
    if (!updating_[i]) continue;
    const bool late = Clock::now() - *updating_[i] >= kForwardingWait;
    if (!idle && !late) continue;
    const codec::Family family = i == 0 ? codec::kIpv4Unicast : codec::kIpv6Unicast;
    own_restart().kernel_updated(family);
    char buf[32];
    log(late && !idle ? LogLevel::kWarn : LogLevel::kInfo, "graceful-restart-forwarding-updated",
        {{"family", std::string(codec::family_name(family, buf))},
         {"ms", static_cast<int64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                         Clock::now() - *updating_[i]).count())}},
        late && !idle ? "the kernel is still busy: the UPDATEs go anyway"
                      : "the kernel has the new routes: the UPDATEs go now (RFC 4724 section 4.1)");
    updating_[i].reset();
  }
}

void KernelSyncer::settle_restart(fib::Driver& d, bool grace_over, std::array<bool, 2> settled) {
  if (!restarting_) {
    // Not a graceful restart: routes of an earlier run wait kStaleGrace.
    if (grace_over) {
      removals_ = true;
      d.plan().allow_removals();
    }
    return;
  }
  bool deferred = false;
  for (size_t i = 0; i < 2; ++i) {
    const net::IpFamily f = i == 0 ? net::IpFamily::V4 : net::IpFamily::V6;
    const codec::Family family = i == 0 ? codec::kIpv4Unicast : codec::kIpv6Unicast;
    if (!d.plan().deferred(f)) continue;
    if (!settled[i]) {
      deferred = true;
      continue;
    }
    const auto how = own_restart().settled(family);
    char buf[32];
    const uint64_t found = d.plan().found(f);
    d.plan().release(f);
    updating_[i] = Clock::now();
    std::string waiting;
    for (const std::string& p : own_restart().waiting_for(family)) waiting += (waiting.empty() ? "" : ",") + p;
    log(LogLevel::kInfo, "graceful-restart-selection",
        {{"family", std::string(codec::family_name(family, buf))},
         {"reason", how == fsm::RestartDeferral::Settled::kTimer ? "selection-deferral-timer" : "end-of-rib"},
         {"routes_found", found}, {"still_waiting_for", waiting}},
        "route selection no longer deferred: only the kernel routes that differ are changed, those not "
        "learnt again are removed (RFC 4724 section 4.1)");
  }
  if (!deferred) {
    removals_ = true;
    d.plan().allow_removals();
  }
}

}  // namespace petrel::daemon
