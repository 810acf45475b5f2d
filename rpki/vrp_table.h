// The VRP table: RPKI origin validation of a route (RFC 6811 section 2).
//
// Built once from a list of VRPs and never changed after: when the data
// changes the daemon builds a new table and swaps a shared_ptr, so a
// lookup takes no lock.
//
// Per address family, the distinct VRP prefixes nest or are disjoint (they
// are prefixes). The table keeps them sorted, each with a link to the
// nearest shorter VRP prefix that covers it, and cuts the address space
// into intervals, each labelled with the longest VRP prefix containing it.
// A lookup finds the route address's interval (a direct index on the top
// 16 address bits, then a binary search in that bucket) and walks the
// chain of covering VRP prefixes no longer than the route: each such
// prefix covers the route, and one of its (origin AS, max length) entries
// may match it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "crates/net/ip.h"
#include "rpki/vrp.h"

namespace petrel::rpki {

namespace internal {

__extension__ typedef unsigned __int128 U128;

// One family's index; Key is uint32_t (IPv4) or U128 (IPv6).
template <typename Key>
struct FamilyIndex {
  // A VRP prefix. Its first (AS, max length) entry is inline: most
  // prefixes have one, and a lookup then reads no other array.
  struct Node {
    int32_t parent;       // nearest shorter VRP prefix covering this one, or -1
    uint32_t asn;         // first entry
    uint32_t more_first;  // further entries: more_[more_first, + more_count)
    uint32_t more_count;
    uint8_t max_len;      // first entry
    uint8_t len;
  };
  struct Entry {
    uint32_t asn;
    uint8_t max_len;
  };
  // An interval of the address space from `start` to the next start,
  // labelled with the longest VRP prefix containing it (or -1).
  struct Interval {
    Key start;
    int32_t node;
  };
  struct Raw {
    Key start;
    uint8_t len;
    uint8_t max_len;
    uint32_t asn;
  };

  std::vector<Interval> intervals;  // ascending starts
  std::vector<Node> nodes;
  std::vector<Entry> more;
  std::vector<uint32_t> bucket;  // (1 << 16) + 1 offsets into intervals

  void build(std::vector<Raw>& raw);
  [[nodiscard]] Validity lookup(Key addr, unsigned len, std::optional<uint32_t> origin) const;
  [[nodiscard]] size_t memory_bytes() const;
};

}  // namespace internal

class VrpTable {
 public:
  VrpTable() = default;

  // Duplicates in `vrps` count once. VRPs whose max length is shorter than
  // their prefix or longer than the family allows can match no route; they
  // still cover routes (RFC 6811 asks nothing else of them).
  static VrpTable build(std::span<const Vrp> vrps);

  // The validation state of `route` originated by `origin`; nullopt stands
  // for NONE (the AS_PATH ends in an AS_SET), which matches no VRP. A VRP
  // for AS 0 matches no route (RFC 6483 section 4, RFC 7607).
  [[nodiscard]] Validity validate(const net::Prefix& route, std::optional<uint32_t> origin) const;

  // Distinct VRPs held.
  [[nodiscard]] size_t size() const { return size_; }
  [[nodiscard]] size_t memory_bytes() const;

 private:
  internal::FamilyIndex<uint32_t> v4_;
  internal::FamilyIndex<internal::U128> v6_;
  size_t size_ = 0;
};

}  // namespace petrel::rpki
