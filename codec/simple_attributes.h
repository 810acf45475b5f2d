// The fixed-shape path attributes.
//
// ORIGIN, NEXT_HOP, MULTI_EXIT_DISC, LOCAL_PREF, ATOMIC_AGGREGATE,
// AGGREGATOR (RFC 4271 section 5.1; 2- or 4-octet AS per RFC 6793),
// AS4_AGGREGATOR (RFC 6793), ORIGINATOR_ID and CLUSTER_LIST (RFC 4456),
// OTC (RFC 9234 section 5). Each decoder takes the attribute's value and
// returns the value or an AttrError (RFC 7606 sections 7.1, 7.3-7.7, 7.9,
// 7.10; RFC 7607 for AS 0). Each encoder writes the whole attribute.
#pragma once

#include <cstdint>
#include <vector>

#include "codec/rfc7606.h"
#include "crates/bytes/bytes.h"
#include "crates/net/ip.h"
#include "crates/result/result.h"

namespace petrel::codec {

enum class Origin : uint8_t { kIgp = 0, kEgp = 1, kIncomplete = 2 };
std::string_view origin_name(Origin o);

Result<Origin, AttrError> decode_origin(bytes::Span v);
void encode_origin(bytes::Writer& w, Origin o);

// NEXT_HOP: an IPv4 address (RFC 4271 section 5.1.3).
Result<net::IpAddress, AttrError> decode_next_hop(bytes::Span v);
void encode_next_hop(bytes::Writer& w, const net::IpAddress& a);

// Any four-octet value: MULTI_EXIT_DISC, LOCAL_PREF, ORIGINATOR_ID, OTC.
Result<uint32_t, AttrError> decode_u32_attr(bytes::Span v);
Result<uint32_t, AttrError> decode_med(bytes::Span v);
Result<uint32_t, AttrError> decode_local_pref(bytes::Span v);
Result<uint32_t, AttrError> decode_originator_id(bytes::Span v);
Result<uint32_t, AttrError> decode_otc(bytes::Span v);
void encode_med(bytes::Writer& w, uint32_t v);
void encode_local_pref(bytes::Writer& w, uint32_t v);
void encode_originator_id(bytes::Writer& w, uint32_t v);
void encode_otc(bytes::Writer& w, uint32_t v);

Result<void, AttrError> decode_atomic_aggregate(bytes::Span v);
void encode_atomic_aggregate(bytes::Writer& w);

// AGGREGATOR (2- or 4-octet AS) and AS4_AGGREGATOR (always 4).
struct Aggregator {
  uint32_t asn = 0;
  net::IpAddress address;  // IPv4
  friend bool operator==(const Aggregator&, const Aggregator&) = default;
};
Result<Aggregator, AttrError> decode_aggregator(bytes::Span v, bool four_octet_as);
Result<Aggregator, AttrError> decode_as4_aggregator(bytes::Span v);
// On a 2-octet session an AS above 65535 is written as AS_TRANS (the
// caller adds AS4_AGGREGATOR).
void encode_aggregator(bytes::Writer& w, const Aggregator& a, bool four_octet_as);
void encode_as4_aggregator(bytes::Writer& w, const Aggregator& a);

// CLUSTER_LIST: cluster ids, as uint32 values (RFC 4456 section 8).
Result<std::vector<uint32_t>, AttrError> decode_cluster_list(bytes::Span v);
Result<void, AttrError> check_cluster_list(bytes::Span v);
void encode_cluster_list(bytes::Writer& w, std::span<const uint32_t> ids);

// Reads n big-endian uint32 values from v (whose size is a multiple of 4).
uint32_t load_u32(bytes::Span v, size_t index);

}  // namespace petrel::codec
