// Helpers shared by the table tests that build attribute sets by hand:
// interned sets that live as long as their holder, and an AS path of one
// sequence.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "codec/attribute_set.h"
#include "table/attrs.h"
#include "table/best_path.h"

namespace petrel::table::testing {

// Interned sets that live as long as the holder.
class Sets {
 public:
  Sets() = default;
  Sets(const Sets&) = delete;
  Sets& operator=(const Sets&) = delete;
  ~Sets() {
    for (Attrs* a : held_) interner_.release(a);
  }
  const Attrs* operator()(const codec::PathAttributes& pa) {
    Attrs* a = interner_.intern(codec::AttributeSet::from(pa));
    held_.push_back(a);
    return a;
  }

 private:
  Interner interner_;
  std::vector<Attrs*> held_;
};

inline codec::AsPath sequence(std::vector<uint32_t> asns) {
  return codec::AsPath{{codec::AsSegment{codec::SegmentType::kAsSequence, std::move(asns)}}};
}

// ORIGIN IGP, AS_PATH `path` (its first AS the neighbour), NEXT_HOP
// 192.0.2.1, then `edit`.
inline codec::PathAttributes attrs_of(codec::AsPath path,
                                      const std::function<void(codec::PathAttributes&)>& edit = {}) {
  codec::PathAttributes p;
  p.origin = codec::Origin::kIgp;
  p.as_path = std::move(path);
  p.next_hop = net::IpAddress::v4(0xC0000201);
  if (edit) edit(p);
  return p;
}

// A peer 10.0.0.<id> with BGP identifier id, external (AS 65001 + id)
// or internal (AS 65000).
inline PeerInfo peer_info(uint32_t id, bool internal = false) {
  PeerInfo p;
  p.address = net::IpAddress::v4(0x0A000000 + id);
  p.router_id = id;
  p.asn = internal ? 65000 : 65001 + id;
  p.internal = internal;
  return p;
}

}  // namespace petrel::table::testing
