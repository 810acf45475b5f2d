// Routes from the kernel into BGP (daemon/kernel_origin.h): protocol
// names, which kernel routes an [[originate]] from_kernel entry takes, the
// bound, and the [[static]] installer's plan (fib::Plan with a static
// route's wish); the configuration keys of issue 23's origination part.
#include "daemon/kernel_origin.h"

#include <gtest/gtest.h>
#include <linux/rtnetlink.h>

#include "daemon/config.h"
#include "fib/plan.h"

namespace petrel::daemon {
namespace {

net::Prefix pfx(const char* s) { return *net::Prefix::parse(s); }

fib::Route route(const char* p, uint8_t protocol, uint32_t metric = 0, uint32_t table = 254,
                 uint8_t type = RTN_UNICAST) {
  fib::Route r;
  r.dst = pfx(p);
  r.protocol = protocol;
  r.metric = metric;
  r.table = table;
  r.type = type;
  return r;
}

KernelOriginConfig entry(std::vector<uint8_t> protocols, std::vector<const char*> ranges, uint32_t max = 10000) {
  KernelOriginConfig k;
  k.protocols = std::move(protocols);
  for (const char* r : ranges) k.prefixes.push_back(*table::PrefixRange::parse(r));
  k.max_prefixes = max;
  return k;
}

TEST(KernelOrigin, ProtocolNames) {
  EXPECT_EQ(rt_protocol_number("static"), 4);
  EXPECT_EQ(rt_protocol_number("kernel"), 2);
  EXPECT_EQ(rt_protocol_number("boot"), 3);
  EXPECT_EQ(rt_protocol_number("bgp"), 186);
  EXPECT_EQ(rt_protocol_number("200"), 200);
  EXPECT_FALSE(rt_protocol_number("256"));
  EXPECT_FALSE(rt_protocol_number(""));
  EXPECT_FALSE(rt_protocol_number("no-such-protocol"));
  EXPECT_EQ(rt_protocol_name(4), "static");
  EXPECT_EQ(rt_protocol_name(200), "200");
}

TEST(KernelOrigin, AnnouncedWhileTheKernelHoldsIt) {
  KernelOrigins o({entry({4}, {"203.0.113.0/24 le 32"})});
  std::vector<KernelOrigins::Change> ch;
  o.route(route("203.0.113.7/32", 4), true, ch);
  ASSERT_EQ(ch.size(), 1u);
  EXPECT_EQ(ch[0].prefix, pfx("203.0.113.7/32"));
  EXPECT_EQ(ch[0].entry, 0u);
  ch.clear();
  o.route(route("203.0.113.7/32", 4), true, ch);  // the same again: nothing new
  EXPECT_TRUE(ch.empty());
  o.route(route("203.0.113.7/32", 4), false, ch);
  ASSERT_EQ(ch.size(), 1u);
  EXPECT_FALSE(ch[0].entry);
  EXPECT_TRUE(o.announced().empty());
}

TEST(KernelOrigin, OnlyTheEntrysProtocolsTableTypesAndPrefixes) {
  KernelOrigins o({entry({4, 2, kRtProtBgp}, {"203.0.113.0/24 le 32"})});
  std::vector<KernelOrigins::Change> ch;
  o.route(route("203.0.113.0/24", 16), true, ch);                   // dhcp: not listed
  o.route(route("203.0.113.0/24", kRtProtBgp), true, ch);          // ours: never
  o.route(route("203.0.113.0/24", 4, 0, 100), true, ch);           // another table
  o.route(route("198.51.100.0/24", 4), true, ch);                  // outside the ranges
  o.route(route("203.0.0.0/16", 4), true, ch);                     // shorter than the range
  o.route(route("203.0.113.0/24", 2, 0, 254, RTN_LOCAL), true, ch); // a local route
  EXPECT_TRUE(ch.empty());
  o.route(route("203.0.113.0/25", 4, 0, 254, RTN_BLACKHOLE), true, ch);
  EXPECT_EQ(ch.size(), 1u);
}

TEST(KernelOrigin, APrefixStaysWhileAnyOfItsRoutesDoes) {
  KernelOrigins o({entry({4}, {"0.0.0.0/0 le 32"})});
  std::vector<KernelOrigins::Change> ch;
  o.route(route("192.0.2.0/24", 4, 10), true, ch);
  o.route(route("192.0.2.0/24", 4, 20), true, ch);
  EXPECT_EQ(ch.size(), 1u);
  o.route(route("192.0.2.0/24", 4, 10), false, ch);
  EXPECT_EQ(ch.size(), 1u);
  EXPECT_EQ(o.announced().size(), 1u);
  // Replaced in place by a route of a protocol not listed: it goes.
  o.route(route("192.0.2.0/24", 16, 20), true, ch);
  ASSERT_EQ(ch.size(), 2u);
  EXPECT_FALSE(ch[1].entry);
}

TEST(KernelOrigin, TheFirstEntryThatHoldsAPrefixGivesItsAttributes) {
  KernelOrigins o({entry({4}, {"192.0.2.0/24"}), entry({2, 4}, {"0.0.0.0/0 le 32"})});
  std::vector<KernelOrigins::Change> ch;
  o.route(route("192.0.2.0/24", 2), true, ch);  // only the second entry's
  ASSERT_EQ(ch.size(), 1u);
  EXPECT_EQ(ch[0].entry, 1u);
  o.route(route("192.0.2.0/24", 4, 5), true, ch);  // now the first's too: it wins
  ASSERT_EQ(ch.size(), 2u);
  EXPECT_EQ(ch[1].entry, 0u);
  o.route(route("192.0.2.0/24", 4, 5), false, ch);  // back to the second
  ASSERT_EQ(ch.size(), 3u);
  EXPECT_EQ(ch[2].entry, 1u);
}

TEST(KernelOrigin, BoundedByMaxPrefixes) {
  KernelOrigins o({entry({4}, {"10.0.0.0/8 le 32"}, 3)});
  std::vector<KernelOrigins::Change> ch;
  for (int i = 0; i < 5; ++i) {
    std::string p = "10.0." + std::to_string(i) + ".0/24";
    o.route(route(p.c_str(), 4), true, ch);
  }
  EXPECT_EQ(ch.size(), 3u);
  EXPECT_EQ(o.announced().size(), 3u);
  EXPECT_EQ(o.refused(), 2u);
  EXPECT_EQ(o.take_new_refusals(), 2u);
  EXPECT_EQ(o.take_new_refusals(), 0u);
  // A second route of a prefix already held is not refused.
  o.route(route("10.0.0.0/24", 4, 7), true, ch);
  EXPECT_EQ(o.refused(), 2u);
  o.clear(ch);
  EXPECT_EQ(ch.size(), 6u);
  EXPECT_TRUE(o.announced().empty());
}

// [[static]]: the installer's plan asks for a blackhole, an unreachable
// route, and a gateway route only once the gateway is directly reachable.
TEST(StaticPlan, BlackholeUnreachableAndGateway) {
  fib::PlanOptions po;
  po.metric = 31;
  fib::Plan plan(po);
  StaticRouteConfig bh;
  bh.prefix = pfx("192.0.2.66/32");
  bh.kind = StaticRouteConfig::Kind::kBlackhole;
  StaticRouteConfig un;
  un.prefix = pfx("192.0.2.128/25");
  un.kind = StaticRouteConfig::Kind::kUnreachable;
  StaticRouteConfig gw;
  gw.prefix = pfx("198.51.100.0/24");
  gw.next_hop = *net::IpAddress::parse("198.18.0.9");
  for (const auto* r : {&bh, &un, &gw}) plan.want(r->prefix, static_want(*r, 0));
  fib::Interfaces ifs;
  std::vector<fib::Request> out;
  plan.next(ifs, 100, out);
  ASSERT_EQ(out.size(), 2u);
  uint8_t types = 0;
  for (const fib::Request& q : out) {
    EXPECT_EQ(q.op, fib::Op::kAdd);
    EXPECT_EQ(q.route.metric, 31u);
    EXPECT_EQ(q.route.protocol, 186);
    EXPECT_TRUE(q.route.nexthops.empty());
    if (q.route.dst == bh.prefix) types |= q.route.type == RTN_BLACKHOLE ? 1 : 0;
    if (q.route.dst == un.prefix) types |= q.route.type == RTN_UNREACHABLE ? 2 : 0;
  }
  EXPECT_EQ(types, 3);
  EXPECT_EQ(plan.counts().unresolved, 1u);  // the gateway is on no connected network
  // The link comes: the gateway route is asked for.
  fib::Message link{{RTM_NEWLINK, 0, 0, 0}, fib::Link{3, 0x1 | 0x40, "veth0"}};  // IFF_UP | IFF_RUNNING
  fib::Address a;
  a.ifindex = 3;
  a.prefix_len = 24;
  a.local = a.address = *net::IpAddress::parse("198.18.0.1");
  fib::Message addr{{RTM_NEWADDR, 0, 0, 0}, a};
  ASSERT_TRUE(ifs.apply(link));
  ASSERT_TRUE(ifs.apply(addr));
  plan.interfaces_changed(ifs);
  for (const fib::Request& q : out) plan.answer(q.seq, 0);
  out.clear();
  plan.next(ifs, 100, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].route.dst, gw.prefix);
  EXPECT_EQ(out[0].route.type, RTN_UNICAST);
  ASSERT_EQ(out[0].route.nexthops.size(), 1u);
  EXPECT_EQ(out[0].route.nexthops[0].ifindex, 3u);
}

// The BGP routes' nexthop objects, found by the static installer's
// start-up dump (a restart that kept them, a reload), are not its own: not
// deleted when it allows removals.
TEST(StaticPlan, LeavesTheBgpRoutesNexthopObjectsAlone) {
  KernelConfig k;
  fib::Plan plan(static_plan_options(k));
  EXPECT_EQ(plan.options().metric, 31u);
  fib::NexthopObject o;
  o.id = fib::PlanOptions{}.first_nhid + 1;  // the BGP plan's first object
  o.family = fib::kAfInet;
  o.protocol = 186;
  o.has_gateway = true;
  o.gateway = *net::IpAddress::parse("198.18.0.2");
  o.ifindex = 3;
  plan.kernel_has(o);
  fib::Route bgp_route = route("198.51.100.0/24", 186, 32);  // the BGP plan's route: another metric
  bgp_route.nhid = o.id;
  plan.kernel_has(bgp_route);
  plan.allow_removals();
  fib::Interfaces ifs;
  std::vector<fib::Request> out;
  plan.next(ifs, 100, out);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(plan.counts().nexthop_objects, 0u);
  EXPECT_EQ(plan.counts().installed, 0u);
  // With the BGP plan's own range, the same object would be taken as ours
  // and deleted as unused: what the range is for.
  fib::PlanOptions same = static_plan_options(k);
  same.first_nhid = fib::PlanOptions{}.first_nhid;
  same.nhid_count = fib::PlanOptions{}.nhid_count;
  fib::Plan wrong(same);
  wrong.kernel_has(o);
  wrong.allow_removals();
  wrong.next(ifs, 100, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].object);
  EXPECT_EQ(out[0].op, fib::Op::kDelete);
}

Result<Config, ConfigErrors> parse(const std::string& body) {
  return parse_config("[router]\nasn = 64500\nrouter_id = \"198.18.0.1\"\n" + body, "t.toml");
}

TEST(KernelOriginConfig, LinkDownEndsSessionDefaultsToSingleHopExternal) {
  auto c = parse(R"(
[[peer]]
name = "ext"
address = "198.18.0.2"
asn = 64501
[[peer]]
name = "int"
address = "198.18.0.3"
asn = 64500
[[peer]]
name = "far"
address = "198.18.0.4"
asn = 64502
multihop = 3
[[peer]]
name = "off"
address = "198.18.0.5"
asn = 64503
link_down_ends_session = false
)");
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->peers[0].link_down_ends_session);
  EXPECT_FALSE(c->peers[1].link_down_ends_session);
  EXPECT_FALSE(c->peers[2].link_down_ends_session);
  EXPECT_FALSE(c->peers[3].link_down_ends_session);
}

TEST(KernelOriginConfig, StaticMetricIsOneBelowTheMetric) {
  auto c = parse("[kernel]\nmetric = 100\n");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->kernel.static_metric, 99u);
  c = parse("[kernel]\nmetric = 0\n");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->kernel.static_metric, 1u);
  c = parse("[kernel]\nmetric = 100\nstatic_metric = 100\n");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error()[0].to_string(),
            "t.toml:6:17: kernel.static_metric: equal to kernel.metric: [[static]] routes need a metric of their own");
}

TEST(KernelOriginConfig, PrefixSetsAreWrittenOut) {
  auto c = parse(R"(
[[prefix_set]]
name = "mine"
prefixes = ["203.0.113.0/24 le 32"]
[[originate]]
from_kernel = true
protocols = ["static", 'kernel']
prefixes = ["@mine", "2001:db8::/32 le 64"]
)");
  ASSERT_TRUE(c.ok()) << c.error()[0].to_string();
  ASSERT_EQ(c->kernel_origins.size(), 1u);
  const KernelOriginConfig& k = c->kernel_origins[0];
  EXPECT_EQ(k.protocols, (std::vector<uint8_t>{4, 2}));
  EXPECT_EQ(k.table, 254u);
  ASSERT_EQ(k.prefixes.size(), 2u);
  EXPECT_EQ(k.prefixes[0].to_string(), "203.0.113.0/24 le 32");
  EXPECT_TRUE(c->originate.empty());
}

}  // namespace
}  // namespace petrel::daemon
