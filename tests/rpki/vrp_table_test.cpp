// Tests of rpki/vrp_table.h: the examples of RFC 6811 section 2 and a
// property check against the plain definition (every VRP scanned) over
// random VRP sets and routes, IPv4 and IPv6.
#include "rpki/vrp_table.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <optional>
#include <random>
#include <utility>
#include <vector>

#include "tools/bench/synth_vrps.h"

namespace petrel::rpki {
namespace {

net::Prefix P(const char* s) { return *net::Prefix::parse(s); }

// The first route for which validate() or validate_batch() (the batch
// as given, sorted, and as kAuto picks) does not answer as
// the plain definition does; nullopt when they all agree.
std::optional<size_t> first_disagreement(const VrpTable& table, const std::vector<Vrp>& vrps,
                                         const std::vector<RouteOrigin>& routes) {
  std::vector<Validity> out(routes.size());
  std::vector<Validity> given(routes.size());
  std::vector<Validity> sorted(routes.size());
  table.validate_batch(routes, out);
  table.validate_batch(routes, given, BatchOrder::kAsGiven);
  table.validate_batch(routes, sorted, BatchOrder::kSorted);
  for (size_t i = 0; i < routes.size(); ++i) {
    const Validity want = validate_by_scan(vrps, routes[i].route, routes[i].origin);
    if (table.validate(routes[i].route, routes[i].origin) != want || out[i] != want || given[i] != want ||
        sorted[i] != want)
      return i;
  }
  return std::nullopt;
}

TEST(VrpTable, EmptyIsNotFound) {
  VrpTable t;
  EXPECT_EQ(t.validate(P("192.0.2.0/24"), 1), Validity::kNotFound);
  EXPECT_EQ(t.validate(P("2001:db8::/32"), 1), Validity::kNotFound);
  auto b = VrpTable::build({});
  EXPECT_EQ(b.validate(P("0.0.0.0/0"), 1), Validity::kNotFound);
  EXPECT_EQ(b.size(), 0u);
  // A batch against a table with no VRPs (RPKI turned on by a reload,
  // before a cache answered): every route not found, no null pointer
  // arithmetic on the missing lines (UBSan caught it).
  std::vector<RouteOrigin> routes = {{P("192.0.2.0/24"), 1}, {P("2001:db8::/32"), 2}, {P("10.0.0.0/8"), 3}};
  std::vector<Validity> out(routes.size(), Validity::kValid);
  for (const VrpTable* table : {&t, &b}) {
    table->validate_batch(routes, out);
    for (Validity v : out) EXPECT_EQ(v, Validity::kNotFound);
  }
}

TEST(VrpTable, CoveredMatchedAndMaxLength) {
  std::vector<Vrp> v = {{P("10.0.0.0/8"), 16, 64496}, {P("10.1.0.0/16"), 24, 64497},
                        {P("2001:db8::/32"), 48, 64498}};
  auto t = VrpTable::build(v);
  EXPECT_EQ(t.size(), 3u);
  EXPECT_EQ(t.validate(P("10.0.0.0/8"), 64496), Validity::kValid);
  EXPECT_EQ(t.validate(P("10.2.0.0/16"), 64496), Validity::kValid);
  EXPECT_EQ(t.validate(P("10.2.3.0/24"), 64496), Validity::kInvalid);  // too long
  EXPECT_EQ(t.validate(P("10.1.2.0/24"), 64497), Validity::kValid);    // inner VRP
  EXPECT_EQ(t.validate(P("10.1.0.0/16"), 64496), Validity::kValid);    // outer VRP still matches
  EXPECT_EQ(t.validate(P("10.1.2.0/24"), 64496), Validity::kInvalid);
  EXPECT_EQ(t.validate(P("11.0.0.0/8"), 64496), Validity::kNotFound);
  EXPECT_EQ(t.validate(P("0.0.0.0/0"), 64496), Validity::kNotFound);  // not covered: VRP is longer
  EXPECT_EQ(t.validate(P("2001:db8:1::/48"), 64498), Validity::kValid);
  EXPECT_EQ(t.validate(P("2001:db8:1::/49"), 64498), Validity::kInvalid);
  EXPECT_EQ(t.validate(P("2001:db9::/32"), 64498), Validity::kNotFound);
  // IPv4 VRPs do not cover IPv6 routes.
  EXPECT_EQ(t.validate(P("::/0"), 64496), Validity::kNotFound);
}

TEST(VrpTable, AsZeroAndNoneNeverMatch) {
  auto t = VrpTable::build(std::vector<Vrp>{{P("192.0.2.0/24"), 24, 0}, {P("198.51.100.0/24"), 24, 64496}});
  EXPECT_EQ(t.validate(P("192.0.2.0/24"), 0), Validity::kInvalid);
  EXPECT_EQ(t.validate(P("192.0.2.0/24"), 64496), Validity::kInvalid);
  EXPECT_EQ(t.validate(P("198.51.100.0/24"), std::nullopt), Validity::kInvalid);
}

TEST(VrpTable, EdgesOfTheAddressSpace) {
  auto t = VrpTable::build(std::vector<Vrp>{{P("0.0.0.0/0"), 0, 1},
                                            {P("255.255.255.255/32"), 32, 2},
                                            {P("::/0"), 0, 3},
                                            {P("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128"), 128, 4}});
  EXPECT_EQ(t.validate(P("0.0.0.0/0"), 1), Validity::kValid);
  EXPECT_EQ(t.validate(P("255.255.255.255/32"), 2), Validity::kValid);
  EXPECT_EQ(t.validate(P("255.255.255.254/32"), 2), Validity::kInvalid);
  EXPECT_EQ(t.validate(P("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128"), 4), Validity::kValid);
  EXPECT_EQ(t.validate(P("::1/128"), 3), Validity::kInvalid);
}

// A covering prefix with many VRPs, and nested prefixes with many: a
// lookup under the nested ones goes up a long chain of nodes to find
// the covering prefix's.
TEST(VrpTable, ManyEntriesOnACoveringPrefix) {
  std::vector<Vrp> v;
  for (uint32_t as = 1; as <= 40; ++as) v.push_back({P("10.0.0.0/8"), 24, as});
  v.push_back({P("10.1.0.0/16"), 24, 100});
  v.push_back({P("10.1.1.0/24"), 24, 200});
  for (uint32_t as = 300; as < 320; ++as) v.push_back({P("10.1.1.0/24"), 24, as});
  auto t = VrpTable::build(v);
  EXPECT_EQ(t.validate(P("10.1.1.0/24"), 20), Validity::kValid);
  EXPECT_EQ(t.validate(P("10.1.1.0/24"), 40), Validity::kValid);
  EXPECT_EQ(t.validate(P("10.1.1.0/24"), 100), Validity::kValid);
  EXPECT_EQ(t.validate(P("10.1.1.0/24"), 319), Validity::kValid);
  EXPECT_EQ(t.validate(P("10.1.1.0/24"), 41), Validity::kInvalid);
  EXPECT_EQ(t.validate(P("10.1.2.0/24"), 200), Validity::kInvalid);
  EXPECT_EQ(t.validate(P("10.2.0.0/16"), 7), Validity::kValid);
  EXPECT_EQ(t.validate(P("10.1.1.0/25"), 7), Validity::kInvalid);
}

// A cache may send any number of VRPs for one prefix: 100,000 for
// 10.0.0.0/8, each of another AS (every third AS from 1,000 on, so that
// the ASes between are listed by none), make a group that a lookup
// searches, not a chain of 100,000 nodes it walks (the summary of the
// ASes above a node is all ones past some 100 ASes, so the walk went on
// to the chain's top for every covered route the deepest VRP did not
// match). Every lookup under the /8 reads at most 64 nodes and group
// entries, and answers as RFC 6811 says.
TEST(VrpTable, ManyVrpsOnOnePrefixAreSearchedNotWalked) {
  constexpr uint32_t kCount = 100000;
  constexpr uint32_t kFirst = 1000;
  std::vector<Vrp> vrps;
  for (uint32_t k = 0; k < kCount; ++k) vrps.push_back({P("10.0.0.0/8"), 24, kFirst + 3 * k});
  // One listed AS with a second, longer max length: the longer counts.
  vrps.push_back({P("10.0.0.0/8"), 28, kFirst + 3 * 500});
  std::vector<internal::FamilyIndex<uint32_t>::Raw> raw;
  for (const Vrp& v : vrps) raw.push_back({v.prefix.addr().v4_value(), v.prefix.len(), v.max_len, v.asn});
  internal::FamilyIndex<uint32_t> index;
  index.build(raw);
  const auto table = VrpTable::build(vrps);
  EXPECT_EQ(table.size(), kCount + 1);
  const uint32_t last = kFirst + 3 * (kCount - 1);
  std::mt19937 rng(5);
  size_t most = 0;
  for (int i = 0; i < 2000; ++i) {
    const uint32_t addr = 0x0a000000u | (static_cast<uint32_t>(rng()) & 0x00ffffffu);
    const unsigned len = 8 + static_cast<unsigned>(rng() % 25);  // /8 to /32
    const auto as = static_cast<uint32_t>(kFirst - 10 + rng() % (last - kFirst + 20));
    most = std::max(most, index.reads(addr, len, as));
  }
  EXPECT_LE(most, 64u);
  // Listed ASes (the first, one inside, the last) at lengths their max
  // length allows, and one past it.
  for (const uint32_t as : {kFirst, kFirst + 3 * 777, last}) {
    EXPECT_LE(index.reads(0x0a010200u, 24, as), 64u);
    EXPECT_EQ(table.validate(P("10.0.0.0/8"), as), Validity::kValid);
    EXPECT_EQ(table.validate(P("10.1.2.0/24"), as), Validity::kValid);
    EXPECT_EQ(table.validate(P("10.1.2.0/25"), as), Validity::kInvalid);
  }
  EXPECT_EQ(table.validate(P("10.1.2.16/28"), kFirst + 3 * 500), Validity::kValid);
  EXPECT_EQ(table.validate(P("10.1.2.16/29"), kFirst + 3 * 500), Validity::kInvalid);
  // Unlisted: between two listed ASes, below the first, past the last.
  for (const uint32_t as : {kFirst + 1, kFirst + 3 * 777 + 2, kFirst - 1, last + 1, 0u})
    EXPECT_EQ(table.validate(P("10.1.2.0/24"), as), Validity::kInvalid) << as;
  EXPECT_EQ(table.validate(P("10.1.2.0/24"), std::nullopt), Validity::kInvalid);
  // Not covered: outside the /8, and shorter than it.
  EXPECT_EQ(table.validate(P("11.1.2.0/24"), kFirst), Validity::kNotFound);
  EXPECT_EQ(table.validate(P("10.0.0.0/7"), kFirst), Validity::kNotFound);
}

// Groups nested in groups and chains: 50,000 VRPs on a /8 and on a /16
// in it, three on a /24 in that, the same on an IPv6 /32, /48 and /64.
// A route under the /24 whose origin none of them lists goes up through
// all three prefixes, and still reads at most 64 nodes and entries.
TEST(VrpTable, NestedGroupsKeepLookupsShort) {
  constexpr uint32_t kCount = 50000;
  std::vector<Vrp> vrps;
  for (uint32_t k = 0; k < kCount; ++k) {
    vrps.push_back({P("10.0.0.0/8"), 24, 2 * k + 2});
    vrps.push_back({P("10.1.0.0/16"), 24, 2 * k + 200001});
    vrps.push_back({P("2001:db8::/32"), 64, 2 * k + 2});
    vrps.push_back({P("2001:db8:1::/48"), 64, 2 * k + 200001});
  }
  for (const uint32_t as : {7u, 9u, 11u}) {
    vrps.push_back({P("10.1.1.0/24"), 24, as});
    vrps.push_back({P("2001:db8:1:1::/64"), 64, as});
  }
  std::vector<internal::FamilyIndex<uint32_t>::Raw> raw4;
  std::vector<internal::FamilyIndex<internal::U128>::Raw> raw6;
  const auto key6 = [](const net::Prefix& p) {
    internal::U128 k = 0;
    for (uint8_t b : p.addr().bytes()) k = (k << 8) | b;
    return k;
  };
  for (const Vrp& v : vrps) {
    if (v.prefix.family() == net::IpFamily::V4) {
      raw4.push_back({v.prefix.addr().v4_value(), v.prefix.len(), v.max_len, v.asn});
    } else {
      raw6.push_back({key6(v.prefix), v.prefix.len(), v.max_len, v.asn});
    }
  }
  internal::FamilyIndex<uint32_t> index4;
  internal::FamilyIndex<internal::U128> index6;
  index4.build(raw4);
  index6.build(raw6);
  for (const uint32_t as : {1u, 3u, 8u, 200000u, 200002u, 400001u, 4000000000u}) {
    EXPECT_LE(index4.reads(0x0a010100u, 24, as), 64u) << as;
    EXPECT_LE(index6.reads(key6(P("2001:db8:1:1::/64")), 64, as), 64u) << as;
  }
  const auto table = VrpTable::build(vrps);
  const struct {
    const char* route;
    uint32_t as;
    Validity want;
  } cases[] = {
      {"10.1.1.0/24", 4, Validity::kValid},       // the /8's
      {"10.1.1.0/24", 200003, Validity::kValid},  // the /16's
      {"10.1.1.0/24", 9, Validity::kValid},       // the /24's
      {"10.1.1.0/24", 3, Validity::kInvalid},
      {"10.1.1.0/24", 200002, Validity::kInvalid},
      {"10.1.1.0/25", 9, Validity::kInvalid},
      {"2001:db8:1:1::/64", 100000, Validity::kValid},
      {"2001:db8:1:1::/64", 299999, Validity::kValid},
      {"2001:db8:1:1::/64", 11, Validity::kValid},
      {"2001:db8:1:1::/64", 100001, Validity::kInvalid},
      {"2001:db8:2::/48", 299999, Validity::kInvalid},  // the /48's AS, outside it
      {"2001:db9::/48", 2, Validity::kNotFound},
  };
  for (const auto& c : cases) EXPECT_EQ(table.validate(P(c.route), c.as), c.want) << c.route << " AS" << c.as;
}

// Random VRPs and routes drawn from a small address space so that they
// nest, collide and cover each other often.
net::Prefix random_prefix(bool v6, uint32_t bits, unsigned len) {
  uint8_t b[16] = {};
  if (v6) {
    b[0] = 0x20;
    b[1] = static_cast<uint8_t>(bits >> 24);
    b[2] = static_cast<uint8_t>(bits >> 16);
    b[15] = static_cast<uint8_t>(bits);
    return *net::Prefix::make(net::IpAddress::from_bytes(net::IpFamily::V6, b), len);
  }
  b[0] = static_cast<uint8_t>(bits >> 24);
  b[1] = static_cast<uint8_t>(bits >> 16);
  b[3] = static_cast<uint8_t>(bits);
  return *net::Prefix::make(net::IpAddress::from_bytes(net::IpFamily::V4, b), len);
}

rc::Gen<net::Prefix> gen_prefix() {
  return rc::gen::apply(
      [](bool v6, uint32_t bits, unsigned len) {
        // Few distinct high bits: 10.x and 0x0a/0x0b under 2000::/8.
        bits = (bits & 0x0301ffffu) | 0x0a000000u;
        return random_prefix(v6, bits, v6 ? len % 129 : len % 33);
      },
      rc::gen::arbitrary<bool>(), rc::gen::arbitrary<uint32_t>(), rc::gen::inRange(0u, 129u));
}

// Random VRP sets: few ASes and max lengths a little past the prefix.
rc::Gen<std::vector<Vrp>> gen_vrps() {
  return rc::gen::container<std::vector<Vrp>>(rc::gen::apply(
      [](net::Prefix p, unsigned extra, uint32_t asn) {
        unsigned max = p.family() == net::IpFamily::V4 ? 32u : 128u;
        return Vrp{p, static_cast<uint8_t>(std::min(max, p.len() + extra % 6)), asn % 5};
      },
      gen_prefix(), rc::gen::arbitrary<unsigned>(), rc::gen::arbitrary<uint32_t>()));
}

// A random route, one time in three at or under one of the VRPs, and its
// origin (NONE one time in eight).
RouteOrigin gen_route(const std::vector<Vrp>& vrps) {
  net::Prefix route = *gen_prefix();
  if (!vrps.empty() && *rc::gen::inRange(0, 3) == 0) {
    const Vrp& v = vrps[*rc::gen::inRange<size_t>(0, vrps.size())];
    unsigned max = v.prefix.family() == net::IpFamily::V4 ? 32u : 128u;
    route = *net::Prefix::make(v.prefix.addr(), std::min(max, v.prefix.len() + *rc::gen::inRange(0u, 4u)));
  }
  std::optional<uint32_t> origin;
  if (*rc::gen::inRange(0, 8) != 0) origin = *rc::gen::inRange<uint32_t>(0, 5);
  return {route, origin};
}

RC_GTEST_PROP(VrpTable, AgreesWithThePlainDefinition, ()) {
  auto vrps = *gen_vrps();
  auto table = VrpTable::build(vrps);
  for (int i = 0; i < 50; ++i) {
    auto [route, origin] = gen_route(vrps);
    RC_ASSERT(table.validate(route, origin) == validate_by_scan(vrps, route, origin));
  }
}

// validate_batch answers as validate does, for mixed families and any
// count (more than one batch, and a partial last one).
RC_GTEST_PROP(VrpTable, BatchAgreesWithSingleLookups, ()) {
  auto vrps = *gen_vrps();
  auto table = VrpTable::build(vrps);
  std::vector<RouteOrigin> routes;
  const size_t n = *rc::gen::inRange<size_t>(0, 70);
  for (size_t i = 0; i < n; ++i) {
    routes.push_back(gen_route(vrps));
  }
  std::vector<Validity> out(routes.size(), Validity::kValid);
  table.validate_batch(routes, out);
  for (size_t i = 0; i < routes.size(); ++i)
    RC_ASSERT(out[i] == table.validate(routes[i].route, routes[i].origin));
}

// Addresses over the whole space (so that VRP prefixes fall into many
// index buckets and cover buckets they do not start in), prefix lengths
// from /0 to full length, max lengths at the family's limit, past it and
// below the prefix length, and AS 0: each VRP a random prefix or one
// nested under an earlier VRP's prefix.
net::Prefix wide_prefix(bool v6, uint64_t hi, uint64_t lo, unsigned len) {
  uint8_t b[16] = {};
  for (int i = 0; i < 8; ++i) {
    b[i] = static_cast<uint8_t>(hi >> (56 - 8 * i));
    b[8 + i] = static_cast<uint8_t>(lo >> (56 - 8 * i));
  }
  return *net::Prefix::make(net::IpAddress::from_bytes(v6 ? net::IpFamily::V6 : net::IpFamily::V4, b),
                            std::min(len, v6 ? 128u : 32u));
}

// A prefix under p (or p itself), `more` bits longer, the extra bits random.
net::Prefix under(const net::Prefix& p, unsigned more, uint64_t bits) {
  const unsigned max = p.family() == net::IpFamily::V4 ? 32u : 128u;
  const unsigned len = std::min(max, p.len() + more);
  auto bytes = p.addr().bytes();
  for (unsigned bit = p.len(); bit < len; ++bit, bits >>= 1) {
    if (bits & 1) bytes[bit / 8] = static_cast<uint8_t>(bytes[bit / 8] | (0x80u >> (bit % 8)));
  }
  return *net::Prefix::make(net::IpAddress::from_bytes(p.family(), bytes.data()), len);
}

std::vector<Vrp> gen_wide_vrps(bool v6) {
  std::vector<Vrp> vrps;
  const unsigned max = v6 ? 128u : 32u;
  const size_t n = *rc::gen::inRange<size_t>(0, 60);
  for (size_t i = 0; i < n; ++i) {
    net::Prefix p = vrps.empty() || *rc::gen::inRange(0, 3) == 0
                        ? wide_prefix(v6, *rc::gen::arbitrary<uint64_t>(), *rc::gen::arbitrary<uint64_t>(),
                                      *rc::gen::inRange(0u, max + 1))
                        : under(vrps[*rc::gen::inRange<size_t>(0, vrps.size())].prefix, *rc::gen::inRange(0u, 20u),
                                *rc::gen::arbitrary<uint64_t>());
    unsigned max_len = p.len();
    switch (*rc::gen::inRange(0, 5)) {
      case 0: max_len = max; break;
      case 1: max_len = p.len() + *rc::gen::inRange(0u, 3u); break;  // may pass the family's limit
      case 2: max_len = p.len() > 0 ? p.len() - 1 : 0; break;        // matches nothing
      default: break;
    }
    vrps.push_back({p, static_cast<uint8_t>(max_len), *rc::gen::inRange<uint32_t>(0, 4)});
  }
  return vrps;
}

// Routes under the VRPs' prefixes (longer or shorter), or anywhere.
RouteOrigin gen_wide_route(const std::vector<Vrp>& vrps, bool v6) {
  const unsigned max = v6 ? 128u : 32u;
  net::Prefix route = wide_prefix(v6, *rc::gen::arbitrary<uint64_t>(), *rc::gen::arbitrary<uint64_t>(),
                                  *rc::gen::inRange(0u, max + 1));
  if (!vrps.empty() && *rc::gen::inRange(0, 4) != 0) {
    const net::Prefix& p = vrps[*rc::gen::inRange<size_t>(0, vrps.size())].prefix;
    if (*rc::gen::inRange(0, 4) == 0) {
      route = *net::Prefix::make(p.addr(), p.len() - std::min<unsigned>(p.len(), *rc::gen::inRange(0u, 3u)));
    } else {
      route = under(p, *rc::gen::inRange(0u, 40u), *rc::gen::arbitrary<uint64_t>());
    }
  }
  std::optional<uint32_t> origin;
  if (*rc::gen::inRange(0, 8) != 0) origin = *rc::gen::inRange<uint32_t>(0, 4);
  return {route, origin};
}

RC_GTEST_PROP(VrpTable, WholeAddressSpaceAgreesWithThePlainDefinition, ()) {
  const bool v6 = *rc::gen::arbitrary<bool>();
  auto vrps = gen_wide_vrps(v6);
  auto table = VrpTable::build(vrps);
  std::vector<RouteOrigin> routes;
  for (int i = 0; i < 60; ++i) routes.push_back(gen_wide_route(vrps, v6));
  RC_ASSERT(!first_disagreement(table, vrps, routes));
}

// Many VRPs for one prefix and for prefixes nested in it (up to 40: long
// chains of nodes, summaries of the ASes above that fill up; or 150 to
// 260, which the table keeps as a group it searches), ASes one to three
// apart (so that some between are listed by none), some ASes with a
// second max length, with more specifics under them, against the plain
// definition.
RC_GTEST_PROP(VrpTable, ManyVrpsPerPrefixAgreeWithThePlainDefinition, ()) {
  const bool v6 = *rc::gen::arbitrary<bool>();
  const unsigned max = v6 ? 128u : 32u;
  std::vector<Vrp> vrps;
  net::Prefix p = wide_prefix(v6, *rc::gen::arbitrary<uint64_t>(), *rc::gen::arbitrary<uint64_t>(),
                              *rc::gen::inRange(0u, 20u));
  const int levels = *rc::gen::inRange(1, 5);
  for (int level = 0; level < levels; ++level) {
    const uint32_t count =
        *rc::gen::arbitrary<bool>() ? *rc::gen::inRange<uint32_t>(1, 40) : *rc::gen::inRange<uint32_t>(150, 261);
    const uint32_t first_as = *rc::gen::inRange<uint32_t>(0, 50);
    const uint32_t step = *rc::gen::inRange<uint32_t>(1, 4);
    for (uint32_t k = 0; k < count; ++k) {
      const uint32_t as = first_as + k * step;
      vrps.push_back({p, static_cast<uint8_t>(std::min(max, p.len() + as % 4)), as});
      if (k % 7 == 3) vrps.push_back({p, static_cast<uint8_t>(std::min(max, p.len() + (as + 2) % 5)), as});
    }
    // A sibling beside the next level, so that parents go on past children.
    vrps.push_back({under(p, 4, *rc::gen::arbitrary<uint64_t>()), static_cast<uint8_t>(max), 7});
    p = under(p, *rc::gen::inRange(1u, 8u), *rc::gen::arbitrary<uint64_t>());
  }
  std::shuffle(vrps.begin(), vrps.end(), std::mt19937(*rc::gen::arbitrary<uint32_t>()));
  auto table = VrpTable::build(vrps);
  std::vector<RouteOrigin> routes;
  for (int i = 0; i < 80; ++i) {
    auto [route, origin] = gen_wide_route(vrps, v6);
    if (origin) {
      switch (*rc::gen::inRange(0, 3)) {
        case 0: origin = *rc::gen::inRange<uint32_t>(0, 850); break;
        case 1: origin = vrps[*rc::gen::inRange<size_t>(0, vrps.size())].asn; break;
        default: break;
      }
    }
    routes.push_back({route, origin});
  }
  RC_ASSERT(!first_disagreement(table, vrps, routes));
}

// The record in force at an address can lie many index buckets back: a
// short covering prefix, a dense cluster of longer ones under it (which
// makes the buckets many and small) and ends of nested prefixes far from
// their parent's start. Routes anywhere under the short prefix, and
// before, between and after the VRPs.
RC_GTEST_PROP(VrpTable, RecordInForceFromAnEarlierBucket, ()) {
  const bool v6 = *rc::gen::arbitrary<bool>();
  const unsigned max = v6 ? 128u : 32u;
  std::vector<Vrp> vrps;
  const net::Prefix outer = wide_prefix(v6, *rc::gen::arbitrary<uint64_t>(), *rc::gen::arbitrary<uint64_t>(),
                                        *rc::gen::inRange(1u, 9u));
  vrps.push_back({outer, static_cast<uint8_t>(outer.len() + 2), *rc::gen::inRange<uint32_t>(0, 4)});
  const net::Prefix cluster = under(outer, *rc::gen::inRange(6u, 14u), *rc::gen::arbitrary<uint64_t>());
  const size_t n = *rc::gen::inRange<size_t>(1, 300);
  for (size_t i = 0; i < n; ++i) {
    const net::Prefix p = under(cluster, *rc::gen::inRange(0u, 12u), *rc::gen::arbitrary<uint64_t>());
    vrps.push_back({p, static_cast<uint8_t>(std::min(max, p.len() + *rc::gen::inRange(0u, 3u))),
                    *rc::gen::inRange<uint32_t>(0, 4)});
  }
  if (*rc::gen::arbitrary<bool>()) {  // a nested prefix ending far from its parent's start
    const net::Prefix mid = under(outer, 1, *rc::gen::arbitrary<uint64_t>());
    vrps.push_back({mid, static_cast<uint8_t>(max), 2});
  }
  auto table = VrpTable::build(vrps);
  std::vector<RouteOrigin> routes;
  for (int i = 0; i < 80; ++i) {
    const net::Prefix& base = *rc::gen::inRange(0, 3) == 0 ? outer : cluster;
    net::Prefix route = *rc::gen::inRange(0, 5) == 0
                            ? wide_prefix(v6, *rc::gen::arbitrary<uint64_t>(), *rc::gen::arbitrary<uint64_t>(),
                                          *rc::gen::inRange(0u, max + 1))
                            : under(base, *rc::gen::inRange(0u, 30u), *rc::gen::arbitrary<uint64_t>());
    std::optional<uint32_t> origin;
    if (*rc::gen::inRange(0, 8) != 0) origin = *rc::gen::inRange<uint32_t>(0, 4);
    routes.push_back({route, origin});
  }
  RC_ASSERT(!first_disagreement(table, vrps, routes));
}

// validate_batch over any number of routes (none, one, a few, past one
// and two chunks of 256, counts that are not multiples of either), both
// families mixed in one call, against the plain definition route by
// route.
RC_GTEST_PROP(VrpTable, BatchesOfAnySizeAgreeWithThePlainDefinition, ()) {
  auto vrps = *gen_vrps();
  auto more = gen_wide_vrps(!vrps.empty() && vrps.front().prefix.family() == net::IpFamily::V4);
  vrps.insert(vrps.end(), more.begin(), more.end());
  auto table = VrpTable::build(vrps);
  const size_t n = *rc::gen::element<size_t>(0, 1, 15, 16, 17, 33, 255, 256, 257, 513, 600);
  std::vector<RouteOrigin> routes;
  for (size_t i = 0; i < n; ++i)
    routes.push_back(*rc::gen::arbitrary<bool>() ? gen_route(vrps) : gen_wide_route(vrps, *rc::gen::arbitrary<bool>()));
  std::vector<Validity> out(n + 1, Validity::kValid);  // one more than asked: left alone
  table.validate_batch(routes, out);
  for (size_t i = 0; i < n; ++i) RC_ASSERT(out[i] == validate_by_scan(vrps, routes[i].route, routes[i].origin));
  RC_ASSERT(out[n] == Validity::kValid);
}

// Large batches, which validate_batch sorts by index line before it
// looks them up when asked to (BatchOrder::kSorted): sizes from 1 to
// past a chunk of the way as given, both families mixed in one call, VRPs that
// nest in chains (IPv6 ones longer than /64 too), AS 0 and NONE, the
// same route many times in a batch, and the routes in any order (as
// drawn, sorted, reversed). Each batch is looked up as given, sorted,
// and as kAuto picks; the three must answer as the plain definition
// does, route by route, and leave the rest of `out` alone.
RC_GTEST_PROP(VrpTable, SortedBatchesAgreeWithThePlainDefinition, ()) {
  std::vector<Vrp> vrps = *gen_vrps();
  for (bool v6 : {false, true}) {
    auto more = gen_wide_vrps(v6);
    vrps.insert(vrps.end(), more.begin(), more.end());
  }
  // A chain of nested IPv6 VRPs past /64, under a random /40 to /64.
  const net::Prefix deep = wide_prefix(true, *rc::gen::arbitrary<uint64_t>(), *rc::gen::arbitrary<uint64_t>(),
                                       *rc::gen::inRange(40u, 65u));
  net::Prefix p = deep;
  for (unsigned level = *rc::gen::inRange(1u, 12u); level > 0 && p.len() < 128; --level) {
    p = under(p, *rc::gen::inRange(1u, 12u), *rc::gen::arbitrary<uint64_t>());
    vrps.push_back({p, static_cast<uint8_t>(std::min(128u, p.len() + *rc::gen::inRange(0u, 3u))),
                    *rc::gen::inRange<uint32_t>(0, 5)});
  }
  const auto table = VrpTable::build(vrps);
  // A pool of distinct routes, their states from the plain definition.
  std::vector<RouteOrigin> pool;
  for (int i = 0; i < 120; ++i) {
    switch (*rc::gen::inRange(0, 4)) {
      case 0: pool.push_back(gen_route(vrps)); break;
      case 1: pool.push_back(gen_wide_route(vrps, false)); break;
      case 2: pool.push_back(gen_wide_route(vrps, true)); break;
      default: {  // under the deep chain, longer than /64
        std::optional<uint32_t> origin;
        if (*rc::gen::inRange(0, 6) != 0) origin = *rc::gen::inRange<uint32_t>(0, 5);
        pool.push_back({under(deep, *rc::gen::inRange(1u, 64u), *rc::gen::arbitrary<uint64_t>()), origin});
      }
    }
  }
  std::vector<Validity> want(pool.size());
  for (size_t i = 0; i < pool.size(); ++i) want[i] = validate_by_scan(vrps, pool[i].route, pool[i].origin);
  constexpr size_t kFrom = 4096;
  const size_t n = *rc::gen::element<size_t>(1, 2, 255, 256, kFrom - 1, kFrom, kFrom + 1, kFrom + 255, 2 * kFrom + 3,
                                             5 * kFrom);
  // The batch: routes of the pool drawn at random (so many twice or more).
  std::mt19937 rng(*rc::gen::arbitrary<uint32_t>());
  std::vector<size_t> from(n);
  for (size_t& k : from) k = rng() % pool.size();
  switch (*rc::gen::inRange(0, 3)) {
    case 0: std::sort(from.begin(), from.end()); break;
    case 1: std::sort(from.rbegin(), from.rend()); break;
    default: break;
  }
  std::vector<RouteOrigin> routes;
  for (size_t k : from) routes.push_back(pool[k]);
  for (BatchOrder order : {BatchOrder::kAuto, BatchOrder::kAsGiven, BatchOrder::kSorted}) {
    std::vector<Validity> out(n + 1, Validity::kValid);  // one more than asked: left alone
    table.validate_batch(routes, out, order);
    for (size_t i = 0; i < n; ++i) RC_ASSERT(out[i] == want[from[i]]);
    RC_ASSERT(out[n] == Validity::kValid);
  }
}

// A large batch of the benchmark's routes against a table of the
// benchmark's VRPs (a quarter of its size), more than one slice of the
// sort: sorted and as given answer alike, route by route, and the
// answers are those of validate().
TEST(VrpTable, LargeSortedBatchAgreesWithSingleLookups) {
  std::mt19937_64 rng(7);
  const auto vrps = bench::synth(150000, rng);
  const auto table = VrpTable::build(vrps);
  const auto drawn = bench::synth_routes(vrps, VrpTable::kSortedSlice + 4113, rng);
  std::vector<RouteOrigin> routes;
  for (const auto& r : drawn) routes.push_back({r.route, r.origin});
  std::vector<Validity> sorted(routes.size());
  std::vector<Validity> given(routes.size());
  table.validate_batch(routes, sorted, BatchOrder::kSorted);
  table.validate_batch(routes, given, BatchOrder::kAsGiven);
  size_t counts[3] = {};
  for (size_t i = 0; i < routes.size(); ++i) {
    const Validity one = table.validate(routes[i].route, routes[i].origin);
    ASSERT_EQ(sorted[i], one) << routes[i].route.to_string();
    ASSERT_EQ(given[i], one) << routes[i].route.to_string();
    ++counts[static_cast<size_t>(one)];
  }
  EXPECT_GT(counts[0], 0u);
  EXPECT_GT(counts[1], 0u);
  EXPECT_GT(counts[2], 0u);
}

// The last address of p and the one after it (nullopt past the end).
std::pair<net::IpAddress, std::optional<net::IpAddress>> end_and_next(const net::Prefix& p) {
  const unsigned max = p.family() == net::IpFamily::V4 ? 32u : 128u;
  auto bytes = under(p, max - p.len(), ~uint64_t{0}).addr().bytes();
  for (unsigned bit = p.len(); bit < max; ++bit) bytes[bit / 8] = static_cast<uint8_t>(bytes[bit / 8] | (0x80u >> (bit % 8)));
  const net::IpAddress last = net::IpAddress::from_bytes(p.family(), bytes.data());
  for (int i = static_cast<int>(max / 8) - 1; i >= 0; --i) {
    if (++bytes[static_cast<size_t>(i)] != 0) return {last, net::IpAddress::from_bytes(p.family(), bytes.data())};
  }
  return {last, std::nullopt};
}

// The address just before p's first (nullopt at the start of the space).
std::optional<net::IpAddress> address_before(const net::Prefix& p) {
  const unsigned max = p.family() == net::IpFamily::V4 ? 32u : 128u;
  auto bytes = p.addr().bytes();
  for (int i = static_cast<int>(max / 8) - 1; i >= 0; --i) {
    if (bytes[static_cast<size_t>(i)]-- != 0) return net::IpAddress::from_bytes(p.family(), bytes.data());
  }
  return std::nullopt;
}

// Routes at each VRP prefix's first and last address and the one after
// (and the one before, with `before`), at full length and at the
// prefix's own, originated by an AS below `ases` (NONE one time in six
// with `none`).
std::vector<RouteOrigin> edge_routes(const std::vector<Vrp>& vrps, bool before, uint32_t ases, bool none) {
  std::vector<RouteOrigin> routes;
  for (const Vrp& v : vrps) {
    const unsigned max = v.prefix.family() == net::IpFamily::V4 ? 32u : 128u;
    const auto [last, next] = end_and_next(v.prefix);
    std::vector<net::IpAddress> at = {v.prefix.addr(), last};
    if (next) at.push_back(*next);
    if (auto prev = address_before(v.prefix); before && prev) at.push_back(*prev);
    for (const net::IpAddress& a : at) {
      for (unsigned len : {max, static_cast<unsigned>(v.prefix.len())}) {
        std::optional<uint32_t> origin;
        if (!none || *rc::gen::inRange(0, 6) != 0) origin = *rc::gen::inRange<uint32_t>(0, ases);
        routes.push_back({*net::Prefix::make(a, len), origin});
      }
    }
  }
  return routes;
}

// More records in one index bucket than its line holds (the rest spilt
// to a searched array): a dense cluster of nested and adjacent prefixes,
// looked up at each prefix's first and last address and the one after,
// host routes and the prefix's own length, single and batched.
RC_GTEST_PROP(VrpTable, DenseBucketsAgreeAtEveryEdge, ()) {
  const bool v6 = *rc::gen::arbitrary<bool>();
  const unsigned max = v6 ? 128u : 32u;
  const net::Prefix cluster = wide_prefix(v6, *rc::gen::arbitrary<uint64_t>(), *rc::gen::arbitrary<uint64_t>(),
                                          *rc::gen::inRange(0u, max - 10));
  std::vector<Vrp> vrps;
  // A far VRP, so that the index spans far more than the cluster.
  vrps.push_back({wide_prefix(v6, ~uint64_t{0}, ~uint64_t{0}, max), static_cast<uint8_t>(max), 1});
  const size_t n = *rc::gen::inRange<size_t>(1, 120);
  for (size_t i = 0; i < n; ++i) {
    const net::Prefix p = under(cluster, *rc::gen::inRange(0u, 10u), *rc::gen::arbitrary<uint64_t>());
    vrps.push_back({p, static_cast<uint8_t>(std::min(max, p.len() + *rc::gen::inRange(0u, 2u))),
                    *rc::gen::inRange<uint32_t>(0, 3)});
  }
  auto table = VrpTable::build(vrps);
  const auto routes = edge_routes(vrps, false, 3, false);
  const auto bad = first_disagreement(table, vrps, routes);
  RC_ASSERT(!bad);
}

// Chains of nested VRPs many levels deep: a lookup answers from the
// deepest VRP in force and goes up the chain only while the ASes above
// may hold the origin. Up to 40 levels of one to three VRPs each, or
// of a group of 5 to 40 (IPv6
// down to /128), ASes from a range wide enough that the summary of the
// ASes above fills up (so that it often says "maybe" for an AS that is
// not there), AS 0 among them, and siblings beside the chain so that
// each level goes on past the one nested in it. Routes at every level's
// prefix one bit shorter, as long, and up to three bits longer (past
// max lengths), and anywhere under it at full length; the origin some
// level's AS, a random one, AS 0 or NONE.
RC_GTEST_PROP(VrpTable, DeepChainsAgreeWithThePlainDefinition, ()) {
  const bool v6 = *rc::gen::arbitrary<bool>();
  const unsigned max = v6 ? 128u : 32u;
  const unsigned levels = *rc::gen::inRange(1u, 41u);
  std::vector<Vrp> vrps;
  std::vector<net::Prefix> chain;
  net::Prefix p = wide_prefix(v6, *rc::gen::arbitrary<uint64_t>(), *rc::gen::arbitrary<uint64_t>(),
                              *rc::gen::inRange(0u, 9u));
  for (unsigned level = 0; level < levels; ++level) {
    chain.push_back(p);
    // One to three VRPs, or one level in four a group of 5 to 40.
    const int per = *rc::gen::inRange(0, 4) == 0 ? *rc::gen::inRange(5, 41) : *rc::gen::inRange(1, 4);
    for (int k = 0; k < per; ++k) {
      const uint32_t as = *rc::gen::inRange<uint32_t>(0, 1000);
      vrps.push_back({p, static_cast<uint8_t>(std::min(max, p.len() + *rc::gen::inRange(0u, 3u))), as});
    }
    if (*rc::gen::arbitrary<bool>()) {
      const net::Prefix sibling = under(p, *rc::gen::inRange(1u, 6u), *rc::gen::arbitrary<uint64_t>());
      vrps.push_back({sibling, static_cast<uint8_t>(sibling.len()), *rc::gen::inRange<uint32_t>(0, 1000)});
    }
    if (p.len() == max) break;
    p = under(p, *rc::gen::inRange(1u, v6 ? 6u : 3u), *rc::gen::arbitrary<uint64_t>());
  }
  auto table = VrpTable::build(vrps);
  std::vector<RouteOrigin> routes;
  for (const net::Prefix& c : chain) {
    std::vector<net::Prefix> at;
    if (c.len() > 0) at.push_back(*net::Prefix::make(c.addr(), c.len() - 1));
    for (unsigned more = 0; more <= 3; ++more) at.push_back(*net::Prefix::make(c.addr(), std::min(max, c.len() + more)));
    at.push_back(under(c, max - c.len(), *rc::gen::arbitrary<uint64_t>()));
    for (const net::Prefix& route : at) {
      std::optional<uint32_t> origin;
      switch (*rc::gen::inRange(0, 5)) {
        case 0: origin = *rc::gen::inRange<uint32_t>(0, 1000); break;
        case 1: origin = 0; break;
        case 2: break;  // NONE
        default: origin = vrps[*rc::gen::inRange<size_t>(0, vrps.size())].asn; break;
      }
      routes.push_back({route, origin});
    }
  }
  const auto bad = first_disagreement(table, vrps, routes);
  RC_ASSERT(!bad);
}

// Many VRP prefixes under one short prefix, each aligned to its length
// (so that they begin and end on index bucket boundaries whatever the
// index's size, and buckets hold none, one, or more records than a
// line), IPv6 ones longer than /64 too: looked up at each prefix's
// first and last address and the addresses either side, at full length
// and at the prefix's own.
RC_GTEST_PROP(VrpTable, AlignedPrefixesAgreeAtBucketEdges, ()) {
  const bool v6 = *rc::gen::arbitrary<bool>();
  const unsigned max = v6 ? 128u : 32u;
  const net::Prefix base = wide_prefix(v6, *rc::gen::arbitrary<uint64_t>(), *rc::gen::arbitrary<uint64_t>(),
                                       *rc::gen::inRange(0u, v6 ? 60u : 12u));
  std::vector<Vrp> vrps;
  const size_t n = *rc::gen::inRange<size_t>(1, 400);
  for (size_t i = 0; i < n; ++i) {
    const net::Prefix q = under(base, *rc::gen::inRange(1u, v6 ? 80u : 20u), *rc::gen::arbitrary<uint64_t>());
    vrps.push_back({q, static_cast<uint8_t>(std::min(max, q.len() + *rc::gen::inRange(0u, 2u))),
                    *rc::gen::inRange<uint32_t>(0, 5)});
  }
  auto table = VrpTable::build(vrps);
  const auto routes = edge_routes(vrps, true, 5, true);
  const auto bad = first_disagreement(table, vrps, routes);
  RC_ASSERT(!bad);
}

// A table large enough for its arrays to hold whole huge pages
// (crates/alloc/huge_pages.h), the benchmark's VRPs and routes, against the
// plain definition for a sample of routes.
TEST(VrpTable, LargeTableAgreesWithThePlainDefinition) {
  std::mt19937_64 rng(42);
  const auto vrps = bench::synth(200000, rng);
  const auto routes = bench::synth_routes(vrps, 300, rng);
  const auto table = VrpTable::build(vrps);
  EXPECT_GE(table.memory_bytes(), 2 * alloc::kHugePage);
  std::vector<RouteOrigin> in;
  for (const auto& r : routes) in.push_back({r.route, r.origin});
  const auto bad = first_disagreement(table, vrps, in);
  ASSERT_FALSE(bad) << in[*bad].route.to_string();
  size_t counts[3] = {};
  for (const auto& r : in) ++counts[static_cast<size_t>(validate_by_scan(vrps, r.route, r.origin))];
  // The sample has routes of each state.
  EXPECT_GT(counts[0], 0u);
  EXPECT_GT(counts[1], 0u);
  EXPECT_GT(counts[2], 0u);
}

// One bucket with many records: 40 /32s inside a /24 (a record at each
// and one where the /24 goes on after it) fill the bucket's line and
// several overflow lines, linked one from the next; every address of
// the /24, with each /32's AS, the /24's and another, answers as the
// plain definition does, and so do the addresses just around the /24.
TEST(VrpTable, OverflowLinesOfOneBucketAgreeWithThePlainDefinition) {
  std::vector<Vrp> vrps{{P("10.0.0.0/24"), 24, 1}, {P("192.0.2.0/24"), 24, 2}};
  for (unsigned k = 0; k < 80; k += 2) {
    vrps.push_back({*net::Prefix::make(net::IpAddress::v4(0x0a000000u | k), 32), 32, 100 + k});
  }
  // The same VRPs in one family's index, to see the lines it makes.
  std::vector<internal::FamilyIndex<uint32_t>::Raw> raw;
  for (const Vrp& v : vrps) raw.push_back({v.prefix.addr().v4_value(), v.prefix.len(), v.max_len, v.asn});
  internal::FamilyIndex<uint32_t> index;
  index.build(raw);
  ASSERT_GE(index.more.size(), 3u);  // a chain of overflow lines, not one
  const auto table = VrpTable::build(vrps);
  std::vector<RouteOrigin> routes;
  for (uint32_t a = 0x09ffff00u; a <= 0x0a000100u; ++a) {
    const auto route = *net::Prefix::make(net::IpAddress::v4(a), 32);
    for (const uint32_t as : {1u, 7u, 100u + (a & 0xffu)}) routes.push_back({route, as});
  }
  routes.push_back({P("10.0.0.0/24"), 1});
  routes.push_back({P("10.0.0.0/23"), 1});
  const auto bad = first_disagreement(table, vrps, routes);
  ASSERT_FALSE(bad) << routes[*bad].route.to_string() << " AS" << routes[*bad].origin.value_or(0);
  EXPECT_EQ(table.validate(P("10.0.0.78/32"), 178), Validity::kValid);
  EXPECT_EQ(table.validate(P("10.0.0.79/32"), 179), Validity::kInvalid);
}

TEST(VrpTable, FullLengthMaxLengthAndSlashZero) {
  auto t = VrpTable::build(std::vector<Vrp>{{P("0.0.0.0/0"), 32, 5},
                                            {P("10.0.0.0/8"), 8, 6},
                                            {P("::/0"), 128, 5},
                                            {P("2001:db8::/32"), 32, 6}});
  EXPECT_EQ(t.validate(P("10.1.2.3/32"), 5), Validity::kValid);  // /0 allows every length
  EXPECT_EQ(t.validate(P("10.1.2.0/24"), 6), Validity::kInvalid);
  EXPECT_EQ(t.validate(P("10.0.0.0/8"), 6), Validity::kValid);
  EXPECT_EQ(t.validate(P("255.255.255.255/32"), 5), Validity::kValid);
  EXPECT_EQ(t.validate(P("2001:db8::1/128"), 5), Validity::kValid);
  EXPECT_EQ(t.validate(P("2001:db8::1/128"), 6), Validity::kInvalid);
  EXPECT_EQ(t.validate(P("ffff::/16"), 6), Validity::kInvalid);
  EXPECT_EQ(t.validate(P("ffff::/16"), std::nullopt), Validity::kInvalid);
}

}  // namespace
}  // namespace petrel::rpki
