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
  nodes.clear();
  more.clear();
  std::vector<Key> node_start;
  std::vector<Key> node_end;
  for (size_t i = 0; i < raw.size();) {
    size_t j = i + 1;
    while (j < raw.size() && raw[j].start == raw[i].start && raw[j].len == raw[i].len) ++j;
    Node n{-1, raw[i].asn, static_cast<uint32_t>(more.size()), static_cast<uint32_t>(j - i - 1), raw[i].max_len,
           raw[i].len};
    for (size_t k = i + 1; k < j; ++k) more.push_back({raw[k].asn, raw[k].max_len});
    nodes.push_back(n);
    node_start.push_back(raw[i].start);
    node_end.push_back(static_cast<Key>(raw[i].start | host_mask<Key>(raw[i].len)));
    i = j;
  }

  // Sweep in (start, shorter first) order: a stack of the open prefixes,
  // each nested in the one below it.
  auto emit = [&](Key s, int32_t n) {
    if (!intervals.empty() && intervals.back().start == s) {
      intervals.back().node = n;
    } else {
      intervals.push_back({s, n});
    }
  };
  std::vector<int32_t> stack;
  auto close_top = [&] {
    int32_t t = stack.back();
    stack.pop_back();
    Key e = node_end[static_cast<size_t>(t)];
    if (e != static_cast<Key>(~Key{0})) emit(static_cast<Key>(e + 1), stack.empty() ? -1 : stack.back());
  };
  for (size_t i = 0; i < nodes.size(); ++i) {
    while (!stack.empty() && node_end[static_cast<size_t>(stack.back())] < node_start[i]) close_top();
    nodes[i].parent = stack.empty() ? -1 : stack.back();
    emit(node_start[i], static_cast<int32_t>(i));
    stack.push_back(static_cast<int32_t>(i));
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
Validity FamilyIndex<Key>::lookup(Key addr, unsigned len, std::optional<uint32_t> origin) const {
  if (bucket.empty()) return Validity::kNotFound;
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
    if (lo == base) return Validity::kNotFound;
    --lo;
  }
  int32_t at = lo->node;
  // RFC 6811 section 2: a VRP covers the route when its prefix is no longer
  // than the route's and contains it; it matches when it also allows the
  // route's length and names the route's origin, which is not NONE and a
  // VRP for AS 0 never names.
  bool covered = false;
  uint32_t as = origin.value_or(0);
  while (at >= 0) {
    const Node& node = nodes[static_cast<size_t>(at)];
    if (node.len <= len) {
      covered = true;
      if (as != 0) {
        if (node.asn == as && node.max_len >= len) return Validity::kValid;
        for (uint32_t e = node.more_first, end = node.more_first + node.more_count; e < end; ++e) {
          if (more[e].asn == as && more[e].max_len >= len) return Validity::kValid;
        }
      }
    }
    at = node.parent;
  }
  return covered ? Validity::kInvalid : Validity::kNotFound;
}

template <typename Key>
size_t FamilyIndex<Key>::memory_bytes() const {
  return intervals.capacity() * sizeof(Interval) + nodes.capacity() * sizeof(Node) +
         more.capacity() * sizeof(Entry) + bucket.capacity() * sizeof(uint32_t);
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

Validity VrpTable::validate(const net::Prefix& route, std::optional<uint32_t> origin) const {
  if (route.family() == net::IpFamily::V4) {
    return v4_.lookup(internal::key_of_v4(route.addr()), route.len(), origin);
  }
  return v6_.lookup(internal::key_of_v6(route.addr()), route.len(), origin);
}

size_t VrpTable::memory_bytes() const { return v4_.memory_bytes() + v6_.memory_bytes(); }

}  // namespace petrel::rpki
