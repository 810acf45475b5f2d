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

namespace {

// Type and next hops the same for the kernel: next hops in any order, and
// none compared for a route that is not unicast (the kernel adds lo as an
// unreachable route's link).
bool same_hops(uint8_t type_a, const std::vector<NextHop>& a, uint8_t type_b, const std::vector<NextHop>& b) {
  if (type_a != type_b) return false;
  if (type_a != RTN_UNICAST) return true;
  if (a.size() != b.size()) return false;
  auto key = [](const NextHop& nh) { return std::pair(nh.has_gateway ? nh.gateway : net::IpAddress{}, nh.ifindex); };
  if (a.size() == 1) return key(a[0]) == key(b[0]);  // the common case, without allocations
  auto keys = [&](const std::vector<NextHop>& hops) {
    std::vector<std::pair<net::IpAddress, uint32_t>> k;
    for (const NextHop& nh : hops) k.push_back(key(nh));
    std::sort(k.begin(), k.end());
    return k;
  };
  return keys(a) == keys(b);
}

size_t mix(size_t h, size_t v) { return h ^ (v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2)); }

}  // namespace

bool same_route(const Route& a, const Route& b) {
  return a.dst == b.dst && same_hops(a.type, a.nexthops, b.type, b.nexthops);
}

size_t WantHash::operator()(const Want& w) const {
  size_t h = w.unreachable;
  for (const Gateway& g : w.gateways) {
    h = mix(h, net::hash_value(g.address));
    h = mix(h, g.via_ifindex);
    if (g.link_local) h = mix(h, net::hash_value(*g.link_local));
  }
  return h;
}

size_t ShapeHash::operator()(const Shape& s) const {
  size_t h = mix(s.type, s.scope);
  for (const NextHop& nh : s.nexthops) {
    h = mix(h, nh.has_gateway ? net::hash_value(nh.gateway) : 0);
    h = mix(h, nh.ifindex);
    h = mix(h, nh.hops);
  }
  return h;
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

std::optional<Shape> Plan::shape_for(const Want& w, net::IpFamily family, const Interfaces& ifs) {
  Shape s;
  s.scope = RT_SCOPE_UNIVERSE;
  if (w.unreachable) {
    s.type = RTN_UNREACHABLE;
    return s;
  }
  s.type = RTN_UNICAST;
  for (const Gateway& g : w.gateways) {
    if (g.address.family() != family) continue;  // RFC 8950 next hops: not installed yet
    auto nh = hop_of(g, ifs);
    if (!nh) continue;
    if (std::find(s.nexthops.begin(), s.nexthops.end(), *nh) == s.nexthops.end()) s.nexthops.push_back(*nh);
  }
  // A multipath route only with every gateway resolved; else the ones
  // that are (never a gateway that is not directly reachable).
  if (s.nexthops.empty()) return std::nullopt;
  std::sort(s.nexthops.begin(), s.nexthops.end());
  return s;
}

uint32_t Plan::resolve(uint32_t want, net::IpFamily family, const Interfaces& ifs) {
  // Most routes share a few wishes: the last answer is kept (the
  // interfaces do not change within one next()).
  if (want != memo_want_ || family != memo_family_) {
    forget_memo();
    memo_want_ = wants_.acquire(want);
    memo_family_ = family;
    if (auto s = shape_for(wants_[want], family, ifs)) memo_shape_ = shapes_.acquire(*s);
  }
  return shapes_.acquire(memo_shape_);
}

void Plan::forget_memo() {
  wants_.release(memo_want_);
  shapes_.release(memo_shape_);
  memo_want_ = memo_shape_ = kNoId;
}

Route Plan::route_of(const net::Prefix& p, const Shape& s) const {
  Route r;
  r.dst = p;
  r.table = o_.table;
  r.metric = o_.metric;
  r.protocol = o_.protocol;
  r.scope = s.scope;
  r.type = s.type;
  r.nexthops = s.nexthops;
  return r;
}

std::optional<Route> Plan::target(const net::Prefix& p, const Interfaces& ifs) const {
  auto it = entries_.find(p);
  if (it == entries_.end() || it->second.want == kNoId) return std::nullopt;
  auto s = shape_for(wants_[it->second.want], p.family(), ifs);
  if (!s) return std::nullopt;
  return route_of(p, *s);
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

void Plan::set_kernel(Entry& e, uint32_t shape, bool found) {
  installed_ -= e.kernel != kNoId;
  installed_ += shape != kNoId;
  unwanted_ -= stale(e);
  shapes_.release(e.kernel);
  e.kernel = shape;
  e.found = found;
  unwanted_ += stale(e);
}

void Plan::set_want(Entry& e, uint32_t want) {
  unwanted_ -= stale(e);
  wants_.release(e.want);
  e.want = want;
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
  if (e.want == kNoId && e.kernel == kNoId && !e.queued && !e.inflight && !e.refused && !e.unresolved && !e.listed)
    entries_.erase(n.first);
}

void Plan::want(const net::Prefix& p, Want w) {
  Node& n = *entries_.try_emplace(p).first;
  Entry& e = n.second;
  uint32_t id = wants_.acquire(w);
  if (e.want == id && !e.refused) {
    wants_.release(id);
    return;
  }
  set_want(e, id);
  if (e.refused) set_refused(e, false);  // a new wish: try at once
  touch(n);
}

void Plan::unwant(const net::Prefix& p) {
  auto it = entries_.find(p);
  if (it == entries_.end()) return;
  Entry& e = it->second;
  set_want(e, kNoId);
  if (e.refused) set_refused(e, false);
  touch(*it);
}

void Plan::unwant_all() {
  for (Node& n : entries_) {
    set_want(n.second, kNoId);
    if (n.second.refused) set_refused(n.second, false);
    touch(n);
  }
}

void Plan::kernel_has(const Route& r) {
  if (!ours(r)) return;
  Node& n = *entries_.try_emplace(r.dst).first;
  set_kernel(n.second, shapes_.acquire(Shape{r.type, r.scope, r.nexthops}), true);
  touch(n);
}

void Plan::interfaces_changed() {
  for (Node& n : entries_) touch(n);
}

void Plan::allow_removals() {
  if (removals_allowed_) return;
  removals_allowed_ = true;
  for (Node& n : entries_)
    if (n.second.kernel != kNoId && n.second.want == kNoId) touch(n);
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
  size_t made = 0;
  while (!queue_.empty() && made < max) {
    Node& n = *queue_.front();
    queue_.pop_front();
    const net::Prefix& p = n.first;
    Entry& e = n.second;
    e.queued = false;
    uint32_t want = e.want != kNoId ? resolve(e.want, p.family(), ifs) : kNoId;  // a reference taken
    set_unresolved(e, e.want != kNoId && want == kNoId);
    Request rq;
    uint32_t shape = kNoId;
    if (want != kNoId) {
      if (e.kernel != kNoId) {
        const Shape &a = shapes_[e.kernel], &b = shapes_[want];
        if (e.kernel == want || same_hops(a.type, a.nexthops, b.type, b.nexthops)) {
          shapes_.release(want);
          e.found = false;  // wanted as it is: this run's from now on (not stale(): wanted)
          continue;
        }
      }
      rq.op = e.kernel != kNoId ? Op::kReplace : Op::kAdd;
      shape = want;
    } else if (e.kernel != kNoId && (e.want != kNoId || removals_allowed_ || !e.found)) {
      // Not wanted (or no longer reachable): removed, naming it exactly;
      // one found at start-up only once removals are allowed.
      rq.op = Op::kDelete;
      shape = shapes_.acquire(e.kernel);
    } else {
      forget_if_empty(n);
      continue;
    }
    rq.route = route_of(p, shapes_[shape]);
    if (inflight_.empty()) first_seq_ = next_seq_;
    rq.seq = next_seq_++;
    e.inflight = true;
    ++in_flight_;
    inflight_.push_back(InFlight{&n, rq.op, shape});
    out.push_back(std::move(rq));
    ++made;
  }
  forget_memo();
  return made;
}

void Plan::answer(uint32_t seq, int32_t error) {
  uint32_t i = seq - first_seq_;
  if (i >= inflight_.size() || !inflight_[i].node) return;  // not ours (or answered already)
  InFlight done = inflight_[i];
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
    if (done.op == Op::kDelete) {
      set_kernel(e, kNoId);
      shapes_.release(done.shape);
    } else {
      set_kernel(e, done.shape);  // ours from this run now
    }
  } else if (done.op == Op::kDelete && error == -ESRCH) {
    set_kernel(e, kNoId);  // gone already
    shapes_.release(done.shape);
  } else {
    shapes_.release(done.shape);
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
