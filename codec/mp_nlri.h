// MP_REACH_NLRI and MP_UNREACH_NLRI (RFC 4760 sections 3 and 4) and their
// next hops: IPv4, IPv6 global, IPv6 global plus link-local (RFC 2545
// section 3), and an IPv6 next hop for IPv4 NLRI (RFC 8950 section 3).
//
// RFC 7606 section 7.11: a next-hop length that does not fit the family
// leaves the NLRI unlocatable, so it costs AFI/SAFI disable; a field that
// cannot even name its family costs a session reset. A family Petrel does
// not decode is named and skipped (its NLRI is not read).
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "codec/nlri.h"
#include "codec/types.h"
#include "crates/bytes/bytes.h"
#include "crates/net/ip.h"
#include "crates/result/result.h"

namespace petrel::codec {

struct NextHop {
  net::IpAddress global;                     // IPv4 or IPv6
  std::optional<net::IpAddress> link_local;  // IPv6 link-local, RFC 2545
  friend bool operator==(const NextHop&, const NextHop&) = default;
  [[nodiscard]] size_t wire_size() const { return link_local ? 32 : global.size(); }
};

// What went wrong in an MP attribute, and whether its family was readable.
struct MpError {
  std::string_view reason;
  bool family_known = false;  // false: the attribute cannot name its family
  Family family{};
};

struct MpReach {
  Family family{};
  bool supported = false;   // one of kKnownFamilyList; else NLRI left unread
  NextHop next_hop;         // set when supported
  bytes::Span next_hop_bytes;
  NlriRange nlri;           // empty when unsupported
};

struct MpUnreach {
  Family family{};
  bool supported = false;
  NlriRange withdrawn;
};

// Decodes and validates the attribute value, including every prefix.
// add_path: the families whose NLRI carry path ids (RFC 7911).
// extended_next_hop: the families allowed IPv6 next hops (RFC 8950).
Result<MpReach, MpError> decode_mp_reach(bytes::Span v, FamilySet add_path,
                                         FamilySet extended_next_hop);
Result<MpUnreach, MpError> decode_mp_unreach(bytes::Span v, FamilySet add_path);

// Next hops alone (also used for the canonical attribute set).
Result<NextHop, std::string_view> decode_mp_next_hop(Family f, bytes::Span nh,
                                                     bool extended_next_hop);
void encode_next_hop_field(bytes::Writer& w, const NextHop& nh);

// Whole attributes. The prefixes are written with path ids when add_path.
void encode_mp_reach(bytes::Writer& w, Family f, const NextHop& nh,
                     std::span<const NlriPrefix> prefixes, bool add_path);
void encode_mp_unreach(bytes::Writer& w, Family f, std::span<const NlriPrefix> prefixes,
                       bool add_path);

}  // namespace petrel::codec
