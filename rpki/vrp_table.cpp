// The VRP table (see vrp_table.h): RFC 6811 section 2 over a sorted array
// of records that say which chain of VRP prefixes contains the addresses
// from each record's key on, kept in cache lines found from the address.
#include "rpki/vrp_table.h"

#include "crates/sort/radix_sort.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <tuple>
#include <type_traits>

namespace petrel::rpki {
namespace internal {
namespace {

// At most 2^22 buckets (64 bytes each for IPv4: 256 MiB would hold
// 2^24 to 2^25 records, past any RPKI in sight).
constexpr unsigned kMaxIndexBits = 22;
// validate_batch: a batch looked up as given goes this many routes at a
// time, split by family.
constexpr size_t kChunk = 256;

template <typename Key>
constexpr unsigned kKeyBits = sizeof(Key) * 8;
// The family's longest prefix length.
template <typename Key>
constexpr auto kMaxLen = static_cast<uint8_t>(kKeyBits<Key>);

// The host bits of a prefix of length len (0 to the key's bits): two
// shifts, each shorter than the key, so no branch and no overlong shift.
template <typename Key>
Key host_mask(unsigned len) {
  return static_cast<Key>(static_cast<Key>(static_cast<Key>(~Key{0}) >> (len >> 1)) >> ((len + 1) >> 1));
}

// Leading bits a and b share.
template <typename Key>
unsigned common_bits(Key a, Key b) {
  Key x = a ^ b;
  unsigned n = 0;
  for (unsigned step = kKeyBits<Key> / 2; step > 0; step /= 2) {
    if ((x >> (kKeyBits<Key> - step)) == 0) {
      n += step;
      x = static_cast<Key>(x << step);
    }
  }
  return x == 0 ? kKeyBits<Key> : n;
}

// Two bits of 32 for an AS: a chain's summary of the ASes before a node
// (Node::up; a lookup reads up the chain only where the origin's bits are
// all there).
uint32_t as_bits(uint32_t as) {
  const uint32_t h = as * 0x9e3779b1u;
  return (uint32_t{1} << (h >> 27)) | (uint32_t{1} << ((h >> 22) & 31));
}

uint32_t key_of_v4(const net::IpAddress& a) { return a.v4_value(); }

U128 key_of_v6(const net::IpAddress& a) {
  uint64_t hi = 0;
  uint64_t lo = 0;
  std::memcpy(&hi, a.data(), 8);
  std::memcpy(&lo, a.data() + 8, 8);
  if constexpr (std::endian::native == std::endian::little) {
    hi = __builtin_bswap64(hi);
    lo = __builtin_bswap64(lo);
  }
  return (static_cast<U128>(hi) << 64) | lo;
}

template <typename Key>
bool raw_less(const typename FamilyIndex<Key>::Raw& a, const typename FamilyIndex<Key>::Raw& b) {
  return std::tie(a.start, a.len, a.asn, a.max_len) < std::tie(b.start, b.len, b.asn, b.max_len);
}

// IPv4 VRPs sorted as raw_less orders them: radix_sort_by of (start,
// length, index) in one 8-byte word (the index in the low 24 bits: at
// most 2^24 VRPs), then each run of one prefix by AS and max length.
// Several times quicker than a comparison sort of 600,000.
template <typename Raw>
bool radix_sort_v4(std::vector<Raw>& raw) {
  constexpr unsigned kIndexBits = 24;
  if (raw.size() >= (size_t{1} << kIndexBits)) return false;
  std::vector<uint64_t> a(raw.size());
  std::vector<uint64_t> tmp;
  for (size_t i = 0; i < raw.size(); ++i)
    a[i] = (uint64_t{raw[i].start} << 32) | (uint64_t{raw[i].len} << kIndexBits) | i;
  sort::radix_sort_by(a, tmp, kIndexBits, 64, [](uint64_t v) { return v; });
  std::vector<Raw> sorted(raw.size());
  for (size_t i = 0; i < a.size(); ++i) sorted[i] = raw[a[i] & ((uint64_t{1} << kIndexBits) - 1)];
  for (size_t i = 0; i < sorted.size();) {
    size_t j = i + 1;
    while (j < sorted.size() && sorted[j].start == sorted[i].start && sorted[j].len == sorted[i].len) ++j;
    if (j - i > 1) {
      std::sort(sorted.begin() + static_cast<ptrdiff_t>(i), sorted.begin() + static_cast<ptrdiff_t>(j),
                raw_less<uint32_t>);
    }
    i = j;
  }
  raw.swap(sorted);
  return true;
}

}  // namespace

template <typename Key>
void FamilyIndex<Key>::build(std::vector<Raw>& raw) {
  // Sorted by start, shorter first: a prefix comes after every prefix
  // that contains it.
  bool sorted = false;
  if constexpr (std::is_same_v<Key, uint32_t>) sorted = !raw.empty() && radix_sort_v4(raw);
  if (!sorted) std::sort(raw.begin(), raw.end(), raw_less<Key>);
  raw.erase(std::unique(raw.begin(), raw.end(),
                        [](const Raw& a, const Raw& b) { return !raw_less<Key>(a, b) && !raw_less<Key>(b, a); }),
            raw.end());
  std::vector<Flat> flat;
  const Key high = sweep(raw, flat);
  index(flat, flat.empty() ? Key{0} : flat.front().key, high);
}

template <typename Key>
Key FamilyIndex<Key>::sweep(const std::vector<Raw>& raw, std::vector<Flat>& flat) {
  // The open prefixes, each nested in the one below it, with the node of
  // its chain's deepest VRP.
  struct Open {
    Key end;
    uint32_t node;
  };
  std::vector<Open> stack;
  nodes.clear();
  nodes.reserve(raw.size() + 1);
  nodes.push_back({0, 0, 0, 0, 0, 255, 0});  // len 255: longer than any route
  group_as.clear();
  group_max.clear();
  flat.reserve(raw.size() + raw.size() / 2);
  auto emit = [&](Key key, uint32_t node) {
    if (!flat.empty() && flat.back().key == key) {
      flat.back().node = node;  // the chain changes again at the same address
    } else {
      flat.push_back({key, node});
    }
  };
  auto close_top = [&] {
    const Key e = stack.back().end;
    stack.pop_back();
    // The parent goes on past its child: its chain again from e + 1.
    if (!stack.empty() && stack.back().end > e) emit(static_cast<Key>(e + 1), stack.back().node);
  };
  Key high = 0;
  for (size_t i = 0; i < raw.size();) {
    size_t j = i + 1;
    while (j < raw.size() && raw[j].start == raw[i].start && raw[j].len == raw[i].len) ++j;
    const Key start = raw[i].start;
    const uint8_t len = raw[i].len;
    while (!stack.empty() && stack.back().end < start) close_top();
    const uint32_t before = stack.empty() ? 0 : stack.back().node;
    const uint32_t deepest = j - i > kChainMax ? add_group(raw, i, j, before) : add_chain(raw, i, j, before);
    const Open n{static_cast<Key>(start | host_mask<Key>(len)), deepest};
    high = std::max(high, n.end);
    emit(start, n.node);
    stack.push_back(n);
    i = j;
  }
  while (!stack.empty()) close_top();
  return high;
}

template <typename Key>
uint32_t FamilyIndex<Key>::add_chain(const std::vector<Raw>& raw, size_t from, size_t to, uint32_t before) {
  for (size_t k = from; k < to; ++k) {
    const Node b = nodes[before];
    const uint32_t up = before == 0 ? 0 : b.up | as_bits(b.as);
    const uint8_t shortest = before == 0 ? raw[k].len : b.len;
    // A max length past the family's allows what the family's does.
    nodes.push_back({raw[k].asn, up, before, raw[k].len, std::min(raw[k].max_len, kMaxLen<Key>), shortest, 0});
    before = static_cast<uint32_t>(nodes.size() - 1);
  }
  return before;
}

template <typename Key>
uint32_t FamilyIndex<Key>::add_group(const std::vector<Raw>& raw, size_t from, size_t to, uint32_t before) {
  // The run is sorted by AS, then max length: each AS once, with its
  // longest max length (a VRP allows every length from the prefix's to
  // its max length, so one AS's VRPs of one prefix allow those up to the
  // longest).
  const Node b = nodes[before];
  const uint32_t above = before == 0 ? 0 : b.up | as_bits(b.as);
  const uint8_t len = raw[from].len;
  const uint8_t shortest = before == 0 ? len : b.len;
  const auto at = static_cast<uint32_t>(group_as.size());
  group_as.push_back(0);  // the count, below
  group_max.push_back(0);
  uint32_t all = above;
  for (size_t k = from; k < to; ++k) {
    const uint8_t max_len = std::min(raw[k].max_len, kMaxLen<Key>);
    if (group_as.size() > at + 1 && group_as.back() == raw[k].asn) {
      group_max.back() = std::max(group_max.back(), max_len);
      continue;
    }
    group_as.push_back(raw[k].asn);
    group_max.push_back(max_len);
    all |= as_bits(raw[k].asn);
  }
  group_as[at] = static_cast<uint32_t>(group_as.size() - at - 1);
  nodes.push_back({at, above, before, len, 0, shortest, 1});
  const auto group = static_cast<uint32_t>(nodes.size() - 1);
  // The prefix's deepest node: its first AS, as any chain's, so that a
  // lookup answers a route of that AS from it alone; every other origin
  // whose bits the group's ASes hold goes on to the group node.
  nodes.push_back({group_as[at + 1], all, group, len, group_max[at + 1], shortest, 0});
  return static_cast<uint32_t>(nodes.size() - 1);
}

template <typename Key>
uint32_t FamilyIndex<Key>::bucket_of(Key addr) const {
  return static_cast<uint32_t>(static_cast<Key>(addr << shift) >> (kKeyBits<Key> - index_bits));
}

template <typename Key>
void FamilyIndex<Key>::index(const std::vector<Flat>& flat, Key low, Key high) {
  // Index the bits after those every contained address shares, with two
  // to four records a bucket on average, so that nearly every bucket fits
  // in its line (eight places for IPv4, five for IPv6). A bucket starts
  // with the record in force at its first address (node 0 if none is),
  // so that a lookup never looks into an earlier bucket and always finds
  // a record.
  index_bits = std::clamp<unsigned>(static_cast<unsigned>(std::bit_width(flat.size())), 3, kMaxIndexBits + 2) - 2;
  shift = std::min(common_bits(low, high), kKeyBits<Key> - index_bits);
  top_mask = static_cast<Key>(~host_mask<Key>(shift));
  top = static_cast<Key>(low & top_mask);
  const size_t buckets = size_t{1} << index_bits;
  Line none_line{};
  for (Record& r : none_line.r) r = {StoredKey<Key>::of(Key{0}), 0};
  lines.assign(buckets + 1, none_line);
  more.clear();
  std::vector<Record> in;  // the bucket's records
  size_t j = 0;
  for (size_t b = 0; b < buckets; ++b) {
    const Key base = static_cast<Key>(top | (static_cast<Key>(b) << (kKeyBits<Key> - index_bits - shift)));
    in.clear();
    if (j == flat.size() || flat[j].key != base) {
      uint32_t node = 0;
      if (j > 0) {
        const Flat& before = flat[j - 1];
        if (((before.key ^ base) & static_cast<Key>(~host_mask<Key>(nodes[before.node].plen))) == 0) node = before.node;
      }
      in.push_back({StoredKey<Key>::of(base), node});
    }
    for (; j < flat.size() && bucket_of(flat[j].key) == b; ++j)
      in.push_back({StoredKey<Key>::of(flat[j].key), flat[j].node});
    // While more records are left than a line holds: all but the last
    // place, and there a link keyed as the next record to the next line.
    // Indices, not pointers: `more` grows.
    Line* line = &lines[b];
    size_t k = 0;
    while (in.size() - k > kPerLine) {
      for (unsigned p = 0; p + 1 < kPerLine; ++p) line->r[p] = in[k + p];
      k += kPerLine - 1;
      const auto at = static_cast<uint32_t>(more.size());
      line->r[kPerLine - 1] = {in[k].key, kLink | at};
      more.emplace_back();
      line = &more[at];
    }
    for (unsigned p = 0; p < kPerLine; ++p) line->r[p] = in[std::min<size_t>(k + p, in.size() - 1)];
  }
  // `nodes` was reserved for a node a VRP, and a prefix of more than
  // kChainMax VRPs takes two: moved to an array of its size only when
  // that frees much (a cache's million VRPs of one prefix), not for the
  // 121 nodes that vrp_bench's 600,000 VRPs leave unused (38 groups of 5
  // to 7), which would copy 7.7 MB to fresh pages.
  if (nodes.capacity() - nodes.size() > nodes.capacity() / 16) nodes.shrink_to_fit();
  group_as.shrink_to_fit();
  group_max.shrink_to_fit();
}

template <typename Key>
[[gnu::always_inline]] inline const typename FamilyIndex<Key>::Line* FamilyIndex<Key>::line_of(Key addr) const {
  // Outside the shared bits: the last line, of none records keyed 0.
  const size_t b = (addr & top_mask) == top ? bucket_of(addr) : lines.size() - 1;
  return lines.data() + b;
}

template <typename Key>
const typename FamilyIndex<Key>::Record* FamilyIndex<Key>::pick_more(const Record* link, Key addr) const {
  // The next line's first record is at the link's key, at or before
  // addr; pick in it as in a bucket's line. Bounded by the bucket's
  // overflow lines (the last has no link).
  while (link->node & kLink) link = pick_in(&more[link->node & ~kLink], addr);
  return link;
}

template <typename Key>
template <typename Count>
[[gnu::always_inline]] inline bool FamilyIndex<Key>::in_chain(uint32_t node, uint32_t as, unsigned len,
                                                              Count count) const {
  // Up the chain while its ASes may hold the origin; bounded by the
  // chain's length (its first node's `up` is 0): at most kChainMax nodes
  // for each distinct prefix, or two (a VRP and the group's node) and a
  // search of the group for a prefix of more. Inlined into the lookups,
  // as gcc 12 chose to before groups and stopped choosing with them (the
  // batched lookups' registers were laid out otherwise).
  const uint32_t bits = as_bits(as);
  for (;;) {
    count();
    const Node& m = nodes[node];
    if (m.group != 0) [[unlikely]] {
      if (m.plen <= len && in_group(m.as, as, len, count)) return true;
    } else if (m.as == as && m.plen <= len && len <= m.max_len) {
      return true;
    }
    if ((m.up & bits) != bits) return false;
    node = m.parent;
  }
}

template <typename Key>
template <typename Count>
[[gnu::noinline]] bool FamilyIndex<Key>::in_group(uint32_t at, uint32_t as, unsigned len, Count count) const {
  // The group's last AS at or below `as` (its first when none is), by
  // halving: about log2 of the count reads. Out of line: a group is rare
  // (a real table has few prefixes of more than kChainMax VRPs), and
  // in_chain's loop stays as short as it was without groups.
  count();
  size_t n = group_as[at];
  const uint32_t* a = group_as.data() + at + 1;
  while (n > 1) {
    count();
    const size_t half = n / 2;
    if (a[half] <= as) a += half;
    n -= half;
  }
  count();
  return *a == as && len <= group_max[static_cast<size_t>(a - group_as.data())];
}

template <typename Key>
[[gnu::always_inline]] inline const typename FamilyIndex<Key>::Record* FamilyIndex<Key>::pick_in(const Line* l,
                                                                                                 Key addr) {
  // The line's last record at or before addr: its first is, and the
  // others are ascending (padding repeats the last), so the count of the
  // others at or before addr is its index. No branch.
  unsigned at = 0;
  // Unrolled: gcc 12 at -O2 keeps a loop (-O3 unrolls it). In cache a
  // sorted batch of 65,536 routes cost a median 23.1 ns a route unrolled
  // against 30.8 (four runs each, ranges 21.7-31.9 and 24.1-33.8).
#pragma GCC unroll 8
  for (unsigned k = 1; k < kPerLine; ++k) at += unsigned{l->r[k].key.get() <= addr};
  return &l->r[at];
}

template <typename Key>
[[gnu::always_inline]] inline const typename FamilyIndex<Key>::Record* FamilyIndex<Key>::pick(const Line* l,
                                                                                              Key addr) const {
  // The bucket's line, then its overflow lines while the record in force
  // is a link.
  const Record* r = pick_in(l, addr);
  if (r->node & kLink) [[unlikely]] r = pick_more(r, addr);
  return r;
}

template <typename Key>
template <typename Count>
[[gnu::always_inline]] inline Validity FamilyIndex<Key>::answer(const Record* r, Key addr, unsigned len, uint32_t as,
                                                                Count count) const {
  count();
  const Node& n = nodes[r->node];
  // RFC 6811 section 2: a VRP covers the route when its prefix is no longer
  // than the route's and contains it (every VRP of the chain contains the
  // address when the deepest does); it matches when it also allows the
  // route's length and names the route's origin, which is not NONE (as 0
  // here) and a VRP for AS 0 never names. Straight-line for the chain's
  // deepest VRP; the nodes before it are read only when their ASes' bits
  // hold the origin's.
  // Bitwise & on purpose: each condition is a flag, not a branch.
  const uint32_t covered = static_cast<uint32_t>(((r->key.get() ^ addr) & ~host_mask<Key>(n.plen)) == 0) &
                           static_cast<uint32_t>(n.len <= len);
  uint32_t valid = static_cast<uint32_t>(n.as == as) & static_cast<uint32_t>(n.plen <= len) &
                   static_cast<uint32_t>(len <= n.max_len);
  const uint32_t bits = as_bits(as);
  if ((static_cast<uint32_t>((n.up & bits) == bits) & covered & (valid ^ 1u)) != 0) [[unlikely]]
    valid = static_cast<uint32_t>(in_chain(n.parent, as, len, count));
  valid &= static_cast<uint32_t>(as != 0);
  // kNotFound 0, kValid 1, kInvalid 2.
  return static_cast<Validity>(covered * (2 - valid));
}

template <typename Key>
Validity FamilyIndex<Key>::validate(Key addr, unsigned len, uint32_t as) const {
  if (lines.empty()) return Validity::kNotFound;  // never built
  return answer(pick(line_of(addr), addr), addr, len, as);
}

template <typename Key>
size_t FamilyIndex<Key>::reads(Key addr, unsigned len, uint32_t as) const {
  if (lines.empty()) return 0;
  size_t n = 0;
  const auto count = [&n] { ++n; };
  (void)answer(pick(line_of(addr), addr), addr, len, as, count);
  return n;
}

template <typename Key>
size_t FamilyIndex<Key>::memory_bytes() const {
  return (lines.capacity() + more.capacity()) * sizeof(Line) + nodes.capacity() * sizeof(Node) +
         group_as.capacity() * sizeof(uint32_t) + group_max.capacity();
}

template struct FamilyIndex<uint32_t>;
template struct FamilyIndex<U128>;

}  // namespace internal

VrpTable VrpTable::build(std::span<const Vrp> vrps) {
  std::vector<internal::FamilyIndex<uint32_t>::Raw> raw4;
  std::vector<internal::FamilyIndex<internal::U128>::Raw> raw6;
  for (const Vrp& v : vrps) {
    if (v.prefix.family() == net::IpFamily::V4) {
      raw4.push_back({internal::key_of_v4(v.prefix.addr()), v.prefix.len(), v.max_len, v.asn});
    } else {
      raw6.push_back({internal::key_of_v6(v.prefix.addr()), v.prefix.len(), v.max_len, v.asn});
    }
  }
  VrpTable t;
  t.v4_.build(raw4);
  t.v6_.build(raw6);
  t.size_ = raw4.size() + raw6.size();
  return t;
}

namespace {

using internal::kChunk;

// A family's routes looked up as a rolling pipeline, so that the reads of
// many routes are in flight at once: route i + kLineAhead's line
// prefetched, route i + kPickAhead's record picked in its line (its node
// prefetched), route i answered into out[r.place(i)]. One routine for
// a batch as given (up to kChunk routes of a family) and for a sorted
// one, whose lines then come in address order. (The fifth and sixth
// rounds did each step for a whole chunk before the next: for batches
// of 256 as given the two cost the same within the noise of the seventh
// round's runs, docs/performance.md.) `r` gives each route's line
// (r.line(f, i)), key, length, origin and place in `out`.
constexpr size_t kLineAhead = 32;
constexpr size_t kPickAhead = 16;
template <typename Key, typename Routes>
void look_up(const internal::FamilyIndex<Key>& f, const Routes& r, size_t n, Validity* out) {
  using Index = internal::FamilyIndex<Key>;
  if (f.lines.empty()) {  // never built
    for (size_t i = 0; i < n; ++i) out[r.place(i)] = Validity::kNotFound;
    return;
  }
  // No helper for the prefetches: gcc 12 at -O2 deletes a call to a
  // lambda that only prefetches (it finds the lambda free of side
  // effects before inlining it), and with it the prefetch.
  constexpr bool kTwoLines = sizeof(typename Index::Line) > 64;
  for (size_t i = 0; i < std::min(n, kLineAhead); ++i) {
    const auto* l = reinterpret_cast<const char*>(r.line(f, i));
    __builtin_prefetch(l);
    if constexpr (kTwoLines) __builtin_prefetch(l + 64);
  }
  const typename Index::Record* rec[kPickAhead];
  for (size_t i = 0; i < std::min(n, kPickAhead); ++i) {
    rec[i] = f.pick(r.line(f, i), r.key_at(i));
    __builtin_prefetch(f.nodes.data() + rec[i]->node);
  }
  for (size_t i = 0; i < n; ++i) {
    if (i + kLineAhead < n) {
      const auto* l = reinterpret_cast<const char*>(r.line(f, i + kLineAhead));
      __builtin_prefetch(l);
      if constexpr (kTwoLines) __builtin_prefetch(l + 64);
    }
    const typename Index::Record* in_force = rec[i % kPickAhead];
    if (i + kPickAhead < n) {
      const typename Index::Record* next = f.pick(r.line(f, i + kPickAhead), r.key_at(i + kPickAhead));
      __builtin_prefetch(f.nodes.data() + next->node);
      rec[i % kPickAhead] = next;
    }
    out[r.place(i)] = f.answer(in_force, r.key_at(i), r.len_at(i), r.as_at(i));
  }
}

// Up to kChunk routes of one family of a batch taken as given, for
// look_up; the answer of route i goes to out[at[i]].
template <typename Key>
struct Lane {
  using Line = typename internal::FamilyIndex<Key>::Line;
  const Line* ln[kChunk];
  Key key[kChunk];
  uint32_t as[kChunk];
  uint8_t len[kChunk];
  uint32_t at[kChunk];
  size_t n = 0;

  // The route's line is found here, once (none when `f` was never
  // built: look_up then reads no line), and the first kLineAhead lines
  // are fetched while the batch is still being split, so that neither
  // family's lookups start by waiting for memory.
  void add(const internal::FamilyIndex<Key>& f, Key k, uint32_t origin, uint8_t length, uint32_t place) {
    ln[n] = f.lines.empty() ? nullptr : f.line_of(k);
    if (n < kLineAhead && ln[n]) {  // (no line: nothing to fetch, and no pointer arithmetic on null)
      const auto* l = reinterpret_cast<const char*>(ln[n]);
      __builtin_prefetch(l);
      if constexpr (sizeof(Line) > 64) __builtin_prefetch(l + 64);
    }
    key[n] = k, as[n] = origin, len[n] = length, at[n++] = place;
  }

  [[nodiscard]] const Line* line(const internal::FamilyIndex<Key>& /*f*/, size_t i) const { return ln[i]; }
  [[nodiscard]] Key key_at(size_t i) const { return key[i]; }
  [[nodiscard]] uint8_t len_at(size_t i) const { return len[i]; }
  [[nodiscard]] uint32_t as_at(size_t i) const { return as[i]; }
  [[nodiscard]] uint32_t place(size_t i) const { return at[i]; }

  void run(const internal::FamilyIndex<Key>& f, Validity* out) const { look_up(f, *this, n, out); }
};

// A route of a large batch as validate_sorted sorts it: what its lookup
// needs, and a word holding its line's index (bits 40 up), its length
// (bits 32-39) and its place in the batch (the low 32 bits). 16 bytes
// for IPv4, 32 for IPv6.
template <typename Key>
struct Held {
  uint64_t w;
  uint32_t as;
  internal::StoredKey<Key> key;
};
constexpr unsigned kLineShift = 40;

// One family's routes of a large batch, sorted by line (stable: a line's
// routes keep the batch's order), then looked up kChunk at a time in that
// order, so that the lines and nodes are read in increasing address order.
template <typename Key>
struct SortedFamily {
  internal::FamilyIndex<uint32_t>::Array<Held<Key>> held;
  internal::FamilyIndex<uint32_t>::Array<Held<Key>> tmp;

  void add(const internal::FamilyIndex<Key>& f, Key key, uint32_t as, uint8_t len, uint32_t at) {
    const uint64_t line = f.lines.empty() ? 0 : static_cast<uint64_t>(f.line_of(key) - f.lines.data());
    held.push_back({(line << kLineShift) | (uint64_t{len} << 32) | at, as, internal::StoredKey<Key>::of(key)});
  }
  [[nodiscard]] const typename internal::FamilyIndex<Key>::Line* line(const internal::FamilyIndex<Key>& f,
                                                                       size_t i) const {
    return f.lines.data() + (held[i].w >> kLineShift);
  }
  [[nodiscard]] Key key_at(size_t i) const { return held[i].key.get(); }
  [[nodiscard]] uint8_t len_at(size_t i) const { return static_cast<uint8_t>(held[i].w >> 32); }
  [[nodiscard]] uint32_t as_at(size_t i) const { return held[i].as; }
  [[nodiscard]] uint32_t place(size_t i) const { return static_cast<uint32_t>(held[i].w); }

  void run(const internal::FamilyIndex<Key>& f, Validity* out) {
    if (held.empty()) return;
    const auto line_bits = static_cast<unsigned>(std::bit_width(f.lines.empty() ? size_t{0} : f.lines.size() - 1));
    sort::radix_sort_by(held, tmp, kLineShift, kLineShift + line_bits, [](const Held<Key>& h) { return h.w; });
    look_up(f, *this, held.size(), out);
  }
};

// A thread's scratch for large batches, kept between calls: a
// revalidation sorts tens of thousands of routes per call, and fresh
// pages each time cost more than the sort (a batch of 2^20 routes in
// cache: 55 ns a route with the scratch freed after each call, against
// 22 as given). A batch is sorted VrpTable::kSortedSlice routes at a
// time, which bounds the scratch (at most 4 MiB for IPv4 routes, 8 MiB
// for IPv6).
struct SortScratch {
  SortedFamily<uint32_t> v4;
  SortedFamily<internal::U128> v6;
};

}  // namespace

void VrpTable::validate_batch(std::span<const RouteOrigin> routes, std::span<Validity> out, BatchOrder order) const {
  if (order == BatchOrder::kSorted) {
    for (size_t from = 0; from < routes.size(); from += kSortedSlice) {
      const size_t n = std::min(kSortedSlice, routes.size() - from);
      validate_sorted(routes.subspan(from, n), out.subspan(from, n));
    }
    return;
  }
  Lane<uint32_t> b4;
  Lane<internal::U128> b6;
  for (size_t at = 0; at < routes.size(); at += kChunk) {
    const size_t n = std::min(kChunk, routes.size() - at);
    b4.n = b6.n = 0;
    for (size_t i = 0; i < n; ++i) {
      const RouteOrigin& r = routes[at + i];
      const auto place = static_cast<uint32_t>(i);
      const uint32_t as = r.origin.value_or(0);
      if (r.route.family() == net::IpFamily::V4) {
        b4.add(v4_, internal::key_of_v4(r.route.addr()), as, r.route.len(), place);
      } else {
        b6.add(v6_, internal::key_of_v6(r.route.addr()), as, r.route.len(), place);
      }
    }
    b4.run(v4_, out.data() + at);
    b6.run(v6_, out.data() + at);
  }
}

void VrpTable::validate_sorted(std::span<const RouteOrigin> routes, std::span<Validity> out) const {
  thread_local SortScratch s;
  s.v4.held.clear();
  s.v6.held.clear();
  for (size_t i = 0; i < routes.size(); ++i) {
    const RouteOrigin& r = routes[i];
    const uint32_t as = r.origin.value_or(0);
    const auto at = static_cast<uint32_t>(i);
    if (r.route.family() == net::IpFamily::V4) {
      s.v4.add(v4_, internal::key_of_v4(r.route.addr()), as, r.route.len(), at);
    } else {
      s.v6.add(v6_, internal::key_of_v6(r.route.addr()), as, r.route.len(), at);
    }
  }
  s.v4.run(v4_, out.data());
  s.v6.run(v6_, out.data());
}

Validity VrpTable::validate(const net::Prefix& route, std::optional<uint32_t> origin) const {
  const uint32_t as = origin.value_or(0);
  if (route.family() == net::IpFamily::V4) {
    return v4_.validate(internal::key_of_v4(route.addr()), route.len(), as);
  }
  return v6_.validate(internal::key_of_v6(route.addr()), route.len(), as);
}

size_t VrpTable::memory_bytes() const { return v4_.memory_bytes() + v6_.memory_bytes(); }

}  // namespace petrel::rpki
