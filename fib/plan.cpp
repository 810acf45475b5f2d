// The plan (see plan.h).
#include "fib/plan.h"

#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include <algorithm>
#include <cerrno>

namespace petrel::fib {

Header header_of(const Request& r, uint32_t pid) {
  Header h;
  h.seq = r.seq;
  h.pid = pid;
  h.flags = NLM_F_REQUEST | NLM_F_ACK;
  switch (r.op) {
    case Op::kAdd:
      h.type = RTM_NEWROUTE;
      h.flags |= NLM_F_CREATE | NLM_F_EXCL;
      break;
    case Op::kReplace:
      h.type = RTM_NEWROUTE;
      h.flags |= NLM_F_CREATE | NLM_F_REPLACE;
      break;
    case Op::kDelete: h.type = RTM_DELROUTE; break;
  }
  return h;
}

Message to_message(const Request& r, uint32_t pid) { return Message{header_of(r, pid), r.route}; }

bool same_route(const Route& a, const Route& b) {
  if (a.dst != b.dst || a.type != b.type) return false;
  if (a.type != RTN_UNICAST) return true;  // unreachable: the kernel adds lo as its link
  if (a.nexthops.size() != b.nexthops.size()) return false;
  auto key = [](const Route& r) {
    std::vector<std::pair<net::IpAddress, uint32_t>> k;
    for (const NextHop& nh : r.nexthops) k.emplace_back(nh.has_gateway ? nh.gateway : net::IpAddress{}, nh.ifindex);
    std::sort(k.begin(), k.end());
    return k;
  };
  return key(a) == key(b);
}

std::optional<Route> Plan::resolve(const net::Prefix& p, const Want& w, const Interfaces& ifs) const {
  Route r;
  r.dst = p;
  r.table = o_.table;
  r.metric = o_.metric;
  r.protocol = o_.protocol;
  r.scope = RT_SCOPE_UNIVERSE;
  if (w.unreachable) {
    r.type = RTN_UNREACHABLE;
    return r;
  }
  r.type = RTN_UNICAST;
  for (const Gateway& g : w.gateways) {
    if (g.address.family() != p.family()) continue;  // RFC 8950 next hops: not installed yet
    // Most routes share a few gateways: the last answer is kept (the
    // interfaces do not change within one next()).
    if (!(memo_.valid && memo_.gateway == g)) memo_ = Memo{true, g, ifs.resolve(g.address, g.via_ifindex)};
    auto ifindex = memo_.ifindex;
    if (!ifindex) continue;
    NextHop nh;
    nh.has_gateway = true;
    nh.gateway = g.address;
    nh.ifindex = *ifindex;
    if (std::find(r.nexthops.begin(), r.nexthops.end(), nh) == r.nexthops.end()) r.nexthops.push_back(nh);
  }
  // A multipath route only with every gateway resolved; else the ones
  // that are (never a gateway that is not directly reachable).
  if (r.nexthops.empty()) return std::nullopt;
  std::sort(r.nexthops.begin(), r.nexthops.end());
  return r;
}

std::optional<Route> Plan::target(const net::Prefix& p, const Interfaces& ifs) const {
  auto it = entries_.find(p);
  if (it == entries_.end() || !it->second.want) return std::nullopt;
  memo_.valid = false;
  return resolve(p, *it->second.want, ifs);
}

void Plan::touch(const net::Prefix& p, Entry& e) {
  if (e.inflight) {
    e.recheck = true;
  } else if (!e.queued && !e.refused) {
    e.queued = true;
    queue_.push_back(p);
  }
}

void Plan::set_kernel(Entry& e, std::optional<Route> r) {
  installed_ -= e.kernel.has_value();
  installed_ += r.has_value();
  e.kernel = std::move(r);
}

void Plan::set_refused(Entry& e, bool v) {
  refused_ -= e.refused;
  refused_ += v;
  e.refused = v;
}

void Plan::set_unresolved(Entry& e, bool v) {
  unresolved_ -= e.unresolved;
  unresolved_ += v;
  e.unresolved = v;
}

void Plan::forget_if_empty(const net::Prefix& p) {
  auto it = entries_.find(p);
  if (it == entries_.end()) return;
  const Entry& e = it->second;
  if (!e.want && !e.kernel && !e.queued && !e.inflight && !e.refused && !e.unresolved) entries_.erase(it);
}

void Plan::want(const net::Prefix& p, Want w) {
  Entry& e = entries_[p];
  if (e.want && *e.want == w && !e.refused) return;
  e.want = std::move(w);
  if (e.refused) set_refused(e, false);  // a new wish: try at once
  touch(p, e);
}

void Plan::unwant(const net::Prefix& p) {
  auto it = entries_.find(p);
  if (it == entries_.end()) return;
  Entry& e = it->second;
  e.want.reset();
  if (e.refused) set_refused(e, false);
  touch(p, e);
}

void Plan::unwant_all() {
  for (auto& [p, e] : entries_) {
    e.want.reset();
    if (e.refused) set_refused(e, false);
    touch(p, e);
  }
}

void Plan::kernel_has(const Route& r) {
  if (!ours(r)) return;
  Entry& e = entries_[r.dst];
  set_kernel(e, r);
  touch(r.dst, e);
}

void Plan::interfaces_changed() {
  for (auto& [p, e] : entries_) touch(p, e);
}

void Plan::allow_removals() {
  if (removals_allowed_) return;
  removals_allowed_ = true;
  for (auto& [p, e] : entries_)
    if (e.kernel && !e.want) touch(p, e);
}

void Plan::retry_refused() {
  for (auto& [p, e] : entries_) {
    if (!e.refused) continue;
    set_refused(e, false);
    touch(p, e);
  }
}

size_t Plan::next(const Interfaces& ifs, size_t max, std::vector<Request>& out) {
  memo_.valid = false;
  size_t made = 0;
  size_t i = 0;
  for (; i < queue_.size() && made < max; ++i) {
    const net::Prefix p = queue_[i];
    auto it = entries_.find(p);
    if (it == entries_.end()) continue;
    Entry& e = it->second;
    e.queued = false;
    std::optional<Route> want;
    if (e.want) want = resolve(p, *e.want, ifs);
    set_unresolved(e, e.want && !want);
    Request rq;
    if (want) {
      if (e.kernel && same_route(*e.kernel, *want)) {
        forget_if_empty(p);
        continue;
      }
      rq.op = e.kernel ? Op::kReplace : Op::kAdd;
      rq.route = std::move(*want);
    } else if (e.kernel && (e.want || removals_allowed_)) {
      // Not wanted (or no longer reachable): removed, naming it exactly.
      rq.op = Op::kDelete;
      rq.route = *e.kernel;
    } else {
      forget_if_empty(p);
      continue;
    }
    if (inflight_.empty()) first_seq_ = next_seq_;
    rq.seq = next_seq_++;
    e.inflight = true;
    ++in_flight_;
    inflight_.push_back(InFlight{p, &e, rq.op, rq.route});
    out.push_back(std::move(rq));
    ++made;
  }
  queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(i));
  return made;
}

void Plan::answer(uint32_t seq, int32_t error) {
  uint32_t i = seq - first_seq_;
  if (i >= inflight_.size() || !inflight_[i].entry) return;  // not ours (or answered already)
  InFlight done = std::move(inflight_[i]);
  inflight_[i].entry = nullptr;
  --in_flight_;
  while (!inflight_.empty() && !inflight_.front().entry) {
    inflight_.pop_front();
    ++first_seq_;
  }
  Entry& e = *done.entry;
  e.inflight = false;
  bool refused = false;
  if (error == 0) {
    if (done.op == Op::kDelete) set_kernel(e, std::nullopt);
    else set_kernel(e, std::move(done.route));
  } else if (done.op == Op::kDelete && error == -ESRCH) {
    set_kernel(e, std::nullopt);  // gone already
  } else {
    refused = true;
    ++refusals_;
    last_error_ = error;
    // A refused replace may have left the route as it was or removed it;
    // the retry adds or replaces as the kernel then answers.
  }
  if (e.recheck) {  // wanted otherwise meanwhile: worked out again
    e.recheck = false;
    touch(done.prefix, e);
  } else if (refused) {
    set_refused(e, true);
  } else {
    forget_if_empty(done.prefix);
  }
}

PlanCounts Plan::counts() const {
  PlanCounts c;
  c.installed = installed_;
  c.pending = queue_.size() + in_flight_;
  c.unresolved = unresolved_;
  c.refused = refused_;
  c.refusals = refusals_;
  c.last_error = last_error_;
  if (!removals_allowed_)
    for (const auto& [p, e] : entries_) c.stale += e.kernel && !e.want;
  return c;
}

}  // namespace petrel::fib
