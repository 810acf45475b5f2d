// A synthetic table (tools/synth) as one neighbour sends it: UPDATE
// messages back to back, built before any clock starts. Used by the load
// generator (petrel-load) and the benchmarks that feed a table as a session
// would.
//
// The neighbour's own AS replaces the first AS of every path (the table's
// paths start with a made-up neighbour AS; a daemon that enforces the
// first AS, as FRR does by default, would refuse them otherwise), and every
// route's next hop is the given address (IPv4 routes; IPv6 routes get the
// IPv6 next hop, which must then be set).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "codec/attribute_set.h"
#include "codec/types.h"
#include "crates/bytes/bytes.h"
#include "crates/net/ip.h"
#include "crates/result/result.h"
#include "tools/synth/synth.h"

namespace petrel::bench {

struct FeedOptions {
  std::optional<uint32_t> neighbour_as;   // replaces each path's first AS
  net::IpAddress next_hop_v4;             // for IPv4 routes
  std::optional<net::IpAddress> next_hop_v6;  // for IPv6 routes (required if the table has any)
  bool ipv4 = true, ipv6 = true;          // which of the table's families to send
  bool end_of_rib = true;                 // End-of-RIB per family after the routes
};

struct Feed {
  std::vector<std::byte> wire;    // whole UPDATE messages, back to back
  std::vector<uint32_t> offsets;  // where each message starts in wire
  uint64_t v4_routes = 0, v6_routes = 0;
  size_t sets = 0;                // distinct attribute sets sent

  [[nodiscard]] size_t messages() const { return offsets.size(); }
  // The i-th message after its 19-octet header (UpdateView::decode's input).
  [[nodiscard]] bytes::Span body(size_t i) const;
};

// The attribute set of one synthetic entry with the given next hop (IPv4:
// NEXT_HOP; IPv6: an IPv6 unicast MP_REACH_NLRI next hop).
codec::AttributeSet to_attribute_set(const synth::Attributes& a, const net::IpAddress& next_hop,
                                     std::optional<uint32_t> neighbour_as = std::nullopt);

// Packs the table into UPDATEs for a session with `params` (4096 octets a
// message unless extended messages are on). Fails when the builder does
// (an attribute set too large for one message) or a family lacks its
// next hop.
Result<Feed, const char*> build_feed(const synth::Table& t, const FeedOptions& o,
                                     const codec::SessionParams& params);

}  // namespace petrel::bench
