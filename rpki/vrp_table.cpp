// The VRP table (see vrp_table.h): RFC 6811 section 2 over an interval
// index of the VRP prefixes.
#include "rpki/vrp_table.h"

#include <algorithm>
#include <tuple>

namespace petrel::rpki {
namespace internal {
namespace {

constexpr unsigned kIndexBits = 16;
constexpr size_t kBuckets = size_t{1} << kIndexBits;
// A block holding at most this many entries is copied into the blocks of
// the prefixes nested in it; a larger one is linked.
constexpr uint32_t kCopyLimit = 16;

template <typename Key>
constexpr unsigned kKeyBits = sizeof(Key) * 8;

template <typename Key>
Key host_mask(unsigned len) {
  if (len >= kKeyBits<Key>) return Key{0};
  return static_cast<Key>(static_cast<Key>(~Key{0}) >> len);
}

template <typename Key>
uint32_t top_bits(Key k) {
  return static_cast<uint32_t>(k >> (kKeyBits<Key> - kIndexBits));
}

uint32_t key_of_v4(const net::IpAddress& a) { return a.v4_value(); }

U128 key_of_v6(const net::IpAddress& a) {
  U128 k = 0;
  for (uint8_t b : a.bytes()) k = (k << 8) | b;
  return k;
}

}  // namespace

template <typename Key>
void FamilyIndex<Key>::build(std::vector<Raw>& raw) {
  auto as_tuple = [](const Raw& r) { return std::tuple(r.start, r.len, r.asn, r.max_len); };
  std::sort(raw.begin(), raw.end(), [&](const Raw& a, const Raw& b) { return as_tuple(a) < as_tuple(b); });
  raw.erase(std::unique(raw.begin(), raw.end(),
                        [&](const Raw& a, const Raw& b) { return as_tuple(a) == as_tuple(b); }),
            raw.end());

  intervals.clear();
  entries.clear();
  // Per distinct prefix: its block of entries (its own, then those of its
  // covering prefixes, copied from the parent's block, built first).
  struct Node {
    Key start;
    Key end;
    uint32_t first;
    uint32_t count;
    int32_t link;
    uint8_t root_len;
  };
  std::vector<Node> nodes;
  blocks.clear();
  std::vector<int32_t> stack;
  auto close_top = [&] {
    int32_t t = stack.back();
    stack.pop_back();
    Key e = nodes[static_cast<size_t>(t)].end;
    if (e == static_cast<Key>(~Key{0})) return;
    const Node* up = stack.empty() ? nullptr : &nodes[static_cast<size_t>(stack.back())];
    Interval iv{static_cast<Key>(e + 1), up ? up->first : 0, up ? up->count : 0, up ? up->link : -1,
                up ? up->root_len : uint8_t{0}};
    if (!intervals.empty() && intervals.back().start == iv.start) {
      intervals.back() = iv;
    } else {
      intervals.push_back(iv);
    }
  };
  // Sweep in (start, shorter first) order: a stack of the open prefixes,
  // each nested in the one below it.
  for (size_t i = 0; i < raw.size();) {
    size_t j = i + 1;
    while (j < raw.size() && raw[j].start == raw[i].start && raw[j].len == raw[i].len) ++j;
    Key start = raw[i].start;
    while (!stack.empty() && nodes[static_cast<size_t>(stack.back())].end < start) close_top();
    Node n{start, static_cast<Key>(start | host_mask<Key>(raw[i].len)), static_cast<uint32_t>(entries.size()), 0,
           -1, raw[i].len};
    for (size_t k = i; k < j; ++k) entries.push_back({raw[k].asn, raw[k].max_len, raw[k].len});
    if (!stack.empty()) {
      const Node parent = nodes[static_cast<size_t>(stack.back())];
      if (parent.count <= kCopyLimit) {
        for (uint32_t k = 0; k < parent.count; ++k) {
          Entry copy = entries[parent.first + k];
          entries.push_back(copy);
        }
        n.link = parent.link;
      } else {
        n.link = stack.back();
      }
      n.root_len = parent.root_len;
    }
    n.count = static_cast<uint32_t>(entries.size() - n.first);
    nodes.push_back(n);
    blocks.push_back({n.first, n.count, n.link});
    Interval iv{start, n.first, n.count, n.link, n.root_len};
    if (!intervals.empty() && intervals.back().start == start) {
      intervals.back() = iv;
    } else {
      intervals.push_back(iv);
    }
    stack.push_back(static_cast<int32_t>(nodes.size() - 1));
    i = j;
  }
  while (!stack.empty()) close_top();

  bucket.assign(kBuckets + 1, 0);
  size_t j = 0;
  for (size_t b = 0; b <= kBuckets; ++b) {
    while (j < intervals.size() && top_bits(intervals[j].start) < b) ++j;
    bucket[b] = static_cast<uint32_t>(j);
  }
}

template <typename Key>
void FamilyIndex<Key>::prefetch_bucket(Key addr) const {
  // The bucket's lines are fetched together rather than one per step of
  // the search: the search then runs from cache.
  uint32_t b = top_bits(addr);
  const char* p = reinterpret_cast<const char*>(intervals.data() + bucket[b]);
  const char* end = reinterpret_cast<const char*>(intervals.data() + bucket[b] +
                                                  std::min<size_t>(bucket[b + 1] - bucket[b], 64));
  for (; p < end; p += 64) __builtin_prefetch(p);
}

template <typename Key>
const typename FamilyIndex<Key>::Interval* FamilyIndex<Key>::find(Key addr) const {
  uint32_t b = top_bits(addr);
  // Branch-free binary search for the last interval starting at or
  // before addr (the one before the bucket if none in it does).
  const Interval* base = intervals.data();
  const Interval* lo = base + bucket[b];
  size_t n = bucket[b + 1] - bucket[b];
  while (n > 1) {
    size_t half = n / 2;
    lo = (lo[half].start <= addr) ? lo + half : lo;
    n -= half;
  }
  if (n == 0 || lo->start > addr) {
    if (lo == base) return nullptr;
    --lo;
  }
  return lo;
}

template <typename Key>
Validity FamilyIndex<Key>::decide(const Interval* iv, unsigned len, uint32_t as) const {
  if (!iv || iv->count == 0 || iv->root_len > len) return Validity::kNotFound;
  // RFC 6811 section 2: a VRP covers the route when its prefix is no longer
  // than the route's and contains it (every entry here contains it); it
  // matches when it also allows the route's length and names the route's
  // origin, which is not NONE (as 0 here) and a VRP for AS 0 never names.
  if (as == 0) return Validity::kInvalid;
  auto matches = [&](uint32_t first, uint32_t count) {
    const Entry* e = entries.data() + first;
    for (const Entry* end = e + count; e != end; ++e) {
      if (e->asn == as && e->len <= len && e->max_len >= len) return true;
    }
    return false;
  };
  if (matches(iv->first, iv->count)) return Validity::kValid;
  for (int32_t l = iv->link; l >= 0;) {
    const Block& blk = blocks[static_cast<size_t>(l)];
    if (matches(blk.first, blk.count)) return Validity::kValid;
    l = blk.link;
  }
  return Validity::kInvalid;
}

template <typename Key>
Validity FamilyIndex<Key>::lookup(Key addr, unsigned len, std::optional<uint32_t> origin) const {
  if (bucket.empty()) return Validity::kNotFound;
  prefetch_bucket(addr);
  return decide(find(addr), len, origin.value_or(0));
}

template <typename Key>
void FamilyIndex<Key>::lookup_batch(const BatchItem* items, size_t n, Validity* out) const {
  if (bucket.empty()) {
    for (size_t i = 0; i < n; ++i) out[items[i].index] = Validity::kNotFound;
    return;
  }
  // Each stage starts every route's next miss before any waits for one, so
  // the misses of the routes overlap instead of following each other.
  const Interval* found[kBatch];
  for (size_t i = 0; i < n; ++i) __builtin_prefetch(&bucket[top_bits(items[i].key)]);
  for (size_t i = 0; i < n; ++i) prefetch_bucket(items[i].key);
  for (size_t i = 0; i < n; ++i) {
    found[i] = find(items[i].key);
    if (found[i]) __builtin_prefetch(entries.data() + found[i]->first);
  }
  for (size_t i = 0; i < n; ++i) out[items[i].index] = decide(found[i], items[i].len, items[i].as);
}

template <typename Key>
size_t FamilyIndex<Key>::memory_bytes() const {
  return intervals.capacity() * sizeof(Interval) + entries.capacity() * sizeof(Entry) +
         blocks.capacity() * sizeof(Block) + bucket.capacity() * sizeof(uint32_t);
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

void VrpTable::validate_batch(std::span<const RouteOrigin> routes, std::span<Validity> out) const {
  using internal::kBatch;
  internal::FamilyIndex<uint32_t>::BatchItem b4[kBatch];
  internal::FamilyIndex<internal::U128>::BatchItem b6[kBatch];
  for (size_t at = 0; at < routes.size(); at += kBatch) {
    const size_t n = std::min(kBatch, routes.size() - at);
    size_t n4 = 0, n6 = 0;
    for (size_t i = 0; i < n; ++i) {
      const RouteOrigin& r = routes[at + i];
      const uint32_t as = r.origin.value_or(0);
      if (r.route.family() == net::IpFamily::V4)
        b4[n4++] = {internal::key_of_v4(r.route.addr()), r.route.len(), as, i};
      else
        b6[n6++] = {internal::key_of_v6(r.route.addr()), r.route.len(), as, i};
    }
    Validity* o = out.data() + at;
    v4_.lookup_batch(b4, n4, o);
    v6_.lookup_batch(b6, n6, o);
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
