// The kernel driver: the one part of fib/ with I/O (libmnl sockets), so a
// module of its own (fib/driver/, docs/ARCHITECTURE.md) above pure fib/. It
// keeps the kernel's routes of ours equal to what the plan (fib/plan.h)
// wants, and keeps the interface model (fib/interfaces.h) current.
//
// Two NETLINK_ROUTE sockets: one for requests and dumps, whose answers
// (NLMSG_ERROR acks, one per request, matched to requests by sequence
// number) come back in the sendmsg call's wake (rtnetlink handles a
// request in the sender's context), and one subscribed to RTNLGRP_LINK,
// RTNLGRP_IPV4_IFADDR and RTNLGRP_IPV6_IFADDR (and RTNLGRP_NEXTHOP: the
// kernel removes nexthop objects whose link goes). Requests go out in
// batches (several messages in one sendmsg).
//
// A third socket follows the kernel's routes (RTNLGRP_IPV4_ROUTE,
// RTNLGRP_IPV6_ROUTE) for next-hop resolution (fib/resolver.h): the
// resolve table is mirrored from the start-up route dump and these
// notifications. A socket filter (classic BPF) drops Petrel's own routes'
// notifications in the kernel, so installing a full table does not flood
// it; a lost notification (ENOBUFS) dumps the routes again into the
// resolver alone.
//
// Nexthop objects (fib/plan.h) are used when DriverOptions asks for them
// and the kernel supports them: start() dumps them (RTM_GETNEXTHOP); a
// failing dump means routes carry their gateways, as without.
//
// Opening the sockets needs no privilege; changing routes needs
// CAP_NET_ADMIN, and its absence is reported in plain words (EPERM).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "crates/result/result.h"
#include "fib/interfaces.h"
#include "fib/plan.h"

struct mnl_socket;

namespace petrel::fib {

struct DriverOptions {
  PlanOptions plan;
  size_t batch = 256;         // requests per sendmsg
  int answer_timeout_ms = 5000;  // waiting for the kernel's acks
  bool nexthop_objects = true;   // when the kernel supports them
  ResolverOptions resolve;       // next hops further than one link (fib/resolver.h)
};

// An error of the driver itself (not a refused route): errno and what was
// being done. text() says CAP_NET_ADMIN is missing when that is the cause.
struct DriverError {
  int error = 0;  // errno
  const char* what = "";
  [[nodiscard]] std::string text() const;
};

struct DriverStats {
  uint64_t requests = 0;       // route requests sent
  uint64_t batches = 0;        // sendmsg calls for them
  uint64_t notifications = 0;  // link and address messages read
  uint64_t resyncs = 0;        // interface dumps after a lost notification
  uint64_t route_notifications = 0;  // foreign route messages read (the resolver's)
  uint64_t route_resyncs = 0;  // route dumps after a lost route notification
  // Where sync()'s time went (steady clock, nanoseconds): the plan's
  // next(), encoding the requests, inside sendmsg (rtnetlink does the
  // kernel's work in the sender's call), and waiting for and reading the
  // answers.
  uint64_t plan_ns = 0, encode_ns = 0, send_ns = 0, answer_ns = 0;
};

// Attaches to a netlink socket a filter (classic BPF, run in the kernel)
// that drops route messages (RTM_NEWROUTE, RTM_DELROUTE) of `protocol`
// and keeps every other message whole: Petrel's own installation of a
// full table would otherwise fill the socket's buffer. False with errno
// set when the kernel refuses it.
bool drop_routes_of_protocol(int fd, uint8_t protocol);

class Driver {
 public:
  static Result<std::unique_ptr<Driver>, DriverError> open(DriverOptions o);
  ~Driver();
  Driver(const Driver&) = delete;
  Driver& operator=(const Driver&) = delete;

  // Dumps links, addresses and routes (ours go to the plan). Blocking.
  Result<void, DriverError> start();
  // Sends what the plan has, in batches, and feeds the answers back,
  // until the plan has nothing to send (or `max_requests` went out).
  Result<void, DriverError> sync(size_t max_requests = SIZE_MAX);
  // Reads pending link/address and route notifications without blocking;
  // true if the interfaces or the resolver's routes changed (the plan has
  // been told: its routes are worked out again).
  Result<bool, DriverError> read_notifications();
  // The notification sockets, to wait on (poll) between rounds.
  [[nodiscard]] int notify_fd() const;
  [[nodiscard]] int route_fd() const;
  // A clean stop: every route of ours goes.
  Result<void, DriverError> remove_all();

  Plan& plan() { return plan_; }
  [[nodiscard]] const Plan& plan() const { return plan_; }
  [[nodiscard]] const Interfaces& interfaces() const { return ifs_; }
  [[nodiscard]] const Resolver& resolver() const { return resolver_; }
  [[nodiscard]] const DriverStats& stats() const { return stats_; }
  // After start(): whether the kernel answered a nexthop object dump, and
  // whether routes refer to objects (asked for and supported).
  [[nodiscard]] bool nexthop_objects_supported() const { return nh_supported_; }
  [[nodiscard]] bool nexthop_objects() const { return plan_.options().nexthop_objects; }

 private:
  explicit Driver(DriverOptions o) : o_(o), plan_(o.plan), resolver_(o.resolve) { plan_.set_resolver(&resolver_); }
  // resolver_only: routes go to the resolver alone (a dump after lost
  // route notifications), not to the plan.
  Result<void, DriverError> dump(uint16_t type, uint8_t family, bool resolver_only = false);
  // Reads a notification socket (at most 1024 datagrams): each(message);
  // lost() when the kernel dropped some (ENOBUFS).
  template <typename Lost, typename Each>
  Result<void, DriverError> drain(mnl_socket* sock, const char* what, Lost&& lost, Each&& each);
  Result<void, DriverError> dump_interfaces();
  Result<void, DriverError> send_batch(const std::vector<Request>& batch);

  DriverOptions o_;
  Plan plan_;
  Interfaces ifs_;
  Resolver resolver_;
  DriverStats stats_;
  mnl_socket* req_ = nullptr;
  mnl_socket* notify_ = nullptr;
  mnl_socket* routes_ = nullptr;  // route notifications, Petrel's own filtered out
  uint32_t portid_ = 0;
  uint32_t dump_seq_ = 0x80000000u;
  bool nh_supported_ = false;
  std::vector<std::byte> out_;
  std::vector<std::byte> in_;
};

}  // namespace petrel::fib
