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
#include "crates/bytes/bytes.h"
#include "crates/net/ip.h"

namespace petrel::table {

class Interner;

class Attrs {
 public:
  Attrs(const Attrs&) = delete;
  Attrs& operator=(const Attrs&) = delete;

  // The canonical attribute bytes.
  [[nodiscard]] bytes::Span wire() const { return {bytes_(), wire_len_}; }
  [[nodiscard]] uint32_t hash() const { return hash_; }
  [[nodiscard]] uint32_t refs() const { return refs_.load(std::memory_order_relaxed); }
  // Decoded again from the canonical bytes (for the API and exporters).
  [[nodiscard]] codec::AttributeSet decode() const;

  // RFC 4271 9.1.2.2 inputs, extracted once.
  [[nodiscard]] bool has_local_pref() const { return flags_ & kHasLocalPref; }
  [[nodiscard]] uint32_t local_pref() const { return local_pref_; }
  [[nodiscard]] bool has_med() const { return flags_ & kHasMed; }
  [[nodiscard]] uint32_t med() const { return med_; }  // 0 when absent
  [[nodiscard]] uint8_t origin() const { return origin_; }  // 0 IGP, 1 EGP, 2 INCOMPLETE, 3 absent
  [[nodiscard]] uint32_t as_path_length() const { return as_path_len_; }
  [[nodiscard]] uint32_t neighbour_as() const { return neighbour_as_; }  // 0: empty AS_PATH
  [[nodiscard]] uint32_t origin_as() const { return origin_as_; }
  [[nodiscard]] bool has_originator_id() const { return flags_ & kHasOriginator; }
  [[nodiscard]] uint32_t originator_id() const { return originator_id_; }
  [[nodiscard]] uint32_t cluster_list_length() const { return cluster_len_; }
  // NEXT_HOP (IPv4 NLRI) and MP_REACH_NLRI's global next hop, if present:
  // read from the bytes when asked (not kept in the header: every octet
  // here is paid once per distinct set).
  [[nodiscard]] std::optional<net::IpAddress> next_hop() const;
  [[nodiscard]] std::optional<net::IpAddress> mp_next_hop() const;

 private:
  friend class Interner;
  static constexpr uint8_t kHasLocalPref = 1, kHasMed = 2, kHasOriginator = 4;

  Attrs() = default;
  [[nodiscard]] const std::byte* bytes_() const { return reinterpret_cast<const std::byte*>(this + 1); }
  [[nodiscard]] std::byte* bytes_() { return reinterpret_cast<std::byte*>(this + 1); }

  // 40 octets, then the canonical bytes.
  std::atomic<uint32_t> refs_{0};
  uint32_t hash_ = 0;
  uint32_t wire_len_ = 0;
  uint32_t local_pref_ = 0, med_ = 0;
  uint32_t as_path_len_ = 0, neighbour_as_ = 0, origin_as_ = 0;
  uint32_t originator_id_ = 0;
  uint16_t cluster_len_ = 0;
  uint8_t origin_ = 3;
  uint8_t flags_ = 0;
};

static_assert(sizeof(Attrs) == 40);

// The set of interned attribute sets. Thread-safe.
class Interner {
 public:
  explicit Interner(size_t stripes = 64);
  ~Interner();
  Interner(const Interner&) = delete;
  Interner& operator=(const Interner&) = delete;

  // The interned copy of `set`, with `refs` references taken (>= 1).
  [[nodiscard]] Attrs* intern(const codec::AttributeSet& set, uint32_t refs = 1);
  // Takes `n` more references to a set the caller already holds one of.
  static void acquire(Attrs* a, uint32_t n = 1) { a->refs_.fetch_add(n, std::memory_order_relaxed); }
  // Drops n references (the caller holds them); the set is freed with its
  // last.
  void release(Attrs* a, uint32_t n = 1);
  [[nodiscard]] size_t size() const;          // distinct sets held
  [[nodiscard]] size_t bytes() const;         // their allocated size (headers + wire + index)

 private:
  // A stripe's index: open addressing with linear probing. A slot holds a
  // set's address with 16 bits of its hash in the top bits (unused by
  // user-space addresses), so a probe reads a set only when those match,
  // and the index can be rebuilt without reading the sets while a stripe
  // has at most 2^16 slots. 0: an empty slot.
  struct Stripe {
    mutable std::mutex mu;
    std::vector<uintptr_t> slots;
    size_t count = 0;
    size_t wire_bytes = 0;
  };
  Stripe& stripe_of(uint32_t hash) { return stripes_[hash % stripes_.size()]; }
  static void grow(Stripe& s);
  static void unlink(Stripe& s, Attrs* a);

  std::vector<Stripe> stripes_;
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
