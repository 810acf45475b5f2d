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
#include <optional>
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
//
// Nexthop objects as the kernel keeps them: a route with RTA_NH_ID refers
// to an object that must exist (else EINVAL) and must come without next
// hops of its own; it reports the object's next hops beside the id. A
// group's members must exist. Deleting an object deletes the routes that
// refer to it and takes it out of its groups (a group left empty goes).
class ModelKernel {
 public:
  using Key = std::tuple<uint32_t, net::Prefix, uint32_t>;
  std::map<Key, Route> routes;
  std::map<uint32_t, NexthopObject> objects;
  bool foreign_touched = false;
  bool foreign_asked = false;
  size_t replaced = 0;     // objects replaced in place
  size_t route_requests = 0;

  static Key key(const Route& r) { return {r.table, r.dst, r.metric}; }
  void add(const Route& r) { routes[key(r)] = r; }
  static bool ours(const NexthopObject& o) {
    return o.protocol == kOpts.protocol && o.id - kOpts.first_nhid < kOpts.nhid_count;
  }

  std::optional<std::vector<NextHop>> expand(uint32_t id) const {
    auto it = objects.find(id);
    if (it == objects.end()) return std::nullopt;
    std::vector<NextHop> hops;
    if (it->second.group.empty()) {
      hops.push_back(NextHop{true, it->second.gateway, it->second.ifindex, 0});
    } else {
      for (const GroupMember& m : it->second.group) {
        const NexthopObject& o = objects.at(m.id);
        hops.push_back(NextHop{true, o.gateway, o.ifindex, m.weight});
      }
    }
    return hops;
  }

  void remove_object(uint32_t id) {
    objects.erase(id);
    std::erase_if(routes, [&](const auto& kv) { return kv.second.nhid == id; });
    std::vector<uint32_t> empty;
    for (auto& [gid, g] : objects) {
      if (g.group.empty()) continue;
      std::erase_if(g.group, [&](const GroupMember& m) { return m.id == id; });
      if (g.group.empty()) empty.push_back(gid);
    }
    for (uint32_t gid : empty) remove_object(gid);
  }

  int32_t apply_object(const Message& m) {
    const NexthopObject& o = std::get<NexthopObject>(m.body);
    if (o.id - kOpts.first_nhid >= kOpts.nhid_count || (m.header.type == RTM_NEWNEXTHOP && !ours(o)))
      foreign_asked = true;
    auto it = objects.find(o.id);
    if (m.header.type == RTM_NEWNEXTHOP) {
      if (it != objects.end()) {  // replaced in place: a group by a group only
        if (!(m.header.flags & NLM_F_REPLACE)) return -EEXIST;
        if (it->second.group.empty() != o.group.empty() || o.group.empty()) return -EINVAL;
        for (const GroupMember& g : o.group)
          if (!objects.count(g.id) || !objects.at(g.id).group.empty()) return -EINVAL;
        if (!ours(it->second)) foreign_touched = true;
        it->second = o;
        ++replaced;
        return 0;
      }
      if (o.group.empty() && (!o.has_gateway || o.ifindex == 0)) return -EINVAL;
      for (const GroupMember& g : o.group)
        if (!objects.count(g.id) || !objects.at(g.id).group.empty()) return -EINVAL;
      objects[o.id] = o;
      return 0;
    }
    if (o.protocol != 0 || o.family != 0 || o.flags != 0) return -EINVAL;  // as the kernel: the id alone
    if (it == objects.end()) return -ENOENT;
    if (!ours(it->second)) foreign_touched = true;
    remove_object(o.id);
    return 0;
  }

  int32_t apply(const Message& m) {
    if (std::holds_alternative<NexthopObject>(m.body)) return apply_object(m);
    ++route_requests;
    Route r = std::get<Route>(m.body);
    if (r.protocol != kOpts.protocol || r.table != kOpts.table || r.metric != kOpts.metric) foreign_asked = true;
    auto it = routes.find(key(r));
    if (m.header.type == RTM_NEWROUTE) {
      if (r.nhid != 0) {  // the object's next hops, as the kernel reports them
        auto hops = expand(r.nhid);
        if (!r.nexthops.empty() || !hops) return -EINVAL;
        for (const NextHop& h : *hops)  // an IPv4 route may use an IPv6 object (RFC 8950), not the reverse
          if (h.gateway.family() != r.dst.family() && r.dst.family() == net::IpFamily::V6) return -EINVAL;
        r.nexthops = *hops;
      }
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
    if (r.nhid != 0 && it->second.nhid != r.nhid) return -ESRCH;  // a delete naming an id matches it only
    if (it->second.protocol != kOpts.protocol) foreign_touched = true;
    routes.erase(it);
    return 0;
  }
  [[nodiscard]] std::map<uint32_t, NexthopObject> foreign_objects() const {
    std::map<uint32_t, NexthopObject> f;
    for (const auto& [id, o] : objects)
      if (!ours(o)) f.emplace(id, o);
    return f;
  }
  // Objects of ours no route and no group refers to.
  [[nodiscard]] size_t unused_objects() const {
    size_t n = 0;
    for (const auto& [id, o] : objects) {
      if (!ours(o)) continue;
      const uint32_t oid = id;  // (clang: a structured binding is not captured)
      bool used = std::any_of(routes.begin(), routes.end(), [&](const auto& kv) { return kv.second.nhid == oid; });
      for (const auto& [gid, g] : objects)
        for (const GroupMember& m : g.group) used |= m.id == id;
      n += !used;
    }
    return n;
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

NexthopObject object(uint32_t id, uint8_t protocol, const char* gw, uint32_t ifindex);

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

TEST(Plan, Rfc8950NextHopsAreInstalledOverIpv6) {
  // An IPv4 prefix over an IPv6 next hop (RFC 8950): installed through it
  // (RTA_VIA on the wire, fib/netlink.h), as an IPv6 prefix is; with
  // nexthop objects, through an AF_INET6 object.
  for (bool objects : {false, true}) {
    Interfaces ifs = with_veth(three_links());
    ModelKernel k;
    PlanOptions o = kOpts;
    o.nexthop_objects = objects;
    Plan plan(o);
    const Want ll{{Gateway{addr("fe80::2"), 4, {}}}, false};
    plan.want(prefix("192.0.2.0/24"), ll);
    plan.want(prefix("2001:db8:1::/48"), ll);
    pump(plan, ifs, k);
    const Route* r = k.ours(prefix("192.0.2.0/24"));
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->nexthops, (std::vector<NextHop>{NextHop{true, addr("fe80::2"), 4, 0}}));
    ASSERT_NE(k.ours(prefix("2001:db8:1::/48")), nullptr);
    EXPECT_EQ(plan.counts().unresolved, 0u);
    EXPECT_EQ(plan.counts().installed, 2u);
    EXPECT_EQ(plan.counts().refusals, 0u);
    if (objects) {
      ASSERT_NE(r->nhid, 0u);
      EXPECT_EQ(k.objects.at(r->nhid).family, kAfInet6);
    }
  }
  // An IPv4 next hop for an IPv6 prefix: not installed.
  Interfaces ifs = three_links();
  ModelKernel k;
  Plan plan(kOpts);
  plan.want(prefix("2001:db8:1::/48"), via({"10.0.1.2"}));
  pump(plan, ifs, k);
  EXPECT_EQ(plan.counts().unresolved, 1u);
}

// A next hop further than one link: installed through the kernel route
// the resolver finds (its ECMP gateways), replaced when that route changes.
TEST(Plan, RecursiveNextHopsGoThroughTheResolvedGateways) {
  for (bool objects : {false, true}) {
    Interfaces ifs = three_links();
    Resolver res;
    auto igp = [](std::vector<NextHop> hops) {
      Route r = ours("203.0.113.0/24", "10.0.1.2", 1);  // another's, in the main table
      r.table = 254;
      r.metric = 20;
      r.protocol = RTPROT_STATIC;
      r.nexthops = std::move(hops);
      return Message{Header{RTM_NEWROUTE, 0, 0, 0}, r};
    };
    (void)res.apply(igp({NextHop{true, addr("10.0.1.2"), 1, 0}}));
    ModelKernel k;
    PlanOptions o = kOpts;
    o.nexthop_objects = objects;
    Plan plan(o);
    plan.set_resolver(&res);
    plan.want(prefix("192.0.2.0/24"), via({"203.0.113.9"}));
    plan.want(prefix("198.51.100.0/24"), via({"203.0.113.9"}));
    plan.want(prefix("100.64.0.0/10"), via({"100.127.0.1"}));  // no route to it
    pump(plan, ifs, k);
    ASSERT_NE(k.ours(prefix("192.0.2.0/24")), nullptr);
    EXPECT_EQ(k.ours(prefix("192.0.2.0/24"))->nexthops, (std::vector<NextHop>{NextHop{true, addr("10.0.1.2"), 1, 0}}));
    EXPECT_EQ(plan.counts().installed, 2u);
    EXPECT_EQ(plan.counts().unresolved, 1u);
    // The IGP route becomes ECMP over two links: with objects, the next
    // hop's group is replaced in place and no route is touched.
    (void)res.apply(igp({NextHop{true, addr("10.0.1.2"), 1, 0}, NextHop{true, addr("10.0.2.2"), 2, 0}}));
    plan.interfaces_changed();
    const size_t routes_before = k.route_requests;
    pump(plan, ifs, k);
    EXPECT_EQ(k.route_requests - routes_before, objects ? 0u : 2u);
    EXPECT_EQ(k.replaced, objects ? 1u : 0u);
    EXPECT_TRUE(plan.idle());
    for (const char* p : {"192.0.2.0/24", "198.51.100.0/24"}) {
      ASSERT_NE(k.ours(prefix(p)), nullptr);
      const Route& r = *k.ours(prefix(p));
      auto hops = r.nhid != 0 ? *k.expand(r.nhid) : r.nexthops;
      for (NextHop& h : hops) h.hops = 0;
      EXPECT_EQ(hops, (std::vector<NextHop>{NextHop{true, addr("10.0.1.2"), 1, 0}, NextHop{true, addr("10.0.2.2"), 2, 0}}));
    }
    // The IGP route goes: the routes through it go too.
    // Back to one gateway, then to another: the old members go once the
    // group no longer holds them.
    (void)res.apply(igp({NextHop{true, addr("10.0.2.2"), 2, 0}}));
    plan.interfaces_changed();
    pump(plan, ifs, k);
    (void)res.apply(igp({NextHop{true, addr("10.0.3.2"), 3, 0}}));
    plan.interfaces_changed();
    pump(plan, ifs, k);
    EXPECT_EQ(k.route_requests - routes_before, objects ? 0u : 6u);
    {
      const Route& r = *k.ours(prefix("192.0.2.0/24"));
      EXPECT_EQ(r.nhid != 0 ? *k.expand(r.nhid) : r.nexthops,
                (std::vector<NextHop>{NextHop{true, addr("10.0.3.2"), 3, 0}}));
    }
    if (objects) {
      EXPECT_EQ(k.objects.size(), 2u);  // the group and its one member
      EXPECT_EQ(plan.counts().nexthop_objects, 2u);
    }
    (void)res.apply(Message{Header{RTM_DELROUTE, 0, 0, 0}, std::get<Route>(igp({}).body)});
    plan.interfaces_changed();
    plan.allow_removals();
    pump(plan, ifs, k);
    EXPECT_EQ(k.ours(prefix("192.0.2.0/24")), nullptr);
    EXPECT_EQ(plan.counts().installed, 0u);
    EXPECT_EQ(plan.counts().unresolved, 3u);
    EXPECT_TRUE(k.objects.empty());  // unused: deleted
    EXPECT_FALSE(k.foreign_touched || k.foreign_asked);
  }
}

TEST(Plan, NexthopObjectsComeBeforeTheirRoutesAndGoAfterThem) {
  Interfaces ifs = three_links();
  PlanOptions o = kOpts;
  o.nexthop_objects = true;
  Plan plan(o);
  ModelKernel k;
  plan.want(prefix("192.0.2.0/24"), via({"10.0.1.2"}));
  plan.want(prefix("198.51.100.0/24"), via({"10.0.1.2"}));
  plan.want(prefix("203.0.113.0/24"), via({"10.0.1.2", "10.0.2.2"}));
  std::vector<Request> out;
  plan.next(ifs, 100, out);
  // One object per gateway, one group, each before the first route through it.
  ASSERT_EQ(out.size(), 6u);
  ASSERT_TRUE(out[0].object.has_value());
  EXPECT_EQ(out[0].object->gateway, addr("10.0.1.2"));
  EXPECT_EQ(out[0].object->protocol, RTPROT_BGP);
  EXPECT_EQ(out[1].route.nhid, out[0].object->id);
  EXPECT_TRUE(out[1].route.nexthops.empty());  // the id alone
  EXPECT_EQ(out[2].route.nhid, out[0].object->id);
  ASSERT_TRUE(out[3].object && out[4].object);
  EXPECT_EQ(out[3].object->gateway, addr("10.0.2.2"));
  EXPECT_EQ(out[4].object->group, (std::vector<GroupMember>{{out[0].object->id, 0}, {out[3].object->id, 0}}));
  EXPECT_EQ(out[5].route.nhid, out[4].object->id);
  for (const Request& r : out) plan.answer(r.seq, k.apply(to_message(r)));
  EXPECT_EQ(plan.counts().nexthop_objects, 3u);
  EXPECT_EQ(plan.counts().installed, 3u);
  EXPECT_EQ(k.ours(prefix("203.0.113.0/24"))->nexthops.size(), 2u);

  // The last route through the group goes first, then the group, then the
  // member no route uses any longer.
  plan.unwant(prefix("203.0.113.0/24"));
  out.clear();
  plan.next(ifs, 100, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].op, Op::kDelete);
  EXPECT_FALSE(out[0].object.has_value());
  plan.answer(out[0].seq, k.apply(to_message(out[0])));
  out.clear();
  plan.next(ifs, 100, out);
  ASSERT_EQ(out.size(), 1u);
  ASSERT_TRUE(out[0].object.has_value());
  EXPECT_EQ(out[0].op, Op::kDelete);
  EXPECT_EQ(to_message(out[0]).header.type, RTM_DELNEXTHOP);
  EXPECT_EQ(out[0].object->protocol, 0);  // the kernel refuses a delete naming more than the id
  plan.answer(out[0].seq, k.apply(to_message(out[0])));
  pump(plan, ifs, k);
  EXPECT_EQ(k.objects.size(), 1u);  // 10.0.1.2's, still used
  EXPECT_EQ(plan.counts().nexthop_objects, 1u);

  // A clean stop: the routes, then their object.
  plan.unwant_all();
  plan.allow_removals();
  pump(plan, ifs, k);
  EXPECT_TRUE(k.routes.empty());
  EXPECT_TRUE(k.objects.empty());
  EXPECT_EQ(plan.counts().nexthop_objects, 0u);
}

TEST(Plan, NexthopObjectsOfAnEarlierRunAreReusedOrRemoved) {
  Interfaces ifs = three_links();
  PlanOptions o = kOpts;
  o.nexthop_objects = true;
  Plan plan(o);
  ModelKernel k;
  const uint32_t used = kOpts.first_nhid + 1, unused = kOpts.first_nhid + 2;
  k.objects[used] = object(used, RTPROT_BGP, "10.0.1.2", 1);
  k.objects[unused] = object(unused, RTPROT_BGP, "10.0.2.2", 2);
  k.objects[7] = object(7, RTPROT_STATIC, "10.0.3.2", 3);  // another's
  Route r = ours("192.0.2.0/24", "10.0.1.2", 1);
  r.nhid = used;
  k.add(r);
  for (const auto& [id, nh] : k.objects) plan.kernel_has(nh);
  plan.kernel_has(r);
  EXPECT_EQ(plan.counts().nexthop_objects, 2u);
  plan.want(prefix("192.0.2.0/24"), via({"10.0.1.2"}));
  plan.want(prefix("198.51.100.0/24"), via({"10.0.1.2"}));
  std::vector<Request> out;
  plan.next(ifs, 100, out);
  // The unused object goes; the new route refers to the found one; the
  // route still right is left alone.
  ASSERT_EQ(out.size(), 2u);
  ASSERT_TRUE(out[0].object.has_value());
  EXPECT_EQ(out[0].object->id, unused);
  EXPECT_EQ(out[0].op, Op::kDelete);
  EXPECT_EQ(out[1].route.dst, prefix("198.51.100.0/24"));
  EXPECT_EQ(out[1].route.nhid, used);
  for (const Request& q : out) plan.answer(q.seq, k.apply(to_message(q)));
  EXPECT_TRUE(k.objects.count(7));
  EXPECT_FALSE(k.foreign_asked);
  EXPECT_EQ(plan.counts().nexthop_objects, 1u);
}

// A reload moving Petrel's routes to another metric (daemon/kernel.h,
// KernelRestart::Reload::kBeside): the new plan runs beside the old one,
// whose route and nexthop object it finds. It never refers to nor deletes
// that object (the old plan deletes it with its routes), takes its ids
// half the range away, and removing all of its own leaves the other's.
TEST(Plan, ObjectsFoundBesideAnotherPlanAreLeftAlone) {
  Interfaces ifs = three_links();
  PlanOptions o = kOpts;
  o.metric = 50;
  o.nexthop_objects = true;
  o.found_objects_foreign = true;
  Plan plan(o);
  ModelKernel k;
  const uint32_t theirs = kOpts.first_nhid + 3;
  k.objects[theirs] = object(theirs, RTPROT_BGP, "10.0.1.2", 1);
  Route r = ours("192.0.2.0/24", "10.0.1.2", 1);  // the other plan's: metric 32
  r.nhid = theirs;
  k.add(r);
  for (const auto& [id, nh] : k.objects) plan.kernel_has(nh);
  plan.kernel_has(r);  // not ours (another metric): ignored
  EXPECT_EQ(plan.counts().nexthop_objects, 0u);
  EXPECT_EQ(plan.counts().installed, 0u);
  plan.want(prefix("192.0.2.0/24"), via({"10.0.1.2"}));
  plan.allow_removals();
  std::vector<Request> out;
  plan.next(ifs, 100, out);
  ASSERT_EQ(out.size(), 2u);  // an object of its own, then the route
  ASSERT_TRUE(out[0].object.has_value());
  EXPECT_EQ(out[0].object->id, kOpts.first_nhid + 3 + kOpts.nhid_count / 2);
  EXPECT_EQ(out[1].route.nhid, out[0].object->id);
  EXPECT_EQ(out[1].route.metric, 50u);
  for (const Request& q : out) plan.answer(q.seq, k.apply(to_message(q)));
  EXPECT_EQ(k.routes.size(), 2u);  // the same prefix at both metrics
  EXPECT_EQ(plan.counts().installed, 1u);
  // All of this plan's go; the other's route and object stay.
  plan.unwant_all();
  pump(plan, ifs, k);
  EXPECT_EQ(k.routes.size(), 1u);
  EXPECT_EQ(k.routes.begin()->second.metric, 32u);
  EXPECT_EQ(k.objects.size(), 1u);
  EXPECT_TRUE(k.objects.count(theirs));
}

TEST(Plan, RestartDeferralHoldsRequestsThenTouchesOnlyWhatDiffers) {
  // RFC 4724 section 4.1: while IPv4 is deferred nothing of it goes out,
  // whatever is wished meanwhile; at release each prefix is worked out once
  // from its last wish. IPv6 is not deferred and goes at once.
  Interfaces ifs = three_links();
  (void)ifs.apply(Message{Header{RTM_NEWADDR, 0, 0, 0}, Address{1, 64, 0, addr("2001:db8:1::1"), addr("2001:db8:1::1")}});
  Plan plan(kOpts);
  ModelKernel k;
  k.add(ours("192.0.2.0/24", "10.0.1.2", 1));     // still right at the end
  k.add(ours("198.51.100.0/24", "10.0.1.2", 1));  // differs at the end
  k.add(ours("203.0.113.0/24", "10.0.1.2", 1));   // not learnt again
  for (const auto& [key, r] : k.routes) plan.kernel_has(r);
  EXPECT_EQ(plan.found(net::IpFamily::V4), 3u);
  EXPECT_EQ(plan.found(net::IpFamily::V6), 0u);
  plan.defer(net::IpFamily::V4);
  EXPECT_TRUE(plan.deferred(net::IpFamily::V4));
  // the first peer's routes, then a better one for two prefixes
  plan.want(prefix("192.0.2.0/24"), via({"10.0.2.2"}));
  plan.want(prefix("198.51.100.0/24"), via({"10.0.2.2"}));
  plan.want(prefix("192.0.2.0/24"), via({"10.0.1.2"}));
  plan.want(prefix("198.51.100.0/24"), via({"10.0.3.2"}));
  plan.want(prefix("233.252.0.0/24"), via({"10.0.2.2"}));  // new
  plan.want(prefix("2001:db8:9::/48"), via({"2001:db8:1::2"}));
  std::vector<Request> out;
  plan.next(ifs, 100, out);
  ASSERT_EQ(out.size(), 1u);  // IPv6 only
  EXPECT_EQ(out[0].route.dst, prefix("2001:db8:9::/48"));
  EXPECT_EQ(out[0].op, Op::kAdd);
  plan.answer(out[0].seq, k.apply(to_message(out[0])));
  EXPECT_TRUE(plan.idle());
  EXPECT_EQ(plan.counts().stale, 1u);
  out.clear();
  plan.next(ifs, 100, out);
  EXPECT_TRUE(out.empty());

  plan.release(net::IpFamily::V4);
  EXPECT_FALSE(plan.deferred(net::IpFamily::V4));
  plan.next(ifs, 100, out);
  std::map<net::Prefix, Op> ops;
  for (const Request& q : out) {
    EXPECT_FALSE(ops.count(q.route.dst)) << "two requests for one prefix";
    ops[q.route.dst] = q.op;
    plan.answer(q.seq, k.apply(to_message(q)));
  }
  EXPECT_EQ(ops, (std::map<net::Prefix, Op>{{prefix("198.51.100.0/24"), Op::kReplace},
                                            {prefix("203.0.113.0/24"), Op::kDelete},
                                            {prefix("233.252.0.0/24"), Op::kAdd}}));
  EXPECT_TRUE(plan.idle());
  EXPECT_EQ(plan.counts().installed, 4u);
  EXPECT_EQ(plan.counts().stale, 0u);
  EXPECT_EQ(k.ours(prefix("198.51.100.0/24"))->nexthops[0].gateway, addr("10.0.3.2"));
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

NexthopObject object(uint32_t id, uint8_t protocol, const char* gw, uint32_t ifindex) {
  NexthopObject o;
  o.id = id;
  o.family = kAfInet;
  o.protocol = protocol;
  o.has_gateway = true;
  o.gateway = addr(gw);
  o.ifindex = ifindex;
  return o;
}

// With nexthop objects or without, from a kernel that holds objects of
// ours left by an earlier run (used, unused, a group) and a foreign object
// with a foreign route through it.
// An "IGP" route of the main table to 10.0.4.0/24 (the gateways on no link
// until one gets it), through one or two links, or none: the plan resolves
// those gateways through it (fib/resolver.h).
Message igp_route(uint16_t type, std::vector<uint32_t> links) {
  Route r = ours("10.0.4.0/24", "10.0.1.9", 1);  // another's, in the main table
  r.table = 254;
  r.metric = 20;
  r.protocol = RTPROT_STATIC;
  r.nexthops.clear();
  for (uint32_t i : links) r.nexthops.push_back(NextHop{true, net::IpAddress::v4(0x0a000009u | (i << 8)), i, 0});
  return Message{Header{type, 0, 0, 0}, r};
}

void model_kernel_property(bool objects, bool recursive = false) {
  const World w = world();
  Interfaces ifs = three_links();
  ModelKernel k;
  Resolver res;
  const uint32_t base = kOpts.first_nhid;
  k.objects[5] = object(5, RTPROT_STATIC, "10.0.1.9", 1);
  k.objects[base + 7] = object(base + 7, RTPROT_BGP, "10.0.1.2", 1);
  k.objects[base + 8] = object(base + 8, RTPROT_BGP, "10.0.2.2", 2);
  k.objects[base + 11] = object(base + 11, RTPROT_BGP, "10.0.3.2", 3);
  NexthopObject group;
  group.id = base + 9;
  group.protocol = RTPROT_BGP;
  group.group = {GroupMember{base + 7, 0}, GroupMember{base + 8, 0}};
  k.objects[group.id] = group;
  {
    Route f = random_route(w, 0, 0, RTPROT_STATIC, 254, kOpts.metric);
    f.nhid = 5;
    f.nexthops = *k.expand(5);
    k.add(f);
  }
  for (int i = 0, n = *rc::gen::inRange(0, 4); i < n; ++i) {
    Route r = random_route(w, *rc::gen::arbitrary<size_t>(), 0, RTPROT_BGP, kOpts.table, kOpts.metric);
    r.nhid = *rc::gen::arbitrary<bool>() ? base + 7 : base + 9;
    r.nexthops = *k.expand(r.nhid);
    if (!k.routes.count(ModelKernel::key(r))) k.add(r);
  }
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
  const auto foreign_objects = k.foreign_objects();

  PlanOptions o = kOpts;
  o.nexthop_objects = objects;
  Plan plan(o);
  if (recursive) {
    plan.set_resolver(&res);
    (void)res.apply(igp_route(RTM_NEWROUTE, {1}));
  }
  for (const auto& [id, nh] : k.objects) plan.kernel_has(nh);
  for (const auto& [key, r] : k.routes) plan.kernel_has(r);
  std::map<net::Prefix, Want> wanted;
  auto refuse_rate = *rc::gen::inRange(0, 50);
  auto refuse = [&](const Request&) { return *rc::gen::inRange(0, 100) < refuse_rate ? -ENOBUFS : 0; };

  for (int step = 0, n = *rc::gen::inRange(1, 60); step < n; ++step) {
    switch (*rc::gen::inRange(0, recursive ? 11 : 9)) {
      case 9:
      case 10: {  // the IGP route changes: another link, two, or none
        const int how = *rc::gen::inRange(0, 5);
        std::vector<uint32_t> links;
        if (how == 0) {
          (void)res.apply(igp_route(RTM_DELROUTE, {}));
        } else {
          links.push_back(*rc::gen::inRange(1u, 4u));
          if (how == 1) links.push_back(links[0] % 3 + 1);
          (void)res.apply(igp_route(RTM_NEWROUTE, links));
        }
        plan.interfaces_changed();
        break;
      }
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
      case 4: {  // a link goes down or up (or down and up again before the plan hears), an address comes or goes
        uint32_t i = *rc::gen::inRange(1u, 5u);
        bool up = *rc::gen::arbitrary<bool>();
        std::vector<uint32_t> went_down;
        if (*rc::gen::arbitrary<bool>()) {
          (void)ifs.apply(Message{Header{RTM_NEWLINK, 0, 0, 0}, Link{i, up ? kUp : uint32_t{IFF_UP}, "eth"}});
          if (!up) went_down.push_back(i);
        } else {
          auto a = net::IpAddress::v4(0x0a000001u | (i << 8));
          uint16_t type = up ? RTM_NEWADDR : RTM_DELADDR;
          (void)ifs.apply(Message{Header{type, 0, 0, 0},
                                  Address{i, 24, 0, a, a}});
        }
        if (!went_down.empty()) {
          // The kernel removes the objects on a link that goes down, and
          // the routes through it, without a word (only ours here, so the
          // foreign ones can be compared at the end).
          std::vector<uint32_t> flushed;
          for (const auto& [id, nh] : k.objects)
            if (nh.ifindex == i && nh.group.empty() && ModelKernel::ours(nh)) flushed.push_back(id);
          for (uint32_t id : flushed)
            if (k.objects.count(id)) k.remove_object(id);
          std::erase_if(k.routes, [&](const auto& kv) {
            const Route& r = kv.second;
            // (a group replaced in place since the route came: its members now)
            const auto now = r.nhid != 0 ? k.expand(r.nhid) : std::nullopt;
            const auto& hops = now ? *now : r.nexthops;
            return r.protocol == kOpts.protocol && r.table == kOpts.table && r.metric == kOpts.metric &&
                   std::any_of(hops.begin(), hops.end(), [&](const NextHop& h) { return h.ifindex == i; });
          });
          if (*rc::gen::inRange(0, 3) == 0)  // and up again before the plan hears of either
            (void)ifs.apply(Message{Header{RTM_NEWLINK, 0, 0, 0}, Link{i, kUp, "eth"}});
        }
        plan.links_went_down(went_down);
        plan.interfaces_changed(ifs);
        break;
      }
      case 8: {  // the kernel removes an object of ours (its link went), and the routes through it
        std::vector<uint32_t> ids;
        for (const auto& [id, nh] : k.objects)
          if (ModelKernel::ours(nh)) ids.push_back(id);
        if (ids.empty()) break;
        uint32_t id = ids[*rc::gen::inRange<size_t>(0, ids.size())];
        k.remove_object(id);
        plan.nexthop_gone(id);
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
  RC_ASSERT(k.foreign_objects() == foreign_objects);
  // Objects: every route of ours refers to one, none of ours is unused;
  // without: none is left.
  size_t our_objects = k.objects.size() - foreign_objects.size();
  RC_ASSERT(k.unused_objects() == 0u);
  RC_ASSERT(plan.counts().nexthop_objects == our_objects);
  if (!objects) RC_ASSERT(our_objects == 0u);
  for (const auto& [key, r] : k.routes)
    if (r.protocol == kOpts.protocol && r.table == kOpts.table && r.metric == kOpts.metric)
      RC_ASSERT((r.nhid != 0) == (objects && r.type == RTN_UNICAST));

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
        else if (recursive)
          for (const NextHop& h : res.resolve(g.address, g.via_ifindex, ifs).hops) expect.push_back(h);
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
      auto got = have->nhid != 0 ? *k.expand(have->nhid) : have->nexthops;
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

RC_GTEST_PROP(Plan, ModelKernelEndsEqualToTheWantedRoutes, ()) { model_kernel_property(false); }

RC_GTEST_PROP(Plan, ModelKernelEndsEqualToTheWantedRoutesWithNexthopObjects, ()) { model_kernel_property(true); }

// The same with gateways that resolve through an IGP route that changes
// (its next hop's group replaced in place, with objects).
RC_GTEST_PROP(Plan, RecursiveRoutesEndEqualToTheResolvedGateways, ()) { model_kernel_property(false, true); }

RC_GTEST_PROP(Plan, RecursiveRoutesEndEqualToTheResolvedGatewaysWithNexthopObjects, ()) {
  model_kernel_property(true, true);
}

// The restarting speaker (RFC 4724 section 4.1) against the model kernel:
// routes of ours from an earlier run, both families deferred, random
// wishes while deferred (nothing reaches the kernel), then released:
// the kernel ends equal to the last wishes, each prefix had at most one
// route request, and a route found exactly as it is last wished (through
// a gateway, without objects) had none.
void restart_deferral_property(bool objects) {
  const World w = world();
  Interfaces ifs = three_links();
  ModelKernel k;
  for (int i = 0, n = *rc::gen::inRange(0, 10); i < n; ++i) {
    auto r = random_route(w, *rc::gen::arbitrary<size_t>(), *rc::gen::inRange<size_t>(0, 6), RTPROT_BGP, kOpts.table,
                          kOpts.metric);
    r.nexthops[0].ifindex = (r.nexthops[0].gateway.v4_value() >> 8 & 0xff);  // 10.0.i.x on link i
    if (!k.routes.count(ModelKernel::key(r))) k.add(r);
  }
  const auto found = k.routes;
  PlanOptions o = kOpts;
  o.nexthop_objects = objects;
  Plan plan(o);
  for (const auto& [key, r] : k.routes) plan.kernel_has(r);
  plan.defer(net::IpFamily::V4);
  plan.defer(net::IpFamily::V6);
  std::map<net::Prefix, Want> wanted;
  for (int step = 0, n = *rc::gen::inRange(1, 40); step < n; ++step) {
    auto p = w.prefixes[*rc::gen::inRange<size_t>(0, w.prefixes.size())];
    if (*rc::gen::inRange(0, 4) == 0) {
      wanted.erase(p);
      plan.unwant(p);
    } else {
      Want want{{Gateway{w.gateways[*rc::gen::inRange<size_t>(0, 6)], 0, {}}}, false};
      wanted[p] = want;
      plan.want(p, want);
    }
    if (*rc::gen::inRange(0, 4) == 0) pump(plan, ifs, k);
    RC_ASSERT(k.routes == found);  // deferred: nothing sent
  }
  plan.release(net::IpFamily::V4);
  plan.release(net::IpFamily::V6);
  std::map<net::Prefix, int> requests;
  for (int i = 0; i < 50 && !plan.idle(); ++i) {
    std::vector<Request> out;
    plan.next(ifs, 7, out);
    for (const Request& r : out) {
      if (!r.object) ++requests[r.route.dst];
      plan.answer(r.seq, k.apply(to_message(r)));
    }
  }
  RC_ASSERT(plan.idle());
  for (const auto& [p, n] : requests) RC_ASSERT(n == 1);
  for (const net::Prefix& p : w.prefixes) {
    const Route* have = k.ours(p);
    auto it = wanted.find(p);
    std::optional<NextHop> expect;
    if (it != wanted.end())
      if (auto ifindex = ifs.resolve(it->second.gateways[0].address, 0))
        expect = NextHop{true, it->second.gateways[0].address, *ifindex, 0};
    if (!expect) {
      RC_ASSERT(have == nullptr);
      continue;
    }
    RC_ASSERT(have != nullptr);
    RC_ASSERT(have->nexthops.size() == 1u);
    RC_ASSERT(have->nexthops[0].gateway == expect->gateway);
    auto was = found.find({kOpts.table, p, kOpts.metric});
    if (!objects && was != found.end() && was->second.nexthops[0].gateway == expect->gateway &&
        was->second.nexthops[0].ifindex == expect->ifindex)
      RC_ASSERT(requests.count(p) == 0u);  // unchanged: untouched
  }
}

RC_GTEST_PROP(Plan, RestartDeferralTouchesOnlyWhatDiffers, ()) { restart_deferral_property(false); }

RC_GTEST_PROP(Plan, RestartDeferralTouchesOnlyWhatDiffersWithNexthopObjects, ()) { restart_deferral_property(true); }

}  // namespace
}  // namespace petrel::fib
