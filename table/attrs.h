// Interned attribute sets: one immutable, reference-counted copy per
// distinct canonical attribute set (codec::AttributeSet::wire()), with the
// fields best-path selection needs extracted once. A route holds one
// reference; the set is freed when its last route goes.
//
// One allocation per set: the header below, then the canonical bytes.
// The interner is shared by every session worker: it is split into
// stripes by hash, each with its own lock, and a reference count moves
// between 0 and 1 only under its stripe's lock, so a lookup can never
// revive a set that is being freed.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "codec/attribute_set.h"
#include "codec/attributes.h"
#include "crates/bytes/bytes.h"
#include "crates/cpu/prefetch.h"
#include "crates/net/ip.h"

namespace petrel::table {

// Asks the CPU for the cache line at p (a hint: p need not be valid).
using cpu::prefetch_line;

class Interner;

// The key of the table's hashes of what peers choose (attribute sets,
// path identifiers): drawn at random once per process, so that a peer
// cannot craft inputs that share one hash and make each insert walk all
// the others. Tests pass a fixed one.
struct HashKey {
  uint64_t k0 = 0, k1 = 0;
  // The process's key: drawn from std::random_device on first use.
  static HashKey process();
  friend bool operator==(const HashKey&, const HashKey&) = default;
};

// SipHash-2-4 (the reference's parameters; the interner runs the same
// code with 1-3): for the tests that check it against the reference's
// vectors.
[[nodiscard]] uint64_t siphash24(const HashKey& key, bytes::Span s);

class Attrs {
 public:
  Attrs(const Attrs&) = delete;
  Attrs& operator=(const Attrs&) = delete;

  // The canonical attribute bytes.
  [[nodiscard]] bytes::Span wire() const { return {bytes_(), wire_len_}; }
  [[nodiscard]] uint32_t refs() const { return refs_.load(std::memory_order_relaxed); }
  // Decoded again from the canonical bytes (for the API and exporters).
  [[nodiscard]] codec::AttributeSet decode() const;

  // RFC 4271 9.1.2.2 inputs. AS_PATH length, ORIGIN and which of MED,
  // LOCAL_PREF, ORIGINATOR_ID and CLUSTER_LIST are present are extracted
  // once into the header; the values themselves, the neighbouring and the
  // origin AS are read from the canonical bytes when asked (a few
  // attribute headers into the set, which is in cache by then: the header
  // is paid once per distinct set, 16 octets instead of 40).
  [[nodiscard]] bool has_local_pref() const { return flags_ & kHasLocalPref; }
  [[nodiscard]] uint32_t local_pref() const { return has_local_pref() ? u32_of(codec::attr_type::kLocalPref) : 0; }
  [[nodiscard]] bool has_med() const { return flags_ & kHasMed; }
  [[nodiscard]] uint32_t med() const { return has_med() ? u32_of(codec::attr_type::kMultiExitDisc) : 0; }  // 0 when absent
  [[nodiscard]] uint8_t origin() const { return origin_; }  // 0 IGP, 1 EGP, 2 INCOMPLETE, 3 absent
  [[nodiscard]] uint32_t as_path_length() const { return as_path_len_; }
  [[nodiscard]] uint32_t neighbour_as() const;  // 0: no leading AS_SEQUENCE
  // The AS_PATH's segments (4-octet ASes; none without an AS_PATH).
  [[nodiscard]] codec::AsSegmentRange as_path_segments() const;
  [[nodiscard]] uint32_t origin_as() const;     // 0: no trailing AS_SEQUENCE
  [[nodiscard]] bool has_originator_id() const { return flags_ & kHasOriginator; }
  [[nodiscard]] uint32_t originator_id() const {
    return has_originator_id() ? u32_of(codec::attr_type::kOriginatorId) : 0;
  }
  [[nodiscard]] uint32_t cluster_list_length() const;
  // RFC 9494: the set carries the LLGR_STALE community (65535:6), whether a
  // peer sent it or Petrel added it to a long-lived stale route: the route
  // is least preferred (best_path.h) and goes only to peers that
  // negotiated LLGR (export.h).
  [[nodiscard]] bool llgr_stale() const { return flags_ & kLlgrStale; }
  // NEXT_HOP (IPv4 NLRI) and MP_REACH_NLRI's global next hop, if present:
  // read from the bytes when asked (not kept in the header: every octet
  // here is paid once per distinct set).
  [[nodiscard]] std::optional<net::IpAddress> next_hop() const;
  [[nodiscard]] std::optional<net::IpAddress> mp_next_hop() const;
  // The next hop the set's routes are resolved by (table/nexthop.h):
  // MP_REACH_NLRI's global next hop when the set has one (an RFC 8950
  // IPv4 route's is IPv6), else NEXT_HOP; `link_local` when MP_REACH_NLRI
  // also carries an RFC 2545 link-local one (a 32-octet next hop). Read
  // from the bytes, without decoding the set. A set with both attributes
  // (an UPDATE with IPv4 NLRI and MP_REACH_NLRI of another family) is
  // resolved by the MP next hop for all its routes.
  struct ResolvedBy {
    net::IpAddress address;
    bool link_local = false;
  };
  [[nodiscard]] std::optional<ResolvedBy> resolved_by() const;
  // The table's next-hop registry's code for the set (0: not looked at
  // yet); set once, by the table, when a route with the set first enters
  // it while next hops are tracked (TableOptions::nexthops).
  [[nodiscard]] uint32_t nexthop_code() const { return nexthop_.load(std::memory_order_acquire); }
  void set_nexthop_code(uint32_t c) { nexthop_.store(c, std::memory_order_release); }

 private:
  friend class Interner;
  static constexpr uint8_t kHasLocalPref = 1, kHasMed = 2, kHasOriginator = 4, kHasClusterList = 8,
                           kLlgrStale = 16;

  Attrs() = default;
  [[nodiscard]] const std::byte* bytes_() const { return reinterpret_cast<const std::byte*>(this + 1); }
  [[nodiscard]] std::byte* bytes_() { return reinterpret_cast<std::byte*>(this + 1); }
  // The value of a 4-octet attribute the flags say is present.
  [[nodiscard]] uint32_t u32_of(uint8_t type) const;

  // 16 octets, then the canonical bytes (12 before next-hop tracking:
  // nexthop_ costs 4 octets per distinct set, none per route).
  std::atomic<uint32_t> refs_{0};
  uint32_t wire_len_ = 0;
  uint16_t as_path_len_ = 0;  // at most 65535 (a canonical AS_PATH of 4-octet ASes fits in 16 bits)
  uint8_t origin_ = 3;
  uint8_t flags_ = 0;
  std::atomic<uint32_t> nexthop_{0};
};

static_assert(sizeof(Attrs) == 16);

// The set of interned attribute sets. Thread-safe.
class Interner {
 public:
  explicit Interner(size_t stripes = 64, HashKey key = HashKey::process());
  ~Interner();
  Interner(const Interner&) = delete;
  Interner& operator=(const Interner&) = delete;

  // The interned copy of `set`, with `refs` references taken (>= 1).
  [[nodiscard]] Attrs* intern(const codec::AttributeSet& set, uint32_t refs = 1);
  // The same from canonical bytes alone (codec::UpdateView::
  // write_attribute_set, or an AttributeSet's wire()): the header's fields
  // are read from the bytes, and only when the set is new.
  [[nodiscard]] Attrs* intern(bytes::Span canonical, uint32_t refs = 1);
  // The same with the bytes' hash_of() computed by the caller, who may
  // have asked for its index slot with prefetch() in the meantime.
  [[nodiscard]] Attrs* intern_hashed(const codec::AttributeSet& set, uint32_t hash, uint32_t refs = 1);
  [[nodiscard]] Attrs* intern_hashed(bytes::Span canonical, uint32_t hash, uint32_t refs = 1);
  // The keyed hash of canonical bytes (SipHash-1-3 under the interner's
  // key, folded to 32 bits). A set's hash is computed when asked (when its
  // last reference goes), not kept.
  [[nodiscard]] uint32_t hash_of(bytes::Span canonical) const;
  [[nodiscard]] const HashKey& key() const { return key_; }
  // Asks the CPU for the index slot where a set of this hash is looked up.
  void prefetch(uint32_t hash) const;
  // Takes `n` more references to a set the caller already holds one of.
  static void acquire(Attrs* a, uint32_t n = 1) { a->refs_.fetch_add(n, std::memory_order_relaxed); }
  // Drops n references (the caller holds them); the set is freed with its
  // last.
  void release(Attrs* a, uint32_t n = 1);
  // A hint before release(a, n): when that will drop a's last
  // reference, asks the CPU for the index slot it will unlink a from (a's
  // bytes are read for the hash: they should be in cache).
  void prefetch_unlink(const Attrs* a, uint32_t n) const;
  [[nodiscard]] size_t size() const;          // distinct sets held
  [[nodiscard]] size_t bytes() const;         // their allocated size (headers + wire + index)
  [[nodiscard]] size_t index_bytes() const;   // the index's part of bytes()
  // Called (outside the interner's locks) when a set whose nexthop_code()
  // is not 0 is freed by release(): the table's next-hop registry drops
  // its count of sets per next hop. Not called when the interner itself
  // is destroyed. Set once, before any set is interned.
  using FreedHook = void (*)(void* context, uint32_t nexthop_code);
  void on_freed(FreedHook hook, void* context) {
    freed_hook_ = hook;
    freed_context_ = context;
  }

 private:
  // A stripe's index: open addressing with linear probing. A slot holds a
  // set's address with 16 bits of its hash in the top bits (unused by
  // user-space addresses), so a probe reads a set only when those match.
  // 0: an empty slot. The slot count need not be a power of two (a set's
  // home is the hash scaled to it, not masked): the index grows at 4/5
  // full to the next of the sizes 4, 5, 6, 7 x 2^k slots (the array then
  // fills a jemalloc size class exactly): 10-13 octets a set instead of
  // 11-23 (doubling at 7/10). Up to 2^16 slots the home comes from the tag
  // alone and the index grows without reading the sets.
  struct Stripe {
    mutable std::mutex mu;
    std::vector<uintptr_t> slots;
    size_t count = 0;
    size_t wire_bytes = 0;
    // slots' address and size, for prefetch_unlink without the lock (a
    // prefetch of a stale address is harmless).
    std::atomic<const uintptr_t*> hint_slots{nullptr};
    std::atomic<size_t> hint_size{0};
  };
  Stripe& stripe_of(uint32_t hash) { return stripes_[hash % stripes_.size()]; }
  const Stripe& stripe_of(uint32_t hash) const { return stripes_[hash % stripes_.size()]; }
  static void publish(Stripe& s) {
    s.hint_slots.store(s.slots.data(), std::memory_order_relaxed);
    s.hint_size.store(s.slots.size(), std::memory_order_relaxed);
  }
  // What the header keeps of a set (Attrs' fields after the count and
  // length), from an AttributeSet or read from canonical bytes.
  struct Fields {
    uint16_t as_path_len = 0;
    uint8_t origin = 3;
    uint8_t flags = 0;
  };
  static Fields fields_of(const codec::AttributeSet& set);
  static Fields fields_of(bytes::Span canonical);
  // The set of bytes w, found or made; fields() is asked only for a new one.
  template <typename F>
  Attrs* intern_wire(bytes::Span w, uint32_t h, uint32_t refs, F&& fields);
  void grow(Stripe& s) const;
  void unlink(Stripe& s, Attrs* a, uint32_t hash) const;
  // The home of the set in slot value v: from its tag while that suffices.
  [[nodiscard]] size_t home_of_slot(uintptr_t v, size_t n) const;

  HashKey key_;
  std::vector<Stripe> stripes_;
  FreedHook freed_hook_ = nullptr;
  void* freed_context_ = nullptr;
};

// A reference to an interned set that releases itself (for code outside
// the table's hot path: followers, the API).
class AttrsRef {
 public:
  AttrsRef() = default;
  AttrsRef(Interner* in, Attrs* a) : in_(in), a_(a) {}  // adopts one reference
  AttrsRef(const AttrsRef& o) : in_(o.in_), a_(o.a_) { if (a_) Interner::acquire(a_); }
  AttrsRef(AttrsRef&& o) noexcept : in_(o.in_), a_(o.a_) { o.a_ = nullptr; }
  AttrsRef& operator=(AttrsRef o) noexcept { std::swap(in_, o.in_); std::swap(a_, o.a_); return *this; }
  ~AttrsRef() { if (a_) in_->release(a_); }
  [[nodiscard]] const Attrs* get() const { return a_; }
  const Attrs* operator->() const { return a_; }
  explicit operator bool() const { return a_ != nullptr; }

 private:
  Interner* in_ = nullptr;
  Attrs* a_ = nullptr;
};

}  // namespace petrel::table
