// The VRP table (see vrp_table.h): RFC 6811 section 2 over a sorted array
// of records that say which VRP prefixes contain the addresses from each
// record's key on.
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
// 2^22 to 2^23 records, past any RPKI in sight).
constexpr unsigned kMaxIndexBits = 22;
// A block holding at most this many entries is copied into the blocks of
// the prefixes nested in it; a larger one is linked.
constexpr uint32_t kCopyLimit = 16;
// validate_batch: routes taken together, and how many routes ahead of the
// one decided a bucket's line is fetched.
constexpr size_t kChunk = 256;
constexpr size_t kAhead = 16;

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
  slots.clear();
  std::vector<Record> flat;
  const Key high = raw.empty() ? Key{0} : sweep(raw, flat);
  index(flat, flat.empty() ? Key{0} : flat.front().key.get(), high);
}

template <typename Key>
Key FamilyIndex<Key>::sweep(const std::vector<Raw>& raw, std::vector<Record>& records) {
  // The open prefixes, each nested in the one below it, with the record
  // that describes an address inside it and no deeper prefix.
  struct Open {
    Key end;
    Record rec;
    uint32_t count;  // entries of its chain (kBlock: in its block)
  };
  std::vector<Open> stack;
  records.reserve(raw.size() + raw.size() / 4);
  auto emit = [&](Key key, Record rec) {
    rec.key = StoredKey<Key>::of(key);
    if (!records.empty() && records.back().key.get() == key) {
      records.back() = rec;  // the chain changes again at the same address
    } else {
      records.push_back(rec);
    }
  };
  auto close_top = [&] {
    const Key e = stack.back().end;
    stack.pop_back();
    // The parent goes on past its child: its chain again from e + 1.
    if (!stack.empty() && stack.back().end > e) emit(static_cast<Key>(e + 1), stack.back().rec);
  };
  Key high = 0;
  for (size_t i = 0; i < raw.size();) {
    size_t j = i + 1;
    while (j < raw.size() && raw[j].start == raw[i].start && raw[j].len == raw[i].len) ++j;
    const Key start = raw[i].start;
    const uint8_t len = raw[i].len;
    while (!stack.empty() && stack.back().end < start) close_top();
    const Open* parent = stack.empty() ? nullptr : &stack.back();
    Open n{static_cast<Key>(start | host_mask<Key>(len)), {}, 0};
    if (!parent && j - i == 1) {
      n.rec = {{}, raw[i].asn, 0, len, raw[i].max_len, len, kOne};
      n.count = 1;
    } else {
      const auto header = static_cast<uint32_t>(slots.size());
      slots.push_back({0, 0});
      for (size_t k = i; k < j; ++k) slots.push_back({raw[k].asn, uint32_t{len} | uint32_t{raw[k].max_len} << 8});
      uint32_t link = 0;
      if (parent && parent->rec.kind == kOne) {
        const Record& p = parent->rec;
        slots.push_back({p.a, uint32_t{p.len} | uint32_t{p.max_len} << 8});
      } else if (parent && parent->count <= kCopyLimit) {
        const uint32_t from = parent->rec.a;
        for (uint32_t k = 1; k <= parent->count; ++k) {
          const Slot copy = slots[from + k];
          slots.push_back(copy);
        }
        link = slots[from].b;
      } else if (parent) {
        link = parent->rec.a + 1;
      }
      n.count = static_cast<uint32_t>(slots.size() - header - 1);
      slots[header] = {n.count, link};
      uint32_t ases = 0;
      if (parent) ases = parent->rec.kind == kOne ? as_bits(parent->rec.a) : parent->rec.ases;
      for (size_t k = i; k < j; ++k) ases |= as_bits(raw[k].asn);
      n.rec = {{}, header, ases, parent ? parent->rec.len : len, 0, len, kBlock};
    }
    high = std::max(high, n.end);
    emit(start, n.rec);
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
void FamilyIndex<Key>::index(const std::vector<Record>& flat, Key low, Key high) {
  // Index the bits after those every contained address shares, with
  // about one record a bucket (1 to 2 on average), so that nearly every
  // bucket fits in a line. A bucket starts with the record in force at
  // its first address (a kNone one if none is), so that a lookup never
  // looks into an earlier bucket and always finds a record.
  index_bits = std::clamp<unsigned>(static_cast<unsigned>(std::bit_width(flat.size())), 2, kMaxIndexBits + 1) - 1;
  shift = std::min(common_bits(low, high), kKeyBits<Key> - index_bits);
  top_mask = static_cast<Key>(~host_mask<Key>(shift));
  top = static_cast<Key>(low & top_mask);
  const size_t buckets = size_t{1} << index_bits;
  const Record none{StoredKey<Key>::of(Key{0}), 0, 0, 255, 0, 0, kNone};
  lines.assign(buckets + 1, Line{{none, none, none, none}});
  spill.clear();
  std::vector<Record> in;  // the bucket's records
  size_t j = 0;
  for (size_t b = 0; b < buckets; ++b) {
    const Key base = static_cast<Key>(top | (static_cast<Key>(b) << (kKeyBits<Key> - index_bits - shift)));
    in.clear();
    if (j == flat.size() || flat[j].key.get() != base) {
      Record first = none;
      if (j > 0) {
        const Record& before = flat[j - 1];
        if (((before.key.get() ^ base) & static_cast<Key>(~host_mask<Key>(before.inner))) == 0) first = before;
      }
      first.key = StoredKey<Key>::of(base);
      in.push_back(first);
    }
    while (j < flat.size() && bucket_of(flat[j].key.get()) == b) in.push_back(flat[j++]);
    Line& line = lines[b];
    if (in.size() <= kPerLine) {
      for (unsigned k = 0; k < kPerLine; ++k) line.r[k] = in[std::min<size_t>(k, in.size() - 1)];
      continue;
    }
    // The first three in the line, the rest spilt: the line's last
    // record, keyed as the first of them, says where they are.
    for (unsigned k = 0; k + 1 < kPerLine; ++k) line.r[k] = in[k];
    const auto rest = in.begin() + (kPerLine - 1);
    line.r[kPerLine - 1] = {rest->key, static_cast<uint32_t>(spill.size()),
                            static_cast<uint32_t>(in.end() - rest), 255, 0, 0, kSpill};
    spill.insert(spill.end(), rest, in.end());
  }
  slots.shrink_to_fit();
}

template <typename Key>
[[gnu::always_inline]] inline const typename FamilyIndex<Key>::Line* FamilyIndex<Key>::line_of(Key addr) const {
  if (lines.empty()) return nullptr;  // never built
  // Outside the shared bits: the last line, of kNone records keyed 0.
  const size_t b = (addr & top_mask) == top ? bucket_of(addr) : lines.size() - 1;
  return lines.data() + b;
}

template <typename Key>
const typename FamilyIndex<Key>::Record& FamilyIndex<Key>::search_spill(const Record& s, Key addr) const {
  // Branch-free binary search for the last record at or before addr; the
  // first is at the spill record's key, at or before addr.
  const Record* lo = spill.data() + s.a;
  for (size_t n = s.ases; n > 1;) {
    const size_t half = n / 2;
    lo = (lo[half].key.get() <= addr) ? lo + half : lo;
    n -= half;
  }
  return *lo;
}

template <typename Key>
bool FamilyIndex<Key>::in_block(uint32_t header, uint32_t as, unsigned len) const {
  for (uint32_t h = header;;) {
    const Slot* e = slots.data() + h;
    const Slot* end = e + 1 + e->a;
    const uint32_t link = e->b;
    for (++e; e != end; ++e) {
      if (e->a == as && (e->b & 0xff) <= len && (e->b >> 8) >= len) return true;
    }
    if (link == 0) return false;
    h = link - 1;
  }
}

template <typename Key>
[[gnu::always_inline]] inline Validity FamilyIndex<Key>::decide(const Line* l, Key addr, unsigned len, uint32_t as) const {
  if (!l) return Validity::kNotFound;
  // The line's last record at or before addr: its first is, and the
  // others are ascending (padding repeats the last), so the count of the
  // other three at or before addr is its index. No branch.
  const unsigned at = unsigned{l->r[1].key.get() <= addr} + unsigned{l->r[2].key.get() <= addr} +
                      unsigned{l->r[3].key.get() <= addr};
  const Record* r = &l->r[at];
  if (r->kind == kSpill) [[unlikely]] r = &search_spill(*r, addr);
  // RFC 6811 section 2: a VRP covers the route when its prefix is no longer
  // than the route's and contains it (every VRP of the chain contains it);
  // it matches when it also allows the route's length and names the
  // route's origin, which is not NONE (as 0 here) and a VRP for AS 0
  // never names. Straight-line but for a block's entries, read only when
  // the block's summary holds the origin's bits.
  // Bitwise & on purpose: each condition is a flag, not a branch.
  const uint32_t covered = static_cast<uint32_t>(((r->key.get() ^ addr) & ~host_mask<Key>(r->inner)) == 0) &
                           static_cast<uint32_t>(r->len <= len);
  uint32_t valid = static_cast<uint32_t>(r->kind == kOne) & static_cast<uint32_t>(r->a == as) &
                   static_cast<uint32_t>(len <= r->max_len);
  const uint32_t bits = as_bits(as);
  if ((static_cast<uint32_t>(r->kind == kBlock) & static_cast<uint32_t>((r->ases & bits) == bits) & covered) != 0)
    valid = static_cast<uint32_t>(in_block(r->a, as, len));
  valid &= static_cast<uint32_t>(as != 0);
  // kNotFound 0, kValid 1, kInvalid 2.
  return static_cast<Validity>(covered * (2 - valid));
}

template <typename Key>
size_t FamilyIndex<Key>::memory_bytes() const {
  return lines.capacity() * sizeof(Line) + spill.capacity() * sizeof(Record) + slots.capacity() * sizeof(Slot);
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

using internal::kAhead;
using internal::kChunk;

// A batch's routes of one family: the bucket lines of all are computed
// first (no memory read), then each route is decided while the line of
// the route kAhead places on is fetched, so that about kAhead misses are
// in flight at any time and the decisions run from cache.
template <typename Key>
struct Lane {
  Key key[kChunk];
  uint32_t as[kChunk];
  uint8_t len[kChunk];
  uint16_t at[kChunk];
  size_t n = 0;

  void run(const internal::FamilyIndex<Key>& f, Validity* out) const {
    using Line = typename internal::FamilyIndex<Key>::Line;
    const Line* line[kChunk];
    for (size_t i = 0; i < n; ++i) line[i] = f.line_of(key[i]);
    auto fetch = [&](size_t i) {
      if (!line[i]) return;
      __builtin_prefetch(line[i]);
      if constexpr (sizeof(Line) > 64) __builtin_prefetch(reinterpret_cast<const char*>(line[i]) + 64);
    };
    for (size_t i = 0; i < std::min(n, kAhead); ++i) fetch(i);
    for (size_t i = 0; i < n; ++i) {
      if (i + kAhead < n) fetch(i + kAhead);
      out[at[i]] = f.decide(line[i], key[i], len[i], as[i]);
    }
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
    const uint32_t k = internal::key_of_v4(route.addr());
    return v4_.decide(v4_.line_of(k), k, route.len(), as);
  }
  const internal::U128 k = internal::key_of_v6(route.addr());
  return v6_.decide(v6_.line_of(k), k, route.len(), as);
}

size_t VrpTable::memory_bytes() const { return v4_.memory_bytes() + v6_.memory_bytes(); }

}  // namespace petrel::rpki
