// Listener and dialer sockets (TCP, IPv4 and IPv6, link-local scopes), and
// the options that protect a session's transport: TCP MD5 (RFC 2385),
// TCP-AO (RFC 5925), TTL limits (RFC 5082).
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

void set_session_options(int fd, net::IpFamily family) {
  int tos = 0xc0;  // DSCP CS6
  if (family == net::IpFamily::V4)
    (void)setsockopt(fd, IPPROTO_IP, IP_TOS, &tos, sizeof tos);
  else
    (void)setsockopt(fd, IPPROTO_IPV6, IPV6_TCLASS, &tos, sizeof tos);
  int one = 1;
  (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
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

namespace {

// TCP-AO's socket API (Linux 6.7, include/uapi/linux/tcp.h). Debian 12's
// headers predate it, so the option number and struct tcp_ao_add are
// written out here as the kernel's UAPI defines them.
constexpr int kTcpAoAddKey = 38;  // TCP_AO_ADD_KEY
constexpr size_t kTcpAoMaxKeyLen = 80;
struct TcpAoAdd {
  sockaddr_storage addr;  // the peer's address for the key
  char alg_name[64];      // crypto API name
  int32_t ifindex;        // L3 (VRF) device index; with TCP_AO_KEYF_IFINDEX
  uint32_t set_current : 1, set_rnext : 1, reserved : 30;
  uint16_t reserved2;
  uint8_t prefix;  // the peer address's prefix length
  uint8_t sndid;
  uint8_t rcvid;
  uint8_t maclen;  // 0: the algorithm's default (12 octets for both here)
  uint8_t keyflags;
  uint8_t keylen;
  uint8_t key[kTcpAoMaxKeyLen];
} __attribute__((aligned(8)));
static_assert(sizeof(TcpAoAdd) == 288, "struct tcp_ao_add of linux/tcp.h");

}  // namespace

bool set_md5_key(int fd, const SocketAddress& peer, std::string_view password, std::string& err) {
  struct tcp_md5sig sig {};
  socklen_t len;
  SocketAddress scopeless = peer;  // keys are per address (see sockets.h)
  scopeless.ifname.clear();
  scopeless.ifindex = 0;
  if (peer.addr.is_link_local()) scopeless.ifindex = 1;  // to_sockaddr needs one; the kernel ignores it
  if (!to_sockaddr(scopeless, sig.tcpm_addr, len, err)) return false;
  if (password.size() > TCP_MD5SIG_MAXKEYLEN) {
    err = "TCP MD5 password longer than 80 octets";
    return false;
  }
  sig.tcpm_keylen = static_cast<uint16_t>(password.size());
  std::memcpy(sig.tcpm_key, password.data(), password.size());
  if (setsockopt(fd, IPPROTO_TCP, TCP_MD5SIG, &sig, sizeof sig) != 0) {
    err = errno_text("setsockopt TCP_MD5SIG");
    return false;
  }
  return true;
}

bool set_ao_key(int fd, const SocketAddress& peer, const TcpAoKey& key, std::string& err) {
  TcpAoAdd add{};
  socklen_t len;
  SocketAddress scopeless = peer;
  scopeless.ifname.clear();
  scopeless.ifindex = peer.addr.is_link_local() ? 1 : 0;
  if (!to_sockaddr(scopeless, add.addr, len, err)) return false;
  if (key.secret.size() > kTcpAoMaxKeyLen || key.algorithm.size() >= sizeof add.alg_name) {
    err = "TCP-AO key longer than 80 octets";
    return false;
  }
  std::memcpy(add.alg_name, key.algorithm.data(), key.algorithm.size());
  add.set_current = 1;
  add.set_rnext = 1;
  add.prefix = static_cast<uint8_t>(peer.addr.is_v4() ? 32 : 128);
  add.sndid = key.send_id;
  add.rcvid = key.recv_id;
  add.keylen = static_cast<uint8_t>(key.secret.size());
  std::memcpy(add.key, key.secret.data(), key.secret.size());
  if (setsockopt(fd, IPPROTO_TCP, kTcpAoAddKey, &add, sizeof add) != 0) {
    err = errno == ENOPROTOOPT ? "this kernel has no TCP-AO (it needs Linux 6.7 or later with CONFIG_TCP_AO)"
                               : errno_text("setsockopt TCP_AO_ADD_KEY");
    return false;
  }
  return true;
}

bool set_ttl(int fd, net::IpFamily family, int ttl, int min_ttl, std::string& err) {
  const bool v4 = family == net::IpFamily::V4;
  if (ttl > 0) {
    if (setsockopt(fd, v4 ? IPPROTO_IP : IPPROTO_IPV6, v4 ? IP_TTL : IPV6_UNICAST_HOPS, &ttl, sizeof ttl) != 0) {
      err = errno_text(v4 ? "setsockopt IP_TTL" : "setsockopt IPV6_UNICAST_HOPS");
      return false;
    }
  }
  if (min_ttl > 0) {
    if (setsockopt(fd, v4 ? IPPROTO_IP : IPPROTO_IPV6, v4 ? IP_MINTTL : IPV6_MINHOPCOUNT, &min_ttl,
                   sizeof min_ttl) != 0) {
      err = errno_text(v4 ? "setsockopt IP_MINTTL" : "setsockopt IPV6_MINHOPCOUNT");
      return false;
    }
  }
  return true;
}

bool apply_transport(int fd, const SocketAddress& peer, const TransportOptions& opts, std::string& err) {
  if (!set_ttl(fd, peer.addr.family(), opts.ttl, opts.min_ttl, err)) return false;
  if (!opts.md5_password.empty() && !set_md5_key(fd, peer, opts.md5_password, err)) return false;
  if (opts.ao && !set_ao_key(fd, peer, *opts.ao, err)) return false;
  return true;
}

bool keep_syn(int listener_fd, std::string& err) {
  int one = 1;
  if (setsockopt(listener_fd, IPPROTO_TCP, TCP_SAVE_SYN, &one, sizeof one) != 0) {
    err = errno_text("setsockopt TCP_SAVE_SYN");
    return false;
  }
  return true;
}

std::optional<int> syn_ttl(int fd) {
  uint8_t buf[512];
  socklen_t len = sizeof buf;
  if (getsockopt(fd, IPPROTO_TCP, TCP_SAVED_SYN, buf, &len) != 0 || len < 20) return std::nullopt;
  // The saved headers start at the IP header: IPv4's TTL is octet 8,
  // IPv6's hop limit octet 7.
  const unsigned version = buf[0] >> 4;
  if (version == 4) return buf[8];
  if (version == 6 && len >= 40) return buf[7];
  return std::nullopt;
}

int start_connect(const SocketAddress& remote, const std::optional<net::IpAddress>& local,
                  const TransportOptions& opts, std::string& err) {
  sockaddr_storage ss;
  socklen_t len;
  if (!to_sockaddr(remote, ss, len, err)) return -1;
  int fd = ::socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    err = errno_text("socket");
    return -1;
  }
  set_session_options(fd, remote.addr.family());
  if (!apply_transport(fd, remote, opts, err)) {
    ::close(fd);
    return -1;
  }
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
        if (auto net = net::Prefix::make(*a, len); net && net->contains(remote)) {
          out.remote_on_link = true;
          if (!out.shared || out.shared->len() < net->len()) out.shared = net;
        }
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
