// Generators and helpers shared by the fib tests.
#pragma once

#include <rapidcheck.h>

#include <cstdint>
#include <vector>

#include "crates/net/ip.h"
#include "fib/netlink.h"

namespace petrel::fib::testing {

inline net::IpAddress addr(const char* text) { return *net::IpAddress::parse(text); }
inline net::Prefix prefix(const char* text) { return *net::Prefix::parse(text); }

inline net::IpAddress make_addr(bool v6, uint64_t bits) {
  uint8_t b[16] = {};
  if (v6) {
    b[0] = 0x20;
    b[1] = 0x01;
    b[2] = 0x0d;
    b[3] = 0xb8;
    for (int i = 0; i < 8; ++i) b[8 + i] = static_cast<uint8_t>(bits >> (8 * (7 - i)));
    return net::IpAddress::from_bytes(net::IpFamily::V6, b);
  }
  return net::IpAddress::v4(static_cast<uint32_t>(bits));
}

inline rc::Gen<NextHop> gen_nexthop(bool v6) {
  return rc::gen::apply(
      [v6](bool gw, uint64_t bits, uint32_t ifindex, uint8_t hops) {
        NextHop nh;
        nh.has_gateway = gw;
        if (gw) nh.gateway = make_addr(v6, bits);
        nh.ifindex = ifindex;
        nh.hops = hops;
        return nh;
      },
      rc::gen::arbitrary<bool>(), rc::gen::arbitrary<uint64_t>(), rc::gen::arbitrary<uint32_t>(),
      rc::gen::arbitrary<uint8_t>());
}

inline rc::Gen<Route> gen_route() {
  return rc::gen::mapcat(rc::gen::arbitrary<bool>(), [](bool v6) {
    return rc::gen::apply(
        [v6](uint64_t bits, unsigned len, uint32_t table, uint32_t metric, uint8_t proto, uint8_t scope,
             uint8_t type, std::vector<NextHop> hops, uint32_t nhid) {
          Route r;
          r.dst = *net::Prefix::make(make_addr(v6, bits), len % (v6 ? 129 : 33));
          r.table = table;
          r.metric = metric;
          r.protocol = proto;
          r.scope = scope;
          r.type = type;
          r.nexthops = std::move(hops);  // one with a weight or neither part: RTA_MULTIPATH
          r.nhid = nhid % 3 == 0 ? 0 : nhid;  // RTA_NH_ID, beside next hops as the kernel reports them
          return r;
        },
        rc::gen::arbitrary<uint64_t>(), rc::gen::arbitrary<unsigned>(), rc::gen::arbitrary<uint32_t>(),
        rc::gen::arbitrary<uint32_t>(), rc::gen::arbitrary<uint8_t>(), rc::gen::arbitrary<uint8_t>(),
        rc::gen::arbitrary<uint8_t>(), rc::gen::container<std::vector<NextHop>>(gen_nexthop(v6)),
        rc::gen::arbitrary<uint32_t>());
  });
}

// A nexthop object: a gateway (or a link, or a blackhole) of a family, or
// a group of ids (family 0).
inline rc::Gen<NexthopObject> gen_nexthop_object() {
  return rc::gen::apply(
      [](int kind, bool v6, uint32_t id, uint8_t scope, uint8_t protocol, uint32_t flags, bool gw, uint64_t bits,
         uint32_t ifindex, std::vector<std::pair<uint32_t, uint8_t>> members) {
        NexthopObject o;
        o.id = id;
        o.scope = scope;
        o.protocol = protocol;
        o.flags = flags;
        if (kind == 0) {  // a group
          for (auto [m, w] : members) o.group.push_back(GroupMember{m, w});
        } else {
          o.family = v6 ? 10 : 2;
          if (kind == 1) {
            o.blackhole = true;
          } else {
            o.has_gateway = gw;
            if (gw) o.gateway = make_addr(v6, bits);
            o.ifindex = ifindex;
          }
        }
        return o;
      },
      rc::gen::inRange(0, 3), rc::gen::arbitrary<bool>(), rc::gen::arbitrary<uint32_t>(),
      rc::gen::arbitrary<uint8_t>(), rc::gen::arbitrary<uint8_t>(), rc::gen::arbitrary<uint32_t>(),
      rc::gen::arbitrary<bool>(), rc::gen::arbitrary<uint64_t>(), rc::gen::arbitrary<uint32_t>(),
      rc::gen::container<std::vector<std::pair<uint32_t, uint8_t>>>(
          rc::gen::pair(rc::gen::arbitrary<uint32_t>(), rc::gen::arbitrary<uint8_t>())));
}

}  // namespace petrel::fib::testing
