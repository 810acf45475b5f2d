// Multipath (table/multipath.h): which routes of a prefix are as good as
// the best. One test per rule of the header (each differing measure keeps
// a route out; the tie-breakers do not), and properties against a model
// that compares the attributes field by field: the set does not depend on
// the order the routes came in, holds the best, and holds exactly the
// routes the model calls equal.
#include "table/multipath.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <array>
#include <functional>
#include <set>
#include <utility>
#include <vector>

#include "tests/table/attrs_testing.h"

namespace petrel::table {
namespace {

using codec::Origin;
using codec::PathAttributes;
using testing::attrs_of;
using testing::sequence;
using testing::Sets;

PeerInfo peer_of(bool internal, uint32_t router_id) {
  PeerInfo p;
  p.address = net::IpAddress::v4(0x0A000000u + router_id);
  p.router_id = router_id;
  p.asn = internal ? 64512 : 65001;
  p.internal = internal;
  return p;
}

// Two routes: `a` the best (router ID 1), `b` from router ID 2 with its
// attributes edited. Whether b is multipath-equal to a.
bool equal_after(const std::function<void(PathAttributes&)>& edit_b, bool b_internal = false,
                 bool a_internal = false) {
  Sets sets;
  const PeerInfo pa = peer_of(a_internal, 1), pb = peer_of(b_internal, 2);
  const Candidate a{sets(attrs_of(sequence({65001, 7}))), &pa, 0, 1};
  const Candidate b{sets(attrs_of(sequence({65001, 7}), edit_b)), &pb, 0, 2};
  const std::array<Candidate, 2> c{a, b};
  EXPECT_EQ(select_best(c, {}), 0);
  const bool eq = multipath_equal(a, b, {});
  EXPECT_EQ(multipath_set(c, 0, {}).size(), eq ? 2u : 1u);
  return eq;
}

TEST(Multipath, EqualAttributesFromTwoRoutersAreEqual) {
  EXPECT_TRUE(equal_after([](PathAttributes&) {}));
  // a different next hop and different communities are what ECMP is for
  EXPECT_TRUE(equal_after([](PathAttributes& p) {
    p.next_hop = net::IpAddress::v4(0xC0000202);
    p.communities = {0xFDE80001};
  }));
  // a different AS path of the same length through the same neighbour
  EXPECT_TRUE(equal_after([](PathAttributes& p) { p.as_path = sequence({65001, 8}); }));
}

TEST(Multipath, EachEarlyStepKeepsARouteOut) {
  EXPECT_FALSE(equal_after([](PathAttributes& p) { p.as_path = sequence({65001, 7, 7}); }));  // a
  EXPECT_FALSE(equal_after([](PathAttributes& p) { p.origin = Origin::kEgp; }));              // b
  EXPECT_FALSE(equal_after([](PathAttributes& p) { p.med = 10; }));                           // c
  EXPECT_FALSE(equal_after([](PathAttributes&) {}, /*b_internal=*/true));                    // d
}

// External routes too (a LOCAL_PREF there is one import policy set): a
// lower one on b makes it no equal of a; the default, as if absent, does.
TEST(Multipath, LocalPreferenceCountsForExternalRoutes) {
  EXPECT_FALSE(equal_after([](PathAttributes& p) { p.local_pref = 50; }));
  EXPECT_TRUE(equal_after([](PathAttributes& p) { p.local_pref = 100; }));
  Sets sets;
  const PeerInfo pa = peer_of(false, 1), pb = peer_of(false, 2);
  const Candidate a{sets(attrs_of(sequence({65001}), [](PathAttributes& p) { p.local_pref = 200; })), &pa, 0, 1};
  const Candidate b{sets(attrs_of(sequence({65001}))), &pb, 0, 2};
  EXPECT_FALSE(multipath_equal(a, b, {}));
}

TEST(Multipath, LocalPreferenceCountsForInternalRoutes) {
  // both internal: a LOCAL_PREF of 200 on b alone would make b the best;
  // an equal one ties
  EXPECT_TRUE(equal_after([](PathAttributes&) {}, true, true));
  Sets sets;
  const PeerInfo pa = peer_of(true, 1), pb = peer_of(true, 2);
  const Candidate a{sets(attrs_of(sequence({65001}), [](PathAttributes& p) { p.local_pref = 200; })), &pa, 0, 1};
  const Candidate b{sets(attrs_of(sequence({65001}), [](PathAttributes& p) { p.local_pref = 100; })), &pb, 0, 2};
  EXPECT_FALSE(multipath_equal(a, b, {}));
}

TEST(Multipath, DifferentNeighbourAsesAreNeverCombined) {
  EXPECT_FALSE(equal_after([](PathAttributes& p) { p.as_path = sequence({65002, 7}); }));
  Sets sets;
  const PeerInfo pa = peer_of(false, 1), pb = peer_of(false, 2);
  const Candidate a{sets(attrs_of(sequence({65001, 7}))), &pa, 0, 1};
  const Candidate b{sets(attrs_of(sequence({65002, 7}))), &pb, 0, 2};
  EXPECT_FALSE(multipath_equal(a, b, BestPathOptions{.always_compare_med = true}));
}

TEST(Multipath, IneligibleAndOriginatedRoutesAreNotCombined) {
  Sets sets;
  PeerInfo pa = peer_of(false, 1), pb = peer_of(false, 2);
  const Candidate a{sets(attrs_of(sequence({65001}))), &pa, 0, 1};
  Candidate b{sets(attrs_of(sequence({65001}))), &pb, 0, 2};
  EXPECT_TRUE(multipath_equal(a, b, {}));
  b.eligible = false;
  EXPECT_FALSE(multipath_equal(a, b, {}));
  b.eligible = true;
  pb.local = true;
  EXPECT_FALSE(multipath_equal(a, b, {}));
  pb.local = false;
  pa.local = true;
  EXPECT_FALSE(multipath_equal(a, b, {}));
  const std::array<Candidate, 2> c{a, b};
  EXPECT_EQ(multipath_set(c, 0, {}), std::vector<size_t>{0});  // the best alone
}

// Step e: a route with a higher interior cost to its next hop is not
// combined with the best; the same cost is.
TEST(Multipath, DifferentInteriorCostsAreNotCombined) {
  Sets sets;
  const PeerInfo pa = peer_of(false, 1), pb = peer_of(false, 2);
  const Attrs* set = sets(attrs_of(sequence({65001, 7})));
  const Candidate a{set, &pa, 0, 1, true, 10};
  Candidate b{set, &pb, 0, 2, true, 20};
  const std::array<Candidate, 2> c{a, b};
  EXPECT_EQ(select_best(c, {}), 0);
  EXPECT_FALSE(multipath_equal(a, b, {}));
  b.cost = 10;
  EXPECT_TRUE(multipath_equal(a, b, {}));
}

TEST(Multipath, NoBestNoSet) {
  EXPECT_TRUE(multipath_set({}, -1, {}).empty());
}

TEST(Multipath, TieBreakersDoNotKeepARouteOut) {
  // two paths from one peer (ADD-PATH), told apart only by path identifier
  Sets sets;
  const PeerInfo p = peer_of(false, 1);
  const Candidate a{sets(attrs_of(sequence({65001}))), &p, 1, 1};
  const Candidate b{sets(attrs_of(sequence({65001}), [](PathAttributes& x) {
                      x.next_hop = net::IpAddress::v4(0xC0000209);
                    })), &p, 2, 1};
  EXPECT_EQ(compare_pair(a, b, {}), Decision::kPathId);
  EXPECT_TRUE(multipath_equal(a, b, {}));
}

// ---- properties

struct RandomRoute {
  uint32_t neighbour = 0, med = 0, local_pref = 100, router_id = 1, path_len = 1, path_id = 0;
  uint8_t origin = 0;
  bool internal = false, eligible = true;
};

rc::Gen<RandomRoute> gen_route() {
  // few values for each measure, so that ties are common
  return rc::gen::map(rc::gen::tuple(rc::gen::inRange<uint32_t>(1, 3), rc::gen::inRange<uint32_t>(0, 2),
                                     rc::gen::inRange<uint32_t>(1, 3), rc::gen::inRange<uint32_t>(1, 6),
                                     rc::gen::inRange<uint32_t>(1, 3), rc::gen::inRange<uint32_t>(0, 2),
                                     rc::gen::inRange<uint8_t>(0, 2), rc::gen::arbitrary<bool>(),
                                     rc::gen::weightedElement<bool>({{1, false}, {6, true}})),
                      [](auto t) {
                        RandomRoute r;
                        std::tie(r.neighbour, r.med, r.local_pref, r.router_id, r.path_len, r.path_id, r.origin,
                                 r.internal, r.eligible) = t;
                        r.local_pref *= 100;
                        return r;
                      });
}

// The model: the rule of multipath.h, field by field.
bool model_equal(const RandomRoute& best, const RandomRoute& r) {
  if (!r.eligible || !best.eligible) return false;
  return r.local_pref == best.local_pref && r.path_len == best.path_len && r.origin == best.origin && r.med == best.med &&
         r.neighbour == best.neighbour && r.internal == best.internal;
}

RC_GTEST_PROP(MultipathProperty, SetIsTheModelsAndDoesNotDependOnOrder, ()) {
  const auto routes = *rc::gen::container<std::vector<RandomRoute>>(*rc::gen::inRange<size_t>(1, 9), gen_route());
  Sets sets;
  std::vector<PeerInfo> peers(routes.size());
  std::vector<Candidate> c;
  for (size_t i = 0; i < routes.size(); ++i) {
    const RandomRoute& r = routes[i];
    peers[i] = peer_of(r.internal, r.router_id);
    std::vector<uint32_t> path(r.path_len, 7);
    path[0] = 65000 + r.neighbour;
    const Attrs* a = sets(attrs_of(sequence(path), [&](PathAttributes& p) {
      p.med = r.med;
      p.local_pref = r.local_pref;
      p.origin = static_cast<Origin>(r.origin);
    }));
    c.push_back(Candidate{a, &peers[i], r.path_id, static_cast<uint32_t>(i), r.eligible});
  }
  const int best = select_best(c, {});
  const auto set = multipath_set(c, best, {});
  if (best < 0) {
    RC_ASSERT(set.empty());
    return;
  }
  RC_ASSERT(std::find(set.begin(), set.end(), static_cast<size_t>(best)) != set.end());
  for (size_t i = 0; i < c.size(); ++i) {
    const bool in = std::find(set.begin(), set.end(), i) != set.end();
    RC_ASSERT(in == (static_cast<int>(i) == best || model_equal(routes[static_cast<size_t>(best)], routes[i])));
  }
  // the same routes (by slot) in any order
  std::set<uint32_t> slots;
  for (size_t i : set) slots.insert(c[i].slot);
  const auto keys = *rc::gen::container<std::vector<uint32_t>>(c.size(), rc::gen::arbitrary<uint32_t>());
  std::vector<size_t> order(c.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return keys[x] < keys[y]; });
  std::vector<Candidate> shuffled;
  for (size_t i : order) shuffled.push_back(c[i]);
  const int best2 = select_best(shuffled, {});
  std::set<uint32_t> slots2;
  for (size_t i : multipath_set(shuffled, best2, {})) slots2.insert(shuffled[i].slot);
  RC_ASSERT(slots == slots2);
}

}  // namespace
}  // namespace petrel::table
