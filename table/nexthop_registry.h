// The table's registry of next hops (table/nexthop.h): one slot per
// distinct next hop that some interned attribute set in the table names,
// with its state as the resolver last gave it. A set records its slot
// (Attrs::nexthop_code) when a route with it first enters the table, so
// the resolver is asked once per next hop, not per route, and a route
// finds its next hop's state in two loads. The registry counts the sets
// bound to each slot and frees a slot with its last set (the interner's
// freed hook), so what peers send cannot grow it beyond the sets held.
//
// Codes: 0, not looked at yet; kNone, no next hop the table resolves
// (no NEXT_HOP, or a next hop of another form); slot + kFirstSlot.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <unordered_map>
#include <vector>

#include "crates/net/ip.h"
#include "table/attrs.h"
#include "table/nexthop.h"

namespace petrel::table {

class NexthopRegistry {
 public:
  static constexpr uint32_t kNone = 1;
  static constexpr uint32_t kFirstSlot = 2;
  // At most this many distinct next hops are tracked at once; a set whose
  // next hop would be one more is not tracked (kNone: resolved, cost 0).
  static constexpr uint32_t kChunkSize = 4096;
  static constexpr uint32_t kChunks = 4096;

  explicit NexthopRegistry(const NexthopResolver& resolver) : resolver_(resolver) {}

  // The set's code, binding it (and asking the resolver about a next hop
  // met for the first time) when it has none yet.
  uint32_t code_of(Attrs& a) {
    const uint32_t c = a.nexthop_code();
    return c != 0 ? c : bind(a);
  }
  // The state routes with this code get: as resolved, for kNone; as
  // resolved at cost 0 for a link-local pair whose global address does
  // not resolve (RFC 2545: the link-local one is on the session's link).
  // Lock-free.
  [[nodiscard]] NexthopState state(uint32_t code) const {
    if (code < kFirstSlot) return {};
    const Slot& s = slot(code - kFirstSlot);
    const uint64_t v = s.state.load(std::memory_order_acquire);
    if (!(v >> 32) && s.link_local) return {true, 0};
    return unpack(v);
  }
  // A set with `code` was freed.
  void release(uint32_t code);
  // Takes the new states of the next hops the registry holds (others are
  // asked of the resolver when first met); touched[code] becomes 1 for each
  // code whose state() changed (touched is sized to cover every code).
  // True when any did.
  bool update(std::span<const NexthopUpdate> changed, std::vector<uint8_t>& touched);

  struct Entry {
    uint32_t code = 0;
    net::IpAddress address;
    bool link_local = false;
    NexthopState state;  // as state(code) gives it
  };
  [[nodiscard]] std::vector<Entry> entries() const;
  // One past the highest code in use now.
  [[nodiscard]] uint32_t code_end() const;

 private:
  struct Slot {
    std::atomic<uint64_t> state{0};  // bit 32: resolved; low 32: the cost
    net::IpAddress address;          // the rest: under mu_
    bool link_local = false;
    uint32_t sets = 0;  // 0: free
  };
  struct Key {
    net::IpAddress address;
    bool link_local;
    friend bool operator==(const Key&, const Key&) = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const { return net::hash_value(k.address) * 2 + k.link_local; }
  };
  static uint64_t pack(NexthopState s) { return uint64_t{s.resolved} << 32 | s.cost; }
  static NexthopState unpack(uint64_t v) { return {(v >> 32) != 0, static_cast<uint32_t>(v)}; }
  [[nodiscard]] const Slot& slot(uint32_t i) const { return (*chunks_[i / kChunkSize])[i % kChunkSize]; }
  Slot& slot(uint32_t i) { return (*chunks_[i / kChunkSize])[i % kChunkSize]; }
  uint32_t bind(Attrs& a);

  const NexthopResolver& resolver_;
  mutable std::mutex mu_;
  std::unordered_map<Key, uint32_t, KeyHash> by_key_;  // -> slot
  std::vector<uint32_t> free_;
  uint32_t used_ = 0;  // slots ever made
  std::array<std::unique_ptr<std::array<Slot, kChunkSize>>, kChunks> chunks_;
};

}  // namespace petrel::table
