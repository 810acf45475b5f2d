// petrel-load: a load generator and observer for full-table runs
// (docs/performance.md, "Full tables end to end"; scripts/profile/).
//
// Plays N neighbours of the daemon under test. Each one dials the daemon
// from its own local address, completes the BGP handshake and, once every
// session (and the observer's) is up, writes a synthetic full table
// (tools/synth, packed into UPDATEs before any clock starts) as fast as
// the daemon reads it, then End-of-RIB, then holds the session with
// KEEPALIVEs. The observer is one more neighbour that sends nothing: it
// decodes every UPDATE the daemon sends and records when it holds every
// prefix of the table. With --observer-late 1 it dials only once the
// daemon's table is full (a new neighbour of a router that holds a full
// table; `observer_dialled_s` says when).
//
// Optional watchers: the daemon's Prometheus metrics (Petrel: when
// petrel_table_routes reaches every neighbour's routes) and the kernel's
// routing table in a network namespace (when every prefix of the table is
// there), followed through netlink notifications.
//
// Prints one JSON object (and writes it to --json FILE, whole, when
// given). Times are seconds: `sessions_up_s` since start; the others
// since the first UPDATE was written (`null` when not measured or not
// reached before --timeout). Exit 0 when every measured thing
// completed, 1 on a timeout, 2 on bad arguments or a failed session.
//
// Every loop is bounded by --timeout (default 600 s) plus --hold.
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "codec/framer.h"
#include "codec/open.h"
#include "codec/update.h"
#include "tools/bench/args.h"
#include "tools/bench/feed.h"
#include "tools/bench/sock.h"
#include "tools/synth/synth.h"
#include "fib/netlink.h"

namespace {

using namespace petrel;
using Clock = std::chrono::steady_clock;

struct Options {
  std::string daemon;                  // the daemon's address
  uint16_t port = 179;
  uint32_t daemon_as = 65000;
  std::vector<std::string> feeders;    // one local address per neighbour
  // --next-hop: neighbour i's next hop (i-th given), instead of its own
  // address: one further away, that the daemon resolves through its
  // kernel's routes (scripts/profile/nexthops.sh).
  std::vector<std::string> next_hops;
  // --next-hop-v6: neighbour i's IPv6 next hop (i-th given), for a table
  // of both families fed over one IPv4 session (IPv6 routes need one).
  std::vector<std::string> next_hops_v6;
  uint32_t feeder_as = 65001;          // neighbour i has feeder_as + i
  std::string observer;                // local address of the observer ("" = none)
  uint32_t observer_as = 65100;
  bool observer_late = false;          // the observer dials once the daemon's table is full
  synth::Params table;
  std::string metrics;                 // host:port of the daemon's /metrics ("" = none)
  std::string kernel_netns;            // namespace whose kernel to watch ("" = none)
  std::string json;                    // also write the result here ("" = stdout only)
  uint32_t kernel_table = 254;
  double timeout = 600, hold = 0, settle = 0.5;
};

constexpr bench::Usage kUsage{"petrel-load",
               "usage: petrel-load --daemon ADDR [--port N] [--daemon-as N]\n"
               "         --feeder ADDR [--feeder ADDR ...] [--feeder-as N] [--next-hop ADDR ...]\n"
               "         [--next-hop-v6 ADDR ...]\n"
               "         [--observer ADDR] [--observer-as N] [--observer-late 0|1]\n"
               "         [--v4 N] [--v6 N] [--attr-sets N] [--seed N]\n"
               "         [--metrics HOST:PORT] [--kernel-netns NAME] [--kernel-table N]\n"
               "         [--timeout S] [--hold S] [--settle S] [--json FILE]\n"};

Options parse(int argc, char** argv) {
  Options o;
  o.table.v6_prefixes = 0;
  bool sets_given = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (i + 1 >= argc) kUsage.fail("every option takes a value");
    const char* v = argv[++i];
    if (a == "--daemon") o.daemon = v;
    else if (a == "--port") o.port = static_cast<uint16_t>(kUsage.count(v, "bad --port"));
    else if (a == "--daemon-as") o.daemon_as = static_cast<uint32_t>(kUsage.count(v, "bad --daemon-as"));
    else if (a == "--feeder") o.feeders.emplace_back(v);
    else if (a == "--next-hop") o.next_hops.emplace_back(v);
    else if (a == "--next-hop-v6") o.next_hops_v6.emplace_back(v);
    else if (a == "--feeder-as") o.feeder_as = static_cast<uint32_t>(kUsage.count(v, "bad --feeder-as"));
    else if (a == "--observer") o.observer = v;
    else if (a == "--observer-as") o.observer_as = static_cast<uint32_t>(kUsage.count(v, "bad --observer-as"));
    else if (a == "--observer-late") o.observer_late = kUsage.count(v, "bad --observer-late") != 0;
    else if (a == "--v4") o.table.v4_prefixes = static_cast<uint32_t>(kUsage.count(v, "bad --v4"));
    else if (a == "--v6") o.table.v6_prefixes = static_cast<uint32_t>(kUsage.count(v, "bad --v6"));
    else if (a == "--attr-sets") {
      o.table.attr_sets = static_cast<uint32_t>(kUsage.count(v, "bad --attr-sets"));
      sets_given = true;
    }
    else if (a == "--seed") o.table.seed = kUsage.count(v, "bad --seed");
    else if (a == "--metrics") o.metrics = v;
    else if (a == "--kernel-netns") o.kernel_netns = v;
    else if (a == "--kernel-table") o.kernel_table = static_cast<uint32_t>(kUsage.count(v, "bad --kernel-table"));
    else if (a == "--json") o.json = v;
    else if (a == "--timeout") o.timeout = kUsage.seconds(v, "bad --timeout");
    else if (a == "--hold") o.hold = kUsage.seconds(v, "bad --hold");
    else if (a == "--settle") o.settle = kUsage.seconds(v, "bad --settle");
    else kUsage.fail("unknown option");
  }
  // One attribute set per four prefixes unless told (250,000 for a 1M
  // table, as table-bench uses).
  if (!sets_given) o.table.attr_sets = std::max<uint32_t>(1, (o.table.v4_prefixes + o.table.v6_prefixes) / 4);
  if (o.daemon.empty()) kUsage.fail("--daemon is required");
  if (o.feeders.empty()) kUsage.fail("at least one --feeder is required");
  if (o.feeders.size() > 64) kUsage.fail("at most 64 feeders");
  if (!o.next_hops.empty() && o.next_hops.size() != o.feeders.size())
    kUsage.fail("--next-hop: one for each --feeder, or none");
  if (!o.next_hops_v6.empty() && o.next_hops_v6.size() != o.feeders.size())
    kUsage.fail("--next-hop-v6: one for each --feeder, or none");
  return o;
}

// ---- shared state

struct Shared {
  Clock::time_point start = Clock::now();
  std::atomic<bool> go{false};    // feeders may write
  std::atomic<bool> stop{false};  // every thread ends
  std::atomic<int> up{0};         // sessions established
  std::atomic<int> failed{0};     // sessions that ended in error
  std::atomic<int64_t> first_write_ns{-1};
  std::atomic<int> feeders_done{0};
  std::atomic<int64_t> last_write_ns{-1};
  std::mutex log_mu;

  [[nodiscard]] int64_t now_ns() const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count();
  }
  template <typename... A>
  void log(fmt::format_string<A...> f, A&&... a) {
    std::lock_guard l(log_mu);
    fmt::print(stderr, "petrel-load {:8.3f} {}\n", static_cast<double>(now_ns()) / 1e9,
               fmt::format(f, std::forward<A>(a)...));
  }
  [[nodiscard]] bool past(double timeout) const { return static_cast<double>(now_ns()) / 1e9 > timeout; }
};

// Every prefix of the table, numbered; the trackers keep a bit each.
struct Expected {
  std::unordered_map<net::Prefix, uint32_t> index;

  explicit Expected(const synth::Table& t, bool v4, bool v6) {
    index.reserve(t.v4_count() + t.v6_count());
    auto add = [&](const std::vector<synth::Group>& gs) {
      for (const auto& g : gs)
        for (const auto& p : g.prefixes) index.emplace(p, static_cast<uint32_t>(index.size()));
    };
    if (v4) add(t.v4);
    if (v6) add(t.v6);
  }
  [[nodiscard]] std::optional<uint32_t> find(const net::Prefix& p) const {
    auto it = index.find(p);
    if (it == index.end()) return std::nullopt;
    return it->second;
  }
};

// Which expected prefixes something holds, and when it first held all.
class Tracker {
 public:
  explicit Tracker(const Expected& e) : e_(e), held_(e.index.size(), 0) {}

  void add(const net::Prefix& p) {
    auto i = e_.find(p);
    if (!i) {
      unexpected_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    if (!held_[*i]) {
      held_[*i] = 1;
      count_.fetch_add(1, std::memory_order_relaxed);
    }
  }
  void remove(const net::Prefix& p) {
    auto i = e_.find(p);
    if (i && held_[*i]) {
      held_[*i] = 0;
      count_.fetch_sub(1, std::memory_order_relaxed);
    }
  }
  void clear() {
    std::fill(held_.begin(), held_.end(), 0);
    count_.store(0, std::memory_order_relaxed);
  }
  // Records the first moment every prefix is held.
  void check(const Shared& sh) {
    if (complete_ns_.load() < 0 && count() == held_.size()) complete_ns_ = sh.now_ns();
  }
  // Read by the main thread while the owner's thread updates them.
  [[nodiscard]] size_t count() const { return count_.load(std::memory_order_relaxed); }
  [[nodiscard]] uint64_t unexpected() const { return unexpected_.load(std::memory_order_relaxed); }
  [[nodiscard]] int64_t complete_ns() const { return complete_ns_.load(); }

  std::atomic<uint64_t> updates{0};  // UPDATE messages seen (the observer's)

 private:
  const Expected& e_;
  std::vector<uint8_t> held_;
  std::atomic<size_t> count_{0};
  std::atomic<uint64_t> unexpected_{0};
  std::atomic<int64_t> complete_ns_{-1};
};

// ---- sockets

using bench::sockaddr_of;

// Dials remote from local, retrying every 100 ms until the deadline.
int dial(const std::string& local, const std::string& remote, uint16_t port, Shared& sh, double timeout) {
  socklen_t llen = 0, rlen = 0;
  auto la = sockaddr_of(local, 0, llen);
  auto ra = sockaddr_of(remote, port, rlen);
  if (!la || !ra) return -1;
  for (int attempt = 0; attempt < 100000 && !sh.stop && !sh.past(timeout); ++attempt) {
    int fd = socket(ra->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (bind(fd, reinterpret_cast<sockaddr*>(&*la), llen) == 0 &&
        connect(fd, reinterpret_cast<sockaddr*>(&*ra), rlen) == 0) {
      fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
      return fd;
    }
    close(fd);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return -1;
}

// ---- one BGP session

enum class Role : uint8_t { kFeeder, kObserver };

class Session {
 public:
  Session(Shared& sh, const Options& o, Role role, std::string local, uint32_t as, const bench::Feed* feed,
          Tracker* tracker)
      : sh_(sh), o_(o), role_(role), local_(std::move(local)), as_(as), feed_(feed), tracker_(tracker) {}

  void run() {
    fd_ = dial(local_, o_.daemon, o_.port, sh_, o_.timeout);
    if (fd_ < 0) return failed("cannot connect");
    auto la = net::IpAddress::parse(local_);
    codec::Capabilities caps;
    if (o_.table.v4_prefixes > 0) caps.multiprotocol.push_back(codec::kIpv4Unicast);
    if (o_.table.v6_prefixes > 0) caps.multiprotocol.push_back(codec::kIpv6Unicast);
    caps.route_refresh = true;
    caps.four_octet_as = as_;
    uint32_t id = la && la->is_v4() ? la->v4_value() : 0x0a000001u + as_;
    codec::encode_open(codec::Open::make(as_, kHoldTime, id, caps), ctl_);
    std::vector<std::byte> buf(256 * 1024);
    int64_t next_keepalive = 0;
    while (!sh_.stop) {
      if (sh_.past(o_.timeout + o_.hold + 5)) return failed("ran past its time");
      fill_output();
      pollfd p{fd_, static_cast<short>(POLLIN | (pending() ? POLLOUT : 0)), 0};
      int n = poll(&p, 1, 10);
      if (n < 0 && errno != EINTR) return failed("poll failed");
      if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
        ssize_t r = read(fd_, buf.data(), buf.size());
        if (r == 0) return failed("the daemon closed the connection");
        if (r < 0 && errno != EAGAIN && errno != EINTR) return failed("read failed");
        if (r > 0) {
          framer_.feed(bytes::Span(buf.data(), static_cast<size_t>(r)));
          if (!drain_messages()) return;
        }
      }
      if (p.revents & POLLOUT) {
        if (!write_some()) return failed("write failed");
      }
      if (established_ && sh_.now_ns() >= next_keepalive) {
        if (!in_message()) {
          codec::encode_keepalive(ctl_);
          next_keepalive = sh_.now_ns() + int64_t{keepalive_s_} * 1'000'000'000;
        }
      }
    }
    close(fd_);
  }

 private:
  static constexpr uint16_t kHoldTime = 180;
  static constexpr size_t kChunk = 256 * 1024;

  void failed(const char* why) {
    sh_.log("{} {}: {} ({})", role_ == Role::kFeeder ? "feeder" : "observer", local_, why, std::strerror(errno));
    sh_.failed++;
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }

  [[nodiscard]] bool pending() const { return feeding_ || out_pos_ < out_.size() || !ctl_.empty(); }
  // Whether part of a feed chunk is still to go (no message may start).
  [[nodiscard]] bool in_message() const { return feeding_; }

  // Moves the next piece into out_: control messages first, then feed
  // chunks of whole messages (control messages go only between chunks).
  void fill_output() {
    if (feeding_ || out_pos_ < out_.size()) return;
    out_.clear();
    out_pos_ = 0;
    if (!ctl_.empty()) {
      out_.swap(ctl_);
      return;
    }
    if (role_ != Role::kFeeder || !established_ || !sh_.go || feed_pos_ >= feed_->wire.size()) return;
    size_t want = feed_pos_ + kChunk;
    auto it = std::lower_bound(feed_->offsets.begin(), feed_->offsets.end(), want);
    size_t end = it == feed_->offsets.end() ? feed_->wire.size() : *it;
    chunk_ = bytes::Span(feed_->wire).subspan(feed_pos_, end - feed_pos_);
    feed_pos_ = end;
    feeding_ = true;
  }

  bool write_some() {
    bytes::Span s = feeding_ ? chunk_.subspan(chunk_pos_) : bytes::Span(out_).subspan(out_pos_);
    if (s.empty()) return true;
    ssize_t w = write(fd_, s.data(), s.size());
    if (w < 0) return errno == EAGAIN || errno == EINTR;
    if (feeding_) {
      if (chunk_pos_ == 0 && feed_pos_ - chunk_.size() == 0) {
        int64_t expected = -1;
        sh_.first_write_ns.compare_exchange_strong(expected, sh_.now_ns());
      }
      chunk_pos_ += static_cast<size_t>(w);
      if (chunk_pos_ == chunk_.size()) {
        feeding_ = false;
        chunk_pos_ = 0;
        chunk_ = {};
        if (feed_pos_ >= feed_->wire.size()) {
          int64_t t = sh_.now_ns();
          int64_t prev = sh_.last_write_ns.load();
          while (prev < t && !sh_.last_write_ns.compare_exchange_weak(prev, t)) {
          }
          sh_.feeders_done++;
        }
      }
    } else {
      out_pos_ += static_cast<size_t>(w);
    }
    return true;
  }

  // Handles every whole message received; false when the session ended.
  bool drain_messages() {
    codec::Message m{};
    codec::NotifyError err{};
    for (int i = 0; i < 1'000'000; ++i) {
      auto st = framer_.next(m, err);
      if (st == codec::Framer::Status::kNeedMore) return true;
      if (st == codec::Framer::Status::kError) {
        failed("a malformed message from the daemon");
        return false;
      }
      switch (m.type) {
        case codec::MessageType::kOpen: {
          auto open = codec::decode_open(m.body);
          if (!open) {
            failed("a malformed OPEN from the daemon");
            return false;
          }
          if (open->as() != o_.daemon_as) {
            failed("the daemon's OPEN has another AS than --daemon-as");
            return false;
          }
          uint16_t hold = std::min<uint16_t>(kHoldTime, open->hold_time);
          keepalive_s_ = hold == 0 ? 3600 : std::max(1, hold / 3);
          params_.four_octet_as = open->caps.four_octet_as.has_value();
          codec::encode_keepalive(ctl_);
          break;
        }
        case codec::MessageType::kKeepalive:
          if (!established_) {
            established_ = true;
            sh_.up++;
          }
          break;
        case codec::MessageType::kUpdate:
          if (role_ == Role::kObserver) observe(m.body);
          break;
        case codec::MessageType::kNotification:
          failed("NOTIFICATION from the daemon");
          return false;
        case codec::MessageType::kRouteRefresh:
          break;
      }
    }
    return true;
  }

  void observe(bytes::Span body) {
    auto u = codec::UpdateView::decode(body, params_, codec::PeerType::kExternal);
    if (u.action() == codec::ErrorAction::kSessionReset) {
      sh_.log("observer: an UPDATE the codec refuses (session reset)");
      return;
    }
    bool withdraw_all = u.action() == codec::ErrorAction::kTreatAsWithdraw;
    for (const auto& range : u.withdrawals())
      for (const auto& p : range) tracker_->remove(p.prefix);
    for (const auto& range : u.announced())
      for (const auto& p : range) {
        if (withdraw_all) tracker_->remove(p.prefix);
        else tracker_->add(p.prefix);
      }
    tracker_->updates.fetch_add(1, std::memory_order_relaxed);
    tracker_->check(sh_);
  }

  Shared& sh_;
  const Options& o_;
  Role role_;
  std::string local_;
  uint32_t as_;
  const bench::Feed* feed_;
  Tracker* tracker_;
  int fd_ = -1;
  codec::Framer framer_;
  codec::SessionParams params_;
  std::vector<std::byte> ctl_, out_;
  size_t out_pos_ = 0;
  bytes::Span chunk_;
  size_t chunk_pos_ = 0, feed_pos_ = 0;
  bool feeding_ = false, established_ = false;
  int keepalive_s_ = 30;
};

// ---- the daemon's metrics (Petrel's petrel_table_routes)

// GET /metrics over plain HTTP/1.0; the sum of petrel_table_routes, or -1.
int64_t table_routes(const std::string& hostport, Shared& sh) {
  auto colon = hostport.rfind(':');
  if (colon == std::string::npos) return -1;
  std::string host = hostport.substr(0, colon);
  if (host.size() > 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  socklen_t len = 0;
  auto a = sockaddr_of(host, static_cast<uint16_t>(std::atoi(hostport.c_str() + colon + 1)), len);
  if (!a) return -1;
  int fd = socket(a->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  timeval tv{2, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  if (connect(fd, reinterpret_cast<sockaddr*>(&*a), len) != 0) {
    close(fd);
    return -1;
  }
  const char req[] = "GET /metrics HTTP/1.0\r\nHost: petrel\r\n\r\n";
  if (write(fd, req, sizeof req - 1) != static_cast<ssize_t>(sizeof req - 1)) {
    close(fd);
    return -1;
  }
  std::string body;
  char buf[65536];
  for (int i = 0; i < 10000 && !sh.stop; ++i) {
    ssize_t r = read(fd, buf, sizeof buf);
    if (r <= 0) break;
    body.append(buf, static_cast<size_t>(r));
  }
  close(fd);
  int64_t sum = 0;
  bool seen = false;
  for (size_t at = 0; at < body.size();) {
    size_t end = body.find('\n', at);
    if (end == std::string::npos) end = body.size();
    std::string_view line(body.data() + at, end - at);
    // Routes in the table, and those import policy refused (which never
    // enter it): every route the feeders sent is one or the other.
    if (line.starts_with("petrel_table_routes{") ||
        (line.starts_with("petrel_peer_update_prefixes_total{") && line.find("kind=\"refused\"") != line.npos)) {
      auto sp = line.rfind(' ');
      if (sp != std::string_view::npos) {
        sum += std::atoll(std::string(line.substr(sp + 1)).c_str());
        seen = true;
      }
    }
    at = end + 1;
  }
  return seen ? sum : -1;
}

// ---- the kernel's routing table in a namespace

class KernelWatch {
 public:
  KernelWatch(Shared& sh, const Options& o, const Expected& e) : sh_(sh), o_(o), tracker_(e) {}

  // Runs on its own thread (setns changes only the calling thread).
  void run() {
    std::string path = "/run/netns/" + o_.kernel_netns;
    int ns = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (ns < 0 || setns(ns, CLONE_NEWNET) != 0) {
      sh_.log("kernel watch: cannot enter {}: {}", path, std::strerror(errno));
      sh_.failed++;
      if (ns >= 0) close(ns);
      return;
    }
    close(ns);
    fd_ = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
    if (fd_ < 0) {
      sh_.failed++;
      return;
    }
    int size = 512 << 20;
    setsockopt(fd_, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof size);
    sockaddr_nl sa{};
    sa.nl_family = AF_NETLINK;
    sa.nl_groups = RTMGRP_IPV4_ROUTE | RTMGRP_IPV6_ROUTE;
    if (bind(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
      sh_.log("kernel watch: bind: {}", std::strerror(errno));
      sh_.failed++;
      close(fd_);
      return;
    }
    dump();
    std::vector<std::byte> buf(1 << 20);
    while (!sh_.stop && !sh_.past(o_.timeout + o_.hold + 5)) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 20) <= 0) continue;
      ssize_t r = recv(fd_, buf.data(), buf.size(), 0);
      if (r < 0 && errno == ENOBUFS) {
        ++overruns_;
        tracker_.clear();
        dump();
        continue;
      }
      if (r <= 0) continue;
      fib::for_each_message(bytes::Span(buf.data(), static_cast<size_t>(r)),
                                     [&](const fib::Message& m) { handle(m); });
      tracker_.check(sh_);
    }
    close(fd_);
  }

  [[nodiscard]] int64_t complete_ns() const { return tracker_.complete_ns(); }
  [[nodiscard]] size_t count() const { return tracker_.count(); }
  [[nodiscard]] int overruns() const { return overruns_; }

 private:
  void dump() {
    // Two dumps cannot run at once on one socket: IPv4 only when the
    // table has no IPv6 (the common case here), else one after the other.
    for (uint8_t fam : {fib::kAfInet, fib::kAfInet6}) {
      if (fam == fib::kAfInet && o_.table.v4_prefixes == 0) continue;
      if (fam == fib::kAfInet6 && o_.table.v6_prefixes == 0) continue;
      std::vector<std::byte> req;
      fib::encode_dump(RTM_GETROUTE, fam, ++seq_, req);
      if (send(fd_, req.data(), req.size(), 0) < 0) return;
      std::vector<std::byte> buf(1 << 20);
      bool done = false;
      for (int i = 0; i < 1'000'000 && !done && !sh_.stop; ++i) {
        ssize_t r = recv(fd_, buf.data(), buf.size(), 0);
        if (r < 0 && errno == ENOBUFS) continue;
        if (r <= 0) break;
        fib::for_each_message(bytes::Span(buf.data(), static_cast<size_t>(r)),
                                       [&](const fib::Message& m) {
                                         if (std::holds_alternative<fib::Done>(m.body) &&
                                             m.header.seq == seq_)
                                           done = true;
                                         handle(m);
                                       });
      }
    }
    tracker_.check(sh_);
  }

  void handle(const fib::Message& m) {
    const auto* r = std::get_if<fib::Route>(&m.body);
    if (!r || r->table != o_.kernel_table) return;
    if (m.header.type == RTM_NEWROUTE) tracker_.add(r->dst);
    else if (m.header.type == RTM_DELROUTE) tracker_.remove(r->dst);
  }

  Shared& sh_;
  const Options& o_;
  Tracker tracker_;
  int fd_ = -1;
  uint32_t seq_ = 0;
  int overruns_ = 0;
};

// ---- output

std::string secs(int64_t ns, int64_t from_ns) {
  if (ns < 0 || from_ns < 0) return "null";
  char b[32];
  std::snprintf(b, sizeof b, "%.3f", static_cast<double>(ns - from_ns) / 1e9);
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  Options o = parse(argc, argv);
  Shared sh;

  // Build every feed before the clock that matters starts.
  std::vector<bench::Feed> feeds;
  std::optional<Expected> expected;
  for (size_t i = 0; i < o.feeders.size(); ++i) {
    synth::Table t = synth::generate(o.table, static_cast<uint32_t>(i));
    if (i == 0) expected.emplace(t, o.table.v4_prefixes > 0, o.table.v6_prefixes > 0);
    auto nh = net::IpAddress::parse(o.next_hops.empty() ? o.feeders[i] : o.next_hops[i]);
    if (!nh) kUsage.fail("a --feeder or --next-hop is not an address");
    bench::FeedOptions fo;
    fo.neighbour_as = o.feeder_as + static_cast<uint32_t>(i);
    if (nh->is_v4()) fo.next_hop_v4 = *nh;
    else fo.next_hop_v6 = *nh;
    if (!o.next_hops_v6.empty()) {
      auto nh6 = net::IpAddress::parse(o.next_hops_v6[i]);
      if (!nh6 || nh6->is_v4()) kUsage.fail("a --next-hop-v6 is not an IPv6 address");
      fo.next_hop_v6 = *nh6;
    }
    if (o.table.v6_prefixes > 0 && !fo.next_hop_v6) kUsage.fail("IPv6 routes need IPv6 feeder addresses");
    if (o.table.v4_prefixes > 0 && !nh->is_v4()) kUsage.fail("IPv4 routes need IPv4 feeder addresses");
    codec::SessionParams params;
    auto f = bench::build_feed(t, fo, params);
    if (!f) kUsage.fail(f.error());
    feeds.push_back(std::move(*f));
  }
  const uint64_t per_feed = feeds[0].v4_routes + feeds[0].v6_routes;
  size_t total_bytes = 0, total_messages = 0;
  for (const auto& f : feeds) {
    total_bytes += f.wire.size();
    total_messages += f.messages();
  }
  sh.log("{} feeds built: {} routes each, {} messages, {} bytes in all", feeds.size(), per_feed, total_messages,
         total_bytes);

  Tracker observed(*expected);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < o.feeders.size(); ++i)
    threads.emplace_back([&, i] {
      Session s(sh, o, Role::kFeeder, o.feeders[i], o.feeder_as + static_cast<uint32_t>(i), &feeds[i], nullptr);
      s.run();
    });
  const bool observing = !o.observer.empty();
  auto start_observer = [&] {
    threads.emplace_back([&] {
      Session s(sh, o, Role::kObserver, o.observer, o.observer_as, nullptr, &observed);
      s.run();
    });
  };
  // A late observer is a new neighbour of a router that holds the whole
  // table already: it is sent the table from the table, not as it arrives.
  int64_t observer_ns = -1;
  if (observing && !o.observer_late) start_observer();
  std::optional<KernelWatch> kernel;
  if (!o.kernel_netns.empty()) {
    kernel.emplace(sh, o, *expected);
    threads.emplace_back([&] { kernel->run(); });
  }

  const int sessions = static_cast<int>(o.feeders.size()) + (observing && !o.observer_late ? 1 : 0);
  int64_t up_ns = -1, table_ns = -1;
  bool timed_out = false;
  // Poll every 10 ms: at most timeout / 10 ms rounds.
  for (int64_t round = 0; round < static_cast<int64_t>(o.timeout * 100) + 1; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (sh.failed > 0) break;
    if (up_ns < 0 && sh.up == sessions) {
      up_ns = sh.now_ns();
      sh.log("{} sessions up; feeding in {:.1f} s", sessions, o.settle);
    }
    if (up_ns >= 0 && !sh.go && sh.now_ns() - up_ns >= static_cast<int64_t>(o.settle * 1e9)) sh.go = true;
    if (sh.go && !o.metrics.empty() && table_ns < 0 && round % 2 == 0) {
      if (table_routes(o.metrics, sh) >= static_cast<int64_t>(per_feed * feeds.size())) table_ns = sh.now_ns();
    }
    // Late: once the table is full (by the metrics; without them, once
    // every feeder wrote its last UPDATE).
    if (observing && o.observer_late && observer_ns < 0 &&
        (o.metrics.empty() ? sh.feeders_done == static_cast<int>(feeds.size()) : table_ns >= 0)) {
      observer_ns = sh.now_ns();
      sh.log("table full: the observer dials now");
      start_observer();
    }
    bool done = sh.feeders_done == static_cast<int>(feeds.size()) && (!observing || observed.complete_ns() >= 0) &&
                (o.metrics.empty() || table_ns >= 0) && (!kernel || kernel->complete_ns() >= 0);
    if (done) break;
    if (sh.past(o.timeout)) {
      timed_out = true;
      break;
    }
  }
  if (sh.failed == 0 && !timed_out) sh.log("complete");
  else if (timed_out) sh.log("timed out after {:.0f} s", o.timeout);

  int64_t t0 = sh.first_write_ns.load();
  std::string json = "{\"peers\":" + std::to_string(feeds.size()) + ",\"routes_per_peer\":" +
                     std::to_string(per_feed) + ",\"messages\":" + std::to_string(total_messages) +
                     ",\"bytes\":" + std::to_string(total_bytes) + ",\"sessions_up_s\":" + secs(up_ns, 0) +
                     ",\"last_update_written_s\":" + secs(sh.last_write_ns.load(), t0) +
                     ",\"table_complete_s\":" + secs(table_ns, t0) +
                     ",\"observer_dialled_s\":" + secs(o.observer_late ? observer_ns : -1, t0) +
                     ",\"observer_complete_s\":" + secs(observing ? observed.complete_ns() : -1, t0) +
                     ",\"observer_prefixes\":" + (observing ? std::to_string(observed.count()) : "null") +
                     ",\"observer_unexpected\":" + (observing ? std::to_string(observed.unexpected()) : "null") +
                     ",\"observer_updates\":" + (observing ? std::to_string(observed.updates.load()) : "null") +
                     ",\"kernel_complete_s\":" + secs(kernel ? kernel->complete_ns() : -1, t0) +
                     ",\"kernel_prefixes\":" + (kernel ? std::to_string(kernel->count()) : "null") +
                     ",\"failed\":" + (sh.failed > 0 ? "true" : "false") +
                     ",\"timed_out\":" + (timed_out ? "true" : "false") + "}";
  std::printf("%s\n", json.c_str());
  std::fflush(stdout);
  if (!o.json.empty()) bench::write_whole(o.json, json);

  // Keep the sessions up for --hold seconds (memory samples after the load).
  if (sh.failed == 0)
    for (int64_t i = 0; i < static_cast<int64_t>(o.hold * 10) && sh.failed == 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
  sh.stop = true;
  for (auto& t : threads) t.join();
  return sh.failed > 0 ? 2 : timed_out ? 1 : 0;
}
