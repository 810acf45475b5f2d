// UPDATE packing: RFC 4271 section 4.3, RFC 4760 sections 3-4, RFC 6793
// section 4.2.2, RFC 7606 section 5.1 (MP attribute first), RFC 7911,
// RFC 8654, RFC 8950, RFC 4724 section 2 (End-of-RIB).
#include "codec/update_builder.h"

#include "codec/attributes.h"
#include "codec/framer.h"

namespace petrel::codec {
namespace {

constexpr size_t kMpHeader = 4;  // flags, type, 2-octet length

void put_u16(std::span<std::byte> out, size_t at, size_t v) {
  out[at] = std::byte((v >> 8) & 0xff);
  out[at + 1] = std::byte(v & 0xff);
}

void put_header(std::span<std::byte> out, size_t len) {
  for (size_t i = 0; i < kMarkerLen; ++i) out[i] = std::byte{0xff};
  put_u16(out, kMarkerLen, len);
  out[kMarkerLen + 2] = std::byte{static_cast<uint8_t>(MessageType::kUpdate)};
}

// Packs prefixes from `next` into out[pos, pos+room); returns the new pos.
size_t pack(std::span<std::byte> out, size_t pos, size_t room, std::span<const NlriPrefix> p,
            size_t& next, bool add_path) {
  size_t end = pos + room;
  while (next < p.size()) {
    size_t sz = nlri_size(p[next], add_path);
    if (sz > end - pos) break;
    pos = encode_nlri_at(out, pos, p[next], add_path);
    ++next;
  }
  return pos;
}

// Room to reserve for a message: the most its prefixes could take, capped
// at the limit (zeroing 64 KiB per extended message would dominate).
size_t reserve_for(size_t max, size_t fixed, size_t remaining, net::IpFamily ip, bool add_path) {
  size_t per = (add_path ? 4u : 0u) + 1u + net::IpAddress::width(ip);
  size_t want = fixed + remaining * per;
  return want < max ? want : max;
}

}  // namespace

void UpdateBuilder::encode_attributes(const AttributeSet& attrs, bool classic_next_hop,
                                      std::vector<std::byte>& out) const {
  bytes::Writer w(out);
  const bool four = params_.four_octet_as;
  for (const RawAttribute& a : attrs.attributes()) {
    switch (a.type) {
      case attr_type::kMpReachNlri:
        break;
      case attr_type::kNextHop:
        if (classic_next_hop) write_attribute(w, a.flags, a.type, a.value);
        break;
      case attr_type::kAsPath: {
        if (four) {
          write_attribute(w, a.flags, a.type, a.value);
          break;
        }
        AsPath p = to_as_path(a.value, AsWidth::k4);
        encode_as_path(w, p, AsWidth::k2);
        if (needs_as4_path(p)) encode_as4_path(w, p);
        break;
      }
      case attr_type::kAggregator: {
        if (four) {
          write_attribute(w, a.flags, a.type, a.value);
          break;
        }
        auto g = decode_aggregator(a.value, true);
        if (!g) break;
        encode_aggregator(w, *g, false);
        if (g->asn > 0xffff) encode_as4_aggregator(w, *g);
        break;
      }
      default:
        write_attribute(w, a.flags, a.type, a.value);
        break;
    }
  }
}

Result<size_t, std::string_view> UpdateBuilder::build(Family f, const AttributeSet* attrs,
                                                      std::span<const NlriPrefix> announce,
                                                      std::span<const NlriPrefix> withdraw,
                                                      std::vector<std::byte>& out) const {
  const bool ap = params_.add_path_send.has(f);
  const size_t max = params_.max_message_len();
  const bool v4u = f == kIpv4Unicast;
  size_t messages = 0;

  // Withdrawals: the classic field for IPv4 unicast, MP_UNREACH_NLRI else.
  for (size_t next = 0; next < withdraw.size();) {
    const size_t first = next;
    size_t start = out.size();
    const size_t cap = reserve_for(max, kHeaderLen + 11, withdraw.size() - next, ip_family(f), ap);
    out.resize(start + cap);
    std::span<std::byte> m(out.data() + start, cap);
    size_t pos = kHeaderLen;
    size_t end;
    if (v4u) {
      end = pack(m, pos + 2, cap - pos - 4, withdraw, next, ap);
      put_u16(m, pos, end - pos - 2);
      put_u16(m, end, 0);
      end += 2;
    } else {
      put_u16(m, pos, 0);
      size_t attr_at = pos + 2;
      size_t mp = attr_at + 2;
      m[mp] = std::byte{attr_flag::kOptional | attr_flag::kExtendedLength};
      m[mp + 1] = std::byte{attr_type::kMpUnreachNlri};
      put_u16(m, mp + 4, f.afi);
      m[mp + 6] = std::byte{f.safi};
      end = pack(m, mp + 7, cap - (mp + 7), withdraw, next, ap);
      put_u16(m, mp + 2, end - mp - kMpHeader);
      put_u16(m, attr_at, end - mp);
    }
    put_header(m, end);
    out.resize(start + end);
    ++messages;
    if (next == first) return fail(std::string_view("a prefix does not fit in a message"));
  }
  if (announce.empty()) return messages;
  if (!attrs) return fail(std::string_view("announcements need an attribute set"));

  // Announcements: encode the attributes once, then fill messages.
  const bool classic = v4u && attrs->next_hop().has_value();
  const std::optional<NextHop>& mp_nh = attrs->mp_next_hop();
  if (!classic && !mp_nh) return fail(std::string_view("no next hop for this family"));
  if (!classic && v4u && mp_nh->global.is_v6() && !params_.extended_next_hop.has(f))
    return fail(std::string_view("IPv6 next hop for IPv4 without extended next hop"));
  if (!classic && !v4u && f.afi == 2 && !mp_nh->global.is_v6())
    return fail(std::string_view("IPv4 next hop for an IPv6 family"));
  std::vector<std::byte> block;
  encode_attributes(*attrs, classic, block);
  const size_t fixed = kHeaderLen + 4 + block.size();
  const size_t mp_fixed = classic ? 0 : kMpHeader + 3 + 1 + mp_nh->wire_size() + 1;
  if (fixed + mp_fixed >= max) return fail(std::string_view("attribute set too large for a message"));

  for (size_t next = 0; next < announce.size();) {
    size_t start = out.size();
    const size_t cap =
        reserve_for(max, fixed + mp_fixed, announce.size() - next, ip_family(f), ap);
    out.resize(start + cap);
    std::span<std::byte> m(out.data() + start, cap);
    size_t pos = kHeaderLen;
    put_u16(m, pos, 0);  // no withdrawn routes
    size_t attr_at = pos + 2;
    size_t end;
    if (classic) {
      put_u16(m, attr_at, block.size());
      std::copy(block.begin(), block.end(), m.begin() + static_cast<std::ptrdiff_t>(attr_at + 2));
      size_t at = attr_at + 2 + block.size();
      end = pack(m, at, cap - at, announce, next, ap);
      if (end == at) return fail(std::string_view("a prefix does not fit in a message"));
    } else {
      // MP_REACH_NLRI first (RFC 7606 section 5.1), then the others.
      size_t mp = attr_at + 2;
      m[mp] = std::byte{attr_flag::kOptional | attr_flag::kExtendedLength};
      m[mp + 1] = std::byte{attr_type::kMpReachNlri};
      put_u16(m, mp + 4, f.afi);
      m[mp + 6] = std::byte{f.safi};
      size_t at = mp + 7;
      m[at++] = std::byte{static_cast<uint8_t>(mp_nh->wire_size())};
      for (size_t i = 0; i < mp_nh->global.size(); ++i) m[at++] = std::byte{mp_nh->global.data()[i]};
      if (mp_nh->link_local)
        for (size_t i = 0; i < 16; ++i) m[at++] = std::byte{mp_nh->link_local->data()[i]};
      m[at++] = std::byte{0};
      size_t nlri_end = pack(m, at, cap - at - block.size(), announce, next, ap);
      if (nlri_end == at) return fail(std::string_view("a prefix does not fit in a message"));
      put_u16(m, mp + 2, nlri_end - mp - kMpHeader);
      std::copy(block.begin(), block.end(), m.begin() + static_cast<std::ptrdiff_t>(nlri_end));
      end = nlri_end + block.size();
      put_u16(m, attr_at, end - attr_at - 2);
    }
    put_header(m, end);
    out.resize(start + end);
    ++messages;
  }
  return messages;
}

void UpdateBuilder::end_of_rib(Family f, std::vector<std::byte>& out) {
  bytes::Writer w(out);
  size_t start = begin_message(w, MessageType::kUpdate);
  w.u16(0);
  if (f == kIpv4Unicast) {
    w.u16(0);
  } else {
    w.u16(6);
    w.u8(attr_flag::kOptional);
    w.u8(attr_type::kMpUnreachNlri);
    w.u8(3);
    w.u16(f.afi);
    w.u8(f.safi);
  }
  finish_message(w, start);
}

}  // namespace petrel::codec
