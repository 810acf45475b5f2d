// Synthetic VRPs and routes for the VRP table's benchmarks (vrp_bench,
// tests/rpki/validation_import_bench): a table shaped like today's RPKI,
// four in five IPv4, mostly /24 and /48, some nesting, one in five with
// max length > length. Deterministic for a given generator state.
#pragma once

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "crates/net/ip.h"
#include "rpki/vrp.h"

namespace petrel::rpki::bench {

using net::IpAddress;
using net::IpFamily;
using net::Prefix;

// A random unicast-looking prefix: IPv6 in 2000::/3, IPv4 first octet 1-223.
inline Prefix random_prefix(std::mt19937_64& rng, bool v6, unsigned len) {
  uint8_t b[16] = {};
  uint64_t hi = rng();
  uint64_t lo = rng();
  for (int i = 0; i < 8; ++i) {
    b[i] = static_cast<uint8_t>(hi >> (56 - 8 * i));
    b[8 + i] = static_cast<uint8_t>(lo >> (56 - 8 * i));
  }
  if (v6) {
    b[0] = static_cast<uint8_t>(0x20 | (b[0] & 0x1f));  // 2000::/3
  } else {
    b[0] = static_cast<uint8_t>(1 + b[0] % 223);  // unicast-ish
  }
  return *Prefix::make(IpAddress::from_bytes(v6 ? IpFamily::V6 : IpFamily::V4, b), len);
}

inline std::vector<Vrp> synth(size_t count, std::mt19937_64& rng) {
  std::vector<Vrp> out;
  out.reserve(count);
  std::uniform_int_distribution<int> pct(0, 99);
  while (out.size() < count) {
    bool v6 = pct(rng) < 20;
    int r = pct(rng);
    unsigned len;
    if (v6) {
      len = r < 55 ? 48 : r < 75 ? 32 : r < 90 ? 44 : 29 + static_cast<unsigned>(rng() % 36);
    } else {
      len = r < 60 ? 24 : r < 75 ? 22 : r < 85 ? 23 : 12 + static_cast<unsigned>(rng() % 13);
    }
    Prefix p = random_prefix(rng, v6, len);
    uint32_t asn = 1 + static_cast<uint32_t>(rng() % 400000);
    unsigned maxbits = v6 ? 128u : 32u;
    unsigned max_len = pct(rng) < 80 ? len : std::min(maxbits, len + static_cast<unsigned>(rng() % 9));
    out.push_back({p, static_cast<uint8_t>(max_len), asn});
    // Some nesting: more specifics of the same block, other origins.
    if (pct(rng) < 15 && len + 4 <= (v6 ? 64u : 32u)) {
      for (int k = 0; k < 3 && out.size() < count; ++k) {
        IpAddress a = p.addr();
        auto bytes = a.bytes();
        unsigned bit = len + static_cast<unsigned>(rng() % 4);
        bytes[bit / 8] = static_cast<uint8_t>(bytes[bit / 8] | (0x80u >> (bit % 8)));
        Prefix sub = *Prefix::make(IpAddress::from_bytes(p.family(), bytes.data()), len + 4);
        out.push_back({sub, static_cast<uint8_t>(len + 4), 1 + static_cast<uint32_t>(rng() % 400000)});
      }
    }
  }
  return out;
}

// A route to look up and its origin AS.
struct Route {
  Prefix route;
  uint32_t origin;
};

// n routes: half under a VRP drawn from `vrps` (its length up to 2 more;
// seven in ten with the VRP's AS, else a random one), half a random /24
// or /48 (one in five IPv6) with a random origin.
inline std::vector<Route> synth_routes(const std::vector<Vrp>& vrps, size_t n, std::mt19937_64& rng) {
  std::vector<Route> queries;
  queries.reserve(n);
  std::uniform_int_distribution<int> pct(0, 99);
  while (queries.size() < n) {
    if (pct(rng) < 50) {
      const Vrp& v = vrps[rng() % vrps.size()];
      unsigned maxbits = v.prefix.family() == IpFamily::V4 ? 32u : 128u;
      unsigned len = std::min(maxbits, v.prefix.len() + static_cast<unsigned>(rng() % 3));
      uint32_t origin = pct(rng) < 70 ? v.asn : 1 + static_cast<uint32_t>(rng() % 400000);
      queries.push_back({*Prefix::make(v.prefix.addr(), len), origin});
    } else {
      bool v6 = pct(rng) < 20;
      queries.push_back({random_prefix(rng, v6, v6 ? 48 : 24), 1 + static_cast<uint32_t>(rng() % 400000)});
    }
  }
  return queries;
}

}  // namespace petrel::rpki::bench
