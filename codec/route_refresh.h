// The ROUTE-REFRESH message: decode and encode.
//
// RFC 2918 section 3 (AFI, reserved, SAFI) and RFC 7313 section 3 (the
// reserved octet becomes the Message Subtype: 0 normal request, 1 BoRR,
// 2 EoRR) and section 5 (a BoRR or EoRR whose length is not 4 is an
// error). A normal request may carry RFC 5291 ORF entries after the four
// octets; they are kept as bytes, not interpreted (Petrel does not
// advertise ORF).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "codec/types.h"
#include "crates/bytes/bytes.h"
#include "crates/result/result.h"

namespace petrel::codec {

// RFC 7313 section 3. The field holds any octet: a value other than the
// three named ones is decoded as is, and RFC 7313 section 5 says such a
// message MUST be ignored (RouteRefresh::ignored()).
enum class RefreshSubtype : uint8_t { kRequest = 0, kBeginOfRefresh = 1, kEndOfRefresh = 2 };

struct RouteRefresh {
  Family family;
  RefreshSubtype subtype = RefreshSubtype::kRequest;
  // Octets after the first four: RFC 5291 ORF entries of a normal request,
  // or whatever follows an unknown subtype.
  std::vector<std::byte> orf;

  friend bool operator==(const RouteRefresh&, const RouteRefresh&) = default;

  // RFC 7313 section 5: an unknown subtype is ignored by the receiver.
  [[nodiscard]] bool ignored() const { return static_cast<uint8_t>(subtype) > 2; }
};

// Decodes a ROUTE-REFRESH body (the bytes after the header). `whole` is the
// message with its header, for the error's data; the error views into it.
// A body shorter than 4 octets, or a BoRR or EoRR whose body is not 4
// octets: ROUTE-REFRESH Message Error / Invalid Message Length with the
// whole message as data (RFC 7313 section 5).
Result<RouteRefresh, NotifyError> decode_route_refresh(bytes::Span body, bytes::Span whole);

// Appends a whole ROUTE-REFRESH message (header included).
void encode_route_refresh(const RouteRefresh& rr, std::vector<std::byte>& out);

}  // namespace petrel::codec
