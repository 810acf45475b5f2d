// Fuzz target: the VRP table (rpki/vrp_table.h) against RFC 6811's plain
// definition. The bytes make VRPs and routes around two shared base
// addresses (one a family), so that prefixes nest, share starts and pile
// into one index bucket and its overflow lines; every route's state from
// validate() and from validate_batch() (as given and sorted) must be the
// one a scan of every VRP gives. A disagreement aborts.
//
// Layout: 4 bytes IPv4 base, 8 bytes IPv6 base (its top half), then
// records of 8 bytes: flags (bit 0 IPv6, bit 1 a route rather than a VRP,
// bits 2-4 how far the address is shifted left before it is XORed into
// the base, bit 5 NONE for a route), prefix length, max length (any
// value: past the family's allows every length), AS (2 bytes, small so
// that origins collide; AS 0 among them), address bits (3 bytes).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <vector>

#include "crates/net/ip.h"
#include "fuzz/fuzz.h"
#include "rpki/vrp_table.h"

namespace {

using petrel::net::IpAddress;
using petrel::net::IpFamily;
using petrel::net::Prefix;
using petrel::rpki::RouteOrigin;
using petrel::rpki::Validity;
using petrel::rpki::Vrp;

constexpr size_t kRecord = 8;
constexpr size_t kMaxRecords = 512;  // the plain scan is routes x VRPs

uint32_t be32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  constexpr size_t kHeader = 12;
  if (size < kHeader) return 0;
  const uint32_t base4 = be32(data);
  const uint64_t base6 = (uint64_t{be32(data + 4)} << 32) | be32(data + 8);
  std::vector<Vrp> vrps;
  std::vector<RouteOrigin> routes;
  const size_t records = std::min((size - kHeader) / kRecord, kMaxRecords);
  for (size_t i = 0; i < records; ++i) {
    const uint8_t* r = data + kHeader + i * kRecord;
    const bool v6 = (r[0] & 1) != 0;
    const bool is_route = (r[0] & 2) != 0;
    const unsigned shift = ((r[0] >> 2) & 7) * 4;  // 0 to 28 bits
    const bool none = (r[0] & 0x20) != 0;
    const unsigned max = v6 ? 128 : 32;
    const unsigned len = r[1] % (max + 1);
    const uint32_t as = (uint32_t{r[3]} << 8 | r[4]) % 8;  // few origins, AS 0 among them
    const uint32_t bits = uint32_t{r[5]} << 16 | uint32_t{r[6]} << 8 | r[7];
    IpAddress addr;
    if (v6) {
      uint8_t b[16] = {};
      const uint64_t hi = base6 ^ (uint64_t{bits} << (shift + 8));
      for (int k = 0; k < 8; ++k) b[k] = static_cast<uint8_t>(hi >> (56 - 8 * k));
      b[15] = r[7];  // something past /64 too
      addr = IpAddress::from_bytes(IpFamily::V6, b);
    } else {
      addr = IpAddress::v4(base4 ^ (bits << shift));
    }
    const Prefix p = *Prefix::make(addr, len);
    if (is_route) {
      routes.push_back({p, none ? std::nullopt : std::optional<uint32_t>(as)});
    } else {
      vrps.push_back({p, r[2], as});
    }
  }
  const auto table = petrel::rpki::VrpTable::build(vrps);
  std::vector<Validity> given(routes.size());
  std::vector<Validity> sorted(routes.size());
  table.validate_batch(routes, given, petrel::rpki::BatchOrder::kAsGiven);
  table.validate_batch(routes, sorted, petrel::rpki::BatchOrder::kSorted);
  for (size_t i = 0; i < routes.size(); ++i) {
    const Validity want = petrel::rpki::validate_by_scan(vrps, routes[i].route, routes[i].origin);
    if (table.validate(routes[i].route, routes[i].origin) != want || given[i] != want || sorted[i] != want)
      std::abort();
  }
  return 0;
}
