// The NOTIFICATION message: decode and encode, and the shutdown
// communication of Cease / Administrative Shutdown and Administrative Reset.
//
// RFC 4271 section 4.5, RFC 9003 (which obsoletes RFC 8203): the data of
// Cease subcodes 2 and 4 may be a length octet and up to 255 octets of
// UTF-8 text.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "codec/types.h"
#include "crates/bytes/bytes.h"
#include "crates/result/result.h"

namespace petrel::codec {

inline constexpr size_t kMaxShutdownCommunication = 255;  // RFC 9003 section 2

struct Notification {
  // The wire code: a peer may send one Petrel has no name for, so this is
  // not an ErrorCode. error_code() gives the enum (possibly a value outside
  // its named enumerators).
  uint8_t code = 0;
  uint8_t subcode = 0;
  std::vector<std::byte> data;

  friend bool operator==(const Notification&, const Notification&) = default;

  [[nodiscard]] ErrorCode error_code() const { return static_cast<ErrorCode>(code); }

  // The NOTIFICATION a decoder error asks for (copies its data).
  static Notification from(const NotifyError& e);
  // A Cease with subcode 2 (Administrative Shutdown) or 4 (Administrative
  // Reset) carrying `text`, cut on a UTF-8 boundary to at most 255 octets.
  // An empty text sends no communication at all (no length octet).
  static Notification shutdown(uint8_t subcode, std::string_view text);
};

// Decodes a NOTIFICATION body (the bytes after the header). The only error
// is a body shorter than code and subcode (Bad Message Length); a speaker
// does not answer a NOTIFICATION, so the caller just closes.
Result<Notification, NotifyError> decode_notification(bytes::Span body);

// Appends a whole NOTIFICATION (header included). Data that would make the
// message longer than max_len is cut (RFC 4271 section 4.5 gives no way to
// send more).
void encode_notification(const Notification& n, std::vector<std::byte>& out,
                         size_t max_len = kMaxMessageLen);
void encode_notification(const NotifyError& e, std::vector<std::byte>& out,
                         size_t max_len = kMaxMessageLen);

// RFC 9003 section 2: the shutdown communication of a Cease subcode 2 or
// 4, when its data is exactly a length octet and that many octets of valid
// UTF-8 (an empty text when the length is 0). Nothing for other
// NOTIFICATIONs, no data, or an invalid length or text: the raw bytes stay
// in `data` for the log (section 4: it must not be interpreted).
std::optional<std::string_view> shutdown_communication(const Notification& n);

// Whether s is well-formed UTF-8 (RFC 3629: shortest form, no surrogates,
// at most U+10FFFF).
bool is_valid_utf8(std::string_view s);

// The longest prefix of s of at most max_len octets that does not end
// inside a UTF-8 sequence.
std::string_view truncate_utf8(std::string_view s, size_t max_len);

}  // namespace petrel::codec
