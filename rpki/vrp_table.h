// The VRP table: RPKI origin validation of a route (RFC 6811 section 2).
//
// Built once from a list of VRPs and never changed after: when the data
// changes the daemon builds a new table and swaps a shared_ptr, so a
// lookup takes no lock.
//
// Per address family, the distinct VRP prefixes nest or are disjoint (they
// are prefixes). The table cuts the address space into intervals, each
// holding the (origin AS, max length, prefix length) entries of every VRP
// prefix that contains it, side by side. A lookup finds the route
// address's interval (a direct index on the top 16 address bits, then a
// binary search in that bucket, its lines prefetched) and scans that one
// block: an entry whose prefix is no longer than the route covers it, and
// may match it. Entries of nested prefixes are copied into each nested
// prefix's block, trading memory for one block read per lookup; past 16
// entries the block links to its parent's instead, so that memory stays
// linear whatever the data.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "crates/net/ip.h"
#include "rpki/vrp.h"

namespace petrel::rpki {

namespace internal {

__extension__ typedef unsigned __int128 U128;

// One family's index; Key is uint32_t (IPv4) or U128 (IPv6).
template <typename Key>
struct FamilyIndex {
  // One (AS, max length) of a VRP prefix of length `len`.
  struct Entry {
    uint32_t asn;
    uint8_t max_len;
    uint8_t len;
  };
  // An interval of the address space from `start` to the next start. The
  // VRP prefixes that contain it are those of the longest one and its
  // covering VRP prefixes; their entries lie together in entries
  // [first, first + count), and root_len is the shortest one's length.
  // count == 0: no VRP prefix contains the interval.
  struct Interval {
    Key start;
    uint32_t first;
    uint32_t count;
    int32_t link;  // more entries in blocks[link], or -1
    uint8_t root_len;
  };
  // A prefix's block whose covering prefixes' entries were too many to
  // copy: the block continues in blocks[link].
  struct Block {
    uint32_t first;
    uint32_t count;
    int32_t link;
  };
  struct Raw {
    Key start;
    uint8_t len;
    uint8_t max_len;
    uint32_t asn;
  };

  std::vector<Interval> intervals;  // ascending starts
  std::vector<Entry> entries;
  std::vector<Block> blocks;     // per distinct prefix
  std::vector<uint32_t> bucket;  // (1 << 16) + 1 offsets into intervals

  // A route of a batched lookup: its key, length, origin (0: NONE) and
  // its place in the answer.
  struct BatchItem {
    Key key;
    uint8_t len;
    uint32_t as;
    size_t index;
  };

  void build(std::vector<Raw>& raw);
  [[nodiscard]] Validity lookup(Key addr, unsigned len, std::optional<uint32_t> origin) const;
  // At most kBatch items; out[item.index] gets each answer.
  void lookup_batch(const BatchItem* items, size_t n, Validity* out) const;
  [[nodiscard]] size_t memory_bytes() const;

 private:
  void prefetch_bucket(Key addr) const;
  [[nodiscard]] const Interval* find(Key addr) const;  // null: before every interval
  [[nodiscard]] Validity decide(const Interval* iv, unsigned len, uint32_t as) const;
};

// Routes a batched lookup works on together.
inline constexpr size_t kBatch = 16;

}  // namespace internal

// A route and its origin AS (nullopt: NONE) for VrpTable::validate_batch.
struct RouteOrigin {
  net::Prefix route;
  std::optional<uint32_t> origin;
};

class VrpTable {
 public:
  VrpTable() = default;

  // Duplicates in `vrps` count once. VRPs whose max length is shorter than
  // their prefix or longer than the family allows can match no route; they
  // still cover routes (RFC 6811 asks nothing else of them).
  static VrpTable build(std::span<const Vrp> vrps);

  // The validation state of `route` originated by `origin`; nullopt stands
  // for NONE (the AS_PATH ends in an AS_SET), which matches no VRP. A VRP
  // for AS 0 matches no route (RFC 6483 section 4, RFC 7607).
  [[nodiscard]] Validity validate(const net::Prefix& route, std::optional<uint32_t> origin) const;
  // The same for many routes: out[i] for routes[i] (out.size() >= routes.size()).
  // Routes are taken kBatch at a time and their memory reads overlap, so
  // this is several times quicker per route than validate() in a loop
  // when the table is larger than the caches.
  void validate_batch(std::span<const RouteOrigin> routes, std::span<Validity> out) const;

  // Distinct VRPs held.
  [[nodiscard]] size_t size() const { return size_; }
  [[nodiscard]] size_t memory_bytes() const;

 private:
  internal::FamilyIndex<uint32_t> v4_;
  internal::FamilyIndex<internal::U128> v6_;
  size_t size_ = 0;
};

}  // namespace petrel::rpki
