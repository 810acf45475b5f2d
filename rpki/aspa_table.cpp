// The ASPA table and AS_PATH verification (see aspa_table.h;
// draft-ietf-sidrops-aspa-verification, the upstream and downstream
// procedures).
#include "rpki/aspa_table.h"

#include <algorithm>
#include <cassert>

namespace petrel::rpki {
namespace {

uint32_t mix(uint32_t asn) {
  // A multiplicative hash: customer ASes come in runs (allocations), and
  // the top bits of the product spread them. It is public and fixed: the
  // table's bounds must not rest on it (see build()).
  return static_cast<uint32_t>((static_cast<uint64_t>(asn) * 0x9e3779b97f4a7c15ull) >> 32);
}

// The path compressed, origin first: AS(1) .. AS(N).
std::vector<uint32_t> compress_from_origin(std::span<const uint32_t> path) {
  std::vector<uint32_t> out;
  for (size_t i = path.size(); i-- > 0;) {
    if (out.empty() || out.back() != path[i]) out.push_back(path[i]);
  }
  return out;
}

}  // namespace

std::string_view aspa_state_name(AspaState s) {
  switch (s) {
    case AspaState::kUnknown: return "unknown";
    case AspaState::kValid: return "valid";
    case AspaState::kInvalid: return "invalid";
  }
  return "?";
}

AspaTable AspaTable::build(std::span<const Aspa> aspas) {
  // In customer order, one per customer: the order the buckets keep.
  auto by_customer = [](const Aspa* a, const Aspa* b) { return a->customer < b->customer; };
  std::vector<const Aspa*> order;
  order.reserve(aspas.size());
  for (const Aspa& a : aspas) order.push_back(&a);
  if (std::adjacent_find(order.begin(), order.end(), [](const Aspa* a, const Aspa* b) {
        return a->customer >= b->customer;
      }) != order.end()) {
    std::stable_sort(order.begin(), order.end(), by_customer);
    std::vector<const Aspa*> last;  // of each customer's run
    for (size_t i = 0; i < order.size(); ++i) {
      if (i + 1 == order.size() || order[i + 1]->customer != order[i]->customer) last.push_back(order[i]);
    }
    order = std::move(last);
  }

  AspaTable t;
  size_t buckets = 16;
  while (buckets < order.size() * 2) buckets *= 2;
  const size_t mask = buckets - 1;
  // A counting sort by bucket: it keeps the customer order within each.
  t.starts_.assign(buckets + 1, 0);
  for (const Aspa* a : order) ++t.starts_[(mix(a->customer) & mask) + 1];
  for (size_t b = 0; b < buckets; ++b) t.starts_[b + 1] += t.starts_[b];
  std::vector<uint32_t> next(t.starts_.begin(), t.starts_.end() - 1);
  size_t total = 0;
  for (const Aspa* a : order) total += a->providers.size();
  assert(total <= UINT32_MAX);
  t.providers_.reserve(total);
  t.entries_.resize(order.size());
  for (const Aspa* a : order) {
    assert(std::is_sorted(a->providers.begin(), a->providers.end()));
    t.entries_[next[mix(a->customer) & mask]++] =
        Entry{a->customer, static_cast<uint32_t>(t.providers_.size()), static_cast<uint32_t>(a->providers.size())};
    t.providers_.insert(t.providers_.end(), a->providers.begin(), a->providers.end());
  }
  return t;
}

const AspaTable::Entry* AspaTable::find(uint32_t customer, size_t* steps) const {
  if (entries_.empty()) return nullptr;
  const size_t b = mix(customer) & (starts_.size() - 2);
  const Entry* first = entries_.data() + starts_[b];
  size_t n = starts_[b + 1] - starts_[b];
  if (n == 0) return nullptr;
  // Bisection: the last entry whose customer is not above ours stays in
  // [first, first + n). Without branches on the data: a chosen bucket's
  // searches would mispredict half the time.
  while (n > 1) {
    const size_t half = n / 2;
    if (steps != nullptr) ++*steps;
    first = first[half].customer <= customer ? first + half : first;
    n -= half;
  }
  if (steps != nullptr) ++*steps;
  return first->customer == customer ? first : nullptr;
}

size_t AspaTable::lookup_steps(uint32_t customer) const {
  size_t steps = 0;
  (void)find(customer, &steps);
  return steps;
}

Hop AspaTable::hop(uint32_t customer, uint32_t provider) const {
  const Entry* s = find(customer);
  if (s == nullptr) return Hop::kNoAttestation;
  const uint32_t* first = providers_.data() + s->offset;
  const uint32_t* last = first + s->count;
  if (s->count <= 8) {
    return std::find(first, last, provider) != last ? Hop::kProviderPlus : Hop::kNotProviderPlus;
  }
  return std::binary_search(first, last, provider) ? Hop::kProviderPlus : Hop::kNotProviderPlus;
}

AspaState AspaTable::verify(std::span<const uint32_t> path, bool has_as_set, AspaDirection dir) const {
  if (path.empty() || has_as_set) return AspaState::kInvalid;
  // Walk from the origin (the end of the wire order) to the neighbour,
  // skipping repeats. Up-ramp: hops AS(i) -> AS(i+1) from the origin while
  // none is Not Provider+ (max) / all are Provider+ (min). Down-ramp: the
  // same for hops AS(j+1) -> AS(j), which from the origin's side means
  // finding the last hop that breaks it.
  size_t n = 1;
  size_t max_up = 0, min_up = 0;        // 0: still climbing
  size_t last_down_break_max = 0;       // the highest j with hop(AS(j+1), AS(j)) Not Provider+
  size_t last_down_break_min = 0;       // ... not Provider+
  uint32_t prev = path.back();
  for (size_t k = path.size() - 1; k-- > 0;) {
    const uint32_t cur = path[k];
    if (cur == prev) continue;
    // Hop between AS(n) = prev and AS(n+1) = cur.
    if (max_up == 0 || min_up == 0) {
      const Hop up = hop(prev, cur);
      if (min_up == 0 && up != Hop::kProviderPlus) min_up = n;
      if (max_up == 0 && up == Hop::kNotProviderPlus) {
        max_up = n;
        if (dir == AspaDirection::kUpstream) return AspaState::kInvalid;
      }
    }
    if (dir == AspaDirection::kDownstream) {
      const Hop down = hop(cur, prev);
      if (down != Hop::kProviderPlus) last_down_break_min = n;
      if (down == Hop::kNotProviderPlus) last_down_break_max = n;
    }
    prev = cur;
    ++n;
  }
  if (max_up == 0) max_up = n;
  if (min_up == 0) min_up = n;
  if (dir == AspaDirection::kUpstream) return min_up < n ? AspaState::kUnknown : AspaState::kValid;
  // The down-ramp from AS(N) reaches down to AS(j+1) where j is the last
  // breaking hop: its length is N - j.
  const size_t max_down = n - last_down_break_max;
  const size_t min_down = n - last_down_break_min;
  if (max_up + max_down < n) return AspaState::kInvalid;
  if (min_up + min_down < n) return AspaState::kUnknown;
  return AspaState::kValid;
}

size_t AspaTable::memory_bytes() const {
  return starts_.capacity() * sizeof(uint32_t) + entries_.capacity() * sizeof(Entry) +
         providers_.capacity() * sizeof(uint32_t);
}

AspaState verify_by_definition(std::span<const Aspa> aspas, std::span<const uint32_t> path, bool has_as_set,
                               AspaDirection dir) {
  if (path.empty() || has_as_set) return AspaState::kInvalid;
  const std::vector<uint32_t> as = compress_from_origin(path);  // as[0] = AS(1)
  const size_t n = as.size();
  auto hop = [&](uint32_t a, uint32_t b) {
    for (const Aspa& x : aspas) {
      if (x.customer != a) continue;
      for (uint32_t p : x.providers) {
        if (p == b) return Hop::kProviderPlus;
      }
      return Hop::kNotProviderPlus;
    }
    return Hop::kNoAttestation;
  };
  // AS(i) is as[i - 1].
  auto up_ramp = [&](bool strict) {
    size_t k = 1;
    while (k < n) {
      Hop h = hop(as[k - 1], as[k]);  // hop(AS(k), AS(k+1))
      if (strict ? h != Hop::kProviderPlus : h == Hop::kNotProviderPlus) break;
      ++k;
    }
    return k;
  };
  auto down_ramp = [&](bool strict) {
    size_t l = 1;
    while (l < n) {
      const size_t j = n - l;         // hop(AS(j+1), AS(j))
      Hop h = hop(as[j], as[j - 1]);
      if (strict ? h != Hop::kProviderPlus : h == Hop::kNotProviderPlus) break;
      ++l;
    }
    return l;
  };
  if (dir == AspaDirection::kUpstream) {
    if (up_ramp(false) < n) return AspaState::kInvalid;
    if (up_ramp(true) < n) return AspaState::kUnknown;
    return AspaState::kValid;
  }
  if (up_ramp(false) + down_ramp(false) < n) return AspaState::kInvalid;
  if (up_ramp(true) + down_ramp(true) < n) return AspaState::kUnknown;
  return AspaState::kValid;
}

}  // namespace petrel::rpki
