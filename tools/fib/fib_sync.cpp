// fib-sync: Petrel's kernel installer (fib/driver/driver.h) on its own, for the
// integration tests and the benchmark (docs/kernel.md, docs/performance.md).
//
//   fib-sync --table N --metric M [--routes FILE] [--keep-stale] [--flush] [--gateways]
//   fib-sync --table N --metric M --synth COUNT --gateway ADDR [--floor [--nexthop-object DEV]]
//
// --gateways: routes carry their gateways (no kernel nexthop objects,
// which the installer uses by default when the kernel supports them).
// --routes: lines "PREFIX GATEWAY [GATEWAY...]" or "PREFIX unreachable"
// ('#' starts a comment); the kernel's routes of ours are made equal to
// them (stale ones removed unless --keep-stale). --flush removes every
// route of ours. --synth: the first COUNT IPv4 prefixes of the synthetic
// table (tools/synth) via ADDR; with --floor, the minimal installer
// instead (batched RTM_NEWROUTE, 256 per sendmsg, no plan, no acks but
// errors). --nexthop-object: the floor with one kernel nexthop object
// (RTM_NEWNEXTHOP, id 1, the gateway on DEV) that every route refers to
// (RTA_NH_ID) instead of carrying the gateway. Prints one line of counts
// and the time taken.
//
//   fib-sync ... --synth COUNT --gateway FAR --igp-move "ip route replace ..."
//
// --igp-move: the gateway FAR is not directly reachable and resolves
// through a kernel route (docs/kernel.md, "Next-hop resolution"); once the
// routes are installed, the command given is run (it changes that route),
// and the installer follows the route notification until the kernel has
// every route moved: a second line says how many requests that took, when
// the first of them was answered (with nexthop objects, the group replaced
// in place: every route moved) and when the plan was idle again (its walk
// over the routes done), from the command's start.
#include <libmnl/libmnl.h>
#include <linux/netlink.h>
#include <linux/nexthop.h>
#include <net/if.h>
#include <poll.h>
#include <linux/rtnetlink.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "tools/synth/synth.h"
#include "fib/driver/driver.h"

namespace {

using namespace petrel;

struct Args {
  fib::PlanOptions plan;
  std::string routes;
  bool keep_stale = false, flush = false, floor = false, nexthop_object = false, shuffle = false, gateways = false;
  std::string dev;  // --nexthop-object: the gateway's interface
  uint32_t synth = 0;
  std::optional<net::IpAddress> gateway;
  std::string igp_move;  // a shell command that changes the route FAR resolves through
};

int usage() {
  std::fprintf(stderr,
               "usage: fib-sync --table N --metric M [--routes FILE] [--keep-stale] [--flush] [--gateways]\n"
               "       fib-sync --table N --metric M --synth COUNT --gateway ADDR [--floor [--nexthop-object DEV]]\n"
               "       fib-sync --table N --metric M --synth COUNT --gateway FAR --igp-move COMMAND [--gateways]\n");
  return 2;
}

bool parse_u32(const char* s, uint32_t& out) {
  char* end = nullptr;
  errno = 0;
  unsigned long v = std::strtoul(s, &end, 10);
  if (errno || !end || *end || v > UINT32_MAX) return false;
  out = static_cast<uint32_t>(v);
  return true;
}

std::vector<std::pair<net::Prefix, fib::Want>> read_routes(const std::string& path, bool& ok) {
  std::vector<std::pair<net::Prefix, fib::Want>> out;
  std::ifstream in(path);
  ok = bool(in);
  std::string line;
  for (size_t n = 1; ok && std::getline(in, line); ++n) {
    line = line.substr(0, line.find('#'));
    std::istringstream words(line);
    std::string p, g;
    if (!(words >> p)) continue;
    auto prefix = net::Prefix::parse(p);
    fib::Want w;
    while (prefix && words >> g) {
      if (g == "unreachable") {
        w.unreachable = true;
      } else if (auto a = net::IpAddress::parse(g)) {
        w.gateways.push_back(fib::Gateway{*a, 0, {}});
      } else {
        prefix.reset();
      }
    }
    if (!prefix || (w.gateways.empty() && !w.unreachable)) {
      std::fprintf(stderr, "fib-sync: %s:%zu: expected PREFIX GATEWAY... or PREFIX unreachable\n", path.c_str(), n);
      ok = false;
      break;
    }
    out.emplace_back(*prefix, std::move(w));
  }
  return out;
}

std::vector<net::Prefix> synth_prefixes(uint32_t count) {
  synth::Params p;
  p.v4_prefixes = count;
  p.v6_prefixes = 0;
  p.attr_sets = std::max(1u, count / 4);
  auto t = synth::generate(p);
  std::vector<net::Prefix> out;
  out.reserve(count);
  for (const auto& g : t.v4)
    for (const auto& pr : g.prefixes) out.push_back(pr);
  return out;
}

// Some prefix the plan wants (the routes all go through one gateway).
net::Prefix first_wanted(const fib::Driver& drv) {
  net::Prefix out;
  bool found = false;
  drv.plan().for_each_wanted([&](const net::Prefix& p) {
    if (!found) out = p, found = true;
  });
  return out;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The floor: RTM_NEWROUTE requests built with libmnl, 256 per sendmsg,
// without acks (the kernel answers errors only).
int floor_install(const Args& a, const std::vector<net::Prefix>& prefixes) {
  mnl_socket* nl = mnl_socket_open(NETLINK_ROUTE);
  if (!nl || mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
    std::perror("fib-sync: netlink");
    return 1;
  }
  std::vector<char> buf(256 * 128);
  std::vector<char> in(1 << 16);
  uint32_t gw;
  std::memcpy(&gw, a.gateway->data(), 4);
  auto t0 = std::chrono::steady_clock::now();
  size_t errors = 0;
  constexpr uint32_t kNhId = 1;
  if (a.nexthop_object) {
    unsigned ifindex = if_nametoindex(a.dev.c_str());
    if (ifindex == 0) {
      std::fprintf(stderr, "fib-sync: no interface %s\n", a.dev.c_str());
      return 1;
    }
    nlmsghdr* h = mnl_nlmsg_put_header(buf.data());
    h->nlmsg_type = RTM_NEWNEXTHOP;
    h->nlmsg_flags = NLM_F_REQUEST | NLM_F_CREATE | NLM_F_REPLACE | NLM_F_ACK;
    auto* nh = static_cast<nhmsg*>(mnl_nlmsg_put_extra_header(h, sizeof(nhmsg)));
    nh->nh_family = fib::kAfInet;
    nh->nh_protocol = a.plan.protocol;
    mnl_attr_put_u32(h, NHA_ID, kNhId);
    mnl_attr_put_u32(h, NHA_OIF, ifindex);
    mnl_attr_put_u32(h, NHA_GATEWAY, gw);
    if (mnl_socket_sendto(nl, buf.data(), h->nlmsg_len) < 0 || mnl_socket_recvfrom(nl, in.data(), in.size()) < 0) {
      std::perror("fib-sync: nexthop object");
      return 1;
    }
    const auto* err = static_cast<const nlmsgerr*>(mnl_nlmsg_get_payload(reinterpret_cast<nlmsghdr*>(in.data())));
    if (err->error != 0) {
      std::fprintf(stderr, "fib-sync: nexthop object: %s\n", std::strerror(-err->error));
      return 1;
    }
  }
  for (size_t i = 0; i < prefixes.size();) {
    size_t used = 0;
    for (size_t k = 0; k < 256 && i < prefixes.size(); ++k, ++i) {
      nlmsghdr* h = mnl_nlmsg_put_header(buf.data() + used);
      h->nlmsg_type = RTM_NEWROUTE;
      h->nlmsg_flags = NLM_F_REQUEST | NLM_F_CREATE | NLM_F_REPLACE;
      h->nlmsg_seq = static_cast<uint32_t>(i + 1);
      auto* rt = static_cast<rtmsg*>(mnl_nlmsg_put_extra_header(h, sizeof(rtmsg)));
      rt->rtm_family = fib::kAfInet;
      rt->rtm_dst_len = prefixes[i].len();
      rt->rtm_table = RT_TABLE_UNSPEC;
      rt->rtm_protocol = a.plan.protocol;
      rt->rtm_type = RTN_UNICAST;
      uint32_t dst;
      std::memcpy(&dst, prefixes[i].addr().data(), 4);
      mnl_attr_put_u32(h, RTA_DST, dst);
      mnl_attr_put_u32(h, RTA_TABLE, a.plan.table);
      mnl_attr_put_u32(h, RTA_PRIORITY, a.plan.metric);
      if (a.nexthop_object) mnl_attr_put_u32(h, RTA_NH_ID, kNhId);
      else mnl_attr_put_u32(h, RTA_GATEWAY, gw);
      used += h->nlmsg_len;
    }
    if (mnl_socket_sendto(nl, buf.data(), used) < 0) {
      std::perror("fib-sync: sendto");
      return 1;
    }
    // Errors (if any) wait in the socket: drained without blocking.
    for (ssize_t n; (n = recv(mnl_socket_get_fd(nl), in.data(), in.size(), MSG_DONTWAIT)) > 0;) errors += 1;
  }
  double s = seconds_since(t0);
  mnl_socket_close(nl);
  std::printf("floor%s routes=%zu error_datagrams=%zu seconds=%.3f\n", a.nexthop_object ? "-nexthop-object" : "",
              prefixes.size(), errors, s);
  return 0;
}

// Runs --igp-move's command, then reads notifications and syncs until the
// kernel's routes of ours follow the change (at most 60 s).
int igp_move(const Args& a, fib::Driver& drv) {
  const auto before = drv.plan().target(first_wanted(drv), drv.interfaces());
  const uint64_t requests = drv.stats().requests, batches = drv.stats().batches;
  auto t0 = std::chrono::steady_clock::now();
  if (std::system(a.igp_move.c_str()) != 0) {
    std::fprintf(stderr, "fib-sync: --igp-move command failed\n");
    return 1;
  }
  bool seen = false;
  double first = -1;  // when the first request for the change was answered
  while (seconds_since(t0) < 60) {
    pollfd p{drv.route_fd(), POLLIN, 0};
    (void)poll(&p, 1, drv.plan().idle() ? 100 : 0);
    auto changed = drv.read_notifications();
    if (!changed) {
      std::fprintf(stderr, "fib-sync: %s\n", changed.error().text().c_str());
      return 1;
    }
    seen |= *changed;
    if (auto r = drv.sync(256); !r) {
      std::fprintf(stderr, "fib-sync: %s\n", r.error().text().c_str());
      return 1;
    }
    if (first < 0 && drv.stats().requests != requests) first = seconds_since(t0);
    if (seen && drv.plan().idle()) break;
  }
  double s = seconds_since(t0);
  const auto after = drv.plan().target(first_wanted(drv), drv.interfaces());
  std::printf("igp-move routes=%llu requests=%llu batches=%llu moved=%d first_answered_s=%.3f seconds=%.3f\n",
              static_cast<unsigned long long>(drv.plan().counts().installed),
              static_cast<unsigned long long>(drv.stats().requests - requests),
              static_cast<unsigned long long>(drv.stats().batches - batches), before != after ? 1 : 0, first, s);
  return seen ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    const char* v = nullptr;
    if (k == "--keep-stale") a.keep_stale = true;
    else if (k == "--flush") a.flush = true;
    else if (k == "--floor") a.floor = true;
    else if (k == "--shuffle") a.shuffle = true;
    else if (k == "--gateways") a.gateways = true;
    else if (k == "--nexthop-object") { if (!(v = value())) return usage(); a.nexthop_object = true; a.dev = v; }
    else if (k == "--table") { if (!(v = value()) || !parse_u32(v, a.plan.table)) return usage(); }
    else if (k == "--metric") { if (!(v = value()) || !parse_u32(v, a.plan.metric)) return usage(); }
    else if (k == "--synth") { if (!(v = value()) || !parse_u32(v, a.synth)) return usage(); }
    else if (k == "--routes") { if (!(v = value())) return usage(); a.routes = v; }
    else if (k == "--igp-move") { if (!(v = value())) return usage(); a.igp_move = v; }
    else if (k == "--gateway") { if (!(v = value()) || !(a.gateway = net::IpAddress::parse(v))) return usage(); }
    else return usage();
  }
  std::vector<std::pair<net::Prefix, fib::Want>> wanted;
  if (!a.routes.empty()) {
    bool ok;
    wanted = read_routes(a.routes, ok);
    if (!ok) return 1;
  }
  std::vector<net::Prefix> synth;
  if (a.synth) {
    if (!a.gateway || !a.gateway->is_v4()) return usage();
    synth = synth_prefixes(a.synth);
    if (a.shuffle) {  // the order the daemon's table hands them out in: by hash
      std::mt19937_64 rng(1);
      std::shuffle(synth.begin(), synth.end(), rng);
    }
    if (a.floor) return floor_install(a, synth);
    for (const auto& p : synth) wanted.emplace_back(p, fib::Want{{fib::Gateway{*a.gateway, 0, {}}}, false});
  }

  auto t0 = std::chrono::steady_clock::now();
  fib::DriverOptions options;
  options.plan = a.plan;
  options.nexthop_objects = !a.gateways;
  auto d = fib::Driver::open(options);
  if (!d) {
    std::fprintf(stderr, "fib-sync: %s\n", d.error().text().c_str());
    return 1;
  }
  fib::Driver& drv = **d;
  if (auto r = drv.start(); !r) {
    std::fprintf(stderr, "fib-sync: %s\n", r.error().text().c_str());
    return 1;
  }
  auto kept = drv.plan().counts().installed;
  Result<void, fib::DriverError> r;
  if (a.flush) {
    r = drv.remove_all();
  } else {
    for (auto& [p, w] : wanted) drv.plan().want(p, std::move(w));
    if (!a.keep_stale) drv.plan().allow_removals();
    r = drv.sync();
    if (r) {  // one more try for what the kernel refused
      drv.plan().retry_refused();
      r = drv.sync();
    }
  }
  double s = seconds_since(t0);
  auto c = drv.plan().counts();
  std::printf(
      "found=%llu installed=%llu pending=%llu unresolved=%llu refused=%llu stale=%llu requests=%llu batches=%llu "
      "last_error=%d nexthop_objects=%llu objects_used=%d seconds=%.3f\n",
      static_cast<unsigned long long>(kept), static_cast<unsigned long long>(c.installed),
      static_cast<unsigned long long>(c.pending), static_cast<unsigned long long>(c.unresolved),
      static_cast<unsigned long long>(c.refused), static_cast<unsigned long long>(c.stale),
      static_cast<unsigned long long>(drv.stats().requests), static_cast<unsigned long long>(drv.stats().batches),
      c.last_error, static_cast<unsigned long long>(c.nexthop_objects), drv.nexthop_objects() ? 1 : 0, s);
  if (!r) {
    std::fprintf(stderr, "fib-sync: %s\n", r.error().text().c_str());
    return 1;
  }
  if (!a.igp_move.empty()) return igp_move(a, drv);
  return 0;
}
