#include "table/attrs.h"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <new>

namespace petrel::table {
namespace {

// A word-at-a-time multiplicative hash of the canonical bytes (the sets
// are 30-200 octets; this is one multiply per 8 of them).
uint32_t hash_bytes(bytes::Span s) {
  constexpr uint64_t kMul = 0x9E3779B97F4A7C15ull;
  uint64_t h = 0x243F6A8885A308D3ull ^ (s.size() * kMul);
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  size_t n = s.size();
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    h = (h ^ w) * kMul;
    h ^= h >> 29;
    p += 8;
    n -= 8;
  }
  uint64_t w = 0;
  if (n != 0) std::memcpy(&w, p, n);  // p is null for an empty set
  h = (h ^ w) * kMul;
  h ^= h >> 32;
  return static_cast<uint32_t>(h);
}

bool same_wire(const Attrs* a, uint32_t hash, bytes::Span w) {
  return a->hash() == hash && a->wire().size() == w.size() &&
         (w.empty() || std::memcmp(a->wire().data(), w.data(), w.size()) == 0);
}

// A stripe's index slot: the set's address, the hash's top 16 bits above
// it. The low bits of the hash chose the stripe; a set's home slot comes
// from the bits of the tag first (bits 16-31), then bits 8-15, so that up
// to 2^16 slots the tag alone places it.
constexpr unsigned kTagShift = 48;
constexpr uintptr_t kAddressMask = (uintptr_t{1} << kTagShift) - 1;
uintptr_t tag_of(uint32_t hash) { return uintptr_t{hash >> 16} << kTagShift; }
uintptr_t slot_value(Attrs* a, uint32_t hash) {
  const auto p = reinterpret_cast<uintptr_t>(a);
  assert((p & ~kAddressMask) == 0);  // x86-64 and AArch64 user space: 48-bit addresses
  return p | tag_of(hash);
}
Attrs* address_of(uintptr_t v) { return reinterpret_cast<Attrs*>(v & kAddressMask); }
size_t home_of(uint32_t hash, size_t mask) { return ((hash >> 16) | ((hash & 0xFF00u) << 8)) & mask; }
// The home of the set in slot value v: from its tag while that suffices.
size_t home_of(uintptr_t v, size_t mask) {
  if (mask <= 0xFFFF) return static_cast<size_t>(v >> kTagShift) & mask;
  return home_of(address_of(v)->hash(), mask);
}

}  // namespace

codec::AttributeSet Attrs::decode() const {
  auto r = codec::AttributeSet::from_canonical(wire());
  assert(r.ok());  // the bytes came from an AttributeSet
  return r.ok() ? std::move(r).value() : codec::AttributeSet{};
}

std::optional<net::IpAddress> Attrs::next_hop() const { return decode().next_hop(); }

std::optional<net::IpAddress> Attrs::mp_next_hop() const {
  auto s = decode();
  if (const auto& nh = s.mp_next_hop()) return nh->global;
  return std::nullopt;
}

Interner::Interner(size_t stripes) : stripes_(stripes == 0 ? 1 : stripes) {
  for (auto& s : stripes_) s.slots.assign(64, 0);
}

Interner::~Interner() {
  for (auto& s : stripes_) {
    for (uintptr_t v : s.slots) {
      if (!v) continue;
      Attrs* a = address_of(v);
      a->~Attrs();
      ::operator delete(a);
    }
  }
}

void Interner::grow(Stripe& s) {
  std::vector<uintptr_t> ns(s.slots.size() * 2, 0);
  const size_t mask = ns.size() - 1;
  for (uintptr_t v : s.slots) {
    if (!v) continue;
    size_t i = home_of(v, mask);
    while (ns[i]) i = (i + 1) & mask;
    ns[i] = v;
  }
  s.slots.swap(ns);
}

void Interner::unlink(Stripe& s, Attrs* a) {
  const size_t mask = s.slots.size() - 1;
  const uintptr_t want = slot_value(a, a->hash_);
  size_t i = home_of(a->hash_, mask);
  while (s.slots[i] != want) i = (i + 1) & mask;
  // Backward-shift deletion: a later set of the probe run moves into the
  // hole when its home does not lie cyclically in (i, j].
  for (size_t j = (i + 1) & mask;; j = (j + 1) & mask) {
    const uintptr_t v = s.slots[j];
    if (!v) break;
    const size_t h = home_of(v, mask);
    if (((j - h) & mask) >= ((j - i) & mask)) {
      s.slots[i] = v;
      i = j;
    }
  }
  s.slots[i] = 0;
}

Attrs* Interner::intern(const codec::AttributeSet& set, uint32_t refs) {
  assert(refs >= 1);
  bytes::Span w = set.wire();
  uint32_t h = hash_bytes(w);
  Stripe& s = stripe_of(h);
  std::lock_guard lock(s.mu);
  const size_t mask = s.slots.size() - 1;
  const uintptr_t tag = tag_of(h);
  size_t i = home_of(h, mask);
  for (; s.slots[i]; i = (i + 1) & mask) {
    const uintptr_t v = s.slots[i];
    if ((v & ~kAddressMask) != tag) continue;
    Attrs* a = address_of(v);
    if (same_wire(a, h, w)) {
      a->refs_.fetch_add(refs, std::memory_order_relaxed);
      return a;
    }
  }
  void* mem = ::operator new(sizeof(Attrs) + w.size());
  auto* a = new (mem) Attrs();
  a->refs_.store(refs, std::memory_order_relaxed);
  a->hash_ = h;
  a->wire_len_ = static_cast<uint32_t>(w.size());
  if (!w.empty()) std::memcpy(a->bytes_(), w.data(), w.size());
  if (auto v = set.local_pref()) { a->local_pref_ = *v; a->flags_ |= Attrs::kHasLocalPref; }
  if (auto v = set.med()) { a->med_ = *v; a->flags_ |= Attrs::kHasMed; }
  if (auto v = set.originator_id()) { a->originator_id_ = *v; a->flags_ |= Attrs::kHasOriginator; }
  if (auto o = set.origin()) a->origin_ = static_cast<uint8_t>(*o);
  a->as_path_len_ = set.as_path_length();
  a->neighbour_as_ = set.first_as();
  a->origin_as_ = set.origin_as();
  a->cluster_len_ = static_cast<uint16_t>(std::min<uint32_t>(set.cluster_list_length(), 0xFFFF));
  s.slots[i] = slot_value(a, h);
  ++s.count;
  s.wire_bytes += w.size();
  // At most 70 % of the slots taken: probe runs stay short.
  if (s.count * 10 > s.slots.size() * 7) grow(s);
  return a;
}

void Interner::release(Attrs* a, uint32_t n) {
  assert(n >= 1);
  // Above n references the count can drop without the lock: it cannot
  // reach zero. The last reference is dropped under the stripe's lock, where
  // intern() takes references to sets it finds, so a set is never found
  // and freed at once.
  uint32_t r = a->refs_.load(std::memory_order_relaxed);
  while (r > n) {
    if (a->refs_.compare_exchange_weak(r, r - n, std::memory_order_acq_rel, std::memory_order_relaxed)) return;
  }
  Stripe& s = stripe_of(a->hash_);
  {
    std::lock_guard lock(s.mu);
    if (a->refs_.fetch_sub(n, std::memory_order_acq_rel) != n) return;
    unlink(s, a);
    --s.count;
    s.wire_bytes -= a->wire_len_;
  }
  a->~Attrs();
  ::operator delete(a);
}

size_t Interner::size() const {
  size_t n = 0;
  for (const auto& s : stripes_) {
    std::lock_guard lock(s.mu);
    n += s.count;
  }
  return n;
}

size_t Interner::bytes() const {
  size_t n = 0;
  for (const auto& s : stripes_) {
    std::lock_guard lock(s.mu);
    n += s.count * sizeof(Attrs) + s.wire_bytes + s.slots.size() * sizeof(uintptr_t);
  }
  return n;
}

}  // namespace petrel::table
