// The VRP table (see vrp_table.h): RFC 6811 section 2 over a sorted array
// of records that say which chain of VRP prefixes contains the addresses
// from each record's key on, kept in cache lines found from the address.
#include "rpki/vrp_table.h"

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
// validate_batch: routes taken together, each step of their lookups done
// for all of a family's before the next.
constexpr size_t kChunk = 256;

template <typename Key>
constexpr unsigned kKeyBits = sizeof(Key) * 8;

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

// Two bits of 32 for an AS: a block's summary of its ASes (Record::ases).
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

// IPv4 VRPs sorted as raw_less orders them: a stable byte-wise radix sort
// of (start, length, index) in one 8-byte word (the index in the low 24
// bits: at most 2^24 VRPs), then each run of one prefix by AS and max
// length. Several times quicker than a comparison sort of 600,000.
template <typename Raw>
bool radix_sort_v4(std::vector<Raw>& raw) {
  constexpr unsigned kIndexBits = 24;
  if (raw.size() >= (size_t{1} << kIndexBits)) return false;
  std::vector<uint64_t> a(raw.size());
  std::vector<uint64_t> tmp(raw.size());
  for (size_t i = 0; i < raw.size(); ++i)
    a[i] = (uint64_t{raw[i].start} << 32) | (uint64_t{raw[i].len} << kIndexBits) | i;
  for (unsigned shift = kIndexBits; shift < 64; shift += 8) {
    size_t count[257] = {};
    for (uint64_t v : a) ++count[((v >> shift) & 0xff) + 1];
    if (count[((a[0] >> shift) & 0xff) + 1] == a.size()) continue;  // one value: order stands
    for (size_t d = 1; d < 257; ++d) count[d] += count[d - 1];
    for (uint64_t v : a) tmp[count[(v >> shift) & 0xff]++] = v;
    a.swap(tmp);
  }
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
  constexpr auto kMaxLen = static_cast<uint8_t>(kKeyBits<Key>);
  Key high = 0;
  for (size_t i = 0; i < raw.size();) {
    size_t j = i + 1;
    while (j < raw.size() && raw[j].start == raw[i].start && raw[j].len == raw[i].len) ++j;
    const Key start = raw[i].start;
    const uint8_t len = raw[i].len;
    while (!stack.empty() && stack.back().end < start) close_top();
    uint32_t before = stack.empty() ? 0 : stack.back().node;
    for (size_t k = i; k < j; ++k) {
      const Node& b = nodes[before];
      const uint32_t up = before == 0 ? 0 : b.up | as_bits(b.as);
      const uint8_t shortest = before == 0 ? len : b.len;
      // A max length past the family's allows what the family's does.
      nodes.push_back({raw[k].asn, up, before, len, std::min(raw[k].max_len, kMaxLen), shortest, 0});
      before = static_cast<uint32_t>(nodes.size() - 1);
    }
    const Open n{static_cast<Key>(start | host_mask<Key>(len)), before};
    high = std::max(high, n.end);
    emit(start, n.node);
    stack.push_back(n);
    i = j;
  }
  while (!stack.empty()) close_top();
  return high;
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
  spill.clear();
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
    Line& line = lines[b];
    if (in.size() <= kPerLine) {
      for (unsigned k = 0; k < kPerLine; ++k) line.r[k] = in[std::min<size_t>(k, in.size() - 1)];
      continue;
    }
    // All but the last place in the line, the rest spilt: the line's
    // last record, keyed as the first of them, says where they are.
    for (unsigned k = 0; k + 1 < kPerLine; ++k) line.r[k] = in[k];
    const auto rest = in.begin() + (kPerLine - 1);
    line.r[kPerLine - 1] = {rest->key, kSpill | static_cast<uint32_t>(spill.size())};
    spill.push_back({StoredKey<Key>::of(static_cast<Key>(in.end() - rest)), 0});
    spill.insert(spill.end(), rest, in.end());
  }
  nodes.shrink_to_fit();
}

template <typename Key>
[[gnu::always_inline]] inline const typename FamilyIndex<Key>::Line* FamilyIndex<Key>::line_of(Key addr) const {
  // Outside the shared bits: the last line, of none records keyed 0.
  const size_t b = (addr & top_mask) == top ? bucket_of(addr) : lines.size() - 1;
  return lines.data() + b;
}

template <typename Key>
const typename FamilyIndex<Key>::Record& FamilyIndex<Key>::search_spill(const Record& s, Key addr) const {
  // Branch-free binary search for the last record at or before addr; the
  // first is at the spill record's key, at or before addr.
  const Record* lo = spill.data() + (s.node & ~kSpill);
  const auto count = static_cast<size_t>(lo->key.get());
  ++lo;
  for (size_t n = count; n > 1;) {
    const size_t half = n / 2;
    lo = (lo[half].key.get() <= addr) ? lo + half : lo;
    n -= half;
  }
  return *lo;
}

template <typename Key>
bool FamilyIndex<Key>::in_chain(uint32_t node, uint32_t as, unsigned len) const {
  // Up the chain while its ASes may hold the origin; bounded by the
  // chain's length (its first node's `up` is 0).
  const uint32_t bits = as_bits(as);
  for (;;) {
    const Node& m = nodes[node];
    if (m.as == as && m.plen <= len && len <= m.max_len) return true;
    if ((m.up & bits) != bits) return false;
    node = m.parent;
  }
}

template <typename Key>
[[gnu::always_inline]] inline const typename FamilyIndex<Key>::Record* FamilyIndex<Key>::pick(const Line* l,
                                                                                              Key addr) const {
  // The line's last record at or before addr: its first is, and the
  // others are ascending (padding repeats the last), so the count of the
  // others at or before addr is its index. No branch.
  unsigned at = 0;
  for (unsigned k = 1; k < kPerLine; ++k) at += unsigned{l->r[k].key.get() <= addr};
  const Record* r = &l->r[at];
  if (r->node & kSpill) [[unlikely]] r = &search_spill(*r, addr);
  return r;
}

template <typename Key>
[[gnu::always_inline]] inline Validity FamilyIndex<Key>::answer(const Record* r, Key addr, unsigned len,
                                                                uint32_t as) const {
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
    valid = static_cast<uint32_t>(in_chain(n.parent, as, len));
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
size_t FamilyIndex<Key>::memory_bytes() const {
  return lines.capacity() * sizeof(Line) + spill.capacity() * sizeof(Record) + nodes.capacity() * sizeof(Node);
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

// A batch's routes of one family, looked up in steps, each step for all of
// them before the next, so that the memory reads of one step overlap and
// are in cache when the next step reads them: the bucket's line (no
// read; prefetched), the record in force in it (its node prefetched),
// the answer.
template <typename Key>
struct Lane {
  Key key[kChunk];
  uint32_t as[kChunk];
  uint8_t len[kChunk];
  uint16_t at[kChunk];
  size_t n = 0;

  void run(const internal::FamilyIndex<Key>& f, Validity* out) const {
    using Index = internal::FamilyIndex<Key>;
    if (n == 0) return;
    if (f.lines.empty()) {  // never built
      for (size_t i = 0; i < n; ++i) out[at[i]] = Validity::kNotFound;
      return;
    }
    const typename Index::Line* line[kChunk];
    const typename Index::Record* rec[kChunk];
    for (size_t i = 0; i < n; ++i) {
      line[i] = f.line_of(key[i]);
      __builtin_prefetch(line[i]);
      if constexpr (sizeof(typename Index::Line) > 64) __builtin_prefetch(reinterpret_cast<const char*>(line[i]) + 64);
    }
    for (size_t i = 0; i < n; ++i) {
      rec[i] = f.pick(line[i], key[i]);
      __builtin_prefetch(f.nodes.data() + rec[i]->node);
    }
    for (size_t i = 0; i < n; ++i) out[at[i]] = f.answer(rec[i], key[i], len[i], as[i]);
  }
};

}  // namespace

void VrpTable::validate_batch(std::span<const RouteOrigin> routes, std::span<Validity> out) const {
  Lane<uint32_t> b4;
  Lane<internal::U128> b6;
  for (size_t at = 0; at < routes.size(); at += kChunk) {
    const size_t n = std::min(kChunk, routes.size() - at);
    b4.n = b6.n = 0;
    for (size_t i = 0; i < n; ++i) {
      const RouteOrigin& r = routes[at + i];
      const auto place = static_cast<uint16_t>(i);
      const uint32_t as = r.origin.value_or(0);
      if (r.route.family() == net::IpFamily::V4) {
        b4.key[b4.n] = internal::key_of_v4(r.route.addr());
        b4.as[b4.n] = as, b4.len[b4.n] = r.route.len(), b4.at[b4.n++] = place;
      } else {
        b6.key[b6.n] = internal::key_of_v6(r.route.addr());
        b6.as[b6.n] = as, b6.len[b6.n] = r.route.len(), b6.at[b6.n++] = place;
      }
    }
    b4.run(v4_, out.data() + at);
    b6.run(v6_, out.data() + at);
  }
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
