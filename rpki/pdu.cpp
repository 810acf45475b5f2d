// RTR PDUs as bytes and back: RFC 8210 section 5, RFC 6810 section 5,
// draft-ietf-sidrops-8210bis section 5 (the ASPA PDU of version 2).
#include "rpki/pdu.h"

#include <algorithm>
#include <cassert>
#include <type_traits>

#include "rpki/internal/overloaded.h"

namespace petrel::rpki {
namespace {

using internal::Overloaded;

constexpr uint8_t kAnnounceFlag = 0x01;

// The fixed length of a PDU type in a version, or 0 where the length
// varies (Router Key, Error Report).
uint32_t fixed_length(uint8_t version, PduType t) {
  switch (t) {
    case PduType::kSerialNotify:
    case PduType::kSerialQuery: return 12;
    case PduType::kResetQuery:
    case PduType::kCacheResponse:
    case PduType::kCacheReset: return 8;
    case PduType::kIpv4Prefix: return 20;
    case PduType::kIpv6Prefix: return 32;
    case PduType::kEndOfData: return version == kVersion0 ? 12 : 24;
    case PduType::kRouterKey:
    case PduType::kErrorReport:
    case PduType::kAspa: return 0;
  }
  return 0;
}

uint32_t minimum_length(PduType t) {
  switch (t) {
    case PduType::kRouterKey: return kHeaderLen + 20 + 4;
    case PduType::kErrorReport: return kHeaderLen + 4 + 4;
    case PduType::kAspa: return kHeaderLen + 4;
    case PduType::kSerialNotify:
    case PduType::kSerialQuery:
    case PduType::kResetQuery:
    case PduType::kCacheResponse:
    case PduType::kIpv4Prefix:
    case PduType::kIpv6Prefix:
    case PduType::kEndOfData:
    case PduType::kCacheReset: break;
  }
  return kHeaderLen;
}

std::optional<PduType> known_type(uint8_t version, uint8_t t) {
  switch (t) {
    case 0: case 1: case 2: case 3: case 4: case 6: case 7: case 8: case 10:
      return static_cast<PduType>(t);
    case 9:
      if (version >= kVersion1) return PduType::kRouterKey;
      return std::nullopt;
    case 11:
      if (version >= kVersion2) return PduType::kAspa;
      return std::nullopt;
    default: return std::nullopt;
  }
}

DecodeError corrupt(std::string_view what) { return {ErrorCode::kCorruptData, what}; }

Result<PrefixPdu, DecodeError> decode_prefix(bytes::Reader& r, net::IpFamily family) {
  uint8_t flags = *r.u8();
  uint8_t len = *r.u8();
  uint8_t max_len = *r.u8();
  (void)*r.u8();  // zero
  uint8_t addr[16] = {};
  if (!r.copy_to(addr, net::IpAddress::width(family))) return fail(corrupt("prefix PDU too short"));
  uint32_t asn = *r.u32();
  unsigned bits = net::IpAddress::max_len(family);
  if (len > bits || max_len > bits) return fail(corrupt("prefix length beyond the address family"));
  if (max_len < len) return fail(corrupt("max length shorter than the prefix"));
  auto p = net::Prefix::make(net::IpAddress::from_bytes(family, addr), len);
  return PrefixPdu{(flags & kAnnounceFlag) != 0, Vrp{*p, max_len, asn}};
}

// Is this ASPA PDU in 8210bis-10's layout (see pdu.h)? `body` is what
// follows the header.
bool is_legacy_aspa(const Header& h, bytes::Span body) {
  if (h.field != 0 || h.length < kHeaderLen + 8) return false;
  bytes::Reader r(body);
  uint32_t w = *r.u32();
  uint32_t flags = w >> 24, afi = (w >> 16) & 0xff, count = w & 0xffff;
  return flags <= 1 && afi <= 1 && h.length == kHeaderLen + 8 + 4 * count;
}

Result<AspaPdu, DecodeError> decode_aspa(const Header& h, bytes::Reader& r) {
  AspaPdu a;
  size_t count = 0;
  if (is_legacy_aspa(h, r.peek_rest())) {
    a.announce = (*r.u8() & kAnnounceFlag) != 0;
    a.legacy_afi = *r.u8();
    count = *r.u16();
  } else {
    a.announce = ((h.field >> 8) & kAnnounceFlag) != 0;
    if ((h.length - kHeaderLen - 4) % 4 != 0) return fail(corrupt("ASPA PDU length not a whole number of ASes"));
    count = (h.length - kHeaderLen - 4) / 4;
  }
  a.aspa.customer = *r.u32();
  if (!a.announce) return a;  // a withdrawal names the customer; providers are not kept
  a.aspa.providers.reserve(count);
  for (size_t i = 0; i < count; ++i) a.aspa.providers.push_back(*r.u32());
  std::sort(a.aspa.providers.begin(), a.aspa.providers.end());
  a.aspa.providers.erase(std::unique(a.aspa.providers.begin(), a.aspa.providers.end()), a.aspa.providers.end());
  return a;
}

}  // namespace

std::string_view pdu_type_name(PduType t) {
  switch (t) {
    case PduType::kSerialNotify: return "Serial Notify";
    case PduType::kSerialQuery: return "Serial Query";
    case PduType::kResetQuery: return "Reset Query";
    case PduType::kCacheResponse: return "Cache Response";
    case PduType::kIpv4Prefix: return "IPv4 Prefix";
    case PduType::kIpv6Prefix: return "IPv6 Prefix";
    case PduType::kEndOfData: return "End of Data";
    case PduType::kCacheReset: return "Cache Reset";
    case PduType::kRouterKey: return "Router Key";
    case PduType::kErrorReport: return "Error Report";
    case PduType::kAspa: return "ASPA";
  }
  return "unknown";
}

std::string_view error_code_name(ErrorCode c) {
  switch (c) {
    case ErrorCode::kCorruptData: return "Corrupt Data";
    case ErrorCode::kInternalError: return "Internal Error";
    case ErrorCode::kNoDataAvailable: return "No Data Available";
    case ErrorCode::kInvalidRequest: return "Invalid Request";
    case ErrorCode::kUnsupportedProtocolVersion: return "Unsupported Protocol Version";
    case ErrorCode::kUnsupportedPduType: return "Unsupported PDU Type";
    case ErrorCode::kWithdrawalOfUnknownRecord: return "Withdrawal of Unknown Record";
    case ErrorCode::kDuplicateAnnouncement: return "Duplicate Announcement Received";
    case ErrorCode::kUnexpectedProtocolVersion: return "Unexpected Protocol Version";
  }
  return "unknown";
}

bool is_fatal(ErrorCode c) { return c != ErrorCode::kNoDataAvailable; }

Intervals clamp(Intervals i) {
  i.refresh = std::clamp<uint32_t>(i.refresh, 1, 86400);
  i.retry = std::clamp<uint32_t>(i.retry, 1, 7200);
  i.expire = std::clamp<uint32_t>(i.expire, 600, 172800);
  return i;
}

Result<Header, DecodeError> check_header(bytes::Span header8) {
  bytes::Reader r(header8);
  auto version = r.u8();
  auto type = r.u8();
  auto field = r.u16();
  auto length = r.u32();
  if (!length) return fail(corrupt("header shorter than 8 bytes"));
  if (*version > kMaxVersion) {
    return fail(DecodeError{ErrorCode::kUnsupportedProtocolVersion, "unsupported protocol version"});
  }
  auto t = known_type(*version, *type);
  if (!t) return fail(DecodeError{ErrorCode::kUnsupportedPduType, "unsupported PDU type"});
  uint32_t fixed = fixed_length(*version, *t);
  if (fixed != 0 && *length != fixed) return fail(corrupt("length wrong for the PDU type"));
  if (fixed == 0 && (*length < minimum_length(*t) || *length > kMaxPduLen)) {
    return fail(corrupt("length out of range for the PDU type"));
  }
  return Header{*version, *t, *field, *length};
}

Result<Message, DecodeError> decode(bytes::Span whole) {
  auto h = check_header(whole.first(std::min(whole.size(), kHeaderLen)));
  if (!h) return fail(h.error());
  if (whole.size() != h->length) return fail(corrupt("PDU length differs from its header"));
  bytes::Reader r(whole.subspan(kHeaderLen));
  Message m;
  m.version = h->version;
  switch (h->type) {
    case PduType::kSerialNotify: m.pdu = SerialNotify{h->field, *r.u32()}; break;
    case PduType::kSerialQuery: m.pdu = SerialQuery{h->field, *r.u32()}; break;
    case PduType::kResetQuery: m.pdu = ResetQuery{}; break;
    case PduType::kCacheResponse: m.pdu = CacheResponse{h->field}; break;
    case PduType::kCacheReset: m.pdu = CacheReset{}; break;
    case PduType::kIpv4Prefix:
    case PduType::kIpv6Prefix: {
      auto p = decode_prefix(r, h->type == PduType::kIpv4Prefix ? net::IpFamily::V4 : net::IpFamily::V6);
      if (!p) return fail(p.error());
      m.pdu = *p;
      break;
    }
    case PduType::kEndOfData: {
      EndOfData e{h->field, *r.u32(), std::nullopt};
      if (h->version >= kVersion1) e.intervals = Intervals{*r.u32(), *r.u32(), *r.u32()};
      m.pdu = e;
      break;
    }
    case PduType::kRouterKey: {
      RouterKeyPdu k;
      k.announce = ((h->field >> 8) & kAnnounceFlag) != 0;
      if (!r.copy_to(k.key.ski.data(), k.key.ski.size())) return fail(corrupt("router key too short"));
      k.key.asn = *r.u32();
      bytes::Span spki = r.rest();
      if (spki.size() > kMaxSpkiLen) return fail(corrupt("router key SPKI longer than 1024 octets (P-256 keys: 91)"));
      k.key.spki.resize(spki.size());
      std::transform(spki.begin(), spki.end(), k.key.spki.begin(),
                     [](std::byte b) { return std::to_integer<uint8_t>(b); });
      m.pdu = std::move(k);
      break;
    }
    case PduType::kAspa: {
      auto a = decode_aspa(*h, r);
      if (!a) return fail(a.error());
      m.pdu = std::move(*a);
      break;
    }
    case PduType::kErrorReport: {
      ErrorReport e;
      e.code = static_cast<ErrorCode>(h->field);
      auto pdu_len = r.u32();
      if (!pdu_len || *pdu_len > r.remaining()) return fail(corrupt("encapsulated PDU overruns the report"));
      auto pdu = r.take(*pdu_len);
      e.pdu.assign(pdu->begin(), pdu->end());
      auto text_len = r.u32();
      if (!text_len || *text_len != r.remaining()) return fail(corrupt("error text length does not fit the report"));
      e.text = std::string(bytes::as_chars(r.rest()));
      m.pdu = std::move(e);
      break;
    }
  }
  return m;
}

void encode(uint8_t version, const Pdu& pdu, std::vector<std::byte>& out) {
  bytes::Writer w(out);
  size_t start = w.size();
  auto header = [&](PduType t, uint16_t field) {
    w.u8(version);
    w.u8(static_cast<uint8_t>(t));
    w.u16(field);
    w.u32(0);  // patched below
  };
  std::visit(Overloaded{
                 [&](const SerialNotify& p) { header(PduType::kSerialNotify, p.session_id); w.u32(p.serial); },
                 [&](const SerialQuery& p) { header(PduType::kSerialQuery, p.session_id); w.u32(p.serial); },
                 [&](const ResetQuery&) { header(PduType::kResetQuery, 0); },
                 [&](const CacheResponse& p) { header(PduType::kCacheResponse, p.session_id); },
                 [&](const CacheReset&) { header(PduType::kCacheReset, 0); },
                 [&](const PrefixPdu& p) {
                   bool v4 = p.vrp.prefix.family() == net::IpFamily::V4;
                   header(v4 ? PduType::kIpv4Prefix : PduType::kIpv6Prefix, 0);
                   w.u8(p.announce ? kAnnounceFlag : 0);
                   w.u8(p.vrp.prefix.len());
                   w.u8(p.vrp.max_len);
                   w.u8(0);
                   w.raw(p.vrp.prefix.addr().data(), p.vrp.prefix.addr().size());
                   w.u32(p.vrp.asn);
                 },
                 [&](const EndOfData& p) {
                   header(PduType::kEndOfData, p.session_id);
                   w.u32(p.serial);
                   if (version >= kVersion1) {
                     Intervals i = p.intervals.value_or(Intervals{});
                     w.u32(i.refresh);
                     w.u32(i.retry);
                     w.u32(i.expire);
                   }
                 },
                 [&](const RouterKeyPdu& p) {
                   assert(version >= kVersion1);
                   header(PduType::kRouterKey, static_cast<uint16_t>((p.announce ? kAnnounceFlag : 0) << 8));
                   w.raw(p.key.ski.data(), p.key.ski.size());
                   w.u32(p.key.asn);
                   w.raw(p.key.spki.data(), p.key.spki.size());
                 },
                 [&](const AspaPdu& p) {
                   assert(version >= kVersion2);
                   const auto& providers = p.announce ? p.aspa.providers : std::vector<uint32_t>{};
                   if (p.legacy_afi) {
                     header(PduType::kAspa, 0);
                     w.u8(p.announce ? kAnnounceFlag : 0);
                     w.u8(*p.legacy_afi);
                     w.u16(static_cast<uint16_t>(providers.size()));
                   } else {
                     header(PduType::kAspa, static_cast<uint16_t>((p.announce ? kAnnounceFlag : 0) << 8));
                   }
                   w.u32(p.aspa.customer);
                   for (uint32_t asn : providers) w.u32(asn);
                 },
                 [&](const ErrorReport& p) {
                   header(PduType::kErrorReport, static_cast<uint16_t>(p.code));
                   w.u32(static_cast<uint32_t>(p.pdu.size()));
                   w.bytes(p.pdu);
                   w.u32(static_cast<uint32_t>(p.text.size()));
                   w.raw(p.text.data(), p.text.size());
                 },
             },
             pdu);
  auto len = static_cast<uint32_t>(w.size() - start);
  w.patch_u16(start + 4, static_cast<uint16_t>(len >> 16));
  w.patch_u16(start + 6, static_cast<uint16_t>(len & 0xffff));
}

std::vector<std::byte> encode(uint8_t version, const Pdu& pdu) {
  std::vector<std::byte> out;
  encode(version, pdu, out);
  return out;
}

}  // namespace petrel::rpki
