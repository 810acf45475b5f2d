// The kernel's routes and links as the main loop follows them: one
// NETLINK_ROUTE socket subscribed to link, address and (when asked) route
// notifications, read on the main libev loop, plus one for dumps.
//
// For routes from the kernel ([[originate]] from_kernel,
// daemon/kernel_origin.h) and for carrier loss ending sessions
// (peer.link_down_ends_session, docs/kernel.md "Link down"). It runs
// whether or not [kernel] installs routes (the syncer has its own sockets
// on its own thread).
//
// Every message is decoded by fib/netlink.h (bounded: a datagram is at
// most kReceiveBuffer bytes). A lost notification (ENOBUFS: the socket's
// buffer overflowed) means the links and addresses are dumped again and
// lost() is called, whose answer is to dump the routes again
// (dump_routes()).
#pragma once

#include <ev.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "crates/result/result.h"
#include "fib/interfaces.h"
#include "fib/netlink.h"

struct mnl_socket;

namespace petrel::daemon {

class KernelWatch {
 public:
  struct Callbacks {
    // A route notification (present: RTM_NEWROUTE, else RTM_DELROUTE).
    std::function<void(const fib::Route&, bool present)> route;
    // A link goes down (before the model forgets it) or comes up (after).
    std::function<void(uint32_t ifindex, const std::string& name, bool up)> link;
    // Notifications were lost: the routes should be dumped again.
    std::function<void()> lost;
  };
  KernelWatch(struct ev_loop* loop, bool routes, Callbacks cb);
  ~KernelWatch();
  KernelWatch(const KernelWatch&) = delete;
  KernelWatch& operator=(const KernelWatch&) = delete;

  // Opens the sockets, dumps links and addresses, starts reading. The text
  // of the error otherwise.
  Result<void, std::string> start();
  // Every route of the kernel (both families, every table), fn(route) for
  // each; blocking (at most a few seconds). Notifications queued meanwhile
  // are read after it, in order, so the state converges.
  Result<void, std::string> dump_routes(const std::function<void(const fib::Route&)>& fn);

  [[nodiscard]] const fib::Interfaces& interfaces() const { return ifs_; }
  [[nodiscard]] uint64_t notifications() const { return notifications_; }
  [[nodiscard]] uint64_t resyncs() const { return resyncs_; }

 private:
  static void on_readable(struct ev_loop*, ev_io* w, int);
  void read_notifications();
  void handle(const fib::Message& m);
  Result<void, std::string> dump(uint16_t type, const std::function<void(const fib::Message&)>& fn);
  Result<void, std::string> dump_interfaces();

  struct ev_loop* loop_;
  bool routes_;
  Callbacks cb_;
  mnl_socket* req_ = nullptr;
  mnl_socket* notify_ = nullptr;
  ev_io io_{};
  fib::Interfaces ifs_;
  std::vector<std::byte> in_, out_;
  uint32_t seq_ = 1;
  uint64_t notifications_ = 0, resyncs_ = 0;
};

}  // namespace petrel::daemon
