// OPEN: RFC 4271 sections 4.2 and 6.2, RFC 5492 section 4, RFC 6793,
// RFC 6286 section 2.2, RFC 7607 section 2 (AS 0), RFC 9072.
#include "codec/open.h"

#include <algorithm>

#include "codec/framer.h"

namespace petrel::codec {

namespace {

constexpr uint8_t kParamCapabilities = 2;   // RFC 5492 section 4
constexpr uint8_t kParamExtendedLen = 255;  // RFC 9072 section 2

NotifyError open_error_of(uint8_t subcode) {
  return NotifyError::make(ErrorCode::kOpenMessage, subcode);
}

// Walks the optional parameters (RFC 4271 section 4.2; RFC 9072 section 2
// when `extended`: 2-octet parameter lengths) and decodes the capabilities.
Result<void, NotifyError> decode_params(bytes::Reader r, bool extended, Capabilities& caps) {
  while (!r.empty()) {
    auto type = r.u8();
    std::optional<uint16_t> len;
    if (extended) {
      len = r.u16();
    } else if (auto l8 = r.u8()) {
      len = *l8;
    }
    if (!type || !len || r.remaining() < *len)
      return fail(open_error_of(open_error::kUnspecific));
    bytes::Span value = r.take(*len).value_or(bytes::Span{});
    if (*type != kParamCapabilities)
      return fail(open_error_of(open_error::kUnsupportedOptionalParameter));
    auto res = decode_capabilities(value, caps);
    if (!res) return fail(res.error());
  }
  return {};
}

}  // namespace

Open Open::make(uint32_t as, uint16_t hold_time, uint32_t bgp_id, Capabilities caps) {
  Open o;
  o.my_as = as > 0xffff ? kAsTrans : static_cast<uint16_t>(as);
  o.hold_time = hold_time;
  o.bgp_id = bgp_id;
  o.caps = std::move(caps);
  o.caps.four_octet_as = as;
  return o;
}

Result<Open, NotifyError> decode_open(bytes::Span body) {
  bytes::Reader r(body);
  Open o;
  // Section 6.2: the version comes first; the rest of an OPEN of another
  // version may not even have this layout.
  auto version = r.u8();
  if (version && *version != kBgpVersion)
    return fail(NotifyError::with_u16(ErrorCode::kOpenMessage, open_error::kUnsupportedVersion,
                                      kBgpVersion));
  auto my_as = r.u16();
  auto hold = r.u16();
  auto id = r.u32();
  auto opt_len = r.u8();
  if (!version || !my_as || !hold || !id || !opt_len) {
    auto len = static_cast<uint16_t>(std::min<size_t>(body.size() + kHeaderLen, 0xffff));
    return fail(NotifyError::with_u16(ErrorCode::kMessageHeader, header_error::kBadMessageLength, len));
  }
  o.version = *version;
  o.my_as = *my_as;
  o.hold_time = *hold;
  o.bgp_id = *id;

  // Section 6.2: a hold time of 1 or 2 seconds is refused.
  if (o.hold_time == 1 || o.hold_time == 2)
    return fail(open_error_of(open_error::kUnacceptableHoldTime));
  // RFC 6286 section 2.2: any non-zero 4-octet value is a valid identifier.
  if (o.bgp_id == 0) return fail(open_error_of(open_error::kBadBgpIdentifier));

  // RFC 9072 section 2: a non-zero length followed by parameter type 255
  // announces the extended form; the one-octet length is then ignored.
  bytes::Reader params;
  if (*opt_len != 0 && r.remaining() >= 1 && r.peek_rest()[0] == std::byte{kParamExtendedLen}) {
    (void)r.u8();
    auto ext_len = r.u16();
    if (!ext_len || *ext_len != r.remaining()) return fail(open_error_of(open_error::kUnspecific));
    o.extended_params = true;
    params = bytes::Reader(r.rest());
  } else {
    if (*opt_len != r.remaining()) return fail(open_error_of(open_error::kUnspecific));
    params = bytes::Reader(r.rest());
  }
  auto res = decode_params(params, o.extended_params, o.caps);
  if (!res) return fail(res.error());

  // RFC 7607 section 2: AS 0, in My AS or in the 4-octet AS capability.
  if (o.my_as == 0 || o.as() == 0) return fail(open_error_of(open_error::kBadPeerAs));
  return o;
}

void encode_open(const Open& open, std::vector<std::byte>& out) {
  std::vector<std::byte> caps;
  bytes::Writer cw(caps);
  encode_capabilities(open.caps, cw);

  bytes::Writer w(out);
  size_t start = begin_message(w, MessageType::kOpen);
  w.u8(open.version);
  w.u16(open.my_as);
  w.u16(open.hold_time);
  w.u32(open.bgp_id);
  // RFC 9072 section 2: the extended form when forced or when the
  // parameters do not fit a one-octet length.
  bool extended = open.extended_params || caps.size() + 2 > 255;
  if (extended) {
    w.u8(kParamExtendedLen);
    w.u8(kParamExtendedLen);
    size_t len_at = w.reserve(2);
    size_t params_start = w.size();
    if (!caps.empty()) {
      w.u8(kParamCapabilities);
      w.u16(static_cast<uint16_t>(caps.size()));
      w.bytes(caps);
    }
    w.patch_u16(len_at, static_cast<uint16_t>(w.size() - params_start));
  } else if (caps.empty()) {
    w.u8(0);
  } else {
    w.u8(static_cast<uint8_t>(caps.size() + 2));
    w.u8(kParamCapabilities);
    w.u8(static_cast<uint8_t>(caps.size()));
    w.bytes(caps);
  }
  finish_message(w, start);
}

}  // namespace petrel::codec
