#include "table/attrs.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cstring>
#include <new>
#include <random>

namespace petrel::table {
namespace {

uint64_t rotl(uint64_t x, unsigned b) { return (x << b) | (x >> (64 - b)); }

// SipHash (Aumasson and Bernstein) with C compression and D finalisation
// rounds: a keyed hash for which inputs that collide cannot be found
// without the key. The interner uses SipHash-1-3 (the sets are 30-200
// octets: one round per 8 of them); the tests check the 2-4 reference
// vector.
template <int C, int D>
uint64_t siphash(const HashKey& key, bytes::Span s) {
  uint64_t v0 = key.k0 ^ 0x736f6d6570736575ull, v1 = key.k1 ^ 0x646f72616e646f6dull;
  uint64_t v2 = key.k0 ^ 0x6c7967656e657261ull, v3 = key.k1 ^ 0x7465646279746573ull;
  auto round = [&] {
    v0 += v1;
    v1 = rotl(v1, 13);
    v1 ^= v0;
    v0 = rotl(v0, 32);
    v2 += v3;
    v3 = rotl(v3, 16);
    v3 ^= v2;
    v0 += v3;
    v3 = rotl(v3, 21);
    v3 ^= v0;
    v2 += v1;
    v1 = rotl(v1, 17);
    v1 ^= v2;
    v2 = rotl(v2, 32);
  };
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t size = s.size();
  size_t n = size;
  auto word = [](const unsigned char* q, size_t len) {  // little-endian, as the reference reads
    uint64_t w = 0;
    for (size_t i = 0; i < len; ++i) w |= uint64_t{q[i]} << (8 * i);
    return w;
  };
  while (n >= 8) {
    uint64_t m;
    if constexpr (std::endian::native == std::endian::little) std::memcpy(&m, p, 8);
    else m = word(p, 8);
    v3 ^= m;
    for (int i = 0; i < C; ++i) round();
    v0 ^= m;
    p += 8;
    n -= 8;
  }
  const uint64_t b = uint64_t{size} << 56 | (n != 0 ? word(p, n) : 0);  // p is null for an empty set
  v3 ^= b;
  for (int i = 0; i < C; ++i) round();
  v0 ^= b;
  v2 ^= 0xff;
  for (int i = 0; i < D; ++i) round();
  return v0 ^ v1 ^ v2 ^ v3;
}

uint32_t hash_bytes(const HashKey& key, bytes::Span s) {
  const uint64_t h = siphash<1, 3>(key, s);
  return static_cast<uint32_t>(h ^ (h >> 32));
}

// (The index slot's tag matched already: the hash is not compared again.)
bool same_wire(const Attrs* a, bytes::Span w) {
  return a->wire().size() == w.size() &&
         (w.empty() || std::memcmp(a->wire().data(), w.data(), w.size()) == 0);
}

// A stripe's index slot: the set's address, the hash's top 16 bits (the
// tag) above it. A set's home is its hash scaled to the slot count: up to
// 2^16 slots the tag alone, so that the index grows without reading the
// sets; above, the whole hash (read from the set when the index grows).
constexpr unsigned kTagShift = 48;
constexpr uintptr_t kAddressMask = (uintptr_t{1} << kTagShift) - 1;
constexpr size_t kTagHomes = size_t{1} << 16;
uintptr_t tag_of(uint32_t hash) { return uintptr_t{hash >> 16} << kTagShift; }
uintptr_t slot_value(Attrs* a, uint32_t hash) {
  const auto p = reinterpret_cast<uintptr_t>(a);
  assert((p & ~kAddressMask) == 0);  // x86-64 and AArch64 user space: 48-bit addresses
  return p | tag_of(hash);
}
Attrs* address_of(uintptr_t v) { return reinterpret_cast<Attrs*>(v & kAddressMask); }
size_t home_of(uint32_t hash, size_t n) {
  if (n <= kTagHomes) return static_cast<size_t>((uint64_t{hash >> 16} * n) >> 16);
  return static_cast<size_t>((uint64_t{hash} * n) >> 32);
}
// The next slot count after n: 4, 5, 6 or 7 x 2^k, the next size above n.
size_t next_size(size_t n) {
  size_t p = 4;
  while (p * 2 <= n) p *= 2;  // p <= n < 2p, p a power of two of at least 4
  const size_t step = p / 4;
  return (n / step + 1) * step;
}
size_t next_slot(size_t i, size_t n) { return i + 1 == n ? 0 : i + 1; }
// How far slot j lies after slot i, cyclically.
size_t distance(size_t i, size_t j, size_t n) { return j >= i ? j - i : j + n - i; }

// The canonical bytes' attributes (validated: sorted by type code, each
// once), read only as far as the one asked for.
std::optional<bytes::Span> value_of(bytes::Span w, uint8_t type) {
  size_t at = 0;
  while (at + 3 <= w.size()) {
    const auto flags = std::to_integer<uint8_t>(w[at]);
    const auto t = std::to_integer<uint8_t>(w[at + 1]);
    size_t len = std::to_integer<size_t>(w[at + 2]), head = 3;
    if (flags & codec::attr_flag::kExtendedLength) {
      if (at + 4 > w.size()) break;
      len = len << 8 | std::to_integer<size_t>(w[at + 3]);
      head = 4;
    }
    if (t > type || at + head + len > w.size()) break;
    if (t == type) return w.subspan(at + head, len);
    at += head + len;
  }
  return std::nullopt;
}

uint32_t be32(bytes::Span v) {
  if (v.size() < 4) return 0;
  return std::to_integer<uint32_t>(v[0]) << 24 | std::to_integer<uint32_t>(v[1]) << 16 |
         std::to_integer<uint32_t>(v[2]) << 8 | std::to_integer<uint32_t>(v[3]);
}

codec::AsPathSummary path_summary(bytes::Span w) {
  auto v = value_of(w, codec::attr_type::kAsPath);
  return v ? codec::summarize_as_path(*v, codec::AsWidth::k4) : codec::AsPathSummary{};
}

}  // namespace

codec::AttributeSet Attrs::decode() const {
  auto r = codec::AttributeSet::from_canonical(wire());
  assert(r.ok());  // the bytes came from an AttributeSet
  return r.ok() ? std::move(r).value() : codec::AttributeSet{};
}

uint32_t Attrs::u32_of(uint8_t type) const {
  auto v = value_of(wire(), type);
  return v ? be32(*v) : 0;
}

// The leftmost AS of a leading AS_SEQUENCE, confederation segments
// skipped (AsPathSummary::first_as), without walking the rest.
uint32_t Attrs::neighbour_as() const {
  auto v = value_of(wire(), codec::attr_type::kAsPath);
  if (!v) return 0;
  for (const codec::AsSegmentView& seg : codec::AsSegmentRange(*v, codec::AsWidth::k4)) {
    if (seg.type == codec::SegmentType::kConfedSequence || seg.type == codec::SegmentType::kConfedSet) continue;
    return seg.type == codec::SegmentType::kAsSequence && seg.count > 0 ? seg.at(0) : 0;
  }
  return 0;
}
codec::AsSegmentRange Attrs::as_path_segments() const {
  auto v = value_of(wire(), codec::attr_type::kAsPath);
  return codec::AsSegmentRange(v ? *v : bytes::Span(), codec::AsWidth::k4);
}

uint32_t Attrs::origin_as() const { return path_summary(wire()).origin_as; }

uint32_t Attrs::cluster_list_length() const {
  if (!(flags_ & kHasClusterList)) return 0;
  auto v = value_of(wire(), codec::attr_type::kClusterList);
  return v ? static_cast<uint32_t>(v->size() / 4) : 0;
}

std::optional<net::IpAddress> Attrs::next_hop() const { return decode().next_hop(); }

std::optional<net::IpAddress> Attrs::mp_next_hop() const {
  auto s = decode();
  if (const auto& nh = s.mp_next_hop()) return nh->global;
  return std::nullopt;
}

std::optional<Attrs::ResolvedBy> Attrs::resolved_by() const {
  // One UPDATE may carry IPv4 NLRI with NEXT_HOP beside MP_REACH_NLRI of
  // another family (RFC 4760 section 3 allows both): its set then names two
  // next hops, for routes of two families, and one code per set cannot
  // judge both. Such a set is not tracked (its routes count as resolved,
  // as before next-hop tracking) rather than some routes judged by the
  // other family's next hop.
  const auto mp = value_of(wire(), codec::attr_type::kMpReachNlri);
  if (mp && value_of(wire(), codec::attr_type::kNextHop)) return std::nullopt;
  // MP_REACH_NLRI (type 14) as the canonical form keeps it: AFI, SAFI, the
  // next hop's length and bytes, a reserved octet, no NLRI.
  if (auto v = mp; v && v->size() >= 4) {
    const auto len = std::to_integer<size_t>((*v)[3]);
    if (v->size() < 4 + len) return std::nullopt;
    uint8_t b[16];
    if (len == 4) {
      std::memcpy(b, v->data() + 4, 4);
      return ResolvedBy{net::IpAddress::from_bytes(net::IpFamily::V4, b), false};
    }
    if (len == 16 || len == 32) {
      std::memcpy(b, v->data() + 4, 16);
      return ResolvedBy{net::IpAddress::from_bytes(net::IpFamily::V6, b), len == 32};
    }
    return std::nullopt;  // a next hop of another form: not resolved by the table
  }
  if (auto v = value_of(wire(), codec::attr_type::kNextHop); v && v->size() == 4) return ResolvedBy{net::IpAddress::v4(be32(*v)), false};
  return std::nullopt;
}

HashKey HashKey::process() {
  static const HashKey key = [] {
    std::random_device rd;
    auto draw = [&rd] { return uint64_t{rd()} << 32 | rd(); };
    return HashKey{draw(), draw()};
  }();
  return key;
}

uint64_t siphash24(const HashKey& key, bytes::Span s) { return siphash<2, 4>(key, s); }

Interner::Interner(size_t stripes, HashKey key) : key_(key), stripes_(stripes == 0 ? 1 : stripes) {
  for (auto& s : stripes_) {
    s.slots.assign(64, 0);
    publish(s);
  }
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

size_t Interner::home_of_slot(uintptr_t v, size_t n) const {
  if (n <= kTagHomes) return static_cast<size_t>(((v >> kTagShift) * n) >> 16);
  return home_of(hash_of(address_of(v)->wire()), n);
}

// The next slot count (homes are scaled to any count).
void Interner::grow(Stripe& s) const {
  std::vector<uintptr_t> ns(next_size(s.slots.size()), 0);
  const size_t n = ns.size();
  for (uintptr_t v : s.slots) {
    if (!v) continue;
    size_t i = home_of_slot(v, n);
    while (ns[i]) i = next_slot(i, n);
    ns[i] = v;
  }
  s.slots.swap(ns);
  publish(s);
}

void Interner::prefetch_unlink(const Attrs* a, uint32_t n) const {
  if (a->refs_.load(std::memory_order_relaxed) > n) return;
  prefetch(hash_of(a->wire()));
}

void Interner::unlink(Stripe& s, Attrs* a, uint32_t h) const {
  const size_t n = s.slots.size();
  const uintptr_t want = slot_value(a, h);
  size_t i = home_of(h, n);
  while (s.slots[i] != want) i = next_slot(i, n);
  // Backward-shift deletion: a later set of the probe run moves into the
  // hole when its home does not lie cyclically in (i, j].
  for (size_t j = next_slot(i, n);; j = next_slot(j, n)) {
    const uintptr_t v = s.slots[j];
    if (!v) break;
    if (distance(home_of_slot(v, n), j, n) >= distance(i, j, n)) {
      s.slots[i] = v;
      i = j;
    }
  }
  s.slots[i] = 0;
}

Interner::Fields Interner::fields_of(const codec::AttributeSet& set) {
  Fields f;
  if (set.local_pref()) f.flags |= Attrs::kHasLocalPref;
  if (set.med()) f.flags |= Attrs::kHasMed;
  if (set.originator_id()) f.flags |= Attrs::kHasOriginator;
  if (set.cluster_list_length() != 0) f.flags |= Attrs::kHasClusterList;
  if (set.has_community(codec::community::kLlgrStale)) f.flags |= Attrs::kLlgrStale;
  if (auto o = set.origin()) f.origin = static_cast<uint8_t>(*o);
  f.as_path_len = static_cast<uint16_t>(std::min<uint32_t>(set.as_path_length(), 0xFFFF));
  return f;
}

// The same fields read from the canonical bytes by the rules
// AttributeSet's extraction applies (a value of the wrong length counts
// as absent); the bytes came from a decoded UPDATE, whose AS_PATH was
// validated there. tests/table/fast_import_test.cpp checks that both ways
// agree. The bytes are canonical (sorted by type code, each attribute once), so
// the walk stops at the first attribute past CLUSTER_LIST (COMMUNITIES,
// before it, is scanned for LLGR_STALE; the rest are not read), and it reads the headers itself: no reader
// object per attribute. A header or value that would run past the end
// ends the walk (what is read stays within the bytes).
Interner::Fields Interner::fields_of(bytes::Span w) {
  Fields f;
  const size_t size = w.size();
  auto byte = [&](size_t i) { return std::to_integer<uint8_t>(w[i]); };
  for (size_t at = 0; at + 3 <= size;) {
    const uint8_t type = byte(at + 1);
    if (type > codec::attr_type::kClusterList) break;
    const bool ext = byte(at) & codec::attr_flag::kExtendedLength;
    if (ext && at + 4 > size) break;
    const size_t n = ext ? (size_t{byte(at + 2)} << 8 | byte(at + 3)) : byte(at + 2);
    const size_t value = at + (ext ? 4 : 3);
    if (value + n > size) break;
    switch (type) {
      case codec::attr_type::kOrigin:
        if (n == 1 && byte(value) <= 2) f.origin = byte(value);
        break;
      case codec::attr_type::kAsPath:
        f.as_path_len = static_cast<uint16_t>(
            std::min<uint32_t>(codec::summarize_as_path(w.subspan(value, n), codec::AsWidth::k4).length, 0xFFFF));
        break;
      case codec::attr_type::kMultiExitDisc:
        if (n == 4) f.flags |= Attrs::kHasMed;
        break;
      case codec::attr_type::kLocalPref:
        if (n == 4) f.flags |= Attrs::kHasLocalPref;
        break;
      case codec::attr_type::kCommunities:
        if (codec::has_community(w.subspan(value, n), codec::community::kLlgrStale)) f.flags |= Attrs::kLlgrStale;
        break;
      case codec::attr_type::kOriginatorId:
        if (n == 4) f.flags |= Attrs::kHasOriginator;
        break;
      case codec::attr_type::kClusterList:
        if (n != 0 && n % 4 == 0) f.flags |= Attrs::kHasClusterList;
        break;
      default:
        break;
    }
    at = value + n;
  }
  return f;
}

template <typename F>
Attrs* Interner::intern_wire(bytes::Span w, uint32_t h, uint32_t refs, F&& fields) {
  assert(refs >= 1);  // h is hash_of(w) (not asserted: a second hash per UPDATE where assertions are on)
  Stripe& s = stripe_of(h);
  std::lock_guard lock(s.mu);
  const size_t n = s.slots.size();
  const uintptr_t tag = tag_of(h);
  size_t i = home_of(h, n);
  for (; s.slots[i]; i = next_slot(i, n)) {
    const uintptr_t v = s.slots[i];
    if ((v & ~kAddressMask) != tag) continue;
    Attrs* a = address_of(v);
    if (same_wire(a, w)) {
      a->refs_.fetch_add(refs, std::memory_order_relaxed);
      return a;
    }
  }
  void* mem = ::operator new(sizeof(Attrs) + w.size());
  auto* a = new (mem) Attrs();
  a->refs_.store(refs, std::memory_order_relaxed);
  a->wire_len_ = static_cast<uint32_t>(w.size());
  if (!w.empty()) std::memcpy(a->bytes_(), w.data(), w.size());
  const Fields f = fields();
  a->flags_ = f.flags;
  a->origin_ = f.origin;
  a->as_path_len_ = f.as_path_len;
  s.slots[i] = slot_value(a, h);
  ++s.count;
  s.wire_bytes += w.size();
  // At most 4/5 of the slots taken. The tags keep a probe from reading
  // sets; a new set (one per UPDATE at most) probes further than at 7/10.
  if (s.count * 5 > n * 4) grow(s);
  return a;
}

Attrs* Interner::intern(const codec::AttributeSet& set, uint32_t refs) {
  return intern_hashed(set, hash_of(set.wire()), refs);
}

Attrs* Interner::intern(bytes::Span canonical, uint32_t refs) {
  return intern_hashed(canonical, hash_of(canonical), refs);
}

Attrs* Interner::intern_hashed(const codec::AttributeSet& set, uint32_t hash, uint32_t refs) {
  return intern_wire(set.wire(), hash, refs, [&] { return fields_of(set); });
}

Attrs* Interner::intern_hashed(bytes::Span canonical, uint32_t hash, uint32_t refs) {
  return intern_wire(canonical, hash, refs, [&] { return fields_of(canonical); });
}

uint32_t Interner::hash_of(bytes::Span canonical) const { return hash_bytes(key_, canonical); }

void Interner::prefetch(uint32_t h) const {
  const Stripe& s = stripe_of(h);
  const uintptr_t* slots = s.hint_slots.load(std::memory_order_relaxed);
  const size_t size = s.hint_size.load(std::memory_order_relaxed);
  if (slots && size) prefetch_line(slots + home_of(h, size));
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
  const uint32_t h = hash_of(a->wire());
  Stripe& s = stripe_of(h);
  {
    std::lock_guard lock(s.mu);
    if (a->refs_.fetch_sub(n, std::memory_order_acq_rel) != n) return;
    unlink(s, a, h);
    --s.count;
    s.wire_bytes -= a->wire_len_;
  }
  if (const uint32_t code = a->nexthop_code(); code != 0 && freed_hook_) freed_hook_(freed_context_, code);
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

size_t Interner::index_bytes() const {
  size_t n = 0;
  for (const auto& s : stripes_) {
    std::lock_guard lock(s.mu);
    n += s.slots.size() * sizeof(uintptr_t);
  }
  return n;
}

}  // namespace petrel::table
