// Next-hop resolution (see resolver.h).
#include "fib/resolver.h"

#include <linux/rtnetlink.h>

#include <algorithm>

namespace petrel::fib {

const char* to_string(Resolution r) {
  switch (r) {
    case Resolution::kConnected: return "connected";
    case Resolution::kRecursive: return "recursive";
    case Resolution::kUnresolved: return "unresolved";
  }
  return "unresolved";
}

namespace {

// The types a route to resolve through may have: unicast resolves, the
// others say the destination is not reachable. Any other type (local,
// broadcast, multicast...) is not mirrored.
bool mirrored_type(uint8_t t) {
  return t == RTN_UNICAST || t == RTN_BLACKHOLE || t == RTN_UNREACHABLE || t == RTN_PROHIBIT || t == RTN_THROW;
}

}  // namespace

bool Resolver::apply(const Message& m) {
  const auto* r = std::get_if<Route>(&m.body);
  if (!r || r->table != o_.table || r->protocol == o_.own_protocol) return false;
  if (m.header.type != RTM_NEWROUTE && m.header.type != RTM_DELROUTE) return false;
  if (!mirrored_type(r->type)) return false;
  auto it = routes_.find(r->dst);
  if (m.header.type == RTM_DELROUTE) {
    if (it == routes_.end()) return false;
    auto& list = it->second;
    auto at = std::find_if(list.begin(), list.end(), [&](const Foreign& f) { return f.metric == r->metric; });
    if (at == list.end()) return false;
    list.erase(at);
    --count_;
    if (list.empty()) {
      routes_.erase(it);
      --lens_[fi(r->dst.family())][r->dst.len()];
    }
    return true;
  }
  Foreign f{r->metric, r->type, r->nexthops};
  for (NextHop& h : f.hops) h.hops = 0;  // weights are not the resolver's concern
  std::sort(f.hops.begin(), f.hops.end());
  if (it != routes_.end()) {
    auto& list = it->second;
    auto at = std::find_if(list.begin(), list.end(), [&](const Foreign& g) { return g.metric >= r->metric; });
    if (at != list.end() && at->metric == r->metric) {  // replaced
      *at = std::move(f);
      return true;
    }
    if (count_ >= o_.max_routes) {
      ++over_limit_;
      return false;
    }
    list.insert(at, std::move(f));
    ++count_;
    return true;
  }
  if (count_ >= o_.max_routes) {
    ++over_limit_;
    return false;
  }
  routes_[r->dst].push_back(std::move(f));
  ++lens_[fi(r->dst.family())][r->dst.len()];
  ++count_;
  return true;
}

bool Resolver::link_gone(uint32_t ifindex) {
  bool changed = false;
  for (auto it = routes_.begin(); it != routes_.end();) {
    auto& list = it->second;
    const size_t before = list.size();
    std::erase_if(list, [&](const Foreign& f) {
      return !f.hops.empty() &&
             std::all_of(f.hops.begin(), f.hops.end(), [&](const NextHop& h) { return h.ifindex == ifindex; });
    });
    count_ -= before - list.size();
    changed |= before != list.size();
    if (list.empty()) {
      --lens_[fi(it->first.family())][it->first.len()];
      it = routes_.erase(it);
    } else {
      ++it;
    }
  }
  return changed;
}

void Resolver::clear() {
  routes_.clear();
  lens_ = {};
  count_ = 0;
}

Resolved Resolver::resolve(const net::IpAddress& nh, uint32_t via_ifindex, const Interfaces& ifs) const {
  Resolved out;
  if (auto ifindex = ifs.resolve(nh, via_ifindex)) {
    out.how = Resolution::kConnected;
    out.hops.push_back(NextHop{true, nh, *ifindex, 0});
    return out;
  }
  // A link-local next hop only on the session's link; the unspecified
  // address (BIRD's "::" global address beside a link-local one) never.
  if (nh.is_link_local() || nh.is_unspecified()) return out;
  auto up = [&](uint32_t ifindex) {
    auto it = ifs.all().find(ifindex);
    return it != ifs.all().end() && it->second.up();
  };
  const auto& lens = lens_[fi(nh.family())];
  const int min_len = o_.via_default ? 0 : 1;
  for (int len = static_cast<int>(net::IpAddress::max_len(nh.family())); len >= min_len; --len) {
    if (lens[static_cast<size_t>(len)] == 0) continue;
    auto it = routes_.find(*net::Prefix::make(nh, static_cast<unsigned>(len)));
    if (it == routes_.end()) continue;
    for (const Foreign& f : it->second) {  // lowest metric first
      if (f.type != RTN_UNICAST) return out;  // blackhole, unreachable, prohibit, throw
      for (const NextHop& h : f.hops) {
        if (!up(h.ifindex)) continue;
        NextHop hop{true, h.has_gateway ? h.gateway : nh, h.ifindex, 0};
        if (std::find(out.hops.begin(), out.hops.end(), hop) == out.hops.end()) out.hops.push_back(hop);
      }
      if (out.hops.empty()) continue;  // every link down: the next one
      std::sort(out.hops.begin(), out.hops.end());
      out.how = Resolution::kRecursive;
      out.metric = f.metric;
      out.via = it->first;
      return out;
    }
  }
  return out;
}

}  // namespace petrel::fib
