// The table's half of next-hop tracking (table/nexthop.h): eligibility when
// a route enters, the interior cost at best-path step e, bulk
// re-evaluation (Table::nexthops_changed), the reads (nexthop_report,
// RouteView); a property test against a model that chooses every prefix's
// best from scratch.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "table/nexthop.h"
#include "table/table.h"
#include "tests/table/attrs_testing.h"
#include "tests/table/naive_best_path.h"

namespace petrel::table {
namespace {

using codec::NlriPrefix;

constexpr FamilyIndex kV4 = 0;  // codec::kKnownFamilyList order
constexpr FamilyIndex kV6 = 1;

net::IpAddress A(const char* s) { return *net::IpAddress::parse(s); }
net::Prefix P(const char* s) { return *net::Prefix::parse(s); }
NlriPrefix N(const char* s) { return NlriPrefix{P(s), 0}; }

// The tests' resolver: a next hop's state from a map (resolved at cost 0
// when absent), each question counted.
class TestResolver : public NexthopResolver {
 public:
  NexthopState resolve(const net::IpAddress& nh) const override {
    std::lock_guard lock(mu_);
    ++asked_[nh];
    auto it = states_.find(nh);
    return it == states_.end() ? NexthopState{} : it->second;
  }
  // Sets the state the resolver gives and returns the update for the table.
  NexthopUpdate set(const net::IpAddress& nh, NexthopState s) {
    std::lock_guard lock(mu_);
    states_[nh] = s;
    return {nh, s};
  }
  int asked(const net::IpAddress& nh) const {
    std::lock_guard lock(mu_);
    auto it = asked_.find(nh);
    return it == asked_.end() ? 0 : it->second;
  }

 private:
  mutable std::mutex mu_;
  std::map<net::IpAddress, NexthopState> states_;
  mutable std::map<net::IpAddress, int> asked_;
};

// An IPv4 route's set: AS_PATH of `len` ASes from `first_as`, NEXT_HOP nh.
codec::AttributeSet v4_set(const net::IpAddress& nh, uint32_t len = 1, uint32_t med = 0, uint32_t first_as = 65001) {
  std::vector<uint32_t> path;
  for (uint32_t i = 0; i < len; ++i) path.push_back(first_as + i);
  return codec::AttributeSet::from(testing::attrs_of(testing::sequence(path), [&](codec::PathAttributes& a) {
    a.next_hop = nh;
    if (!len) a.as_path = codec::AsPath{};
    if (med) a.med = med;
  }));
}

// A set with MP_REACH_NLRI's next hop (family f): IPv6, or RFC 8950's
// IPv4 over IPv6.
codec::AttributeSet mp_set(codec::Family f, const net::IpAddress& global, std::optional<net::IpAddress> ll = {}) {
  codec::PathAttributes a;
  a.origin = codec::Origin::kIgp;
  codec::AsSegment seg{codec::SegmentType::kAsSequence, {65001}};
  a.as_path = codec::AsPath{{seg}};
  a.mp_family = f;
  a.mp_next_hop = codec::NextHop{global, ll};
  return codec::AttributeSet::from(a);
}

using testing::peer_info;

TableOptions options(size_t shards, const NexthopResolver* r, bool always_compare_med = false) {
  TableOptions o;
  o.shards = shards;
  o.nexthops = r;
  o.best.always_compare_med = always_compare_med;
  return o;
}

struct Fixture {
  TestResolver resolver;
  Table table;
  Fixture() : table(options(4, &resolver)) {}
  // The best route's slot, -1 for none, and whether the route of `slot`
  // is eligible (its next hop resolves).
  int best(FamilyIndex f, const char* p) {
    int out = -1;
    table.lookup(f, P(p), [&](const RouteView& v, bool is_best) {
      if (is_best) out = v.slot;
    });
    return out;
  }
  std::optional<RouteView> route(FamilyIndex f, const char* p, uint16_t slot) {
    std::optional<RouteView> out;
    table.lookup(f, P(p), [&](const RouteView& v, bool) {
      if (v.slot == slot) out = v;
    });
    return out;
  }
};

TEST(Nexthop, UnresolvedNextHopMakesTheRouteIneligibleOnInsert) {
  Fixture t;
  const auto gone = A("192.0.2.1"), fine = A("192.0.2.2");
  t.resolver.set(gone, {false, 0});
  const uint16_t p1 = *t.table.add_peer(peer_info(1)), p2 = *t.table.add_peer(peer_info(2));
  const auto short_path = v4_set(gone, 1), long_path = v4_set(fine, 3);
  t.table.apply(p1, kV4, &short_path, std::vector{N("10.0.0.0/8"), N("10.1.0.0/16")}, {});
  // Only an ineligible route: in the Adj-RIB-In, no best.
  EXPECT_EQ(t.best(kV4, "10.0.0.0/8"), -1);
  ASSERT_TRUE(t.route(kV4, "10.0.0.0/8", p1));
  EXPECT_FALSE(t.route(kV4, "10.0.0.0/8", p1)->nexthop_resolved);
  EXPECT_FALSE(t.table.eligible(*t.route(kV4, "10.0.0.0/8", p1)));
  // The longer path through a resolved next hop is the best.
  t.table.apply(p2, kV4, &long_path, std::vector{N("10.0.0.0/8")}, {});
  EXPECT_EQ(t.best(kV4, "10.0.0.0/8"), p2);
  EXPECT_TRUE(t.route(kV4, "10.0.0.0/8", p2)->nexthop_resolved);
  // Asked once per next hop, not per route nor per set.
  const auto other_set = v4_set(gone, 2);
  t.table.apply(p1, kV4, &other_set, std::vector{N("10.2.0.0/16"), N("10.3.0.0/16")}, {});
  EXPECT_EQ(t.resolver.asked(gone), 1);
  EXPECT_EQ(t.resolver.asked(fine), 1);
  const NexthopReport r = t.table.nexthop_report();
  ASSERT_EQ(r.nexthops.size(), 2u);
  EXPECT_EQ(r.nexthops[0].address, gone);
  EXPECT_FALSE(r.nexthops[0].state.resolved);
  EXPECT_EQ(r.nexthops[0].routes, 4u);
  EXPECT_EQ(r.nexthops[1].routes, 1u);
  EXPECT_EQ(r.ineligible_routes, 4u);
}

// A follower's view: the best slot per prefix, from the journals.
std::map<net::Prefix, int> follow(const Table& t, Follower& fo, std::map<net::Prefix, int>& v) {
  t.read(fo, 100000, [&](const FollowEvent& ev) {
    if (ev.change.family == UINT8_MAX) return;
    v[ev.change.prefix] = ev.best ? ev.best->slot : -1;
  });
  return v;
}

TEST(Nexthop, ChangeMovesTheBestToTheAlternativeAndBack) {
  Fixture t;
  const auto nh1 = A("192.0.2.1"), nh2 = A("192.0.2.2");
  const uint16_t p1 = *t.table.add_peer(peer_info(1)), p2 = *t.table.add_peer(peer_info(2));
  const auto via1 = v4_set(nh1, 1), via2 = v4_set(nh2, 2);
  const std::vector prefixes{N("10.0.0.0/8"), N("10.1.0.0/16"), N("10.2.0.0/16")};
  t.table.apply(p1, kV4, &via1, prefixes, {});
  t.table.apply(p2, kV4, &via2, prefixes, {});
  const auto other = v4_set(nh2, 1, 0, 65100);  // another prefix, nh2's only
  t.table.apply(p2, kV4, &other, std::vector{N("172.16.0.0/12")}, {});
  EXPECT_EQ(t.best(kV4, "10.1.0.0/16"), p1);
  Follower fo = t.table.follow();
  std::map<net::Prefix, int> seen;
  follow(t.table, fo, seen);

  // nh1 goes: its three routes are ineligible, the best moves to p2, and
  // each of the three prefixes is journalled (not 172.16/12).
  std::vector<NexthopUpdate> down{t.resolver.set(nh1, {false, 0})};
  EXPECT_EQ(t.table.nexthops_changed(down), 3u);
  size_t events = t.table.read(fo, 100000, [&](const FollowEvent& ev) {
    EXPECT_NE(ev.change.prefix, P("172.16.0.0/12"));
    EXPECT_TRUE(ev.change.best_changed);
    seen[ev.change.prefix] = ev.best ? ev.best->slot : -1;
  });
  EXPECT_EQ(events, 3u);
  for (const auto& n : prefixes) EXPECT_EQ(seen[n.prefix], p2);
  EXPECT_EQ(t.table.peer_best(p1, kV4), 0u);
  EXPECT_EQ(t.table.peer_best(p2, kV4), 4u);
  EXPECT_EQ(t.table.nexthop_report().ineligible_routes, 3u);
  // The same state again changes nothing.
  EXPECT_EQ(t.table.nexthops_changed(down), 0u);
  EXPECT_EQ(t.table.read(fo, 100000, [](const FollowEvent&) {}), 0u);

  // It comes back.
  std::vector<NexthopUpdate> up{t.resolver.set(nh1, {true, 0})};
  EXPECT_EQ(t.table.nexthops_changed(up), 3u);
  follow(t.table, fo, seen);
  for (const auto& n : prefixes) EXPECT_EQ(seen[n.prefix], p1);
  EXPECT_EQ(seen[P("172.16.0.0/12")], p2);
  EXPECT_EQ(t.table.peer_best(p1, kV4), 3u);
  EXPECT_EQ(t.table.nexthop_report().ineligible_routes, 0u);
  // A next hop the table does not hold: nothing.
  std::vector<NexthopUpdate> unknown{{A("198.51.100.1"), {false, 0}}};
  EXPECT_EQ(t.table.nexthops_changed(unknown), 0u);
}

TEST(Nexthop, InteriorCostDecidesStepE) {
  Fixture t;
  const auto nh1 = A("192.0.2.1"), nh2 = A("192.0.2.2");
  t.resolver.set(nh1, {true, 20});
  t.resolver.set(nh2, {true, 10});
  // Tied up to step d (two external peers, neighbouring ASes differ so MED
  // is not compared); p1 has the lower router ID, but nh2 is cheaper.
  const uint16_t p1 = *t.table.add_peer(peer_info(1)), p2 = *t.table.add_peer(peer_info(2));
  const auto via1 = v4_set(nh1, 2, 0, 65001), via2 = v4_set(nh2, 2, 0, 65002);
  t.table.apply(p1, kV4, &via1, std::vector{N("10.0.0.0/8")}, {});
  t.table.apply(p2, kV4, &via2, std::vector{N("10.0.0.0/8")}, {});
  EXPECT_EQ(t.best(kV4, "10.0.0.0/8"), p2);
  const RouteView r1 = *t.route(kV4, "10.0.0.0/8", p1), r2 = *t.route(kV4, "10.0.0.0/8", p2);
  EXPECT_EQ(r1.igp_cost, 20u);
  EXPECT_EQ(r2.igp_cost, 10u);
  EXPECT_EQ(compare_pair(t.table.candidate_of(r2), t.table.candidate_of(r1), t.table.best_path_options()),
            Decision::kIgpCost);
  // nh2's cost rises: no route's eligibility changes (0), but the best
  // moves (and is journalled).
  Follower fo = t.table.follow();
  std::map<net::Prefix, int> seen;
  follow(t.table, fo, seen);
  std::vector<NexthopUpdate> dearer{t.resolver.set(nh2, {true, 30})};
  EXPECT_EQ(t.table.nexthops_changed(dearer), 0u);
  EXPECT_EQ(t.best(kV4, "10.0.0.0/8"), p1);
  follow(t.table, fo, seen);
  EXPECT_EQ(seen[P("10.0.0.0/8")], p1);
  // Equal costs: the router ID decides (p1).
  std::vector<NexthopUpdate> equal{t.resolver.set(nh2, {true, 20})};
  t.table.nexthops_changed(equal);
  EXPECT_EQ(t.best(kV4, "10.0.0.0/8"), p1);
}

TEST(Nexthop, RoutesThisRouterOriginatesAreAlwaysEligible) {
  Fixture t;
  const auto gone = A("192.0.2.9");
  t.resolver.set(gone, {false, 0});
  PeerInfo local = peer_info(0);
  local.local = true;
  const uint16_t me = *t.table.add_peer(local), p1 = *t.table.add_peer(peer_info(1));
  const auto set = v4_set(gone, 0);
  t.table.apply(me, kV4, &set, std::vector{N("10.0.0.0/8")}, {});
  EXPECT_EQ(t.best(kV4, "10.0.0.0/8"), me);
  EXPECT_TRUE(t.route(kV4, "10.0.0.0/8", me)->nexthop_resolved);
  EXPECT_EQ(t.resolver.asked(gone), 0);  // not even asked
  // The same set from a peer is ineligible; the local route is untouched
  // by a change.
  t.table.apply(p1, kV4, &set, std::vector{N("10.0.0.0/8")}, {});
  EXPECT_FALSE(t.route(kV4, "10.0.0.0/8", p1)->nexthop_resolved);
  std::vector<NexthopUpdate> still{t.resolver.set(gone, {false, 5})};
  EXPECT_EQ(t.table.nexthops_changed(still), 0u);
  EXPECT_TRUE(t.route(kV4, "10.0.0.0/8", me)->nexthop_resolved);
  EXPECT_EQ(t.route(kV4, "10.0.0.0/8", me)->igp_cost, 0u);
  EXPECT_EQ(t.best(kV4, "10.0.0.0/8"), me);
}

// RFC 2545: a 32-octet next hop (global and link-local): the global one
// not resolving leaves the route eligible (the link-local one is on the
// session's link), at cost 0. Without the link-local one it is not.
TEST(Nexthop, LinkLocalSecondNextHopCountsAsResolved) {
  Fixture t;
  const auto global = A("2001:db8::1"), ll = A("fe80::1");
  t.resolver.set(global, {false, 0});
  const uint16_t p1 = *t.table.add_peer(peer_info(1)), p2 = *t.table.add_peer(peer_info(2));
  const auto with_ll = mp_set(codec::kIpv6Unicast, global, ll), without = mp_set(codec::kIpv6Unicast, global);
  t.table.apply(p1, kV6, &with_ll, std::vector{N("2001:db8:1::/48")}, {});
  t.table.apply(p2, kV6, &without, std::vector{N("2001:db8:2::/48")}, {});
  EXPECT_TRUE(t.route(kV6, "2001:db8:1::/48", p1)->nexthop_resolved);
  EXPECT_FALSE(t.route(kV6, "2001:db8:2::/48", p2)->nexthop_resolved);
  EXPECT_EQ(t.resolver.asked(global), 2);  // once for each form
  const NexthopReport r = t.table.nexthop_report();
  ASSERT_EQ(r.nexthops.size(), 2u);
  EXPECT_FALSE(r.nexthops[0].link_local);
  EXPECT_FALSE(r.nexthops[0].state.resolved);
  EXPECT_TRUE(r.nexthops[1].link_local);
  EXPECT_TRUE(r.nexthops[1].state.resolved);
  // The global address resolves at cost 7: both routes use the cost.
  std::vector<NexthopUpdate> up{t.resolver.set(global, {true, 7})};
  EXPECT_EQ(t.table.nexthops_changed(up), 1u);
  EXPECT_EQ(t.route(kV6, "2001:db8:1::/48", p1)->igp_cost, 7u);
  EXPECT_TRUE(t.route(kV6, "2001:db8:2::/48", p2)->nexthop_resolved);
}

// RFC 8950: an IPv4 route with an IPv6 next hop is resolved by that.
TEST(Nexthop, Ipv4RouteOverIpv6NextHop) {
  Fixture t;
  const auto v6 = A("2001:db8::2");
  t.resolver.set(v6, {false, 0});
  const uint16_t p1 = *t.table.add_peer(peer_info(1));
  const auto set = mp_set(codec::kIpv4Unicast, v6);
  t.table.apply(p1, kV4, &set, std::vector{N("10.0.0.0/8")}, {});
  EXPECT_FALSE(t.route(kV4, "10.0.0.0/8", p1)->nexthop_resolved);
  EXPECT_EQ(t.resolver.asked(v6), 1);
}

// One UPDATE with IPv4 NLRI (NEXT_HOP) and IPv6 MP_REACH_NLRI: its set
// names two next hops, for two families, and is not tracked (neither
// family's routes judged by the other's next hop): both count as resolved.
TEST(Nexthop, SetWithNextHopAndMpReachIsNotTracked) {
  Fixture t;
  const auto v4 = A("192.0.2.1"), v6 = A("2001:db8::2");
  t.resolver.set(v4, {false, 0});
  t.resolver.set(v6, {false, 0});
  const uint16_t p1 = *t.table.add_peer(peer_info(1));
  codec::PathAttributes a = mp_set(codec::kIpv6Unicast, v6).decode();
  a.next_hop = v4;
  const auto set = codec::AttributeSet::from(a);
  t.table.apply(p1, kV4, &set, std::vector{N("10.0.0.0/8")}, {});
  t.table.apply(p1, kV6, &set, std::vector{N("2001:db8:1::/48")}, {});
  EXPECT_TRUE(t.route(kV4, "10.0.0.0/8", p1)->nexthop_resolved);
  EXPECT_TRUE(t.route(kV6, "2001:db8:1::/48", p1)->nexthop_resolved);
  EXPECT_EQ(t.resolver.asked(v4), 0);
  EXPECT_EQ(t.resolver.asked(v6), 0);
  // Either alone is tracked.
  const auto only_v4 = v4_set(v4);
  t.table.apply(p1, kV4, &only_v4, std::vector{N("10.1.0.0/16")}, {});
  EXPECT_FALSE(t.route(kV4, "10.1.0.0/16", p1)->nexthop_resolved);
}

// The registry follows the sets: when the last route with a next hop
// goes, so does its entry, and the resolver is asked again when it comes
// back.
TEST(Nexthop, RegistryForgetsNextHopsNoRouteUses) {
  Fixture t;
  const auto nh = A("192.0.2.1");
  const uint16_t p1 = *t.table.add_peer(peer_info(1));
  const auto set = v4_set(nh);
  t.table.apply(p1, kV4, &set, std::vector{N("10.0.0.0/8")}, {});
  EXPECT_EQ(t.table.nexthop_report().nexthops.size(), 1u);
  t.table.apply(p1, kV4, nullptr, {}, std::vector{N("10.0.0.0/8")});
  EXPECT_TRUE(t.table.nexthop_report().nexthops.empty());
  t.resolver.set(nh, {false, 0});
  t.table.apply(p1, kV4, &set, std::vector{N("10.0.0.0/8")}, {});
  EXPECT_EQ(t.resolver.asked(nh), 2);
  EXPECT_FALSE(t.route(kV4, "10.0.0.0/8", p1)->nexthop_resolved);
  EXPECT_EQ(t.table.remove_peer(p1), 1u);
  EXPECT_TRUE(t.table.nexthop_report().nexthops.empty());
}

// Without a resolver nothing changes: every route eligible at cost 0.
TEST(Nexthop, WithoutResolverNothingChanges) {
  Table t(options(2, nullptr));
  const uint16_t p1 = *t.add_peer(peer_info(1));
  const auto set = v4_set(A("192.0.2.1"));
  t.apply(p1, kV4, &set, std::vector{N("10.0.0.0/8")}, {});
  std::vector<NexthopUpdate> down{{A("192.0.2.1"), {false, 0}}};
  EXPECT_EQ(t.nexthops_changed(down), 0u);
  EXPECT_FALSE(t.tracks_nexthops());
  EXPECT_TRUE(t.nexthop_report().nexthops.empty());
  t.lookup(kV4, P("10.0.0.0/8"), [&](const RouteView& v, bool best) {
    EXPECT_TRUE(best);
    EXPECT_TRUE(v.nexthop_resolved);
    EXPECT_EQ(v.igp_cost, 0u);
  });
}

// nexthops_changed from one thread while another writes routes through
// the same next hops: once both stop, every route's flag is its next
// hop's state and each prefix's best is the eligible route chosen from
// scratch (the resolver gives the new state before the table is told, as
// table/nexthop.h asks).
TEST(Nexthop, ChangesRacingWritersLeaveTheTableConsistent) {
  Fixture t;
  const auto nh1 = A("192.0.2.1"), nh2 = A("192.0.2.2");
  const uint16_t p1 = *t.table.add_peer(peer_info(1)), p2 = *t.table.add_peer(peer_info(2));
  const auto via1 = v4_set(nh1, 1), via2 = v4_set(nh2, 2);
  std::vector<NlriPrefix> prefixes;
  for (uint32_t i = 0; i < 200; ++i) prefixes.push_back({*net::Prefix::make(net::IpAddress::v4(0x0A000000 + (i << 8)), 24), 0});
  t.table.apply(p2, kV4, &via2, prefixes, {});
  std::atomic<bool> stop{false};
  std::thread changer([&] {
    for (int i = 0; i < 300 && !stop.load(); ++i) {
      std::vector<NexthopUpdate> u{t.resolver.set(nh1, {i % 2 == 0 ? false : true, static_cast<uint32_t>(i % 3)})};
      t.table.nexthops_changed(u);
    }
  });
  for (int round = 0; round < 50; ++round) {
    t.table.apply(p1, kV4, &via1, prefixes, {});
    if (round % 3 == 2) t.table.apply(p1, kV4, nullptr, {}, prefixes);
  }
  t.table.apply(p1, kV4, &via1, prefixes, {});
  stop = true;
  changer.join();
  const bool resolved = t.resolver.resolve(nh1).resolved;
  for (const NlriPrefix& n : prefixes) {
    t.table.lookup(kV4, n.prefix, [&](const RouteView& v, bool is_best) {
      if (v.slot == p1) {
        EXPECT_EQ(v.nexthop_resolved, resolved);
      }
      if (is_best) {
        EXPECT_EQ(v.slot, resolved ? p1 : p2);
      }
    });
  }
  EXPECT_EQ(t.table.peer_best(p1, kV4), resolved ? prefixes.size() : 0u);
}

// ---- property: the table against a model that chooses from scratch

constexpr size_t kPeers = 3, kPrefixes = 3, kNexthops = 4;

struct ModelRoute {
  size_t nexthop;
  uint32_t path_len, med, neighbour;
};

struct Op {
  enum Kind : uint8_t { kAnnounce, kWithdraw, kChange } kind;
  size_t peer, prefix;
  ModelRoute route;
  NexthopState state;  // kChange: for route.nexthop
};

rc::Gen<Op> gen_op() {
  return rc::gen::apply(
      [](uint8_t kind, size_t peer, size_t prefix, size_t nh, uint32_t len, uint32_t med, uint32_t neighbour,
         bool resolved, uint32_t cost) {
        Op op{};
        op.kind = kind < 5 ? Op::kAnnounce : kind < 7 ? Op::kWithdraw : Op::kChange;
        op.peer = peer;
        op.prefix = prefix;
        op.route = {nh, len, med, neighbour};
        op.state = {resolved, cost};
        return op;
      },
      rc::gen::inRange<uint8_t>(0, 10), rc::gen::inRange<size_t>(0, kPeers), rc::gen::inRange<size_t>(0, kPrefixes),
      rc::gen::inRange<size_t>(0, kNexthops), rc::gen::inRange<uint32_t>(1, 3), rc::gen::inRange<uint32_t>(0, 3),
      rc::gen::inRange<uint32_t>(1, 3), rc::gen::element(true, true, false), rc::gen::inRange<uint32_t>(0, 3));
}

net::IpAddress nexthop_address(size_t i) { return net::IpAddress::v4(0xC0000201 + static_cast<uint32_t>(i)); }

RC_GTEST_PROP(NexthopProperty, TableMatchesChoosingFromScratch, ()) {
  const auto ops = *rc::gen::container<std::vector<Op>>(gen_op());
  const bool always_compare_med = *rc::gen::element(false, true);
  TestResolver resolver;
  for (size_t i = 0; i < kNexthops; ++i)
    resolver.set(nexthop_address(i), {*rc::gen::element(true, false), *rc::gen::inRange<uint32_t>(0, 3)});
  Table t(options(2, &resolver, always_compare_med));
  std::vector<uint16_t> slots;
  for (size_t i = 0; i < kPeers; ++i) slots.push_back(*t.add_peer(peer_info(static_cast<uint32_t>(i + 1), i == 2)));
  const std::vector<net::Prefix> prefixes{P("10.0.0.0/8"), P("10.1.0.0/16"), P("192.168.0.0/16")};
  std::map<std::pair<size_t, size_t>, ModelRoute> held;  // (prefix, peer)
  std::map<size_t, NexthopState> states;                // what the resolver says
  for (size_t i = 0; i < kNexthops; ++i) states[i] = resolver.resolve(nexthop_address(i));
  Interner model_sets;
  std::vector<AttrsRef> keep;

  for (const Op& op : ops) {
    const NlriPrefix n{prefixes[op.prefix], 0};
    if (op.kind == Op::kAnnounce) {
      const auto set = v4_set(nexthop_address(op.route.nexthop), op.route.path_len, op.route.med,
                              65000 + op.route.neighbour * 10);
      t.apply(slots[op.peer], kV4, &set, std::vector{n}, {});
      held[{op.prefix, op.peer}] = op.route;
    } else if (op.kind == Op::kWithdraw) {
      t.apply(slots[op.peer], kV4, nullptr, {}, std::vector{n});
      held.erase({op.prefix, op.peer});
    } else {
      std::vector<NexthopUpdate> u{resolver.set(nexthop_address(op.route.nexthop), op.state)};
      states[op.route.nexthop] = op.state;
      t.nexthops_changed(u);
    }
    // Every prefix: the table's best is the model's.
    for (size_t p = 0; p < kPrefixes; ++p) {
      std::vector<Candidate> cands;
      for (size_t peer = 0; peer < kPeers; ++peer) {
        auto it = held.find({p, peer});
        if (it == held.end()) continue;
        const ModelRoute& r = it->second;
        const auto set = v4_set(nexthop_address(r.nexthop), r.path_len, r.med, 65000 + r.neighbour * 10);
        Attrs* a = model_sets.intern(set);
        keep.emplace_back(&model_sets, a);
        const NexthopState s = states[r.nexthop];
        cands.push_back(Candidate{a, &t.peer(slots[peer]), 0, slots[peer], s.resolved, s.cost});
      }
      const int want = testing::naive_select_best(cands, t.best_path_options());
      int got = -1;
      t.lookup(kV4, prefixes[p], [&](const RouteView& v, bool is_best) {
        if (is_best) got = v.slot;
        const NexthopState s = states[held.at({p, static_cast<size_t>(v.slot - slots[0])}).nexthop];
        RC_ASSERT(v.nexthop_resolved == s.resolved);
        RC_ASSERT(v.igp_cost == s.cost);
      });
      RC_ASSERT(got == (want < 0 ? -1 : static_cast<int>(cands[static_cast<size_t>(want)].slot)));
    }
  }
}

}  // namespace
}  // namespace petrel::table
