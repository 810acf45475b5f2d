// The VRP table: RPKI origin validation of a route (RFC 6811 section 2).
//
// Built once from a list of VRPs and never changed after: when the data
// changes the daemon builds a new table and swaps a shared_ptr, so a
// lookup takes no lock.
//
// Per address family, the distinct VRP prefixes nest or are disjoint (they
// are prefixes). The table is one sorted array of small records, each
// saying from which address on which VRP prefixes contain the addresses
// that follow: one at every VRP prefix's start, one where a nested prefix
// ends inside its parent, and one at the start of every index bucket a
// prefix runs into. A record names the longest of those prefixes (its
// "inner" length; an address past it is contained by none) and, when
// that prefix and its covering ones hold a single VRP, that VRP itself;
// else it points at a block of (AS, max length, prefix length) entries.
// A lookup reads the bucket's two offsets (a direct index on up to 16
// address bits past the bits every VRP prefix shares), searches that
// bucket's few records (their cache lines fetched together) and answers
// from the record unless the route's origin may be in the block (a
// 32-bit summary of the block's ASes says): two dependent reads into the
// table for most routes, three for the rest. A block holding covering
// prefixes' entries copies them when they are at most 16, else links to
// the covering prefix's block, so memory stays linear whatever the data.
// The arrays' whole 2 MiB pages are advised for transparent huge pages
// (internal/huge_pages.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "crates/net/ip.h"
#include "rpki/internal/huge_pages.h"
#include "rpki/vrp.h"

namespace petrel::rpki {

namespace internal {

__extension__ typedef unsigned __int128 U128;

// How a record holds its key: IPv6 keys as two 8-byte halves, so that a
// record needs no 16-byte alignment (24 bytes, not 32).
template <typename Key>
struct StoredKey;
template <>
struct StoredKey<uint32_t> {
  uint32_t v;
  [[nodiscard]] uint32_t get() const { return v; }
  static StoredKey of(uint32_t k) { return {k}; }
};
template <>
struct StoredKey<U128> {
  uint64_t hi;
  uint64_t lo;
  [[nodiscard]] U128 get() const { return (static_cast<U128>(hi) << 64) | lo; }
  static StoredKey of(U128 k) { return {static_cast<uint64_t>(k >> 64), static_cast<uint64_t>(k)}; }
};

// One family's index; Key is uint32_t (IPv4) or U128 (IPv6).
template <typename Key>
struct FamilyIndex {
  // kNone: no VRP prefix contains the addresses from `key` on. kSpill:
  // only in a line's last place, when the bucket has more records than a
  // line holds: those from `key` on are spill[a, a + ases).
  enum Kind : uint8_t { kNone = 0, kOne = 1, kBlock = 2, kSpill = 3 };
  // From `key` on (to the next record), the addresses inside the prefix
  // of length `inner` around `key` are contained by a chain of VRP
  // prefixes, the shortest of length `len` (kNone: 255, longer than any
  // route). kOne: the chain holds one VRP, (a = AS, len, max_len).
  // kBlock: its entries are in the block whose header is slots[a], and
  // `ases` has as_bits(AS) set for each of them: an origin whose bits
  // are not all set is in none, and the route is Invalid without a read
  // of the block.
  struct Record {
    StoredKey<Key> key;
    uint32_t a;
    uint32_t ases;
    uint8_t len;
    uint8_t max_len;
    uint8_t inner;
    uint8_t kind;
  };
  // A bucket: the records in force in one slice of the addresses, the
  // first at the slice's first address, padded with copies of the last;
  // one cache line for IPv4 (16-byte records), two for IPv6.
  static constexpr unsigned kPerLine = 4;
  struct alignas(64) Line {
    Record r[kPerLine];
  };
  // A block is a header slot (a = entry count, b = 1 + the slot of the
  // block it continues in, 0 for none) and then its entries (a = AS,
  // b = prefix length | max length << 8).
  struct Slot {
    uint32_t a;
    uint32_t b;
  };
  struct Raw {
    Key start;
    uint8_t len;
    uint8_t max_len;
    uint32_t asn;
  };

  template <typename T>
  using Array = std::vector<T, HugePageAllocator<T>>;
  // (1 << index_bits) buckets and then one of kNone records for the
  // addresses outside them; empty until build().
  Array<Line> lines;
  Array<Record> spill;  // the records of buckets past kPerLine, ascending
  Array<Slot> slots;
  Key top = 0;          // the bits every contained address shares ...
  Key top_mask = 0;     // ... are these
  unsigned shift = 0;   // their count
  unsigned index_bits = 1;  // the bits after those that pick a bucket

  void build(std::vector<Raw>& raw);
  [[nodiscard]] size_t memory_bytes() const;

  // A lookup in two steps, so that VrpTable::validate_batch can fetch the
  // lines of routes ahead while it decides the route in hand: the bucket
  // of addr (no memory read; null for an empty index), then the answer.
  [[nodiscard]] const Line* line_of(Key addr) const;
  [[nodiscard]] Validity decide(const Line* l, Key addr, unsigned len, uint32_t as) const;

 private:
  [[nodiscard]] uint32_t bucket_of(Key addr) const;
  [[nodiscard]] const Record& search_spill(const Record& s, Key addr) const;
  [[nodiscard]] bool in_block(uint32_t header, uint32_t as, unsigned len) const;
  // The records in address order, none per bucket yet; the highest address contained.
  Key sweep(const std::vector<Raw>& raw, std::vector<Record>& flat);
  void index(const std::vector<Record>& flat, Key low, Key high);
};

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
  // their prefix can match no route; they still cover routes (RFC 6811
  // asks nothing else of them). A max length past the family's allows
  // every length from the prefix's on.
  static VrpTable build(std::span<const Vrp> vrps);

  // The validation state of `route` originated by `origin`; nullopt stands
  // for NONE (the AS_PATH ends in an AS_SET), which matches no VRP. A VRP
  // for AS 0 matches no route (RFC 6483 section 4, RFC 7607).
  [[nodiscard]] Validity validate(const net::Prefix& route, std::optional<uint32_t> origin) const;
  // The same for many routes: out[i] for routes[i] (out.size() >= routes.size()).
  // The steps of the routes' lookups are interleaved so that their memory
  // reads overlap: fewer ns per route than validate() in a loop when the
  // table is larger than the caches (docs/performance.md).
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
