// MP_REACH_NLRI / MP_UNREACH_NLRI: RFC 4760 sections 3-5 and 7, RFC 2545
// section 3 (IPv6 link-local next hop), RFC 8950 section 3 (IPv6 next hop
// for IPv4 NLRI), RFC 7911 (path ids), RFC 7606 sections 5.3 and 7.11.
#include "codec/mp_nlri.h"

#include "codec/attributes.h"

namespace petrel::codec {
namespace {

net::IpAddress v6_at(bytes::Span nh, size_t at) {
  uint8_t b[16];
  for (size_t i = 0; i < 16; ++i) b[i] = std::to_integer<uint8_t>(nh[at + i]);
  return net::IpAddress::from_bytes(net::IpFamily::V6, b);
}

}  // namespace

Result<NextHop, std::string_view> decode_mp_next_hop(Family f, bytes::Span nh,
                                                     bool extended_next_hop) {
  NextHop out;
  const bool v4_nlri = f.afi == 1;
  if (v4_nlri && nh.size() == 4) {
    uint8_t b[4];
    for (size_t i = 0; i < 4; ++i) b[i] = std::to_integer<uint8_t>(nh[i]);
    out.global = net::IpAddress::from_bytes(net::IpFamily::V4, b);
    return out;
  }
  if (v4_nlri && !extended_next_hop)
    return fail(std::string_view("IPv6 next hop for IPv4 NLRI without extended next hop"));
  if (nh.size() == 16) {
    out.global = v6_at(nh, 0);
    return out;
  }
  if (nh.size() == 32) {
    out.global = v6_at(nh, 0);
    out.link_local = v6_at(nh, 16);
    return out;
  }
  return fail(std::string_view("next hop length does not fit the family"));
}

void encode_next_hop_field(bytes::Writer& w, const NextHop& nh) {
  w.u8(static_cast<uint8_t>(nh.wire_size()));
  w.raw(nh.global.data(), nh.global.size());
  if (nh.link_local) w.raw(nh.link_local->data(), 16);
}

Result<MpReach, MpError> decode_mp_reach(bytes::Span v, FamilySet add_path,
                                         FamilySet extended_next_hop) {
  bytes::Reader r(v);
  auto afi = r.u16();
  auto safi = r.u8();
  if (!afi || !safi) return fail(MpError{"MP_REACH_NLRI too short to name its family"});
  MpReach m;
  m.family = Family{*afi, *safi};
  MpError err{"", true, m.family};
  auto nh_len = r.u8();
  if (!nh_len) {
    err.reason = "MP_REACH_NLRI has no next hop length";
    return fail(err);
  }
  auto nh = r.take(*nh_len);
  auto reserved = r.u8();  // RFC 4760: ignored on receipt
  if (!nh || !reserved) {
    err.reason = "MP_REACH_NLRI next hop overruns the attribute";
    return fail(err);
  }
  m.next_hop_bytes = *nh;
  m.supported = known_index(m.family) >= 0;
  if (!m.supported) return m;  // named and skipped
  auto hop = decode_mp_next_hop(m.family, *nh, extended_next_hop.has(m.family));
  if (!hop) {
    err.reason = hop.error();
    return fail(err);
  }
  m.next_hop = *hop;
  NlriFormat fmt{ip_family(m.family), add_path.has(m.family)};
  bytes::Span field = r.rest();
  if (auto ok = validate_nlri(field, fmt); !ok) {
    err.reason = ok.error();
    return fail(err);
  }
  m.nlri = NlriRange(m.family, field, fmt);
  return m;
}

Result<MpUnreach, MpError> decode_mp_unreach(bytes::Span v, FamilySet add_path) {
  bytes::Reader r(v);
  auto afi = r.u16();
  auto safi = r.u8();
  if (!afi || !safi) return fail(MpError{"MP_UNREACH_NLRI too short to name its family"});
  MpUnreach m;
  m.family = Family{*afi, *safi};
  m.supported = known_index(m.family) >= 0;
  if (!m.supported) return m;
  NlriFormat fmt{ip_family(m.family), add_path.has(m.family)};
  bytes::Span field = r.rest();
  if (auto ok = validate_nlri(field, fmt); !ok) return fail(MpError{ok.error(), true, m.family});
  m.withdrawn = NlriRange(m.family, field, fmt);
  return m;
}

void encode_mp_reach(bytes::Writer& w, Family f, const NextHop& nh,
                     std::span<const NlriPrefix> prefixes, bool add_path) {
  size_t at = begin_attribute(w, attr_flag::kOptional, attr_type::kMpReachNlri);
  w.u16(f.afi);
  w.u8(f.safi);
  encode_next_hop_field(w, nh);
  w.u8(0);
  for (const auto& p : prefixes) encode_nlri(w, p, add_path);
  end_attribute(w, at);
}

void encode_mp_unreach(bytes::Writer& w, Family f, std::span<const NlriPrefix> prefixes,
                       bool add_path) {
  size_t at = begin_attribute(w, attr_flag::kOptional, attr_type::kMpUnreachNlri);
  w.u16(f.afi);
  w.u8(f.safi);
  for (const auto& p : prefixes) encode_nlri(w, p, add_path);
  end_attribute(w, at);
}

}  // namespace petrel::codec
