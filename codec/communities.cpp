// COMMUNITIES (RFC 1997), EXTENDED_COMMUNITIES (RFC 4360), IPv6 Address
// Specific Extended Community (RFC 5701), LARGE_COMMUNITY (RFC 8092);
// lengths per RFC 7606 sections 7.8, 7.14, 7.15 and RFC 8092 section 6.
#include "codec/communities.h"

#include "codec/attributes.h"
#include "codec/simple_attributes.h"

namespace petrel::codec {
namespace {

constexpr uint8_t kOptTrans = attr_flag::kOptional | attr_flag::kTransitive;

bool nonzero_multiple(bytes::Span v, size_t n) { return !v.empty() && v.size() % n == 0; }

}  // namespace

Result<void, AttrError> check_communities(bytes::Span v) {
  if (!nonzero_multiple(v, 4)) return fail(AttrError{"COMMUNITIES length is not a non-zero multiple of 4"});
  return {};
}
Result<void, AttrError> check_ext_communities(bytes::Span v) {
  if (!nonzero_multiple(v, 8))
    return fail(AttrError{"EXTENDED_COMMUNITIES length is not a non-zero multiple of 8"});
  return {};
}
Result<void, AttrError> check_ipv6_ext_communities(bytes::Span v) {
  if (!nonzero_multiple(v, 20))
    return fail(AttrError{"IPV6_EXTENDED_COMMUNITIES length is not a non-zero multiple of 20"});
  return {};
}
Result<void, AttrError> check_large_communities(bytes::Span v) {
  if (!nonzero_multiple(v, 12))
    return fail(AttrError{"LARGE_COMMUNITY length is not a non-zero multiple of 12"});
  return {};
}

Result<std::vector<uint32_t>, AttrError> decode_communities(bytes::Span v) {
  if (auto c = check_communities(v); !c) return fail(c.error());
  std::vector<uint32_t> out(v.size() / 4);
  for (size_t i = 0; i < out.size(); ++i) out[i] = load_u32(v, i);
  return out;
}

Result<std::vector<ExtCommunity>, AttrError> decode_ext_communities(bytes::Span v) {
  if (auto c = check_ext_communities(v); !c) return fail(c.error());
  std::vector<ExtCommunity> out(v.size() / 8);
  for (size_t i = 0; i < out.size(); ++i)
    out[i].value = (uint64_t{load_u32(v, 2 * i)} << 32) | load_u32(v, 2 * i + 1);
  return out;
}

Result<std::vector<Ipv6ExtCommunity>, AttrError> decode_ipv6_ext_communities(bytes::Span v) {
  if (auto c = check_ipv6_ext_communities(v); !c) return fail(c.error());
  std::vector<Ipv6ExtCommunity> out(v.size() / 20);
  bytes::Reader r(v);
  for (auto& c : out) {
    c.type = *r.u8();
    c.subtype = *r.u8();
    (void)r.copy_to(c.global.data(), 16);
    c.local = *r.u16();
  }
  return out;
}

Result<std::vector<LargeCommunity>, AttrError> decode_large_communities(bytes::Span v) {
  if (auto c = check_large_communities(v); !c) return fail(c.error());
  std::vector<LargeCommunity> out(v.size() / 12);
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = LargeCommunity{load_u32(v, 3 * i), load_u32(v, 3 * i + 1), load_u32(v, 3 * i + 2)};
  return out;
}

void encode_communities(bytes::Writer& w, std::span<const uint32_t> c) {
  if (c.empty()) return;
  size_t at = begin_attribute(w, kOptTrans, attr_type::kCommunities);
  for (uint32_t x : c) w.u32(x);
  end_attribute(w, at);
}

void encode_ext_communities(bytes::Writer& w, std::span<const ExtCommunity> c) {
  if (c.empty()) return;
  size_t at = begin_attribute(w, kOptTrans, attr_type::kExtendedCommunities);
  for (ExtCommunity x : c) w.u64(x.value);
  end_attribute(w, at);
}

void encode_ipv6_ext_communities(bytes::Writer& w, std::span<const Ipv6ExtCommunity> c) {
  if (c.empty()) return;
  size_t at = begin_attribute(w, kOptTrans, attr_type::kIpv6ExtendedCommunities);
  for (const auto& x : c) {
    w.u8(x.type);
    w.u8(x.subtype);
    w.raw(x.global.data(), x.global.size());
    w.u16(x.local);
  }
  end_attribute(w, at);
}

void encode_large_communities(bytes::Writer& w, std::span<const LargeCommunity> c) {
  if (c.empty()) return;
  size_t at = begin_attribute(w, kOptTrans, attr_type::kLargeCommunity);
  for (const auto& x : c) {
    w.u32(x.global);
    w.u32(x.local1);
    w.u32(x.local2);
  }
  end_attribute(w, at);
}

bool has_community(bytes::Span validated, uint32_t c) {
  for (size_t i = 0; i < validated.size() / 4; ++i)
    if (load_u32(validated, i) == c) return true;
  return false;
}

}  // namespace petrel::codec
