// Tests of fib/resolver.h: next hops resolved through the kernel's foreign
// routes, against a plain model (a list of routes, longest match by a scan)
// on random sequences of route and link events.
#include "fib/resolver.h"

#include <gtest/gtest.h>
#include <linux/if.h>
#include <linux/rtnetlink.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <map>

#include "tests/fib/fib_testing.h"

namespace petrel::fib {
namespace {

using testing::addr;
using testing::prefix;

constexpr uint32_t kUp = IFF_UP | IFF_RUNNING;

Message link(uint32_t index, bool up) {
  return Message{Header{RTM_NEWLINK, 0, 0, 0}, Link{index, up ? kUp : uint32_t{IFF_UP}, "eth" + std::to_string(index)}};
}
Message address(uint32_t index, const char* local, uint8_t len) {
  return Message{Header{RTM_NEWADDR, 0, 0, 0}, Address{index, len, 0, addr(local), addr(local)}};
}
Route route(const char* dst, uint32_t metric, std::vector<NextHop> hops, uint8_t type = RTN_UNICAST,
            uint8_t protocol = RTPROT_STATIC, uint32_t table = 254) {
  Route r;
  r.dst = prefix(dst);
  r.table = table;
  r.metric = metric;
  r.protocol = protocol;
  r.type = type;
  r.nexthops = std::move(hops);
  return r;
}
Message add(const Route& r) { return Message{Header{RTM_NEWROUTE, 0, 0, 0}, r}; }
Message del(const Route& r) { return Message{Header{RTM_DELROUTE, 0, 0, 0}, r}; }
NextHop gw(const char* a, uint32_t ifindex) { return NextHop{true, addr(a), ifindex, 0}; }
NextHop dev(uint32_t ifindex) { return NextHop{false, {}, ifindex, 0}; }

// Links 2 (10.0.0.1/24) and 3 (10.0.1.1/24), both up.
Interfaces two_links() {
  Interfaces ifs;
  (void)ifs.apply(link(2, true));
  (void)ifs.apply(address(2, "10.0.0.1", 24));
  (void)ifs.apply(link(3, true));
  (void)ifs.apply(address(3, "10.0.1.1", 24));
  return ifs;
}

TEST(Resolver, ConnectedRecursiveAndUnresolved) {
  Interfaces ifs = two_links();
  Resolver r;
  EXPECT_TRUE(r.apply(add(route("192.0.2.0/24", 20, {gw("10.0.0.2", 2)}))));
  EXPECT_TRUE(r.apply(add(route("192.0.2.128/25", 10, {gw("10.0.0.2", 2), gw("10.0.1.2", 3)}))));
  EXPECT_TRUE(r.apply(add(route("198.51.100.0/24", 5, {dev(3)}))));
  EXPECT_TRUE(r.apply(add(route("203.0.113.0/24", 0, {}, RTN_BLACKHOLE))));

  Resolved c = r.resolve(addr("10.0.0.9"), 0, ifs);
  EXPECT_EQ(c.how, Resolution::kConnected);
  EXPECT_EQ(c.hops, (std::vector<NextHop>{gw("10.0.0.9", 2)}));
  EXPECT_EQ(c.metric, 0u);

  Resolved a = r.resolve(addr("192.0.2.1"), 0, ifs);
  EXPECT_EQ(a.how, Resolution::kRecursive);
  EXPECT_EQ(a.hops, (std::vector<NextHop>{gw("10.0.0.2", 2)}));
  EXPECT_EQ(a.metric, 20u);
  EXPECT_EQ(a.via, prefix("192.0.2.0/24"));

  Resolved e = r.resolve(addr("192.0.2.200"), 0, ifs);  // the longer prefix, ECMP
  EXPECT_EQ(e.hops, (std::vector<NextHop>{gw("10.0.0.2", 2), gw("10.0.1.2", 3)}));
  EXPECT_EQ(e.metric, 10u);

  Resolved d = r.resolve(addr("198.51.100.7"), 0, ifs);  // a device route: the next hop itself there
  EXPECT_EQ(d.hops, (std::vector<NextHop>{gw("198.51.100.7", 3)}));

  EXPECT_FALSE(r.resolve(addr("203.0.113.1"), 0, ifs).resolved());  // blackhole
  EXPECT_FALSE(r.resolve(addr("100.64.0.1"), 0, ifs).resolved());    // no route
  EXPECT_FALSE(r.resolve(addr("fe80::1"), 0, ifs).resolved());       // link-local, no session link

  // IPv6: an IGP route via a link-local gateway (as IPv6 IGPs install them).
  EXPECT_TRUE(r.apply(add(route("2001:db8:9::/48", 1024, {gw("fe80::2", 3)}))));
  Resolved v6 = r.resolve(addr("2001:db8:9::1"), 0, ifs);
  EXPECT_EQ(v6.how, Resolution::kRecursive);
  EXPECT_EQ(v6.hops, (std::vector<NextHop>{gw("fe80::2", 3)}));
  EXPECT_EQ(v6.metric, 1024u);
  EXPECT_FALSE(r.resolve(addr("2001:db8:8::1"), 0, ifs).resolved());

  // A link down: the ECMP route keeps its other next hop; the /24 then has
  // none up and is skipped.
  (void)ifs.apply(link(2, false));
  EXPECT_EQ(r.resolve(addr("192.0.2.200"), 0, ifs).hops, (std::vector<NextHop>{gw("10.0.1.2", 3)}));
  EXPECT_FALSE(r.resolve(addr("192.0.2.1"), 0, ifs).resolved());
}

TEST(Resolver, NeverThroughOwnRoutesOtherTablesOrTheDefaultUnlessAsked) {
  Interfaces ifs = two_links();
  Resolver r;
  EXPECT_FALSE(r.apply(add(route("192.0.2.0/24", 20, {gw("10.0.0.2", 2)}, RTN_UNICAST, RTPROT_BGP))));
  EXPECT_FALSE(r.apply(add(route("192.0.2.0/24", 20, {gw("10.0.0.2", 2)}, RTN_UNICAST, RTPROT_STATIC, 100))));
  EXPECT_TRUE(r.apply(add(route("0.0.0.0/0", 0, {gw("10.0.0.2", 2)}))));
  EXPECT_FALSE(r.resolve(addr("192.0.2.1"), 0, ifs).resolved());
  Resolver d(ResolverOptions{254, RTPROT_BGP, true, 10});
  (void)d.apply(add(route("0.0.0.0/0", 0, {gw("10.0.0.2", 2)})));
  EXPECT_EQ(d.resolve(addr("192.0.2.1"), 0, ifs).via, prefix("0.0.0.0/0"));
  EXPECT_FALSE(d.resolve(addr("0.0.0.0"), 0, ifs).resolved());  // never the unspecified address
}

TEST(Resolver, ReplacedDeletedAndBounded) {
  Interfaces ifs = two_links();
  Resolver r(ResolverOptions{254, RTPROT_BGP, false, 2});
  (void)r.apply(add(route("192.0.2.0/24", 20, {gw("10.0.0.2", 2)})));
  (void)r.apply(add(route("192.0.2.0/24", 20, {gw("10.0.1.2", 3)})));  // the same route, replaced
  EXPECT_EQ(r.routes(), 1u);
  EXPECT_EQ(r.resolve(addr("192.0.2.1"), 0, ifs).hops, (std::vector<NextHop>{gw("10.0.1.2", 3)}));
  (void)r.apply(add(route("192.0.2.0/24", 10, {gw("10.0.0.2", 2)})));  // a lower metric wins
  EXPECT_EQ(r.resolve(addr("192.0.2.1"), 0, ifs).metric, 10u);
  EXPECT_FALSE(r.apply(add(route("198.51.100.0/24", 0, {dev(2)}))));  // over the bound
  EXPECT_EQ(r.over_limit(), 1u);
  EXPECT_FALSE(r.resolve(addr("198.51.100.1"), 0, ifs).resolved());
  EXPECT_TRUE(r.apply(del(route("192.0.2.0/24", 10, {}))));
  EXPECT_EQ(r.resolve(addr("192.0.2.1"), 0, ifs).metric, 20u);
  EXPECT_FALSE(r.apply(del(route("192.0.2.0/24", 99, {}))));  // no such route
  // A link set down: the kernel drops the routes all of whose next hops
  // are on it, silently; the mirror too (an ECMP route with another link stays).
  r.clear();
  (void)r.apply(add(route("192.0.2.0/24", 20, {gw("10.0.1.2", 3)})));
  (void)r.apply(add(route("203.0.113.0/24", 5, {gw("10.0.0.2", 2), gw("10.0.1.2", 3)})));
  EXPECT_TRUE(r.link_gone(3));
  EXPECT_EQ(r.routes(), 1u);
  EXPECT_FALSE(r.resolve(addr("192.0.2.1"), 0, ifs).resolved());
  EXPECT_TRUE(r.resolve(addr("203.0.113.1"), 0, ifs).resolved());
  EXPECT_FALSE(r.link_gone(3));
  r.clear();
  EXPECT_EQ(r.routes(), 0u);
  EXPECT_FALSE(r.resolve(addr("192.0.2.1"), 0, ifs).resolved());
}

// The model: every route as the last message left it, and a scan.
struct Model {
  std::map<std::pair<net::Prefix, uint32_t>, Route> routes;
  bool via_default = false;

  Resolved resolve(const net::IpAddress& nh, const Interfaces& ifs) const {
    Resolved out;
    if (auto i = ifs.resolve(nh, 0)) {
      out.how = Resolution::kConnected;
      out.hops = {NextHop{true, nh, *i, 0}};
      return out;
    }
    std::vector<const Route*> matching;
    for (const auto& [key, r] : routes)
      if (r.dst.contains(nh) && (via_default || r.dst.len() > 0)) matching.push_back(&r);
    std::sort(matching.begin(), matching.end(), [](const Route* a, const Route* b) {
      return a->dst.len() != b->dst.len() ? a->dst.len() > b->dst.len() : a->metric < b->metric;
    });
    for (const Route* r : matching) {
      if (r->type != RTN_UNICAST) return out;
      std::vector<NextHop> hops;
      for (const NextHop& h : r->nexthops) {
        auto l = ifs.all().find(h.ifindex);
        if (l == ifs.all().end() || !l->second.up()) continue;
        NextHop hop{true, h.has_gateway ? h.gateway : nh, h.ifindex, 0};
        if (std::find(hops.begin(), hops.end(), hop) == hops.end()) hops.push_back(hop);
      }
      if (hops.empty()) continue;
      std::sort(hops.begin(), hops.end());
      return Resolved{Resolution::kRecursive, hops, r->metric, r->dst};
    }
    return out;
  }
};

RC_GTEST_PROP(Resolver, MatchesAScanOfTheRoutes, ()) {
  const char* prefixes[] = {"0.0.0.0/0", "192.0.2.0/24", "192.0.2.128/25", "192.0.2.1/32", "198.51.0.0/16",
                            "198.51.100.0/24", "10.0.0.0/8", "10.0.0.0/24"};
  const char* gateways[] = {"10.0.0.2", "10.0.0.3", "10.0.1.2", "192.0.2.5"};
  const char* targets[] = {"192.0.2.1", "192.0.2.200", "198.51.100.7", "198.51.7.7", "10.0.0.9",
                           "10.9.9.9", "100.64.0.1", "10.0.1.1"};
  const uint8_t types[] = {RTN_UNICAST, RTN_UNICAST, RTN_UNICAST, RTN_BLACKHOLE, RTN_UNREACHABLE, RTN_LOCAL};
  const bool via_default = *rc::gen::arbitrary<bool>();
  Interfaces ifs = two_links();
  (void)ifs.apply(link(4, true));  // no address
  Resolver r(ResolverOptions{254, RTPROT_BGP, via_default, 1000});
  Model m;
  m.via_default = via_default;
  const int steps = *rc::gen::inRange(1, 60);
  for (int step = 0; step < steps; ++step) {
    const int kind = *rc::gen::inRange(0, 10);
    if (kind < 5) {  // a route added or replaced
      Route rt = route(prefixes[*rc::gen::inRange(0, 8)], *rc::gen::inRange(0u, 3u) * 10, {},
                       types[*rc::gen::inRange(0, 6)], *rc::gen::element<uint8_t>(RTPROT_STATIC, RTPROT_BGP, RTPROT_KERNEL),
                       *rc::gen::element<uint32_t>(254, 254, 100));
      if (rt.type == RTN_UNICAST) {
        const int n = *rc::gen::inRange(1, 4);
        for (int i = 0; i < n; ++i) {
          const uint32_t ifindex = *rc::gen::inRange(2u, 6u);  // 5: no such link
          rt.nexthops.push_back(*rc::gen::arbitrary<bool>() ? gw(gateways[*rc::gen::inRange(0, 4)], ifindex)
                                                            : dev(ifindex));
        }
      }
      (void)r.apply(add(rt));
      if (rt.table == 254 && rt.protocol != RTPROT_BGP && rt.type != RTN_LOCAL) m.routes[{rt.dst, rt.metric}] = rt;
    } else if (kind < 8) {  // a route deleted (perhaps one not there)
      Route rt = route(prefixes[*rc::gen::inRange(0, 8)], *rc::gen::inRange(0u, 3u) * 10, {});
      (void)r.apply(del(rt));
      m.routes.erase({rt.dst, rt.metric});
    } else {  // a link up or down
      (void)ifs.apply(link(*rc::gen::inRange(2u, 5u), *rc::gen::arbitrary<bool>()));
    }
    for (const char* t : targets) {
      const Resolved got = r.resolve(addr(t), 0, ifs), want = m.resolve(addr(t), ifs);
      RC_ASSERT(got == want);
    }
    RC_ASSERT(r.routes() == m.routes.size());
  }
}

}  // namespace
}  // namespace petrel::fib
