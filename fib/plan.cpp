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
  if (r.object) {  // created, deleted, and a recursive next hop's group replaced in place
    h.type = r.op == Op::kDelete ? RTM_DELNEXTHOP : RTM_NEWNEXTHOP;
    if (r.op == Op::kAdd) h.flags |= NLM_F_CREATE | NLM_F_EXCL;
    if (r.op == Op::kReplace) h.flags |= NLM_F_REPLACE;
    return h;
  }
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

Message to_message(const Request& r, uint32_t pid) {
  if (r.object) return Message{header_of(r, pid), *r.object};
  return Message{header_of(r, pid), r.route};
}

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
  size_t h = static_cast<size_t>(w.unreachable) | static_cast<size_t>(w.blackhole) << 1;
  for (const Gateway& g : w.gateways) {
    h = mix(h, net::hash_value(g.address));
    h = mix(h, g.via_ifindex);
    if (g.link_local) h = mix(h, net::hash_value(*g.link_local));
  }
  return h;
}

size_t ShapeHash::operator()(const Shape& s) const {
  size_t h = mix(mix(s.type, s.scope), s.nhid);
  for (const NextHop& nh : s.nexthops) {
    h = mix(h, nh.has_gateway ? net::hash_value(nh.gateway) : 0);
    h = mix(h, nh.ifindex);
    h = mix(h, nh.hops);
  }
  return h;
}

void Plan::hops_of(const Gateway& g, const Interfaces& ifs, std::vector<NextHop>& out) const {
  // The global address when it is directly reachable, else the link-local
  // one on the interface the route was learnt on (RFC 2545 section 3),
  // else through the kernel route the resolver finds (recursive).
  auto add = [&](const NextHop& nh) {
    if (std::find(out.begin(), out.end(), nh) == out.end()) out.push_back(nh);
  };
  auto ifindex = ifs.resolve(g.address, g.via_ifindex);
  if (ifindex) return add(NextHop{true, g.address, *ifindex, 0});
  if (g.link_local && (ifindex = ifs.resolve(*g.link_local, g.via_ifindex)))
    return add(NextHop{true, *g.link_local, *ifindex, 0});
  if (!resolver_) return;
  for (const NextHop& nh : resolver_->resolve(g.address, g.via_ifindex, ifs).hops) add(nh);
}

std::optional<Shape> Plan::shape_for(const Want& w, net::IpFamily family, const Interfaces& ifs) const {
  Shape s;
  s.scope = RT_SCOPE_UNIVERSE;
  if (w.unreachable || w.blackhole) {
    s.type = w.blackhole ? RTN_BLACKHOLE : RTN_UNREACHABLE;
    return s;
  }
  s.type = RTN_UNICAST;
  for (const Gateway& g : w.gateways) {
    // An IPv4 prefix may go over an IPv6 next hop (RFC 8950: RTA_VIA, or
    // an AF_INET6 nexthop object); an IPv6 prefix only over IPv6.
    if (g.address.family() != family && family != net::IpFamily::V4) continue;
    hops_of(g, ifs, s.nexthops);
  }
  // The gateways that resolve (never one that does not): directly, or
  // through a kernel route (its ECMP next hops all).
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
    if (uint32_t g = recursive_shape(wants_[want], family, ifs)) {
      const Gateway& gw = wants_[want].gateways[0];
      memo_shape_ = intern(Shape{RTN_UNICAST, RT_SCOPE_UNIVERSE, {NextHop{true, gw.address, 0, 0}}, g});
    } else if (auto s = shape_for(wants_[want], family, ifs)) {
      if (o_.nexthop_objects && s->type == RTN_UNICAST) s->nhid = object_for(s->nexthops);
      memo_shape_ = intern(*s);
    }
  }
  return shapes_.acquire(memo_shape_);
}

uint32_t Plan::recursive_shape(const Want& w, net::IpFamily family, const Interfaces& ifs) {
  if (!o_.nexthop_objects || !resolver_ || w.unreachable || w.gateways.size() != 1) return 0;
  const Gateway& g = w.gateways[0];
  if (g.address.family() != family && family != net::IpFamily::V4) return 0;
  if (ifs.resolve(g.address, g.via_ifindex) || (g.link_local && ifs.resolve(*g.link_local, g.via_ifindex)))
    return 0;  // directly connected: an object of the gateway's own
  const Resolved r = resolver_->resolve(g.address, g.via_ifindex, ifs);
  if (r.how != Resolution::kRecursive) return 0;
  return recursive_group(g, r.hops);
}

void Plan::forget_memo() {
  wants_.release(memo_want_);
  release_shape(memo_shape_);
  memo_want_ = memo_shape_ = kNoId;
}

uint32_t Plan::intern(const Shape& s) {
  uint32_t id = shapes_.acquire(s);
  if (shapes_.refs(id) == 1 && s.nhid != 0) ref_object(s.nhid);
  return id;
}

void Plan::release_shape(uint32_t id) {
  if (id == kNoId) return;
  uint32_t nhid = shapes_.refs(id) == 1 ? shapes_[id].nhid : 0;
  shapes_.release(id);
  if (nhid != 0) unref_object(nhid);
}

// ---- nexthop objects

uint32_t Plan::take_id() {
  for (uint32_t tries = 0; tries < o_.nhid_count; ++tries) {  // the first free id of the range
    uint32_t c = o_.first_nhid + nh_next_;
    nh_next_ = (nh_next_ + 1) % o_.nhid_count;
    if (c != 0 && !nh_.count(c) && !nh_taken_.count(c)) return c;
  }
  return 0;
}

uint32_t Plan::object_for(const std::vector<NextHop>& hops) {
  if (auto it = nh_ids_.find(hops); it != nh_ids_.end()) return it->second;
  uint32_t id = take_id();
  if (id == 0) return 0;  // the range is full: gateways in the route instead
  NhRecord& rec = nh_[id];
  rec.hops = hops;
  rec.attached = true;
  nh_ids_.emplace(hops, id);
  if (hops.size() > 1) {
    for (const NextHop& h : hops) {
      uint32_t m = object_for({NextHop{h.has_gateway, h.gateway, h.ifindex, 0}});
      if (m == 0) {  // no id for a member: no group either
        drop_object(id);
        return 0;
      }
      ref_object(m);
      nh_[id].members.push_back(m);
    }
  }
  return id;
}

void Plan::ref_object(uint32_t id) {
  if (auto it = nh_.find(id); it != nh_.end()) ++it->second.refs;
}

void Plan::unref_object(uint32_t id) {
  auto it = nh_.find(id);
  if (it == nh_.end() || it->second.refs == 0) return;
  NhRecord& rec = it->second;
  if (--rec.refs != 0) return;
  detach(id);
  if (rec.state == NhState::kAbsent) drop_object(id);
  else if (rec.state == NhState::kPresent) queue_delete(id);
  // kCreating: the creation's answer queues its deletion; kDeleting: on its way
}

void Plan::detach(uint32_t id) {
  auto it = nh_.find(id);
  if (it == nh_.end() || !it->second.attached) return;
  it->second.attached = false;
  if (!it->second.recursive) {
    nh_ids_.erase(it->second.hops);
    return;
  }
  // A next hop's group: routes worked out from now on get a new one.
  for (auto r = rec_ids_.begin(); r != rec_ids_.end(); ++r)
    if (r->second == id) {
      rec_ids_.erase(r);
      break;
    }
}

// ---- a recursive next hop's group (plan.h)

uint32_t Plan::members_for(const std::vector<NextHop>& hops, std::vector<uint32_t>& out) {
  out.clear();
  for (const NextHop& h : hops) {
    uint32_t m = object_for({NextHop{h.has_gateway, h.gateway, h.ifindex, 0}});
    if (m == 0) {
      for (uint32_t x : out) unref_object(x);
      out.clear();
      return 0;
    }
    ref_object(m);
    out.push_back(m);
  }
  return 1;
}

uint32_t Plan::recursive_group(const Gateway& g, const std::vector<NextHop>& hops) {
  const auto key = std::pair(g.address, g.via_ifindex);
  if (auto it = rec_ids_.find(key); it != rec_ids_.end()) {
    NhRecord& rec = nh_.at(it->second);
    if (rec.hops != hops) {  // the path changed: the group is replaced in place
      rec.hops = hops;
      if (!rec.replace_queued) {
        rec.replace_queued = true;
        nh_replaces_.push_back(it->second);
      }
    }
    return it->second;
  }
  uint32_t id = take_id();
  if (id == 0) return 0;
  NhRecord& rec = nh_[id];
  rec.hops = hops;
  rec.recursive = true;
  rec.attached = true;
  std::vector<uint32_t> members;
  if (members_for(hops, members) == 0) {
    nh_.erase(id);
    return 0;
  }
  nh_.at(id).members = std::move(members);
  rec_ids_.emplace(key, id);
  return id;
}

bool Plan::replacement_ready() const {
  for (uint32_t id : nh_replaces_)
    if (auto it = nh_.find(id); it != nh_.end() && it->second.state == NhState::kPresent && !it->second.replacing)
      return true;
  return false;
}

void Plan::replace_groups(std::vector<Request>& out, size_t& made, size_t max) {
  std::deque<uint32_t> later;
  while (!nh_replaces_.empty() && made < max) {
    uint32_t id = nh_replaces_.front();
    nh_replaces_.pop_front();
    auto it = nh_.find(id);
    if (it == nh_.end()) continue;
    NhRecord& rec = it->second;
    if (!rec.recursive) continue;  // (an id used again)
    if (rec.state == NhState::kCreating || rec.replacing) {  // after its answer
      later.push_back(id);
      continue;
    }
    rec.replace_queued = false;
    if (rec.state != NhState::kPresent && rec.state != NhState::kAbsent) continue;  // being deleted
    std::vector<uint32_t> members;
    if (members_for(rec.hops, members) == 0) {  // no ids: routes onto another group
      detach(id);
      for (Node& n : entries_) touch(n);
      continue;
    }
    if (members == rec.members) {
      for (uint32_t m : members) unref_object(m);
      continue;
    }
    if (rec.state == NhState::kAbsent) {  // created with them when first needed
      std::swap(rec.members, members);
      for (uint32_t m : members) unref_object(m);
      continue;
    }
    for (uint32_t m : members) ensure_object(m, out, made);
    rec.pending = std::move(members);
    rec.replacing = true;
    send_object(id, Op::kReplace, out);
    ++made;
  }
  for (uint32_t id : later) nh_replaces_.push_back(id);
}


void Plan::drop_object(uint32_t id) {
  auto it = nh_.find(id);
  if (it == nh_.end()) return;
  detach(id);
  std::vector<uint32_t> members = std::move(it->second.members);
  for (uint32_t m : it->second.pending) members.push_back(m);
  nh_.erase(it);
  for (uint32_t m : members) unref_object(m);
}

void Plan::queue_delete(uint32_t id) {
  NhRecord& rec = nh_[id];
  if (rec.delete_queued) return;
  rec.delete_queued = true;
  nh_deletes_.push_back(id);
}

void Plan::kernel_has(const NexthopObject& o) {
  if (o.protocol != o_.protocol || !our_nhid(o.id) || o.id == 0) {
    nh_taken_.insert(o.id);  // another's: never used, never asked about
    return;
  }
  if (o_.found_objects_foreign) {  // the other plan's (PlanOptions)
    nh_taken_.insert(o.id);
    nh_next_ = (o.id - o_.first_nhid + o_.nhid_count / 2) % o_.nhid_count;
    return;
  }
  NhRecord& rec = nh_[o.id];
  if (rec.state != NhState::kPresent) ++nh_present_;
  rec.state = NhState::kPresent;
  if (!o.group.empty()) {
    rec.found_group = true;
    rec.found_members = o.group;
  } else if (o.has_gateway && o.ifindex != 0 && !o.blackhole) {
    rec.hops = {NextHop{true, o.gateway, o.ifindex, 0}};
    if (!nh_ids_.count(rec.hops)) {
      rec.attached = true;
      nh_ids_.emplace(rec.hops, o.id);
    }
  }
  nh_settle_ = true;
}

// After the start-up dump: found groups take references on their members
// (and are reused when all are gateways of ours with equal weights);
// objects no found route refers to are deleted.
void Plan::settle_found() {
  nh_settle_ = false;
  for (auto& [id, rec] : nh_) {
    if (!rec.found_group) continue;
    rec.found_group = false;
    bool reusable = true;
    std::vector<NextHop> hops;
    for (const GroupMember& m : rec.found_members) {
      auto it = nh_.find(m.id);
      // (a member no longer attached: its link went down, the kernel took it out of the group)
      if (it == nh_.end() || it->second.hops.size() != 1 || !it->second.attached || m.weight != 0) {
        reusable = false;
        continue;
      }
      ++it->second.refs;
      rec.members.push_back(m.id);
      hops.push_back(it->second.hops[0]);
    }
    rec.found_members.clear();
    std::sort(hops.begin(), hops.end());
    if (reusable && hops.size() > 1 && !nh_ids_.count(hops)) {
      rec.hops = hops;
      rec.attached = true;
      nh_ids_.emplace(hops, id);
    }
  }
  std::vector<uint32_t> unused;
  for (const auto& [id, rec] : nh_)
    if (rec.refs == 0 && rec.state == NhState::kPresent) unused.push_back(id);
  for (uint32_t id : unused) {
    detach(id);
    queue_delete(id);
  }
}

void Plan::nexthop_gone(uint32_t id) {
  if (nh_settle_) settle_found();
  auto it = nh_.find(id);
  // Absent: not in the kernel anyway; deleting: our own deletion's notice.
  if (it == nh_.end() || it->second.state == NhState::kAbsent || it->second.state == NhState::kDeleting) return;
  NhRecord& rec = it->second;
  nh_present_ -= rec.state == NhState::kPresent;
  rec.state = NhState::kAbsent;
  detach(id);
  // Groups of it lost a member in the kernel: not to be referred to again.
  for (auto& [gid, g] : nh_)
    if (std::find(g.members.begin(), g.members.end(), id) != g.members.end()) detach(gid);
  if (rec.refs == 0) drop_object(id);
  // The kernel removed the routes that referred to it.
  for (Node& n : entries_) touch(n);
}

void Plan::nexthops_unknown() {
  std::vector<uint32_t> ids;
  for (const auto& [id, rec] : nh_) ids.push_back(id);
  for (uint32_t id : ids) detach(id);
  for (Node& n : entries_) touch(n);
}

NexthopObject Plan::object_message(uint32_t id) const {
  const NhRecord& rec = nh_.at(id);
  NexthopObject o;
  o.id = id;
  o.protocol = o_.protocol;
  if (rec.replacing) {
    for (uint32_t m : rec.pending) o.group.push_back(GroupMember{m, 0});
  } else if (!rec.members.empty()) {
    for (uint32_t m : rec.members) o.group.push_back(GroupMember{m, 0});
  } else if (rec.hops.size() == 1) {
    o.family = af_of(rec.hops[0].gateway.family());
    o.has_gateway = rec.hops[0].has_gateway;
    o.gateway = rec.hops[0].gateway;
    o.ifindex = rec.hops[0].ifindex;
  }
  return o;
}

void Plan::send_object(uint32_t id, Op op, std::vector<Request>& out) {
  Request rq;
  rq.op = op;
  rq.object = object_message(id);
  if (op == Op::kDelete) {  // the id alone names it (the kernel refuses a delete with a protocol: EINVAL)
    rq.object = NexthopObject{};
    rq.object->id = id;
  }
  if (inflight_.empty()) first_seq_ = next_seq_;
  rq.seq = next_seq_++;
  ++in_flight_;
  InFlight f;
  f.op = op;
  f.object = id;
  inflight_.push_back(f);
  out.push_back(std::move(rq));
}

void Plan::ensure_object(uint32_t id, std::vector<Request>& out, size_t& made) {
  auto it = nh_.find(id);
  if (it == nh_.end() || it->second.state != NhState::kAbsent) return;
  for (uint32_t m : it->second.members) ensure_object(m, out, made);
  it->second.state = NhState::kCreating;
  send_object(id, Op::kAdd, out);
  ++made;
}

void Plan::answer_object(uint32_t id, Op op, int32_t error) {
  auto it = nh_.find(id);
  if (it == nh_.end()) return;
  NhRecord& rec = it->second;
  if (op == Op::kReplace) {
    if (!rec.replacing) return;
    rec.replacing = false;
    std::vector<uint32_t> old;
    if (error == 0) {
      old = std::move(rec.members);
      rec.members = std::move(rec.pending);
    } else {  // the routes go onto a new group (this one is deleted once unused)
      refuse_counted(error);
      old = std::move(rec.pending);
      detach(id);
      for (Node& n : entries_) touch(n);
    }
    rec.pending.clear();
    for (uint32_t m : old) unref_object(m);  // deleted now that the group no longer holds them
    return;
  }
  if (op == Op::kAdd) {
    if (rec.state != NhState::kCreating) return;  // gone meanwhile (nexthop_gone)
    if (error == 0) {
      rec.state = NhState::kPresent;
      ++nh_present_;
      if (rec.refs == 0) queue_delete(id);
      return;
    }
    // Refused: never referred to again; the routes sent with it are
    // refused too and go onto a new object when tried again.
    refuse_counted(error);
    if (error == -EEXIST) nh_taken_.insert(id);
    rec.state = NhState::kAbsent;
    detach(id);
    if (rec.refs == 0) drop_object(id);
    return;
  }
  if (rec.state != NhState::kDeleting) return;
  if (error == 0 || error == -ENOENT) {
    --nh_present_;
    drop_object(id);
  } else {
    refuse_counted(error);
    rec.state = NhState::kPresent;  // deleted again by retry_refused()
  }
}

Route Plan::route_of(const net::Prefix& p, const Shape& s) const {
  Route r;
  r.dst = p;
  r.table = o_.table;
  r.metric = o_.metric;
  r.protocol = o_.protocol;
  r.scope = s.scope;
  r.type = s.type;
  if (s.nhid != 0) r.nhid = s.nhid;  // the id alone: the kernel refuses it beside next hops
  else r.nexthops = s.nexthops;
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
  e.suspect = false;
  installed_ -= e.kernel != kNoId;
  installed_ += shape != kNoId;
  unwanted_ -= stale(e);
  release_shape(e.kernel);
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

uint32_t Plan::intern_want(const Want& w) {
  // Consecutive wishes are mostly the same (a full table through a few
  // gateways): the last one is kept (a reference held), no hash asked.
  if (last_want_ == kNoId || !(wants_[last_want_] == w)) {
    wants_.release(last_want_);
    last_want_ = wants_.acquire(w);  // the memo's reference
  }
  return wants_.acquire(last_want_);
}

void Plan::want(const net::Prefix& p, Want w) {
  Node& n = *entries_.try_emplace(p).first;
  Entry& e = n.second;
  uint32_t id = intern_want(w);
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
  set_kernel(n.second, intern(Shape{r.type, r.scope, r.nexthops, r.nhid}), true);
  touch(n);
}

void Plan::interfaces_changed() {
  for (Node& n : entries_) touch(n);
}

void Plan::links_went_down(const std::vector<uint32_t>& ifindexes) {
  if (ifindexes.empty()) return;
  if (nh_settle_) settle_found();  // found groups' contents known first
  auto on = [&](const std::vector<NextHop>& hops) {
    return std::any_of(hops.begin(), hops.end(), [&](const NextHop& h) {
      return std::find(ifindexes.begin(), ifindexes.end(), h.ifindex) != ifindexes.end();
    });
  };
  std::vector<uint32_t> down;
  for (const auto& [id, rec] : nh_)
    if (rec.attached && on(rec.hops)) down.push_back(id);  // groups with such a member too
  for (uint32_t id : down) detach(id);
  for (Node& n : entries_) {
    Entry& e = n.second;
    if (e.kernel != kNoId && on(shapes_[e.kernel].nexthops)) {
      e.suspect = true;
      touch(n);
    }
  }
}

void Plan::interfaces_changed(const Interfaces& ifs) {
  if (nh_settle_) settle_found();
  std::vector<uint32_t> down;
  for (const auto& [id, rec] : nh_) {
    if (!rec.attached || rec.hops.size() != 1) continue;
    auto it = ifs.all().find(rec.hops[0].ifindex);
    if (it == ifs.all().end() || !it->second.up()) down.push_back(id);
  }
  for (uint32_t id : down) {
    detach(id);
    for (auto& [gid, g] : nh_)
      if (std::find(g.members.begin(), g.members.end(), id) != g.members.end()) detach(gid);
  }
  interfaces_changed();
}

void Plan::allow_removals() {
  release(net::IpFamily::V4);
  release(net::IpFamily::V6);
}

void Plan::defer(net::IpFamily f) { deferred_[fi(f)] = true; }

void Plan::release(net::IpFamily f) {
  const size_t i = fi(f);
  if (!deferred_[i] && removals_allowed_[i]) return;
  deferred_[i] = false;
  // The held entries go back to the queue, in the order they were held.
  std::vector<Node*> still;
  for (Node* n : held_) {
    if (fi(n->first.family()) == i) queue_.push_back(n);
    else still.push_back(n);
  }
  held_.swap(still);
  if (removals_allowed_[i]) return;
  removals_allowed_[i] = true;
  for (Node& n : entries_)
    if (fi(n.first.family()) == i && n.second.kernel != kNoId && n.second.want == kNoId) touch(n);
}

uint64_t Plan::found(net::IpFamily f) const {
  uint64_t n = 0;
  for (const auto& [p, e] : entries_) n += e.found && e.kernel != kNoId && p.family() == f;
  return n;
}

void Plan::retry_refused() {
  // Objects whose deletion was refused: deleted again.
  for (auto& [id, rec] : nh_)
    if (rec.refs == 0 && rec.state == NhState::kPresent) {
      detach(id);
      queue_delete(id);
    }
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
  if (nh_settle_) settle_found();
  // Unused objects go first: no route of ours refers to them any longer.
  while (!nh_deletes_.empty() && made < max) {
    uint32_t id = nh_deletes_.front();
    nh_deletes_.pop_front();
    auto it = nh_.find(id);
    if (it == nh_.end()) continue;
    it->second.delete_queued = false;
    if (it->second.refs != 0 || it->second.state != NhState::kPresent) continue;
    it->second.state = NhState::kDeleting;
    send_object(id, Op::kDelete, out);
    ++made;
  }
  // Routes are worked out until a group's replacement is ready (the memo
  // queues one when a route's next hop resolves otherwise): it goes at
  // once, before the walk over the other routes (which it changes too)
  // goes on in the next call.
  while (!queue_.empty() && made < max && !replacement_ready()) {
    Node& n = *queue_.front();
    queue_.pop_front();
    const net::Prefix& p = n.first;
    Entry& e = n.second;
    if (deferred_[fi(p.family())]) {  // stays queued until release()
      held_.push_back(&n);
      continue;
    }
    e.queued = false;
    uint32_t want = e.want != kNoId ? resolve(e.want, p.family(), ifs) : kNoId;  // a reference taken
    set_unresolved(e, e.want != kNoId && want == kNoId);
    Request rq;
    uint32_t shape = kNoId;
    if (want != kNoId) {
      if (e.kernel != kNoId) {
        const Shape &a = shapes_[e.kernel], &b = shapes_[want];
        if (!e.suspect && (e.kernel == want || (a.nhid == b.nhid && same_hops(a.type, a.nexthops, b.type, b.nexthops)))) {
          release_shape(want);
          e.found = false;  // wanted as it is: this run's from now on (not stale(): wanted)
          continue;
        }
      }
      rq.op = e.kernel != kNoId ? Op::kReplace : Op::kAdd;
      shape = want;
    } else if (e.kernel != kNoId && (e.want != kNoId || removals_allowed_[fi(p.family())] || !e.found)) {
      // Not wanted (or no longer reachable): removed, naming it exactly;
      // one found at start-up only once removals are allowed.
      rq.op = Op::kDelete;
      shape = shapes_.acquire(e.kernel);
    } else {
      forget_if_empty(n);
      continue;
    }
    if (rq.op != Op::kDelete && shapes_[shape].nhid != 0) ensure_object(shapes_[shape].nhid, out, made);
    rq.route = route_of(p, shapes_[shape]);
    if (inflight_.empty()) first_seq_ = next_seq_;
    rq.seq = next_seq_++;
    e.inflight = true;
    ++in_flight_;
    inflight_.push_back(InFlight{&n, rq.op, shape});
    out.push_back(std::move(rq));
    ++made;
  }
  replace_groups(out, made, max);
  forget_memo();
  return made;
}

void Plan::answer(uint32_t seq, int32_t error) {
  uint32_t i = seq - first_seq_;
  if (i >= inflight_.size() || !inflight_[i].live()) return;  // not ours (or answered already)
  InFlight done = inflight_[i];
  inflight_[i] = InFlight{};
  --in_flight_;
  while (!inflight_.empty() && !inflight_.front().live()) {
    inflight_.pop_front();
    ++first_seq_;
  }
  if (!done.node) {
    answer_object(done.object, done.op, error);
    return;
  }
  Node& n = *done.node;
  Entry& e = n.second;
  e.inflight = false;
  bool refused = false;
  if (error == 0) {
    if (done.op == Op::kDelete) {
      set_kernel(e, kNoId);
      release_shape(done.shape);
    } else {
      set_kernel(e, done.shape);  // ours from this run now
    }
  } else if (done.op == Op::kDelete && error == -ESRCH) {
    set_kernel(e, kNoId);  // gone already
    release_shape(done.shape);
  } else {
    // A route refused for want of its object (EINVAL: the kernel removed
    // it, its notification not read yet): the object is not trusted again.
    uint32_t nhid = shapes_[done.shape].nhid;
    if (nhid != 0 && error == -EINVAL) {
      auto it = nh_.find(nhid);
      if (it != nh_.end() && it->second.state == NhState::kPresent) nexthop_gone(nhid);
    }
    release_shape(done.shape);
    refused = true;
    refuse_counted(error);
    // A refused replace may have left the route as it was or removed it;
    // the retry adds or replaces as the kernel then answers.
  }
  if (e.recheck) {  // wanted otherwise meanwhile: worked out again
    e.recheck = false;
    touch(n);
  } else if (refused && !e.queued) {  // (queued: tried again at once, its object gone)
    refuse(n);
  } else if (!refused) {
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
  if (!removals_allowed_[0] || !removals_allowed_[1]) c.stale = unwanted_;
  c.nexthop_objects = nh_present_;
  return c;
}

}  // namespace petrel::fib
