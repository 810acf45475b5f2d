// The kernel's links and addresses as Petrel knows them, and the question
// the plan asks of them: is this next hop directly reachable, and through
// which interface? Pure: fed the kernel's RTM_NEWLINK/DELLINK and
// RTM_NEWADDR/DELADDR messages (fib/netlink.h), by a dump and then by
// notifications.
//
// A next hop is directly reachable when it lies in a network connected to
// an interface that is up (IFF_UP and IFF_RUNNING), other than one of our
// own addresses; the longest such network wins. An IPv6 link-local next
// hop (fe80::/10) names no network: it is reachable through the interface
// the caller says it was learnt on (the session's), when that is up.
// Anything further away is not resolved here (docs/kernel.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "crates/net/ip.h"
#include "fib/netlink.h"

namespace petrel::fib {

class Interfaces {
 public:
  struct Interface {
    std::string name;
    uint32_t flags = 0;
    std::vector<Address> addresses;
    [[nodiscard]] bool up() const;
  };

  // Applies one message (links and addresses; others are ignored).
  // True when what resolve() answers may have changed.
  bool apply(const Message& m);

  // The interface through which `next_hop` is directly reachable; nullopt
  // if it is not. `via_ifindex`: the interface the route was learnt on (0:
  // unknown), which a link-local next hop needs.
  [[nodiscard]] std::optional<uint32_t> resolve(const net::IpAddress& next_hop, uint32_t via_ifindex = 0) const;

  [[nodiscard]] const std::map<uint32_t, Interface>& all() const { return links_; }
  [[nodiscard]] std::optional<uint32_t> index_of(std::string_view name) const;
  // The interface that holds `local` as one of its own addresses.
  [[nodiscard]] std::optional<uint32_t> holding(const net::IpAddress& local) const;
  // The interface of the longest connected network that contains `a`,
  // whether the interface is up or not.
  [[nodiscard]] std::optional<uint32_t> network_of(const net::IpAddress& a) const;

 private:
  // The longest network containing `a` among the interfaces' (only those
  // up, with up_only); nullopt as soon as `a` is one of our own addresses
  // when own_is_none.
  [[nodiscard]] std::optional<uint32_t> longest_network(const net::IpAddress& a, bool up_only, bool own_is_none) const;

  std::map<uint32_t, Interface> links_;
};

}  // namespace petrel::fib
