// Tests of fib/plan.h: the requests for given wishes and kernel contents,
// and a property test against a model kernel: random wishes, interface
// changes and refusals; at the end the kernel holds exactly the wanted
// routes of ours and no foreign route was touched.
#include "fib/plan.h"

#include <gtest/gtest.h>
#include <linux/if.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "tests/fib/fib_testing.h"

namespace petrel::fib {
namespace {

using testing::addr;
using testing::prefix;

constexpr uint32_t kUp = IFF_UP | IFF_RUNNING;
constexpr PlanOptions kOpts{100, 32, RTPROT_BGP};

// The kernel's routing tables as far as the plan can see them: a route is
// keyed by table, destination and metric (IPv4 and IPv6 both refuse a
// second route at the same key under NLM_F_EXCL and replace it under
// NLM_F_REPLACE); a delete names the protocol too.
class ModelKernel {
 public:
  using Key = std::tuple<uint32_t, net::Prefix, uint32_t>;
  std::map<Key, Route> routes;
  bool foreign_touched = false;
  bool foreign_asked = false;

  static Key key(const Route& r) { return {r.table, r.dst, r.metric}; }
  void add(const Route& r) { routes[key(r)] = r; }

  int32_t apply(const Message& m) {
    const Route& r = std::get<Route>(m.body);
    if (r.protocol != kOpts.protocol || r.table != kOpts.table || r.metric != kOpts.metric) foreign_asked = true;
    auto it = routes.find(key(r));
    if (m.header.type == RTM_NEWROUTE) {
      if (it != routes.end()) {
        if (m.header.flags & NLM_F_EXCL) return -EEXIST;
        if (!(m.header.flags & NLM_F_REPLACE)) return -EEXIST;
        if (it->second.protocol != kOpts.protocol) foreign_touched = true;
        it->second = r;
        return 0;
      }
      if (!(m.header.flags & NLM_F_CREATE)) return -ENOENT;
      routes[key(r)] = r;
      return 0;
    }
    if (it == routes.end() || it->second.protocol != r.protocol) return -ESRCH;
    if (it->second.protocol != kOpts.protocol) foreign_touched = true;
    routes.erase(it);
    return 0;
  }
  [[nodiscard]] std::map<Key, Route> foreign() const {
    std::map<Key, Route> f;
    for (const auto& [k, r] : routes)
      if (!(r.protocol == kOpts.protocol && r.table == kOpts.table && r.metric == kOpts.metric)) f.emplace(k, r);
    return f;
  }
  [[nodiscard]] const Route* ours(const net::Prefix& p) const {
    auto it = routes.find({kOpts.table, p, kOpts.metric});
    if (it == routes.end() || it->second.protocol != kOpts.protocol) return nullptr;
    return &it->second;
  }
};

Interfaces three_links() {
  Interfaces ifs;
  for (uint32_t i = 1; i <= 3; ++i) {
    (void)ifs.apply(Message{Header{RTM_NEWLINK, 0, 0, 0}, Link{i, kUp, "eth" + std::to_string(i)}});
    auto a = net::IpAddress::v4(0x0a000001u | (i << 8));  // 10.0.i.1/24
    (void)ifs.apply(Message{Header{RTM_NEWADDR, 0, 0, 0}, Address{i, 24, 0, a, a}});
  }
  return ifs;
}

Route ours(const char* dst, const char* gw, uint32_t ifindex) {
  Route r;
  r.dst = prefix(dst);
  r.table = kOpts.table;
  r.metric = kOpts.metric;
  r.protocol = kOpts.protocol;
  r.type = RTN_UNICAST;
  r.nexthops.push_back(NextHop{true, addr(gw), ifindex, 0});
  return r;
}

Want via(std::initializer_list<const char*> gws) {
  Want w;
  for (const char* g : gws) w.gateways.push_back(Gateway{addr(g), 0, {}});
  return w;
}

// Sends every request the plan has, answers them, until it is idle.
// refuse(request) gives an errno to refuse with (0: the kernel decides).
template <typename F>
void pump(Plan& plan, const Interfaces& ifs, ModelKernel& k, F&& refuse, size_t rounds = 50) {
  for (size_t i = 0; i < rounds && !plan.idle(); ++i) {
    std::vector<Request> out;
    plan.next(ifs, 7, out);
    for (const Request& r : out) {
      int32_t e = refuse(r);
      plan.answer(r.seq, e != 0 ? e : k.apply(to_message(r)));
    }
  }
}
void pump(Plan& plan, const Interfaces& ifs, ModelKernel& k) {
  pump(plan, ifs, k, [](const Request&) { return 0; });
}

TEST(Plan, AddsChangesAndRemoves) {
  Interfaces ifs = three_links();
  Plan plan(kOpts);
  ModelKernel k;
  plan.allow_removals();
  plan.want(prefix("192.0.2.0/24"), via({"10.0.1.2"}));
  std::vector<Request> out;
  EXPECT_EQ(plan.next(ifs, 10, out), 1u);
  EXPECT_EQ(out[0].op, Op::kAdd);
  EXPECT_EQ(out[0].route, ours("192.0.2.0/24", "10.0.1.2", 1));
  EXPECT_EQ(to_message(out[0]).header.flags, NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL);
  EXPECT_EQ(plan.counts().pending, 1u);
  plan.answer(out[0].seq, k.apply(to_message(out[0])));
  EXPECT_TRUE(plan.idle());
  EXPECT_EQ(plan.counts().installed, 1u);

  plan.want(prefix("192.0.2.0/24"), via({"10.0.2.2", "10.0.3.2"}));  // ECMP
  out.clear();
  plan.next(ifs, 10, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].op, Op::kReplace);
  EXPECT_EQ(out[0].route.nexthops.size(), 2u);
  plan.answer(out[0].seq, k.apply(to_message(out[0])));

  plan.unwant(prefix("192.0.2.0/24"));
  out.clear();
  plan.next(ifs, 10, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].op, Op::kDelete);
  plan.answer(out[0].seq, k.apply(to_message(out[0])));
  EXPECT_TRUE(k.routes.empty());
  EXPECT_EQ(plan.counts().installed, 0u);
}

// ECMP (docs/kernel.md): a multipath route holds the gateways that are
// directly reachable, follows them as links come and go, and is not sent
// again for the same gateways in another order or named twice.
TEST(Plan, MultipathFollowsItsGateways) {
  Interfaces ifs = three_links();
  Plan plan(kOpts);
  ModelKernel k;
  plan.allow_removals();
  const net::Prefix p = prefix("192.0.2.0/24");
  auto gateways = [&] {
    std::vector<std::string> g;
    if (const Route* r = k.ours(p))
      for (const NextHop& nh : r->nexthops) g.push_back(nh.gateway.to_string() + "@" + std::to_string(nh.ifindex));
    return g;
  };
  plan.want(p, via({"10.0.3.2", "10.0.1.2", "172.16.0.1"}));  // the third is two hops away
  pump(plan, ifs, k);
  EXPECT_EQ(gateways(), (std::vector<std::string>{"10.0.1.2@1", "10.0.3.2@3"}));
  EXPECT_EQ(plan.counts().unresolved, 0u);

  std::vector<Request> out;
  plan.want(p, via({"10.0.1.2", "10.0.3.2", "10.0.1.2"}));  // the same set
  plan.next(ifs, 10, out);
  EXPECT_TRUE(out.empty());

  // eth3 goes down: one path left, replaced in place; it comes back: two
  (void)ifs.apply(Message{Header{RTM_NEWLINK, 0, 0, 0}, Link{3, uint32_t{IFF_UP}, "eth3"}});
  plan.interfaces_changed();
  pump(plan, ifs, k);
  EXPECT_EQ(gateways(), (std::vector<std::string>{"10.0.1.2@1"}));
  (void)ifs.apply(Message{Header{RTM_NEWLINK, 0, 0, 0}, Link{3, kUp, "eth3"}});
  plan.interfaces_changed();
  pump(plan, ifs, k);
  EXPECT_EQ(gateways(), (std::vector<std::string>{"10.0.1.2@1", "10.0.3.2@3"}));

  // one path withdrawn: a single-path route, then three
  plan.want(p, via({"10.0.3.2"}));
  pump(plan, ifs, k);
  EXPECT_EQ(gateways(), (std::vector<std::string>{"10.0.3.2@3"}));
  plan.want(p, via({"10.0.3.2", "10.0.2.2", "10.0.1.2"}));
  pump(plan, ifs, k);
  EXPECT_EQ(gateways(), (std::vector<std::string>{"10.0.1.2@1", "10.0.2.2@2", "10.0.3.2@3"}));
  EXPECT_EQ(plan.counts().installed, 1u);
  EXPECT_EQ(k.routes.size(), 1u);
}

TEST(Plan, UnresolvedNextHopsAreCountedNotInstalled) {
  Interfaces ifs = three_links();
  Plan plan(kOpts);
  ModelKernel k;
  plan.want(prefix("192.0.2.0/24"), via({"172.16.0.1"}));  // two hops away
  pump(plan, ifs, k);
  EXPECT_TRUE(k.routes.empty());
  EXPECT_EQ(plan.counts().unresolved, 1u);
  // The address appears on a link: the route follows.
  (void)ifs.apply(Message{Header{RTM_NEWADDR, 0, 0, 0}, Address{2, 16, 0, addr("172.16.9.9"), addr("172.16.9.9")}});
  plan.interfaces_changed();
  pump(plan, ifs, k);
  ASSERT_NE(k.ours(prefix("192.0.2.0/24")), nullptr);
  EXPECT_EQ(plan.counts().unresolved, 0u);
  // The link goes down: the route goes, and is unresolved again.
  (void)ifs.apply(Message{Header{RTM_NEWLINK, 0, 0, 0}, Link{2, uint32_t{IFF_UP}, "eth2"}});
  plan.interfaces_changed();
  pump(plan, ifs, k);
  EXPECT_EQ(k.ours(prefix("192.0.2.0/24")), nullptr);
  EXPECT_EQ(plan.counts().unresolved, 1u);
}

TEST(Plan, StartUpKeepsRightRoutesAndRemovesStaleOnesWhenAllowed) {
  Interfaces ifs = three_links();
  Plan plan(kOpts);
  ModelKernel k;
  k.add(ours("192.0.2.0/24", "10.0.1.2", 1));     // still right
  k.add(ours("198.51.100.0/24", "10.0.1.2", 1));  // to change
  k.add(ours("203.0.113.0/24", "10.0.1.2", 1));   // stale
  for (const auto& [key, r] : k.routes) plan.kernel_has(r);
  plan.want(prefix("192.0.2.0/24"), via({"10.0.1.2"}));
  plan.want(prefix("198.51.100.0/24"), via({"10.0.2.2"}));
  std::vector<Request> out;
  plan.next(ifs, 10, out);
  ASSERT_EQ(out.size(), 1u);  // only the change, in place
  EXPECT_EQ(out[0].op, Op::kReplace);
  plan.answer(out[0].seq, k.apply(to_message(out[0])));
  EXPECT_EQ(plan.counts().stale, 1u);
  EXPECT_NE(k.ours(prefix("203.0.113.0/24")), nullptr);
  plan.allow_removals();
  pump(plan, ifs, k);
  EXPECT_EQ(k.ours(prefix("203.0.113.0/24")), nullptr);
  EXPECT_EQ(k.routes.size(), 2u);
  EXPECT_EQ(plan.counts().installed, 2u);
}

TEST(Plan, WithdrawnRoutesGoAtOnceOnlyStartUpOnesWait) {
  // The grace before removals is for routes of an earlier run: a route
  // this run installed (or found right and kept) goes when it is withdrawn.
  Interfaces ifs = three_links();
  Plan plan(kOpts);
  ModelKernel k;
  k.add(ours("192.0.2.0/24", "10.0.1.2", 1));     // found, wanted as it is
  k.add(ours("203.0.113.0/24", "10.0.1.2", 1));   // found, not wanted
  for (const auto& [key, r] : k.routes) plan.kernel_has(r);
  plan.want(prefix("192.0.2.0/24"), via({"10.0.1.2"}));
  plan.want(prefix("198.51.100.0/24"), via({"10.0.2.2"}));
  pump(plan, ifs, k);
  EXPECT_EQ(k.routes.size(), 3u);
  EXPECT_EQ(plan.counts().stale, 1u);
  plan.unwant(prefix("192.0.2.0/24"));
  plan.unwant(prefix("198.51.100.0/24"));
  pump(plan, ifs, k);
  EXPECT_EQ(k.ours(prefix("192.0.2.0/24")), nullptr);
  EXPECT_EQ(k.ours(prefix("198.51.100.0/24")), nullptr);
  ASSERT_NE(k.ours(prefix("203.0.113.0/24")), nullptr);  // still in its grace
  EXPECT_EQ(plan.counts().stale, 1u);
  EXPECT_EQ(plan.counts().installed, 1u);
  plan.allow_removals();
  pump(plan, ifs, k);
  EXPECT_TRUE(k.routes.empty());
  EXPECT_EQ(plan.counts().stale, 0u);
}

TEST(Plan, RefusedRoutesAreRetriedAndForeignRoutesKept) {
  Interfaces ifs = three_links();
  Plan plan(kOpts);
  ModelKernel k;
  Route foreign = ours("192.0.2.0/24", "10.0.3.9", 3);
  foreign.protocol = RTPROT_STATIC;
  k.add(foreign);
  for (const auto& [key, r] : k.routes) plan.kernel_has(r);  // not ours: ignored
  plan.allow_removals();
  plan.want(prefix("192.0.2.0/24"), via({"10.0.1.2"}));
  plan.want(prefix("198.51.100.0/24"), via({"10.0.1.2"}));
  bool refuse = true;
  pump(plan, ifs, k, [&](const Request& r) { return refuse && r.route.dst == prefix("198.51.100.0/24") ? -ENOMEM : 0; });
  EXPECT_EQ(plan.counts().refused, 2u);  // EEXIST (the foreign route) and ENOMEM
  EXPECT_EQ(plan.counts().refusals, 2u);
  EXPECT_TRUE(plan.idle());
  refuse = false;
  plan.retry_refused();
  pump(plan, ifs, k);
  EXPECT_NE(k.ours(prefix("198.51.100.0/24")), nullptr);
  EXPECT_EQ(plan.counts().refused, 1u);
  EXPECT_EQ(plan.counts().last_error, -EEXIST);
  EXPECT_EQ(k.routes.at(ModelKernel::key(foreign)), foreign);
  EXPECT_FALSE(k.foreign_touched);
}

TEST(Plan, AnswersInAnyOrderAndChangesWhileInFlight) {
  Interfaces ifs = three_links();
  Plan plan(kOpts);
  ModelKernel k;
  plan.allow_removals();
  for (int i = 0; i < 4; ++i)
    plan.want(*net::Prefix::make(net::IpAddress::v4(0xc0000200u + (static_cast<uint32_t>(i) << 8)), 24),
              via({"10.0.1.2"}));
  std::vector<Request> out;
  ASSERT_EQ(plan.next(ifs, 10, out), 4u);
  // A new wish for the first prefix while its request is in flight.
  plan.want(out[0].route.dst, via({"10.0.2.2"}));
  plan.answer(12345, 0);  // not a request of ours: ignored
  for (size_t i : {3u, 1u, 0u, 2u}) plan.answer(out[i].seq, k.apply(to_message(out[i])));
  plan.answer(out[1].seq, -EINVAL);  // answered twice: ignored
  EXPECT_EQ(plan.counts().installed, 4u);
  EXPECT_EQ(plan.counts().refused, 0u);
  std::vector<Request> again;
  ASSERT_EQ(plan.next(ifs, 10, again), 1u);  // the wish that came meanwhile
  EXPECT_EQ(again[0].op, Op::kReplace);
  EXPECT_EQ(again[0].route, ours("192.0.2.0/24", "10.0.2.2", 2));
  plan.answer(again[0].seq, k.apply(to_message(again[0])));
  EXPECT_TRUE(plan.idle());
}

// Link 4, "veth0", up with only a link-local address (a session over
// link-local IPv6), beside three_links().
Interfaces with_veth(Interfaces ifs, uint32_t flags = kUp) {
  (void)ifs.apply(Message{Header{RTM_NEWLINK, 0, 0, 0}, Link{4, flags, "veth0"}});
  (void)ifs.apply(Message{Header{RTM_NEWADDR, 0, 0, 0}, Address{4, 64, 0, addr("fe80::1"), addr("fe80::1")}});
  return ifs;
}

Route ours6(const char* dst, const char* gw, uint32_t ifindex) {
  Route r = ours("192.0.2.0/24", gw, ifindex);
  r.dst = prefix(dst);
  return r;
}

TEST(Plan, LinkLocalGatewaysGoOnTheSessionsInterface) {
  Interfaces ifs = with_veth(three_links());
  ModelKernel k;
  Plan plan(kOpts);
  plan.want(prefix("2001:db8:1::/48"), Want{{Gateway{addr("fe80::2"), 4, {}}}, false});
  plan.want(prefix("2001:db8:2::/48"), Want{{Gateway{addr("fe80::2"), 0, {}}}, false});  // interface unknown
  plan.want(prefix("2001:db8:3::/48"), Want{{Gateway{addr("fe80::2"), 9, {}}}, false});  // no such interface
  std::vector<Request> out;
  ASSERT_EQ(plan.next(ifs, 10, out), 1u);
  EXPECT_EQ(out[0].op, Op::kAdd);
  EXPECT_EQ(out[0].route, ours6("2001:db8:1::/48", "fe80::2", 4));
  plan.answer(out[0].seq, k.apply(to_message(out[0])));
  EXPECT_EQ(plan.counts().installed, 1u);
  EXPECT_EQ(plan.counts().unresolved, 2u);

  // The session's interface goes down: the route goes; back up: it returns.
  ifs = with_veth(three_links(), IFF_UP);
  plan.interfaces_changed();
  pump(plan, ifs, k);
  EXPECT_EQ(k.ours(prefix("2001:db8:1::/48")), nullptr);
  EXPECT_EQ(plan.counts().unresolved, 3u);
  ifs = with_veth(three_links());
  plan.interfaces_changed();
  pump(plan, ifs, k);
  ASSERT_NE(k.ours(prefix("2001:db8:1::/48")), nullptr);
  EXPECT_EQ(*k.ours(prefix("2001:db8:1::/48")), ours6("2001:db8:1::/48", "fe80::2", 4));

  // The interface is removed: unresolved again, and removed from the kernel.
  (void)ifs.apply(Message{Header{RTM_DELLINK, 0, 0, 0}, Link{4, 0, "veth0"}});
  plan.interfaces_changed();
  pump(plan, ifs, k);
  EXPECT_EQ(k.ours(prefix("2001:db8:1::/48")), nullptr);
  EXPECT_EQ(plan.counts().installed, 0u);
  EXPECT_TRUE(plan.idle());
}

TEST(Plan, GlobalNextHopPreferredToItsLinkLocalOne) {
  // RFC 2545: a 32-octet next hop, global and link-local. The global one
  // is used when it is directly reachable, else the link-local one.
  Interfaces ifs = with_veth(three_links());
  ModelKernel k;
  Plan plan(kOpts);
  const auto p = prefix("2001:db8:7::/48");
  plan.want(p, Want{{Gateway{addr("2001:db8:ff::2"), 4, addr("fe80::2")}}, false});
  pump(plan, ifs, k);
  ASSERT_NE(k.ours(p), nullptr);
  EXPECT_EQ(*k.ours(p), ours6("2001:db8:7::/48", "fe80::2", 4));

  // The global next hop's network appears on link 2: replaced in place.
  const auto a = addr("2001:db8:ff::1");
  (void)ifs.apply(Message{Header{RTM_NEWADDR, 0, 0, 0}, Address{2, 64, 0, a, a}});
  plan.interfaces_changed();
  std::vector<Request> out;
  ASSERT_EQ(plan.next(ifs, 10, out), 1u);
  EXPECT_EQ(out[0].op, Op::kReplace);
  EXPECT_EQ(out[0].route, ours6("2001:db8:7::/48", "2001:db8:ff::2", 2));
  plan.answer(out[0].seq, k.apply(to_message(out[0])));
  EXPECT_TRUE(plan.idle());

  // A link-local second address without the session's interface: only the
  // global one counts.
  plan.want(p, Want{{Gateway{addr("2001:db8:fe::2"), 0, addr("fe80::2")}}, false});
  pump(plan, ifs, k);
  EXPECT_EQ(k.ours(p), nullptr);
  EXPECT_EQ(plan.counts().unresolved, 1u);
}

TEST(Plan, Rfc8950NextHopsAreUnresolvedNotInstalled) {
  // An IPv4 prefix over an IPv6 next hop would need RTA_VIA: counted as
  // unresolved, never installed (docs/kernel.md); the same wish for an
  // IPv6 prefix is installed.
  Interfaces ifs = with_veth(three_links());
  ModelKernel k;
  Plan plan(kOpts);
  const Want ll{{Gateway{addr("fe80::2"), 4, {}}}, false};
  plan.want(prefix("192.0.2.0/24"), ll);
  plan.want(prefix("2001:db8:1::/48"), ll);
  pump(plan, ifs, k);
  EXPECT_EQ(k.ours(prefix("192.0.2.0/24")), nullptr);
  ASSERT_NE(k.ours(prefix("2001:db8:1::/48")), nullptr);
  EXPECT_EQ(plan.counts().unresolved, 1u);
  EXPECT_EQ(plan.counts().installed, 1u);
  EXPECT_EQ(plan.counts().refusals, 0u);
}

// ---- the model kernel property

struct World {
  std::vector<net::Prefix> prefixes;
  std::vector<net::IpAddress> gateways;
  // IPv6 wishes: link-local gateways on link 4 (which comes and goes) or
  // on no known interface, and 32-octet next hops whose global address
  // is on no link (RFC 2545: the link-local one is used).
  std::vector<net::Prefix> prefixes6;
  std::vector<Gateway> gateways6;
};

World world() {
  World w;
  for (uint32_t i = 0; i < 12; ++i) w.prefixes.push_back(*net::Prefix::make(net::IpAddress::v4(0xc0a80000u | (i << 8)), 24));
  for (uint32_t i = 1; i <= 4; ++i)  // 10.0.4.x: on no link until one gets it
    for (uint32_t h = 2; h <= 3; ++h) w.gateways.push_back(net::IpAddress::v4(0x0a000000u | (i << 8) | h));
  for (const char* p : {"2001:db8:1::/48", "2001:db8:2::/48", "2001:db8:3::/48"}) w.prefixes6.push_back(prefix(p));
  w.gateways6 = {Gateway{addr("fe80::2"), 4, {}}, Gateway{addr("fe80::3"), 0, {}},
                 Gateway{addr("2001:db8:ff::2"), 4, addr("fe80::2")},
                 Gateway{addr("2001:db8:ff::3"), 4, addr("fe80::3")}};
  return w;
}

Route random_route(const World& w, size_t p, size_t g, uint8_t proto, uint32_t table, uint32_t metric) {
  Route r;
  r.dst = w.prefixes[p % w.prefixes.size()];
  r.table = table;
  r.metric = metric;
  r.protocol = proto;
  r.type = RTN_UNICAST;
  r.nexthops.push_back(NextHop{true, w.gateways[g % w.gateways.size()], 1, 0});
  return r;
}

RC_GTEST_PROP(Plan, ModelKernelEndsEqualToTheWantedRoutes, ()) {
  const World w = world();
  Interfaces ifs = three_links();
  ModelKernel k;
  // Foreign routes: the same key with another protocol, another metric,
  // another table; and routes of ours left by an earlier run.
  for (int i = 0; i < 3; ++i) {
    size_t p = *rc::gen::arbitrary<size_t>(), g = *rc::gen::arbitrary<size_t>();
    k.add(random_route(w, p, g, RTPROT_STATIC, kOpts.table, kOpts.metric));
    k.add(random_route(w, p + 1, g, RTPROT_BGP, kOpts.table, kOpts.metric + 1));
    k.add(random_route(w, p + 2, g, RTPROT_BGP, 254, kOpts.metric));
  }
  for (int i = 0, n = *rc::gen::inRange(0, 6); i < n; ++i) {
    auto r = random_route(w, *rc::gen::arbitrary<size_t>(), *rc::gen::arbitrary<size_t>(), RTPROT_BGP, kOpts.table,
                          kOpts.metric);
    if (!k.routes.count(ModelKernel::key(r))) k.add(r);
  }
  const auto foreign = k.foreign();

  Plan plan(kOpts);
  for (const auto& [key, r] : k.routes) plan.kernel_has(r);
  std::map<net::Prefix, Want> wanted;
  auto refuse_rate = *rc::gen::inRange(0, 50);
  auto refuse = [&](const Request&) { return *rc::gen::inRange(0, 100) < refuse_rate ? -ENOBUFS : 0; };

  for (int step = 0, n = *rc::gen::inRange(1, 60); step < n; ++step) {
    switch (*rc::gen::inRange(0, 8)) {
      case 0:
      case 1:
      case 2: {  // a wish: one or two gateways (ECMP)
        const bool v6 = *rc::gen::inRange(0, 3) == 0;
        auto p = v6 ? w.prefixes6[*rc::gen::inRange<size_t>(0, w.prefixes6.size())]
                    : w.prefixes[*rc::gen::inRange<size_t>(0, w.prefixes.size())];
        Want want;
        for (int g = 0, ng = *rc::gen::inRange(1, 3); g < ng; ++g)
          want.gateways.push_back(v6 ? w.gateways6[*rc::gen::inRange<size_t>(0, w.gateways6.size())]
                                     : Gateway{w.gateways[*rc::gen::inRange<size_t>(0, w.gateways.size())], 0, {}});
        if (want.gateways.size() == 2 && want.gateways[0] == want.gateways[1]) want.gateways.pop_back();
        wanted[p] = want;
        plan.want(p, want);
        break;
      }
      case 3: {
        auto p = w.prefixes[*rc::gen::inRange<size_t>(0, w.prefixes.size())];
        wanted.erase(p);
        plan.unwant(p);
        break;
      }
      case 4: {  // a link goes down or up, an address comes or goes
        uint32_t i = *rc::gen::inRange(1u, 5u);
        bool up = *rc::gen::arbitrary<bool>();
        if (*rc::gen::arbitrary<bool>()) {
          (void)ifs.apply(Message{Header{RTM_NEWLINK, 0, 0, 0}, Link{i, up ? kUp : uint32_t{IFF_UP}, "eth"}});
        } else {
          auto a = net::IpAddress::v4(0x0a000001u | (i << 8));
          uint16_t type = up ? RTM_NEWADDR : RTM_DELADDR;
          (void)ifs.apply(Message{Header{type, 0, 0, 0},
                                  Address{i, 24, 0, a, a}});
        }
        plan.interfaces_changed();
        break;
      }
      case 5: plan.retry_refused(); break;
      case 6: plan.allow_removals(); break;
      default: pump(plan, ifs, k, refuse, *rc::gen::inRange<size_t>(1, 4)); break;
    }
    RC_ASSERT(!k.foreign_asked);
  }
  // The kernel stops refusing; every refused prefix is tried again.
  plan.allow_removals();
  for (int i = 0; i < 5; ++i) {
    plan.retry_refused();
    pump(plan, ifs, k);
  }
  RC_ASSERT(plan.idle());
  RC_ASSERT(!k.foreign_touched);
  RC_ASSERT(!k.foreign_asked);
  RC_ASSERT(k.foreign() == foreign);

  uint64_t unresolved = 0, blocked = 0, installed = 0;
  std::vector<net::Prefix> all = w.prefixes;
  all.insert(all.end(), w.prefixes6.begin(), w.prefixes6.end());
  for (const net::Prefix& p : all) {
    std::vector<NextHop> expect;
    if (auto it = wanted.find(p); it != wanted.end()) {
      for (const Gateway& g : it->second.gateways) {
        if (auto ifindex = ifs.resolve(g.address, g.via_ifindex))
          expect.push_back(NextHop{true, g.address, *ifindex, 0});
        else if (g.link_local && (ifindex = ifs.resolve(*g.link_local, g.via_ifindex)))
          expect.push_back(NextHop{true, *g.link_local, *ifindex, 0});
      }
      if (expect.empty()) ++unresolved;
    }
    std::sort(expect.begin(), expect.end());
    expect.erase(std::unique(expect.begin(), expect.end()), expect.end());
    const Route* have = k.ours(p);
    bool foreign_here = foreign.count({kOpts.table, p, kOpts.metric}) != 0;
    if (expect.empty() || foreign_here) {
      RC_ASSERT(have == nullptr);
      blocked += !expect.empty();
    } else {
      RC_ASSERT(have != nullptr);
      auto got = have->nexthops;
      std::sort(got.begin(), got.end());
      RC_ASSERT(got == expect);
      ++installed;
    }
  }
  auto c = plan.counts();
  RC_ASSERT(c.installed == installed);
  RC_ASSERT(c.unresolved == unresolved);
  RC_ASSERT(c.refused == blocked);  // only the prefixes a foreign route holds
  RC_ASSERT(c.pending == 0u);
}

}  // namespace
}  // namespace petrel::fib
