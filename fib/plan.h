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
// Memory: a full table is a million prefixes through a few gateways, so
// each prefix keeps two ids (16 octets with its flags): its wish and the
// kernel's copy are interned (fib/intern.h), not a vector each.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <unordered_map>
#include <vector>

#include "crates/net/ip.h"
#include "fib/interfaces.h"
#include "fib/intern.h"
#include "fib/netlink.h"

namespace petrel::fib {

struct PlanOptions {
  uint32_t table = 254;   // RT_TABLE_MAIN
  uint32_t metric = 32;
  uint8_t protocol = 186; // RTPROT_BGP
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
// one multipath route), or an unreachable route.
struct Want {
  std::vector<Gateway> gateways;
  bool unreachable = false;
  friend bool operator==(const Want&, const Want&) = default;
};

// A route of ours apart from its prefix (table, metric and protocol are
// the plan's): what the plan keeps per route, interned (fib/intern.h).
struct Shape {
  uint8_t type = 0;   // RTN_*
  uint8_t scope = 0;  // RT_SCOPE_*
  std::vector<NextHop> nexthops;
  friend bool operator==(const Shape&, const Shape&) = default;
};

struct WantHash {
  size_t operator()(const Want& w) const;
};
struct ShapeHash {
  size_t operator()(const Shape& s) const;
};

enum class Op : uint8_t { kAdd, kReplace, kDelete };

struct Request {
  uint32_t seq = 0;
  Op op = Op::kAdd;
  Route route;
};

// The RTM_ type and NLM_F_ flags a request goes out with, and the
// message itself (NLM_F_ACK set: every request is answered).
Message to_message(const Request& r, uint32_t pid = 0);
// Its header alone (the driver encodes the route without a copy).
Header header_of(const Request& r, uint32_t pid = 0);

struct PlanCounts {
  uint64_t installed = 0;   // routes of ours the kernel holds
  uint64_t pending = 0;     // prefixes waiting for a request or its answer
  uint64_t unresolved = 0;  // wanted, but no gateway is directly reachable
  uint64_t refused = 0;     // refused by the kernel, waiting for a retry
  uint64_t stale = 0;       // ours from an earlier run, kept until removals are allowed
  uint64_t refusals = 0;    // every refusal so far
  int32_t last_error = 0;   // the last refusal's errno (negative), 0: none
};

class Plan {
 public:
  explicit Plan(PlanOptions o) : o_(o) {}

  [[nodiscard]] const PlanOptions& options() const { return o_; }

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
  // The interfaces changed: every route is worked out again.
  void interfaces_changed();
  // Stale routes of ours (not wanted) are removed only once this is true.
  void allow_removals();
  // The kernel's answer to the request with this seq (0: done).
  void answer(uint32_t seq, int32_t error);
  // Every refused prefix gets another try.
  void retry_refused();

  // Appends up to `max` requests, numbered from next_seq on.
  size_t next(const Interfaces& ifs, size_t max, std::vector<Request>& out);

  [[nodiscard]] PlanCounts counts() const;
  [[nodiscard]] int32_t last_error() const { return last_error_; }
  // Nothing waiting and nothing in flight (refused prefixes aside).
  [[nodiscard]] bool idle() const { return queue_.empty() && in_flight_ == 0; }
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
  };
  // A request in flight; its entry cannot be erased meanwhile, so the
  // answer needs no lookup.
  using Node = std::pair<const net::Prefix, Entry>;  // map nodes do not move
  struct InFlight {
    Node* node = nullptr;  // null: answered
    Op op = Op::kAdd;
    uint32_t shape = kNoId;  // the route asked for (a reference held)
  };

  [[nodiscard]] bool ours(const Route& r) const {
    return r.protocol == o_.protocol && r.table == o_.table && r.metric == o_.metric;
  }
  // The shape Petrel would install for a wish (a reference taken; kNoId:
  // none reachable).
  uint32_t resolve(uint32_t want, net::IpFamily family, const Interfaces& ifs);
  // Only gateways of the prefix's family count (an IPv4 prefix over an
  // IPv6 next hop, RFC 8950, is not installed yet: unresolved).
  [[nodiscard]] static std::optional<Shape> shape_for(const Want& w, net::IpFamily family, const Interfaces& ifs);
  [[nodiscard]] Route route_of(const net::Prefix& p, const Shape& s) const;
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
  void set_unresolved(Entry& e, bool v);
  void forget_if_empty(Node& n);

  // The next hop a gateway gives (nullopt: not directly reachable).
  static std::optional<NextHop> hop_of(const Gateway& g, const Interfaces& ifs);
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
  bool removals_allowed_ = false;
  uint64_t installed_ = 0, unresolved_ = 0, refused_ = 0, refusals_ = 0;
  uint64_t unwanted_ = 0;  // found at start-up and not wanted (stale(), until removals are allowed)
  std::vector<Node*> refused_nodes_;  // may hold nodes refused no longer
  int32_t last_error_ = 0;
};

// Two routes the same for the kernel: type and next hops, in any order.
bool same_route(const Route& a, const Route& b);

}  // namespace petrel::fib
