// Refused routes kept for people (refused.h).
#include "table/refused.h"

namespace petrel::table {

RefusedRoutes::~RefusedRoutes() { delete[] filter_.load(std::memory_order_relaxed); }

uint64_t RefusedRoutes::filter_hash(const codec::NlriPrefix& p) {
  uint64_t h = net::hash_value(p.prefix) + uint64_t{p.path_id} * 0x9E3779B97F4A7C15ull;
  return h ^ (h >> 32);
}

void RefusedRoutes::refuse(const codec::NlriPrefix& p, std::string_view reason,
                           const std::shared_ptr<const codec::AttributeSet>& attrs) {
  std::lock_guard lock(mu_);
  const Key key{p.prefix, p.path_id};
  if (auto it = routes_.find(key); it != routes_.end()) {
    it->second = Value{std::string(reason), attrs};
    return;
  }
  if (routes_.size() >= max_) {
    not_kept_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  std::atomic<uint64_t>* f = filter_.load(std::memory_order_relaxed);
  if (!f) {
    f = new std::atomic<uint64_t>[kFilterWords]();
    filter_.store(f, std::memory_order_release);
  }
  const uint64_t h = filter_hash(p) % (kFilterWords * 64);
  f[h / 64].fetch_or(uint64_t{1} << (h % 64), std::memory_order_relaxed);
  routes_.emplace(key, Value{std::string(reason), attrs});
  kept_.store(routes_.size(), std::memory_order_relaxed);
}

void RefusedRoutes::forget(const codec::NlriPrefix& p) {
  // Never kept since the last clear(): nothing to look up. (The session's
  // worker both refuses and forgets, so a bit it set is seen here.)
  const std::atomic<uint64_t>* f = filter_.load(std::memory_order_acquire);
  if (!f) return;
  const uint64_t h = filter_hash(p) % (kFilterWords * 64);
  if (!(f[h / 64].load(std::memory_order_relaxed) >> (h % 64) & 1)) return;
  std::lock_guard lock(mu_);
  if (routes_.erase(Key{p.prefix, p.path_id})) kept_.store(routes_.size(), std::memory_order_relaxed);
}

void RefusedRoutes::clear() {
  std::lock_guard lock(mu_);
  routes_.clear();
  if (auto* f = filter_.load(std::memory_order_relaxed))
    for (size_t i = 0; i < kFilterWords; ++i) f[i].store(0, std::memory_order_relaxed);
  kept_.store(0, std::memory_order_relaxed);
  not_kept_.store(0, std::memory_order_relaxed);
}

void RefusedRoutes::set_max(size_t max) {
  std::lock_guard lock(mu_);
  max_ = max;
  while (routes_.size() > max_) routes_.erase(std::prev(routes_.end()));
  kept_.store(routes_.size(), std::memory_order_relaxed);
}

size_t RefusedRoutes::max() const {
  std::lock_guard lock(mu_);
  return max_;
}

std::vector<RefusedRoutes::Entry> RefusedRoutes::find(const std::optional<net::Prefix>& prefix, size_t limit) const {
  std::vector<Entry> out;
  std::lock_guard lock(mu_);
  auto it = prefix ? routes_.lower_bound(Key{*prefix, 0}) : routes_.begin();
  for (; it != routes_.end() && out.size() < limit; ++it) {
    if (prefix && it->first.first != *prefix) break;
    out.push_back(Entry{it->first.first, it->first.second, it->second.reason, it->second.attrs});
  }
  return out;
}

}  // namespace petrel::table
