// Refused routes kept for people (refused.h).
#include "table/refused.h"

namespace petrel::table {

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
  routes_.emplace(key, Value{std::string(reason), attrs});
  kept_.store(routes_.size(), std::memory_order_relaxed);
}

void RefusedRoutes::forget(const codec::NlriPrefix& p) {
  std::lock_guard lock(mu_);
  if (routes_.erase(Key{p.prefix, p.path_id})) kept_.store(routes_.size(), std::memory_order_relaxed);
}

void RefusedRoutes::clear() {
  std::lock_guard lock(mu_);
  routes_.clear();
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
