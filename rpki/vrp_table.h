// The VRP table: RPKI origin validation of a route (RFC 6811 section 2).
//
// Built once from a list of VRPs and never changed after: when the data
// changes the daemon builds a new table and swaps a shared_ptr, so a
// lookup takes no lock.
//
// Per address family, the distinct VRP prefixes nest or are disjoint (they
// are prefixes). Each VRP is a node of a chain: the VRPs of the prefixes
// that contain its prefix, nested, the deepest last; a node holds its
// VRP (AS, prefix length, max length), the node before it and a 32-bit
// summary of the ASes before it (two bits per AS). A prefix with more
// than kChainMax VRPs is two nodes instead, one of its VRPs and one that
// stands for all of them, whose ASes a lookup finds by a binary search:
// so a lookup reads at most kChainMax nodes, or two and a search, per
// distinct prefix of its chain, however many VRPs a cache sends for one
// prefix (the summary fills up after some 100 ASes). The table is a sorted
// array of 8-byte records, each saying from which address on which
// chain's deepest node is in force: one at every VRP prefix's start, one
// where a nested prefix ends inside its parent, and one at the start of
// every index bucket a prefix runs into. A bucket is one cache line of
// eight records for IPv4 (two lines of five for IPv6), found from the
// address alone (no index read), two to four records a bucket; a bucket
// with more goes on in overflow lines of the same shape. A lookup reads its
// line, picks the record in force by counting comparisons, reads that
// record's node and answers from it: Valid if the deepest VRP matches;
// else it goes up the chain only while the summary of the ASes above
// holds the origin's bits (most Invalid routes never do), searching a
// group's ASes where it meets one. Two dependent
// reads into the table for most routes. The arrays' whole 2 MiB pages
// are advised for transparent huge pages (crates/alloc/huge_pages.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "crates/net/ip.h"
#include "crates/alloc/huge_pages.h"
#include "rpki/vrp.h"

namespace petrel::rpki {

namespace internal {

__extension__ typedef unsigned __int128 U128;

// What a lookup counts of its reads (FamilyIndex::reads counts them for
// tests; this one, the lookups', counts nothing and costs nothing).
struct NoCount {
  void operator()() const {}
};

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
  // One VRP of a chain of prefixes that contain some addresses: its AS,
  // prefix length and max length, the node of the VRP before it in the
  // chain (another VRP of the same prefix, else the deepest of the
  // prefix containing it; 0 for none) and `up`, the as_bits() of every
  // AS before it in the chain: a lookup reads the node before only when
  // the origin's bits are all in `up`. Node 0 stands for none.
  //
  // A prefix with more than kChainMax VRPs (a hostile cache can send a
  // million for one prefix) is two nodes: before, a group node (`group`
  // set) standing for all of them, whose `as` is where their list starts
  // in group_as, whose `up` holds the ASes before the prefix and whose
  // max_len is unused; then one of its VRPs as an ordinary node, the
  // prefix's deepest, whose `up` holds every AS of the group too.
  struct Node {
    uint32_t as;
    uint32_t up;
    uint32_t parent;
    uint8_t plen;
    uint8_t max_len;
    uint8_t len;  // the chain's shortest prefix length
    uint8_t group;
  };
  // The most VRPs a prefix keeps as a chain of its own nodes: a lookup
  // walks such a chain node by node, in one or two cache lines, where a
  // group costs a node and a binary search.
  static constexpr size_t kChainMax = 4;
  // From `key` on (to the next record), the addresses inside the prefix
  // of nodes[node] (its plen around `key`) are contained by that node's
  // chain; the others by none. A link record (node kLink | at, only in
  // a line's last place, when its bucket has more records than the line
  // holds): those from `key` on are in the line more[at], whose first
  // record is at `key`.
  struct Record {
    StoredKey<Key> key;
    uint32_t node;
  };
  static constexpr uint32_t kLink = uint32_t{1} << 31;
  // A bucket: the records in force in one slice of the addresses, the
  // first at the slice's first address, padded with copies of the last;
  // one cache line for IPv4 (eight 8-byte records), two for IPv6 (five
  // 24-byte ones).
  static constexpr unsigned kLineBytes = sizeof(Key) == 4 ? 64 : 128;
  static constexpr unsigned kPerLine = kLineBytes / sizeof(Record);
  struct alignas(64) Line {
    Record r[kPerLine];
  };
  struct Raw {
    Key start;
    uint8_t len;
    uint8_t max_len;
    uint32_t asn;
  };

  template <typename T>
  using Array = std::vector<T, alloc::HugePageAllocator<T>>;
  // (1 << index_bits) buckets and then one of none records for the
  // addresses outside them; empty until build().
  Array<Line> lines;
  // The overflow lines of buckets with more records than one line holds,
  // each bucket's in order, linked from its line's last place.
  Array<Line> more;
  Array<Node> nodes;
  Key top = 0;          // the bits every contained address shares ...
  Key top_mask = 0;     // ... are these
  unsigned shift = 0;   // their count
  unsigned index_bits = 1;  // the bits after those that pick a bucket
  // The groups of prefixes with more than kChainMax VRPs, each its count
  // and then its ASes, ascending and distinct; group_max at the same
  // index says up to which length each AS may announce the prefix (the
  // longest of its VRPs there). After the members every lookup reads, so
  // that those keep their places.
  Array<uint32_t> group_as;
  Array<uint8_t> group_max;

  void build(std::vector<Raw>& raw);
  [[nodiscard]] size_t memory_bytes() const;

  // A lookup in three steps, so that VrpTable::validate_batch can fetch
  // what the next step reads for many routes before it reads it: the
  // bucket's line (no memory read), the record in force in it (reads the
  // line, and its overflow lines while the record picked is a link), the
  // answer (reads the record's node, and the nodes before it
  // only when their ASes may hold the origin). Not for an index never
  // built (no lines).
  [[nodiscard]] const Line* line_of(Key addr) const;
  [[nodiscard]] const Record* pick(const Line* l, Key addr) const;
  // The record in force in one line (its first is at or before addr).
  [[nodiscard]] static const Record* pick_in(const Line* l, Key addr);
  template <typename Count = NoCount>
  [[nodiscard]] Validity answer(const Record* r, Key addr, unsigned len, uint32_t as, Count count = {}) const;
  [[nodiscard]] Validity validate(Key addr, unsigned len, uint32_t as) const;
  // How many nodes and group entries the lookup of (addr, len, as) reads
  // after its line: for tests, which bound what a cache's data can make
  // one lookup cost.
  [[nodiscard]] size_t reads(Key addr, unsigned len, uint32_t as) const;

 private:
  // A flat record: the chain's deepest node in force from `key` on.
  struct Flat {
    Key key;
    uint32_t node;
  };
  [[nodiscard]] uint32_t bucket_of(Key addr) const;
  [[nodiscard]] const Record* pick_more(const Record* link, Key addr) const;
  template <typename Count>
  [[nodiscard]] bool in_chain(uint32_t node, uint32_t as, unsigned len, Count count) const;
  template <typename Count>
  [[nodiscard]] bool in_group(uint32_t at, uint32_t as, unsigned len, Count count) const;
  // The nodes of the VRPs raw[from, to) of one prefix after `before`;
  // the prefix's deepest node.
  uint32_t add_chain(const std::vector<Raw>& raw, size_t from, size_t to, uint32_t before);
  uint32_t add_group(const std::vector<Raw>& raw, size_t from, size_t to, uint32_t before);
  // The flat records in address order; the highest address contained.
  Key sweep(const std::vector<Raw>& raw, std::vector<Flat>& flat);
  void index(const std::vector<Flat>& flat, Key low, Key high);
};

}  // namespace internal

// A route and its origin AS (nullopt: NONE) for VrpTable::validate_batch.
struct RouteOrigin {
  net::Prefix route;
  std::optional<uint32_t> origin;
};

// The order in which validate_batch looks routes up: kAuto is the one the
// daemon uses, as given (see VrpTable::validate_batch); kAsGiven and
// kSorted force one way (for tests and benchmarks).
enum class BatchOrder : uint8_t { kAuto, kAsGiven, kSorted };

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
  // table is larger than the caches (docs/performance.md). kSorted first
  // radix-sorts the batch by the index line each route reads, per
  // family, and looks it up in that order: the lines and nodes are then
  // read in increasing address order, and the answers go back to each
  // route's own place; a larger batch is sorted kSortedSlice routes at a
  // time (the sort's scratch, kept by the thread, stays a few MiB). Since
  // the eighth round the sort costs more than it saves at every batch
  // size measured (docs/performance.md), so kAuto looks every batch up
  // as given.
  static constexpr size_t kSortedSlice = size_t{1} << 17;
  void validate_batch(std::span<const RouteOrigin> routes, std::span<Validity> out,
                      BatchOrder order = BatchOrder::kAuto) const;

  // Distinct VRPs held.
  [[nodiscard]] size_t size() const { return size_; }
  [[nodiscard]] size_t memory_bytes() const;

 private:
  void validate_sorted(std::span<const RouteOrigin> routes, std::span<Validity> out) const;

  internal::FamilyIndex<uint32_t> v4_;
  internal::FamilyIndex<internal::U128> v6_;
  size_t size_ = 0;
};

}  // namespace petrel::rpki
