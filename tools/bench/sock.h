// Socket helpers the load tools share (petrel-load, petrel-fanout): an
// address and port as a sockaddr, and the descriptor limit raised for
// hundreds of sessions. Header only; Linux.
#pragma once

#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>

#include "crates/net/ip.h"

namespace petrel::bench {

// "192.0.2.1" or "2001:db8::1" with a port; nothing for anything else.
inline std::optional<sockaddr_storage> sockaddr_of(const net::IpAddress& a, uint16_t port, socklen_t& len) {
  sockaddr_storage ss{};
  if (a.is_v4()) {
    auto* s = reinterpret_cast<sockaddr_in*>(&ss);
    s->sin_family = AF_INET;
    s->sin_port = htons(port);
    std::memcpy(&s->sin_addr, a.data(), 4);
    len = sizeof(sockaddr_in);
  } else {
    auto* s = reinterpret_cast<sockaddr_in6*>(&ss);
    s->sin6_family = AF_INET6;
    s->sin6_port = htons(port);
    std::memcpy(&s->sin6_addr, a.data(), 16);
    len = sizeof(sockaddr_in6);
  }
  return ss;
}

inline std::optional<sockaddr_storage> sockaddr_of(const std::string& text, uint16_t port, socklen_t& len) {
  auto a = net::IpAddress::parse(text);
  if (!a) return std::nullopt;
  return sockaddr_of(*a, port, len);
}

// Raises the soft limit on open descriptors to at least `want` (up to the
// hard limit, which root may raise too). The limit in force afterwards.
inline rlim_t raise_nofile(rlim_t want) {
  rlimit r{};
  if (getrlimit(RLIMIT_NOFILE, &r) != 0) return 0;
  if (r.rlim_cur >= want) return r.rlim_cur;
  rlimit n = r;
  n.rlim_cur = want;
  if (n.rlim_max < want) n.rlim_max = want;
  if (setrlimit(RLIMIT_NOFILE, &n) != 0) {
    n.rlim_cur = r.rlim_max;
    n.rlim_max = r.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &n) != 0) return r.rlim_cur;
  }
  return n.rlim_cur;
}

}  // namespace petrel::bench
