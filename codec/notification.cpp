// NOTIFICATION: RFC 4271 section 4.5; shutdown communication RFC 9003
// section 2; UTF-8 well-formedness RFC 3629 section 4.
#include "codec/notification.h"

#include <algorithm>

#include "codec/framer.h"

namespace petrel::codec {

namespace {

constexpr size_t kNotificationFixedLen = 2;  // code, subcode

bool carries_shutdown_communication(const Notification& n) {
  return n.code == static_cast<uint8_t>(ErrorCode::kCease) &&
         (n.subcode == cease::kAdministrativeShutdown || n.subcode == cease::kAdministrativeReset);
}

uint8_t octet(std::string_view s, size_t i) { return static_cast<uint8_t>(s[i]); }

// Length of the well-formed UTF-8 sequence starting at s[i], or 0.
size_t utf8_sequence_len(std::string_view s, size_t i) {
  uint8_t b0 = octet(s, i);
  if (b0 < 0x80) return 1;
  size_t n = 0;
  uint8_t lo = 0x80, hi = 0xbf;  // the allowed range of the second octet
  if (b0 >= 0xc2 && b0 <= 0xdf) {
    n = 2;
  } else if (b0 >= 0xe0 && b0 <= 0xef) {
    n = 3;
    if (b0 == 0xe0) lo = 0xa0;  // no overlong forms
    if (b0 == 0xed) hi = 0x9f;  // no surrogates
  } else if (b0 >= 0xf0 && b0 <= 0xf4) {
    n = 4;
    if (b0 == 0xf0) lo = 0x90;  // no overlong forms
    if (b0 == 0xf4) hi = 0x8f;  // nothing above U+10FFFF
  } else {
    return 0;
  }
  if (s.size() - i < n) return 0;
  uint8_t b1 = octet(s, i + 1);
  if (b1 < lo || b1 > hi) return 0;
  for (size_t k = 2; k < n; ++k) {
    uint8_t b = octet(s, i + k);
    if (b < 0x80 || b > 0xbf) return 0;
  }
  return n;
}

}  // namespace

bool is_valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    size_t n = utf8_sequence_len(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string_view truncate_utf8(std::string_view s, size_t max_len) {
  if (s.size() <= max_len) return s;
  // s[max_len] is the first octet cut off; if it continues a sequence, cut
  // before that sequence's first octet instead.
  size_t end = max_len;
  while (end > 0 && max_len - end < 3 && (octet(s, end) & 0xc0) == 0x80) --end;
  return s.substr(0, end);
}

Notification Notification::from(const NotifyError& e) {
  bytes::Span d = e.data();
  return Notification{static_cast<uint8_t>(e.code), e.subcode, std::vector<std::byte>(d.begin(), d.end())};
}

Notification Notification::shutdown(uint8_t subcode, std::string_view text) {
  Notification n{static_cast<uint8_t>(ErrorCode::kCease), subcode, {}};
  if (text.empty()) return n;
  std::string_view cut = truncate_utf8(text, kMaxShutdownCommunication);
  bytes::Writer w(n.data);
  w.u8(static_cast<uint8_t>(cut.size()));
  w.bytes(bytes::as_bytes(cut));
  return n;
}

Result<Notification, NotifyError> decode_notification(bytes::Span body) {
  bytes::Reader r(body);
  auto code = r.u8();
  auto subcode = r.u8();
  if (!code || !subcode) {
    auto len = static_cast<uint16_t>(std::min<size_t>(body.size() + kHeaderLen, 0xffff));
    return fail(NotifyError::with_u16(ErrorCode::kMessageHeader, header_error::kBadMessageLength, len));
  }
  bytes::Span data = r.rest();
  return Notification{*code, *subcode, std::vector<std::byte>(data.begin(), data.end())};
}

namespace {

void encode_parts(uint8_t code, uint8_t subcode, bytes::Span data, std::vector<std::byte>& out,
                  size_t max_len) {
  size_t room = max_len > kHeaderLen + kNotificationFixedLen ? max_len - kHeaderLen - kNotificationFixedLen : 0;
  bytes::Writer w(out);
  size_t start = begin_message(w, MessageType::kNotification);
  w.u8(code);
  w.u8(subcode);
  w.bytes(data.first(std::min(data.size(), room)));
  finish_message(w, start);
}

}  // namespace

void encode_notification(const Notification& n, std::vector<std::byte>& out, size_t max_len) {
  encode_parts(n.code, n.subcode, n.data, out, max_len);
}

void encode_notification(const NotifyError& e, std::vector<std::byte>& out, size_t max_len) {
  encode_parts(static_cast<uint8_t>(e.code), e.subcode, e.data(), out, max_len);
}

std::optional<std::string_view> shutdown_communication(const Notification& n) {
  if (!carries_shutdown_communication(n)) return std::nullopt;
  bytes::Reader r(n.data);
  auto len = r.u8();
  if (!len || r.remaining() != *len) return std::nullopt;
  std::string_view text = bytes::as_chars(r.rest());
  if (!is_valid_utf8(text)) return std::nullopt;
  return text;
}

}  // namespace petrel::codec
