// petrel-fanout: many members of a route server, for measuring fan-out
// (docs/fulltable-lab.md, "Many members"; scripts/profile/fanout.sh).
//
// Plays N members. Member i dials the daemon from its own address
// (--member-base plus i) with AS --member-as plus i, and once every
// member's session is Established announces its slice of a table of P
// /24 prefixes (--prefix-base, the /24s one after the other; member i
// owns [i*P/N, (i+1)*P/N)), next hop its own address, one UPDATE per
// 4096 octets, then End-of-RIB. Every member decodes every UPDATE it is
// sent (IPv4 unicast, 4-octet AS, no ADD-PATH) into a bitmap of the
// prefixes it holds. A route server never sends a member its own routes,
// so a member is complete when it holds every other member's prefixes
// (its own, if sent, are counted apart).
//
// The run, in phases, each timed with the steady clock:
//  1. connect: member i dials at i * --connect-spread / N seconds (a
//     daemon with a short listen backlog leaves a crowd of connects in TCP
//     back-off); refused or reset connects are dialled again after 250 ms.
//  2. cold start: from the last Established until each member holds the
//     full table (p50 and worst over the members).
//  3. after --settle seconds, the flap: K members (--flappers, default
//     N/14) close their sockets with SO_LINGER 0 (a TCP RST). Withdrawal:
//     from then until each survivor holds none of their prefixes.
//  4. return: the flappers dial again and announce again once
//     Established; from the last of them Established until each survivor
//     holds the full table again.
// With --daemon-pid (repeatable; each process and its descendants) it
// reads the daemon's resident memory after the settle time, its peak
// (VmHWM) and CPU seconds (user + system) at the end.
//
// Prints one JSON object (and writes it whole to --json FILE). Exit 0
// when every phase completed, 1 on --timeout, 2 on bad arguments or a
// session that failed once Established. One thread and epoll; every loop
// is bounded by --timeout.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "codec/framer.h"
#include "codec/open.h"
#include "codec/update.h"
#include "tools/bench/args.h"
#include "tools/bench/feed.h"
#include "tools/bench/proc.h"
#include "tools/bench/sock.h"
#include "tools/synth/synth.h"

namespace {

using namespace petrel;
using Clock = std::chrono::steady_clock;

constexpr uint32_t kMaxMembers = 4000;
constexpr uint32_t kMaxPrefixes = 4'000'000;
constexpr uint16_t kHoldTime = 180;
constexpr int64_t kRedialNs = 250'000'000;

struct Options {
  std::string daemon;
  uint16_t port = 179;
  uint32_t daemon_as = 65000;
  uint32_t members = 0;
  std::string member_base;
  uint32_t member_as = 65001;
  uint32_t prefixes = 0;
  std::string prefix_base = "16.0.0.0";
  std::optional<uint32_t> flappers;
  double connect_spread = 0, settle = 2, timeout = 600;
  std::vector<int> daemon_pids;
  std::string json;
};

constexpr bench::Usage kUsage{"petrel-fanout",
               "usage: petrel-fanout --daemon ADDR [--port N] [--daemon-as N]\n"
               "         --members N --member-base ADDR [--member-as N]\n"
               "         --prefixes P [--prefix-base ADDR] [--flappers K]\n"
               "         [--connect-spread S] [--settle S] [--timeout S]\n"
               "         [--daemon-pid PID ...] [--json FILE]\n"};

Options parse(int argc, char** argv) {
  Options o;
  if (argc % 2 == 0) kUsage.fail("every option takes a value");
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view a = argv[i];
    const char* const v = argv[i + 1];
    if (a == "--daemon") o.daemon = v;
    else if (a == "--port") o.port = static_cast<uint16_t>(kUsage.count(v, "bad --port"));
    else if (a == "--daemon-as") o.daemon_as = static_cast<uint32_t>(kUsage.count(v, "bad --daemon-as"));
    else if (a == "--members") o.members = static_cast<uint32_t>(kUsage.count(v, "bad --members"));
    else if (a == "--member-base") o.member_base = v;
    else if (a == "--member-as") o.member_as = static_cast<uint32_t>(kUsage.count(v, "bad --member-as"));
    else if (a == "--prefixes") o.prefixes = static_cast<uint32_t>(kUsage.count(v, "bad --prefixes"));
    else if (a == "--prefix-base") o.prefix_base = v;
    else if (a == "--flappers") o.flappers = static_cast<uint32_t>(kUsage.count(v, "bad --flappers"));
    else if (a == "--connect-spread") o.connect_spread = kUsage.seconds(v, "bad --connect-spread");
    else if (a == "--settle") o.settle = kUsage.seconds(v, "bad --settle");
    else if (a == "--timeout") o.timeout = kUsage.seconds(v, "bad --timeout");
    else if (a == "--daemon-pid") o.daemon_pids.push_back(static_cast<int>(kUsage.count(v, "bad --daemon-pid")));
    else if (a == "--json") o.json = v;
    else kUsage.fail("unknown option");
  }
  if (o.daemon.empty() || o.member_base.empty()) kUsage.fail("--daemon and --member-base are required");
  if (o.members < 2 || o.members > kMaxMembers) kUsage.fail("--members: 2 to 4000");
  if (o.prefixes < o.members || o.prefixes > kMaxPrefixes) kUsage.fail("--prefixes: at least --members, at most 4M");
  if (!o.flappers) o.flappers = o.members / 14;
  if (*o.flappers >= o.members) kUsage.fail("--flappers: fewer than --members");
  return o;
}

int64_t ns_since(Clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count();
}

// ---- the table and who owns what

struct Table {
  uint32_t base24 = 0;   // the first /24's number (address >> 8)
  uint32_t prefixes = 0;
  uint32_t members = 0;
  std::vector<uint16_t> owner;  // prefix index -> member

  [[nodiscard]] uint32_t start(uint32_t m) const {
    return static_cast<uint32_t>(uint64_t{m} * prefixes / members);
  }
  [[nodiscard]] uint32_t slice(uint32_t m) const { return start(m + 1) - start(m); }
  // The prefix's index, or nothing when it is not one of the table's.
  [[nodiscard]] std::optional<uint32_t> index(const net::Prefix& p) const {
    if (!p.addr().is_v4() || p.len() != 24) return std::nullopt;
    uint32_t n = p.addr().v4_value() >> 8;
    if (n < base24 || n - base24 >= prefixes) return std::nullopt;
    return n - base24;
  }
};

// ---- a member

enum class Phase : uint8_t { kConnect, kCold, kSettle, kWithdraw, kReturn, kDone };

struct Member {
  uint32_t id = 0;
  net::IpAddress addr;
  uint32_t as = 0;
  bench::Feed feed;  // its slice as UPDATEs, End-of-RIB last

  enum class State : uint8_t { kIdle, kConnecting, kOpenSent, kEstablished, kFailed };
  State state = State::kIdle;
  int fd = -1;
  bool want_write = false;
  codec::Framer framer;
  codec::SessionParams params;
  std::vector<std::byte> out;
  size_t out_pos = 0;
  int keepalive_s = 60;
  int64_t next_dial_ns = -1, next_keepalive_ns = 0;
  int64_t first_dial_ns = -1, established_ns = -1;
  int64_t first_up_ns = -1, connect_wait_ns = -1;  // the first session only
  uint32_t redials = 0;

  // What it holds: a bit per prefix, counts by owning member.
  std::vector<uint64_t> held;
  std::vector<uint32_t> by_owner;
  uint64_t held_others = 0;     // prefixes of other members held
  uint64_t flapped_held = 0;    // prefixes of the flappers held
  uint64_t own_received = 0, unexpected = 0, updates = 0;
  int64_t complete_ns = -1;     // cold start: first time complete
  int64_t withdrawn_ns = -1;    // the flap: first time none of the flappers' held
  int64_t again_ns = -1;        // the return: first time complete again

  void reset_holdings(uint32_t members, uint32_t prefixes) {
    held.assign((prefixes + 63) / 64, 0);
    by_owner.assign(members, 0);
    held_others = flapped_held = 0;
  }
};

class Run {
 public:
  explicit Run(const Options& o) : o_(o), t0_(Clock::now()) {}

  int main() {
    if (!build()) return 2;
    rlim_t need = o_.members + 64;
    if (bench::raise_nofile(need) < need) {
      log("cannot raise the descriptor limit to {}", need);
      return 2;
    }
    ep_ = epoll_create1(EPOLL_CLOEXEC);
    if (ep_ < 0) return 2;
    t0_ = Clock::now();  // the dial schedule and every time from here
    for (auto& m : members_) m.next_dial_ns = static_cast<int64_t>(o_.connect_spread * 1e9 * m.id / o_.members);
    loop();
    std::string json = report();
    std::printf("%s\n", json.c_str());
    std::fflush(stdout);
    if (!o_.json.empty()) bench::write_whole(o_.json, json);
    for (auto& m : members_)
      if (m.fd >= 0) close(m.fd);
    close(ep_);
    return failed_ > 0 ? 2 : phase_ != Phase::kDone ? 1 : 0;
  }

 private:
  template <typename... A>
  void log(fmt::format_string<A...> f, A&&... a) const {
    fmt::print(stderr, "petrel-fanout {:8.3f} {}\n", static_cast<double>(ns_since(t0_)) / 1e9,
               fmt::format(f, std::forward<A>(a)...));
  }

  // Every member's address, AS and UPDATEs, before any clock starts.
  bool build() {
    auto base = net::IpAddress::parse(o_.member_base);
    auto pbase = net::IpAddress::parse(o_.prefix_base);
    auto daemon = net::IpAddress::parse(o_.daemon);
    if (!base || !base->is_v4() || !pbase || !pbase->is_v4() || !daemon || !daemon->is_v4()) {
      log("--daemon, --member-base and --prefix-base must be IPv4 addresses");
      return false;
    }
    if (uint64_t{base->v4_value()} + o_.members > 0xffffffffu) {
      log("--members addresses from --member-base run past 255.255.255.255");
      return false;
    }
    daemon_ = *daemon;
    table_.base24 = pbase->v4_value() >> 8;
    table_.prefixes = o_.prefixes;
    table_.members = o_.members;
    if (uint64_t{table_.base24} + o_.prefixes > (1u << 24)) {
      log("--prefixes /24s from --prefix-base run past 255.255.255.0");
      return false;
    }
    table_.owner.resize(o_.prefixes);
    members_.resize(o_.members);
    for (uint32_t i = 0; i < o_.members; ++i) {
      Member& m = members_[i];
      m.id = i;
      m.addr = net::IpAddress::v4(base->v4_value() + i);
      m.as = o_.member_as + i;
      synth::Table t;
      synth::Attributes a;
      a.as_path = {m.as};
      t.attrs.push_back(std::move(a));
      synth::Group g;
      for (uint32_t p = table_.start(i); p < table_.start(i + 1); ++p) {
        table_.owner[p] = static_cast<uint16_t>(i);
        g.prefixes.push_back(*net::Prefix::make(net::IpAddress::v4((table_.base24 + p) << 8), 24));
      }
      t.v4.push_back(std::move(g));
      bench::FeedOptions fo;
      fo.next_hop_v4 = m.addr;
      auto f = bench::build_feed(t, fo, codec::SessionParams{});
      if (!f) {
        log("member {}: {}", i, f.error());
        return false;
      }
      m.feed = std::move(*f);
      m.reset_holdings(o_.members, o_.prefixes);
    }
    flapper_.assign(o_.members, 0);
    // Spread over the members, not the first K (the same ones every run).
    for (uint32_t k = 0; k < *o_.flappers; ++k) flapper_[static_cast<size_t>(uint64_t{k} * o_.members / *o_.flappers)] = 1;
    log("{} members, {} prefixes, {} flappers; built", o_.members, o_.prefixes, *o_.flappers);
    return true;
  }

  [[nodiscard]] int64_t now() const { return ns_since(t0_); }
  [[nodiscard]] bool complete(const Member& m) const {
    return m.held_others == uint64_t{o_.prefixes} - table_.slice(m.id);
  }

  // ---- sessions

  void dial(Member& m) {
    m.next_dial_ns = -1;
    if (m.first_dial_ns < 0) m.first_dial_ns = now();
    socklen_t llen = 0, rlen = 0;
    auto la = bench::sockaddr_of(m.addr, 0, llen);
    auto ra = bench::sockaddr_of(daemon_, o_.port, rlen);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return fail(m, "socket");
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (bind(fd, reinterpret_cast<sockaddr*>(&*la), llen) != 0) {
      close(fd);
      return fail(m, "bind (is the member address local?)");
    }
    if (connect(fd, reinterpret_cast<sockaddr*>(&*ra), rlen) != 0 && errno != EINPROGRESS) {
      close(fd);
      return redial(m, "connect");
    }
    m.fd = fd;
    m.state = Member::State::kConnecting;
    m.want_write = true;
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLOUT;
    ev.data.u32 = m.id;
    if (epoll_ctl(ep_, EPOLL_CTL_ADD, fd, &ev) != 0) fail(m, "epoll_ctl");
  }

  void drop(Member& m) {
    if (m.fd >= 0) {
      epoll_ctl(ep_, EPOLL_CTL_DEL, m.fd, nullptr);
      close(m.fd);
    }
    m.fd = -1;
    m.want_write = false;
    m.framer = codec::Framer();
    m.out.clear();
    m.out_pos = 0;
  }

  // Before Established a refused or reset connection is dialled again
  // (logged the 1st, 10th, 100th ... time for each member).
  void redial(Member& m, const char* why) {
    ++m.redials;
    for (uint32_t n = 1; n <= m.redials && n <= 1'000'000; n *= 10)
      if (n == m.redials) log("member {} ({}): {} ({}), dialling again (time {})", m.id, m.addr.to_string(), why,
                              std::strerror(errno), n);
    drop(m);
    m.state = Member::State::kIdle;
    m.next_dial_ns = now() + kRedialNs;
  }

  // After it, the run has failed; before it, the connection is dialled
  // again (a daemon that refuses or resets a crowd of connects).
  void fail(Member& m, const char* why) {
    if (m.state == Member::State::kConnecting || m.state == Member::State::kOpenSent) return redial(m, why);
    log("member {} ({}): {} ({})", m.id, m.addr.to_string(), why, std::strerror(errno));
    drop(m);
    m.state = Member::State::kFailed;
    ++failed_;
  }

  // The flap: a hard close, so the daemon reads a TCP RST.
  void hard_close(Member& m) {
    linger l{1, 0};
    if (m.fd >= 0) setsockopt(m.fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    drop(m);
    m.state = Member::State::kIdle;
    m.established_ns = -1;
    m.reset_holdings(o_.members, o_.prefixes);
  }

  void queue(Member& m, bytes::Span b) {
    m.out.insert(m.out.end(), b.begin(), b.end());
    set_write(m, true);
  }

  void set_write(Member& m, bool on) {
    if (m.fd < 0 || m.want_write == on) return;
    m.want_write = on;
    epoll_event ev{};
    ev.events = EPOLLIN | (on ? EPOLLOUT : 0u);
    ev.data.u32 = m.id;
    epoll_ctl(ep_, EPOLL_CTL_MOD, m.fd, &ev);
  }

  void announce(Member& m) { queue(m, bytes::Span(m.feed.wire)); }

  void writable(Member& m) {
    if (m.state == Member::State::kConnecting) {
      int err = 0;
      socklen_t len = sizeof err;
      getsockopt(m.fd, SOL_SOCKET, SO_ERROR, &err, &len);
      if (err != 0) {
        errno = err;
        return redial(m, "connect");
      }
      m.state = Member::State::kOpenSent;
      codec::Capabilities caps;
      caps.multiprotocol.push_back(codec::kIpv4Unicast);
      caps.route_refresh = true;
      caps.four_octet_as = m.as;
      std::vector<std::byte> open;
      codec::encode_open(codec::Open::make(m.as, kHoldTime, m.addr.v4_value(), caps), open);
      queue(m, bytes::Span(open));
    }
    // Bounded: each write moves at least one octet or stops.
    for (int i = 0; i < 64 && m.out_pos < m.out.size(); ++i) {
      ssize_t w = write(m.fd, m.out.data() + m.out_pos, m.out.size() - m.out_pos);
      if (w < 0) {
        if (errno == EAGAIN || errno == EINTR) return;
        return fail(m, "write");
      }
      m.out_pos += static_cast<size_t>(w);
    }
    if (m.out_pos == m.out.size()) {
      m.out.clear();
      m.out_pos = 0;
      set_write(m, false);
    }
  }

  void readable(Member& m) {
    for (int i = 0; i < 16 && m.fd >= 0; ++i) {
      ssize_t r = read(m.fd, buf_.data(), buf_.size());
      if (r == 0) return fail(m, "closed");
      if (r < 0) {
        if (errno == EAGAIN || errno == EINTR) return;
        return fail(m, "closed");
      }
      m.framer.feed(bytes::Span(buf_.data(), static_cast<size_t>(r)));
      if (!messages(m)) return;
      if (static_cast<size_t>(r) < buf_.size()) return;
    }
  }

  // Every whole message received; false when the session ended.
  bool messages(Member& m) {
    codec::Message msg{};
    codec::NotifyError err{};
    for (int i = 0; i < 1'000'000; ++i) {
      auto st = m.framer.next(msg, err);
      if (st == codec::Framer::Status::kNeedMore) return true;
      if (st == codec::Framer::Status::kError) {
        fail(m, "a malformed message from the daemon");
        return false;
      }
      switch (msg.type) {
        case codec::MessageType::kOpen: {
          auto open = codec::decode_open(msg.body);
          if (!open || open->as() != o_.daemon_as) {
            fail(m, "the daemon's OPEN is malformed or has another AS than --daemon-as");
            return false;
          }
          uint16_t hold = std::min<uint16_t>(kHoldTime, open->hold_time);
          m.keepalive_s = hold == 0 ? 3600 : std::max(1, hold / 3);
          m.params.four_octet_as = open->caps.four_octet_as.has_value();
          std::vector<std::byte> ka;
          codec::encode_keepalive(ka);
          queue(m, bytes::Span(ka));
          break;
        }
        case codec::MessageType::kKeepalive:
          if (m.state == Member::State::kOpenSent) established(m);
          break;
        case codec::MessageType::kUpdate:
          update(m, msg.body);
          break;
        case codec::MessageType::kNotification: {
          auto octet = [&](size_t at) { return at < msg.body.size() ? std::to_integer<int>(msg.body[at]) : -1; };
          log("member {}: NOTIFICATION {}/{} from the daemon", m.id, octet(0), octet(1));
          fail(m, "NOTIFICATION from the daemon");
          return false;
        }
        case codec::MessageType::kRouteRefresh:
          break;
      }
    }
    return true;
  }

  void established(Member& m) {
    m.state = Member::State::kEstablished;
    m.established_ns = now();
    if (m.first_up_ns < 0) {
      m.first_up_ns = m.established_ns;
      m.connect_wait_ns = m.established_ns - m.first_dial_ns;
    }
    m.next_keepalive_ns = m.established_ns + int64_t{m.keepalive_s} * 1'000'000'000;
    ++up_;
    // Cold start: every member announces once all are up; on the return,
    // each at once.
    if (phase_ == Phase::kReturn) announce(m);
  }

  void set_bit(Member& m, uint32_t i, bool on) {
    uint64_t bit = uint64_t{1} << (i % 64);
    uint64_t& w = m.held[i / 64];
    if (((w & bit) != 0) == on) return;
    w ^= bit;
    uint32_t owner = table_.owner[i];
    if (owner == m.id) return;
    int64_t d = on ? 1 : -1;
    m.by_owner[owner] = static_cast<uint32_t>(m.by_owner[owner] + d);
    m.held_others = static_cast<uint64_t>(static_cast<int64_t>(m.held_others) + d);
    if (flapper_[owner]) m.flapped_held = static_cast<uint64_t>(static_cast<int64_t>(m.flapped_held) + d);
  }

  void update(Member& m, bytes::Span body) {
    auto u = codec::UpdateView::decode(body, m.params, codec::PeerType::kExternal);
    ++m.updates;
    if (u.action() == codec::ErrorAction::kSessionReset) {
      fail(m, "an UPDATE the codec refuses");
      return;
    }
    bool withdraw_all = u.action() == codec::ErrorAction::kTreatAsWithdraw;
    auto apply = [&](const net::Prefix& p, bool on) {
      auto i = table_.index(p);
      if (!i) {
        ++m.unexpected;
        return;
      }
      if (table_.owner[*i] == m.id && on) ++m.own_received;
      set_bit(m, *i, on);
    };
    for (const auto& range : u.withdrawals())
      for (const auto& p : range) apply(p.prefix, false);
    for (const auto& range : u.announced())
      for (const auto& p : range) apply(p.prefix, !withdraw_all);
    int64_t t = now();
    bool done = complete(m);
    if (done && m.complete_ns < 0 && phase_ <= Phase::kCold) m.complete_ns = t;
    if (phase_ == Phase::kWithdraw && m.flapped_held == 0 && m.withdrawn_ns < 0 && !flapper_[m.id])
      m.withdrawn_ns = t;
    if (phase_ == Phase::kReturn && done && m.again_ns < 0) m.again_ns = t;
  }

  // ---- the phases

  void loop() {
    std::vector<epoll_event> evs(1024);
    const int64_t deadline = static_cast<int64_t>(o_.timeout * 1e9);
    // At most one round a millisecond plus one per event batch: bounded by
    // the deadline and by a count.
    for (int64_t round = 0; round < static_cast<int64_t>(o_.timeout * 2000) + 10; ++round) {
      if (now() > deadline) {
        log("timed out in phase {}", kPhaseNames[static_cast<int>(phase_)]);
        return;
      }
      if (failed_ > 0) return;
      int n = epoll_wait(ep_, evs.data(), static_cast<int>(evs.size()), 1);
      for (int i = 0; i < n; ++i) {
        Member& m = members_[evs[static_cast<size_t>(i)].data.u32];
        uint32_t e = evs[static_cast<size_t>(i)].events;
        if (m.fd < 0) continue;
        // The connect first: a passive daemon's OPEN may come with it, and
        // ours must go out before the KEEPALIVE that answers it.
        if (m.state == Member::State::kConnecting && (e & EPOLLOUT)) writable(m);
        if (m.fd >= 0 && (e & (EPOLLIN | EPOLLHUP | EPOLLERR))) readable(m);
        if (m.fd >= 0 && (e & EPOLLOUT)) writable(m);
      }
      timers();
      if (failed_ > 0) return;
      if (!advance()) return;
    }
  }

  void timers() {
    int64_t t = now();
    std::vector<std::byte> ka;
    for (auto& m : members_) {
      if (m.state == Member::State::kIdle && m.next_dial_ns >= 0 && t >= m.next_dial_ns) dial(m);
      if (m.state == Member::State::kEstablished && t >= m.next_keepalive_ns) {
        ka.clear();
        codec::encode_keepalive(ka);
        queue(m, bytes::Span(ka));
        m.next_keepalive_ns = t + int64_t{m.keepalive_s} * 1'000'000'000;
      }
    }
  }

  [[nodiscard]] bool all(bool survivors_only, auto pred) const {
    for (const auto& m : members_)
      if (!(survivors_only && flapper_[m.id]) && !pred(m)) return false;
    return true;
  }

  // Moves to the next phase when this one is over; false when done.
  bool advance() {
    int64_t t = now();
    switch (phase_) {
      case Phase::kConnect:
        if (up_ < o_.members) return true;
        last_up_ns_ = t;
        log("{} sessions Established; announcing", o_.members);
        for (auto& m : members_) announce(m);
        phase_ = Phase::kCold;
        return true;
      case Phase::kCold:
        if (!all(false, [](const Member& m) { return m.complete_ns >= 0; })) return true;
        cold_done_ns_ = t;
        cold_sample_ = bench::sample_processes(o_.daemon_pids);
        log("every member holds the table; settling {:.1f} s", o_.settle);
        phase_ = Phase::kSettle;
        return true;
      case Phase::kSettle:
        if (t - cold_done_ns_ < static_cast<int64_t>(o_.settle * 1e9)) return true;
        settled_sample_ = bench::sample_processes(o_.daemon_pids);
        if (*o_.flappers == 0) {
          phase_ = Phase::kDone;
          return false;
        }
        // Every survivor holds the flappers' prefixes now.
        for (auto& m : members_) {
          m.flapped_held = 0;
          for (uint32_t f = 0; f < o_.members; ++f)
            if (flapper_[f] && f != m.id) m.flapped_held += m.by_owner[f];
        }
        flap_ns_ = now();
        for (auto& m : members_)
          if (flapper_[m.id]) {
            hard_close(m);
            --up_;
          }
        log("{} members closed (RST)", *o_.flappers);
        phase_ = Phase::kWithdraw;
        return true;
      case Phase::kWithdraw:
        if (!all(true, [](const Member& m) { return m.withdrawn_ns >= 0; })) return true;
        withdrawn_ns_ = t;
        log("the survivors saw every withdrawal; the flappers return");
        for (auto& m : members_)
          if (flapper_[m.id]) m.next_dial_ns = t;
        return_ns_ = t;
        phase_ = Phase::kReturn;
        return true;
      case Phase::kReturn:
        if (returned_up_ns_ < 0 && up_ == o_.members) returned_up_ns_ = t;
        if (returned_up_ns_ < 0) return true;
        if (!all(true, [](const Member& m) { return m.again_ns >= 0; })) return true;
        if (!all(false, [this](const Member& m) { return complete(m); })) return true;
        again_ns_ = t;
        log("the survivors hold the table again; done");
        phase_ = Phase::kDone;
        return false;
      case Phase::kDone:
        return false;
    }
    return false;
  }

  // ---- output

  static std::string secs(int64_t ns) {
    if (ns < 0) return "null";
    return fmt::format("{:.3f}", static_cast<double>(ns) / 1e9);
  }

  // p50 (the median) and worst of the members' times since `from` (the
  // survivors' only when asked); nulls when any of them has none.
  std::string spread(const char* name, int64_t from, bool survivors_only, int64_t Member::*field) const {
    std::vector<int64_t> v;
    bool missing = from < 0;
    for (const auto& m : members_) {
      if (survivors_only && flapper_[m.id]) continue;
      if (m.*field < 0) missing = true;
      else v.push_back(m.*field - from);
    }
    if (missing || v.empty()) return fmt::format("\"{}_p50_s\":null,\"{}_worst_s\":null", name, name);
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    int64_t p50 = n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    return fmt::format("\"{}_p50_s\":{},\"{}_worst_s\":{}", name, secs(p50), name, secs(v.back()));
  }

  static std::string proc(const char* name, const bench::ProcSample& s, bool rss_only) {
    if (s.processes == 0) return fmt::format("\"{}_rss_kib\":null", name);
    if (rss_only) return fmt::format("\"{}_rss_kib\":{}", name, s.rss_kb);
    return fmt::format("\"{}_rss_kib\":{},\"{}_peak_rss_kib\":{},\"{}_cpu_s\":{:.2f}", name, s.rss_kb, name,
                       s.peak_kb, name, s.cpu_s);
  }

  std::string report() const {
    bench::ProcSample end = bench::sample_processes(o_.daemon_pids);
    int64_t first_up = -1;
    uint64_t redials = 0, own = 0, unexpected = 0, updates = 0;
    uint32_t complete_now = 0;
    for (const auto& m : members_) {
      redials += m.redials;
      own += m.own_received;
      unexpected += m.unexpected;
      updates += m.updates;
      if (complete(m)) ++complete_now;
      if (m.first_up_ns >= 0 && (first_up < 0 || m.first_up_ns < first_up)) first_up = m.first_up_ns;
    }
    std::string j = "{";
    j += fmt::format("\"members\":{},\"prefixes\":{},\"flappers\":{},\"connect_spread_s\":{:.3f}", o_.members,
                     o_.prefixes, *o_.flappers, o_.connect_spread);
    // Connect: when the sessions first came up, and how long each waited
    // from its first dial (TCP back-off at a short listen backlog).
    j += fmt::format(",\"established\":{},\"first_established_s\":{},\"last_established_s\":{}", up_,
                     secs(first_up), secs(last_up_ns_));
    j += "," + spread("connect_wait", 0, false, &Member::connect_wait_ns);
    j += fmt::format(",\"redials\":{}", redials);
    j += "," + spread("cold_start", last_up_ns_, false, &Member::complete_ns);
    j += fmt::format(",\"flap_s\":{}", secs(flap_ns_));
    j += "," + spread("withdrawal", flap_ns_, true, &Member::withdrawn_ns);
    j += fmt::format(",\"return_established_s\":{}",
                     returned_up_ns_ < 0 || return_ns_ < 0 ? "null" : secs(returned_up_ns_ - return_ns_));
    j += "," + spread("return", returned_up_ns_, true, &Member::again_ns);
    j += fmt::format(",\"complete_members\":{},\"own_prefixes_received\":{},\"unexpected_prefixes\":{},"
                     "\"updates\":{}",
                     complete_now, own, unexpected, updates);
    j += "," + proc("daemon_cold", cold_sample_, false);
    j += "," + proc("daemon_settled", settled_sample_, true);
    j += "," + proc("daemon_end", end, false);
    // This tool's own CPU seconds: on a small machine it shares the cores
    // with the daemon.
    rusage self{};
    getrusage(RUSAGE_SELF, &self);
    j += fmt::format(",\"fanout_cpu_s\":{:.2f}",
                     static_cast<double>(self.ru_utime.tv_sec + self.ru_stime.tv_sec) +
                         static_cast<double>(self.ru_utime.tv_usec + self.ru_stime.tv_usec) / 1e6);
    j += fmt::format(",\"failed\":{},\"timed_out\":{},\"phase\":\"{}\"}}", failed_ > 0 ? "true" : "false",
                     failed_ == 0 && phase_ != Phase::kDone ? "true" : "false",
                     kPhaseNames[static_cast<int>(phase_)]);
    return j;
  }

  static constexpr const char* kPhaseNames[] = {"connect", "cold", "settle", "withdraw", "return", "done"};

  const Options& o_;
  Table table_;
  net::IpAddress daemon_;
  std::vector<Member> members_;
  std::vector<uint8_t> flapper_;
  std::vector<std::byte> buf_ = std::vector<std::byte>(256 * 1024);
  int ep_ = -1;
  Clock::time_point t0_;
  Phase phase_ = Phase::kConnect;
  uint32_t up_ = 0;
  int failed_ = 0;
  int64_t last_up_ns_ = -1, cold_done_ns_ = -1, flap_ns_ = -1, withdrawn_ns_ = -1, return_ns_ = -1,
          returned_up_ns_ = -1, again_ns_ = -1;
  bench::ProcSample cold_sample_, settled_sample_;
};

}  // namespace

int main(int argc, char** argv) {
  Options o = parse(argc, argv);
  Run r(o);
  return r.main();
}
