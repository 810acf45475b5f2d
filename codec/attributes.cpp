// The attribute descriptor table (RFC 4271 section 5, RFC 7606 sections 3
// and 7) and the raw attribute walk (RFC 4271 section 4.3).
#include "codec/attributes.h"

#include <array>

namespace petrel::codec {
namespace {

using attr_flag::kOptional;
using attr_flag::kTransitive;
constexpr uint8_t kWellKnown = kTransitive;
constexpr uint8_t kOptTrans = kOptional | kTransitive;
constexpr uint8_t kOptNonTrans = kOptional;
constexpr ErrorAction kDiscard = ErrorAction::kAttributeDiscard;
constexpr ErrorAction kWithdraw = ErrorAction::kTreatAsWithdraw;
constexpr ErrorAction kDisable = ErrorAction::kAfiSafiDisable;

// What each recognised attribute must look like and what a malformation
// costs. Flag conflicts cost treat-as-withdraw (RFC 7606 section 3 (c))
// unless the attribute's own RFC says otherwise (RFC 6793 section 6 for
// AS4_*); internal_only attributes from an external peer are discarded
// whatever their shape (RFC 7606 7.5, 7.9, 7.10).
constexpr std::array<AttrDescriptor, 18> kTable = {{
    // type, name, flags, length rule, length, cost, flags cost, internal only, mandatory
    {attr_type::kOrigin, "ORIGIN", kWellKnown, LengthRule::kFixed, 1, kWithdraw, kWithdraw, false, true},  // 7.1
    {attr_type::kAsPath, "AS_PATH", kWellKnown, LengthRule::kAny, 0, kWithdraw, kWithdraw, false, true},  // 7.2
    {attr_type::kNextHop, "NEXT_HOP", kWellKnown, LengthRule::kFixed, 4, kWithdraw, kWithdraw, false, true},  // 7.3
    {attr_type::kMultiExitDisc, "MULTI_EXIT_DISC", kOptNonTrans, LengthRule::kFixed, 4, kWithdraw, kWithdraw, false, false},  // 7.4
    {attr_type::kLocalPref, "LOCAL_PREF", kWellKnown, LengthRule::kFixed, 4, kWithdraw, kWithdraw, true, false},  // 7.5
    {attr_type::kAtomicAggregate, "ATOMIC_AGGREGATE", kWellKnown, LengthRule::kFixed, 0, kDiscard, kWithdraw, false, false},  // 7.6
    {attr_type::kAggregator, "AGGREGATOR", kOptTrans, LengthRule::kAggregator, 0, kDiscard, kWithdraw, false, false},  // 7.7
    {attr_type::kCommunities, "COMMUNITIES", kOptTrans, LengthRule::kMultiple, 4, kWithdraw, kWithdraw, false, false},  // 7.8
    {attr_type::kOriginatorId, "ORIGINATOR_ID", kOptNonTrans, LengthRule::kFixed, 4, kWithdraw, kWithdraw, true, false},  // 7.9
    {attr_type::kClusterList, "CLUSTER_LIST", kOptNonTrans, LengthRule::kMultiple, 4, kWithdraw, kWithdraw, true, false},  // 7.10
    {attr_type::kMpReachNlri, "MP_REACH_NLRI", kOptNonTrans, LengthRule::kAny, 0, kDisable, kWithdraw, false, false},  // 7.11
    {attr_type::kMpUnreachNlri, "MP_UNREACH_NLRI", kOptNonTrans, LengthRule::kAny, 0, kDisable, kWithdraw, false, false},  // 7.12
    {attr_type::kExtendedCommunities, "EXTENDED_COMMUNITIES", kOptTrans, LengthRule::kMultiple, 8, kWithdraw, kWithdraw, false, false},  // 7.14
    {attr_type::kAs4Path, "AS4_PATH", kOptTrans, LengthRule::kAny, 0, kDiscard, kDiscard, false, false},  // RFC 6793 6
    {attr_type::kAs4Aggregator, "AS4_AGGREGATOR", kOptTrans, LengthRule::kFixed, 8, kDiscard, kDiscard, false, false},  // RFC 6793 6
    {attr_type::kIpv6ExtendedCommunities, "IPV6_EXTENDED_COMMUNITIES", kOptTrans, LengthRule::kMultiple, 20, kWithdraw, kWithdraw, false, false},  // 7.15
    {attr_type::kLargeCommunity, "LARGE_COMMUNITY", kOptTrans, LengthRule::kMultiple, 12, kWithdraw, kWithdraw, false, false},  // RFC 8092 6
    {attr_type::kOtc, "OTC", kOptTrans, LengthRule::kFixed, 4, kWithdraw, kWithdraw, false, false},  // RFC 9234 5
}};

constexpr std::array<int8_t, 256> make_index() {
  std::array<int8_t, 256> idx{};
  for (auto& i : idx) i = -1;
  for (size_t i = 0; i < kTable.size(); ++i) idx[kTable[i].type] = static_cast<int8_t>(i);
  return idx;
}
constexpr std::array<int8_t, 256> kIndex = make_index();

}  // namespace

const AttrDescriptor* find_descriptor(uint8_t type) {
  int8_t i = kIndex[type];
  return i < 0 ? nullptr : &kTable[static_cast<size_t>(i)];
}

std::string_view attr_name(uint8_t type) {
  const AttrDescriptor* d = find_descriptor(type);
  return d ? d->name : "unknown";
}

std::optional<RawAttribute> read_attribute(bytes::Reader& r, AttrReadError& err) {
  bytes::Span start = r.peek_rest();
  bool ext = r.remaining() >= 1 && (std::to_integer<uint8_t>(start[0]) & attr_flag::kExtendedLength);
  if (r.remaining() < (ext ? 4u : 3u)) {
    err.short_header = true;
    return std::nullopt;
  }
  RawAttribute a;
  a.flags = *r.u8();
  a.type = *r.u8();
  size_t len = ext ? size_t{*r.u16()} : size_t{*r.u8()};
  size_t header = ext ? 4 : 3;
  auto v = r.take(len);
  if (!v) {
    err.short_header = false;
    return std::nullopt;
  }
  a.value = *v;
  a.whole = start.first(header + len);
  return a;
}

void AttributeIterator::advance() {
  AttrReadError err;
  auto a = read_attribute(r_, err);
  if (!a) {
    done_ = true;
    return;
  }
  cur_ = *a;
  done_ = false;
}

size_t begin_attribute(bytes::Writer& w, uint8_t flags, uint8_t type) {
  w.u8(static_cast<uint8_t>(flags & ~attr_flag::kExtendedLength));
  w.u8(type);
  w.u8(0);
  return w.size();
}

bool end_attribute(bytes::Writer& w, size_t value_start) {
  size_t len = w.size() - value_start;
  auto& buf = w.buffer();
  if (len <= 255) {
    buf[value_start - 1] = std::byte(len);
    return true;
  }
  if (len > kMaxAttributeValue) {
    buf.resize(value_start - 3);  // the header too
    return false;
  }
  buf[value_start - 3] |= std::byte{attr_flag::kExtendedLength};
  buf.insert(buf.begin() + static_cast<std::ptrdiff_t>(value_start - 1), std::byte(len >> 8));
  buf[value_start] = std::byte(len & 0xff);
  return true;
}

bool write_attribute(bytes::Writer& w, uint8_t flags, uint8_t type, bytes::Span value) {
  if (value.size() > kMaxAttributeValue) return false;
  bool ext = value.size() > 255;
  w.u8(static_cast<uint8_t>(ext ? (flags | attr_flag::kExtendedLength)
                                : (flags & ~attr_flag::kExtendedLength)));
  w.u8(type);
  if (ext) {
    w.u16(static_cast<uint16_t>(value.size()));
  } else {
    w.u8(static_cast<uint8_t>(value.size()));
  }
  w.bytes(value);
  return true;
}

bool length_ok(const AttrDescriptor& d, size_t len, bool four_octet_as) {
  switch (d.rule) {
    case LengthRule::kAny:
      return true;
    case LengthRule::kFixed:
      return len == d.length;
    case LengthRule::kMultiple:
      return len != 0 && len % d.length == 0;
    case LengthRule::kAggregator:
      return len == (four_octet_as ? 8u : 6u);
  }
  return false;
}

}  // namespace petrel::codec
