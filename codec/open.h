// The OPEN message: decode and encode, with its capabilities.
//
// RFC 4271 sections 4.2 and 6.2 (format and the errors the codec can see),
// RFC 5492 section 4 (Capabilities optional parameter), RFC 6793 (AS_TRANS
// in My Autonomous System), RFC 6286 section 2.2 (a BGP Identifier of 0 is
// bad), RFC 9072 (extended optional parameters length).
//
// Checks that need the configuration (the peer's AS, our own identifier,
// required capabilities, roles) belong to fsm/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "codec/capabilities.h"
#include "codec/types.h"
#include "crates/bytes/bytes.h"
#include "crates/result/result.h"

namespace petrel::codec {

inline constexpr uint8_t kBgpVersion = 4;

struct Open {
  uint8_t version = kBgpVersion;
  uint16_t my_as = 0;      // the 2-octet field: AS_TRANS for a 4-octet AS
  uint16_t hold_time = 0;  // seconds: 0, or 3 and more
  uint32_t bgp_id = 0;
  Capabilities caps;
  // RFC 9072: the optional parameters used the extended length form. The
  // decoder reports it; the encoder uses the form when this is set or when
  // the parameters do not fit in 255 octets.
  bool extended_params = false;

  friend bool operator==(const Open&, const Open&) = default;

  // The speaker's AS: the 4-octet AS capability's value if present, else
  // My Autonomous System (RFC 6793 section 4.1).
  [[nodiscard]] uint32_t as() const { return caps.four_octet_as ? *caps.four_octet_as : my_as; }

  // An OPEN for `as` (any width): My AS is the AS, or AS_TRANS when it needs
  // 4 octets, and the 4-octet AS capability carries the AS (RFC 6793
  // section 3: a speaker that supports 4-octet ASes always sends it).
  static Open make(uint32_t as, uint16_t hold_time, uint32_t bgp_id, Capabilities caps);
};

// Decodes an OPEN body (the bytes after the 19-byte header). Errors are the
// NOTIFICATION to send (RFC 4271 section 6.2); their data views into body.
//  - version other than 4: Unsupported Version Number, data = 2-octet 4
//  - hold time 1 or 2: Unacceptable Hold Time
//  - BGP Identifier 0: Bad BGP Identifier
//  - an optional parameter other than Capabilities (2): Unsupported
//    Optional Parameter
//  - lengths that do not add up: Unspecific (subcode 0)
//  - a malformed capability: see decode_capabilities()
Result<Open, NotifyError> decode_open(bytes::Span body);

// Appends a whole OPEN message (header included) to out.
void encode_open(const Open& open, std::vector<std::byte>& out);

}  // namespace petrel::codec
