// The BMP client (bmp.h): the thread, the stations' connections and what
// each is sent when (RFC 7854 sections 3 and 5, RFC 9069).
#include "daemon/bmp.h"

#include <ev.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <variant>

#include "codec/open.h"
#include "codec/update_builder.h"
#include "crates/sendq/send_queue.h"
#include "daemon/backoff.h"
#include "daemon/log.h"
#include "daemon/sockets.h"

#ifndef PETREL_VERSION
#define PETREL_VERSION "unknown"
#endif

namespace petrel::daemon {

namespace {

std::atomic<BmpClient*> g_feed{nullptr};

// The Loc-RIB instance's routes in what a station was sent.
constexpr uint16_t kLocRibSlot = 0xFFFF;
// Routes are encoded while less than this is queued for the station (or a
// quarter of its max_queue, if smaller); more is read from the table once
// it went out.
constexpr size_t kHighWater = 1 << 20;
// What a Route Monitoring message costs beyond its attributes and NLRI:
// the common and per-peer headers and the UPDATE's own (an estimate for
// the size of a batch before it is encoded).
constexpr size_t kMessageOverhead = bmp::kCommonHeaderLen + bmp::kPerPeerHeaderLen + 23;
// Journal entries per shard in one read.
constexpr size_t kReadMax = 4096;
// Prefixes encoded in one turn of the loop (others wait for the next).
constexpr size_t kPrefixesPerTurn = 8192;
// Prefixes whose routes are packed into UPDATEs together (fewer, fuller
// Route Monitoring messages: the routes of one session with one
// attribute set share them).
constexpr size_t kPrefixesPerBatch = 1024;
// How long stop() waits for the Termination to go out.
constexpr int kTerminationWaitMs = 1000;

int64_t system_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

const auto kV4 = static_cast<table::FamilyIndex>(codec::known_index(codec::kIpv4Unicast));
const auto kV6 = static_cast<table::FamilyIndex>(codec::known_index(codec::kIpv6Unicast));

table::FamilyIndex family_of(const net::Prefix& p) { return p.family() == net::IpFamily::V4 ? kV4 : kV6; }
codec::Family codec_family(const net::Prefix& p) {
  return p.family() == net::IpFamily::V4 ? codec::kIpv4Unicast : codec::kIpv6Unicast;
}

uint64_t hash_bytes(bytes::Span b) {
  return std::hash<std::string_view>()(std::string_view(reinterpret_cast<const char*>(b.data()), b.size()));
}

struct SentRoute {
  uint16_t slot = 0;
  uint32_t path_id = 0;
  uint64_t hash = 0;  // of the attributes' canonical bytes
};

}  // namespace

BmpClient* bmp_feed() { return g_feed.load(std::memory_order_acquire); }
void set_bmp_feed(BmpClient* client) { g_feed.store(client, std::memory_order_release); }

struct BmpClient::Impl {
  struct Station {
    Impl* impl = nullptr;
    BmpStationConfig cfg;
    int fd = -1;
    bool connecting = false;
    bool up = false;
    ev_io io{};
    ev_timer retry{};
    ev_timer stats{};
    Backoff backoff{1.0, 60.0, 0.25, 0};
    sendq::SendQueue out;
    std::optional<table::Follower> follower;
    std::vector<uint8_t> shard_seen;  // a second resync of one is an overrun
    std::deque<net::Prefix> pending;
    std::unordered_set<net::Prefix> pending_set;
    std::unordered_map<net::Prefix, std::vector<SentRoute>> sent;
    std::unordered_set<uint16_t> peers_up;  // slots a Peer Up went for
    bool dumped = false;  // the table as it was at the connection went out (End-of-RIB sent)
    BmpStationStatus st;  // under impl->status_mu
  };

  Impl(const Config& config, const table::Table& t,
       std::function<std::optional<BmpPeerCounters>(const std::string&)> c, std::function<void()> refresh)
      : local_as(config.router.asn), router_id(config.router.router_id.v4_value()), table(t),
        counters(std::move(c)), refresh_peers(std::move(refresh)) {
    loop = ev_loop_new(EVFLAG_AUTO);
    uint64_t seed = 1;
    for (const BmpStationConfig& sc : config.bmp) {
      auto s = std::make_unique<Station>();
      s->impl = this;
      s->cfg = sc;
      s->backoff = Backoff(1.0, 60.0, 0.25, seed++);
      s->st.name = sc.name();
      s->st.state = "connecting";
      ev_init(&s->io, on_io);
      s->io.data = s.get();
      ev_init(&s->retry, on_retry);
      s->retry.data = s.get();
      ev_init(&s->stats, on_stats);
      s->stats.data = s.get();
      stations.push_back(std::move(s));
    }
    ev_async_init(&wake, on_wake);
    wake.data = this;
    ev_timer_init(&tick, on_tick, 1.0, 1.0);
    tick.data = this;
  }

  ~Impl() {
    if (loop) ev_loop_destroy(loop);
  }

  uint32_t local_as;
  uint32_t router_id;
  const table::Table& table;
  std::function<std::optional<BmpPeerCounters>(const std::string&)> counters;
  std::function<void()> refresh_peers;
  struct ev_loop* loop = nullptr;
  std::thread thread;
  ev_async wake{};
  ev_timer tick{};
  table::Subscription sub;

  std::mutex mu;  // posted, pending_pre_bytes, pre_lost and stopping
  std::vector<std::variant<BmpSessionUp, BmpSessionDown, BmpUpdate>> posted;
  size_t pending_pre_bytes = 0;
  uint64_t pre_lost = 0;  // UPDATEs dropped before the thread saw them, not yet made up for
  bool stopping = false;
  bool refresh_owed = false;  // a pre-policy station connected: the peers are asked again

  std::map<uint16_t, BmpSessionUp> sessions;  // by slot: established now
  std::vector<std::unique_ptr<Station>> stations;
  mutable std::mutex status_mu;

  // ---- the loop's callbacks
  static void on_wake(struct ev_loop*, ev_async* w, int) { static_cast<Impl*>(w->data)->woken(); }
  static void on_tick(struct ev_loop*, ev_timer* w, int) { static_cast<Impl*>(w->data)->woken(); }
  static void on_retry(struct ev_loop*, ev_timer* w, int) {
    auto* s = static_cast<Station*>(w->data);
    s->impl->connect(*s);
  }
  static void on_io(struct ev_loop*, ev_io* w, int revents) {
    auto* s = static_cast<Station*>(w->data);
    s->impl->io_ready(*s, revents);
  }
  static void on_stats(struct ev_loop*, ev_timer* w, int) {
    auto* s = static_cast<Station*>(w->data);
    s->impl->send_stats(*s);
    s->impl->flush(*s);
  }

  void run() {
    sub = table.subscribe([this] { ev_async_send(loop, &wake); });
    ev_async_start(loop, &wake);
    ev_timer_start(loop, &tick);
    for (auto& s : stations) connect(*s);
    ev_run(loop, 0);
    sub.reset();
  }

  void woken() {
    std::vector<std::variant<BmpSessionUp, BmpSessionDown, BmpUpdate>> got;
    bool stop = false;
    uint64_t lost = 0;
    {
      std::lock_guard lock(mu);
      got.swap(posted);
      stop = stopping;
      pending_pre_bytes = 0;
      lost = std::exchange(pre_lost, 0);
    }
    sub.take();
    for (auto& e : got) {
      if (auto* up = std::get_if<BmpSessionUp>(&e))
        peer_up(std::move(*up));
      else if (auto* u = std::get_if<BmpUpdate>(&e))
        pre_policy(*u);
      else
        peer_down(std::get<BmpSessionDown>(e));
    }
    if (lost) {
      log(LogLevel::kWarn, "bmp-pre-policy-lost", {{"updates", lost}},
          "UPDATEs came faster than the BMP thread took them: the peers are asked for their routes again");
      refresh_owed = true;
    }
    if (refresh_owed && !stop) {
      refresh_owed = false;
      if (refresh_peers) refresh_peers();
    }
    if (stop) {
      terminate();
      return;
    }
    for (auto& s : stations)
      if (s->up) pump(*s);
  }

  // ---- status
  template <typename F>
  void with_status(Station& s, F&& f) {
    std::lock_guard lock(status_mu);
    f(s.st);
  }

  // ---- connections
  void connect(Station& s) {
    SocketAddress remote{s.cfg.address, s.cfg.port, {}, 0};
    std::string err;
    int fd = start_connect(remote, std::nullopt, err);
    if (fd < 0) {
      fail(s, err);
      return;
    }
    s.fd = fd;
    s.connecting = true;
    with_status(s, [](BmpStationStatus& st) { st.state = "connecting"; });
    ev_io_set(&s.io, fd, EV_WRITE);
    ev_io_start(loop, &s.io);
  }

  // The connection is gone (or never came): what was queued is dropped,
  // and the station is tried again after the back-off.
  void fail(Station& s, const std::string& why, bool dropped = false) {
    const uint64_t lost = s.out.unsent();
    close_station(s);
    double wait = s.backoff.next();
    with_status(s, [&](BmpStationStatus& st) {
      st.state = "waiting";
      st.last_error = why;
      st.queued_bytes = 0;
      if (dropped) ++st.drops;
      st.dropped_bytes += lost;
    });
    log(dropped ? LogLevel::kWarn : LogLevel::kInfo, dropped ? "bmp-dropped" : "bmp-down",
        {{"station", s.cfg.name()}, {"retry_ms", static_cast<int64_t>(wait * 1000)}}, why);
    ev_timer_set(&s.retry, wait, 0);
    ev_timer_start(loop, &s.retry);
  }

  void close_station(Station& s) {
    ev_io_stop(loop, &s.io);
    ev_timer_stop(loop, &s.stats);
    if (s.fd >= 0) ::close(s.fd);
    s.fd = -1;
    s.connecting = s.up = false;
    s.out.release(0);
    s.follower.reset();
    s.pending.clear();
    s.pending_set.clear();
    s.sent.clear();
    s.peers_up.clear();
  }

  void io_ready(Station& s, int revents) {
    if (s.connecting) {
      int e = connect_result(s.fd);
      if (e != 0) {
        fail(s, std::string("connect: ") + std::strerror(e));
        return;
      }
      s.connecting = false;
      established(s);
      return;
    }
    if (revents & EV_READ) {
      // A station sends nothing (RFC 7854 section 3.3): read to see it close.
      std::byte buf[512];
      ssize_t n = ::read(s.fd, buf, sizeof buf);
      if (n == 0) {
        fail(s, "the station closed the connection");
        return;
      }
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        fail(s, std::string("read: ") + std::strerror(errno));
        return;
      }
    }
    if (revents & EV_WRITE) flush(s);
    if (s.up) pump(s);
  }

  // RFC 7854 section 3.3: Initiation, then a Peer Up for every session up
  // (and the Loc-RIB's, RFC 9069), then their routes.
  void established(Station& s) {
    s.up = true;
    s.backoff.reset();
    with_status(s, [](BmpStationStatus& st) {  // last_error stays: why the last connection ended
      st.state = "up";
      ++st.connects;
    });
    log(LogLevel::kInfo, "bmp-up", {{"station", s.cfg.name()}});
    char host[256] = {};
    if (::gethostname(host, sizeof host - 1) != 0) host[0] = 0;
    const std::string descr = std::string("Petrel ") + PETREL_VERSION;
    const bmp::InfoTlv tlvs[] = {{bmp::info::kSysDescr, descr}, {bmp::info::kSysName, host}};
    std::vector<std::byte> msg;
    bmp::initiation(tlvs, msg);
    queue(s, std::move(msg), 1);
    if (s.cfg.loc_rib) send_loc_rib_up(s);
    for (const auto& [slot, up] : sessions) send_peer_up(s, up);
    // No pre-policy Adj-RIB-In is kept: the peers send theirs again.
    if (s.cfg.pre_policy && !sessions.empty()) refresh_owed = true;
    s.follower = table.follow();
    s.dumped = false;
    s.shard_seen.clear();
    if (s.cfg.statistics_interval > 0) {
      ev_timer_set(&s.stats, s.cfg.statistics_interval, s.cfg.statistics_interval);
      ev_timer_start(loop, &s.stats);
    }
    pump(s);
  }

  // Appends `msg` (n messages) to the station's queue; past max_queue the
  // connection is dropped.
  void queue(Station& s, std::vector<std::byte>&& msg, uint64_t n) {
    if (!s.up || msg.empty()) return;
    const uint64_t size = msg.size();
    s.out.append(std::move(msg));
    with_status(s, [&](BmpStationStatus& st) {
      st.messages += n;
      st.bytes += size;
      st.queued_bytes = s.out.unsent();
    });
    if (s.out.unsent() > uint64_t{s.cfg.max_queue} << 20)
      fail(s, "more than bmp.max_queue MiB queued: the station does not keep up", true);
  }

  void flush(Station& s) {
    if (!s.up || s.fd < 0) return;
    while (s.out.unsent() > 0) {
      auto p = s.out.pending();
      ssize_t n = ::send(s.fd, p.data(), p.size(), MSG_NOSIGNAL);
      if (n > 0) {
        s.out.consume(static_cast<size_t>(n));
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      fail(s, std::string("send: ") + (n < 0 ? std::strerror(errno) : "closed"));
      return;
    }
    if (s.out.unsent() == 0) s.out.release(4 * kHighWater);
    else s.out.compact(kHighWater);
    with_status(s, [&](BmpStationStatus& st) { st.queued_bytes = s.out.unsent(); });
    ev_io_stop(loop, &s.io);
    ev_io_set(&s.io, s.fd, s.out.unsent() > 0 ? EV_READ | EV_WRITE : EV_READ);
    ev_io_start(loop, &s.io);
  }

  // Encodes what waits, reads the journal when nothing does, while the
  // station's queue is short; then writes.
  void pump(Station& s) {
    size_t budget = kPrefixesPerTurn;
    Batch b;
    const size_t high = high_water(s);
    while (s.up && s.out.unsent() < high && budget > 0) {
      if (!s.pending.empty()) {
        net::Prefix p = s.pending.front();
        s.pending.pop_front();
        s.pending_set.erase(p);
        refresh(s, p, b);
        --budget;
        if (b.prefixes >= kPrefixesPerBatch || b.estimate >= high / 4) emit(s, b);
        continue;
      }
      if (!read_journal(s)) break;
    }
    if (s.up) emit(s, b);
    if (s.up && !s.dumped && s.pending.empty() && s.follower && s.follower->primed() &&
        !s.follower->resync_waiting())
      end_of_rib(s);
    flush(s);
    // More to do than one turn takes: come back (the tick would, later).
    if (s.up && (!s.pending.empty() || (s.follower && s.follower->resync_waiting())) &&
        s.out.unsent() < high)
      ev_async_send(loop, &wake);
  }

  // The first table went out: End-of-RIB (RFC 4724 section 2) for each
  // family of each peer and of the Loc-RIB, so that the station knows
  // its copy is whole.
  void end_of_rib(Station& s) {
    s.dumped = true;
    std::vector<std::byte> msg;
    uint64_t n = 0;
    auto both = [&](const bmp::PeerHeader& h) {
      for (codec::Family f : {codec::kIpv4Unicast, codec::kIpv6Unicast}) {
        std::vector<std::byte> eor;
        codec::UpdateBuilder::end_of_rib(f, eor);
        bmp::route_monitoring(h, eor, msg);
        ++n;
      }
    };
    if (s.cfg.post_policy)
      for (const auto& [slot, up] : sessions)
        if (s.peers_up.count(slot)) both(header_of(up, true));
    if (s.cfg.loc_rib) both(loc_rib_header());
    queue(s, std::move(msg), n);
  }

  // Below this much queued, routes are encoded: a quarter of max_queue at
  // most, so that a batch and the Peer Ups on top of it stay below it.
  static size_t high_water(const Station& s) {
    return std::min<size_t>(kHighWater, (size_t{s.cfg.max_queue} << 20) / 4);
  }

  // False when the journal had nothing. An overrun drops the connection
  // (the station gets the whole table when it is back).
  bool read_journal(Station& s) {
    if (!s.follower) return false;
    bool overrun = false;
    size_t n = table.read(
        *s.follower, kReadMax,
        [&](const table::FollowEvent& ev) {
          if (ev.resync) {
            if (ev.shard >= s.shard_seen.size()) s.shard_seen.resize(ev.shard + 1, 0);
            if (s.shard_seen[ev.shard]) overrun = true;
            s.shard_seen[ev.shard] = 1;
          }
          if (ev.change.family != kV4 && ev.change.family != kV6) return;
          enqueue(s, ev.change.prefix);
        },
        1);
    if (overrun) {
      fail(s, "the table changed faster than the station took it (the journal overran)", true);
      return false;
    }
    return n > 0 || s.follower->resync_waiting();
  }

  void enqueue(Station& s, const net::Prefix& p) {
    if (s.pending_set.insert(p).second) s.pending.push_back(p);
  }

  bmp::PeerHeader header_of(const BmpSessionUp& up, bool post_policy) const {
    bmp::PeerHeader h;
    h.type = bmp::PeerType::kGlobal;
    h.flags = static_cast<uint8_t>((post_policy ? bmp::kFlagL : 0) | (up.params.four_octet_as ? 0 : bmp::kFlagA));
    h.address = up.address;
    h.as = up.as;
    h.bgp_id = up.bgp_id;
    stamp(h, system_ms());
    return h;
  }

  bmp::PeerHeader loc_rib_header() const {
    bmp::PeerHeader h;
    h.type = bmp::PeerType::kLocRib;
    h.as = local_as;
    h.bgp_id = router_id;
    stamp(h, system_ms());
    return h;
  }

  static void stamp(bmp::PeerHeader& h, int64_t ms) {
    h.seconds = static_cast<uint32_t>(ms / 1000);
    h.micros = static_cast<uint32_t>(ms % 1000) * 1000;
  }

  static codec::SessionParams loc_rib_params() {
    codec::SessionParams p;
    p.four_octet_as = true;
    p.extended_next_hop.add(codec::kIpv4Unicast);
    return p;
  }

  // What a turn of refresh() found to send, packed into UPDATEs by
  // emit(): the announcements grouped by session, family and attribute
  // set, the withdrawals by session and family.
  struct Batch {
    struct Group {
      uint16_t slot;
      codec::Family family;
      size_t at, len;  // the attributes, in wire
      std::vector<codec::NlriPrefix> prefixes;
    };
    std::vector<Group> announce;
    std::map<std::tuple<uint16_t, uint64_t, uint32_t>, size_t> index;  // slot, hash, afi: into announce
    std::map<std::pair<uint16_t, uint32_t>, std::vector<codec::NlriPrefix>> withdraw;  // slot, afi
    std::vector<std::byte> wire;
    size_t prefixes = 0;
    size_t estimate = 0;  // octets the messages will take, about
  };

  static uint32_t family_key(codec::Family f) { return uint32_t{f.afi} << 8 | f.safi; }

  // The prefix's routes now against what the station was sent: what is
  // new or changed goes to the batch's announcements, what is gone to its
  // withdrawals.
  void refresh(Station& s, const net::Prefix& p, Batch& b) {
    const codec::Family f = codec_family(p);
    std::vector<SentRoute> now;
    table.lookup_all(family_of(p), p, [&](std::span<const table::RouteView> routes, int best) {
      std::vector<SentRoute>& was = s.sent[p];
      auto add = [&](uint16_t slot, uint32_t path_id, const table::Attrs* a) {
        const bytes::Span w = a->wire();
        const SentRoute n{slot, path_id, hash_bytes(w)};
        now.push_back(n);
        for (const SentRoute& o : was)
          if (o.slot == slot && o.path_id == path_id && o.hash == n.hash) return;  // sent as it is
        auto [it, fresh] = b.index.try_emplace({slot, n.hash, family_key(f)}, b.announce.size());
        if (fresh) {
          b.announce.push_back({slot, f, b.wire.size(), w.size(), {}});
          b.wire.insert(b.wire.end(), w.begin(), w.end());
          b.estimate += kMessageOverhead + w.size();
        }
        b.announce[it->second].prefixes.push_back({p, path_id});
        b.estimate += 21;  // a prefix with a path identifier, at most
      };
      for (size_t i = 0; i < routes.size(); ++i) {
        const table::RouteView& r = routes[i];
        if (s.cfg.post_policy && s.peers_up.count(r.slot)) add(r.slot, r.path_id, r.attrs);
        if (s.cfg.loc_rib && static_cast<int>(i) == best) add(kLocRibSlot, 0, r.attrs);
      }
    });
    std::vector<SentRoute>& was = s.sent[p];
    for (const SentRoute& o : was) {
      bool kept = false;
      for (const SentRoute& n : now) kept = kept || (o.slot == n.slot && o.path_id == n.path_id);
      if (kept) continue;
      auto& w = b.withdraw[{o.slot, family_key(f)}];
      if (w.empty()) b.estimate += kMessageOverhead;
      w.push_back({p, o.path_id});
      b.estimate += 21;
    }
    if (now.empty())
      s.sent.erase(p);
    else
      was = std::move(now);
    ++b.prefixes;
  }

  // The batch as Route Monitoring messages: withdrawals first.
  void emit(Station& s, Batch& b) {
    std::vector<std::byte> msg;
    uint64_t messages = 0;
    auto header_for = [&](uint16_t slot, codec::SessionParams& params) -> std::optional<bmp::PeerHeader> {
      if (slot == kLocRibSlot) {
        params = loc_rib_params();
        return loc_rib_header();
      }
      auto it = sessions.find(slot);
      if (it == sessions.end()) return std::nullopt;
      params = sending(it->second.params);
      return header_of(it->second, true);
    };
    for (const auto& [key, prefixes] : b.withdraw) {
      codec::SessionParams params;
      auto h = header_for(key.first, params);
      if (!h) continue;
      const codec::Family f{static_cast<uint16_t>(key.second >> 8), static_cast<uint8_t>(key.second & 0xff)};
      if (auto r = bmp::route_monitoring(*h, f, nullptr, {}, prefixes, params, msg)) messages += *r;
    }
    for (const auto& g : b.announce) {
      codec::SessionParams params;
      auto h = header_for(g.slot, params);
      if (!h) continue;
      auto set = codec::AttributeSet::from_canonical(bytes::Span(b.wire).subspan(g.at, g.len));
      if (!set) continue;  // the table's own bytes: never
      if (auto r = bmp::route_monitoring(*h, g.family, &*set, g.prefixes, {}, params, msg)) messages += *r;
    }
    b = Batch{};
    queue(s, std::move(msg), messages);
  }

  // The session's UPDATEs as the peer wrote them: its ADD-PATH send is
  // our receive.
  static codec::SessionParams sending(const codec::SessionParams& negotiated) {
    codec::SessionParams p = negotiated;
    p.add_path_send = negotiated.add_path_receive;
    return p;
  }

  // ---- sessions
  void send_peer_up(Station& s, const BmpSessionUp& up) {
    bmp::PeerHeader h = header_of(up, false);
    stamp(h, up.since_ms);
    bmp::PeerUp pu;
    pu.local_address = up.local_address;
    pu.local_port = up.local_port;
    pu.remote_port = up.remote_port;
    pu.sent_open = up.sent_open;
    pu.received_open = up.received_open;
    std::vector<std::byte> msg;
    bmp::peer_up(h, pu, msg);
    queue(s, std::move(msg), 1);
    s.peers_up.insert(up.slot);
  }

  void send_loc_rib_up(Station& s) {
    codec::Open open;
    open.my_as = local_as > 0xFFFF ? codec::kAsTrans : static_cast<uint16_t>(local_as);
    open.hold_time = 0;
    open.bgp_id = router_id;
    open.caps.multiprotocol = {codec::kIpv4Unicast, codec::kIpv6Unicast};
    open.caps.four_octet_as = local_as;
    open.caps.extended_next_hop.push_back({codec::kIpv4Unicast, 2});
    std::vector<std::byte> bytes;
    codec::encode_open(open, bytes);
    const bmp::InfoTlv name[] = {{bmp::info::kTableName, "global"}};
    bmp::PeerUp pu;
    pu.sent_open = bytes;
    pu.received_open = bytes;  // RFC 9069: a copy of the sent
    pu.tlvs = name;
    std::vector<std::byte> msg;
    bmp::peer_up(loc_rib_header(), pu, msg);
    queue(s, std::move(msg), 1);
  }

  void peer_up(BmpSessionUp up) {
    const uint16_t slot = up.slot;
    auto& held = sessions[slot] = std::move(up);
    bool any = false;
    for (auto& s : stations) {
      if (!s->up) continue;
      send_peer_up(*s, held);
      any = any || s->cfg.post_policy;
    }
    if (!any) return;
    // Routes of the session the journal handed before this was read: the
    // stations look at each prefix the session has a route to again.
    std::vector<net::Prefix> have;
    table.walk([&](const table::Change& c, const std::optional<table::RouteView>&, const auto& routes) {
      if (c.family != kV4 && c.family != kV6) return;
      for (const auto& r : routes)
        if (r.peer == slot) {
          have.push_back(c.prefix);
          return;
        }
    });
    for (auto& s : stations)
      if (s->up && s->cfg.post_policy)
        for (const net::Prefix& p : have) enqueue(*s, p);
  }

  // Pre-policy Route Monitoring (RFC 7854 section 4.6, L flag clear): the
  // UPDATE as the peer sent it, to every station that monitors it and has
  // had the session's Peer Up.
  void pre_policy(const BmpUpdate& u) {
    auto it = sessions.find(u.slot);
    if (it == sessions.end() || it->second.name != u.name) return;
    for (auto& s : stations) {
      if (!s->up || !s->cfg.pre_policy || !s->peers_up.count(u.slot)) continue;
      bmp::PeerHeader h = header_of(it->second, false);
      stamp(h, u.ms);
      std::vector<std::byte> msg;
      bmp::route_monitoring(h, u.message, msg);
      queue(*s, std::move(msg), 1);
    }
  }

  void peer_down(const BmpSessionDown& down) {
    auto it = sessions.find(down.slot);
    if (it == sessions.end() || it->second.name != down.name) return;
    for (auto& s : stations) {
      if (!s->up || !s->peers_up.count(down.slot)) continue;
      bmp::PeerHeader h = header_of(it->second, false);
      stamp(h, down.since_ms);
      std::vector<std::byte> msg;
      bmp::peer_down(h, down.reason, down.data, msg);
      queue(*s, std::move(msg), 1);
      if (!s->up) continue;
      s->peers_up.erase(down.slot);
      // RFC 7854 section 4.9: its routes are gone with it at the station.
      for (auto e = s->sent.begin(); e != s->sent.end();) {
        auto& v = e->second;
        std::erase_if(v, [&](const SentRoute& r) { return r.slot == down.slot; });
        e = v.empty() ? s->sent.erase(e) : std::next(e);
      }
    }
    sessions.erase(it);
  }

  // ---- statistics (RFC 7854 section 4.8)
  void send_stats(Station& s) {
    if (!s.up) return;
    std::vector<std::byte> msg;
    uint64_t n = 0;
    for (const auto& [slot, up] : sessions) {
      if (!s.peers_up.count(slot)) continue;
      const uint64_t v4 = table.peer_routes(slot, kV4), v6 = table.peer_routes(slot, kV6);
      std::vector<bmp::Stat> stats = {{bmp::stat::kAdjRibInRoutes, v4 + v6, {}},
                                      {bmp::stat::kAdjRibInRoutesPerFamily, v4, codec::kIpv4Unicast},
                                      {bmp::stat::kAdjRibInRoutesPerFamily, v6, codec::kIpv6Unicast}};
      if (auto c = counters(up.name)) {
        stats.push_back({bmp::stat::kRejectedByPolicy, c->rejected, {}});
        stats.push_back({bmp::stat::kAsPathLoops, c->as_path_loops, {}});
        stats.push_back({bmp::stat::kClusterListLoops, c->reflection_loops, {}});
        stats.push_back({bmp::stat::kTreatAsWithdrawUpdates, c->treat_as_withdraw, {}});
        stats.push_back({bmp::stat::kDuplicatePrefixes, c->duplicate_prefixes, {}});
      }
      bmp::statistics(header_of(up, false), stats, msg);
      ++n;
    }
    if (s.cfg.loc_rib) {
      const uint64_t v4 = table.prefixes(kV4), v6 = table.prefixes(kV6);
      const bmp::Stat stats[] = {{bmp::stat::kLocRibRoutes, v4 + v6, {}},
                                 {bmp::stat::kLocRibRoutesPerFamily, v4, codec::kIpv4Unicast},
                                 {bmp::stat::kLocRibRoutesPerFamily, v6, codec::kIpv6Unicast}};
      bmp::statistics(loc_rib_header(), stats, msg);
      ++n;
    }
    queue(s, std::move(msg), n);
  }

  // ---- stop: Termination (RFC 7854 section 4.5), a short wait for it to
  // go out, then the loop ends.
  void terminate() {
    for (auto& s : stations) {
      if (!s->up) continue;
      std::vector<std::byte> msg;
      uint64_t n = 1;
      if (s->cfg.loc_rib) {  // the Loc-RIB instance goes with Petrel (RFC 9069: reason 6 and its name)
        const bmp::InfoTlv name[] = {{bmp::info::kTableName, "global"}};
        std::vector<std::byte> tlvs;
        bmp::info_tlvs(name, tlvs);
        bmp::peer_down(loc_rib_header(), bmp::DownReason::kLocalSystemClosed, tlvs, msg);
        ++n;
      }
      bmp::termination(bmp::TerminationReason::kAdministrativelyClosed, "petrel stops", msg);
      queue(*s, std::move(msg), n);
      if (!s->up) continue;
      const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(kTerminationWaitMs);
      while (s->up && s->out.unsent() > 0 && std::chrono::steady_clock::now() < until) {
        pollfd pfd{s->fd, POLLOUT, 0};
        if (::poll(&pfd, 1, 100) > 0) flush(*s);
      }
      log(LogLevel::kInfo, "bmp-terminated", {{"station", s->cfg.name()}});
    }
    for (auto& s : stations) {
      close_station(*s);
      ev_timer_stop(loop, &s->retry);
      with_status(*s, [](BmpStationStatus& st) { st.state = "stopped"; });
    }
    ev_timer_stop(loop, &tick);
    ev_async_stop(loop, &wake);
    ev_break(loop, EVBREAK_ALL);
  }
};

BmpClient::BmpClient(const Config& config, const table::Table& table,
                     std::function<std::optional<BmpPeerCounters>(const std::string&)> counters,
                     std::function<void()> refresh_peers)
    : impl_(std::make_unique<Impl>(config, table, std::move(counters), std::move(refresh_peers))) {
  for (const BmpStationConfig& s : config.bmp) pre_policy_ = pre_policy_ || s.pre_policy;
}

void BmpClient::received(BmpUpdate update) {
  {
    std::lock_guard lock(impl_->mu);
    if (impl_->pending_pre_bytes + update.message.size() > kMaxPendingPreBytes) {
      ++impl_->pre_lost;
      return;
    }
    impl_->pending_pre_bytes += update.message.size();
    impl_->posted.emplace_back(std::move(update));
  }
  ev_async_send(impl_->loop, &impl_->wake);
}

BmpClient::~BmpClient() { stop(); }

void BmpClient::start() {
  if (impl_->thread.joinable()) return;
  impl_->thread = std::thread([this] {
    pthread_setname_np(pthread_self(), "petrel-bmp");
    impl_->run();
  });
}

void BmpClient::stop() {
  if (!impl_->thread.joinable()) return;
  {
    std::lock_guard lock(impl_->mu);
    impl_->stopping = true;
  }
  ev_async_send(impl_->loop, &impl_->wake);
  impl_->thread.join();
}

void BmpClient::session_up(BmpSessionUp up) {
  {
    std::lock_guard lock(impl_->mu);
    impl_->posted.emplace_back(std::move(up));
  }
  ev_async_send(impl_->loop, &impl_->wake);
}

void BmpClient::session_down(BmpSessionDown down) {
  {
    std::lock_guard lock(impl_->mu);
    impl_->posted.emplace_back(std::move(down));
  }
  ev_async_send(impl_->loop, &impl_->wake);
}

std::vector<BmpStationStatus> BmpClient::status() const {
  std::lock_guard lock(impl_->status_mu);
  std::vector<BmpStationStatus> out;
  for (const auto& s : impl_->stations) out.push_back(s->st);
  return out;
}

}  // namespace petrel::daemon
