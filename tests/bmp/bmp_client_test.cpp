// The daemon's BMP client (daemon/bmp.h) against a station played by the
// test on the loopback: what a station receives from a table (Initiation,
// the Loc-RIB's Peer Up and routes, a session's Peer Up, routes and Peer
// Down, changes as they come), and a station that stops reading: the table
// is written at full speed all the same, the connection is dropped and
// counted, and the station gets the whole table when it is back.
#include "daemon/bmp.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "codec/attribute_set.h"
#include "daemon/bmp_api.h"
#include "tests/bmp/bmp_reader.h"

namespace petrel::daemon {
namespace {

using namespace std::chrono_literals;
using bmp::testing::Framed;

constexpr table::FamilyIndex kV4 = 0;  // codec::kKnownFamilyList order

codec::AttributeSet attrs(uint32_t med) {
  codec::PathAttributes a;
  a.origin = codec::Origin::kIgp;
  a.as_path = codec::AsPath{{{codec::SegmentType::kAsSequence, {65002}}}};
  a.next_hop = net::IpAddress::v4(0xC0000202);
  a.med = med;
  return codec::AttributeSet::from(a);
}

net::Prefix nth(uint32_t i) {  // 10.x.y.0/24
  return *net::Prefix::make(net::IpAddress::v4(0x0A000000 | (i << 8)), 24);
}

// The station: a listener on the loopback and the connections it accepts.
class Station {
 public:
  Station() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    // Room for the connections the client makes while a test writes (one
    // a second or so): past a full backlog its SYNs wait for retransmits.
    EXPECT_EQ(::listen(fd_, 64), 0);
    socklen_t n = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &n);
    port_ = ntohs(a.sin_port);
    timeval tv{30, 0};  // accept waits at most this long (a loaded machine under a sanitizer)
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  ~Station() {
    close_conn();
    ::close(fd_);
  }
  [[nodiscard]] uint16_t port() const { return port_; }

  // Accepts the client's next connection; `rcvbuf`: a small receive
  // buffer, for a station that does not read.
  bool accept(int rcvbuf = 0) {
    close_conn();
    if (rcvbuf) ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    conn_ = ::accept(fd_, nullptr, nullptr);
    if (conn_ < 0) return false;
    timeval tv{0, 200'000};
    ::setsockopt(conn_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    buf_.clear();
    return true;
  }
  void close_conn() {
    if (conn_ >= 0) ::close(conn_);
    conn_ = -1;
  }

  // Reads messages until `done(all so far)` or the time is up.
  template <typename F>
  std::vector<Framed> read_until(F&& done, std::chrono::milliseconds limit = 10s) {
    std::vector<Framed> all;
    const auto until = std::chrono::steady_clock::now() + limit;
    while (!done(all) && std::chrono::steady_clock::now() < until) {
      std::byte chunk[65536];
      ssize_t n = ::read(conn_, chunk, sizeof chunk);
      if (n == 0) break;
      if (n < 0) continue;  // the receive timeout
      buf_.insert(buf_.end(), chunk, chunk + n);
      for (auto& m : bmp::testing::take_messages(buf_)) all.push_back(std::move(m));
    }
    return all;
  }

 private:
  int fd_ = -1;
  int conn_ = -1;
  uint16_t port_ = 0;
  std::vector<std::byte> buf_;
};

Config config_for(uint16_t port, bool post_policy) {
  Config c;
  c.router.asn = 65001;
  c.router.router_id = net::IpAddress::v4(0xC0000201);
  BmpStationConfig b;
  b.address = net::IpAddress::v4(0x7F000001);
  b.port = port;
  b.post_policy = post_policy;
  b.statistics_interval = 0;
  b.max_queue = 1;
  c.bmp.push_back(b);
  return c;
}

// What the Route Monitoring messages of one peer type left the station
// holding: prefix -> MED (from msgs[from] on, on top of `start`).
std::map<net::Prefix, uint32_t> held(const std::vector<Framed>& msgs, bmp::PeerType type,
                                     std::map<net::Prefix, uint32_t> start = {}, size_t from = 0) {
  for (size_t i = from; i < msgs.size(); ++i) {
    const Framed& m = msgs[i];
    if (m.type != bmp::MessageType::kRouteMonitoring || static_cast<bmp::PeerType>(m.body[0]) != type) continue;
    auto u = bmp::testing::update_of(m);
    EXPECT_EQ(u.action(), codec::ErrorAction::kNone);
    for (const auto& r : u.withdrawals())
      for (const auto& p : r) start.erase(p.prefix);
    const uint32_t med = u.attribute_set().med().value_or(0);
    for (const auto& r : u.announced())
      for (const auto& p : r) start[p.prefix] = med;
  }
  return start;
}

// Route Monitoring messages that are End-of-RIB markers.
size_t end_of_ribs(const std::vector<Framed>& msgs) {
  size_t n = 0;
  for (const Framed& m : msgs)
    if (m.type == bmp::MessageType::kRouteMonitoring && bmp::testing::update_of(m).end_of_rib()) ++n;
  return n;
}

size_t count(const std::vector<Framed>& msgs, bmp::MessageType t) {
  return static_cast<size_t>(std::count_if(msgs.begin(), msgs.end(), [&](const Framed& m) { return m.type == t; }));
}

TEST(BmpClient, FeedsTheTableThenItsChanges) {
  Station st;
  table::Table t;
  auto slot = t.add_peer({net::IpAddress::v4(0xC0000202), 0x0A000002, 65002, false, false, false, "peer"});
  ASSERT_TRUE(slot);
  std::vector<codec::NlriPrefix> first;
  for (uint32_t i = 0; i < 3000; ++i) first.push_back({nth(i), 0});
  const codec::AttributeSet a = attrs(7);
  t.apply(*slot, kV4, &a, first, {});

  BmpClient client(config_for(st.port(), true), t, [](const std::string&) { return std::nullopt; });
  client.start();
  ASSERT_TRUE(st.accept());
  // Initiation, the Loc-RIB's Peer Up and its routes; no session is up yet.
  auto msgs = st.read_until([](const auto& m) { return held(m, bmp::PeerType::kLocRib).size() == 3000; });
  ASSERT_GE(msgs.size(), 3u);
  EXPECT_EQ(msgs[0].type, bmp::MessageType::kInitiation);
  EXPECT_EQ(msgs[1].type, bmp::MessageType::kPeerUp);
  EXPECT_EQ(static_cast<bmp::PeerType>(msgs[1].body[0]), bmp::PeerType::kLocRib);
  auto loc = held(msgs, bmp::PeerType::kLocRib);
  EXPECT_EQ(loc.size(), 3000u);
  EXPECT_EQ(loc[nth(0)], 7u);
  // 3000 routes with one attribute set: packed, not one message a route.
  EXPECT_LT(count(msgs, bmp::MessageType::kRouteMonitoring), 30u);
  // Then End-of-RIB of both families (RFC 4724 section 2), last.
  const size_t before = end_of_ribs(msgs);
  if (before < 2) {
    auto more = st.read_until([&](const auto& m) { return before + end_of_ribs(m) == 2; }, 2s);
    msgs.insert(msgs.end(), more.begin(), more.end());
  }
  EXPECT_EQ(end_of_ribs(msgs), 2u);
  EXPECT_TRUE(bmp::testing::update_of(msgs.back()).end_of_rib());

  // The session comes up (after its routes reached the table): its Peer
  // Up, then its routes, post-policy.
  BmpSessionUp up;
  up.name = "peer";
  up.slot = *slot;
  up.address = net::IpAddress::v4(0xC0000202);
  up.as = 65002;
  up.bgp_id = 0x0A000002;
  client.session_up(up);
  msgs = st.read_until([](const auto& m) { return held(m, bmp::PeerType::kGlobal).size() == 3000; });
  ASSERT_FALSE(msgs.empty());
  EXPECT_EQ(msgs[0].type, bmp::MessageType::kPeerUp);
  auto post = held(msgs, bmp::PeerType::kGlobal);
  EXPECT_EQ(post.size(), 3000u);
  for (const Framed& m : msgs) {
    if (m.type == bmp::MessageType::kRouteMonitoring) {
      EXPECT_EQ(static_cast<uint8_t>(m.body[1]), bmp::kFlagL);
    }
  }

  // A change: one route's MED, one withdrawn. Only those are sent.
  const codec::AttributeSet b = attrs(9);
  const codec::NlriPrefix one[] = {{nth(5), 0}}, gone[] = {{nth(6), 0}};
  t.apply(*slot, kV4, &b, one, gone);
  msgs = st.read_until([&](const auto& m) {
    auto l = held(m, bmp::PeerType::kLocRib, loc);
    auto p = held(m, bmp::PeerType::kGlobal, post);
    return l.size() == 2999 && p.size() == 2999 && l[nth(5)] == 9 && p[nth(5)] == 9;
  });
  EXPECT_EQ(count(msgs, bmp::MessageType::kRouteMonitoring), 4u) << "an announcement and a withdrawal, twice";

  // The session goes down: a Peer Down (reason 4: the peer closed).
  BmpSessionDown down;
  down.name = "peer";
  down.slot = *slot;
  down.reason = bmp::DownReason::kRemoteNoNotification;
  client.session_down(down);
  msgs = st.read_until([](const auto& m) { return count(m, bmp::MessageType::kPeerDown) == 1; });
  ASSERT_EQ(count(msgs, bmp::MessageType::kPeerDown), 1u);

  client.stop();  // Termination
  msgs = st.read_until([](const auto& m) { return count(m, bmp::MessageType::kTermination) == 1; });
  EXPECT_EQ(count(msgs, bmp::MessageType::kTermination), 1u);
  auto status = client.status();
  ASSERT_EQ(status.size(), 1u);
  EXPECT_EQ(status[0].connects, 1u);
  EXPECT_EQ(status[0].drops, 0u);
  EXPECT_NE(bmp_json(status).find("\"drops\":0"), std::string::npos);
}

TEST(BmpClient, AStationThatStopsReadingIsDroppedAndResynced) {
  Station st;
  table::TableOptions o;
  o.journal_retention = 64;  // overruns soon
  table::Table t(o);
  auto slot = t.add_peer({net::IpAddress::v4(0xC0000202), 0x0A000002, 65002, false, false, false, "peer"});
  ASSERT_TRUE(slot);
  BmpClient client(config_for(st.port(), false), t, [](const std::string&) { return std::nullopt; });
  client.start();
  ASSERT_TRUE(st.accept(4096));  // and never read from it

  // Routes with attribute sets of their own (a Route Monitoring message
  // each), far more than the socket buffers and the client's 1 MiB take,
  // applied 4,096 at a time: each batch alone overruns the journals (64
  // changes a shard), so the client cannot keep up with them whatever the
  // threads' scheduling (one route an apply let a client on a loaded
  // machine follow every change, and it was never dropped).
  constexpr uint32_t kRoutes = 200'000;
  const auto t0 = std::chrono::steady_clock::now();
  for (uint32_t i = 0; i < kRoutes;) {
    table::Batch batch(t);
    for (uint32_t k = 0; k < 4096 && i < kRoutes; ++k, ++i) {
      const codec::AttributeSet a = attrs(i);
      const codec::NlriPrefix p[] = {{nth(i % 65536), 0}};
      batch.add(kV4, &a, p, {});
    }
    t.apply(*slot, batch);
  }
  const auto took = std::chrono::steady_clock::now() - t0;
  // Routing did not wait for the station: it never reads, so an apply that
  // waited for it would never end. The bound is only below the test's own
  // time limit (300 s): 1.6 s in a debug build, 60-90 s under ASan on a
  // 2-core machine running other tests beside it.
  EXPECT_LT(took, 180s);
  const auto until = std::chrono::steady_clock::now() + 20s;
  while (client.status()[0].drops == 0 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(50ms);
  auto s = client.status()[0];
  EXPECT_GE(s.drops, 1u) << s.last_error;
  // (What was queued, if anything: the journal may overrun with the queue
  // empty and the kernel's buffers full.)
  EXPECT_NE(s.last_error.find("journal overran"), std::string::npos) << s.last_error;
  EXPECT_NE(bmp_metrics(client.status()).find("petrel_bmp_drops_total{station=\"127.0.0.1:"), std::string::npos);

  // Back (after the back-off): the whole table again. (Connections the
  // client made while the writes went on, slowly under a sanitizer, wait
  // in the listener's backlog, dropped already: the first that lasts.)
  // As many as the writes left behind (each ends at once), within a time.
  std::map<net::Prefix, uint32_t> loc;
  std::vector<Framed> msgs;
  const auto deadline = std::chrono::steady_clock::now() + 120s;
  while (loc.size() != 65536 && std::chrono::steady_clock::now() < deadline) {
    ASSERT_TRUE(st.accept());
    loc.clear();
    size_t seen = 0;
    msgs = st.read_until([&](const auto& m) {
      loc = held(m, bmp::PeerType::kLocRib, std::move(loc), seen);  // only what is new: a full table is many messages
      seen = m.size();
      return loc.size() == 65536;
    }, 30s);
  }
  EXPECT_EQ(msgs.at(0).type, bmp::MessageType::kInitiation);
  ASSERT_EQ(loc.size(), 65536u);
  EXPECT_EQ(loc[nth(0)], 3 * 65536u);  // the last of 10.0.0.0/24's announcements
  EXPECT_GE(client.status()[0].connects, 2u);
  client.stop();
}

}  // namespace
}  // namespace petrel::daemon
