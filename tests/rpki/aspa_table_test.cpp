// Tests of rpki/aspa_table.h: hand-checked paths for the upstream and
// downstream procedures of draft-ietf-sidrops-aspa-verification, and a
// property: AspaTable::verify agrees with verify_by_definition (the
// draft's ramps computed literally, by a scan) on random paths and ASPA
// sets.
#include "rpki/aspa_table.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <map>

namespace petrel::rpki {
namespace {

constexpr auto kUp = AspaDirection::kUpstream;
constexpr auto kDown = AspaDirection::kDownstream;

// 10 is an origin whose provider is 20; 20's is 30; 30 has none (AS 0);
// 40 buys transit from 30; 25 peers with 20 and 30 (its provider is 99);
// 50 has published no ASPA.
std::vector<Aspa> world() {
  return {{10, {20}}, {20, {30}}, {25, {99}}, {30, {0}}, {40, {30}}};
}

AspaState up(const std::vector<uint32_t>& path, bool set = false) {
  auto w = world();
  auto got = AspaTable::build(w).verify(path, set, kUp);
  EXPECT_EQ(got, verify_by_definition(w, path, set, kUp));
  return got;
}
AspaState down(const std::vector<uint32_t>& path) {
  auto w = world();
  auto got = AspaTable::build(w).verify(path, false, kDown);
  EXPECT_EQ(got, verify_by_definition(w, path, false, kDown));
  return got;
}

TEST(Aspa, Hop) {
  auto w = world();
  auto t = AspaTable::build(w);
  EXPECT_EQ(t.size(), 5u);
  EXPECT_EQ(t.hop(10, 20), Hop::kProviderPlus);
  EXPECT_EQ(t.hop(10, 30), Hop::kNotProviderPlus);
  EXPECT_EQ(t.hop(30, 40), Hop::kNotProviderPlus);  // AS 0: no providers at all
  EXPECT_EQ(t.hop(50, 10), Hop::kNoAttestation);
  EXPECT_EQ(AspaTable{}.hop(10, 20), Hop::kNoAttestation);
}

TEST(Aspa, UpstreamFromACustomer) {
  EXPECT_EQ(up({10}), AspaState::kValid);                 // the origin itself
  EXPECT_EQ(up({20, 10}), AspaState::kValid);             // 10 -> its provider 20
  EXPECT_EQ(up({30, 20, 10}), AspaState::kValid);         // up, up
  EXPECT_EQ(up({30, 30, 20, 10, 10}), AspaState::kValid);  // prepending changes nothing
  // 40 learnt it from its provider 30 and passes it up to us: a leak.
  EXPECT_EQ(up({40, 30, 20, 10}), AspaState::kInvalid);
  // 10 names only 20: a path through 50 from it is not its provider.
  EXPECT_EQ(up({50, 10}), AspaState::kInvalid);
  // 50 has no ASPA: its hop to 20 cannot be checked.
  EXPECT_EQ(up({20, 50}), AspaState::kUnknown);
  EXPECT_EQ(up({30, 20, 50}), AspaState::kUnknown);
  // A Not Provider+ anywhere outweighs No Attestation elsewhere.
  EXPECT_EQ(up({40, 30, 20, 50}), AspaState::kInvalid);
  EXPECT_EQ(up({20, 10}, true), AspaState::kInvalid);  // AS_SET
  EXPECT_EQ(up({}), AspaState::kInvalid);
}

TEST(Aspa, DownstreamFromAProvider) {
  EXPECT_EQ(down({20, 10}), AspaState::kValid);
  EXPECT_EQ(down({50, 10}), AspaState::kValid);  // two ASes: always a valley-free shape
  // 10 -> 20 -> 30 up, then down 30 -> 40 -> us.
  EXPECT_EQ(down({40, 30, 20, 10}), AspaState::kValid);
  // Up 10 -> 20, across to the peer 25, across again to 30, down to 40:
  // two lateral hops, a leak.
  EXPECT_EQ(down({40, 30, 25, 20, 10}), AspaState::kInvalid);
  // Up 10 -> 20, then 20 -> 25 is not up (20 names only 30), so from 25
  // on the route may only go down; but 25 is not 40's provider (40 names
  // 30): Invalid.
  EXPECT_EQ(down({40, 25, 20, 10}), AspaState::kInvalid);
  // 20 names 30, not 50, and 30 names no one: 20 -> 50 and 50 -> 30 would
  // both be lateral or worse. Invalid, whatever 50 would say.
  EXPECT_EQ(down({40, 30, 50, 20, 10}), AspaState::kInvalid);
  // The origin 50 has no ASPA: 50 -> 20 may be up (valid: up 50 -> 20 ->
  // 30, down to 40) or not (a leak by 20): Unknown.
  EXPECT_EQ(down({40, 30, 20, 50}), AspaState::kUnknown);
}

// Random ASPA sets over a small AS space (so hops hit ASPAs often, AS 0
// included) and random paths with repeats: the table agrees with the
// definition in both directions.
RC_GTEST_PROP(Aspa, AgreesWithTheDefinition, ()) {
  const uint32_t space = *rc::gen::inRange<uint32_t>(1, 12);
  std::map<uint32_t, std::vector<uint32_t>> m;
  const int count = *rc::gen::inRange(0, 12);
  for (int i = 0; i < count; ++i) {
    uint32_t c = *rc::gen::inRange<uint32_t>(1, space + 1);
    auto p = *rc::gen::container<std::vector<uint32_t>>(rc::gen::inRange<uint32_t>(0, space + 1));
    std::sort(p.begin(), p.end());
    p.erase(std::unique(p.begin(), p.end()), p.end());
    m[c] = p;
  }
  std::vector<Aspa> aspas;
  for (auto& [c, p] : m) aspas.push_back(Aspa{c, p});
  const auto table = AspaTable::build(aspas);
  auto path = *rc::gen::container<std::vector<uint32_t>>(rc::gen::inRange<uint32_t>(1, space + 1));
  const bool set = *rc::gen::weightedElement<bool>({{9, false}, {1, true}});
  for (auto dir : {kUp, kDown}) {
    RC_ASSERT(table.verify(path, set, dir) == verify_by_definition(aspas, path, set, dir));
  }
}

// A table with many customers (hash collisions, long provider lists
// searched by bisection) agrees with the definition too.
RC_GTEST_PROP(Aspa, LargeTablesAgree, ()) {
  std::vector<Aspa> aspas;
  for (uint32_t c = 1; c <= 300; ++c) {
    if (*rc::gen::inRange(0, 3) == 0) continue;
    std::vector<uint32_t> p;
    const int n = *rc::gen::inRange(0, 20);
    for (int i = 0; i < n; ++i) p.push_back(*rc::gen::inRange<uint32_t>(1, 301));
    std::sort(p.begin(), p.end());
    p.erase(std::unique(p.begin(), p.end()), p.end());
    aspas.push_back(Aspa{c * 7919u, {}});
    for (uint32_t x : p) aspas.back().providers.push_back(x * 7919u);
  }
  std::sort(aspas.begin(), aspas.end());
  const auto table = AspaTable::build(aspas);
  for (int round = 0; round < 20; ++round) {
    auto path = *rc::gen::container<std::vector<uint32_t>>(
        rc::gen::map(rc::gen::inRange<uint32_t>(1, 301), [](uint32_t x) { return x * 7919u; }));
    for (auto dir : {kUp, kDown}) {
      RC_ASSERT(table.verify(path, false, dir) == verify_by_definition(aspas, path, false, dir));
    }
  }
}

TEST(Aspa, StateNames) {
  EXPECT_EQ(aspa_state_name(AspaState::kValid), "valid");
  EXPECT_EQ(aspa_state_name(AspaState::kInvalid), "invalid");
  EXPECT_EQ(aspa_state_name(AspaState::kUnknown), "unknown");
}

}  // namespace
}  // namespace petrel::rpki
