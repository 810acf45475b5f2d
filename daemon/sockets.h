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
#include <string_view>

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

// A TCP-AO master key tuple (RFC 5925 section 3.1) for one peer.
struct TcpAoKey {
  uint8_t send_id = 0;    // KeyID in the segments we send
  uint8_t recv_id = 0;    // KeyID the peer's segments carry (our RNextKeyID)
  std::string algorithm;  // the kernel's name: "hmac(sha1)", "cmac(aes128)"
  std::string secret;
};

// What a session's TCP socket carries besides its TOS: the peer's
// signature key (TCP MD5, RFC 2385, or TCP-AO, RFC 5925) and its TTL rules
// (eBGP multihop; GTSM, RFC 5082).
struct TransportOptions {
  std::string md5_password;    // empty: no TCP MD5
  std::optional<TcpAoKey> ao;  // nothing: no TCP-AO
  int ttl = 0;                 // TTL / hop limit we send with; 0: the system's
  int min_ttl = 0;             // GTSM: the lowest TTL accepted; 0: any
};

// Installs the peer's TCP MD5 key on a socket (one about to connect, or a
// listener: then connections from that address must be signed with it).
// Keys are per address: the kernel scopes them by interface only for VRF
// (L3 master) devices, so a link-local peer's key applies to its address
// on every interface. False with err set.
bool set_md5_key(int fd, const SocketAddress& peer, std::string_view password, std::string& err);
// The same for a TCP-AO master key tuple; ENOPROTOOPT in err when the
// kernel has no TCP-AO (before Linux 6.7, or CONFIG_TCP_AO off).
bool set_ao_key(int fd, const SocketAddress& peer, const TcpAoKey& key, std::string& err);
// Our TTL / hop limit (0: leave it) and, for GTSM, the lowest one accepted
// (IP_MINTTL / IPV6_MINHOPCOUNT; 0: leave it). False with err set.
bool set_ttl(int fd, net::IpFamily family, int ttl, int min_ttl, std::string& err);
// Applies everything of `opts` for `peer` to an unconnected socket.
bool apply_transport(int fd, const SocketAddress& peer, const TransportOptions& opts, std::string& err);
// Listeners keep each connection's SYN (TCP_SAVE_SYN) so that the TTL it
// came with can be checked before the connection is handed on.
bool keep_syn(int listener_fd, std::string& err);
// The TTL / hop limit of the SYN that opened an accepted connection (its
// listener had keep_syn()); nothing when it was not kept.
std::optional<int> syn_ttl(int fd);

// Starts a non-blocking connect from `local` (port 0 = any; address may be
// unspecified) to `remote`, with `opts` on the socket before the SYN goes.
// Returns the fd (connect in progress or done) or -1 with err set.
int start_connect(const SocketAddress& remote, const std::optional<net::IpAddress>& local,
                  const TransportOptions& opts, std::string& err);
inline int start_connect(const SocketAddress& remote, const std::optional<net::IpAddress>& local, std::string& err) {
  return start_connect(remote, local, TransportOptions{}, err);
}

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
  // The interface's networks that hold the remote address (its family's).
  std::optional<net::Prefix> shared;
};
SessionAddresses session_addresses(const net::IpAddress& local, const net::IpAddress& remote);

void set_nonblocking(int fd);
// A BGP session's socket: DSCP CS6 (network control), as routers mark
// it, and TCP_NODELAY: the sessions already write whole buffers of
// messages, and a lone small UPDATE (an injected route, a withdrawal) must
// not wait for the ACK of the one before it (Nagle's algorithm against
// the peer's delayed ACK: 40 ms on Linux).
void set_session_options(int fd, net::IpFamily family);

}  // namespace petrel::daemon
