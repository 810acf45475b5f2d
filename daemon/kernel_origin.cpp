// Routes from the kernel into BGP (daemon/kernel_origin.h).
#include "daemon/kernel_origin.h"

#include <linux/rtnetlink.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <fstream>

namespace petrel::daemon {
namespace {

struct ProtocolName {
  uint8_t number;
  std::string_view name;
};
// <linux/rtnetlink.h>'s RTPROT_* (as iproute2 names them).
constexpr std::array<ProtocolName, 23> kProtocols{{
    {0, "unspec"}, {1, "redirect"}, {2, "kernel"}, {3, "boot"}, {4, "static"}, {8, "gated"}, {9, "ra"},
    {10, "mrt"}, {11, "zebra"}, {12, "bird"}, {13, "dnrouted"}, {14, "xorp"}, {15, "ntk"}, {16, "dhcp"},
    {17, "mrouted"}, {18, "keepalived"}, {42, "babel"}, {99, "openr"}, {186, "bgp"}, {187, "isis"},
    {188, "ospf"}, {189, "rip"}, {192, "eigrp"},
}};

std::optional<uint8_t> number_of(std::string_view s) {
  unsigned v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size() || v > 255 || s.empty()) return std::nullopt;
  return static_cast<uint8_t>(v);
}

// A name from an rt_protos file ("NUMBER NAME" lines, '#' comments).
std::optional<uint8_t> from_file(const char* path, std::string_view name) {
  std::ifstream in(path);
  std::string line;
  for (int lines = 0; in && lines < 1024 && std::getline(in, line); ++lines) {
    if (auto h = line.find('#'); h != std::string::npos) line.erase(h);
    std::string_view l(line);
    const size_t b = l.find_first_not_of(" \t");
    if (b == std::string_view::npos) continue;
    l.remove_prefix(b);
    const size_t sp = l.find_first_of(" \t");
    if (sp == std::string_view::npos) continue;
    auto n = number_of(l.substr(0, sp));
    std::string_view rest = l.substr(sp);
    rest.remove_prefix(std::min(rest.size(), rest.find_first_not_of(" \t")));
    rest = rest.substr(0, rest.find_first_of(" \t\r"));
    if (n && rest == name) return n;
  }
  return std::nullopt;
}

}  // namespace

std::optional<uint8_t> rt_protocol_number(std::string_view name) {
  if (auto n = number_of(name)) return n;
  for (const ProtocolName& p : kProtocols)
    if (p.name == name) return p.number;
  if (auto n = from_file("/etc/iproute2/rt_protos", name)) return n;
  return from_file("/usr/share/iproute2/rt_protos", name);
}

std::string rt_protocol_name(uint8_t number) {
  for (const ProtocolName& p : kProtocols)
    if (p.number == number) return std::string(p.name);
  return std::to_string(number);
}

fib::Want static_want(const StaticRouteConfig& r, uint32_t ifindex) {
  fib::Want w;
  switch (r.kind) {
    case StaticRouteConfig::Kind::kBlackhole: w.blackhole = true; break;
    case StaticRouteConfig::Kind::kUnreachable: w.unreachable = true; break;
    case StaticRouteConfig::Kind::kNextHop:
      if (r.next_hop) w.gateways.push_back(fib::Gateway{*r.next_hop, ifindex, std::nullopt});
      break;
  }
  return w;
}

fib::PlanOptions static_plan_options(const KernelConfig& k) {
  fib::PlanOptions o;
  o.table = k.table;
  o.metric = k.static_metric;
  const fib::PlanOptions bgp;
  o.first_nhid = bgp.first_nhid + bgp.nhid_count;
  o.nhid_count = 1u << 16;
  return o;
}

KernelOrigins::KernelOrigins(std::vector<KernelOriginConfig> entries)
    : entries_(std::move(entries)), held_(entries_.size()) {}

bool KernelOrigins::matches(size_t i, const fib::Route& r) const {
  const KernelOriginConfig& e = entries_[i];
  if (r.protocol == kRtProtBgp || r.table != e.table) return false;
  if (r.type != RTN_UNICAST && r.type != RTN_BLACKHOLE && r.type != RTN_UNREACHABLE && r.type != RTN_PROHIBIT)
    return false;
  if (std::find(e.protocols.begin(), e.protocols.end(), r.protocol) == e.protocols.end()) return false;
  return std::any_of(e.prefixes.begin(), e.prefixes.end(),
                     [&](const table::PrefixRange& range) { return range.contains(r.dst); });
}

void KernelOrigins::route(const fib::Route& r, bool present, std::vector<Change>& out) {
  const Key key{r.table, r.metric};
  for (size_t i = 0; i < entries_.size(); ++i) {
    auto& held = held_[i];
    auto it = held.find(r.dst);
    if (present && matches(i, r)) {
      if (it == held.end()) {
        if (held.size() >= entries_[i].max_prefixes) {
          ++refused_;
          ++new_refusals_;
          continue;
        }
        it = held.emplace(r.dst, std::set<Key>{}).first;
      }
      it->second.insert(key);
    } else if (it != held.end()) {
      // Deleted, or replaced by a route that no longer counts.
      it->second.erase(key);
      if (it->second.empty()) held.erase(it);
    }
  }
  settle(r.dst, out);
}

void KernelOrigins::settle(const net::Prefix& p, std::vector<Change>& out) {
  std::optional<size_t> now;
  for (size_t i = 0; i < entries_.size() && !now; ++i)
    if (held_[i].count(p)) now = i;
  auto it = announced_.find(p);
  std::optional<size_t> before;
  if (it != announced_.end()) before = it->second;
  if (now == before) return;
  if (now) announced_[p] = *now;
  else announced_.erase(it);
  out.push_back(Change{p, now});
}

void KernelOrigins::clear(std::vector<Change>& out) {
  for (const auto& [p, e] : announced_) out.push_back(Change{p, std::nullopt});
  announced_.clear();
  for (auto& h : held_) h.clear();
}

}  // namespace petrel::daemon
