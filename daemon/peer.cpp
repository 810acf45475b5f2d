// The per-peer session driver: dialer with back-off, listener hand-off,
// FSM stepping, socket reads and bounded writes, UPDATE decoding and
// counting, collision resolution (RFC 4271 section 6.8) and clean closes.
#include "daemon/peer.h"

#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <exception>
#include <span>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

#include "codec/notification.h"
#include "codec/route_refresh.h"
#include "codec/update.h"
#include "crates/sendq/send_queue.h"
#include "daemon/bmp.h"
#include "daemon/log.h"
#include "daemon/mrt_log.h"
#include "daemon/restart.h"
#include "daemon/worker.h"
#include "fsm/negotiate.h"

namespace petrel::daemon {

namespace {

constexpr size_t kReadChunk = 64 * 1024;
constexpr int kReadsPerWakeup = 16;           // fairness between sessions on one worker
constexpr auto kReadBudget = std::chrono::milliseconds(20);  // and at most this long a wakeup: the
                                              // loop's timers (KEEPALIVEs to every session of the
                                              // worker) go between
constexpr size_t kMaxUnsent = 64u << 20;      // bytes queued for one peer before it is dropped
constexpr double kLingerSeconds = 2.0;        // wait for the peer to read our NOTIFICATION
constexpr size_t kKeepOut = 4u << 10;         // a drained send buffer keeps at most this
constexpr size_t kKeepBatchOps = 64;          // a drained socket's import batch keeps at most this
constexpr size_t kExportBuffer = 1u << 20;    // unsent bytes at which the exporter pauses
constexpr size_t kExportSlice = 64u << 10;    // octets one turn of the exporter may write: the
                                              // worker's other sessions (keepalives) go between
// kExportSlice was 256 KiB until 2026-12-07: an update group's members each
// copy a turn's worth of the group's stream into their own buffer, and
// 700 route-server members peaked at 272 MiB with it, 123-138 with 64 KiB
// (200 members: 48-93 -> 52-54 MiB; one neighbour's 1M table as fast;
// docs/performance.md, "One neighbour, IPv6 too, and four neighbours").
// The exporter runs when the table wakes it (Table::subscribe, after a
// write appended to the journals), at most once per kExportGap for wakes
// (a busy table wakes after every batch; the changes of the gap go out
// together), at once again while it has more, and every kExportSafety
// seconds whatever: a wake missed (none should be) delays a change by
// that much, never loses it.
constexpr double kExportGap = 0.002;
constexpr double kExportSafety = 1.0;
// Petrel restarting: how often a session whose exporter waits for the end
// of the route selection deferral looks again (the deferral ends on the
// End-of-RIB of other sessions, or on its timer).
constexpr double kSelectionPoll = 0.25;
// Oscillation damping (RFC 4271 section 8.1.1; peer.damp_oscillations): a
// session that went down less than kStableSeconds after it came up is
// short. The first kFreeShortDowns in a row cost nothing (a peer that
// restarts, a test); each further one holds the next session back
// kDampFirst seconds, doubling to kDampMax. A session that lasted
// kStableSeconds starts the count again.
constexpr double kStableSeconds = 60;
constexpr uint32_t kFreeShortDowns = 2;
constexpr double kDampFirst = 4;
constexpr double kDampMax = 120;

fsm::Time now() {
  return std::chrono::time_point_cast<fsm::Duration>(std::chrono::steady_clock::now());
}

int64_t now_ms() { return now().time_since_epoch().count(); }

std::string notification_text(const codec::Notification& n) {
  std::string s(codec::error_code_name(n.error_code()));
  auto sub = codec::error_subcode_name(n.error_code(), n.subcode);
  if (!sub.empty()) {
    s += " / ";
    s += sub;
  }
  if (auto text = codec::shutdown_communication(n); text && !text->empty()) {
    s += ": \"";
    s += *text;
    s += "\"";
  }
  return s;
}

// A socket we are done with: its FIN is sent (our NOTIFICATION goes
// first), and it is drained until the peer closes or kLingerSeconds pass,
// so unread input does not turn our close into a reset that could discard
// the NOTIFICATION before the peer reads it.
// `finished` runs on the loop when the socket is closed.
struct Linger {
  int fd;
  ev_io io;
  ev_timer timer;
  struct ev_loop* loop;
  std::function<void()> finished;

  static void start(struct ev_loop* loop, int fd, std::function<void()> finished) {
    auto* l = new Linger{fd, {}, {}, loop, std::move(finished)};
    ::shutdown(fd, SHUT_WR);
    ev_io_init(&l->io, &Linger::on_read, fd, EV_READ);
    l->io.data = l;
    ev_io_start(loop, &l->io);
    ev_timer_init(&l->timer, &Linger::on_timeout, kLingerSeconds, 0);
    l->timer.data = l;
    ev_timer_start(loop, &l->timer);
  }
  void finish() {
    ev_io_stop(loop, &io);
    ev_timer_stop(loop, &timer);
    ::close(fd);
    auto f = std::move(finished);
    delete this;
    if (f) f();
  }
  static void on_read(struct ev_loop*, ev_io* w, int) {
    auto* l = static_cast<Linger*>(w->data);
    char buf[4096];
    for (int i = 0; i < 64; ++i) {
      ssize_t n = ::read(l->fd, buf, sizeof buf);
      if (n > 0) continue;
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
      break;  // EOF or error
    }
    l->finish();
  }
  static void on_timeout(struct ev_loop*, ev_timer* w, int) { static_cast<Linger*>(w->data)->finish(); }
};

}  // namespace

struct Peer::Connection {
  Connection(Peer* p, fsm::Direction d, fsm::PeerConfig cfg) : peer(p), dir(d), fsm(std::move(cfg)) {}

  Peer* peer;
  fsm::Direction dir;
  fsm::Fsm fsm;
  int fd = -1;
  bool dialing = false;
  ev_io rio{};
  ev_io wio{};
  ev_timer timer{};
  codec::Framer framer;
  sendq::SendQueue out;  // bytes for the socket, not yet sent
  std::optional<fsm::Time> unsent_since;
  bool dead = false;
  std::string remote;
  // For BMP's Peer Up and Peer Down (daemon/bmp.h): the OPENs and the
  // last NOTIFICATION each way, whole.
  std::vector<std::byte> sent_open, received_open, notification_out, notification_in;
  // For the MRT UPDATE log's records (daemon/mrt_log.h): our address on
  // the connection, looked up once the socket has one.
  std::optional<net::IpAddress> mrt_local;
};

namespace {

// RFC 4271 section 8.2.2's numbering, as BGP4MP_STATE_CHANGE carries it.
uint16_t mrt_state(fsm::State s) { return static_cast<uint16_t>(static_cast<int>(s) + 1); }

// RFC 8050 section 3: the _ADDPATH subtype for an UPDATE whose NLRI carry
// path identifiers, those of a family with ADD-PATH receive negotiated
// (one that mixes such a family with another is logged as _ADDPATH too:
// MRT has no way to say which NLRI carry them).
bool mrt_add_path(const codec::UpdateView& u, const codec::SessionParams& p) {
  const codec::FamilySet& ap = p.add_path_receive;
  if ((!u.nlri().empty() || !u.withdrawn().empty()) && ap.has(codec::kIpv4Unicast)) return true;
  if (u.mp_reach() && ap.has(u.mp_reach()->family)) return true;
  return u.mp_unreach() && ap.has(u.mp_unreach()->family);
}

}  // namespace

// The session as a BGP4MP record names it (RFC 6396 section 4.4).
mrt::Bgp4mpPeer Peer::mrt_session(Connection& c) {
  if (!c.mrt_local && c.fd >= 0 && !c.dialing)
    if (auto l = local_endpoint(c.fd)) c.mrt_local = l->addr;
  mrt::Bgp4mpPeer p;
  p.peer_as = c.fsm.negotiated() ? c.fsm.negotiated()->peer_as : peer_.asn;
  p.local_as = config_.router.asn;
  p.peer_ip = peer_.address;
  if (c.mrt_local) p.local_ip = *c.mrt_local;
  return p;
}

fsm::PeerConfig make_fsm_config(const Config& config, const PeerConfig& peer) {
  fsm::PeerConfig f;
  f.local_as = config.router.asn;
  f.peer_as = peer.asn;
  f.local_id = config.router.router_id.v4_value();
  f.hold_time = peer.hold_time;
  f.keepalive = peer.keepalive;
  f.connect_retry = std::chrono::seconds(peer.connect_retry);
  f.delay_open = std::chrono::seconds(peer.delay_open);
  if (peer.send_hold_time) {
    // 0 in the configuration disables RFC 9687's timer; the FSM reads 0 as
    // "the default", so give it a value no session reaches instead.
    f.send_hold = *peer.send_hold_time == 0 ? std::chrono::seconds(365L * 24 * 3600)
                                            : std::chrono::seconds(*peer.send_hold_time);
  }
  f.passive = peer.passive;
  codec::Capabilities& caps = f.capabilities;
  for (codec::Family fam : codec::kKnownFamilyList)
    if (peer.families.has(fam)) caps.multiprotocol.push_back(fam);
  caps.route_refresh = true;
  caps.enhanced_route_refresh = true;
  caps.four_octet_as = config.router.asn;
  caps.extended_message = true;
  for (codec::Family fam : codec::kKnownFamilyList) {
    bool rx = peer.add_path_receive.has(fam), tx = peer.add_path_send.has(fam);
    if (!rx && !tx) continue;
    codec::AddPathMode m = rx && tx ? codec::AddPathMode::kBoth
                           : rx     ? codec::AddPathMode::kReceive
                                    : codec::AddPathMode::kSend;
    caps.add_path.push_back({fam, m});
  }
  for (codec::Family fam : codec::kKnownFamilyList)
    if (peer.extended_next_hop.has(fam)) caps.extended_next_hop.push_back({fam, 2});
  if (peer.graceful.enabled) caps.graceful_restart = offered_graceful_restart(peer);
  caps.long_lived_graceful_restart = offered_long_lived_graceful_restart(peer);
  caps.role = peer.local_role;  // RFC 9234 (the FSM checks the peer's)
  f.strict_role = peer.strict_role;
  return f;
}

TransportOptions transport_options(const PeerConfig& peer) {
  TransportOptions o;
  o.md5_password = peer.password;
  if (peer.tcp_ao) {
    const TcpAoConfig& a = *peer.tcp_ao;
    o.ao = TcpAoKey{a.key_id, a.rnext_key_id, a.algorithm == "cmac-aes128" ? "cmac(aes128)" : "hmac(sha1)",
                    a.password};
  }
  if (peer.ttl_security) {
    o.ttl = 255;
    o.min_ttl = 256 - peer.multihop;
  } else {
    o.ttl = peer.multihop;
  }
  return o;
}

Peer::Peer(const Config& config, const PeerConfig& peer, Worker& worker, table::Table& table,
           table::ExportGroups& groups, uint64_t seed, const Config* policies)
    : config_(config),
      peer_(peer),
      fsm_config_(make_fsm_config(config, peer)),
      transport_(transport_options(peer)),
      worker_(worker),
      table_(table),
      export_groups_(groups),
      batch_(table),
      backoff_(static_cast<double>(peer.connect_retry), std::max(120.0, 8.0 * peer.connect_retry), 0.25,
               seed) {
  ev_timer_init(&dial_timer_, &Peer::on_dial_timer, 0, 0);
  dial_timer_.data = this;
  ev_timer_init(&export_timer_, &Peer::on_export_timer, 0, kExportSafety);
  export_timer_.data = this;
  ev_async_init(&export_wake_, &Peer::on_export_wake);
  export_wake_.data = this;
  ev_timer_init(&limit_timer_, &Peer::on_limit_timer, 0, 0);
  limit_timer_.data = this;
  ev_timer_init(&graceful_timer_, &Peer::on_graceful_timer, 0, 0);
  graceful_timer_.data = this;
  ev_timer_init(&selection_timer_, &Peer::on_selection_timer, 0, 0);
  selection_timer_.data = this;
  ev_timer_init(&rpki_refresh_timer_, &Peer::on_rpki_refresh_timer, 0, 0);
  rpki_refresh_timer_.data = this;
  import_ = import_policy(policies ? *policies : config, peer);
  export_ = export_policy(policies ? *policies : config, peer);
  shown_export_ = export_;  // no other thread sees the peer yet
  refused_.set_max(peer.keep_refused);
  allow_own_as_ = peer.allow_own_as;
  shown_ = std::make_shared<const PeerConfig>(peer);
  cluster_id_ = (config.router.cluster_id ? *config.router.cluster_id : config.router.router_id).v4_value();
  table::PrefixLimits limits;
  limits.max = peer.max_prefixes;
  limits.warn_only = peer.max_prefixes_warn_only;
  limits.warn_percent = peer.max_prefixes_warn;
  limits_ = table::PrefixLimitWatch(limits);
}

Peer::~Peer() { retire(); }

void Peer::retire() {
  if (retired()) return;
  shutting_down_ = true;
  ev_timer_stop(worker_.loop(), &dial_timer_);
  ev_timer_stop(worker_.loop(), &export_timer_);
  export_woken_.reset();  // before the watcher it sends to stops
  ev_async_stop(worker_.loop(), &export_wake_);
  ev_timer_stop(worker_.loop(), &limit_timer_);
  for (auto& c : conns_)
    if (c) close_socket(*c);
  leave_table();
  ev_timer_stop(worker_.loop(), &graceful_timer_);
  ev_timer_stop(worker_.loop(), &selection_timer_);
  ev_timer_stop(worker_.loop(), &rpki_refresh_timer_);
  retired_.store(true, std::memory_order_release);
}

uint64_t Peer::table_routes(size_t family_index) const {
  int32_t slot = table_slot_.load(std::memory_order_acquire);
  if (slot < 0) return 0;
  return table_.peer_routes(static_cast<uint16_t>(slot), static_cast<table::FamilyIndex>(family_index));
}

uint64_t Peer::paths_refused() const {
  int32_t slot = table_slot_.load(std::memory_order_acquire);
  return slot < 0 ? 0 : table_.peer_paths_refused(static_cast<uint16_t>(slot));
}

bool Peer::enter_table(Connection& c) {
  const auto& n = *c.fsm.negotiated();
  if (table_slot_.load(std::memory_order_relaxed) >= 0) return true;  // kept by a graceful restart
  table::PeerInfo info;
  info.name = peer_.name;
  info.address = peer_.address;
  info.router_id = n.peer_id;
  info.asn = n.peer_as;
  info.internal = n.peer_as == config_.router.asn;
  info.rr_client = peer_.route_reflector_client;
  info.max_paths_per_prefix = peer_.max_paths_per_prefix;
  // ASPA verification by our role (RFC 9234): downstream for routes from
  // a provider, upstream for those from a customer, a lateral peer, a
  // route server or its client.
  if (!info.internal) info.aspa = aspa_check();
  auto slot = table_.add_peer(info);
  if (!slot) return false;
  table_slot_.store(*slot, std::memory_order_release);
  return true;
}

void Peer::bmp_session_up(Connection& c) {
  BmpClient* feed = bmp_feed();
  int32_t slot = table_slot_.load(std::memory_order_relaxed);
  if (!feed || slot < 0) return;
  const auto& n = *c.fsm.negotiated();
  BmpSessionUp up;
  up.name = peer_.name;
  up.slot = static_cast<uint16_t>(slot);
  up.address = peer_.address;
  up.as = n.peer_as;
  up.bgp_id = n.peer_id;
  if (auto l = local_endpoint(c.fd)) {
    up.local_address = l->addr;
    up.local_port = l->port;
  }
  if (auto r = remote_endpoint(c.fd)) up.remote_port = r->port;
  up.sent_open = c.sent_open;
  up.received_open = c.received_open;
  up.params = n.params;
  up.since_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                    std::chrono::system_clock::now().time_since_epoch()).count();
  feed->session_up(std::move(up));
}

void Peer::bmp_received(bytes::Span body) {
  const int32_t slot = table_slot_.load(std::memory_order_relaxed);
  if (slot < 0) return;
  BmpUpdate u;
  u.name = peer_.name;
  u.slot = static_cast<uint16_t>(slot);
  u.message = codec::whole_message(codec::MessageType::kUpdate, body);
  u.ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
             .count();
  bmp_feed()->received(std::move(u));
}

void Peer::bmp_refresh() {
  Connection* c = established();
  if (!c) return;
  const bool sent = ask_refresh(*c);
  log(LogLevel::kInfo, "bmp-refresh", {{"peer", peer_.name}},
      sent ? "a BMP station monitors pre-policy: ROUTE-REFRESH sent so that it gets the peer's routes"
           : "a BMP station monitors pre-policy, but the peer did not negotiate route refresh: the station gets "
             "its UPDATEs from now on");
  reap();
}

void Peer::bmp_session_down(const Connection& c, const fsm::SessionDown& down) {
  BmpClient* feed = bmp_feed();
  int32_t slot = table_slot_.load(std::memory_order_relaxed);
  if (!feed || slot < 0) return;
  BmpSessionDown d;
  d.name = peer_.name;
  d.slot = static_cast<uint16_t>(slot);
  // RFC 7854 section 4.9: whose NOTIFICATION, or none and why.
  if (down.cause == fsm::DownCause::kNotificationReceived && !c.notification_in.empty()) {
    d.reason = bmp::DownReason::kRemoteNotification;
    d.data = c.notification_in;
  } else if (down.notification_sent && !c.notification_out.empty()) {
    d.reason = bmp::DownReason::kLocalNotification;
    d.data = c.notification_out;
  } else if (down.cause == fsm::DownCause::kTcpFailed) {
    d.reason = bmp::DownReason::kRemoteNoNotification;
  } else {
    d.reason = bmp::DownReason::kLocalNoNotification;
    d.data = {std::byte{0}, std::byte{0}};  // no FSM event code to give (RFC 7854: 0)
  }
  d.since_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::system_clock::now().time_since_epoch()).count();
  feed->session_down(std::move(d));
}

void Peer::flush_batch() {
  if (batch_.empty()) return;
  int32_t slot = table_slot_.load(std::memory_order_relaxed);
  if (slot < 0) {
    batch_.clear();
    return;
  }
  const table::BatchResult r = table_.apply(static_cast<uint16_t>(slot), batch_);
  if (r.duplicates) counters_.duplicate_announcements.fetch_add(r.duplicates, std::memory_order_relaxed);
  check_limits(static_cast<uint16_t>(slot));
}

void Peer::check_limits(uint16_t slot) {
  if (!limits_.limits().any()) return;
  std::array<uint64_t, table::kFamilies> routes{};
  for (size_t f = 0; f < table::kFamilies; ++f)
    routes[f] = table_.peer_routes(slot, static_cast<table::FamilyIndex>(f));
  for (const table::LimitEvent& e : limits_.check(routes)) {
    char buf[32];
    const std::string family(codec::family_name(codec::kKnownFamilyList[e.family], buf));
    const bool cease = e.kind == table::LimitEvent::Kind::kExceeded && !limits_.limits().warn_only;
    if (e.kind == table::LimitEvent::Kind::kWarn) {
      counters_.max_prefixes_warnings.fetch_add(1, std::memory_order_relaxed);
      log(LogLevel::kWarn, "max-prefixes-warning",
          {{"peer", peer_.name}, {"family", family}, {"routes", e.routes}, {"limit", e.limit},
           {"percent", static_cast<int64_t>(limits_.limits().warn_percent)}},
          "the peer's routes reached the warning threshold of max_prefixes");
      continue;
    }
    counters_.max_prefixes_exceeded.fetch_add(1, std::memory_order_relaxed);
    log(LogLevel::kWarn, "max-prefixes-exceeded",
        {{"peer", peer_.name}, {"family", family}, {"routes", e.routes}, {"limit", e.limit},
         {"action", cease ? "cease" : "warn"}},
        cease ? "the session is closed (Cease / Maximum Number of Prefixes Reached)"
              : "max_prefixes_action = \"warn\": the session stays up");
    if (cease && limit_cease_.empty()) {
      limit_cease_ = table::max_prefixes_data(e.family, e.limit);
      // Sent from the loop (or at once by handle_read): not from inside
      // the action or table operation that flushed the batch.
      ev_timer_stop(worker_.loop(), &limit_timer_);
      ev_timer_set(&limit_timer_, 0, 0);
      ev_timer_start(worker_.loop(), &limit_timer_);
    }
  }
}

void Peer::cease_for_limit() {
  ev_timer_stop(worker_.loop(), &limit_timer_);
  if (limit_cease_.empty()) return;
  std::vector<std::byte> data = std::move(limit_cease_);
  limit_cease_.clear();
  Connection* c = established();
  if (!c) return;
  // RFC 4486 section 4 recommends a back-off before the next attempt:
  // max_prefixes_restart, or none until an operator reloads.
  const uint32_t restart = peer_.max_prefixes_restart;
  held_until_ = restart ? ev_now(worker_.loop()) + restart : INFINITY;
  held_down_.store(true, std::memory_order_relaxed);
  log(LogLevel::kWarn, "max-prefixes-hold", {{"peer", peer_.name}, {"restart_seconds", static_cast<int64_t>(restart)}},
      restart ? "the session starts again after max_prefixes_restart seconds"
              : "the session stays down until a reload (SIGHUP) or a restart of petrel");
  step(*c, fsm::AutomaticStop{codec::cease::kMaxPrefixes, std::move(data)});
}

void Peer::on_limit_timer(struct ev_loop*, ev_timer* w, int) {
  auto* p = static_cast<Peer*>(w->data);
  Connection* c = p->established();
  try {
    p->cease_for_limit();
  } catch (const std::exception& e) {
    if (c) p->session_failed(*c, e.what());
  }
  p->reap();
}

bool Peer::held() {
  if (held_until_ > 0 && ev_now(worker_.loop()) >= held_until_) {
    held_until_ = 0;
    held_down_.store(false, std::memory_order_relaxed);
  }
  return held_until_ > 0;
}

void Peer::damp_after(const fsm::SessionDown& down) {
  // Only what the peer or the path did: not an operator's stop, a reload,
  // max_prefixes or Petrel's own failure (AutomaticStop).
  if (!peer_.damp_oscillations || shutting_down_ || down.cause == fsm::DownCause::kManualStop ||
      down.cause == fsm::DownCause::kAutomaticStop)
    return;
  const double now = ev_now(worker_.loop());
  if (now - up_at_ >= kStableSeconds) {
    quick_downs_ = 0;
  } else {
    ++quick_downs_;
  }
  quick_downs_shown_.store(quick_downs_, std::memory_order_relaxed);
  if (quick_downs_ <= kFreeShortDowns) return;
  const int doublings = static_cast<int>(std::min<uint32_t>(quick_downs_ - kFreeShortDowns - 1, 16));
  const double hold = std::min(kDampMax, std::ldexp(kDampFirst, doublings));
  damped_until_ = now + hold;
  damped_until_ms_.store(now_ms() + static_cast<int64_t>(hold * 1000), std::memory_order_relaxed);
  log(LogLevel::kWarn, "session-damped",
      {{"peer", peer_.name}, {"short_sessions", quick_downs_}, {"hold_seconds", static_cast<int64_t>(hold)}},
      "the session went down less than a minute after it came up, again: the next one waits (damp_oscillations)");
}

bool Peer::damped() {
  if (damped_until_ > 0 && ev_now(worker_.loop()) >= damped_until_) damped_until_ = 0;
  return damped_until_ > 0;
}

int64_t Peer::damped_for_ms() const {
  return std::max<int64_t>(0, damped_until_ms_.load(std::memory_order_relaxed) - now_ms());
}

void Peer::link_down(const std::string& interface) {
  for (auto& c : conns_) {
    if (!c || c->dead) continue;
    const bool was_established = c->fsm.state() == fsm::State::kEstablished;
    log(was_established ? LogLevel::kWarn : LogLevel::kInfo, "link-down",
        {{"peer", peer_.name}, {"interface", interface}, {"remote", c->remote}},
        "the peer's interface went down: the session ends now, not at the hold time (link_down_ends_session)");
    set_status(c->fsm.state(), "link down: " + interface);
    try {
      step(*c, fsm::TcpFailed{});
    } catch (const std::exception& e) {
      session_failed(*c, e.what());
    }
  }
  reap();
}

void Peer::link_up() {
  if (conns_[static_cast<size_t>(fsm::Direction::kOutgoing)] == nullptr) dial_later(0);
}

void Peer::resume_after_limit() {
  if (held_until_ == 0) return;
  held_until_ = 0;
  held_down_.store(false, std::memory_order_relaxed);
  log(LogLevel::kInfo, "max-prefixes-resume", {{"peer", peer_.name}},
      "the session that max_prefixes closed starts again");
  if (conns_[static_cast<size_t>(fsm::Direction::kOutgoing)] == nullptr) dial_later(0);
}

uint64_t Peer::best_routes(size_t family_index) const {
  int32_t slot = table_slot_.load(std::memory_order_acquire);
  if (slot < 0) return 0;
  return table_.peer_best(static_cast<uint16_t>(slot), static_cast<table::FamilyIndex>(family_index));
}

uint64_t Peer::advertised(size_t family_index) const {
  std::lock_guard lock(exporter_mu_);
  return exporter_ ? exporter_->counters().advertised[family_index].load(std::memory_order_relaxed) : 0;
}

table::AspaCheck Peer::aspa_check() const {
  // ASPA verification by our role (RFC 9234): downstream for routes from
  // a provider, upstream for those from a customer, a lateral peer, a
  // route server or its client; none without a role or for internal peers.
  if (!peer_.local_role || peer_.asn == config_.router.asn) return table::AspaCheck::kNone;
  return *peer_.local_role == codec::Role::kCustomer ? table::AspaCheck::kDownstream : table::AspaCheck::kUpstream;
}

bool Peer::ask_refresh(Connection& c) {
  const auto& n = *c.fsm.negotiated();
  if (!n.route_refresh && !n.enhanced_route_refresh) return false;
  for (codec::Family fam : codec::kKnownFamilyList) {
    if (!n.families.has(fam)) continue;
    std::vector<std::byte> rr;
    codec::encode_route_refresh(codec::RouteRefresh{fam, codec::RefreshSubtype::kRequest, {}}, rr);
    send_bytes(c, std::move(rr), codec::MessageType::kRouteRefresh);
  }
  return true;
}

void Peer::rpki_changed() {
  // A session that comes up later imports with the data as it is then.
  if (!import_.filter || !import_.filter->uses_validation() || !established()) return;
  // At most one ROUTE-REFRESH a minute for this: RTR caches publish every
  // few minutes, and a full table sent again is not free.
  if (ev_is_active(&rpki_refresh_timer_)) return;
  const double now = ev_now(worker_.loop());
  const double wait = std::max(0.0, last_rpki_refresh_ + kRpkiRefreshGap - now);
  ev_timer_set(&rpki_refresh_timer_, wait, 0);
  ev_timer_start(worker_.loop(), &rpki_refresh_timer_);
}

void Peer::on_rpki_refresh_timer(struct ev_loop* loop, ev_timer* w, int) {
  auto* p = static_cast<Peer*>(w->data);
  Connection* c = p->established();
  if (!c) return;
  p->last_rpki_refresh_ = ev_now(loop);
  const bool sent = p->ask_refresh(*c);
  log(LogLevel::kInfo, "rpki-import-refresh", {{"peer", p->peer_.name}},
      sent ? "the RPKI data changed and the import policy asks it: ROUTE-REFRESH sent"
           : "the RPKI data changed and the import policy asks it, but the peer did not negotiate route refresh: "
             "its routes keep the verdicts they had");
  p->reap();
}

Peer::ExportView Peer::export_view() const {
  std::lock_guard lock(exporter_mu_);
  return {shown_export_, shown_target_, shown_families_};
}

void Peer::leave_table() {
  end_session_routing();
  graceful_clear();
  int32_t slot = table_slot_.exchange(-1, std::memory_order_acq_rel);
  if (slot < 0) return;
  auto t0 = std::chrono::steady_clock::now();
  uint64_t n = table_.remove_peer(static_cast<uint16_t>(slot));
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  log(LogLevel::kInfo, "routes-withdrawn", {{"peer", peer_.name}, {"routes", n}, {"ms", static_cast<int64_t>(ms)}},
      "the session went down: all of the peer's routes left the table");
}

void Peer::end_session_routing() {
  ev_timer_stop(worker_.loop(), &export_timer_);
  ev_timer_stop(worker_.loop(), &selection_timer_);
  ev_timer_stop(worker_.loop(), &rpki_refresh_timer_);
  export_woken_.reset();
  ev_async_stop(worker_.loop(), &export_wake_);
  {
    std::lock_guard lock(exporter_mu_);
    exporter_.reset();
    refused_.clear();
    shown_target_.reset();
    shown_families_.reset();
  }
  batch_.clear();  // the session's last UPDATEs would be withdrawn at once
  limit_cease_.clear();
  ev_timer_stop(worker_.loop(), &limit_timer_);
}

PeerStatus Peer::status() const {
  std::lock_guard<std::mutex> lock(status_mu_);
  return status_;
}

std::shared_ptr<const PeerConfig> Peer::shown() const {
  std::lock_guard<std::mutex> lock(status_mu_);
  return shown_;
}

void Peer::update(const PeerConfig& next) {
  // Field by field: other threads read the identity keys meanwhile.
  take_live_keys(peer_, next);
  if (!peer_.damp_oscillations) {  // switched off: no hold, the count starts again
    const bool was_damped = damped();
    quick_downs_ = 0;
    damped_until_ = 0;
    quick_downs_shown_.store(0, std::memory_order_relaxed);
    damped_until_ms_.store(0, std::memory_order_relaxed);
    if (was_damped && conns_[static_cast<size_t>(fsm::Direction::kOutgoing)] == nullptr) dial_later(0);
  }
  refused_.set_max(peer_.keep_refused);
  table::PrefixLimits limits;
  limits.max = peer_.max_prefixes;
  limits.warn_only = peer_.max_prefixes_warn_only;
  limits.warn_percent = peer_.max_prefixes_warn;
  if (limits_.limits() != limits) {
    // A lower limit is checked at once (its Cease goes from the loop).
    limits_ = table::PrefixLimitWatch(limits);
    const int32_t slot = table_slot_.load(std::memory_order_relaxed);
    if (slot >= 0) check_limits(static_cast<uint16_t>(slot));
  }
  {
    std::lock_guard<std::mutex> lock(status_mu_);
    shown_ = std::make_shared<const PeerConfig>(peer_);
  }
  log(LogLevel::kInfo, "peer-updated", {{"peer", peer_.name}},
      "the reload's changes to this peer apply without a new session");
}

void Peer::set_status(fsm::State s, std::string_view error) {
  std::lock_guard<std::mutex> lock(status_mu_);
  status_.state = s;
  if (!error.empty()) status_.last_error = std::string(error);
  if (s == fsm::State::kEstablished && status_.established_since_ms == 0) status_.established_since_ms = now_ms();
  if (s != fsm::State::kEstablished) {
    status_.established_since_ms = 0;
    status_.peer_role.reset();
  }
}

void Peer::start() {
  if (!peer_.enabled) {
    log(LogLevel::kInfo, "peer-disabled", {{"peer", peer_.name}}, "enabled = false in the configuration");
    return;
  }
  if (peer_.passive) {
    set_status(fsm::State::kActive, {});
    return;  // waits for incoming()
  }
  dial_later(0);
}

void Peer::dial_later(double seconds) {
  if (shutting_down_ || peer_.passive || !peer_.enabled || admin_down()) return;
  if (held()) {
    if (std::isinf(held_until_)) return;  // resume_after_limit() dials
    seconds = std::max(seconds, held_until_ - ev_now(worker_.loop()));
  }
  if (damped()) seconds = std::max(seconds, damped_until_ - ev_now(worker_.loop()));
  ev_timer_stop(worker_.loop(), &dial_timer_);
  ev_timer_set(&dial_timer_, seconds, 0);
  ev_timer_start(worker_.loop(), &dial_timer_);
  if (seconds > 0)
    log(LogLevel::kDebug, "dial-scheduled", {{"peer", peer_.name}, {"in_ms", static_cast<int64_t>(seconds * 1000)}});
}

void Peer::on_dial_timer(struct ev_loop*, ev_timer* w, int) {
  auto* p = static_cast<Peer*>(w->data);
  (void)p->held();  // a hold that ran out ends (the API shows it)
  try {
    if (p->conns_[static_cast<size_t>(fsm::Direction::kOutgoing)] == nullptr)
      p->new_connection(fsm::Direction::kOutgoing, -1);
  } catch (const std::exception& e) {
    log(LogLevel::kError, "session-failure", {{"peer", p->peer_.name}}, e.what());
  }
  p->reap();
}

void Peer::new_connection(fsm::Direction dir, int fd) {
  fsm::PeerConfig cfg = fsm_config_;
  if (dir == fsm::Direction::kIncoming) cfg.passive = true;
  // The R and F bits as they are now (Petrel's own restart: R only while
  // its route selection is deferred), not as they were at construction.
  if (peer_.graceful.enabled) cfg.capabilities.graceful_restart = offered_graceful_restart(peer_);
  auto c = std::make_unique<Connection>(this, dir, std::move(cfg));
  c->fd = fd;
  ev_io_init(&c->rio, &Peer::on_read, 0, EV_READ);
  c->rio.data = c.get();
  ev_io_init(&c->wio, &Peer::on_write, 0, EV_WRITE);
  c->wio.data = c.get();
  ev_timer_init(&c->timer, &Peer::on_timer, 0, 0);
  c->timer.data = c.get();
  Connection& ref = *c;
  conns_[static_cast<size_t>(dir)] = std::move(c);
  if (fd >= 0) {
    if (auto r = remote_endpoint(fd)) ref.remote = r->to_string();
    ev_io_set(&ref.rio, fd, EV_READ);
    ev_io_start(worker_.loop(), &ref.rio);
    step(ref, fsm::ManualStart{});
    step(ref, fsm::TcpAccepted{});
  } else {
    step(ref, fsm::ManualStart{});
  }
}

void Peer::incoming(int fd, const SocketAddress& remote) {
  auto& slot = conns_[static_cast<size_t>(fsm::Direction::kIncoming)];
  const bool held_down = held();
  const bool damped_now = damped();
  std::optional<fsm::State> earlier;
  if (slot && !slot->dead) earlier = slot->fsm.state();
  const fsm::IncomingVerdict verdict = fsm::admit_incoming(earlier, earlier && graceful_session(*slot));
  if (shutting_down_ || !peer_.enabled || admin_down() || held_down || damped_now ||
      verdict == fsm::IncomingVerdict::kRefuseNew) {
    counters_.connections_refused.fetch_add(1, std::memory_order_relaxed);
    log_limited(peer_.name, LogLevel::kInfo, "connection-refused",
                {{"peer", peer_.name}, {"remote", remote.to_string()}},
        shutting_down_   ? "shutting down"
        : !peer_.enabled ? "peer disabled"
        : admin_down()   ? "peer disabled by an operator"
        : held_down      ? "max_prefixes holds the session down"
        : damped_now     ? "damp_oscillations holds the next session back"
                         : "a connection from this peer holds its OPEN");
    ::close(fd);
    return;
  }
  if (verdict == fsm::IncomingVerdict::kRestartExisting) {
    log(LogLevel::kInfo, "peer-restarted",
        {{"peer", peer_.name}, {"remote", remote.to_string()}, {"replaced", slot->remote}},
        "a new connection while the session is Established: the peer restarted (RFC 4724 section 4.2); "
        "the old session ends as if its connection had failed and its routes are kept stale");
    try {
      step(*slot, fsm::TcpFailed{});
    } catch (const std::exception&) {
      close_socket(*slot);
    }
    slot->dead = true;
  } else if (verdict == fsm::IncomingVerdict::kReplaceExisting) {
    // The earlier connection never received an OPEN: a silent connect
    // must not keep the peer out for the open-hold time (fsm/collision.h).
    Connection& old = *slot;
    log(LogLevel::kInfo, "connection-replaced",
        {{"peer", peer_.name}, {"remote", remote.to_string()}, {"replaced", old.remote},
         {"state", fsm::state_name(old.fsm.state())}},
        "an earlier incoming connection that sent no OPEN is closed (Cease / Connection Rejected)");
    try {
      step(old, fsm::AutomaticStop{codec::cease::kConnectionRejected, {}});
    } catch (const std::exception&) {
      old.dead = true;
    }
    old.dead = true;
  }
  if (slot) reap();
  log_limited(peer_.name, LogLevel::kDebug, "connection-accepted", {{"peer", peer_.name}, {"remote", remote.to_string()}});
  try {
    new_connection(fsm::Direction::kIncoming, fd);
  } catch (const std::exception& e) {
    if (auto& c = conns_[static_cast<size_t>(fsm::Direction::kIncoming)]) session_failed(*c, e.what());
  }
  reap();
}

void Peer::shutdown(std::string message, std::function<void()> done, Stop how, uint8_t cease_subcode) {
  shutting_down_ = true;
  shutdown_message_ = std::move(message);
  ev_timer_stop(worker_.loop(), &dial_timer_);
  for (auto& c : conns_) {
    if (!c || c->dead) continue;
    if (how == Stop::kRestart && c.get() == established() && graceful_peer_) {
      // Nothing more goes out (what is queued would be cut anyway): the
      // peer sees the connection close and keeps our routes, stale.
      c->out.clear();
      close_socket(*c);
      c->dead = true;
      log(LogLevel::kInfo, "graceful-restart-stop", {{"peer", peer_.name}},
          "session closed without a NOTIFICATION: the peer keeps Petrel's routes while it restarts "
          "(RFC 4724 section 4.2)");
      continue;
    }
    try {
      const bool with_text = cease_subcode == codec::cease::kAdministrativeShutdown ||
                             cease_subcode == codec::cease::kAdministrativeReset;
      step(*c, fsm::ManualStop{cease_subcode, with_text ? shutdown_message_ : std::string()});
    } catch (const std::exception& e) {
      close_socket(*c);
    }
  }
  reap();
  // done() once the peers had their chance to read our NOTIFICATION: when
  // the last lingering socket of this peer is closed (at most
  // kLingerSeconds from now), or now if there is none.
  shutdown_done_ = std::move(done);
  if (lingering_ == 0) linger_finished();
}

AdminResult Peer::admin(control::PeerAction action, const std::string& message) {
  using control::PeerAction;
  if (shutting_down_) return {false, "petrel is shutting down"};
  std::string done;
  switch (action) {
    case PeerAction::kDisable:
    case PeerAction::kShutdown:
    case PeerAction::kReset: {
      const bool reset = action == PeerAction::kReset;
      if (!reset) {
        admin_down_.store(true, std::memory_order_relaxed);
        ev_timer_stop(worker_.loop(), &dial_timer_);
      }
      size_t closed = 0;
      for (auto& c : conns_) {
        if (!c || c->dead) continue;
        ++closed;
        try {
          step(*c, fsm::ManualStop{reset ? codec::cease::kAdministrativeReset : codec::cease::kAdministrativeShutdown,
                                   message});
        } catch (const std::exception&) {
          close_socket(*c);
        }
      }
      reap();
      if (reset && conns_[static_cast<size_t>(fsm::Direction::kOutgoing)] == nullptr && !ev_is_active(&dial_timer_))
        dial_later(0);
      done = reset ? "the session was reset (Cease / Administrative Reset)"
                   : "the session is down (Cease / Administrative Shutdown) until petrel peer NAME enable";
      if (closed == 0) done = reset ? "no session was open" : "disabled; no session was open";
      break;
    }
    case PeerAction::kEnable:
      if (!admin_down()) return {true, "the peer was not disabled"};
      admin_down_.store(false, std::memory_order_relaxed);
      start();
      done = "enabled";
      break;
    case PeerAction::kSoftIn: {
      Connection* c = established();
      if (!c) return {false, "no session is established"};
      if (!ask_refresh(*c)) return {false, "the peer did not negotiate route refresh"};
      reap();
      done = "ROUTE-REFRESH sent";
      break;
    }
    case PeerAction::kSoftOut: {
      Connection* c = established();
      if (!c || !exporter_) return {false, "no session is established"};
      size_t queued = 0;
      for (codec::Family fam : codec::kKnownFamilyList)
        if (exporter_->refresh(fam) != table::RefreshOutcome::kIgnored) ++queued;
      if (queued) again_soon();
      done = "the Adj-RIB-Out is sent again";
      break;
    }
  }
  log(LogLevel::kInfo, "peer-admin", {{"peer", peer_.name}, {"message", message}}, done);
  return {true, done};
}

namespace {

std::string policy_text(const Policy& p) {
  if (p.none) return p.rfc8212 ? "none (RFC 8212)" : "none";
  return p.filter ? "policy " + p.filter->name() : "all";
}

}  // namespace

void Peer::reload(Policy import, Policy export_policy, uint8_t allow_own_as, bool import_changed,
                  bool export_changed) {
  // The old filters are released after the exporter took the new one.
  Policy old_import = std::exchange(import_, std::move(import));
  Policy old_export = std::exchange(export_, std::move(export_policy));
  {
    std::lock_guard lock(exporter_mu_);
    shown_export_ = export_;
  }
  allow_own_as_ = allow_own_as;
  Connection* c = established();
  const int32_t slot = table_slot_.load(std::memory_order_relaxed);
  std::string effect = c ? "" : "the session is down: the policies apply when it comes up";
  if (c && export_changed && exporter_) {
    exporter_->set_filter(export_.filter, export_.none);
    effect = "export: only the difference is sent";
  }
  if (c && import_changed && slot >= 0) {
    if (!effect.empty()) effect += "; ";
    if (import_.none) {
      flush_batch();
      uint64_t gone = 0;
      for (size_t f = 0; f < codec::kKnownFamilies; ++f) {
        table_.mark_stale(static_cast<uint16_t>(slot), static_cast<table::FamilyIndex>(f));
        gone += table_.sweep_stale(static_cast<uint16_t>(slot), static_cast<table::FamilyIndex>(f));
      }
      effect += fmt::format("import none: its {} routes left the table", gone);
    } else if (ask_refresh(*c)) {
      // RFC 2918: the peer sends its Adj-RIB-Out again, through the new
      // import policy.
      effect += "import: ROUTE-REFRESH sent";
    } else {
      effect += "import: the peer did not negotiate route refresh, so the new policy applies to the UPDATEs it sends "
                "from now on";
    }
  }
  log(LogLevel::kInfo, "reload-peer",
      {{"peer", peer_.name},
       {"import", import_changed ? policy_text(old_import) + " -> " + policy_text(import_) : "unchanged"},
       {"export", export_changed ? policy_text(old_export) + " -> " + policy_text(export_) : "unchanged"},
       {"allow_own_as", static_cast<int64_t>(allow_own_as_)}},
      effect);
  if (c && export_changed) pump_export(*c);
  reap();
}

void Peer::linger_finished() {
  if (lingering_ > 0) --lingering_;
  if (lingering_ == 0 && shutting_down_ && shutdown_done_) {
    auto done = std::move(shutdown_done_);
    shutdown_done_ = nullptr;
    done();
  }
}

Peer::Connection* Peer::other(const Connection& c) {
  auto& o = conns_[c.dir == fsm::Direction::kOutgoing ? 1 : 0];
  return o && !o->dead ? o.get() : nullptr;
}

void Peer::step(Connection& c, const fsm::Event& e) {
  if (c.dead) return;
  fsm::Actions actions;
  const fsm::State before = c.fsm.state();
  c.fsm.step(e, now(), actions);
  if (MrtUpdateLog* mrt = mrt_update_log(); mrt && c.fsm.state() != before)
    mrt->state_change(mrt_session(c), mrt_state(before), mrt_state(c.fsm.state()));
  perform(c, actions);
  if (!c.dead) arm_timer(c);
}

void Peer::perform(Connection& c, fsm::Actions& actions) {
  for (auto& a : actions) {
    if (auto* send = std::get_if<fsm::Send>(&a)) {
      send_bytes(c, std::move(send->bytes), send->type);
    } else if (std::get_if<fsm::Connect>(&a)) {
      if (c.fd >= 0) close_socket(c);
      SocketAddress remote{peer_.address, peer_.port, peer_.interface, 0};
      std::string err;
      int fd = start_connect(remote, peer_.local_address, transport_, err);
      if (fd < 0) {
        set_status(c.fsm.state(), err);
        log_limited(peer_.name, LogLevel::kInfo, "connect-failed", {{"peer", peer_.name}, {"remote", remote.to_string()}}, err);
        step(c, fsm::TcpFailed{});
        if (!c.dead) step(c, fsm::AutomaticStop{});
        continue;
      }
      c.fd = fd;
      c.dialing = true;
      c.remote = remote.to_string();
      ev_io_set(&c.wio, fd, EV_WRITE);
      ev_io_start(worker_.loop(), &c.wio);
    } else if (std::get_if<fsm::Disconnect>(&a)) {
      close_socket(c);
    } else if (auto* acc = std::get_if<fsm::OpenAccepted>(&a)) {
      (void)acc;
      resolve_collision(c);
    } else if (std::get_if<fsm::SessionUp>(&a)) {
      graceful_up(*c.fsm.negotiated());
      own_restart().session_up(peer_.name, c.fsm.negotiated()->graceful_restart);  // Petrel's own restart
      // Ends the session with Cease / Out of Resources (session_failed).
      if (!enter_table(c)) throw std::runtime_error("the routing table has no free peer slot");
      limits_.reset();
      reported_ = {};
      up_at_ = ev_now(worker_.loop());
      held_until_ = 0;
      held_down_.store(false, std::memory_order_relaxed);
      if (own_restart().exports_wait()) {
        // RFC 4724 section 4.1: Petrel restarting sends its routes (and
        // its End-of-RIB) once its route selection is no longer deferred
        // and the kernel has the result.
        ev_timer_set(&selection_timer_, kSelectionPoll, kSelectionPoll);
        ev_timer_start(worker_.loop(), &selection_timer_);
        log(LogLevel::kInfo, "graceful-restart-export-deferred", {{"peer", peer_.name}},
            "Petrel restarted: its UPDATEs to this peer wait until its route selection is no longer deferred "
            "(RFC 4724 section 4.1)");
      } else {
        start_export(c);
      }
      counters_.established.fetch_add(1, std::memory_order_relaxed);
      set_status(fsm::State::kEstablished, {});
      bmp_session_up(c);
      backoff_.reset();
      const auto& n = *c.fsm.negotiated();
      {
        std::lock_guard<std::mutex> lock(status_mu_);
        status_.peer_role = n.peer_role;
      }
      std::string fams;
      for (codec::Family f : n.all_families) {
        char buf[32];
        if (!fams.empty()) fams += ",";
        fams += codec::family_name(f, buf);
      }
      log(LogLevel::kInfo, "session-up",
          {{"peer", peer_.name}, {"remote", c.remote}, {"peer_as", n.peer_as},
           {"hold_time", n.hold_time}, {"families", fams},
           {"four_octet_as", n.params.four_octet_as ? "yes" : "no"},
           {"direction", c.dir == fsm::Direction::kOutgoing ? "outgoing" : "incoming"}});
    } else if (auto* up = std::get_if<fsm::DeliverUpdate>(&a)) {
      deliver_update(c, up->body);
    } else if (auto* rr = std::get_if<fsm::DeliverRouteRefresh>(&a)) {
      char buf[32];
      const auto& ref = rr->refresh;
      int fi = codec::known_index(ref.family);
      int32_t slot = table_slot_.load(std::memory_order_relaxed);
      // RFC 2918 / 7313: our Adj-RIB-Out again (BoRR/EoRR around it), walked
      // by the exporter as the socket takes it; a request while one is owed
      // joins it (logged at debug: a peer may send thousands).
      const table::RefreshOutcome outcome = ref.subtype == codec::RefreshSubtype::kRequest && exporter_
                                                ? exporter_->refresh(ref.family)
                                                : table::RefreshOutcome::kQueued;
      log_limited(peer_.name, outcome == table::RefreshOutcome::kQueued ? LogLevel::kInfo : LogLevel::kDebug,
                  "route-refresh-received",
          {{"peer", peer_.name}, {"family", std::string(codec::family_name(ref.family, buf))},
           {"subtype", static_cast<int>(ref.subtype)},
           {"outcome", outcome == table::RefreshOutcome::kCoalesced ? "coalesced"
                       : outcome == table::RefreshOutcome::kIgnored ? "ignored"
                                                                    : "queued"}});
      if (ref.subtype == codec::RefreshSubtype::kRequest && exporter_) {
        if (outcome == table::RefreshOutcome::kQueued) again_soon();
      } else if (fi >= 0 && slot >= 0 && ref.subtype == codec::RefreshSubtype::kBeginOfRefresh) {
        // RFC 7313 section 4: the peer re-sends its routes; those it does
        // not re-send by the EoRR go.
        flush_batch();
        table_.mark_stale(static_cast<uint16_t>(slot), static_cast<table::FamilyIndex>(fi));
      } else if (fi >= 0 && slot >= 0 && ref.subtype == codec::RefreshSubtype::kEndOfRefresh) {
        flush_batch();
        uint64_t gone = table_.sweep_stale(static_cast<uint16_t>(slot), static_cast<table::FamilyIndex>(fi));
        log(LogLevel::kInfo, "route-refresh-done", {{"peer", peer_.name}, {"stale_routes_withdrawn", gone}});
      }
    } else if (auto* down = std::get_if<fsm::SessionDown>(&a)) {
      c.dead = true;
      if (down->from == fsm::State::kEstablished) bmp_session_down(c, *down);
      close_socket(c);
      if (down->from == fsm::State::kEstablished && !keep_for_restart(*down)) leave_table();
      if (down->from == fsm::State::kEstablished) damp_after(*down);  // before the dial below
      bool quiet = down->from == fsm::State::kIdle || down->from == fsm::State::kConnect ||
                   down->from == fsm::State::kActive;
      std::string reason(fsm::down_cause_name(down->cause));
      if (down->code != 0) {
        auto code = static_cast<codec::ErrorCode>(down->code);
        reason += std::string(": ") + std::string(codec::error_code_name(code));
        auto sub = codec::error_subcode_name(code, down->subcode);
        if (!sub.empty()) reason += " / " + std::string(sub);
      }
      if (!quiet) {
        set_status(fsm::State::kIdle, reason);
        log(down->from == fsm::State::kEstablished ? LogLevel::kWarn : LogLevel::kInfo, "session-down",
            {{"peer", peer_.name}, {"remote", c.remote}, {"from", fsm::state_name(down->from)},
             {"cause", fsm::down_cause_name(down->cause)}, {"code", down->code}, {"subcode", down->subcode}},
            reason);
      }
      if (!shutting_down_ && !peer_.passive && other(c) == nullptr && !ev_is_active(&dial_timer_)) {
        dial_later(backoff_.next());
      }
      if (other(c) == nullptr && !quiet) set_status(peer_.passive ? fsm::State::kActive : fsm::State::kIdle, {});
    } else if (auto* ign = std::get_if<fsm::Ignored>(&a)) {
      log_limited(peer_.name, LogLevel::kDebug, "fsm-ignored",
          {{"peer", peer_.name}, {"state", fsm::state_name(ign->state)}, {"event", fsm::event_kind_name(ign->event)}});
    } else if (std::get_if<fsm::TimerArmed>(&a) || std::get_if<fsm::TimerStopped>(&a)) {
      // One timer per connection is armed at next_deadline() after the step.
    }
  }
  // An accepted connection whose socket is gone (the FSM fell back from
  // OpenSent/OpenConfirm to Active without a SessionDown) can never do
  // anything again: the listener hands over the peer's next connection,
  // which incoming() refuses while this one holds the slot.
  if (!c.dead && c.dir == fsm::Direction::kIncoming && c.fd < 0) {
    c.dead = true;
    close_socket(c);  // stops its watchers
    if (!shutting_down_ && !peer_.passive && other(c) == nullptr && !ev_is_active(&dial_timer_))
      dial_later(backoff_.next());
    if (other(c) == nullptr) set_status(peer_.passive ? fsm::State::kActive : fsm::State::kIdle, {});
    return;
  }
  if (!c.dead && c.fsm.state() != fsm::State::kEstablished && c.fsm.state() != fsm::State::kIdle &&
      other(c) == nullptr) {
    set_status(c.fsm.state(), {});
  }
}

void Peer::deliver_update(Connection& c, bytes::Span body) {
  const auto& neg = c.fsm.negotiated();
  if (!neg) return;
  codec::PeerType pt = peer_.asn == config_.router.asn ? codec::PeerType::kInternal : codec::PeerType::kExternal;
  auto u = codec::UpdateView::decode(body, neg->params, pt);
  if (MrtUpdateLog* mrt = mrt_update_log()) mrt->update(mrt_session(c), mrt_add_path(u, neg->params), body);
  if (BmpClient* feed = bmp_feed(); feed && feed->wants_pre_policy()) bmp_received(body);
  auto action = u.action();
  if (action != codec::ErrorAction::kNone) {
    for (const auto& d : u.report().diagnostics()) {
      char buf[32];
      log_limited(peer_.name, action >= codec::ErrorAction::kTreatAsWithdraw ? LogLevel::kWarn : LogLevel::kInfo, "update-error",
          {{"peer", peer_.name}, {"action", codec::error_action_name(d.action)},
           {"attribute", codec::attr_name(d.attr_type)}, {"family", std::string(codec::family_name(d.family, buf))}},
          d.reason);
    }
  }
  switch (action) {
    case codec::ErrorAction::kSessionReset:
    case codec::ErrorAction::kAfiSafiDisable:
      // AFI/SAFI disable is carried out as a session reset (RFC 7606
      // section 2 allows it; Petrel does not yet keep a session up with a
      // family switched off).
      step(c, fsm::MessageError{u.report().notification(), codec::MessageType::kUpdate});
      return;
    case codec::ErrorAction::kTreatAsWithdraw:
      counters_.treat_as_withdraw.fetch_add(1, std::memory_order_relaxed);
      break;
    case codec::ErrorAction::kAttributeDiscard:
      counters_.attribute_discard.fetch_add(1, std::memory_order_relaxed);
      break;
    case codec::ErrorAction::kNone:
      break;
  }
  // Every prefix is decoded and counted; treat-as-withdraw turns the
  // announced ones into withdrawals (RFC 7606 section 2).
  // The batch walks the prefixes once and says how many of each it took
  // (a batch without a table slot is dropped when flushed).
  import_update(c, u, action == codec::ErrorAction::kTreatAsWithdraw);
  if ((u.mp_reach() && !u.mp_reach()->supported) || (u.mp_unreach() && !u.mp_unreach()->supported))
    counters_.unknown_family_updates.fetch_add(1, std::memory_order_relaxed);
  if (auto eor = u.end_of_rib()) {
    flush_batch();  // the count below is the table's
    graceful_end_of_rib(*eor);  // RFC 4724 section 4.2: the stale rest goes
    own_restart().end_of_rib(peer_.name, *eor);  // section 4.1: Petrel's own deferral
    char buf[32];
    int i = codec::known_index(*eor);
    uint64_t received = i < 0 ? 0 : table_routes(static_cast<size_t>(i));
    auto st = status();
    int64_t since = st.established_since_ms ? now_ms() - st.established_since_ms : 0;
    log(LogLevel::kInfo, "end-of-rib",
        {{"peer", peer_.name}, {"family", std::string(codec::family_name(*eor, buf))},
         {"prefixes", received}, {"ms_since_up", since}});
  }
}

void Peer::import_update(const Connection& c, const codec::UpdateView& u, bool treat_as_withdraw) {
  const auto& n = *c.fsm.negotiated();
  table::ImportRules rules;
  rules.local_as = config_.router.asn;
  rules.router_id = config_.router.router_id.v4_value();
  rules.cluster_id = cluster_id_;
  rules.peer_as = peer_.asn;
  rules.internal = peer_.asn == config_.router.asn;
  rules.enforce_first_as = peer_.enforce_first_as;
  rules.allow_own_as = allow_own_as_;
  rules.families = n.families;
  rules.none = import_.none;
  rules.filter = import_.filter.get();
  rules.peer_name = peer_.name;
  rules.refused = &refused_;
  rules.validator = table_.validator();
  rules.aspa = aspa_check();
  if (!rules.internal) rules.local_role = peer_.local_role;
  const table::ImportOutcome out = table::import_update(u, treat_as_withdraw, rules, batch_);
  for (size_t i = 0; i < codec::kKnownFamilies; ++i) {
    if (out.announced[i]) counters_.announced[i].fetch_add(out.announced[i], std::memory_order_relaxed);
    if (out.withdrawn[i]) counters_.withdrawn[i].fetch_add(out.withdrawn[i], std::memory_order_relaxed);
    if (out.refused[i]) counters_.refused[i].fetch_add(out.refused[i], std::memory_order_relaxed);
  }
  // The first of each kind in a session is logged; the rest are counted
  // (a hostile peer cannot fill the log).
  auto first = [&](size_t kind, std::atomic<uint64_t>& counter) {
    counter.fetch_add(1, std::memory_order_relaxed);
    return !std::exchange(reported_[kind], true);
  };
  if (out.unnegotiated && first(0, counters_.unnegotiated_family)) {
    char buf[32];
    log(LogLevel::kWarn, "unnegotiated-family",
        {{"peer", peer_.name}, {"family", std::string(codec::family_name(out.unnegotiated_family, buf))},
         {"prefixes", out.unnegotiated_prefixes}},
        "NLRI of a family the session did not negotiate is ignored (RFC 4760); further ones are counted");
  }
  switch (out.refusal) {
    case table::ImportRefusal::kEmptyAsPath:
      if (first(1, counters_.empty_as_path))
        log(LogLevel::kWarn, "empty-as-path", {{"peer", peer_.name}},
            "an external peer's routes with an empty AS_PATH are treated as withdrawn (RFC 7606 section 7.2); "
            "further ones are counted");
      break;
    case table::ImportRefusal::kFirstAs:
      if (first(2, counters_.first_as))
        log(LogLevel::kWarn, "first-as", {{"peer", peer_.name}, {"first_as", out.first_as}, {"peer_as", peer_.asn}},
            "routes whose AS_PATH does not start with the peer's AS are treated as withdrawn (enforce_first_as, "
            "RFC 7606 section 7.2); further ones are counted");
      break;
    case table::ImportRefusal::kOwnAs:
      counters_.own_as_loops.fetch_add(1, std::memory_order_relaxed);
      break;
    case table::ImportRefusal::kReflection:
      counters_.reflection_loops.fetch_add(1, std::memory_order_relaxed);
      break;
    case table::ImportRefusal::kRouteLeak:
      if (first(3, counters_.route_leaks))
        log(LogLevel::kWarn, "route-leak", {{"peer", peer_.name}, {"local_role", table::role_name(*peer_.local_role)}},
            "routes that carry OTC from this peer are a route leak and are refused (RFC 9234 section 5); "
            "further ones are counted");
      break;
    case table::ImportRefusal::kNone:
      break;
  }
}

Peer::Connection* Peer::established() {
  for (auto& c : conns_)
    if (c && !c->dead && c->fd >= 0 && c->fsm.state() == fsm::State::kEstablished) return c.get();
  return nullptr;
}

void Peer::start_export(Connection& c) {
  const auto& n = *c.fsm.negotiated();
  table::ExporterSetup s;
  s.target.local_as = config_.router.asn;
  s.target.cluster_id = cluster_id_;
  s.target.internal = n.peer_as == config_.router.asn;
  s.target.rr_client = peer_.route_reflector_client;
  s.target.route_server_client = peer_.route_server_client;
  s.target.next_hop = peer_.next_hop;
  if (!s.target.internal) s.target.local_role = peer_.local_role;
  s.target.slot = static_cast<uint32_t>(table_slot_.load(std::memory_order_relaxed));
  if (auto local = local_endpoint(c.fd)) {
    SessionAddresses a = session_addresses(local->addr, peer_.address);
    s.target.next_hop_v4 = a.v4;
    // Only where it is used: a field that differs splits update groups.
    if (a.shared && peer_.next_hop == table::NextHopMode::kUnchanged)
      (a.shared->family() == net::IpFamily::V4 ? s.target.shared_v4 : s.target.shared_v6) = a.shared;
    if (a.v6_global || a.v6_link_local) {
      // RFC 2545 section 3: the global address, and the link-local one for
      // a peer on the same link; with no global address, the link-local
      // one stands alone.
      codec::NextHop nh{a.v6_global ? *a.v6_global : *a.v6_link_local, std::nullopt};
      if (a.v6_global && a.v6_link_local && a.remote_on_link) nh.link_local = a.v6_link_local;
      s.target.next_hop_v6 = nh;
    }
  }
  s.target.extended_next_hop_v4 = n.params.extended_next_hop.has(codec::Family{1, 1});
  s.target.default_local_pref = table_.best_path_options().default_local_pref;
  s.target.long_lived_graceful_restart = n.long_lived_graceful_restart.has_value();
  s.filter = export_.filter.get();
  s.send_nothing = export_.none;
  s.params = n.params;
  s.families = n.families;
  s.enhanced_route_refresh = n.enhanced_route_refresh;
  s.add_path_max = peer_.add_path_send_max;
  if (import_.rfc8212 || export_.rfc8212) {
    log(LogLevel::kWarn, "rfc8212",
        {{"peer", peer_.name},
         {"import", import_.none ? "none" : "configured"},
         {"export", export_.none ? "none" : "configured"}},
        "an external peer without import or export policy gets nothing and gives nothing (RFC 8212); "
        "set import/export on the peer, or router.rfc8212 = false");
  }
  {
    std::lock_guard lock(exporter_mu_);
    shown_target_ = s.target;
    shown_families_ = s.families;
    shown_export_ = export_;
    const auto slot = static_cast<uint16_t>(s.target.slot);
    exporter_ = export_groups_.join(std::move(s), export_.filter, slot);
  }
  ev_async_start(worker_.loop(), &export_wake_);
  struct ev_loop* loop = worker_.loop();
  ev_async* wake = &export_wake_;
  export_woken_ = table_.subscribe([loop, wake] { ev_async_send(loop, wake); });
  ev_timer_set(&export_timer_, 0, kExportSafety);
  ev_timer_start(worker_.loop(), &export_timer_);
}

void Peer::on_selection_timer(struct ev_loop* loop, ev_timer* w, int) {
  auto* p = static_cast<Peer*>(w->data);
  if (own_restart().exports_wait()) return;
  ev_timer_stop(loop, w);
  Connection* c = p->established();
  if (!c || p->exporter_) return;
  log(LogLevel::kInfo, "graceful-restart-export", {{"peer", p->peer_.name}},
      "route selection done: the routes go to the peer, then its End-of-RIB");
  p->start_export(*c);
}

void Peer::pump_export(Connection& c) {
  if (!exporter_ || c.dead || c.fd < 0 || c.dialing) return;
  if (exporter_->too_slow()) {
    session_failed(c, "more than 64 MiB behind its update group: the peer does not read fast enough");
    return;
  }
  size_t unsent = c.out.unsent();
  if (unsent >= kExportBuffer) return;  // the peer is slow: the journal holds the changes
  if (unsent == 0) release_sent(c);
  const uint64_t updates_before = exporter_->counters().updates.load(std::memory_order_relaxed);
  const uint64_t oversized_before = exporter_->counters().oversized.load(std::memory_order_relaxed);
  // The group's stream is queued by reference, not copied (encode once).
  bool more = exporter_->pump(c.out, std::min(kExportSlice, kExportBuffer - unsent));
  if (c.out.unsent() == unsent) {
    note_oversized(oversized_before);
    if (more) again_soon();  // e.g. the initial table, read a shard a turn
    return;
  }
  note_oversized(oversized_before);
  uint64_t updates = exporter_->counters().updates.load(std::memory_order_relaxed) - updates_before;
  counters_.messages_out[static_cast<size_t>(codec::MessageType::kUpdate)].fetch_add(updates,
                                                                                      std::memory_order_relaxed);
  step(c, fsm::UpdateSent{});
  if (c.out.unsent() > kMaxUnsent) {
    session_failed(c, "more than 64 MiB unsent: the peer does not read");
    return;
  }
  flush(c);
  // More to send and the socket took everything: go on from the loop (not
  // from here, so a fast peer cannot recurse) as soon as it comes round.
  if (more && !c.dead && c.out.stored() == 0) again_soon();
}

void Peer::note_oversized(uint64_t before) {
  const uint64_t now_count = exporter_->counters().oversized.load(std::memory_order_relaxed);
  if (now_count == before) return;
  counters_.oversized.fetch_add(now_count - before, std::memory_order_relaxed);
  if (oversized_logged_ || !exporter_->first_oversized()) return;
  oversized_logged_ = true;
  const table::OversizedRoute& o = *exporter_->first_oversized();
  char buf[32];
  log(LogLevel::kWarn, "route-oversized",
      {{"peer", peer_.name},
       {"prefix", o.prefix.to_string()},
       {"family", std::string(codec::family_name(o.family, buf))},
       {"attribute_bytes", static_cast<uint64_t>(o.attribute_bytes)},
       {"max_message", static_cast<uint64_t>(o.max_message)}, {"reason", std::string(o.reason)}},
      "routes whose attributes do not fit in one UPDATE for this peer are not sent to it (an earlier version is "
      "withdrawn); counted as `oversized` in /api/peers, logged once per peer");
}

void Peer::again_soon() {
  ev_timer_stop(worker_.loop(), &export_timer_);
  ev_timer_set(&export_timer_, 0, kExportSafety);
  ev_timer_start(worker_.loop(), &export_timer_);
}

void Peer::on_export_wake(struct ev_loop* loop, ev_async* w, int) {
  auto* p = static_cast<Peer*>(w->data);
  // The turn itself is the timer's: kExportGap after the last one at the
  // earliest, unless it comes sooner already.
  const double after = std::max(0.0, p->export_turn_at_ + kExportGap - ev_now(loop));
  if (ev_is_active(&p->export_timer_) && ev_timer_remaining(loop, &p->export_timer_) <= after) return;
  ev_timer_stop(loop, &p->export_timer_);
  ev_timer_set(&p->export_timer_, after, kExportSafety);
  ev_timer_start(loop, &p->export_timer_);
}

void Peer::on_export_timer(struct ev_loop* loop, ev_timer* w, int) {
  auto* p = static_cast<Peer*>(w->data);
  p->export_turn_at_ = ev_now(loop);
  // Before the exporter reads: a change after this wakes it again.
  (void)p->export_woken_.take();
  Connection* c = p->established();
  if (!c) return;
  try {
    p->pump_export(*c);
  } catch (const std::exception& e) {
    p->session_failed(*c, e.what());
  }
  p->reap();
}

bool Peer::graceful_session(Connection& c) {
  const auto& n = c.fsm.negotiated();
  return !c.dead && c.fsm.state() == fsm::State::kEstablished && n && n->graceful_restart && graceful_peer_;
}

void Peer::resolve_collision(Connection& accepted) {
  Connection* o = other(accepted);
  if (!o || !accepted.fsm.negotiated()) return;
  fsm::CollisionInput in;
  in.first = {o->fsm.state(), o->dir};
  in.second = {accepted.fsm.state(), accepted.dir};
  in.local_id = fsm_config_.local_id;
  in.remote_id = accepted.fsm.negotiated()->peer_id;
  in.local_as = fsm_config_.local_as;
  in.remote_as = accepted.fsm.negotiated()->peer_as;
  in.graceful_restart = graceful_session(*o);
  auto v = fsm::resolve_collision(in);
  if (v == fsm::CollisionVerdict::kNoCollision) return;
  Connection& loser = v == fsm::CollisionVerdict::kCloseFirst ? *o : accepted;
  if (graceful_session(loser)) {
    // RFC 4724 section 4.2: the peer restarted; its old session's routes
    // are kept stale, as after a TCP failure.
    log(LogLevel::kInfo, "peer-restarted", {{"peer", peer_.name}, {"replaced", loser.remote}},
        "the peer opened a new session while the old one is Established (RFC 4724 section 4.2): "
        "the old one ends as if its connection had failed and its routes are kept stale");
    step(loser, fsm::TcpFailed{});
    return;
  }
  log(LogLevel::kInfo, "collision",
      {{"peer", peer_.name},
       {"closing", loser.dir == fsm::Direction::kOutgoing ? "outgoing" : "incoming"}});
  step(loser, fsm::CollisionDump{});
}

void Peer::send_bytes(Connection& c, std::vector<std::byte>&& bytes, codec::MessageType type) {
  counters_.messages_out[static_cast<size_t>(type)].fetch_add(1, std::memory_order_relaxed);
  if (type == codec::MessageType::kOpen) c.sent_open = bytes;
  if (type == codec::MessageType::kNotification) c.notification_out = bytes;
  if (type == codec::MessageType::kNotification && bytes.size() >= codec::kHeaderLen) {
    auto n = codec::decode_notification(bytes::Span(bytes).subspan(codec::kHeaderLen));
    if (n) {
      std::string text = notification_text(*n);
      set_status(c.fsm.state(), "sent " + text);
      log(LogLevel::kWarn, "notification-sent",
          {{"peer", peer_.name}, {"code", n->code}, {"subcode", n->subcode}}, text);
    }
  }
  if (c.fd < 0 || c.dialing) return;  // nothing to write to (the FSM sends only on a connection)
  c.out.append(std::move(bytes));
  if (c.out.unsent() > kMaxUnsent) {
    session_failed(c, "more than 64 MiB unsent: the peer does not read");
    return;
  }
  flush(c);
}

void Peer::release_sent(Connection& c) {
  // What a burst (the initial table) grew the buffer to is given back once
  // it went out: hundreds of idle sessions each keeping a megabyte was
  // most of a route server's memory (docs/performance.md, "Update groups
  // end to end").
  c.out.release(kKeepOut);
}

namespace {

// One sendmsg() of the queue's first runs (its own bytes and the update
// group's shared ones) without SIGPIPE.
ssize_t send_queued(int fd, const sendq::SendQueue& q) {
  constexpr size_t kRuns = 16;
  std::array<std::span<const std::byte>, kRuns> runs;
  const size_t n = q.gather(runs);
  std::array<iovec, kRuns> iov{};
  for (size_t i = 0; i < n; ++i) iov[i] = iovec{const_cast<std::byte*>(runs[i].data()), runs[i].size()};
  msghdr msg{};
  msg.msg_iov = iov.data();
  msg.msg_iovlen = n;
  return ::sendmsg(fd, &msg, MSG_NOSIGNAL);
}

}  // namespace

void Peer::flush(Connection& c) {
  if (c.fd < 0 || c.dialing) return;
  bool progress = false;
  while (c.out.unsent() > 0) {
    ssize_t n = send_queued(c.fd, c.out);
    if (n > 0) {
      c.out.consume(static_cast<size_t>(n));
      progress = true;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    set_status(c.fsm.state(), std::string("write: ") + std::strerror(errno));
    step(c, fsm::TcpFailed{});
    return;
  }
  if (c.out.unsent() == 0) {
    release_sent(c);
    ev_io_stop(worker_.loop(), &c.wio);
    if (c.unsent_since) {
      c.unsent_since.reset();
      step(c, fsm::SendProgress{std::nullopt});
    }
    // The socket drained: the exporter goes on at the loop's next turn.
    if (exporter_ && progress && !c.dead && ev_is_active(&export_timer_)) {
      ev_timer_stop(worker_.loop(), &export_timer_);
      ev_timer_set(&export_timer_, 0, kExportSafety);
      ev_timer_start(worker_.loop(), &export_timer_);
    }
    return;
  }
  c.out.compact(1u << 20);
  ev_io_set(&c.wio, c.fd, EV_WRITE);
  ev_io_start(worker_.loop(), &c.wio);
  if (progress || !c.unsent_since) {
    c.unsent_since = now();
    step(c, fsm::SendProgress{c.unsent_since});
  }
}

void Peer::close_socket(Connection& c) {
  ev_io_stop(worker_.loop(), &c.rio);
  ev_io_stop(worker_.loop(), &c.wio);
  ev_timer_stop(worker_.loop(), &c.timer);
  if (c.fd < 0) return;
  if (!c.dialing) {
    // One last non-blocking attempt at what is queued (a NOTIFICATION).
    while (c.out.unsent() > 0) {
      ssize_t n = send_queued(c.fd, c.out);
      if (n <= 0) break;
      c.out.consume(static_cast<size_t>(n));
    }
    ++lingering_;
    Linger::start(worker_.loop(), c.fd, [this] { linger_finished(); });
  } else {
    ::close(c.fd);
  }
  c.fd = -1;
  c.dialing = false;
  c.out.clear();
}

void Peer::arm_timer(Connection& c) {
  ev_timer_stop(worker_.loop(), &c.timer);
  auto d = c.fsm.next_deadline();
  if (!d) return;
  double secs = std::chrono::duration<double>(*d - now()).count();
  ev_timer_set(&c.timer, secs > 0 ? secs : 0, 0);
  ev_timer_start(worker_.loop(), &c.timer);
}

void Peer::reap() {
  for (auto& slot : conns_) {
    if (slot && slot->dead) {
      close_socket(*slot);
      slot.reset();
    }
  }
}

void Peer::session_failed(Connection& c, const char* what) {
  log(LogLevel::kError, "session-failure", {{"peer", peer_.name}, {"remote", c.remote}}, what);
  set_status(c.fsm.state(), std::string("internal failure: ") + what);
  try {
    step(c, fsm::AutomaticStop{codec::cease::kOutOfResources, {}});
  } catch (...) {
    c.dead = true;
  }
  if (!c.dead) {
    c.dead = true;
  }
  close_socket(c);
  if (!shutting_down_ && !peer_.passive && other(c) == nullptr && !ev_is_active(&dial_timer_))
    dial_later(backoff_.next());
}

void Peer::on_read(struct ev_loop*, ev_io* w, int) {
  auto* c = static_cast<Connection*>(w->data);
  Peer* p = c->peer;
  try {
    p->handle_read(*c);
  } catch (const std::exception& e) {
    p->session_failed(*c, e.what());
  }
  p->reap();
}

void Peer::on_write(struct ev_loop*, ev_io* w, int) {
  auto* c = static_cast<Connection*>(w->data);
  Peer* p = c->peer;
  try {
    p->handle_write(*c);
  } catch (const std::exception& e) {
    p->session_failed(*c, e.what());
  }
  p->reap();
}

void Peer::on_timer(struct ev_loop*, ev_timer* w, int) {
  auto* c = static_cast<Connection*>(w->data);
  Peer* p = c->peer;
  try {
    // What the peer sent and we have not read yet counts: after a busy
    // spell the loop may run this timer before the socket's read watcher,
    // and the hold timer must not expire on messages waiting in our own
    // receive buffer.
    if (c->fd >= 0 && ev_is_active(&c->rio)) p->handle_read(*c);
    p->step(*c, fsm::Tick{});  // nothing if the read ended the connection
  } catch (const std::exception& e) {
    p->session_failed(*c, e.what());
  }
  p->reap();
}

void Peer::handle_write(Connection& c) {
  if (c.dialing) {
    int err = connect_result(c.fd);
    ev_io_stop(worker_.loop(), &c.wio);
    if (err != 0) {
      std::string text = std::strerror(err);
      set_status(c.fsm.state(), "connect: " + text);
      log_limited(peer_.name, LogLevel::kInfo, "connect-failed", {{"peer", peer_.name}, {"remote", c.remote}}, text);
      ::close(c.fd);
      c.fd = -1;
      c.dialing = false;
      step(c, fsm::TcpFailed{});
      if (!c.dead) step(c, fsm::AutomaticStop{});
      return;
    }
    c.dialing = false;
    ev_io_set(&c.rio, c.fd, EV_READ);
    ev_io_start(worker_.loop(), &c.rio);
    log_limited(peer_.name, LogLevel::kDebug, "connected", {{"peer", peer_.name}, {"remote", c.remote}});
    step(c, fsm::TcpConnected{});
    return;
  }
  flush(c);
}

void Peer::handle_read(Connection& c) {
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kReadsPerWakeup && !c.dead && c.fd >= 0; ++i) {
    if (i > 0 && std::chrono::steady_clock::now() - start > kReadBudget) return;  // the rest next turn
    // One read buffer per worker thread, not per peer (the framer copies
    // what it is fed): 64 KiB for each of hundreds of peers was most of an
    // idle route server's memory.
    thread_local std::vector<std::byte> read_buf(kReadChunk);
    ssize_t n = ::read(c.fd, read_buf.data(), read_buf.size());
    if (n > 0) {
      c.framer.feed(bytes::Span(read_buf.data(), static_cast<size_t>(n)));
      codec::Message m;
      codec::NotifyError err;
      for (;;) {
        auto st = c.framer.next(m, err);
        if (st == codec::Framer::Status::kNeedMore) {
          flush_batch();
          if (!limit_cease_.empty()) {
            cease_for_limit();  // read no more of this peer's routes
            return;
          }
          break;
        }
        if (st == codec::Framer::Status::kError) {
          step(c, fsm::MessageError{err, std::nullopt});
          return;
        }
        counters_.messages_in[static_cast<size_t>(m.type)].fetch_add(1, std::memory_order_relaxed);
        if (m.type == codec::MessageType::kOpen) c.received_open.assign(m.whole.begin(), m.whole.end());
        if (m.type == codec::MessageType::kNotification) c.notification_in.assign(m.whole.begin(), m.whole.end());
        fsm::Event ev = fsm::event_from_message(m);
        if (auto* nr = std::get_if<fsm::NotificationReceived>(&ev)) {
          std::string text = notification_text(nr->notification);
          set_status(c.fsm.state(), "received " + text);
          log(LogLevel::kWarn, "notification-received",
              {{"peer", peer_.name}, {"code", nr->notification.code}, {"subcode", nr->notification.subcode}},
              text);
        }
        step(c, ev);
        if (c.dead || c.fd < 0) return;
        // RFC 8654: once both sides agreed, longer messages are allowed.
        if (const auto& neg = c.fsm.negotiated(); neg && c.framer.max_len() != neg->params.max_message_len())
          c.framer.set_max_len(neg->params.max_message_len());
      }
      continue;
    }
    if (n == 0) {
      log_limited(peer_.name, LogLevel::kDebug, "connection-closed", {{"peer", peer_.name}, {"remote", c.remote}}, "by the peer");
      step(c, fsm::TcpFailed{});
      return;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      // Nothing more from the peer for now: a burst's batch storage goes
      // (hundreds of quiet members each keeping theirs was 5 MB of a
      // route server's 30; docs/performance.md, "Encode once").
      batch_.release_storage(kKeepBatchOps);
      return;
    }
    set_status(c.fsm.state(), std::string("read: ") + std::strerror(errno));
    step(c, fsm::TcpFailed{});
    return;
  }
}

}  // namespace petrel::daemon
