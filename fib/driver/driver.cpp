// The kernel driver (see driver.h): libmnl sockets; every message in and
// out goes through fib/netlink.h.
#include "fib/driver/driver.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <net/if.h>
#include <libmnl/libmnl.h>
#include <linux/filter.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace petrel::fib {
namespace {

constexpr size_t kReceiveBuffer = 1 << 18;  // one recvmsg's worth (a dump part or many acks)
constexpr int kDumpAttempts = 3;            // a dump interrupted by a change is redone

DriverError sys(const char* what) { return DriverError{errno, what}; }

// Adds the time since `from` to `total` and moves `from` to now.
void lap(uint64_t& total, std::chrono::steady_clock::time_point& from) {
  auto now = std::chrono::steady_clock::now();
  total += static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(now - from).count());
  from = now;
}

void set_buffer(int fd, int opt_force, int opt, int bytes) {
  if (setsockopt(fd, SOL_SOCKET, opt_force, &bytes, sizeof bytes) != 0)
    (void)setsockopt(fd, SOL_SOCKET, opt, &bytes, sizeof bytes);
}

}  // namespace

// The message type (host order, 16 bits at octet 4 of struct nlmsghdr;
// BPF loads in network order, hence htons), then rtm_protocol (octet 5 of
// struct rtmsg, after the 16 of nlmsghdr) of a route message.
bool drop_routes_of_protocol(int fd, uint8_t protocol) {
  sock_filter code[] = {
      BPF_STMT(BPF_LD | BPF_H | BPF_ABS, offsetof(nlmsghdr, nlmsg_type)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, htons(RTM_NEWROUTE), 2, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, htons(RTM_DELROUTE), 1, 0),
      BPF_STMT(BPF_RET | BPF_K, 0xffffffffu),  // not a route: kept whole
      BPF_STMT(BPF_LD | BPF_B | BPF_ABS, sizeof(nlmsghdr) + offsetof(rtmsg, rtm_protocol)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, protocol, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, 0),            // of that protocol: dropped
      BPF_STMT(BPF_RET | BPF_K, 0xffffffffu),  // another's: kept whole
  };
  sock_fprog prog{static_cast<unsigned short>(sizeof code / sizeof code[0]), code};
  return setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof prog) == 0;
}

namespace {

// Waits for fd to be readable; false on timeout.
bool wait_readable(int fd, int timeout_ms) {
  pollfd p{fd, POLLIN, 0};
  int n;
  do {
    n = poll(&p, 1, timeout_ms);
  } while (n < 0 && errno == EINTR);
  return n > 0;
}

}  // namespace

std::string DriverError::text() const {
  std::string s = std::string(what) + ": " + std::strerror(error);
  if (error == EPERM)
    s += " (Petrel needs CAP_NET_ADMIN to change the kernel's routes: run it as root or grant the capability)";
  return s;
}

Result<std::unique_ptr<Driver>, DriverError> Driver::open(DriverOptions o) {
  std::unique_ptr<Driver> d(new Driver(o));
  d->req_ = mnl_socket_open(NETLINK_ROUTE);
  if (!d->req_) return fail(sys("opening a netlink socket"));
  if (mnl_socket_bind(d->req_, 0, MNL_SOCKET_AUTOPID) < 0) return fail(sys("binding the netlink socket"));
  d->portid_ = mnl_socket_get_portid(d->req_);
  int on = 1;
  // Acks without a copy of the request: one batch's answers stay small.
  (void)mnl_socket_setsockopt(d->req_, NETLINK_CAP_ACK, &on, sizeof on);
  int fd = mnl_socket_get_fd(d->req_);
  set_buffer(fd, SO_RCVBUFFORCE, SO_RCVBUF, 8 << 20);
  set_buffer(fd, SO_SNDBUFFORCE, SO_SNDBUF, 1 << 20);

  d->notify_ = mnl_socket_open(NETLINK_ROUTE);
  if (!d->notify_) return fail(sys("opening a netlink socket"));
  if (mnl_socket_bind(d->notify_, 0, MNL_SOCKET_AUTOPID) < 0) return fail(sys("binding the netlink socket"));
  for (int group : {RTNLGRP_LINK, RTNLGRP_IPV4_IFADDR, RTNLGRP_IPV6_IFADDR})
    if (mnl_socket_setsockopt(d->notify_, NETLINK_ADD_MEMBERSHIP, &group, sizeof group) < 0)
      return fail(sys("joining the link and address notification groups"));
  int nexthops = RTNLGRP_NEXTHOP;  // a kernel without nexthop objects refuses: not needed then
  (void)mnl_socket_setsockopt(d->notify_, NETLINK_ADD_MEMBERSHIP, &nexthops, sizeof nexthops);
  int nfd = mnl_socket_get_fd(d->notify_);
  set_buffer(nfd, SO_RCVBUFFORCE, SO_RCVBUF, 1 << 20);
  if (fcntl(nfd, F_SETFL, fcntl(nfd, F_GETFL) | O_NONBLOCK) != 0) return fail(sys("making the socket non-blocking"));

  // Route notifications, for the resolver. The filter drops those of
  // Petrel's own protocol (rtm_protocol, 5 octets into struct rtmsg after
  // the 16 of nlmsghdr): a full table's installation would flood the
  // socket with them.
  d->routes_ = mnl_socket_open(NETLINK_ROUTE);
  if (!d->routes_) return fail(sys("opening a netlink socket"));
  if (mnl_socket_bind(d->routes_, 0, MNL_SOCKET_AUTOPID) < 0) return fail(sys("binding the netlink socket"));
  int rfd = mnl_socket_get_fd(d->routes_);
  if (!drop_routes_of_protocol(rfd, o.resolve.own_protocol)) return fail(sys("filtering the route notifications"));
  for (int group : {RTNLGRP_IPV4_ROUTE, RTNLGRP_IPV6_ROUTE})
    if (mnl_socket_setsockopt(d->routes_, NETLINK_ADD_MEMBERSHIP, &group, sizeof group) < 0)
      return fail(sys("joining the route notification groups"));
  set_buffer(rfd, SO_RCVBUFFORCE, SO_RCVBUF, 4 << 20);
  if (fcntl(rfd, F_SETFL, fcntl(rfd, F_GETFL) | O_NONBLOCK) != 0) return fail(sys("making the socket non-blocking"));
  d->in_.resize(kReceiveBuffer);
  return d;
}

Driver::~Driver() {
  if (req_) mnl_socket_close(req_);
  if (notify_) mnl_socket_close(notify_);
  if (routes_) mnl_socket_close(routes_);
}

int Driver::notify_fd() const { return mnl_socket_get_fd(notify_); }
int Driver::route_fd() const { return mnl_socket_get_fd(routes_); }

Result<void, DriverError> Driver::dump(uint16_t type, uint8_t family, bool resolver_only) {
  for (int attempt = 0; attempt < kDumpAttempts; ++attempt) {
    uint32_t seq = dump_seq_++;
    if (dump_seq_ == 0) dump_seq_ = 0x80000000u;
    out_.clear();
    encode_dump(type, family, seq, out_);
    if (mnl_socket_sendto(req_, out_.data(), out_.size()) < 0) return fail(sys("asking the kernel for a dump"));
    bool done = false, interrupted = false;
    while (!done) {
      if (!wait_readable(mnl_socket_get_fd(req_), o_.answer_timeout_ms))
        return fail(DriverError{ETIMEDOUT, "waiting for the kernel's dump"});
      ssize_t n = mnl_socket_recvfrom(req_, in_.data(), in_.size());
      if (n < 0) return fail(sys("reading the kernel's dump"));
      int error = 0;
      for_each_message(bytes::Span(in_.data(), static_cast<size_t>(n)), [&](const Message& m) {
        if (m.header.seq != seq) return;
        if (m.header.flags & NLM_F_DUMP_INTR) interrupted = true;
        if (std::holds_alternative<Done>(m.body)) {
          done = true;
        } else if (const auto* a = std::get_if<Ack>(&m.body)) {
          error = -a->error;
          done = true;
        } else if (const auto* rt = std::get_if<Route>(&m.body)) {
          (void)resolver_.apply(m);
          if (!resolver_only) plan_.kernel_has(*rt);
        } else if (const auto* nh = std::get_if<NexthopObject>(&m.body)) {
          plan_.kernel_has(*nh);
        } else {
          (void)ifs_.apply(m);
        }
      });
      if (error != 0) return fail(DriverError{error, "dumping the kernel's tables"});
    }
    if (!interrupted) return {};
  }
  return {};  // three interrupted dumps: what was read stands; notifications follow
}

Result<void, DriverError> Driver::dump_interfaces() {
  ifs_ = Interfaces{};
  if (auto r = dump(RTM_GETLINK, 0); !r) return r;
  return dump(RTM_GETADDR, 0);
}

Result<void, DriverError> Driver::start() {
  if (auto r = dump_interfaces(); !r) return r;
  // Objects before routes (the plan counts the routes that refer to each).
  // Objects of ours are dumped even when not used: left by an earlier
  // run, they go once no route refers to them.
  nh_supported_ = dump(RTM_GETNEXTHOP, 0).ok();
  plan_.set_nexthop_objects(o_.nexthop_objects && nh_supported_);
  if (auto r = dump(RTM_GETROUTE, kAfInet); !r) return r;
  return dump(RTM_GETROUTE, kAfInet6);
}

// Only the batch's last request asks for an ack (NLM_F_ACK): the kernel
// handles a batch's requests in order and answers a refused one with an
// error of its own, so when the last one is answered every request without
// an error succeeded. One datagram per batch instead of one per route
// (a recvmsg reads a single datagram).
Result<void, DriverError> Driver::send_batch(const std::vector<Request>& batch) {
  if (batch.empty()) return {};
  auto t = std::chrono::steady_clock::now();
  out_.clear();
  for (size_t i = 0; i < batch.size(); ++i) {
    Header h = header_of(batch[i]);
    if (i + 1 < batch.size()) h.flags &= static_cast<uint16_t>(~NLM_F_ACK);
    if (batch[i].object) encode(h, *batch[i].object, out_);
    else encode(h, batch[i].route, out_);
  }
  ++stats_.batches;
  stats_.requests += batch.size();
  auto answer_all = [&](int32_t error, size_t from) {
    for (size_t i = from; i < batch.size(); ++i) plan_.answer(batch[i].seq, error);
  };
  lap(stats_.encode_ns, t);
  if (mnl_socket_sendto(req_, out_.data(), out_.size()) < 0) {
    DriverError e = sys("sending route requests");
    answer_all(-e.error, 0);
    return fail(e);
  }
  lap(stats_.send_ns, t);
  // Errors come in request order; position i of the batch has seq
  // batch[i].seq (consecutive is not assumed).
  const uint32_t last = batch.back().seq;
  size_t next = 0;  // requests before this one are answered
  bool done = false, denied = false;
  while (!done) {
    if (!wait_readable(mnl_socket_get_fd(req_), o_.answer_timeout_ms)) {
      answer_all(-ETIMEDOUT, next);
      return fail(DriverError{ETIMEDOUT, "waiting for the kernel's answers"});
    }
    ssize_t n = mnl_socket_recvfrom(req_, in_.data(), in_.size());
    if (n < 0) {
      DriverError e = sys("reading the kernel's answers");
      answer_all(-e.error, next);
      return fail(e);
    }
    for_each_message(bytes::Span(in_.data(), static_cast<size_t>(n)), [&](const Message& m) {
      const auto* a = std::get_if<Ack>(&m.body);
      if (!a || done) return;
      size_t at = next;
      while (at < batch.size() && batch[at].seq != a->request.seq) ++at;
      if (at == batch.size()) return;  // not this batch's
      for (; next < at; ++next) plan_.answer(batch[next].seq, 0);  // no error: done
      plan_.answer(a->request.seq, a->error);
      ++next;
      denied |= a->error == -EPERM;
      done = a->request.seq == last;
    });
  }
  lap(stats_.answer_ns, t);
  if (denied) return fail(DriverError{EPERM, "changing the kernel's routes"});
  return {};
}

Result<void, DriverError> Driver::sync(size_t max_requests) {
  std::vector<Request> batch;
  size_t sent = 0;
  while (sent < max_requests) {
    batch.clear();
    auto t = std::chrono::steady_clock::now();
    size_t n = plan_.next(ifs_, std::min(o_.batch, max_requests - sent), batch);
    lap(stats_.plan_ns, t);
    if (n == 0) break;
    sent += n;
    if (auto r = send_batch(batch); !r) return r;
  }
  return {};
}

template <typename Lost, typename Each>
Result<void, DriverError> Driver::drain(mnl_socket* sock, const char* what, Lost&& lost, Each&& each) {
  for (int i = 0; i < 1024; ++i) {  // bounded: the rest waits for the next round
    ssize_t n = mnl_socket_recvfrom(sock, in_.data(), in_.size());
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) break;
      if (errno != ENOBUFS) return fail(sys(what));
      if (auto r = lost(); !r) return r;
      continue;
    }
    for_each_message(bytes::Span(in_.data(), static_cast<size_t>(n)), each);
  }
  return {};
}

Result<bool, DriverError> Driver::read_notifications() {
  bool changed = false, routes = false;
  std::vector<uint32_t> went_down;  // seen down, even if up again by the end
  auto lost = [&]() -> Result<void, DriverError> {
    // Notifications were lost: read the interfaces again; no nexthop
    // object is trusted any longer.
    ++stats_.resyncs;
    if (auto r = dump_interfaces(); !r) return r;
    plan_.nexthops_unknown();
    changed = true;
    return {};
  };
  auto r = drain(notify_, "reading link and address notifications", lost, [&](const Message& m) {
    ++stats_.notifications;
    if (const auto* nh = std::get_if<NexthopObject>(&m.body)) {
      if (m.header.type == RTM_DELNEXTHOP) plan_.nexthop_gone(nh->id);
      return;
    }
    if (const auto* l = std::get_if<Link>(&m.body)) {
      if (m.header.type == RTM_DELLINK || (l->flags & (IFF_UP | IFF_RUNNING)) != (IFF_UP | IFF_RUNNING))
        went_down.push_back(l->index);
      // Set down or deleted: the kernel removed the routes through it
      // without a word (carrier lost alone leaves them).
      if (m.header.type == RTM_DELLINK || !(l->flags & IFF_UP)) routes |= resolver_.link_gone(l->index);
    }
    changed |= ifs_.apply(m);
  });
  if (!r) return fail(r.error());
  plan_.links_went_down(went_down);
  auto lost_routes = [&]() -> Result<void, DriverError> {
    // Lost: the resolve table is dumped again (into the resolver alone).
    ++stats_.route_resyncs;
    resolver_.clear();
    routes = true;
    if (auto d = dump(RTM_GETROUTE, kAfInet, true); !d) return d;
    return dump(RTM_GETROUTE, kAfInet6, true);
  };
  r = drain(routes_, "reading route notifications", lost_routes, [&](const Message& m) {
    ++stats_.route_notifications;
    routes |= resolver_.apply(m);
  });
  if (!r) return fail(r.error());
  if (changed) plan_.interfaces_changed(ifs_);
  else if (routes) plan_.interfaces_changed();  // recursive next hops worked out again
  return changed || routes;
}

Result<void, DriverError> Driver::remove_all() {
  plan_.unwant_all();
  plan_.allow_removals();
  return sync();
}

}  // namespace petrel::fib
