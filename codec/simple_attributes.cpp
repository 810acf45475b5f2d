// Fixed-shape path attributes: RFC 4271 section 5.1, RFC 4456 section 8,
// RFC 6793 section 3, RFC 9234 section 5; errors per RFC 7606 section 7
// and RFC 7607 (AS 0 in AGGREGATOR).
#include "codec/simple_attributes.h"

#include "codec/attributes.h"

namespace petrel::codec {
namespace {

constexpr uint8_t kWellKnown = attr_flag::kTransitive;
constexpr uint8_t kOptTrans = attr_flag::kOptional | attr_flag::kTransitive;
constexpr uint8_t kOptNonTrans = attr_flag::kOptional;

void write_u32_attr(bytes::Writer& w, uint8_t flags, uint8_t type, uint32_t v) {
  w.u8(flags);
  w.u8(type);
  w.u8(4);
  w.u32(v);
}

}  // namespace

uint32_t load_u32(bytes::Span v, size_t index) {
  size_t i = index * 4;
  return (std::to_integer<uint32_t>(v[i]) << 24) | (std::to_integer<uint32_t>(v[i + 1]) << 16) |
         (std::to_integer<uint32_t>(v[i + 2]) << 8) | std::to_integer<uint32_t>(v[i + 3]);
}

std::string_view origin_name(Origin o) {
  switch (o) {
    case Origin::kIgp:
      return "IGP";
    case Origin::kEgp:
      return "EGP";
    case Origin::kIncomplete:
      return "INCOMPLETE";
  }
  return "unknown";
}

Result<Origin, AttrError> decode_origin(bytes::Span v) {
  if (v.size() != 1) return fail(AttrError{"ORIGIN length is not 1"});
  auto o = std::to_integer<uint8_t>(v[0]);
  if (o > 2) return fail(AttrError{"ORIGIN value is undefined"});
  return static_cast<Origin>(o);
}

void encode_origin(bytes::Writer& w, Origin o) {
  w.u8(kWellKnown);
  w.u8(attr_type::kOrigin);
  w.u8(1);
  w.u8(static_cast<uint8_t>(o));
}

Result<net::IpAddress, AttrError> decode_next_hop(bytes::Span v) {
  if (v.size() != 4) return fail(AttrError{"NEXT_HOP length is not 4"});
  return net::IpAddress::v4(load_u32(v, 0));
}

void encode_next_hop(bytes::Writer& w, const net::IpAddress& a) {
  write_u32_attr(w, kWellKnown, attr_type::kNextHop, a.v4_value());
}

Result<uint32_t, AttrError> decode_u32_attr(bytes::Span v) {
  if (v.size() != 4) return fail(AttrError{"length is not 4"});
  return load_u32(v, 0);
}
Result<uint32_t, AttrError> decode_med(bytes::Span v) {
  if (v.size() != 4) return fail(AttrError{"MULTI_EXIT_DISC length is not 4"});
  return load_u32(v, 0);
}
Result<uint32_t, AttrError> decode_local_pref(bytes::Span v) {
  if (v.size() != 4) return fail(AttrError{"LOCAL_PREF length is not 4"});
  return load_u32(v, 0);
}
Result<uint32_t, AttrError> decode_originator_id(bytes::Span v) {
  if (v.size() != 4) return fail(AttrError{"ORIGINATOR_ID length is not 4"});
  return load_u32(v, 0);
}
Result<uint32_t, AttrError> decode_otc(bytes::Span v) {
  if (v.size() != 4) return fail(AttrError{"OTC length is not 4"});
  return load_u32(v, 0);
}
void encode_med(bytes::Writer& w, uint32_t v) {
  write_u32_attr(w, kOptNonTrans, attr_type::kMultiExitDisc, v);
}
void encode_local_pref(bytes::Writer& w, uint32_t v) {
  write_u32_attr(w, kWellKnown, attr_type::kLocalPref, v);
}
void encode_originator_id(bytes::Writer& w, uint32_t v) {
  write_u32_attr(w, kOptNonTrans, attr_type::kOriginatorId, v);
}
void encode_otc(bytes::Writer& w, uint32_t v) { write_u32_attr(w, kOptTrans, attr_type::kOtc, v); }

Result<void, AttrError> decode_atomic_aggregate(bytes::Span v) {
  if (!v.empty()) return fail(AttrError{"ATOMIC_AGGREGATE length is not 0"});
  return {};
}
void encode_atomic_aggregate(bytes::Writer& w) {
  w.u8(kWellKnown);
  w.u8(attr_type::kAtomicAggregate);
  w.u8(0);
}

Result<Aggregator, AttrError> decode_aggregator(bytes::Span v, bool four_octet_as) {
  size_t want = four_octet_as ? 8 : 6;
  if (v.size() != want) return fail(AttrError{"AGGREGATOR length does not match the AS width"});
  bytes::Reader r(v);
  Aggregator a;
  a.asn = four_octet_as ? *r.u32() : uint32_t{*r.u16()};
  a.address = net::IpAddress::v4(*r.u32());
  if (a.asn == 0) return fail(AttrError{"AGGREGATOR AS is 0 (RFC 7607)"});
  return a;
}

Result<Aggregator, AttrError> decode_as4_aggregator(bytes::Span v) {
  if (v.size() != 8) return fail(AttrError{"AS4_AGGREGATOR length is not 8"});
  bytes::Reader r(v);
  Aggregator a;
  a.asn = *r.u32();
  a.address = net::IpAddress::v4(*r.u32());
  if (a.asn == 0) return fail(AttrError{"AS4_AGGREGATOR AS is 0 (RFC 7607)"});
  return a;
}

void encode_aggregator(bytes::Writer& w, const Aggregator& a, bool four_octet_as) {
  w.u8(kOptTrans);
  w.u8(attr_type::kAggregator);
  if (four_octet_as) {
    w.u8(8);
    w.u32(a.asn);
  } else {
    w.u8(6);
    w.u16(a.asn > 0xffff ? kAsTrans : static_cast<uint16_t>(a.asn));
  }
  w.u32(a.address.v4_value());
}

void encode_as4_aggregator(bytes::Writer& w, const Aggregator& a) {
  w.u8(kOptTrans);
  w.u8(attr_type::kAs4Aggregator);
  w.u8(8);
  w.u32(a.asn);
  w.u32(a.address.v4_value());
}

Result<void, AttrError> check_cluster_list(bytes::Span v) {
  if (v.empty() || v.size() % 4 != 0)
    return fail(AttrError{"CLUSTER_LIST length is not a non-zero multiple of 4"});
  return {};
}

Result<std::vector<uint32_t>, AttrError> decode_cluster_list(bytes::Span v) {
  if (auto c = check_cluster_list(v); !c) return fail(c.error());
  std::vector<uint32_t> ids(v.size() / 4);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = load_u32(v, i);
  return ids;
}

void encode_cluster_list(bytes::Writer& w, std::span<const uint32_t> ids) {
  if (ids.empty()) return;
  size_t at = begin_attribute(w, kOptNonTrans, attr_type::kClusterList);
  for (uint32_t id : ids) w.u32(id);
  end_attribute(w, at);
}

}  // namespace petrel::codec
