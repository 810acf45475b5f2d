// Tests of rpki/aspa_table.h: hand-checked paths for the upstream and
// downstream procedures of draft-ietf-sidrops-aspa-verification, and a
// property: AspaTable::verify agrees with verify_by_definition (the
// draft's ramps computed literally, by a scan) on random paths and ASPA
// sets; and lookups against customers chosen to share a bucket of the
// table's public hash, held to the bisection bound and to a std::map.
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

// The table's hash, as public as it is in the source: what a hostile cache
// would compute offline to choose its customers.
uint32_t public_mix(uint32_t asn) {
  return static_cast<uint32_t>((static_cast<uint64_t>(asn) * 0x9e3779b97f4a7c15ull) >> 32);
}

// `count` customers whose hash agrees in its low `bits` bits: one bucket
// (and, in the open-addressing table this replaced, one home slot, so
// that build took count * count / 2 probes and each lookup count / 2).
std::vector<uint32_t> colliding_customers(size_t count, int bits) {
  std::vector<uint32_t> out;
  const uint32_t mask = (1u << bits) - 1;
  for (uint32_t asn = 1; out.size() < count; ++asn) {
    if ((public_mix(asn) & mask) == 0) out.push_back(asn);
  }
  return out;
}

size_t log2_ceil(size_t n) {
  size_t k = 0;
  while ((size_t{1} << k) < n) ++k;
  return k;
}

// Each customer's providers in the model: a few ASes derived from it.
std::vector<uint32_t> providers_of(uint32_t c) {
  std::vector<uint32_t> p{c + 1, c * 3 + 7, c ^ 0x5555u};
  std::sort(p.begin(), p.end());
  p.erase(std::unique(p.begin(), p.end()), p.end());
  return p;
}

// 2,048 customers chosen to share one bucket (they share the low 13 bits
// of the hash, so they would share a bucket of any table up to 8,192
// buckets): every lookup, hit or miss, still compares with at most
// 1 + log2(2,048) entries, and finds what the model holds. In the
// open-addressing table they formed one run: lookups took up to 2,048
// probes, and build about two million.
TEST(Aspa, CustomersChosenToCollideCostLogarithmicSteps) {
  constexpr size_t kCount = 2048;
  const auto chosen = colliding_customers(kCount + 64, 13);
  std::vector<Aspa> aspas;
  for (size_t i = 0; i < kCount; ++i) aspas.push_back(Aspa{chosen[i], providers_of(chosen[i])});
  const auto table = AspaTable::build(aspas);
  ASSERT_EQ(table.size(), kCount);
  const size_t bound = 1 + log2_ceil(kCount);
  size_t worst = 0;
  for (uint32_t c : chosen) worst = std::max(worst, table.lookup_steps(c));
  EXPECT_LE(worst, bound);
  EXPECT_GE(worst, bound - 1);  // they did share a bucket: bisection ran
  for (size_t i = 0; i < kCount; ++i) {
    const uint32_t c = chosen[i];
    for (uint32_t p : providers_of(c)) ASSERT_EQ(table.hop(c, p), Hop::kProviderPlus) << c;
    ASSERT_EQ(table.hop(c, 0xfffffff0u), Hop::kNotProviderPlus) << c;
  }
  // Misses in the same bucket, below, between and above the customers.
  for (size_t i = kCount; i < chosen.size(); ++i) EXPECT_EQ(table.hop(chosen[i], 1), Hop::kNoAttestation);
  EXPECT_EQ(table.hop(0, 1), Hop::kNoAttestation);
  EXPECT_EQ(table.hop(chosen[0] + 1, 1), Hop::kNoAttestation);
}

// Random and chosen customer sets, in order or not, with repeated
// customers (the later ASPA wins, as the header says): every lookup of a
// customer held, and of ASes near them, answers as a std::map would, and
// within the bisection bound of the set's size.
RC_GTEST_PROP(Aspa, LookupsAgreeWithAMap, ()) {
  const bool chosen = *rc::gen::arbitrary<bool>();
  const auto pool = chosen ? colliding_customers(300, 10) : std::vector<uint32_t>{};
  auto customer = [&]() -> uint32_t {
    if (chosen) return pool[*rc::gen::inRange<size_t>(0, pool.size())];
    const uint32_t x = *rc::gen::inRange<uint32_t>(0, 5000);  // near either end of the AS space
    return *rc::gen::arbitrary<bool>() ? x : 0xffffffffu - x;
  };
  std::vector<Aspa> aspas;
  std::map<uint32_t, std::vector<uint32_t>> model;
  const int count = *rc::gen::inRange(0, 300);
  for (int i = 0; i < count; ++i) {
    const uint32_t c = customer();
    auto p = *rc::gen::container<std::vector<uint32_t>>(rc::gen::inRange<uint32_t>(0, 40));
    std::sort(p.begin(), p.end());
    p.erase(std::unique(p.begin(), p.end()), p.end());
    aspas.push_back(Aspa{c, p});
    model[c] = p;
  }
  if (*rc::gen::arbitrary<bool>()) {
    std::stable_sort(aspas.begin(), aspas.end(), [](const Aspa& a, const Aspa& b) { return a.customer < b.customer; });
  }
  const auto table = AspaTable::build(aspas);
  RC_ASSERT(table.size() == model.size());
  const size_t bound = 1 + log2_ceil(std::max<size_t>(model.size(), 1));
  auto check = [&](uint32_t c) {
    RC_ASSERT(table.lookup_steps(c) <= bound);
    auto it = model.find(c);
    for (uint32_t p = 0; p < 40; ++p) {
      const Hop want = it == model.end()                                               ? Hop::kNoAttestation
                       : std::binary_search(it->second.begin(), it->second.end(), p) ? Hop::kProviderPlus
                                                                                     : Hop::kNotProviderPlus;
      RC_ASSERT(table.hop(c, p) == want);
    }
  };
  for (const auto& [c, p] : model) {
    check(c);
    check(c + 1);
    check(c - 1);
  }
  check(customer());
}

TEST(Aspa, StateNames) {
  EXPECT_EQ(aspa_state_name(AspaState::kValid), "valid");
  EXPECT_EQ(aspa_state_name(AspaState::kInvalid), "invalid");
  EXPECT_EQ(aspa_state_name(AspaState::kUnknown), "unknown");
}

}  // namespace
}  // namespace petrel::rpki
