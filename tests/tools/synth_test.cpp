// Tests for tools/synth: determinism, exact counts, no duplicate prefix,
// the shapes docs/synthetic-table.md promises (prefix lengths, AS paths,
// communities, distinct attribute sets, group sizes), and how two peers'
// tables differ.
#include "tools/synth/synth.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace petrel::synth {
namespace {

// Under AddressSanitizer at -O0 (CI's sanitizer step) the default table
// takes half a minute to make and as long to sort; there the shape tests
// use a quarter of it (the shares do not depend on the size), and the
// full size is checked by the optimised build's run of the same tests.
#if defined(__SANITIZE_ADDRESS__)
constexpr uint32_t kScale = 4;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr uint32_t kScale = 4;
#else
constexpr uint32_t kScale = 1;
#endif
#else
constexpr uint32_t kScale = 1;
#endif

Params table_params() {
  Params p;
  p.v4_prefixes /= kScale;
  p.v6_prefixes /= kScale;
  p.attr_sets /= kScale;
  return p;
}

// The default table takes a good part of a second: made once.
const Table& default_table() {
  static const Table t = generate(table_params());
  return t;
}

// Big enough for shapes, small enough to make several times.
Params medium() {
  Params p;
  p.v4_prefixes = 100'000 / kScale;
  p.v6_prefixes = 23'000 / kScale;
  p.attr_sets = 30'000 / kScale;
  return p;
}

// One attribute set as bytes, to count distinct sets without trusting
// the generator's own equality or hashing.
std::string key(const Attributes& a) {
  std::string k;
  const auto put = [&k](uint32_t v) { k.append(reinterpret_cast<const char*>(&v), sizeof v); };
  put(a.origin);
  put(a.med ? 1 : 0);
  put(a.med.value_or(0));
  for (const auto* list : {&a.as_path, &a.as_set, &a.communities}) {
    put(static_cast<uint32_t>(list->size()));
    for (uint32_t v : *list) put(v);
  }
  put(static_cast<uint32_t>(a.large_communities.size()));
  for (const auto& l : a.large_communities)
    for (uint32_t v : l) put(v);
  return k;
}

size_t distinct_sets(const Table& t) {
  std::unordered_set<std::string> seen;
  for (const Attributes& a : t.attrs) seen.insert(key(a));
  return seen.size();
}

std::vector<net::Prefix> all_prefixes(const std::vector<Group>& groups) {
  std::vector<net::Prefix> out;
  for (const Group& g : groups) out.insert(out.end(), g.prefixes.begin(), g.prefixes.end());
  return out;
}

double length_share(const std::vector<Group>& groups, unsigned len) {
  size_t n = 0, total = 0;
  for (const Group& g : groups) {
    for (const net::Prefix& p : g.prefixes) n += p.len() == len;
    total += g.prefixes.size();
  }
  return 100.0 * static_cast<double>(n) / static_cast<double>(total);
}

net::Prefix prefix(const char* text) { return *net::Prefix::parse(text); }

TEST(Synth, SameParamsSameTable) {
  EXPECT_TRUE(generate(medium()) == generate(medium()));
  EXPECT_TRUE(generate(medium(), 3) == generate(medium(), 3));
  Params other = medium();
  other.seed = 2;
  EXPECT_FALSE(generate(medium()) == generate(other));
  const Table a = generate(medium());
  const Table b = generate(other);
  EXPECT_NE(all_prefixes(a.v4), all_prefixes(b.v4));
  EXPECT_NE(a.attrs, b.attrs);
}

// The same output on every machine and standard library: a checksum of a
// small table, pinned. If a deliberate change to the generator moves it,
// update it here and say so in docs/synthetic-table.md (benchmark figures
// made with the old tables are then not comparable).
TEST(Synth, PinnedOutput) {
  Params p;
  p.seed = 7;
  p.v4_prefixes = 3'000;
  p.v6_prefixes = 700;
  p.attr_sets = 900;
  p.max_group = 50;
  const Table t = generate(p, 1);
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a 64
  const auto eat = [&h](const void* data, size_t n) {
    for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<const unsigned char*>(data)[i]) * 0x100000001b3ull;
  };
  for (const Attributes& a : t.attrs) {
    const std::string k = key(a);
    eat(k.data(), k.size());
  }
  for (const auto* groups : {&t.v4, &t.v6}) {
    for (const Group& g : *groups) {
      eat(&g.attrs, sizeof g.attrs);
      for (const net::Prefix& pfx : g.prefixes) {
        const uint8_t len = pfx.len();
        eat(pfx.addr().data(), pfx.addr().size());
        eat(&len, 1);
      }
    }
  }
  EXPECT_EQ(h, 7270379680792761390u);
}

TEST(Synth, CountsAreExact) {
  const Table& t = default_table();
  EXPECT_EQ(t.v4_count(), 1'000'000u / kScale);
  EXPECT_EQ(t.v6_count(), 230'000u / kScale);
  Params p;
  p.v4_prefixes = 12'345;
  p.v6_prefixes = 6'789;
  p.attr_sets = 4'321;
  const Table odd = generate(p);
  EXPECT_EQ(odd.v4_count(), 12'345u);
  EXPECT_EQ(odd.v6_count(), 6'789u);
  EXPECT_EQ(odd.attrs.size(), 4'321u);
}

TEST(Synth, NoDuplicatePrefixAndRightFamily) {
  const Table& t = default_table();
  for (const auto* groups : {&t.v4, &t.v6}) {
    std::vector<net::Prefix> all = all_prefixes(*groups);
    std::sort(all.begin(), all.end());
    EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end());
    const net::IpFamily family = groups == &t.v4 ? net::IpFamily::V4 : net::IpFamily::V6;
    EXPECT_TRUE(std::all_of(all.begin(), all.end(), [&](const net::Prefix& p) { return p.family() == family; }));
  }
}

TEST(Synth, LengthsLikeTodaysTable) {
  const Table& t = default_table();
  const double v4_24 = length_share(t.v4, 24);
  EXPECT_GE(v4_24, 55.0);
  EXPECT_LE(v4_24, 65.0);
  const double v4_22_23 = length_share(t.v4, 22) + length_share(t.v4, 23);
  EXPECT_GE(v4_22_23, 15.0);
  EXPECT_LE(v4_22_23, 27.0);
  const double v6_48 = length_share(t.v6, 48);
  EXPECT_GE(v6_48, 40.0);
  EXPECT_LE(v6_48, 50.0);
  const double v6_32 = length_share(t.v6, 32);
  EXPECT_GE(v6_32, 15.0);
  EXPECT_LE(v6_32, 25.0);
  for (const Group& g : t.v4) {
    for (const net::Prefix& p : g.prefixes) ASSERT_TRUE(p.len() >= 8 && p.len() <= 24) << p.to_string();
  }
  for (const Group& g : t.v6) {
    for (const net::Prefix& p : g.prefixes) ASSERT_TRUE(p.len() >= 16 && p.len() <= 48) << p.to_string();
  }
}

TEST(Synth, NoSpecialPurposeSpace) {
  const Table& t = default_table();
  const std::vector<net::Prefix> v4_special = {
      prefix("0.0.0.0/8"),       prefix("10.0.0.0/8"),     prefix("100.64.0.0/10"),
      prefix("127.0.0.0/8"),     prefix("169.254.0.0/16"), prefix("172.16.0.0/12"),
      prefix("192.0.2.0/24"),    prefix("192.168.0.0/16"), prefix("198.18.0.0/15"),
      prefix("198.51.100.0/24"), prefix("203.0.113.0/24"), prefix("224.0.0.0/3")};
  const auto overlaps = [](const net::Prefix& a, const net::Prefix& b) { return a.contains(b) || b.contains(a); };
  for (const Group& g : t.v4) {
    for (const net::Prefix& p : g.prefixes) {
      for (const net::Prefix& s : v4_special) ASSERT_FALSE(overlaps(p, s)) << p.to_string();
    }
  }
  const net::Prefix global = prefix("2000::/3");
  const net::Prefix documentation = prefix("2001:db8::/32");
  for (const Group& g : t.v6) {
    for (const net::Prefix& p : g.prefixes) {
      ASSERT_TRUE(global.contains(p)) << p.to_string();
      ASSERT_FALSE(overlaps(p, documentation)) << p.to_string();
    }
  }
}

TEST(Synth, DistinctSetsNearTarget) {
  const Table& t = default_table();
  const size_t distinct = distinct_sets(t);
  EXPECT_GE(distinct, 270'000u / kScale);
  EXPECT_LE(distinct, 330'000u / kScale);
  EXPECT_EQ(distinct, t.attrs.size());  // Table::attrs holds each set once
}

TEST(Synth, AsPathsLikeTodaysTable) {
  const Table& t = default_table();
  size_t hops = 0, longest = 0, prepending = 0;
  std::unordered_map<uint32_t, bool> origin_ases;  // AS -> 4-octet
  for (const Attributes& a : t.attrs) {
    ASSERT_FALSE(a.as_path.empty());
    EXPECT_EQ(a.as_path.front(), t.attrs.front().as_path.front());  // one neighbour
    hops += a.as_path.size();
    longest = std::max(longest, a.as_path.size());
    // No loops: an AS appears in one run only (prepending repeats it in place).
    std::vector<uint32_t> runs = a.as_path;
    runs.erase(std::unique(runs.begin(), runs.end()), runs.end());
    prepending += runs.size() != a.as_path.size();
    std::sort(runs.begin(), runs.end());
    ASSERT_EQ(std::adjacent_find(runs.begin(), runs.end()), runs.end());
    origin_ases[a.as_path.back()] = a.as_path.back() > 0xffff;
    EXPECT_LE(a.origin, 2);
  }
  const double mean = static_cast<double>(hops) / static_cast<double>(t.attrs.size());
  EXPECT_GE(mean, 4.0);
  EXPECT_LE(mean, 6.0);
  EXPECT_GE(longest, 12u);  // a tail
  const double prepend_share = 100.0 * static_cast<double>(prepending) / static_cast<double>(t.attrs.size());
  EXPECT_GE(prepend_share, 3.0);
  EXPECT_LE(prepend_share, 20.0);
  const size_t wide = static_cast<size_t>(std::count_if(origin_ases.begin(), origin_ases.end(),
                                                        [](const auto& kv) { return kv.second; }));
  const double wide_share = 100.0 * static_cast<double>(wide) / static_cast<double>(origin_ases.size());
  EXPECT_GE(wide_share, 25.0);
  EXPECT_LE(wide_share, 45.0);
}

TEST(Synth, OriginsHaveAHeavyTail) {
  const Table& t = default_table();
  std::unordered_map<uint32_t, size_t> per_origin;
  for (const auto* groups : {&t.v4, &t.v6}) {
    for (const Group& g : *groups) per_origin[t.attrs[g.attrs].as_path.back()] += g.prefixes.size();
  }
  std::vector<size_t> counts;
  for (const auto& [asn, n] : per_origin) counts.push_back(n);
  std::sort(counts.begin(), counts.end());
  EXPECT_LE(counts[counts.size() / 2], 10u);  // the median origin announces a few
  EXPECT_GE(counts.back(), 1'000u);           // some announce thousands
}

TEST(Synth, CommunitiesLikeTodaysTable) {
  const Table& t = default_table();
  size_t with = 0, large = 0;
  for (const Attributes& a : t.attrs) {
    with += !a.communities.empty();
    large += !a.large_communities.empty();
    EXPECT_LE(a.communities.size(), 10u);
    EXPECT_TRUE(std::is_sorted(a.communities.begin(), a.communities.end()));
    EXPECT_EQ(std::adjacent_find(a.communities.begin(), a.communities.end()), a.communities.end());
  }
  const double n = static_cast<double>(t.attrs.size());
  EXPECT_GE(100.0 * static_cast<double>(with) / n, 35.0);
  EXPECT_LE(100.0 * static_cast<double>(with) / n, 65.0);
  EXPECT_GE(100.0 * static_cast<double>(large) / n, 1.0);
  EXPECT_LE(100.0 * static_cast<double>(large) / n, 10.0);
}

// Every group nonempty, at most max_group, pointing at a set; every set
// used; many sets carry one prefix, a few more than a group holds.
void expect_sound_groups(const Table& t, uint32_t max_group) {
  std::vector<size_t> per_set(t.attrs.size());
  for (const auto* groups : {&t.v4, &t.v6}) {
    for (const Group& g : *groups) {
      ASSERT_FALSE(g.prefixes.empty());
      ASSERT_LE(g.prefixes.size(), max_group);
      ASSERT_LT(g.attrs, t.attrs.size());
      per_set[g.attrs] += g.prefixes.size();
    }
  }
  EXPECT_EQ(std::count(per_set.begin(), per_set.end(), 0u), 0);
}

TEST(Synth, GroupsAreSound) {
  const Table& t = default_table();
  expect_sound_groups(t, 400);
  std::vector<size_t> per_set(t.attrs.size());
  for (const auto* groups : {&t.v4, &t.v6}) {
    for (const Group& g : *groups) per_set[g.attrs] += g.prefixes.size();
  }
  const auto singles = std::count(per_set.begin(), per_set.end(), 1u);
  EXPECT_GE(static_cast<double>(singles), 0.3 * static_cast<double>(per_set.size()));
  EXPECT_GE(*std::max_element(per_set.begin(), per_set.end()), 401u);  // split into groups
}

TEST(Synth, PeersShareThePrefixesNotTheSets) {
  const Table a = generate(medium(), 0);
  const Table b = generate(medium(), 1);
  for (const auto& [ga, gb] : {std::pair{&a.v4, &b.v4}, std::pair{&a.v6, &b.v6}}) {
    std::vector<net::Prefix> pa = all_prefixes(*ga);
    std::vector<net::Prefix> pb = all_prefixes(*gb);
    EXPECT_EQ(pa, pb);  // grouped the same way, in the same order
    std::sort(pa.begin(), pa.end());
    std::sort(pb.begin(), pb.end());
    EXPECT_EQ(pa, pb);
  }
  EXPECT_NE(a.attrs.front().as_path.front(), b.attrs.front().as_path.front());
  std::unordered_set<std::string> in_b;
  for (const Attributes& s : b.attrs) in_b.insert(key(s));
  const size_t shared = static_cast<size_t>(
      std::count_if(a.attrs.begin(), a.attrs.end(), [&](const Attributes& s) { return in_b.count(key(s)) != 0; }));
  EXPECT_LT(shared * 5, a.attrs.size());  // more than 80 % differ
  // Beyond the neighbour, most paths differ too.
  size_t same_tail = 0;
  for (size_t i = 0; i < a.attrs.size(); ++i) {
    same_tail += std::equal(a.attrs[i].as_path.begin() + 1, a.attrs[i].as_path.end(),
                            b.attrs[i].as_path.begin() + 1, b.attrs[i].as_path.end());
  }
  EXPECT_LT(same_tail * 2, a.attrs.size());
}

TEST(Synth, ManyPeersHaveTheirOwnNeighbour) {
  std::map<uint32_t, uint32_t> neighbours;
  Params p;
  p.v4_prefixes = 300;
  p.v6_prefixes = 0;
  p.attr_sets = 30;
  for (uint32_t peer : {0u, 1u, 2u, 15u, 16u, 17u, 1000u}) {
    const Table t = generate(p, peer);
    EXPECT_TRUE(neighbours.emplace(t.attrs.front().as_path.front(), peer).second) << peer;
  }
}

TEST(Synth, SmallParamsWork) {
  Params p;
  p.v4_prefixes = 1'000;
  p.v6_prefixes = 200;
  p.attr_sets = 100;
  const Table t = generate(p);
  EXPECT_EQ(t.v4_count(), 1'000u);
  EXPECT_EQ(t.v6_count(), 200u);
  EXPECT_EQ(distinct_sets(t), 100u);
  expect_sound_groups(t, 400);

  p.max_group = 3;
  const Table tiny_groups = generate(p);
  expect_sound_groups(tiny_groups, 3);
  EXPECT_EQ(all_prefixes(tiny_groups.v4), all_prefixes(t.v4));
}

TEST(Synth, EdgeParams) {
  Params p;
  p.v4_prefixes = 50;
  p.v6_prefixes = 0;
  p.attr_sets = 1'000;  // more sets than prefixes: one prefix each
  Table t = generate(p);
  EXPECT_EQ(t.v4_count(), 50u);
  EXPECT_TRUE(t.v6.empty());
  EXPECT_EQ(distinct_sets(t), 50u);

  p.v6_prefixes = 10;
  p.attr_sets = 0;  // at least one set per family
  p.max_group = 0;  // counts as 1
  t = generate(p);
  EXPECT_EQ(t.attrs.size(), 2u);
  expect_sound_groups(t, 1);
  EXPECT_EQ(t.v4.size(), 50u);

  p.v4_prefixes = 0;
  p.v6_prefixes = 0;
  t = generate(p);
  EXPECT_TRUE(t.attrs.empty() && t.v4.empty() && t.v6.empty());
}

}  // namespace
}  // namespace petrel::synth
