// The attribute set of an UPDATE's announced routes, in canonical wire
// form, with the fields best-path selection needs extracted once.
//
// Canonical form: attributes sorted by type code, each once, flags with
// the Extended Length bit only when the value exceeds 255 octets; AS_PATH
// (and AGGREGATOR) always 4-octet, AS4_PATH / AS4_AGGREGATOR folded in
// (RFC 6793 section 4.2.3); MP_REACH_NLRI reduced to AFI, SAFI and next hop
// with no NLRI (the RFC 6396 section 4.3.4 convention); MP_UNREACH_NLRI and
// discarded attributes left out; unrecognised optional transitive
// attributes kept with the Partial bit set (RFC 4271 section 5). Two
// UPDATEs with the same attributes give the same bytes, so the table can
// intern a set by its wire bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "codec/as_path.h"
#include "codec/attributes.h"
#include "codec/communities.h"
#include "codec/mp_nlri.h"
#include "codec/simple_attributes.h"
#include "codec/types.h"
#include "crates/bytes/bytes.h"
#include "crates/net/ip.h"
#include "crates/result/result.h"

namespace petrel::codec {

class UpdateView;

struct UnknownAttribute {
  uint8_t flags = 0;
  uint8_t type = 0;
  std::vector<std::byte> value;
  friend bool operator==(const UnknownAttribute&, const UnknownAttribute&) = default;
};

// Every attribute as an owned value: for tools, tests and exporters that
// build a set. Lists are empty when the attribute is absent.
struct PathAttributes {
  std::optional<Origin> origin;
  std::optional<AsPath> as_path;  // 4-octet ASNs
  std::optional<net::IpAddress> next_hop;
  std::optional<uint32_t> med;
  std::optional<uint32_t> local_pref;
  bool atomic_aggregate = false;
  std::optional<Aggregator> aggregator;
  std::vector<uint32_t> communities;
  std::optional<uint32_t> originator_id;
  std::vector<uint32_t> cluster_list;
  std::optional<Family> mp_family;     // with mp_next_hop: MP_REACH_NLRI's next hop
  std::optional<NextHop> mp_next_hop;
  std::vector<ExtCommunity> ext_communities;
  std::vector<Ipv6ExtCommunity> ipv6_ext_communities;
  std::vector<LargeCommunity> large_communities;
  std::optional<uint32_t> otc;
  std::vector<UnknownAttribute> unknown;  // optional transitive, carried on
  // Recognised optional transitive attributes that arrived with the
  // Partial bit set (RFC 4271 section 5): bit n for type code n.
  uint64_t partial = 0;
  friend bool operator==(const PathAttributes&, const PathAttributes&) = default;
};

class AttributeSet {
 public:
  AttributeSet() = default;

  // From owned values (the exporter's and the tests' way in).
  static AttributeSet from(const PathAttributes& a);
  // From canonical bytes (as wire() returned them). Checks them again.
  static Result<AttributeSet, std::string_view> from_canonical(bytes::Span wire);

  [[nodiscard]] PathAttributes decode() const;

  // The canonical attribute bytes: the table's interning key.
  [[nodiscard]] bytes::Span wire() const { return wire_; }

  // RFC 4271 9.1.2.2 inputs.
  [[nodiscard]] std::optional<Origin> origin() const { return origin_; }
  [[nodiscard]] uint32_t as_path_length() const { return path_.length; }
  [[nodiscard]] uint32_t first_as() const { return path_.first_as; }   // neighbour AS
  [[nodiscard]] uint32_t origin_as() const { return path_.origin_as; }
  [[nodiscard]] bytes::Span as_path() const;  // 4-octet AS_PATH value
  [[nodiscard]] AsSegmentRange as_path_segments() const { return {as_path(), AsWidth::k4}; }
  [[nodiscard]] std::optional<uint32_t> med() const { return med_; }
  [[nodiscard]] std::optional<uint32_t> local_pref() const { return local_pref_; }
  [[nodiscard]] std::optional<net::IpAddress> next_hop() const { return next_hop_; }
  [[nodiscard]] std::optional<Family> mp_family() const { return mp_family_; }
  [[nodiscard]] const std::optional<NextHop>& mp_next_hop() const { return mp_next_hop_; }
  [[nodiscard]] std::optional<uint32_t> originator_id() const { return originator_id_; }
  [[nodiscard]] uint32_t cluster_list_length() const { return cluster_list_len_; }
  [[nodiscard]] bool atomic_aggregate() const { return atomic_aggregate_; }
  [[nodiscard]] std::optional<uint32_t> otc() const { return otc_; }
  // COMMUNITIES value (a multiple of 4 octets), empty if absent.
  [[nodiscard]] bytes::Span communities() const;
  [[nodiscard]] bool has_community(uint32_t c) const;
  [[nodiscard]] AttributeRange attributes() const { return AttributeRange(wire_); }

  friend bool operator==(const AttributeSet& a, const AttributeSet& b) { return a.wire_ == b.wire_; }

 private:
  bool extract();  // fills the fields from wire_; false if it is not canonical-valid

  std::vector<std::byte> wire_;
  AsPathSummary path_{};
  uint32_t as_path_at_ = 0, as_path_len_ = 0;
  uint32_t communities_at_ = 0, communities_len_ = 0;
  std::optional<Origin> origin_;
  std::optional<uint32_t> med_, local_pref_, originator_id_, otc_;
  std::optional<net::IpAddress> next_hop_;
  std::optional<Family> mp_family_;
  std::optional<NextHop> mp_next_hop_;
  uint32_t cluster_list_len_ = 0;
  bool atomic_aggregate_ = false;

  friend class UpdateView;  // builds the canonical form from a message
};

}  // namespace petrel::codec
