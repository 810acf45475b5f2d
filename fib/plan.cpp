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

std::optional<NextHop> Plan::hop_of(const Gateway& g, const Interfaces& ifs) {
  // The global address when it is directly reachable, else the link-local
  // one on the interface the route was learnt on (RFC 2545 section 3).
  auto ifindex = ifs.resolve(g.address, g.via_ifindex);
  if (ifindex) return NextHop{true, g.address, *ifindex, 0};
  if (g.link_local && (ifindex = ifs.resolve(*g.link_local, g.via_ifindex)))
    return NextHop{true, *g.link_local, *ifindex, 0};
  return std::nullopt;
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
    if (!(memo_.valid && memo_.gateway == g)) memo_ = Memo{true, g, hop_of(g, ifs)};
    if (!memo_.hop) continue;
    const NextHop& nh = *memo_.hop;
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

void Plan::touch(Node& n) {
  Entry& e = n.second;
  if (e.inflight) {
    e.recheck = true;
  } else if (!e.queued && !e.refused) {
    e.queued = true;
    queue_.push_back(&n);
  }
}

void Plan::set_kernel(Entry& e, std::optional<Route> r, bool found) {
  installed_ -= e.kernel.has_value();
  installed_ += r.has_value();
  unwanted_ -= stale(e);
  e.kernel = std::move(r);
  e.found = found;
  unwanted_ += stale(e);
}

void Plan::set_want(Entry& e, std::optional<Want> w) {
  unwanted_ -= stale(e);
  e.want = std::move(w);
  unwanted_ += stale(e);
}

void Plan::set_refused(Entry& e, bool v) {
  refused_ -= e.refused;
  refused_ += v;
  e.refused = v;
}

void Plan::refuse(Node& n) {
  set_refused(n.second, true);
  if (!n.second.listed) refused_nodes_.push_back(&n);
  n.second.listed = true;
}

void Plan::set_unresolved(Entry& e, bool v) {
  unresolved_ -= e.unresolved;
  unresolved_ += v;
  e.unresolved = v;
}

void Plan::forget_if_empty(Node& n) {
  const Entry& e = n.second;
  if (!e.want && !e.kernel && !e.queued && !e.inflight && !e.refused && !e.unresolved && !e.listed)
    entries_.erase(n.first);
}

void Plan::want(const net::Prefix& p, Want w) {
  Node& n = *entries_.try_emplace(p).first;
  Entry& e = n.second;
  if (e.want && *e.want == w && !e.refused) return;
  set_want(e, std::move(w));
  if (e.refused) set_refused(e, false);  // a new wish: try at once
  touch(n);
}

void Plan::unwant(const net::Prefix& p) {
  auto it = entries_.find(p);
  if (it == entries_.end()) return;
  Entry& e = it->second;
  set_want(e, std::nullopt);
  if (e.refused) set_refused(e, false);
  touch(*it);
}

void Plan::unwant_all() {
  for (Node& n : entries_) {
    set_want(n.second, std::nullopt);
    if (n.second.refused) set_refused(n.second, false);
    touch(n);
  }
}

void Plan::kernel_has(const Route& r) {
  if (!ours(r)) return;
  Node& n = *entries_.try_emplace(r.dst).first;
  set_kernel(n.second, r, true);
  touch(n);
}

void Plan::interfaces_changed() {
  for (Node& n : entries_) touch(n);
}

void Plan::allow_removals() {
  if (removals_allowed_) return;
  removals_allowed_ = true;
  for (Node& n : entries_)
    if (n.second.kernel && !n.second.want) touch(n);
}

void Plan::retry_refused() {
  // Listed entries are never erased (forget_if_empty), so the nodes are
  // alive; one no longer refused (wished otherwise since) is only unlisted.
  std::vector<Node*> nodes;
  nodes.swap(refused_nodes_);
  for (Node* n : nodes) {
    n->second.listed = false;
    if (n->second.refused) {
      set_refused(n->second, false);
      touch(*n);
    } else {
      forget_if_empty(*n);
    }
  }
}

size_t Plan::next(const Interfaces& ifs, size_t max, std::vector<Request>& out) {
  memo_.valid = false;
  size_t made = 0;
  while (!queue_.empty() && made < max) {
    Node& n = *queue_.front();
    queue_.pop_front();
    const net::Prefix& p = n.first;
    Entry& e = n.second;
    e.queued = false;
    std::optional<Route> want;
    if (e.want) want = resolve(p, *e.want, ifs);
    set_unresolved(e, e.want && !want);
    Request rq;
    if (want) {
      if (e.kernel && same_route(*e.kernel, *want)) {
        e.found = false;  // wanted as it is: this run's from now on (not stale(): wanted)
        continue;
      }
      rq.op = e.kernel ? Op::kReplace : Op::kAdd;
      rq.route = std::move(*want);
    } else if (e.kernel && (e.want || removals_allowed_ || !e.found)) {
      // Not wanted (or no longer reachable): removed, naming it exactly;
      // one found at start-up only once removals are allowed.
      rq.op = Op::kDelete;
      rq.route = *e.kernel;
    } else {
      forget_if_empty(n);
      continue;
    }
    if (inflight_.empty()) first_seq_ = next_seq_;
    rq.seq = next_seq_++;
    e.inflight = true;
    ++in_flight_;
    inflight_.push_back(InFlight{&n, rq.op, rq.route});
    out.push_back(std::move(rq));
    ++made;
  }
  return made;
}

void Plan::answer(uint32_t seq, int32_t error) {
  uint32_t i = seq - first_seq_;
  if (i >= inflight_.size() || !inflight_[i].node) return;  // not ours (or answered already)
  InFlight done = std::move(inflight_[i]);
  inflight_[i].node = nullptr;
  --in_flight_;
  while (!inflight_.empty() && !inflight_.front().node) {
    inflight_.pop_front();
    ++first_seq_;
  }
  Node& n = *done.node;
  Entry& e = n.second;
  e.inflight = false;
  bool refused = false;
  if (error == 0) {
    if (done.op == Op::kDelete) set_kernel(e, std::nullopt);
    else set_kernel(e, std::move(done.route));  // ours from this run now
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
    touch(n);
  } else if (refused) {
    refuse(n);
  } else {
    forget_if_empty(n);
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
  if (!removals_allowed_) c.stale = unwanted_;
  return c;
}

}  // namespace petrel::fib
