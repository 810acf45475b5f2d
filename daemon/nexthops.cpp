// Next-hop tracking (see nexthops.h).
#include "daemon/nexthops.h"

#include <algorithm>

namespace petrel::daemon {

NexthopTracker::Tracked NexthopTracker::work_out(const net::IpAddress& a) const {
  Tracked t;
  if (!resolver_ || !ifs_) return t;  // no syncer: resolved, cost 0
  // A link-local next hop is reached on the session's link, which the
  // table does not say: resolved (the plan installs it on that link).
  if (a.is_link_local()) {
    t.resolved.how = fib::Resolution::kConnected;
    return t;
  }
  t.resolved = resolver_->resolve(a, 0, *ifs_);
  t.state.resolved = t.resolved.resolved();
  t.state.cost = t.resolved.metric;
  return t;
}

table::NexthopState NexthopTracker::resolve(const net::IpAddress& next_hop) const {
  std::lock_guard lock(mu_);
  if (auto it = tracked_.find(next_hop); it != tracked_.end()) return it->second.state;
  Tracked t = work_out(next_hop);
  if (tracked_.size() >= kMaxTracked) {
    ++untracked_;
    return t.state;
  }
  return tracked_.emplace(next_hop, std::move(t)).first->second.state;
}

std::vector<table::NexthopUpdate> NexthopTracker::attach(const void* owner, const fib::Resolver* r,
                                                         const fib::Interfaces* ifs,
                                                         const std::unique_lock<std::mutex>& held) {
  sources_.push_back(Source{owner, r, ifs});
  use_last();
  return refresh(held);
}

void NexthopTracker::use_last() {
  resolver_ = sources_.empty() ? nullptr : sources_.back().resolver;
  ifs_ = sources_.empty() ? nullptr : sources_.back().ifs;
}

std::vector<table::NexthopUpdate> NexthopTracker::refresh(const std::unique_lock<std::mutex>&) {
  std::vector<table::NexthopUpdate> changed;
  for (auto& [a, t] : tracked_) {
    Tracked now = work_out(a);
    if (now.state != t.state) changed.push_back({a, now.state});
    t = std::move(now);
  }
  return changed;
}

std::vector<table::NexthopUpdate> NexthopTracker::detach(const void* owner) {
  auto lock = update();
  auto it = std::find_if(sources_.begin(), sources_.end(), [&](const Source& s) { return s.owner == owner; });
  if (it == sources_.end()) return {};
  const bool current = it + 1 == sources_.end();
  sources_.erase(it);
  if (!current) return {};
  use_last();
  return refresh(lock);
}

NexthopsStatus NexthopTracker::status() const {
  std::lock_guard lock(mu_);
  NexthopsStatus s;
  s.tracking = resolver_ != nullptr;
  s.untracked = untracked_;
  if (resolver_) {
    s.resolve_table = resolver_->options().table;
    s.resolve_via_default = resolver_->options().via_default;
    s.resolve_routes = resolver_->routes();
    s.resolve_routes_over_limit = resolver_->over_limit();
  }
  s.nexthops.reserve(tracked_.size());
  for (const auto& [a, t] : tracked_) {
    NexthopInfo i{a, t.state, t.resolved, {}};
    for (const fib::NextHop& h : t.resolved.hops) {
      std::string name;
      if (ifs_)
        if (auto it = ifs_->all().find(h.ifindex); it != ifs_->all().end()) name = it->second.name;
      i.interfaces.push_back(std::move(name));
    }
    s.nexthops.push_back(std::move(i));
  }
  std::sort(s.nexthops.begin(), s.nexthops.end(),
            [](const NexthopInfo& a, const NexthopInfo& b) { return a.address < b.address; });
  return s;
}

}  // namespace petrel::daemon
