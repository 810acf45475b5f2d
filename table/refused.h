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
// prefixes to forget them, so a peer with nothing kept pays nothing.
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
  mutable std::mutex mu_;
  std::map<Key, Value> routes_;
  size_t max_;
  std::atomic<size_t> kept_{0};
  std::atomic<uint64_t> not_kept_{0};
};

}  // namespace petrel::table
