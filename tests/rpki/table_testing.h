// A routing table's peer for the rpki tests and benchmarks that feed a
// table::Table (daemon_rpki_test, validation_import_bench).
#pragma once

#include <cstdint>

#include "table/table.h"

namespace petrel::rpki::testing {

// Adds a peer (10.0.0.1, router id 1, AS 64999) and returns its slot.
inline uint16_t add_peer(table::Table& t) {
  table::PeerInfo peer;
  peer.address = net::IpAddress::v4(0x0A000001);
  peer.router_id = 1;
  peer.asn = 64999;
  return *t.add_peer(peer);
}

}  // namespace petrel::rpki::testing
