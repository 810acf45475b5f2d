// The ASPA table and AS_PATH verification by draft-ietf-sidrops-aspa-
// verification: the upstream procedure (a route from a customer, a lateral
// peer, or a route server / its client) and the downstream procedure (a
// route from a provider), each giving Valid, Invalid or Unknown.
//
// The draft's terms, as used here. The AS_PATH is compressed (each run of
// one AS, from prepending, becomes one) and numbered from the origin:
// AS(1) the origin ... AS(N) the neighbour, the AS that sent us the route.
// hop(A, B), for the hop from A up to B, is
//   - "Provider+" when A has an ASPA whose provider set holds B;
//   - "Not Provider+" when A has an ASPA whose provider set does not (an
//     ASPA listing only AS 0 says A has no providers: every hop from it is
//     Not Provider+);
//   - "No Attestation" when A has no ASPA.
// The up-ramp climbs from the origin: max_up_ramp is the largest K with
// hop(AS(i), AS(i+1)) not Not Provider+ for every i < K; min_up_ramp the
// largest K with every such hop Provider+. The down-ramp climbs from the
// neighbour the same way, by hop(AS(j+1), AS(j)) for j from N-1 down.
//   - A path with an AS_SET, or empty, is Invalid.
//   - Upstream: Invalid if max_up_ramp < N, else Unknown if
//     min_up_ramp < N, else Valid.
//   - Downstream: Invalid if max_up_ramp + max_down_ramp < N, else Unknown
//     if min_up_ramp + min_down_ramp < N, else Valid.
// The check that AS(N) is the neighbour's AS is the caller's (it knows the
// session; a transparent route server adds no AS).
//
// The table is built once and never changed (the daemon swaps a new one in,
// as for the VRP table): customer ASes in buckets by a hash, each bucket a
// sorted run of one entry array, each entry a run of one sorted provider
// array. verify() walks the path once, dropping repeats as it goes, and
// looks up each AS's ASPA at most twice (once for each direction of its
// hops).
//
// The buckets are laid out by a counting sort and searched by bisection,
// not probed: the hash is fixed and public, so a cache could choose
// customers that all share one bucket, and then a lookup costs log2 of
// their count, not their count (open addressing, as before, cost n / 2
// probes a lookup and n * n / 2 to build). Build is linear in the ASPAs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "rpki/pdu.h"

namespace petrel::rpki {

enum class AspaState : uint8_t { kUnknown, kValid, kInvalid };
std::string_view aspa_state_name(AspaState s);  // "unknown", "valid", "invalid"

// Which procedure applies: by the neighbour's relation to us.
enum class AspaDirection : uint8_t {
  kUpstream,    // from a customer, a lateral peer, a route server or its client
  kDownstream,  // from a provider
};

enum class Hop : uint8_t { kNoAttestation, kProviderPlus, kNotProviderPlus };

class AspaTable {
 public:
  AspaTable() = default;
  // From ASPAs sorted by customer, one per customer (Client::aspas()).
  // Others are sorted first, and of two for one customer the later wins.
  static AspaTable build(std::span<const Aspa> aspas);

  [[nodiscard]] Hop hop(uint32_t customer, uint32_t provider) const;

  // `path` is the AS_PATH's ASes as on the wire, neighbour first, origin
  // last; `has_as_set` says whether it had an AS_SET segment.
  [[nodiscard]] AspaState verify(std::span<const uint32_t> path, bool has_as_set, AspaDirection dir) const;

  [[nodiscard]] size_t size() const { return entries_.size(); }
  [[nodiscard]] bool empty() const { return entries_.empty(); }
  [[nodiscard]] size_t memory_bytes() const;

  // For tests: the entries a lookup of `customer` compares with its key,
  // which bisection keeps within 1 + log2 of the largest bucket.
  [[nodiscard]] size_t lookup_steps(uint32_t customer) const;

 private:
  struct Entry {
    uint32_t customer = 0;
    uint32_t offset = 0;  // into providers_
    uint32_t count = 0;
  };
  [[nodiscard]] const Entry* find(uint32_t customer, size_t* steps = nullptr) const;

  // Bucket b holds entries_[starts_[b]] up to entries_[starts_[b + 1]],
  // sorted by customer; the bucket count is a power of two, at least twice
  // the entry count, so a bucket holds at most one entry but by chance or
  // by choice (twice rather than once: fewer misses of the branch on a
  // bucket's size, the bench's figures as with open addressing).
  std::vector<uint32_t> starts_;
  std::vector<Entry> entries_;
  std::vector<uint32_t> providers_;
};

// The draft's procedure done literally, by the ramp definitions, with a
// linear scan of `aspas` for every hop: the reference that tests hold
// AspaTable::verify to, not for use on routes.
AspaState verify_by_definition(std::span<const Aspa> aspas, std::span<const uint32_t> path, bool has_as_set,
                               AspaDirection dir);

}  // namespace petrel::rpki
