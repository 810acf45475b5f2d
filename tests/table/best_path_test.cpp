// Best-path selection (table/best_path.h), RFC 4271 section 9.1.2 with
// RFC 4456 section 9 and RFC 7911: one test per step of the header's list
// (the step decides when every earlier one ties, even against every later
// one, and does not decide when an earlier step differs), compare_pair
// naming the deciding step, ineligible candidates, the MED cycle of RFC
// 4271's non-transitive step c, and a property that the choice does not
// depend on arrival order.
#include "table/best_path.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <array>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "codec/attribute_set.h"
#include "table/attrs.h"
#include "table/export.h"
#include "tests/table/attrs_testing.h"
#include "tests/table/naive_best_path.h"

namespace petrel::table {
namespace {

using codec::AsPath;
using codec::AsSegment;
using codec::Origin;
using codec::PathAttributes;
using codec::SegmentType;

using testing::attrs_of;
using testing::naive_select_best;
using testing::sequence;
using testing::Sets;

PeerInfo peer(bool internal, uint32_t router_id, uint32_t addr, uint32_t asn) {
  PeerInfo p;
  p.address = net::IpAddress::v4(addr);
  p.router_id = router_id;
  p.asn = asn;
  p.internal = internal;
  return p;
}
PeerInfo ebgp(uint32_t router_id, uint32_t addr, uint32_t asn = 65001) { return peer(false, router_id, addr, asn); }
PeerInfo ibgp(uint32_t router_id, uint32_t addr) { return peer(true, router_id, addr, 64512); }

constexpr uint32_t kAddrLow = 0x0A000001;   // 10.0.0.1
constexpr uint32_t kAddrHigh = 0x0A000002;  // 10.0.0.2

// 0 when `a` is chosen over `b` in both orders, 1 when `b` is, -1 when
// the answer depends on the order (or is neither).
int pick(const Candidate& a, const Candidate& b, const BestPathOptions& o = {}) {
  const std::array<Candidate, 2> ab{a, b}, ba{b, a};
  const int x = select_best(ab, o), y = select_best(ba, o);
  if (x == 0 && y == 1) return 0;
  if (x == 1 && y == 0) return 1;
  return -1;
}

// `w` beats `l` in both orders and compare_pair names `d` (either way
// round: the step is the first where the two differ).
void expect_decides(const Candidate& w, const Candidate& l, Decision d, const BestPathOptions& o = {}) {
  EXPECT_EQ(pick(w, l, o), 0);
  EXPECT_EQ(compare_pair(w, l, o), d) << decision_name(compare_pair(w, l, o));
}

TEST(BestPath, EmptySpanHasNoBest) {
  EXPECT_EQ(select_best({}, {}), -1);
}

TEST(BestPath, OneEligibleCandidateIsTheBest) {
  Sets sets;
  const PeerInfo p = ebgp(1, kAddrLow);
  const Candidate one{sets(attrs_of(sequence({65001}))), &p, 0, 7};
  const std::array<Candidate, 1> c{one};
  EXPECT_EQ(select_best(c, {}), 0);
  Candidate ineligible = one;
  ineligible.eligible = false;
  const std::array<Candidate, 2> c2{ineligible, one};
  EXPECT_EQ(select_best(c2, {}), 1);
}

TEST(BestPath, NoneEligibleHasNoBest) {
  Sets sets;
  const PeerInfo p = ebgp(1, kAddrLow), q = ebgp(2, kAddrHigh);
  const std::array<Candidate, 2> c{Candidate{sets(attrs_of(sequence({65001}))), &p, 0, 1, false},
                                   Candidate{sets(attrs_of(sequence({65001, 2}))), &q, 0, 2, false}};
  EXPECT_EQ(select_best(c, {}), -1);
}

// Step 0: an ineligible candidate takes no part, not even in eliminating
// others (its higher LOCAL_PREF or lower MED must not remove anyone).
TEST(BestPath, IneligibleCandidatesAreSkipped) {
  Sets sets;
  const PeerInfo a = ibgp(1, 0x0A000001), b = ibgp(2, 0x0A000002), c = ibgp(3, 0x0A000003);
  auto lp = [&](uint32_t v) { return sets(attrs_of(sequence({65001}), [&](PathAttributes& p) { p.local_pref = v; })); };
  std::array<Candidate, 3> cands{Candidate{lp(300), &a, 0, 1, false}, Candidate{lp(100), &b, 0, 2},
                                 Candidate{lp(200), &c, 0, 3}};
  EXPECT_EQ(select_best(cands, {}), 2);
  cands[0].eligible = true;
  EXPECT_EQ(select_best(cands, {}), 0);

  // MED: the ineligible route from AS 1 has the lowest MED; B (AS 1) must
  // stay and win over C (AS 2) on router ID. Were B removed, C would win.
  auto med = [&](uint32_t neighbour, uint32_t v) {
    return sets(attrs_of(sequence({neighbour}), [&](PathAttributes& p) { p.med = v; }));
  };
  const PeerInfo x = ebgp(9, 0x0A000009), y = ebgp(1, 0x0A00000A), z = ebgp(2, 0x0A00000B);
  std::array<Candidate, 3> m{Candidate{med(1, 0), &x, 0, 1, false}, Candidate{med(1, 10), &y, 0, 2},
                             Candidate{med(2, 50), &z, 0, 3}};
  EXPECT_EQ(select_best(m, {}), 1);
  m[0].eligible = true;  // now A removes B; A and C are left, C has the lower router ID
  EXPECT_EQ(select_best(m, {}), 2);
}

// Step 1: LOCAL_PREF from an internal peer, higher wins, absent = default.
TEST(BestPath, LocalPrefFromInternalPeerDecides) {
  Sets sets;
  // The loser is better at every later step: shorter path, better origin,
  // lower router ID, lower address, lower slot.
  const PeerInfo pw = ibgp(9, kAddrHigh), pl = ibgp(1, kAddrLow);
  const Candidate w{sets(attrs_of(sequence({65001, 2, 3}), [](PathAttributes& p) {
                      p.local_pref = 200;
                      p.origin = Origin::kIncomplete;
                    })),
                    &pw, 5, 9};
  const Candidate l{sets(attrs_of(sequence({65001}), [](PathAttributes& p) { p.local_pref = 150; })), &pl, 0, 1};
  expect_decides(w, l, Decision::kLocalPref);
  EXPECT_EQ(degree_of_preference(w, {}), 200u);

  // An internal route without LOCAL_PREF has the default.
  const Candidate none{sets(attrs_of(sequence({65001}))), &pl, 0, 1};
  EXPECT_EQ(degree_of_preference(none, {}), 100u);
  EXPECT_EQ(degree_of_preference(none, {.default_local_pref = 120}), 120u);
  const Candidate lp99{sets(attrs_of(sequence({65001, 2, 3}), [](PathAttributes& p) { p.local_pref = 99; })), &pw, 5, 9};
  const Candidate lp101{sets(attrs_of(sequence({65001, 2, 3}), [](PathAttributes& p) { p.local_pref = 101; })), &pw, 5, 9};
  expect_decides(none, lp99, Decision::kLocalPref);
  expect_decides(lp101, none, Decision::kLocalPref);
  // With a default of 102 the route without LOCAL_PREF wins over 101.
  expect_decides(none, lp101, Decision::kLocalPref, {.default_local_pref = 102});
}

// Step 1 for a route from an external peer: the degree of preference is
// local policy's (RFC 4271 9.1.1). The decoder discards a LOCAL_PREF the
// peer sent, so a LOCAL_PREF in the stored set is the one the import
// filter set, and it decides as an internal peer's does. Without one the
// default applies.
TEST(BestPath, LocalPrefSetByImportPolicyOnExternalRouteDecides) {
  Sets sets;
  // The preferred route is worse at every later step: longer path, worse
  // origin, higher router ID, higher address, higher slot.
  const PeerInfo e1 = ebgp(9, kAddrHigh), e2 = ebgp(1, kAddrLow, 65002);
  const Candidate preferred{sets(attrs_of(sequence({65001, 2, 3}), [](PathAttributes& p) {
                              p.local_pref = 200;
                              p.origin = Origin::kIncomplete;
                            })),
                            &e1, 5, 9};
  const Candidate plain{sets(attrs_of(sequence({65002}))), &e2, 0, 1};
  EXPECT_EQ(degree_of_preference(preferred, {}), 200u);
  EXPECT_EQ(degree_of_preference(plain, {}), 100u);
  EXPECT_EQ(degree_of_preference(plain, {.default_local_pref = 77}), 77u);
  expect_decides(preferred, plain, Decision::kLocalPref);
  // A lower one than the default makes the route the last resort.
  const Candidate depref{sets(attrs_of(sequence({65002}), [](PathAttributes& p) { p.local_pref = 50; })), &e2, 0, 1};
  const Candidate longer{sets(attrs_of(sequence({65001, 2, 3, 4}))), &e1, 5, 9};
  expect_decides(longer, depref, Decision::kLocalPref);
  // Equal to the default: as if absent, so the later steps decide.
  const Candidate lp100{sets(attrs_of(sequence({65002}), [](PathAttributes& p) { p.local_pref = 100; })), &e2, 0, 1};
  expect_decides(lp100, longer, Decision::kAsPathLength);

  // External and internal routes meet on the same measure: LOCAL_PREF 150
  // from the internal peer beats the external route without one (step d
  // would have preferred the external one), and loses to one whose import
  // filter set 1000.
  const PeerInfo i = ibgp(1, kAddrLow);
  const Candidate ext{sets(attrs_of(sequence({65001}))), &e1, 0, 1};
  const Candidate ext1000{sets(attrs_of(sequence({65001}), [](PathAttributes& p) { p.local_pref = 1000; })), &e1, 0, 1};
  const Candidate int150{sets(attrs_of(sequence({65001}), [](PathAttributes& p) { p.local_pref = 150; })), &i, 0, 2};
  const Candidate int50{sets(attrs_of(sequence({65001}), [](PathAttributes& p) { p.local_pref = 50; })), &i, 0, 2};
  expect_decides(int150, ext, Decision::kLocalPref);
  expect_decides(ext1000, int150, Decision::kLocalPref);
  expect_decides(ext, int50, Decision::kLocalPref);
  // The same LOCAL_PREF on both: step d decides for the external one.
  const Candidate int1000{sets(attrs_of(sequence({65001}), [](PathAttributes& p) { p.local_pref = 1000; })), &i, 0, 2};
  expect_decides(ext1000, int1000, Decision::kExternal);
}

// Step 1 for a route this router originates: [[originate]] local_pref is
// its degree of preference, as it is what internal peers are sent.
TEST(BestPath, LocalPrefOfAnOriginatedRouteDecides) {
  Sets sets;
  PeerInfo local = ebgp(1, kAddrLow, 64512);
  local.local = true;
  const PeerInfo e = ebgp(9, kAddrHigh);
  const Candidate mine{sets(attrs_of(AsPath{}, [](PathAttributes& p) { p.local_pref = 50; })), &local, 0, 1};
  const Candidate theirs{sets(attrs_of(sequence({65001, 2, 3}))), &e, 0, 2};
  EXPECT_EQ(degree_of_preference(mine, {}), 50u);
  expect_decides(theirs, mine, Decision::kLocalPref);
}

// Step a: shortest AS_PATH.
TEST(BestPath, AsPathLengthDecidesAfterLocalPref) {
  Sets sets;
  const PeerInfo pw = ebgp(9, kAddrHigh), pl = ebgp(1, kAddrLow);
  const Candidate w{sets(attrs_of(sequence({65001, 2}), [](PathAttributes& p) { p.origin = Origin::kIncomplete; })), &pw, 5, 9};
  const Candidate l{sets(attrs_of(sequence({65001, 2, 3}))), &pl, 0, 1};
  expect_decides(w, l, Decision::kAsPathLength);

  // Not when LOCAL_PREF differs (internal peers).
  const PeerInfo iw = ibgp(9, kAddrHigh), il = ibgp(1, kAddrLow);
  const Candidate long_lp{sets(attrs_of(sequence({65001, 2, 3, 4}), [](PathAttributes& p) { p.local_pref = 101; })), &iw, 5, 9};
  const Candidate short_lp{sets(attrs_of(sequence({65001}), [](PathAttributes& p) { p.local_pref = 100; })), &il, 0, 1};
  expect_decides(long_lp, short_lp, Decision::kLocalPref);
}

// Step a: an AS_SET counts one, confederation segments none.
TEST(BestPath, AsSetCountsOneAndConfederationSegmentsNone) {
  Sets sets;
  const PeerInfo pw = ebgp(9, kAddrHigh), pl = ebgp(1, kAddrLow);
  const Attrs* with_set = sets(attrs_of(AsPath{{AsSegment{SegmentType::kAsSequence, {65001, 2}},
                                                AsSegment{SegmentType::kAsSet, {3, 4, 5, 6}}}}));
  const Attrs* four = sets(attrs_of(sequence({65001, 2, 3, 4})));
  const Attrs* three = sets(attrs_of(sequence({65001, 2, 3}), [](PathAttributes& p) { p.origin = Origin::kEgp; }));
  EXPECT_EQ(with_set->as_path_length(), 3u);
  expect_decides(Candidate{with_set, &pw, 0, 9}, Candidate{four, &pl, 0, 1}, Decision::kAsPathLength);
  // Same length (3): ORIGIN decides.
  expect_decides(Candidate{with_set, &pw, 0, 9}, Candidate{three, &pl, 0, 1}, Decision::kOrigin);

  const PeerInfo iw = ibgp(9, kAddrHigh), il = ibgp(1, kAddrLow);
  const Attrs* confed = sets(attrs_of(AsPath{{AsSegment{SegmentType::kConfedSequence, {64512, 64513, 64514}},
                                              AsSegment{SegmentType::kConfedSet, {64515, 64516}},
                                              AsSegment{SegmentType::kAsSequence, {65001, 2}}}}));
  const Attrs* plain3 = sets(attrs_of(sequence({65001, 2, 3})));
  const Attrs* plain2 = sets(attrs_of(sequence({65001, 2}), [](PathAttributes& p) { p.origin = Origin::kEgp; }));
  EXPECT_EQ(confed->as_path_length(), 2u);
  expect_decides(Candidate{confed, &iw, 0, 9}, Candidate{plain3, &il, 0, 1}, Decision::kAsPathLength);
  expect_decides(Candidate{confed, &iw, 0, 9}, Candidate{plain2, &il, 0, 1}, Decision::kOrigin);
}

// Step b: lowest ORIGIN, IGP < EGP < INCOMPLETE (< absent).
TEST(BestPath, OriginDecidesAfterAsPathLength) {
  Sets sets;
  const PeerInfo pw = ebgp(9, kAddrHigh), pl = ebgp(1, kAddrLow);
  auto with_origin = [&](std::optional<Origin> o, uint32_t med) {
    return sets(attrs_of(sequence({65001, 2}), [&](PathAttributes& p) {
      p.origin = o;
      p.med = med;
    }));
  };
  // The loser has the lower MED from the same AS, and every later advantage.
  expect_decides(Candidate{with_origin(Origin::kIgp, 50), &pw, 5, 9},
                 Candidate{with_origin(Origin::kEgp, 0), &pl, 0, 1}, Decision::kOrigin);
  expect_decides(Candidate{with_origin(Origin::kEgp, 50), &pw, 5, 9},
                 Candidate{with_origin(Origin::kIncomplete, 0), &pl, 0, 1}, Decision::kOrigin);
  expect_decides(Candidate{with_origin(Origin::kIncomplete, 50), &pw, 5, 9},
                 Candidate{with_origin(std::nullopt, 0), &pl, 0, 1}, Decision::kOrigin);

  // Not when the AS_PATH length differs.
  const Candidate short_incomplete{sets(attrs_of(sequence({65001}), [](PathAttributes& p) { p.origin = Origin::kIncomplete; })), &pw, 5, 9};
  expect_decides(short_incomplete, Candidate{with_origin(Origin::kIgp, 0), &pl, 0, 1}, Decision::kAsPathLength);
}

// Step c: lowest MED among routes from the same neighbouring AS; an
// absent MED is 0.
TEST(BestPath, MedDecidesWithinTheSameNeighbourAs) {
  Sets sets;
  const PeerInfo pw = ebgp(9, kAddrHigh), pl = ebgp(1, kAddrLow);
  auto med = [&](uint32_t neighbour, std::optional<uint32_t> v, Origin o = Origin::kIgp) {
    return sets(attrs_of(sequence({neighbour, 7}), [&](PathAttributes& p) {
      p.med = v;
      p.origin = o;
    }));
  };
  expect_decides(Candidate{med(1, 10), &pw, 5, 9}, Candidate{med(1, 20), &pl, 0, 1}, Decision::kMed);
  // Absent is 0: lower than 1, equal to 0 (then the router ID decides).
  expect_decides(Candidate{med(1, std::nullopt), &pw, 5, 9}, Candidate{med(1, 1), &pl, 0, 1}, Decision::kMed);
  expect_decides(Candidate{med(1, 0), &pl, 0, 1}, Candidate{med(1, std::nullopt), &pw, 5, 9}, Decision::kRouterId);

  // From different neighbouring ASes MED is not compared: the router ID
  // decides for the route with the higher MED.
  expect_decides(Candidate{med(2, 1000), &pl, 0, 1}, Candidate{med(1, 10), &pw, 5, 9}, Decision::kRouterId);

  // Not when ORIGIN differs.
  expect_decides(Candidate{med(1, 1000, Origin::kIgp), &pw, 5, 9},
                 Candidate{med(1, 10, Origin::kEgp), &pl, 0, 1}, Decision::kOrigin);
}

// Step c with always_compare_med: MED across neighbouring ASes.
TEST(BestPath, AlwaysCompareMedComparesAcrossNeighbourAses) {
  Sets sets;
  const PeerInfo pw = ebgp(9, kAddrHigh), pl = ebgp(1, kAddrLow);
  auto med = [&](uint32_t neighbour, uint32_t v) {
    return sets(attrs_of(sequence({neighbour, 7}), [&](PathAttributes& p) { p.med = v; }));
  };
  const Candidate low{med(2, 10), &pw, 5, 9}, high{med(1, 20), &pl, 0, 1};
  expect_decides(low, high, Decision::kMed, {.always_compare_med = true});
  expect_decides(high, low, Decision::kRouterId, {.always_compare_med = false});
}

// Step d: a route from an external peer over one from an internal peer.
TEST(BestPath, ExternalOverInternalDecidesAfterMed) {
  Sets sets;
  const PeerInfo e = ebgp(9, kAddrHigh), i = ibgp(1, kAddrLow);
  const Attrs* a = sets(attrs_of(sequence({65001, 7}), [](PathAttributes& p) { p.med = 5; }));
  expect_decides(Candidate{a, &e, 5, 9}, Candidate{a, &i, 0, 1}, Decision::kExternal);
  // Not when MED differs within the same neighbouring AS.
  const Attrs* lower_med = sets(attrs_of(sequence({65001, 7}), [](PathAttributes& p) { p.med = 4; }));
  expect_decides(Candidate{lower_med, &i, 5, 9}, Candidate{a, &e, 0, 1}, Decision::kMed);
}

// Step f: lowest BGP identifier, the ORIGINATOR_ID in its place.
TEST(BestPath, RouterIdDecidesAfterExternalOverInternal) {
  Sets sets;
  const PeerInfo pw = ebgp(1, kAddrHigh), pl = ebgp(2, kAddrLow);
  const Attrs* a = sets(attrs_of(sequence({65001})));
  // The loser has the lower address, path ID and slot.
  expect_decides(Candidate{a, &pw, 5, 9}, Candidate{a, &pl, 0, 1}, Decision::kRouterId);
  // Not when one is internal: the external one wins with the higher ID.
  const PeerInfo i = ibgp(1, kAddrLow), e = ebgp(9, kAddrHigh);
  expect_decides(Candidate{a, &e, 5, 9}, Candidate{a, &i, 0, 1}, Decision::kExternal);
}

TEST(BestPath, OriginatorIdTakesTheRouterIdsPlace) {
  Sets sets;
  const PeerInfo r5 = ibgp(5, kAddrHigh), r2 = ibgp(2, kAddrLow);
  auto orig = [&](std::optional<uint32_t> id) {
    return sets(attrs_of(sequence({65001}), [&](PathAttributes& p) { p.originator_id = id; }));
  };
  // Reflected from router 5 but originated by 1: beats router 2's own route.
  expect_decides(Candidate{orig(1), &r5, 5, 9}, Candidate{orig(std::nullopt), &r2, 0, 1}, Decision::kRouterId);
  // Router 2's own route beats one from router 2 originated by 3.
  const PeerInfo r1 = ibgp(1, kAddrLow);
  expect_decides(Candidate{orig(std::nullopt), &r2, 5, 9}, Candidate{orig(3), &r1, 0, 1}, Decision::kRouterId);
  // Same ORIGINATOR_ID from different reflectors: no decision here.
  EXPECT_NE(compare_pair(Candidate{orig(4), &r5, 5, 9}, Candidate{orig(4), &r2, 0, 1}, {}), Decision::kRouterId);
}

// RFC 4456 section 9: shortest CLUSTER_LIST after the router ID.
TEST(BestPath, ClusterListLengthDecidesAfterRouterId) {
  Sets sets;
  const PeerInfo pw = ibgp(7, kAddrHigh), pl = ibgp(8, kAddrLow);
  auto cl = [&](uint32_t originator, std::vector<uint32_t> list) {
    return sets(attrs_of(sequence({65001}), [&](PathAttributes& p) {
      p.originator_id = originator;
      p.cluster_list = list;
    }));
  };
  expect_decides(Candidate{cl(1, {10}), &pw, 5, 9}, Candidate{cl(1, {10, 11}), &pl, 0, 1}, Decision::kClusterList);
  // Not when the (originator) router ID differs.
  expect_decides(Candidate{cl(1, {10, 11, 12}), &pw, 5, 9}, Candidate{cl(2, {10}), &pl, 0, 1}, Decision::kRouterId);
}

// Step g: lowest peer address.
TEST(BestPath, PeerAddressDecidesAfterClusterList) {
  Sets sets;
  // Two sessions to the same router (same BGP identifier).
  const PeerInfo pw = ibgp(1, kAddrLow), pl = ibgp(1, kAddrHigh);
  auto cl = [&](std::vector<uint32_t> list) {
    return sets(attrs_of(sequence({65001}), [&](PathAttributes& p) { p.cluster_list = list; }));
  };
  expect_decides(Candidate{cl({10}), &pw, 5, 9}, Candidate{cl({10}), &pl, 0, 1}, Decision::kPeerAddress);
  // Not when the cluster list length differs.
  expect_decides(Candidate{cl({10}), &pl, 5, 9}, Candidate{cl({10, 11}), &pw, 0, 1}, Decision::kClusterList);
}

// RFC 7911: lowest path identifier among one peer's paths.
TEST(BestPath, PathIdDecidesAfterPeerAddress) {
  Sets sets;
  const PeerInfo p = ebgp(1, kAddrLow), q = ebgp(1, kAddrHigh);
  const Attrs* a = sets(attrs_of(sequence({65001})));
  expect_decides(Candidate{a, &p, 1, 9}, Candidate{a, &p, 2, 1}, Decision::kPathId);
  // Not when the address differs.
  expect_decides(Candidate{a, &p, 2, 9}, Candidate{a, &q, 1, 1}, Decision::kPeerAddress);
}

// Last: the lowest peer slot, so the answer is always one route.
TEST(BestPath, PeerSlotDecidesLast) {
  Sets sets;
  const PeerInfo p = ebgp(1, kAddrLow);
  const Attrs* a = sets(attrs_of(sequence({65001})));
  expect_decides(Candidate{a, &p, 1, 3}, Candidate{a, &p, 1, 4}, Decision::kPeerSlot);
  // Not when the path ID differs.
  expect_decides(Candidate{a, &p, 1, 4}, Candidate{a, &p, 2, 3}, Decision::kPathId);
}

// Step e (9.1.2.2 e): the lower interior cost wins after step d (an
// external route over an internal one whatever the costs) and before the
// router ID; the ADD-PATH best-N order (select_best) agrees.
TEST(BestPath, InteriorCostDecidesStepE) {
  Sets sets;
  const PeerInfo low_id = ebgp(1, kAddrLow), high_id = ebgp(2, kAddrHigh);
  const Attrs* a = sets(attrs_of(sequence({65001, 65009})));
  const Candidate near{a, &high_id, 0, 2, true, 5}, far{a, &low_id, 0, 1, true, 10};
  expect_decides(near, far, Decision::kIgpCost);
  EXPECT_EQ(decision_name(Decision::kIgpCost), "IGP cost");
  // Equal costs: the router ID decides, as before.
  expect_decides(Candidate{a, &low_id, 0, 1, true, 7}, Candidate{a, &high_id, 0, 2, true, 7}, Decision::kRouterId);
  // Step d comes first: an external route at cost 100 beats an internal
  // one at cost 0.
  const PeerInfo internal = ibgp(3, kAddrLow);
  expect_decides(Candidate{a, &high_id, 0, 2, true, 100}, Candidate{a, &internal, 0, 3, true, 0}, Decision::kExternal);
  // The shortcuts: a cheaper route joining beside the best (same MED
  // group, same MED) is the new best; leaving, the best stays.
  EXPECT_EQ(added_beside_best(near, far, {}), Beside::kAddedIsBest);
  EXPECT_EQ(added_beside_best(far, near, {}), Beside::kBestStays);
  EXPECT_TRUE(removal_keeps_best(far, near, {}));
}

TEST(BestPath, DecisionNamesAreDistinct) {
  std::set<std::string_view> names;
  for (auto d : {Decision::kOnly, Decision::kLocalPref, Decision::kAsPathLength, Decision::kOrigin, Decision::kMed,
                 Decision::kExternal, Decision::kIgpCost, Decision::kRouterId, Decision::kClusterList, Decision::kPeerAddress,
                 Decision::kPathId, Decision::kPeerSlot}) {
    EXPECT_NE(decision_name(d), "?");
    names.insert(decision_name(d));
  }
  EXPECT_EQ(names.size(), 12u);
  EXPECT_EQ(decision_name(Decision::kMed), "MED");
}

// RFC 4271 9.1.2.2 (c) is not transitive: A beats B on MED (both AS 1), B
// beats C on router ID, C beats A on router ID (different ASes). As
// elimination the answer is C (MED removes B, then C's router ID is lower
// than A's) whatever the order.
TEST(BestPath, MedCycleHasOneAnswerForEveryOrder) {
  Sets sets;
  const PeerInfo pa = ebgp(3, 0x0A000003), pb = ebgp(1, 0x0A000001), pc = ebgp(2, 0x0A000002, 65002);
  auto med = [&](uint32_t neighbour, uint32_t v) {
    return sets(attrs_of(sequence({neighbour, 9}), [&](PathAttributes& p) { p.med = v; }));
  };
  const Candidate a{med(1, 10), &pa, 0, 1}, b{med(1, 20), &pb, 0, 2}, c{med(2, 15), &pc, 0, 3};
  // The pairwise preferences really form a cycle.
  EXPECT_EQ(pick(a, b), 0);
  EXPECT_EQ(pick(b, c), 0);
  EXPECT_EQ(pick(c, a), 0);

  std::array<Candidate, 3> order{a, b, c};
  std::sort(order.begin(), order.end(), [](const Candidate& x, const Candidate& y) { return x.slot < y.slot; });
  int perms = 0;
  do {
    const int i = select_best(order, {});
    ASSERT_GE(i, 0);
    EXPECT_EQ(order[static_cast<size_t>(i)].slot, c.slot);
    ++perms;
  } while (std::next_permutation(order.begin(), order.end(),
                                 [](const Candidate& x, const Candidate& y) { return x.slot < y.slot; }));
  EXPECT_EQ(perms, 6);
}

// Small domains so that every step gets to decide sometimes.
struct RandomRoute {
  uint8_t local_pref;  // 0: absent, else 100 * n
  uint8_t path_len;    // 1..3
  uint8_t origin;      // 0..2
  uint8_t med;         // 0: absent, else 10 * (n - 1)
  uint8_t neighbour;   // 1..3
  bool internal;
  uint8_t router_id;   // 1..3
  uint8_t addr;        // 1..3
  uint8_t path_id;     // 0..1
  bool eligible;
  bool llgr_stale;     // LLGR_STALE (RFC 9494): one in four
  uint8_t cost;        // interior cost to the next hop (step e): 0..2
};

// One draw per route, split into the fields (mixed radix): much cheaper
// than a generator per field, which matters under the sanitizers.
RandomRoute route_of(uint32_t x) {
  const auto digit = [&x](uint32_t base) {
    const auto d = static_cast<uint8_t>(x % base);
    x /= base;
    return d;
  };
  RandomRoute r{};
  r.local_pref = digit(3);
  r.path_len = static_cast<uint8_t>(1 + digit(3));
  r.origin = digit(3);
  r.med = digit(4);
  r.neighbour = static_cast<uint8_t>(1 + digit(3));
  r.internal = digit(2) != 0;
  r.router_id = static_cast<uint8_t>(1 + digit(3));
  r.addr = static_cast<uint8_t>(1 + digit(3));
  r.path_id = digit(2);
  r.eligible = digit(5) != 0;  // four in five
  r.llgr_stale = digit(4) == 0;
  r.cost = digit(3);
  return r;
}
constexpr uint32_t kRouteDraws = 3 * 3 * 3 * 4 * 3 * 2 * 3 * 3 * 2 * 5 * 4 * 3;

// At full size: rapidcheck scales a range down with the case's size,
// which would leave the high digits (eligibility) at zero in early cases.
rc::Gen<RandomRoute> gen_route() {
  return rc::gen::map(rc::gen::resize(100, rc::gen::inRange<uint32_t>(0, kRouteDraws)), route_of);
}

// The interned set of a random route's attributes. The domain is small
// (648 sets), so each is built once for the whole run.
const Attrs* set_of(const RandomRoute& r) {
  static Interner interner;
  static std::map<std::tuple<uint8_t, uint8_t, uint8_t, uint8_t, uint8_t, bool>, const Attrs*> cache;
  const auto key = std::tuple(r.local_pref, r.path_len, r.origin, r.med, r.neighbour, r.llgr_stale);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  std::vector<uint32_t> path(r.path_len, 64999);
  path[0] = r.neighbour;
  const Attrs* a = interner.intern(codec::AttributeSet::from(attrs_of(sequence(path), [&](PathAttributes& p) {
    if (r.local_pref) p.local_pref = 100u * r.local_pref;
    if (r.med) p.med = 10u * (r.med - 1u);
    p.origin = static_cast<Origin>(r.origin);
    if (r.llgr_stale) p.communities = {codec::community::kLlgrStale};
  })));
  cache.emplace(key, a);
  return a;
}

// kTied: every route ties on steps 1, a and b, so MED (and its cycles)
// decides often.
// Random routes as candidates, each from a peer of its own.
struct Candidates {
  explicit Candidates(const std::vector<RandomRoute>& routes) {
    peers.reserve(routes.size());
    for (const RandomRoute& r : routes) peers.push_back(peer(r.internal, r.router_id, 0x0A000000u + r.addr, 65000));
    for (size_t i = 0; i < routes.size(); ++i)
      cands.push_back(Candidate{set_of(routes[i]), &peers[i], routes[i].path_id, static_cast<uint32_t>(i),
                                routes[i].eligible, routes[i].cost});
  }
  Candidates(const Candidates&) = delete;
  Candidates& operator=(const Candidates&) = delete;
  std::vector<PeerInfo> peers;
  std::vector<Candidate> cands;
};

enum class EarlySteps : uint8_t { kRandom, kTied };

// Between min_routes and max_routes random routes; with kTied, all tied
// on steps 1, a and b.
std::vector<RandomRoute> draw_routes(size_t min_routes, size_t max_routes, EarlySteps early) {
  auto routes =
      *rc::gen::container<std::vector<RandomRoute>>(*rc::gen::inRange<size_t>(min_routes, max_routes + 1), gen_route());
  if (early == EarlySteps::kTied) {
    for (RandomRoute& r : routes) {
      r.local_pref = 0;
      r.path_len = 2;
      r.origin = 0;
      r.llgr_stale = false;
    }
  }
  return routes;
}

// The chosen route (named by its unique slot) is the same for every
// arrival order, eligible, and not beaten at the transitive steps 1, a, b
// by any eligible route, nor on MED by one from its neighbouring AS that
// ties with it on those.

void check_order_independence(size_t min_routes, size_t max_routes, EarlySteps early) {
  const auto routes = draw_routes(min_routes, max_routes, early);
  const bool always_compare_med = *rc::gen::weightedElement<bool>({{3, false}, {1, true}});
  const BestPathOptions opts{.always_compare_med = always_compare_med};
  const Candidates all(routes);
  const std::vector<Candidate>& cands = all.cands;
  const bool any_eligible = std::any_of(routes.begin(), routes.end(), [](const RandomRoute& r) { return r.eligible; });

  const int first = select_best(cands, opts);
  RC_ASSERT((first >= 0) == any_eligible);
  if (first < 0) return;
  const Candidate& best = cands[static_cast<size_t>(first)];
  RC_ASSERT(best.eligible);
  const auto key = [&](const Candidate& c) {
    return std::tuple(!c.attrs->llgr_stale(), degree_of_preference(c, opts), ~c.attrs->as_path_length(),
                      static_cast<uint8_t>(3 - c.attrs->origin()));
  };
  for (const Candidate& c : cands) {
    if (!c.eligible) continue;
    RC_ASSERT(key(c) <= key(best));
    if (key(c) == key(best) && (always_compare_med || c.attrs->neighbour_as() == best.attrs->neighbour_as()))
      RC_ASSERT(c.attrs->med() >= best.attrs->med());
  }

  // Shuffled by sort keys that rapidcheck draws, a few times.
  for (int round = 0; round < 3; ++round) {
    const auto keys = *rc::gen::container<std::vector<uint32_t>>(cands.size(),
                                                                 rc::gen::resize(100, rc::gen::arbitrary<uint32_t>()));
    std::vector<size_t> order(cands.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return keys[x] < keys[y]; });
    std::vector<Candidate> shuffled;
    for (size_t i : order) shuffled.push_back(cands[i]);
    const int j = select_best(shuffled, opts);
    RC_ASSERT(j >= 0);
    RC_ASSERT(shuffled[static_cast<size_t>(j)].slot == best.slot);
    RC_ASSERT(shuffled[static_cast<size_t>(j)].path_id == best.path_id);
  }
}

RC_GTEST_PROP(BestPathProperty, ChoiceDoesNotDependOnArrivalOrder, ()) {
  check_order_independence(2, 8, EarlySteps::kRandom);
}

RC_GTEST_PROP(BestPathProperty, ChoiceWhereMedDecidesDoesNotDependOnArrivalOrder, ()) {
  check_order_independence(3, 8, EarlySteps::kTied);
}

// More candidates than best_path.cpp keeps inline (32).
RC_GTEST_PROP(BestPathProperty, ChoiceAmongManyDoesNotDependOnArrivalOrder, ()) {
  check_order_independence(33, 36, EarlySteps::kRandom);
}

// The table's shortcut when a route is added beside a best: when the new
// route does not reach the MED step beside the best, select_best over
// every route chooses the new route if wins_before_med says so and the
// old best otherwise.
RC_GTEST_PROP(BestPathProperty, AddingARouteDecidedBeforeMedNeedsOnlyTheBest, ()) {
  auto routes = *rc::gen::container<std::vector<RandomRoute>>(*rc::gen::inRange<size_t>(2, 9), gen_route());
  const bool always_compare_med = *rc::gen::weightedElement<bool>({{3, false}, {1, true}});
  const BestPathOptions opts{.always_compare_med = always_compare_med};
  const Candidates all(routes);
  const std::vector<Candidate>& cands = all.cands;
  const Candidate added = cands.back();
  const int before = select_best(std::span<const Candidate>(cands).first(cands.size() - 1), opts);
  RC_PRE(before >= 0 && added.eligible);
  const Candidate& best = cands[static_cast<size_t>(before)];
  RC_PRE(!reaches_med_step(added, best, opts));
  const int after = select_best(cands, opts);
  RC_ASSERT(after == (wins_before_med(added, best, opts) ? static_cast<int>(cands.size() - 1) : before));
}

// ---- the MED step as grouping, against the pairwise elimination it
// replaced (quadratic when many candidates share a neighbouring AS)

void check_against_naive(size_t min_routes, size_t max_routes, EarlySteps early) {
  const auto routes = draw_routes(min_routes, max_routes, early);
  const BestPathOptions opts{.always_compare_med = *rc::gen::weightedElement<bool>({{3, false}, {1, true}}),
                             .default_local_pref = *rc::gen::element<uint32_t>(100, 150, 250)};
  const Candidates all(routes);
  RC_ASSERT(select_best(all.cands, opts) == naive_select_best(all.cands, opts));
}

RC_GTEST_PROP(BestPathProperty, ChoiceIsTheNaiveEliminations, ()) { check_against_naive(0, 12, EarlySteps::kRandom); }

RC_GTEST_PROP(BestPathProperty, ChoiceWhereMedDecidesIsTheNaiveEliminations, ()) {
  check_against_naive(2, 40, EarlySteps::kTied);
}

// Many paths alike (one peer's ADD-PATH flood: one neighbouring AS, one
// MED): the lowest path identifier; and one path of a lower MED among them
// removes all the others at step c.
TEST(BestPath, ManyPathsFromOneAsAreChosenByPathId) {
  Sets sets;
  const PeerInfo p = ebgp(1, kAddrLow);
  const Attrs* alike = sets(attrs_of(sequence({65001, 65002}), [](PathAttributes& a) { a.med = 10; }));
  const Attrs* lower = sets(attrs_of(sequence({65001, 65002}), [](PathAttributes& a) { a.med = 5; }));
  std::vector<Candidate> c;
  for (uint32_t id = 20000; id > 0; --id) c.push_back(Candidate{alike, &p, id, 0});
  EXPECT_EQ(select_best(c, {}), static_cast<int>(c.size() - 1));  // path id 1
  c[7].attrs = lower;
  EXPECT_EQ(select_best(c, {}), 7);
}

// The table's shortcuts for one route joining or leaving (best_path.h):
// where added_beside_best answers without kChooseAgain, select_best over
// every candidate agrees; where removal_keeps_best says so, the best of
// the rest is the same route.
void check_added_beside_best(EarlySteps early) {
  const auto routes = draw_routes(2, 11, early);
  const BestPathOptions opts{.always_compare_med = *rc::gen::weightedElement<bool>({{3, false}, {1, true}})};
  const Candidates all(routes);
  const std::vector<Candidate>& cands = all.cands;
  const int before = select_best(std::span<const Candidate>(cands).first(cands.size() - 1), opts);
  RC_PRE(before >= 0);
  const Beside d = added_beside_best(cands.back(), cands[static_cast<size_t>(before)], opts);
  RC_TAG(static_cast<int>(d));
  if (d == Beside::kChooseAgain) return;
  RC_ASSERT(select_best(cands, opts) == (d == Beside::kAddedIsBest ? static_cast<int>(cands.size() - 1) : before));
}

RC_GTEST_PROP(BestPathProperty, AddedBesideBestAgreesWithChoosingAgain, ()) { check_added_beside_best(EarlySteps::kRandom); }

RC_GTEST_PROP(BestPathProperty, AddedBesideBestAgreesWithChoosingAgainWhereMedDecides, ()) {
  check_added_beside_best(EarlySteps::kTied);
}

RC_GTEST_PROP(BestPathProperty, RemovalKeepsBestAgreesWithChoosingAgain, ()) {
  const auto routes = draw_routes(2, 11, *rc::gen::arbitrary<bool>() ? EarlySteps::kTied : EarlySteps::kRandom);
  const BestPathOptions opts{.always_compare_med = *rc::gen::weightedElement<bool>({{3, false}, {1, true}})};
  const Candidates all(routes);
  const std::vector<Candidate>& cands = all.cands;
  const int best = select_best(cands, opts);
  RC_PRE(best >= 0);
  const auto gone = *rc::gen::inRange<size_t>(0, cands.size());
  RC_PRE(static_cast<int>(gone) != best);
  const bool keeps = removal_keeps_best(cands[gone], cands[static_cast<size_t>(best)], opts);
  RC_TAG(keeps);
  if (!keeps) return;
  std::vector<Candidate> rest = cands;
  rest.erase(rest.begin() + static_cast<std::ptrdiff_t>(gone));
  const int after = select_best(rest, opts);
  RC_ASSERT(after >= 0);
  RC_ASSERT(rest[static_cast<size_t>(after)].slot == cands[static_cast<size_t>(best)].slot);
}

// What Petrel ranks a route by is what it tells its internal peers: the
// LOCAL_PREF export sends to an internal peer (table/export.cpp) is the
// route's degree of preference, whatever kind of peer the route came from
// (internal, external with or without a LOCAL_PREF from import policy, or
// this router), so they rank the same routes alike.
RC_GTEST_PROP(BestPathProperty, DegreeOfPreferenceIsTheLocalPrefSentToInternalPeers, ()) {
  const RandomRoute r = *gen_route();
  const uint32_t default_lp = *rc::gen::element<uint32_t>(100, 150, 250);
  const BestPathOptions opts{.default_local_pref = default_lp};
  PeerInfo from = peer(r.internal, r.router_id, 0x0A000000u + r.addr, 65000);
  from.local = !r.internal && *rc::gen::weightedElement<bool>({{3, false}, {1, true}});
  const Candidate c{set_of(r), &from, r.path_id, 1};
  ExportTarget to;
  to.long_lived_graceful_restart = true;  // LLGR_STALE routes go too
  to.local_as = 65000;
  to.internal = true;
  to.rr_client = true;  // so that a route from an internal peer goes too (reflected)
  to.slot = 2;
  to.next_hop_v4 = net::IpAddress::v4(0x0A0000FE);
  to.default_local_pref = default_lp;
  const Exported e = export_route(to, ExportSource{&from, 1}, codec::Family{1, 1}, c.attrs->decode());
  RC_ASSERT(e.verdict == ExportVerdict::kSend);
  RC_ASSERT(e.attrs.local_pref() == std::optional(degree_of_preference(c, opts)));
}

// The rank the table keeps in each route (pre_med_rank) says what the
// sets say before the MED step: for two candidates whose ranks are both
// known, equal ranks exactly when one reaches the MED step beside the
// other, and the lower rank exactly when it wins there.
RC_GTEST_PROP(BestPathProperty, RanksCompareAsTheSetsBeforeMed, ()) {
  auto routes = *rc::gen::container<std::vector<RandomRoute>>(2, gen_route());
  for (RandomRoute& r : routes) r.eligible = true;
  const BestPathOptions opts{};
  const Candidates all(routes);
  const Candidate& a = all.cands[0];
  const Candidate& b = all.cands[1];
  const uint16_t ra = pre_med_rank(a, opts), rb = pre_med_rank(b, opts);
  // Unknown exactly where the degree of preference is not the default, or
  // the route is long-lived stale.
  RC_ASSERT((ra == 0) == (degree_of_preference(a, opts) != opts.default_local_pref || a.attrs->llgr_stale()));
  RC_PRE(ra != 0 && rb != 0);
  RC_ASSERT((ra == rb) == reaches_med_step(a, b, opts));
  if (ra != rb) RC_ASSERT((ra < rb) == wins_before_med(a, b, opts));
}

// The table's shortcut from the ranks alone: when every eligible
// candidate's rank is known and one is lower than all the others,
// select_best chooses it.
RC_GTEST_PROP(BestPathProperty, AUniqueLowestRankIsTheBest, ()) {
  auto routes = *rc::gen::container<std::vector<RandomRoute>>(*rc::gen::inRange<size_t>(2, 9), gen_route());
  const bool always_compare_med = *rc::gen::weightedElement<bool>({{3, false}, {1, true}});
  const BestPathOptions opts{.always_compare_med = always_compare_med};
  const Candidates all(routes);
  int lowest = -1;
  bool shared = false;
  for (size_t i = 0; i < all.cands.size(); ++i) {
    const Candidate& c = all.cands[i];
    if (!c.eligible) continue;
    const uint16_t r = pre_med_rank(c, opts);
    RC_PRE(r != 0);
    if (lowest < 0 || r < pre_med_rank(all.cands[static_cast<size_t>(lowest)], opts)) {
      lowest = static_cast<int>(i);
      shared = false;
    } else if (r == pre_med_rank(all.cands[static_cast<size_t>(lowest)], opts)) {
      shared = true;
    }
  }
  RC_PRE(lowest >= 0 && !shared);
  RC_ASSERT(select_best(all.cands, opts) == lowest);
}

TEST(BestPath, RankIsUnknownForALocalPrefOrALongPath) {
  const BestPathOptions opts{};
  const PeerInfo ibgp = peer(true, 1, 0x0A000001, 65000);
  const PeerInfo ebgp = peer(false, 2, 0x0A000002, 65001);
  Sets sets;
  const Attrs* lp200 = sets(attrs_of(sequence({65001, 65002}), [](PathAttributes& p) { p.local_pref = 200; }));
  const Attrs* lp100 = sets(attrs_of(sequence({65001, 65002}), [](PathAttributes& p) { p.local_pref = 100; }));
  const Attrs* none = sets(attrs_of(sequence({65001, 65002})));
  // From either kind of peer: a LOCAL_PREF other than the default leaves
  // the rank unknown (import policy sets one on external routes); the
  // default, or none, ranks alike whoever sent the route.
  EXPECT_EQ(pre_med_rank(Candidate{lp200, &ibgp}, opts), 0);
  EXPECT_EQ(pre_med_rank(Candidate{lp200, &ebgp}, opts), 0);
  EXPECT_NE(pre_med_rank(Candidate{lp100, &ebgp}, opts), 0);
  EXPECT_EQ(pre_med_rank(Candidate{lp100, &ibgp}, opts), pre_med_rank(Candidate{lp100, &ebgp}, opts));
  EXPECT_EQ(pre_med_rank(Candidate{none, &ibgp}, opts), pre_med_rank(Candidate{lp100, &ebgp}, opts));
  EXPECT_EQ(pre_med_rank(Candidate{lp200, &ebgp}, {.default_local_pref = 200}),
            pre_med_rank(Candidate{none, &ebgp}, {.default_local_pref = 200}));
  // An AS_PATH of kMaxRankedPathLength ASes, in segments of 255.
  AsPath path;
  for (uint32_t left = kMaxRankedPathLength; left > 0;) {
    const uint32_t n = std::min<uint32_t>(left, 255);
    path.segments.push_back({SegmentType::kAsSequence, std::vector<uint32_t>(n, 65001)});
    left -= n;
  }
  const Attrs* longest = sets(attrs_of(path));
  ASSERT_EQ(longest->as_path_length(), kMaxRankedPathLength);
  EXPECT_EQ(pre_med_rank(Candidate{longest, &ebgp}, opts), 0);
  path.segments.back().asns.pop_back();
  const Attrs* shorter = sets(attrs_of(path));
  EXPECT_EQ(pre_med_rank(Candidate{shorter, &ebgp}, opts), 1 + (kMaxRankedPathLength - 1) * 4 + shorter->origin());
}

// For two routes, compare_pair agrees with select_best: the step it names
// is one where the winner is better, and swapping them names the same step.
RC_GTEST_PROP(BestPathProperty, ComparePairIsSymmetricForTwoRoutes, ()) {
  const auto r = *rc::gen::container<std::vector<RandomRoute>>(2, gen_route());
  std::array<PeerInfo, 2> peers{};
  std::array<Candidate, 2> c{};
  for (size_t i = 0; i < 2; ++i) {
    peers[i] = peer(r[i].internal, r[i].router_id, 0x0A000000u + r[i].addr, 65000);
    c[i] = Candidate{set_of(r[i]), &peers[i], r[i].path_id, static_cast<uint32_t>(i), true, r[i].cost};
  }
  const int w = pick(c[0], c[1]);
  RC_ASSERT(w >= 0);
  const Decision d = compare_pair(c[static_cast<size_t>(w)], c[static_cast<size_t>(1 - w)], {});
  RC_ASSERT(d == compare_pair(c[static_cast<size_t>(1 - w)], c[static_cast<size_t>(w)], {}));
  const Candidate& win = c[static_cast<size_t>(w)];
  const Candidate& lose = c[static_cast<size_t>(1 - w)];
  const auto rid = [](const Candidate& x) {
    return x.attrs->has_originator_id() ? x.attrs->originator_id() : x.peer->router_id;
  };
  switch (d) {
    case Decision::kOnly: RC_FAIL("kOnly for two routes");
    case Decision::kLongLivedStale: RC_ASSERT(!win.attrs->llgr_stale() && lose.attrs->llgr_stale()); break;
    case Decision::kLocalPref: RC_ASSERT(degree_of_preference(win, {}) > degree_of_preference(lose, {})); break;
    case Decision::kAsPathLength: RC_ASSERT(win.attrs->as_path_length() < lose.attrs->as_path_length()); break;
    case Decision::kOrigin: RC_ASSERT(win.attrs->origin() < lose.attrs->origin()); break;
    case Decision::kMed:
      RC_ASSERT(win.attrs->neighbour_as() == lose.attrs->neighbour_as());
      RC_ASSERT(win.attrs->med() < lose.attrs->med());
      break;
    case Decision::kExternal: RC_ASSERT(!win.peer->internal && lose.peer->internal); break;
    case Decision::kIgpCost: RC_ASSERT(win.cost < lose.cost); break;
    case Decision::kRouterId: RC_ASSERT(rid(win) < rid(lose)); break;
    case Decision::kClusterList: RC_ASSERT(win.attrs->cluster_list_length() < lose.attrs->cluster_list_length()); break;
    case Decision::kPeerAddress: RC_ASSERT(win.peer->address < lose.peer->address); break;
    case Decision::kPathId: RC_ASSERT(win.path_id < lose.path_id); break;
    case Decision::kPeerSlot: RC_ASSERT(win.slot < lose.slot); break;
  }
}

// Step L (RFC 9494 sections 1 and 4.3): a route with LLGR_STALE is
// "treated as the least preferred": it loses to a route without it that is
// worse at every later step, LOCAL_PREF included, and wins only alone.
TEST(BestPath, LongLivedStaleRouteIsLeastPreferred) {
  Sets sets;
  const PeerInfo pw = ibgp(9, kAddrHigh), pl = ibgp(1, kAddrLow);
  const Candidate w{sets(attrs_of(sequence({65001, 2, 3, 4}), [](PathAttributes& p) {
                      p.local_pref = 1;
                      p.origin = Origin::kIncomplete;
                      p.med = 500;
                    })),
                    &pw, 5, 9};
  const Candidate l{sets(attrs_of(sequence({65001}), [](PathAttributes& p) {
                      p.local_pref = 4000;
                      p.communities = {codec::community::kLlgrStale};
                    })),
                    &pl, 0, 1};
  ASSERT_TRUE(l.attrs->llgr_stale());
  ASSERT_FALSE(w.attrs->llgr_stale());
  expect_decides(w, l, Decision::kLongLivedStale);
  EXPECT_EQ(pre_med_rank(l, {}), 0);  // the sets decide
  EXPECT_FALSE(reaches_med_step(l, w, {}));
  EXPECT_TRUE(wins_before_med(w, l, {}));
  EXPECT_EQ(added_beside_best(l, w, {}), Beside::kBestStays);
  EXPECT_EQ(added_beside_best(w, l, {}), Beside::kAddedIsBest);
  // Alone, it is the best; between two, the usual steps decide.
  const std::array<Candidate, 1> alone{l};
  EXPECT_EQ(select_best(alone, {}), 0);
  const Candidate l2{sets(attrs_of(sequence({65001, 2}), [](PathAttributes& p) {
                       p.communities = {codec::community::kLlgrStale, 0x00010002};
                     })),
                     &pw, 0, 2};
  expect_decides(l, l2, Decision::kLocalPref);
  EXPECT_EQ(decision_name(Decision::kLongLivedStale), "long-lived stale");
}

}  // namespace
}  // namespace petrel::table
