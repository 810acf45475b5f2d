// Socket helpers for the daemon: listeners, non-blocking connects, and the
// translation between sockaddr and Petrel's (address, interface) peer
// identity. A link-local IPv6 peer is only meaningful with its interface,
// which is looked up by name each time it is needed, so an interface that
// appears later is found.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <optional>
#include <string>

#include "crates/net/ip.h"

namespace petrel::daemon {

// A socket address: IP, port and, for link-local IPv6, the interface.
struct SocketAddress {
  net::IpAddress addr;
  uint16_t port = 0;
  std::string ifname;  // empty unless link-local
  unsigned ifindex = 0;

  [[nodiscard]] std::string to_string() const;  // "198.18.0.2:179", "[fe80::2%veth0]:179"
};

// Fills ss from e; false (with errno-like text in err) if the interface of a
// link-local address does not exist.
bool to_sockaddr(const SocketAddress& e, sockaddr_storage& ss, socklen_t& len, std::string& err);
SocketAddress from_sockaddr(const sockaddr_storage& ss);

// Whether a listener may bind an address that is not (yet) on this host.
// BGP listeners may (IP_FREEBIND: the interface can come up later); the HTTP
// listener may not, so a wrong address fails loudly.
enum class BindMode : uint8_t { kFreebind, kExact };

// Creates a non-blocking listening TCP socket. IPv6 sockets are v6-only so
// "0.0.0.0" and "::" can both be bound. Returns the fd or -1 with err set.
int open_listener(const SocketAddress& where, int backlog, std::string& err,
                  BindMode mode = BindMode::kFreebind);

// Starts a non-blocking connect from `local` (port 0 = any; address may be
// unspecified) to `remote`. Returns the fd (connect in progress or done) or
// -1 with err set.
int start_connect(const SocketAddress& remote, const std::optional<net::IpAddress>& local, std::string& err);

// After a non-blocking connect becomes writable: 0 when connected, else the
// socket error.
int connect_result(int fd);

// Local and remote ends of a connected socket.
std::optional<SocketAddress> local_endpoint(int fd);
std::optional<SocketAddress> remote_endpoint(int fd);

// The addresses of the interface that holds `local` (a session's local
// address), for the next hops Petrel announces on that session: one IPv4,
// one global IPv6 and one link-local IPv6 address, whichever it has, and
// whether `remote` is on one of its connected networks (RFC 2545: the
// link-local next hop is sent to a peer on the same link).
struct SessionAddresses {
  std::optional<net::IpAddress> v4, v6_global, v6_link_local;
  bool remote_on_link = false;
};
SessionAddresses session_addresses(const net::IpAddress& local, const net::IpAddress& remote);

void set_nonblocking(int fd);
// DSCP CS6 (network control) for BGP traffic, as routers mark it.
void set_network_control_tos(int fd, net::IpFamily family);

}  // namespace petrel::daemon
