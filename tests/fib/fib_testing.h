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
             uint8_t type, std::vector<NextHop> hops) {
          Route r;
          r.dst = *net::Prefix::make(make_addr(v6, bits), len % (v6 ? 129 : 33));
          r.table = table;
          r.metric = metric;
          r.protocol = proto;
          r.scope = scope;
          r.type = type;
          r.nexthops = std::move(hops);  // one with a weight or neither part: RTA_MULTIPATH
          return r;
        },
        rc::gen::arbitrary<uint64_t>(), rc::gen::arbitrary<unsigned>(), rc::gen::arbitrary<uint32_t>(),
        rc::gen::arbitrary<uint32_t>(), rc::gen::arbitrary<uint8_t>(), rc::gen::arbitrary<uint8_t>(),
        rc::gen::arbitrary<uint8_t>(), rc::gen::container<std::vector<NextHop>>(gen_nexthop(v6)));
  });
}

}  // namespace petrel::fib::testing
