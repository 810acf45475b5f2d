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
  // the top bits of the product spread them.
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
  AspaTable t;
  size_t cap = 16;
  while (cap < aspas.size() * 2) cap *= 2;
  t.slots_.assign(cap, Slot{0, kEmpty, 0});
  size_t total = 0;
  for (const Aspa& a : aspas) total += a.providers.size();
  t.providers_.reserve(total);
  for (const Aspa& a : aspas) {
    assert(std::is_sorted(a.providers.begin(), a.providers.end()));
    size_t i = mix(a.customer) & (cap - 1);
    while (t.slots_[i].offset != kEmpty && t.slots_[i].customer != a.customer) i = (i + 1) & (cap - 1);
    if (t.slots_[i].offset == kEmpty) ++t.customers_;
    t.slots_[i] = Slot{a.customer, static_cast<uint32_t>(t.providers_.size()), static_cast<uint32_t>(a.providers.size())};
    t.providers_.insert(t.providers_.end(), a.providers.begin(), a.providers.end());
  }
  return t;
}

const AspaTable::Slot* AspaTable::find(uint32_t customer) const {
  if (slots_.empty()) return nullptr;
  const size_t mask = slots_.size() - 1;
  for (size_t i = mix(customer) & mask;; i = (i + 1) & mask) {
    const Slot& s = slots_[i];
    if (s.offset == kEmpty) return nullptr;
    if (s.customer == customer) return &s;
  }
}

Hop AspaTable::hop(uint32_t customer, uint32_t provider) const {
  const Slot* s = find(customer);
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
  return slots_.capacity() * sizeof(Slot) + providers_.capacity() * sizeof(uint32_t);
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
