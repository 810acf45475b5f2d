// The plan: what to ask the kernel for, from the routes Petrel wants and
// the routes of its own the kernel holds. Pure: the driver sends what
// next() hands out and feeds the kernel's answers back to answer().
//
// Petrel's own routes are those with protocol RTPROT_BGP in the configured
// table with the configured metric; the plan never asks for anything
// else, so a foreign route is never touched:
// - a prefix the kernel does not hold of ours is added with NLM_F_CREATE |
//   NLM_F_EXCL, so a foreign route at the same table, prefix and metric
//   makes the kernel refuse (EEXIST) instead of being replaced;
// - a route of ours that should change is replaced in place
//   (NLM_F_REPLACE: no moment without a route);
// - a route of ours that is no longer wanted is deleted, naming protocol,
//   table and metric.
// A refused request is counted and its prefix kept aside until
// retry_refused() (the driver calls it on a timer): nothing is lost.
//
// At start-up the kernel may hold routes of ours from an earlier run
// (kernel_has()); they stay until allow_removals() says the wanted routes
// are complete, so a route still right is never removed and re-added. A
// route this run installed is removed as soon as it is no longer wanted.
//
// Restart deferral (RFC 4724 section 4.1, the restarting speaker): after
// defer(family) no route request of that family goes out, whatever is
// wanted meanwhile; release(family) then works out each prefix once from
// its last wish: a route found at start-up and still right gets no request
// at all, one that differs is replaced in place, a new one is added, and
// those found and no longer wanted are removed (release allows the
// family's removals).
//
// Nexthop objects (PlanOptions::nexthop_objects, set_nexthop_objects()):
// a route refers by id (RTA_NH_ID) to a kernel nexthop object of ours, one
// per distinct (gateway, interface) and one group per distinct multipath
// set of them, with ids from a range of our own and protocol RTPROT_BGP
// (ours: that protocol and an id in the range; any other object is never
// asked about). An object is sent before the first route that refers to
// it and deleted only once no route of ours (in the kernel or in flight)
// and no group refers to it: the kernel deletes the routes that refer to a
// deleted object. Objects of ours found at start-up are reused when their
// content is wanted and deleted once unused. An object the kernel removed
// (its link went down; nexthop_gone()) is never referred to again: the
// routes that used it are worked out again onto a new one.
//
// Recursive next hops (fib/resolver.h): a route whose one gateway
// resolves through a kernel route is installed via the resolved gateways.
// With nexthop objects it refers to a group object of that BGP next hop
// (one per next hop and session interface), whose members are the
// resolved (gateway, interface) objects; when the resolution changes, the
// group is replaced in place (RTM_NEWNEXTHOP, NLM_F_REPLACE: its new
// members created first, the old ones deleted after the answer) and the
// routes are not touched. A group the kernel refused to replace, or one
// with a member on a link gone down, is not referred to again: its routes
// go onto a new group, one request each. A multipath wish (several
// gateways) and routes without objects carry the resolved gateways:
// a change replaces each route.
//
// Memory: a full table is a million prefixes through a few gateways, so
// each prefix keeps two ids (16 octets with its flags): its wish and the
// kernel's copy are interned (fib/intern.h), not a vector each.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "crates/net/ip.h"
#include "fib/interfaces.h"
#include "fib/intern.h"
#include "fib/netlink.h"
#include "fib/resolver.h"

namespace petrel::fib {

struct PlanOptions {
  uint32_t table = 254;   // RT_TABLE_MAIN
  uint32_t metric = 32;
  uint8_t protocol = 186; // RTPROT_BGP
  bool nexthop_objects = false;   // routes refer to nexthop objects of ours
  uint32_t first_nhid = 0x50e70000u;  // our range of nexthop object ids
  uint32_t nhid_count = 1u << 24;
  // Another plan's driver keeps its routes (another table or metric) and
  // nexthop objects in the kernel while this one starts (a reload that
  // moves Petrel's routes, daemon/kernel.h): objects found at start-up are
  // that one's, never referred to nor deleted by this plan, and new ids
  // are taken half the range away from the last of them.
  bool found_objects_foreign = false;
};

// A gateway Petrel learnt a route through; via_ifindex: the interface it
// was learnt on (0: unknown), for a link-local gateway. link_local: the
// second address of an MP_REACH_NLRI next hop of 32 octets (RFC 2545),
// used when `address` (the global one) is not directly reachable.
struct Gateway {
  net::IpAddress address;
  uint32_t via_ifindex = 0;
  std::optional<net::IpAddress> link_local;
  friend bool operator==(const Gateway&, const Gateway&) = default;
};

// What Petrel wants for a prefix: its best routes' gateways (several:
// one multipath route), or an unreachable route, or a blackhole route
// (RTN_BLACKHOLE: RFC 7999 BLACKHOLE, or a [[static]] blackhole).
struct Want {
  std::vector<Gateway> gateways;
  bool unreachable = false;
  bool blackhole = false;
  friend bool operator==(const Want&, const Want&) = default;
};

// A route of ours apart from its prefix (table, metric and protocol are
// the plan's): what the plan keeps per route, interned (fib/intern.h).
struct Shape {
  uint8_t type = 0;   // RTN_*
  uint8_t scope = 0;  // RT_SCOPE_*
  std::vector<NextHop> nexthops;
  uint32_t nhid = 0;  // the nexthop object of ours it refers to (0: none)
  friend bool operator==(const Shape&, const Shape&) = default;
};

struct WantHash {
  size_t operator()(const Want& w) const;
};
struct ShapeHash {
  size_t operator()(const Shape& s) const;
};

enum class Op : uint8_t { kAdd, kReplace, kDelete };

// A route's request, or a nexthop object's (kAdd or kDelete) when
// `object` is set (route unused).
struct Request {
  uint32_t seq = 0;
  Op op = Op::kAdd;
  Route route;
  std::optional<NexthopObject> object;
};

// The RTM_ type and NLM_F_ flags a request goes out with, and the
// message itself (NLM_F_ACK set: every request is answered).
Message to_message(const Request& r, uint32_t pid = 0);
// Its header alone (the driver encodes the route without a copy).
Header header_of(const Request& r, uint32_t pid = 0);

struct PlanCounts {
  uint64_t installed = 0;   // routes of ours the kernel holds
  uint64_t pending = 0;     // prefixes waiting for a request or its answer
  uint64_t unresolved = 0;  // wanted, but no gateway resolves
  uint64_t refused = 0;     // refused by the kernel, waiting for a retry
  uint64_t stale = 0;       // ours from an earlier run, kept until removals are allowed
  uint64_t refusals = 0;    // every refusal so far
  int32_t last_error = 0;   // the last refusal's errno (negative), 0: none
  uint64_t nexthop_objects = 0;  // nexthop objects of ours the kernel holds
};

class Plan {
 public:
  explicit Plan(PlanOptions o) : o_(o) {}

  [[nodiscard]] const PlanOptions& options() const { return o_; }
  // Next hops further than one link resolve through the kernel's routes
  // (fib/resolver.h; null: only directly connected ones). The resolver
  // outlives the plan; after a change of its answers, call
  // interfaces_changed().
  void set_resolver(const Resolver* r) { resolver_ = r; }
  // Routes refer to nexthop objects (true) or carry their gateways; set
  // before the first next().
  void set_nexthop_objects(bool on) { o_.nexthop_objects = on; }

  // ---- what Petrel wants
  void want(const net::Prefix& p, Want w);
  void unwant(const net::Prefix& p);
  // Forgets every wanted route (the table is being read again from the
  // start): routes in the kernel stay until they are wanted again or
  // removals are allowed.
  void unwant_all();

  // ---- what the kernel holds and says
  // A route from the start-up dump: recorded if it is ours, else ignored.
  void kernel_has(const Route& r);
  // A nexthop object from the start-up dump (before the routes): one of
  // ours is recorded, another's id is never used.
  void kernel_has(const NexthopObject& o);
  // The kernel removed nexthop object id (RTM_DELNEXTHOP notification,
  // its link went away), and the routes that referred to it: they are
  // worked out again, onto new objects.
  void nexthop_gone(uint32_t id);
  // Nexthop notifications were lost: no object is trusted any longer
  // (each route is worked out again onto new ones; the old ones go).
  void nexthops_unknown();
  // The interfaces changed: every route is worked out again. With ifs:
  // objects on a link that is not up (the kernel removes those without a
  // notification when a link goes down) are not referred to again, and
  // are deleted once unused (ENOENT then is fine).
  void interfaces_changed();
  void interfaces_changed(const Interfaces& ifs);
  // These links went down (or went) since the last call, even if they are
  // up again: the kernel removed the routes and objects through them, so
  // ours through them are sent again (replaced) even when still right.
  void links_went_down(const std::vector<uint32_t>& ifindexes);
  // Stale routes of ours (not wanted) are removed only once this is true
  // (for both families; release() does it for one).
  void allow_removals();
  // Restart deferral (above): hold the family's route requests, or let
  // them go (and its stale routes with them).
  void defer(net::IpFamily f);
  void release(net::IpFamily f);
  [[nodiscard]] bool deferred(net::IpFamily f) const { return deferred_[fi(f)]; }
  // Routes of ours of the family found at start-up and still in the kernel
  // as they were found (not yet replaced or removed by this run).
  [[nodiscard]] uint64_t found(net::IpFamily f) const;
  // The kernel's answer to the request with this seq (0: done).
  void answer(uint32_t seq, int32_t error);
  // Every refused prefix gets another try.
  void retry_refused();

  // Appends up to `max` requests, numbered from next_seq on.
  size_t next(const Interfaces& ifs, size_t max, std::vector<Request>& out);

  [[nodiscard]] PlanCounts counts() const;
  [[nodiscard]] int32_t last_error() const { return last_error_; }
  // Nothing waiting and nothing in flight (refused prefixes aside).
  [[nodiscard]] bool idle() const {
    return queue_.empty() && in_flight_ == 0 && nh_deletes_.empty() && nh_replaces_.empty();
  }
  [[nodiscard]] size_t in_flight() const { return in_flight_; }

  // fn(prefix) for every prefix Petrel wants now.
  template <typename F>
  void for_each_wanted(F&& fn) const {
    for (const auto& [p, e] : entries_)
      if (e.want != kNoId) fn(p);
  }

  // The route Petrel would install for p now (nullopt: none).
  [[nodiscard]] std::optional<Route> target(const net::Prefix& p, const Interfaces& ifs) const;

 private:
  // 16 octets: a route's wish and the kernel's copy are ids of interned
  // values (most routes share a few gateways).
  struct Entry {
    uint32_t want = kNoId;    // wants_
    uint32_t kernel = kNoId;  // shapes_: ours, as the kernel holds it
    bool queued = false;
    bool inflight = false;
    bool recheck = false;  // changed while in flight
    bool refused = false;
    bool unresolved = false;
    bool listed = false;  // in refused_nodes_: not erased meanwhile
    bool found = false;   // kernel: found at start-up, not installed by this run
    bool suspect = false; // kernel: its link went down, the kernel may have removed it
  };
  // A request in flight; its entry cannot be erased meanwhile, so the
  // answer needs no lookup.
  using Node = std::pair<const net::Prefix, Entry>;  // map nodes do not move
  struct InFlight {
    Node* node = nullptr;  // a route's request (null: answered, or an object's)
    Op op = Op::kAdd;
    uint32_t shape = kNoId;  // the route asked for (a reference held)
    uint32_t object = 0;     // a nexthop object's request: its id
    [[nodiscard]] bool live() const { return node != nullptr || object != 0; }
  };
  // A nexthop object of ours. refs: the interned shapes that refer to it,
  // and the groups it is a member of.
  enum class NhState : uint8_t { kAbsent, kCreating, kPresent, kDeleting };
  struct NhRecord {
    std::vector<NextHop> hops;      // sorted; one: a gateway; more: a group
    std::vector<uint32_t> members;  // a group's objects (a reference held on each)
    uint32_t refs = 0;
    NhState state = NhState::kAbsent;
    bool attached = false;  // in nh_ids_: new routes may refer to it
    bool delete_queued = false;
    bool found_group = false;  // found at start-up; members linked by settle_found()
    std::vector<GroupMember> found_members;
    // A recursive next hop's group (rec_ids_): hops are the resolved ones
    // wanted now, members those the kernel's group holds; while a replace
    // is in flight, pending holds its members (a reference held on each).
    bool recursive = false;
    bool replace_queued = false;
    bool replacing = false;
    std::vector<uint32_t> pending;
  };

  static size_t fi(net::IpFamily f) { return f == net::IpFamily::V4 ? 0 : 1; }
  [[nodiscard]] bool ours(const Route& r) const {
    return r.protocol == o_.protocol && r.table == o_.table && r.metric == o_.metric;
  }
  // The shape Petrel would install for a wish (a reference taken; kNoId:
  // none reachable).
  uint32_t resolve(uint32_t want, net::IpFamily family, const Interfaces& ifs);
  // Gateways of the prefix's family, and IPv6 ones for an IPv4 prefix
  // (RFC 8950).
  [[nodiscard]] std::optional<Shape> shape_for(const Want& w, net::IpFamily family, const Interfaces& ifs) const;
  [[nodiscard]] Route route_of(const net::Prefix& p, const Shape& s) const;
  // Interned shapes hold a reference to their nexthop object.
  uint32_t intern(const Shape& s);
  void release_shape(uint32_t id);
  // ---- nexthop objects
  [[nodiscard]] bool our_nhid(uint32_t id) const {
    return id - o_.first_nhid < o_.nhid_count;
  }
  uint32_t object_for(const std::vector<NextHop>& hops);  // no reference taken
  uint32_t take_id();  // a free id of the range (0: none)
  // A gateway's objects, a reference taken on each (0: no ids left).
  uint32_t members_for(const std::vector<NextHop>& hops, std::vector<uint32_t>& out);
  // The group of a single recursive gateway (0: not one, or no ids): see
  // "Recursive next hops" above.
  uint32_t recursive_shape(const Want& w, net::IpFamily family, const Interfaces& ifs);
  uint32_t recursive_group(const Gateway& g, const std::vector<NextHop>& hops);
  // Sends the queued groups' replacements (their new members first).
  void replace_groups(std::vector<Request>& out, size_t& made, size_t max);
  [[nodiscard]] bool replacement_ready() const;  // a queued group can be replaced now
  void ref_object(uint32_t id);
  void unref_object(uint32_t id);
  void detach(uint32_t id);
  void drop_object(uint32_t id);  // absent or deleted: forgotten, its members released
  void queue_delete(uint32_t id);
  void settle_found();
  [[nodiscard]] NexthopObject object_message(uint32_t id) const;
  // Emits the creation of id (and of its members) if the kernel lacks it.
  void ensure_object(uint32_t id, std::vector<Request>& out, size_t& made);
  void send_object(uint32_t id, Op op, std::vector<Request>& out);
  void answer_object(uint32_t id, Op op, int32_t error);
  void refuse_counted(int32_t error) {
    ++refusals_;
    last_error_ = error;
  }
  void touch(Node& n);
  // found: the route was found at start-up (not installed by this run).
  // Takes over the caller's reference to `shape`.
  void set_kernel(Entry& e, uint32_t shape, bool found = false);
  [[nodiscard]] static bool stale(const Entry& e) {
    return e.kernel != kNoId && e.want == kNoId && e.found;
  }
  void set_refused(Entry& e, bool v);
  void refuse(Node& n);
  // Takes over the caller's reference to `want`.
  void set_want(Entry& e, uint32_t want);
  // The id of w, a reference taken; want()'s last wish is kept
  // (last_want_, a reference held) and not looked up again.
  uint32_t intern_want(const Want& w);
  uint32_t last_want_ = kNoId;
  void set_unresolved(Entry& e, bool v);
  void forget_if_empty(Node& n);

  // Appends the next hops a gateway gives (none: it does not resolve),
  // each once.
  void hops_of(const Gateway& g, const Interfaces& ifs, std::vector<NextHop>& out) const;
  const Resolver* resolver_ = nullptr;
  // resolve()'s last answer, valid during one next(): the wish and the
  // shape (a reference held to each).
  void forget_memo();
  uint32_t memo_want_ = kNoId, memo_shape_ = kNoId;
  net::IpFamily memo_family_ = net::IpFamily::V4;

  PlanOptions o_;
  Interned<Want, WantHash> wants_;
  Interned<Shape, ShapeHash> shapes_;
  std::unordered_map<net::Prefix, Entry> entries_;
  std::deque<Node*> queue_;  // entries to work out (Entry::queued); never erased while queued
  // Requests by sequence number: inflight_[i] has seq first_seq_ + i
  // (numbers are handed out in order; answers may come in any order).
  std::deque<InFlight> inflight_;
  uint32_t first_seq_ = 1, next_seq_ = 1;
  size_t in_flight_ = 0;
  bool removals_allowed_[2] = {false, false};  // by family (fi())
  bool deferred_[2] = {false, false};
  std::vector<Node*> held_;  // queued entries of a deferred family (still Entry::queued)
  uint64_t installed_ = 0, unresolved_ = 0, refused_ = 0, refusals_ = 0;
  uint64_t unwanted_ = 0;  // found at start-up and not wanted (stale(), until removals are allowed)
  std::vector<Node*> refused_nodes_;  // may hold nodes refused no longer
  int32_t last_error_ = 0;
  // Nexthop objects of ours by id; the attached ones by content.
  std::unordered_map<uint32_t, NhRecord> nh_;
  std::map<std::vector<NextHop>, uint32_t> nh_ids_;
  std::unordered_set<uint32_t> nh_taken_;  // ids in our range held by others
  std::deque<uint32_t> nh_deletes_;
  std::map<std::pair<net::IpAddress, uint32_t>, uint32_t> rec_ids_;  // (next hop, via_ifindex): its group
  std::deque<uint32_t> nh_replaces_;  // groups whose members change
  uint32_t nh_next_ = 0;  // the next id to try, as an offset in the range
  uint64_t nh_present_ = 0;
  bool nh_settle_ = false;  // objects found at start-up not yet settled
};

// Two routes the same for the kernel: type and next hops, in any order.
bool same_route(const Route& a, const Route& b);

}  // namespace petrel::fib
