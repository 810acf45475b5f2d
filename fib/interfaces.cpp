// The interface model (see interfaces.h).
#include "fib/interfaces.h"

#include <linux/if.h>
#include <linux/rtnetlink.h>

#include <algorithm>

namespace petrel::fib {

bool Interfaces::Interface::up() const { return (flags & IFF_UP) && (flags & IFF_RUNNING); }

bool Interfaces::apply(const Message& m) {
  if (const auto* l = std::get_if<Link>(&m.body)) {
    if (m.header.type == RTM_DELLINK) return links_.erase(l->index) != 0;
    Interface& i = links_[l->index];
    bool changed = i.flags != l->flags;
    i.flags = l->flags;
    if (!l->name.empty()) i.name = l->name;
    return changed;
  }
  if (const auto* a = std::get_if<Address>(&m.body)) {
    auto& list = links_[a->ifindex].addresses;
    auto same = [&](const Address& b) { return b.local == a->local && b.prefix_len == a->prefix_len; };
    auto it = std::find_if(list.begin(), list.end(), same);
    if (m.header.type == RTM_DELADDR) {
      if (it == list.end()) return false;
      list.erase(it);
      return true;
    }
    if (it != list.end()) {
      bool changed = !(*it == *a);
      *it = *a;
      return changed;
    }
    list.push_back(*a);
    return true;
  }
  return false;
}

std::optional<uint32_t> Interfaces::resolve(const net::IpAddress& nh, uint32_t via_ifindex) const {
  if (nh.is_link_local()) {
    auto it = links_.find(via_ifindex);
    if (it == links_.end() || !it->second.up()) return std::nullopt;
    return via_ifindex;
  }
  return longest_network(nh, true, true);  // our own address is no gateway
}

std::optional<uint32_t> Interfaces::longest_network(const net::IpAddress& x, bool up_only, bool own_is_none) const {
  std::optional<uint32_t> best;
  int best_len = -1;
  for (const auto& [index, i] : links_) {
    if (up_only && !i.up()) continue;
    for (const Address& a : i.addresses) {
      if (a.local.family() != x.family()) continue;
      if (own_is_none && a.local == x) return std::nullopt;
      auto net = net::Prefix::make(a.address, a.prefix_len);
      if (!net || !net->contains(x) || a.prefix_len <= best_len) continue;
      best = index;
      best_len = a.prefix_len;
    }
  }
  return best;
}

std::optional<uint32_t> Interfaces::network_of(const net::IpAddress& a) const {
  return longest_network(a, false, false);
}

std::optional<uint32_t> Interfaces::holding(const net::IpAddress& local) const {
  std::optional<uint32_t> found;
  for (const auto& [index, i] : links_)
    for (const Address& a : i.addresses)
      if (a.local == local) found = index;
  return found;
}

std::optional<uint32_t> Interfaces::index_of(std::string_view name) const {
  for (const auto& [index, i] : links_)
    if (i.name == name) return index;
  return std::nullopt;
}

}  // namespace petrel::fib
