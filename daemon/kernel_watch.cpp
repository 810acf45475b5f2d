// The kernel's routes and links on the main loop (daemon/kernel_watch.h).
#include "daemon/kernel_watch.h"

#include <fcntl.h>
#include <libmnl/libmnl.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <variant>

#include "daemon/kernel_origin.h"
#include "fib/driver/driver.h"

namespace petrel::daemon {
namespace {

constexpr size_t kReceiveBuffer = 1 << 16;  // one datagram (the kernel's are at most a page or two)
constexpr int kDumpTimeoutMs = 5000;         // the kernel's silence during a dump
constexpr int kDumpAttempts = 3;             // a dump interrupted by a change is redone
constexpr int kReadsPerWake = 64;            // datagrams read per wake, so the loop goes on

std::string sys(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

}  // namespace

KernelWatch::KernelWatch(struct ev_loop* loop, bool routes, Callbacks cb)
    : loop_(loop), routes_(routes), cb_(std::move(cb)) {}

KernelWatch::~KernelWatch() {
  ev_io_stop(loop_, &io_);
  if (req_) mnl_socket_close(req_);
  if (notify_) mnl_socket_close(notify_);
}

Result<void, std::string> KernelWatch::start() {
  in_.resize(kReceiveBuffer);
  req_ = mnl_socket_open(NETLINK_ROUTE);
  if (!req_ || mnl_socket_bind(req_, 0, MNL_SOCKET_AUTOPID) < 0) return fail(sys("opening a netlink socket"));
  notify_ = mnl_socket_open(NETLINK_ROUTE);
  if (!notify_ || mnl_socket_bind(notify_, 0, MNL_SOCKET_AUTOPID) < 0) return fail(sys("opening a netlink socket"));
  std::vector<int> groups{RTNLGRP_LINK, RTNLGRP_IPV4_IFADDR, RTNLGRP_IPV6_IFADDR};
  if (routes_) {
    groups.push_back(RTNLGRP_IPV4_ROUTE);
    groups.push_back(RTNLGRP_IPV6_ROUTE);
  }
  for (int group : groups)
    if (mnl_socket_setsockopt(notify_, NETLINK_ADD_MEMBERSHIP, &group, sizeof group) < 0)
      return fail(sys("joining the link, address and route notification groups"));
  const int fd = mnl_socket_get_fd(notify_);
  int bytes = 4 << 20;
  if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &bytes, sizeof bytes) != 0)
    (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
  if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) != 0) return fail(sys("making the socket non-blocking"));
  // Petrel's own route changes (protocol RTPROT_BGP: a full table being
  // installed is a million of them) are dropped in the kernel, before
  // they fill the socket's buffer.
  if (!fib::drop_routes_of_protocol(fd, kRtProtBgp))
    return fail(sys("filtering Petrel's own routes out of the notifications"));
  if (auto r = dump_interfaces(); !r) return r;
  ev_io_init(&io_, &KernelWatch::on_readable, fd, EV_READ);
  io_.data = this;
  ev_io_start(loop_, &io_);
  return {};
}

Result<void, std::string> KernelWatch::dump(uint16_t type, const std::function<void(const fib::Message&)>& fn) {
  for (int attempt = 0; attempt < kDumpAttempts; ++attempt) {
    const uint32_t seq = seq_++;
    out_.clear();
    fib::encode_dump(type, 0, seq, out_);
    if (mnl_socket_sendto(req_, out_.data(), out_.size()) < 0) return fail(sys("asking the kernel for a dump"));
    bool done = false, interrupted = false;
    while (!done) {
      pollfd p{mnl_socket_get_fd(req_), POLLIN, 0};
      int n = 0;
      do {
        n = poll(&p, 1, kDumpTimeoutMs);
      } while (n < 0 && errno == EINTR);
      if (n <= 0) return fail(std::string("the kernel's dump did not come"));
      const ssize_t got = mnl_socket_recvfrom(req_, in_.data(), in_.size());
      if (got < 0) return fail(sys("reading the kernel's dump"));
      int error = 0;
      fib::for_each_message(bytes::Span(in_.data(), static_cast<size_t>(got)), [&](const fib::Message& m) {
        if (m.header.seq != seq) return;
        if (m.header.flags & NLM_F_DUMP_INTR) interrupted = true;
        if (std::holds_alternative<fib::Done>(m.body)) done = true;
        else if (const auto* a = std::get_if<fib::Ack>(&m.body)) {
          error = -a->error;
          done = true;
        } else {
          fn(m);
        }
      });
      if (error != 0) {
        errno = error;
        return fail(sys("dumping the kernel's tables"));
      }
    }
    if (!interrupted) return {};
  }
  return {};  // interrupted three times: what was read stands; notifications follow
}

Result<void, std::string> KernelWatch::dump_interfaces() {
  ifs_ = fib::Interfaces{};
  auto apply = [this](const fib::Message& m) { (void)ifs_.apply(m); };
  if (auto r = dump(RTM_GETLINK, apply); !r) return r;
  return dump(RTM_GETADDR, apply);
}

Result<void, std::string> KernelWatch::dump_routes(const std::function<void(const fib::Route&)>& fn) {
  return dump(RTM_GETROUTE, [&](const fib::Message& m) {
    if (const auto* r = std::get_if<fib::Route>(&m.body)) fn(*r);
  });
}

void KernelWatch::on_readable(struct ev_loop*, ev_io* w, int) { static_cast<KernelWatch*>(w->data)->read_notifications(); }

void KernelWatch::read_notifications() {
  for (int i = 0; i < kReadsPerWake; ++i) {
    const ssize_t n = mnl_socket_recvfrom(notify_, in_.data(), in_.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == ENOBUFS) {
      // The kernel dropped notifications: start again from dumps.
      ++resyncs_;
      if (!dump_interfaces()) return;
      if (cb_.lost) cb_.lost();
      continue;
    }
    if (n <= 0) return;  // EAGAIN: all read
    fib::for_each_message(bytes::Span(in_.data(), static_cast<size_t>(n)), [&](const fib::Message& m) {
      ++notifications_;
      handle(m);
    });
  }
}

void KernelWatch::handle(const fib::Message& m) {
  if (const auto* r = std::get_if<fib::Route>(&m.body)) {
    if (cb_.route) cb_.route(*r, m.header.type == RTM_NEWROUTE);
    return;
  }
  if (const auto* l = std::get_if<fib::Link>(&m.body)) {
    const auto& all = ifs_.all();
    auto it = all.find(l->index);
    const bool known = it != all.end();
    const bool was_up = known && it->second.up();
    std::string name = known ? it->second.name : l->name;
    if (m.header.type == RTM_DELLINK) {
      if (was_up && cb_.link) cb_.link(l->index, name, false);
      (void)ifs_.apply(m);
      return;
    }
    fib::Interfaces::Interface next;
    next.flags = l->flags;
    const bool up = next.up();
    if (was_up && !up && cb_.link) cb_.link(l->index, name, false);
    (void)ifs_.apply(m);
    if (known && !was_up && up && cb_.link) cb_.link(l->index, l->name.empty() ? name : l->name, true);
    return;
  }
  (void)ifs_.apply(m);
}

}  // namespace petrel::daemon
