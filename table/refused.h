// Routes a peer sent that import refused, kept so that "why don't I have
// this prefix?" has an answer (docs/policy.md, "Refused routes"): per
// prefix and path identifier, the reason (the policy term that rejected
// it, or the check of import.h that refused the UPDATE) and the
// attributes as they came. Bounded: at most `max` routes; past it, new
// refusals are counted, not kept. A route leaves when the peer withdraws
// it or announces it again and it is accepted.
//
// The session's worker writes, the HTTP server reads: one mutex. The
// import path asks empty() (lock-free) before it walks an UPDATE's
// prefixes to forget them, so a peer with nothing kept pays nothing; and
// forget() asks a filter of the routes ever kept (a bit per hash of
// prefix and path identifier, lock-free, set by refuse(), cleared by
// clear()) before it takes the mutex, so a peer with a few routes kept
// does not pay a lock and a map lookup for each prefix it announces.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "codec/attribute_set.h"
#include "codec/nlri.h"
#include "crates/net/ip.h"

namespace petrel::table {

class RefusedRoutes {
 public:
  explicit RefusedRoutes(size_t max = 0) : max_(max) {}
  ~RefusedRoutes();
  RefusedRoutes(const RefusedRoutes&) = delete;
  RefusedRoutes& operator=(const RefusedRoutes&) = delete;

  struct Entry {
    net::Prefix prefix;
    uint32_t path_id = 0;
    std::string reason;
    std::shared_ptr<const codec::AttributeSet> attrs;  // null: refused before its attributes were read
  };

  void refuse(const codec::NlriPrefix& p, std::string_view reason,
              const std::shared_ptr<const codec::AttributeSet>& attrs);
  void forget(const codec::NlriPrefix& p);
  void clear();
  void set_max(size_t max);  // fewer than kept: the excess goes

  [[nodiscard]] bool empty() const { return kept_.load(std::memory_order_relaxed) == 0; }
  [[nodiscard]] size_t kept() const { return kept_.load(std::memory_order_relaxed); }
  [[nodiscard]] size_t max() const;
  // Refusals not kept because the store was full, since the session began.
  [[nodiscard]] uint64_t not_kept() const { return not_kept_.load(std::memory_order_relaxed); }
  // The routes kept for `prefix` (every path identifier); all of them (up
  // to `limit`, in prefix order) when `prefix` is nothing.
  [[nodiscard]] std::vector<Entry> find(const std::optional<net::Prefix>& prefix, size_t limit) const;

 private:
  using Key = std::pair<net::Prefix, uint32_t>;
  struct Value {
    std::string reason;
    std::shared_ptr<const codec::AttributeSet> attrs;
  };
  // The filter: 2^17 bits (16 KiB), made at the first refusal kept.
  static constexpr size_t kFilterWords = size_t{1} << 11;
  [[nodiscard]] static uint64_t filter_hash(const codec::NlriPrefix& p);
  std::atomic<std::atomic<uint64_t>*> filter_{nullptr};

  mutable std::mutex mu_;
  std::map<Key, Value> routes_;
  size_t max_;
  std::atomic<size_t> kept_{0};
  std::atomic<uint64_t> not_kept_{0};
};

}  // namespace petrel::table
