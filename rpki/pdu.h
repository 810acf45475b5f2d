// RTR protocol data units as bytes and back: RFC 8210 (version 1) section 5
// and RFC 6810 (version 0) section 5.
//
// Every PDU starts with an 8-byte header: version, type, a 16-bit field
// (session id, error code, flags or zero, by type) and a 32-bit length of
// the whole PDU. The length is checked against the type before anything
// else (check_header), so a framer can refuse a PDU before waiting for it.
// Version 0 differs in two places: its End of Data carries no intervals
// (12 bytes instead of 24) and it has no Router Key PDU.
//
// Version 2 (draft-ietf-sidrops-8210bis) is version 1 plus the ASPA PDU
// (type 11): flags (bit 0: announce) in the third byte, zero, the length,
// the customer AS, then the provider ASes to the end of the PDU. A
// withdrawal names the customer only; providers sent with one are not
// kept. StayRTR 0.5 (Debian's) still sends the layout of 8210bis-10:
// zero in bytes 2-3, then flags, an AFI flag (IPv6 == 1) and a 16-bit
// provider count before the customer. A PDU whose bytes 2-3 are zero, at
// least 16 bytes long, whose first body word has a flags byte and an AFI
// byte of 0 or 1 and a count that fits the length exactly is read as that
// layout (legacy_afi set); the current layout can look so only for a
// withdrawal carrying providers, which it does not need.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "crates/bytes/bytes.h"
#include "crates/result/result.h"
#include "rpki/vrp.h"

namespace petrel::rpki {

inline constexpr uint8_t kVersion0 = 0;  // RFC 6810
inline constexpr uint8_t kVersion1 = 1;  // RFC 8210
inline constexpr uint8_t kVersion2 = 2;  // draft-ietf-sidrops-8210bis
inline constexpr uint8_t kMaxVersion = kVersion2;
inline constexpr size_t kHeaderLen = 8;
// No PDU of ours is near this; a larger length is refused at once (an
// Error Report carrying a Router Key and its text stays far below). It
// bounds an ASPA PDU to 16,381 providers; real ASPAs list a handful.
inline constexpr uint32_t kMaxPduLen = 64 * 1024;
// The longest Subject Public Key Info a Router Key PDU may carry (RFC 8210
// section 5.10 sets no bound but the PDU's). BGPsec router keys are ECDSA
// P-256 (RFC 8208 section 3, now RFC 8608): an uncompressed point in the
// DER SubjectPublicKeyInfo of RFC 5480 is 91 octets. 1,024 is eleven
// times that and holds even an RSA-4096 SPKI (550 octets), should another
// algorithm be added. Without a bound a PDU could carry 64 KiB of SPKI,
// and the limit on held records would not bound memory. A longer SPKI is
// Corrupt Data.
inline constexpr size_t kMaxSpkiLen = 1024;

enum class PduType : uint8_t {
  kSerialNotify = 0,
  kSerialQuery = 1,
  kResetQuery = 2,
  kCacheResponse = 3,
  kIpv4Prefix = 4,
  kIpv6Prefix = 6,
  kEndOfData = 7,
  kCacheReset = 8,
  kRouterKey = 9,
  kErrorReport = 10,
  kAspa = 11,  // version 2
};
std::string_view pdu_type_name(PduType t);

// RFC 8210 section 12 (error codes); all but No Data Available are fatal.
enum class ErrorCode : uint16_t {
  kCorruptData = 0,
  kInternalError = 1,
  kNoDataAvailable = 2,
  kInvalidRequest = 3,
  kUnsupportedProtocolVersion = 4,
  kUnsupportedPduType = 5,
  kWithdrawalOfUnknownRecord = 6,
  kDuplicateAnnouncement = 7,
  kUnexpectedProtocolVersion = 8,
};
std::string_view error_code_name(ErrorCode c);  // "unknown" for codes not listed
bool is_fatal(ErrorCode c);

// RFC 8210 section 6: refresh 1..86400 s, retry 1..7200 s, expire
// 600..172800 s; defaults 3600, 600, 7200.
struct Intervals {
  uint32_t refresh = 3600;
  uint32_t retry = 600;
  uint32_t expire = 7200;
  friend bool operator==(const Intervals&, const Intervals&) = default;
};
// The values brought into the ranges of RFC 8210 section 6.
Intervals clamp(Intervals i);

struct SerialNotify {
  uint16_t session_id = 0;
  uint32_t serial = 0;
  friend bool operator==(const SerialNotify&, const SerialNotify&) = default;
};
struct SerialQuery {
  uint16_t session_id = 0;
  uint32_t serial = 0;
  friend bool operator==(const SerialQuery&, const SerialQuery&) = default;
};
struct ResetQuery {
  friend bool operator==(const ResetQuery&, const ResetQuery&) = default;
};
struct CacheResponse {
  uint16_t session_id = 0;
  friend bool operator==(const CacheResponse&, const CacheResponse&) = default;
};
// IPv4 Prefix or IPv6 Prefix, by the VRP's family.
struct PrefixPdu {
  bool announce = true;
  Vrp vrp;
  friend bool operator==(const PrefixPdu&, const PrefixPdu&) = default;
};
struct EndOfData {
  uint16_t session_id = 0;
  uint32_t serial = 0;
  std::optional<Intervals> intervals;  // version 1 only; encoded as defaults if absent
  friend bool operator==(const EndOfData&, const EndOfData&) = default;
};
struct CacheReset {
  friend bool operator==(const CacheReset&, const CacheReset&) = default;
};
struct RouterKeyPdu {
  bool announce = true;
  RouterKey key;
  friend bool operator==(const RouterKeyPdu&, const RouterKeyPdu&) = default;
};
// An ASPA as delivered: the customer AS and its provider ASes, sorted and
// distinct (the decoder sorts what the cache sent). Ordered by customer
// first: the client keeps one per customer.
struct Aspa {
  uint32_t customer = 0;
  std::vector<uint32_t> providers;
  friend bool operator==(const Aspa&, const Aspa&) = default;
  friend auto operator<=>(const Aspa&, const Aspa&) = default;
};
struct AspaPdu {
  bool announce = true;
  Aspa aspa;  // a withdrawal carries no providers
  // Set when the PDU came in 8210bis-10's layout (StayRTR 0.5): its AFI
  // flag, 0 IPv4, 1 IPv6. encode() writes that layout back.
  std::optional<uint8_t> legacy_afi;
  friend bool operator==(const AspaPdu&, const AspaPdu&) = default;
};
struct ErrorReport {
  ErrorCode code = ErrorCode::kCorruptData;
  std::vector<std::byte> pdu;  // the erroneous PDU, possibly empty
  std::string text;            // UTF-8 diagnostic, possibly empty
  friend bool operator==(const ErrorReport&, const ErrorReport&) = default;
};

using Pdu = std::variant<SerialNotify, SerialQuery, ResetQuery, CacheResponse, PrefixPdu, EndOfData,
                         CacheReset, RouterKeyPdu, ErrorReport, AspaPdu>;

struct Message {
  uint8_t version = kVersion1;
  Pdu pdu;
  friend bool operator==(const Message&, const Message&) = default;
};

// What is wrong with a PDU, as the Error Report code to send for it.
struct DecodeError {
  ErrorCode code = ErrorCode::kCorruptData;
  std::string_view what;  // static text
};

struct Header {
  uint8_t version = 0;
  PduType type = PduType::kSerialNotify;
  uint16_t field = 0;
  uint32_t length = 0;
};

// Checks the 8-byte header alone: a known version (0 to 2), a type known
// in that version, and a length right for the type (exact for the fixed
// PDUs, at least the fixed part and at most kMaxPduLen for the others).
Result<Header, DecodeError> check_header(bytes::Span header8);

// Decodes one whole PDU (`whole` is exactly header.length bytes).
Result<Message, DecodeError> decode(bytes::Span whole);

// Appends the PDU. A Router Key in version 0, or an ASPA below version 2,
// is a bug of the caller.
void encode(uint8_t version, const Pdu& pdu, std::vector<std::byte>& out);
std::vector<std::byte> encode(uint8_t version, const Pdu& pdu);

}  // namespace petrel::rpki
