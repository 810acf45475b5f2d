// Listener and dialer sockets (TCP, IPv4 and IPv6, link-local scopes).
#include "daemon/sockets.h"

#include <ifaddrs.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/ip.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace petrel::daemon {

std::string SocketAddress::to_string() const {
  std::string a = addr.to_string();
  if (!ifname.empty()) a += "%" + ifname;
  if (addr.is_v6()) a = "[" + a + "]";
  return a + ":" + std::to_string(port);
}

bool to_sockaddr(const SocketAddress& e, sockaddr_storage& ss, socklen_t& len, std::string& err) {
  std::memset(&ss, 0, sizeof ss);
  if (e.addr.is_v4()) {
    sockaddr_in sin{};
    sin.sin_family = AF_INET;
    sin.sin_port = htons(e.port);
    std::memcpy(&sin.sin_addr, e.addr.data(), 4);
    std::memcpy(&ss, &sin, sizeof sin);
    len = sizeof sin;
    return true;
  }
  sockaddr_in6 sin6{};
  sin6.sin6_family = AF_INET6;
  sin6.sin6_port = htons(e.port);
  std::memcpy(&sin6.sin6_addr, e.addr.data(), 16);
  if (e.addr.is_link_local()) {
    unsigned idx = e.ifindex;
    if (!e.ifname.empty()) idx = if_nametoindex(e.ifname.c_str());
    if (idx == 0) {
      err = "interface " + (e.ifname.empty() ? std::string("(none)") : e.ifname) + " not found";
      return false;
    }
    sin6.sin6_scope_id = idx;
  }
  std::memcpy(&ss, &sin6, sizeof sin6);
  len = sizeof sin6;
  return true;
}

SocketAddress from_sockaddr(const sockaddr_storage& ss) {
  SocketAddress e;
  if (ss.ss_family == AF_INET) {
    sockaddr_in sin;
    std::memcpy(&sin, &ss, sizeof sin);
    e.addr = net::IpAddress::from_bytes(net::IpFamily::V4, reinterpret_cast<const uint8_t*>(&sin.sin_addr));
    e.port = ntohs(sin.sin_port);
    return e;
  }
  sockaddr_in6 sin6;
  std::memcpy(&sin6, &ss, sizeof sin6);
  const auto* b = reinterpret_cast<const uint8_t*>(&sin6.sin6_addr);
  // An IPv4-mapped address on a dual-stack socket is the IPv4 peer.
  static constexpr uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (std::memcmp(b, kMapped, 12) == 0) {
    e.addr = net::IpAddress::from_bytes(net::IpFamily::V4, b + 12);
  } else {
    e.addr = net::IpAddress::from_bytes(net::IpFamily::V6, b);
  }
  e.port = ntohs(sin6.sin6_port);
  if (e.addr.is_link_local() && sin6.sin6_scope_id != 0) {
    e.ifindex = sin6.sin6_scope_id;
    char name[IF_NAMESIZE] = {};
    if (if_indextoname(sin6.sin6_scope_id, name)) e.ifname = name;
  }
  return e;
}

void set_nonblocking(int fd) {
  int fl = fcntl(fd, F_GETFL, 0);
  if (fl >= 0) (void)fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

void set_network_control_tos(int fd, net::IpFamily family) {
  int tos = 0xc0;  // DSCP CS6
  if (family == net::IpFamily::V4)
    (void)setsockopt(fd, IPPROTO_IP, IP_TOS, &tos, sizeof tos);
  else
    (void)setsockopt(fd, IPPROTO_IPV6, IPV6_TCLASS, &tos, sizeof tos);
}

static std::string errno_text(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

int open_listener(const SocketAddress& where, int backlog, std::string& err, BindMode mode) {
  sockaddr_storage ss;
  socklen_t len;
  if (!to_sockaddr(where, ss, len, err)) return -1;
  int fd = ::socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    err = errno_text("socket");
    return -1;
  }
  int one = 1;
  (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (ss.ss_family == AF_INET6) (void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
  // Listening on an address not (yet) configured locally is allowed, so a
  // listener can come up before its interface does.
  if (mode == BindMode::kFreebind) {
    if (ss.ss_family == AF_INET6)
      (void)setsockopt(fd, IPPROTO_IPV6, IPV6_FREEBIND, &one, sizeof one);
    else
      (void)setsockopt(fd, IPPROTO_IP, IP_FREEBIND, &one, sizeof one);
  }
  if (::bind(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0) {
    err = errno_text("bind");
    ::close(fd);
    return -1;
  }
  if (::listen(fd, backlog) != 0) {
    err = errno_text("listen");
    ::close(fd);
    return -1;
  }
  return fd;
}

int start_connect(const SocketAddress& remote, const std::optional<net::IpAddress>& local, std::string& err) {
  sockaddr_storage ss;
  socklen_t len;
  if (!to_sockaddr(remote, ss, len, err)) return -1;
  int fd = ::socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    err = errno_text("socket");
    return -1;
  }
  set_network_control_tos(fd, remote.addr.family());
  if (local && !local->is_unspecified()) {
    SocketAddress le{*local, 0, remote.ifname, remote.ifindex};
    sockaddr_storage ls;
    socklen_t llen;
    if (!to_sockaddr(le, ls, llen, err)) {
      ::close(fd);
      return -1;
    }
    if (::bind(fd, reinterpret_cast<sockaddr*>(&ls), llen) != 0) {
      err = errno_text("bind to local address");
      ::close(fd);
      return -1;
    }
  }
  if (::connect(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0 && errno != EINPROGRESS) {
    err = errno_text("connect");
    ::close(fd);
    return -1;
  }
  return fd;
}

int connect_result(int fd) {
  int so_error = 0;
  socklen_t l = sizeof so_error;
  if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &l) != 0) return errno;
  return so_error;
}

std::optional<SocketAddress> local_endpoint(int fd) {
  sockaddr_storage ss{};
  socklen_t l = sizeof ss;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &l) != 0) return std::nullopt;
  return from_sockaddr(ss);
}

SessionAddresses session_addresses(const net::IpAddress& local, const net::IpAddress& remote) {
  SessionAddresses out;
  if (local.is_v4()) out.v4 = local;
  else if (local.is_link_local()) out.v6_link_local = local;
  else out.v6_global = local;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return out;
  auto ip_of = [](const sockaddr* sa) -> std::optional<net::IpAddress> {
    if (!sa) return std::nullopt;
    if (sa->sa_family == AF_INET) {
      const auto* in = reinterpret_cast<const sockaddr_in*>(sa);
      return net::IpAddress::from_bytes(net::IpFamily::V4, reinterpret_cast<const uint8_t*>(&in->sin_addr));
    }
    if (sa->sa_family == AF_INET6) {
      const auto* in = reinterpret_cast<const sockaddr_in6*>(sa);
      return net::IpAddress::from_bytes(net::IpFamily::V6, reinterpret_cast<const uint8_t*>(&in->sin6_addr));
    }
    return std::nullopt;
  };
  // The interface holding `local`.
  std::string name;
  for (ifaddrs* i = list; i; i = i->ifa_next)
    if (auto a = ip_of(i->ifa_addr); a && *a == local && i->ifa_name) name = i->ifa_name;
  if (!name.empty()) {
    for (ifaddrs* i = list; i; i = i->ifa_next) {
      if (!i->ifa_name || name != i->ifa_name) continue;
      auto a = ip_of(i->ifa_addr);
      if (!a) continue;
      if (a->is_v4() && !out.v4) out.v4 = a;
      if (!a->is_v4() && a->is_link_local() && !out.v6_link_local) out.v6_link_local = a;
      if (!a->is_v4() && !a->is_link_local() && !out.v6_global) out.v6_global = a;
      // Is the peer on this network?
      if (auto mask = ip_of(i->ifa_netmask); mask && mask->family() == a->family() && remote.family() == a->family()) {
        unsigned len = 0;
        for (size_t k = 0; k < mask->size(); ++k) len += static_cast<unsigned>(__builtin_popcount(mask->data()[k]));
        if (auto net = net::Prefix::make(*a, len); net && net->contains(remote)) out.remote_on_link = true;
      }
    }
  }
  if (!remote.is_v4() && remote.is_link_local()) out.remote_on_link = true;
  freeifaddrs(list);
  return out;
}

std::optional<SocketAddress> remote_endpoint(int fd) {
  sockaddr_storage ss{};
  socklen_t l = sizeof ss;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &l) != 0) return std::nullopt;
  return from_sockaddr(ss);
}

}  // namespace petrel::daemon
