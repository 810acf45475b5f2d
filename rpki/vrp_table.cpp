// The VRP table (see vrp_table.h): RFC 6811 section 2 over a sorted array
// of records that say which VRP prefixes contain the addresses from each
// record's key on.
#include "rpki/vrp_table.h"

#include <algorithm>
#include <bit>
#include <tuple>
#include <type_traits>

namespace petrel::rpki {
namespace internal {
namespace {

// At most 2^16 buckets, about four records each for smaller tables.
constexpr unsigned kMaxIndexBits = 16;
// A block holding at most this many entries is copied into the blocks of
// the prefixes nested in it; a larger one is linked.
constexpr uint32_t kCopyLimit = 16;
// A bucket's records whose lines a lookup fetches before its search.
constexpr size_t kPrefetchRecords = 16;

template <typename Key>
constexpr unsigned kKeyBits = sizeof(Key) * 8;

template <typename Key>
Key host_mask(unsigned len) {
  if (len >= kKeyBits<Key>) return Key{0};
  return static_cast<Key>(static_cast<Key>(~Key{0}) >> len);
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

// A read whose value is not used: unlike a prefetch, it is not dropped
// when the address misses the TLB, and the core overlaps such reads as it
// does any independent loads.
inline void touch(const void* p) {
  const char c = *static_cast<const volatile char*>(p);
  asm volatile("" : : "r"(c));
}

uint32_t key_of_v4(const net::IpAddress& a) { return a.v4_value(); }

U128 key_of_v6(const net::IpAddress& a) {
  U128 k = 0;
  for (uint8_t b : a.bytes()) k = (k << 8) | b;
  return k;
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
  records.clear();
  slots.clear();
  bucket.clear();
  if (raw.empty()) return;
  sweep(raw);
  index();
}

template <typename Key>
void FamilyIndex<Key>::sweep(const std::vector<Raw>& raw) {
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
  high = 0;
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
  low = records.front().key.get();
}

template <typename Key>
uint32_t FamilyIndex<Key>::bucket_of(Key addr) const {
  return static_cast<uint32_t>(static_cast<Key>(addr << shift) >> (kKeyBits<Key> - index_bits));
}

template <typename Key>
void FamilyIndex<Key>::index() {
  // Index the bits after those every contained address shares (about
  // four records a bucket, at most 2^16 buckets), and start each bucket
  // with the record in force at its first address, so that a lookup never
  // looks into an earlier bucket.
  index_bits = std::clamp<unsigned>(static_cast<unsigned>(std::bit_width(records.size())), 3, kMaxIndexBits + 2) - 2;
  shift = std::min(common_bits(low, high), kKeyBits<Key> - index_bits);
  const size_t buckets = size_t{1} << index_bits;
  const Key top = static_cast<Key>(low & ~host_mask<Key>(shift));
  Array<Record> out;
  out.reserve(records.size() + buckets);
  bucket.assign(buckets + 1, 0);
  size_t j = 0;
  for (size_t b = 0; b < buckets; ++b) {
    while (j < records.size() && bucket_of(records[j].key.get()) < b) out.push_back(records[j++]);
    bucket[b] = static_cast<uint32_t>(out.size());
    const Key base = static_cast<Key>(top | (static_cast<Key>(b) << (kKeyBits<Key> - index_bits - shift)));
    if (out.empty() || (j < records.size() && records[j].key.get() == base)) continue;
    Record in_force = out.back();
    const Key mask = static_cast<Key>(~host_mask<Key>(in_force.inner));
    if (((in_force.key.get() ^ base) & mask) != 0) continue;
    in_force.key = StoredKey<Key>::of(base);
    out.push_back(in_force);
  }
  while (j < records.size()) out.push_back(records[j++]);
  bucket[buckets] = static_cast<uint32_t>(out.size());
  records = std::move(out);
  slots.shrink_to_fit();
}

template <typename Key>
void FamilyIndex<Key>::prefetch_records(uint32_t b) const {
  // The bucket's lines are fetched together rather than one per step of
  // the search: the search then runs from cache. Steps of 64 bytes from an
  // address inside a line can pass over the last line: it is read too.
  const char* p = reinterpret_cast<const char*>(records.data() + bucket[b]);
  const char* end = reinterpret_cast<const char*>(records.data() + bucket[b] +
                                                  std::min<size_t>(bucket[b + 1] - bucket[b], kPrefetchRecords));
  const char* last = end - 1;
  for (; p < end; p += 64) touch(p);
  if (reinterpret_cast<uintptr_t>(p) / 64 <= reinterpret_cast<uintptr_t>(last) / 64) touch(last);
}

template <typename Key>
const typename FamilyIndex<Key>::Record* FamilyIndex<Key>::find(Key addr) const {
  const uint32_t b = bucket_of(addr);
  // Branch-free binary search for the bucket's last record at or before
  // addr; none when the bucket is empty or starts after addr.
  const Record* lo = records.data() + bucket[b];
  size_t n = bucket[b + 1] - bucket[b];
  if (n == 0) return nullptr;
  while (n > 1) {
    const size_t half = n / 2;
    lo = (lo[half].key.get() <= addr) ? lo + half : lo;
    n -= half;
  }
  return lo->key.get() <= addr ? lo : nullptr;
}

template <typename Key>
Validity FamilyIndex<Key>::decide(const Record* r, Key addr, unsigned len, uint32_t as) const {
  if (!r || ((r->key.get() ^ addr) & static_cast<Key>(~host_mask<Key>(r->inner))) != 0 || r->len > len)
    return Validity::kNotFound;
  // RFC 6811 section 2: a VRP covers the route when its prefix is no longer
  // than the route's and contains it (every VRP of the chain contains it);
  // it matches when it also allows the route's length and names the
  // route's origin, which is not NONE (as 0 here) and a VRP for AS 0
  // never names.
  if (as == 0) return Validity::kInvalid;
  if (r->kind == kOne) return r->a == as && len <= r->max_len ? Validity::kValid : Validity::kInvalid;
  const uint32_t bits = as_bits(as);
  if ((r->ases & bits) != bits) return Validity::kInvalid;
  for (uint32_t h = r->a;;) {
    const Slot* e = slots.data() + h;
    const Slot* end = e + 1 + e->a;
    const uint32_t link = e->b;
    for (++e; e != end; ++e) {
      if (e->a == as && (e->b & 0xff) <= len && (e->b >> 8) >= len) return Validity::kValid;
    }
    if (link == 0) return Validity::kInvalid;
    h = link - 1;
  }
}

template <typename Key>
Validity FamilyIndex<Key>::lookup(Key addr, unsigned len, std::optional<uint32_t> origin) const {
  if (outside(addr)) return Validity::kNotFound;
  prefetch_records(bucket_of(addr));
  return decide(find(addr), addr, len, origin.value_or(0));
}

template <typename Key>
void FamilyIndex<Key>::fetch_bucket(Key addr) const {
  if (!outside(addr)) touch(&bucket[bucket_of(addr)]);
}

template <typename Key>
void FamilyIndex<Key>::fetch_records(Key addr) const {
  if (!outside(addr)) prefetch_records(bucket_of(addr));
}

template <typename Key>
const typename FamilyIndex<Key>::Record* FamilyIndex<Key>::find_fetching(Key addr, uint32_t as) const {
  if (outside(addr)) return nullptr;
  const Record* r = find(addr);
  if (r && r->kind == kBlock && (r->ases & as_bits(as)) == as_bits(as)) __builtin_prefetch(slots.data() + r->a);
  return r;
}

template <typename Key>
size_t FamilyIndex<Key>::memory_bytes() const {
  return records.capacity() * sizeof(Record) + slots.capacity() * sizeof(Slot) +
         bucket.capacity() * sizeof(uint32_t);
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

// Up to internal::kBatch routes of one family, one step of the lookup for
// all of them before the next: each step starts every route's next read
// before any waits for one, so the misses of the routes overlap instead
// of following each other.
template <typename Key>
struct Batch {
  Key key[internal::kBatch];
  uint32_t as[internal::kBatch];
  uint8_t len[internal::kBatch];
  uint8_t at[internal::kBatch];
  size_t n = 0;

  void run(const internal::FamilyIndex<Key>& f, Validity* out) const {
    const typename internal::FamilyIndex<Key>::Record* found[internal::kBatch];
    for (size_t i = 0; i < n; ++i) f.fetch_bucket(key[i]);
    for (size_t i = 0; i < n; ++i) f.fetch_records(key[i]);
    for (size_t i = 0; i < n; ++i) found[i] = f.find_fetching(key[i], as[i]);
    for (size_t i = 0; i < n; ++i) out[at[i]] = f.decide(found[i], key[i], len[i], as[i]);
  }
};

}  // namespace

void VrpTable::validate_batch(std::span<const RouteOrigin> routes, std::span<Validity> out) const {
  using internal::kBatch;
  Batch<uint32_t> b4;
  Batch<internal::U128> b6;
  for (size_t at = 0; at < routes.size(); at += kBatch) {
    const size_t n = std::min(kBatch, routes.size() - at);
    b4.n = b6.n = 0;
    for (size_t i = 0; i < n; ++i) {
      const RouteOrigin& r = routes[at + i];
      const auto place = static_cast<uint8_t>(i);
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
  if (route.family() == net::IpFamily::V4) {
    return v4_.lookup(internal::key_of_v4(route.addr()), route.len(), origin);
  }
  return v6_.lookup(internal::key_of_v6(route.addr()), route.len(), origin);
}

size_t VrpTable::memory_bytes() const { return v4_.memory_bytes() + v6_.memory_bytes(); }

}  // namespace petrel::rpki
