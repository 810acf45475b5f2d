// A deterministic synthetic Internet routing table (tools/synth), for
// benchmarks and the load generator: about a million IPv4 and a quarter of
// a million IPv6 prefixes, grouped by attribute set the way one UPDATE
// would carry them, with prefix lengths, AS path lengths, communities and
// group sizes shaped like today's table (docs/synthetic-table.md says how
// and from where).
//
// Same Params and peer give the same table on every machine and standard
// library: the generator uses its own PRNG and integer arithmetic (plus
// IEEE division and square root, which are exact), never <random>'s
// distributions or a libm function.
//
// Values only: AS_PATH as RFC 4271 AS_SEQUENCE/AS_SET numbers (4-octet,
// RFC 6793), COMMUNITIES (RFC 1997), LARGE_COMMUNITY (RFC 8092). Turning
// them into UPDATE bytes is the caller's business.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "crates/net/ip.h"

namespace petrel::synth {

struct Params {
  uint64_t seed = 1;
  uint32_t v4_prefixes = 1'000'000;  // about 60 % /24, real length distribution
  uint32_t v6_prefixes = 230'000;    // /48 most common, then /32, /44, /40, /36, /29, ...
  // Distinct attribute sets over the whole table (both families), shared
  // out in proportion to the prefix counts. Clamped to at most one set per
  // prefix and at least one per family that has prefixes.
  uint32_t attr_sets = 300'000;
  // Most prefixes in one Group; a set with more is split (0 counts as 1).
  uint32_t max_group = 400;
};

// Above these, generate() clamps the counts (placement needs free space).
inline constexpr uint32_t kMaxV4Prefixes = 8'000'000;
inline constexpr uint32_t kMaxV6Prefixes = 8'000'000;

// One attribute set as plain values.
struct Attributes {
  uint8_t origin = 0;                  // 0 IGP, 1 EGP, 2 INCOMPLETE
  std::vector<uint32_t> as_path;       // AS_SEQUENCE: first the neighbour AS, last the origin AS
  std::vector<uint32_t> as_set;        // a trailing AS_SET (aggregates only), usually empty
  std::optional<uint32_t> med;
  std::vector<uint32_t> communities;   // RFC 1997, sorted, no repeats
  std::vector<std::array<uint32_t, 3>> large_communities;  // RFC 8092, sorted, no repeats

  friend bool operator==(const Attributes&, const Attributes&) = default;
};

// Prefixes sharing one attribute set, as one UPDATE would carry them.
struct Group {
  uint32_t attrs = 0;  // index into Table::attrs
  std::vector<net::Prefix> prefixes;

  friend bool operator==(const Group&, const Group&) = default;
};

struct Table {
  std::vector<Attributes> attrs;  // each distinct from every other
  std::vector<Group> v4, v6;      // every prefix exactly once per family

  [[nodiscard]] size_t v4_count() const;
  [[nodiscard]] size_t v6_count() const;

  friend bool operator==(const Table&, const Table&) = default;
};

// The table as neighbour `peer` (0, 1, 2, ...) sends it. Every peer gets the
// same prefixes grouped the same way; each has its own neighbour AS (the
// first AS of every path) and its own paths, MEDs and communities beyond
// the origin's part, so no attribute set is shared between two peers.
[[nodiscard]] Table generate(const Params& p, uint32_t peer = 0);

}  // namespace petrel::synth
