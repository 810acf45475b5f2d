// Tests for codec/notification: RFC 4271 section 4.5, RFC 9003 section 2
// (shutdown communication), RFC 3629 (UTF-8). Several vectors are
// NOTIFICATIONs from real captures (tcpdump's test captures).
#include "codec/notification.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include "codec/framer.h"
#include "tests/codec/open_gen.h"

namespace petrel::codec {
namespace {

std::vector<std::byte> hex(std::string_view s) { return bytes::from_hex(s).value(); }

Notification decode_ok(std::string_view body_hex) {
  auto v = hex(body_hex);
  auto r = decode_notification(v);
  EXPECT_TRUE(r.ok()) << body_hex;
  return r.ok() ? *r : Notification{};
}

std::string encode_hex(const Notification& n, size_t max_len = kMaxMessageLen) {
  std::vector<std::byte> out;
  encode_notification(n, out, max_len);
  return bytes::to_hex(out);
}

constexpr std::string_view kMarker = "ffffffffffffffffffffffffffffffff";
constexpr std::string_view kTestText = "This is a test of the shutdown communication system.";

TEST(Notification, Rfc4271Sec4_5DecodesCodeSubcodeAndData) {
  auto n = decode_ok("0609 0603");  // a Hard Reset (RFC 8538) from a capture
  EXPECT_EQ(n.error_code(), ErrorCode::kCease);
  EXPECT_EQ(n.subcode, cease::kHardReset);
  EXPECT_EQ(bytes::to_hex(n.data), "0603");
  auto rr = decode_ok("0701 feb0");  // ROUTE-REFRESH error from a capture
  EXPECT_EQ(rr.error_code(), ErrorCode::kRouteRefresh);
  EXPECT_EQ(rr.subcode, route_refresh_error::kInvalidMessageLength);
}

TEST(Notification, Rfc4271Sec4_5UnknownCodesAreKept) {
  auto n = decode_ok("63 2a");
  EXPECT_EQ(n.code, 0x63);
  EXPECT_EQ(n.subcode, 0x2a);
  EXPECT_TRUE(n.data.empty());
  EXPECT_EQ(encode_hex(n), std::string(kMarker) + "001503632a");
}

TEST(Notification, Rfc4271Sec4_5BodyShorterThanTwoOctetsIsABadLength) {
  for (const char* h : {"", "06"}) {
    auto v = hex(h);
    auto r = decode_notification(v);
    ASSERT_FALSE(r.ok()) << h;
    EXPECT_EQ(r.error().code, ErrorCode::kMessageHeader);
    EXPECT_EQ(r.error().subcode, header_error::kBadMessageLength);
  }
}

TEST(Notification, Rfc9003Sec2ShutdownCommunicationFromCaptures) {
  std::string text_hex = bytes::to_hex(bytes::as_bytes(kTestText));
  for (const char* sub : {"02", "04"}) {
    auto n = decode_ok(std::string("06") + sub + "34" + text_hex);
    EXPECT_EQ(shutdown_communication(n), kTestText);
  }
  // Longer than RFC 8203's 128 octets: valid under RFC 9003.
  std::string long_text;
  for (int i = 0; i < 3; ++i) long_text += "[TICKET-1-1438367390] software upgrade; Expected downtime for 2 hours;";
  ASSERT_EQ(long_text.size(), 210u);
  auto n = decode_ok("0602d2" + bytes::to_hex(bytes::as_bytes(long_text)));
  EXPECT_EQ(shutdown_communication(n), long_text);
}

TEST(Notification, Rfc9003Sec2EmptyCommunication) {
  EXPECT_EQ(shutdown_communication(decode_ok("060400")), "");
}

TEST(Notification, Rfc9003Sec2InvalidLengthKeepsTheRawData) {
  // From a capture: length 10, then 19 octets; length 64, then 10 octets.
  auto trailing = decode_ok("06040a30313233343536373839457874726144617461");
  EXPECT_EQ(shutdown_communication(trailing), std::nullopt);
  EXPECT_EQ(trailing.data.size(), 20u);
  auto short_text = decode_ok("06044030313233343536373839");
  EXPECT_EQ(shutdown_communication(short_text), std::nullopt);
  EXPECT_EQ(short_text.data.size(), 11u);
}

TEST(Notification, Rfc9003Sec4InvalidUtf8IsNotInterpreted) {
  auto n = decode_ok("0602 02 c0af");
  EXPECT_EQ(shutdown_communication(n), std::nullopt);
  EXPECT_EQ(bytes::to_hex(n.data), "02c0af");
}

TEST(Notification, Rfc9003Sec2OnlyAdministrativeShutdownAndResetCarryText) {
  EXPECT_EQ(shutdown_communication(decode_ok("0603 03616263")), std::nullopt);
  EXPECT_EQ(shutdown_communication(decode_ok("0202 03616263")), std::nullopt);
  EXPECT_EQ(shutdown_communication(decode_ok("0602")), std::nullopt);  // no data at all
}

TEST(Notification, Rfc9003Sec2ShutdownEncodesLengthThenText) {
  auto n = Notification::shutdown(cease::kAdministrativeShutdown, "maintenance");
  EXPECT_EQ(encode_hex(n), std::string(kMarker) + "00210306020b" + bytes::to_hex(bytes::as_bytes("maintenance")));
  EXPECT_EQ(shutdown_communication(n), "maintenance");
  EXPECT_TRUE(Notification::shutdown(cease::kAdministrativeReset, "").data.empty());
}

TEST(Notification, Rfc9003Sec2ShutdownTextIsCutOnACharacterBoundary) {
  std::string ascii(300, 'a');
  auto a = Notification::shutdown(cease::kAdministrativeShutdown, ascii);
  EXPECT_EQ(shutdown_communication(a)->size(), 255u);
  // 127 two-octet characters (254 octets) then a three-octet one: the
  // latter does not fit and is dropped whole.
  std::string s;
  for (int i = 0; i < 127; ++i) s += "\xc3\xa9";
  s += "\xe2\x82\xac";
  auto b = Notification::shutdown(cease::kAdministrativeShutdown, s);
  ASSERT_TRUE(shutdown_communication(b));
  EXPECT_EQ(shutdown_communication(b)->size(), 254u);
}

TEST(Notification, Rfc3629Utf8Validation) {
  EXPECT_TRUE(is_valid_utf8(""));
  EXPECT_TRUE(is_valid_utf8("plain"));
  EXPECT_TRUE(is_valid_utf8("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"));
  EXPECT_FALSE(is_valid_utf8("\xc0\xaf"));          // overlong
  EXPECT_FALSE(is_valid_utf8("\xe0\x80\xaf"));      // overlong
  EXPECT_FALSE(is_valid_utf8("\xed\xa0\x80"));      // surrogate
  EXPECT_FALSE(is_valid_utf8("\xf4\x90\x80\x80"));  // above U+10FFFF
  EXPECT_FALSE(is_valid_utf8("\xe2\x82"));          // truncated
  EXPECT_FALSE(is_valid_utf8("\x80"));              // lone continuation
  EXPECT_FALSE(is_valid_utf8("\xff"));
}

TEST(Notification, FromNotifyErrorCopiesTheData) {
  auto n = Notification::from(NotifyError::with_u16(ErrorCode::kOpenMessage, open_error::kUnsupportedVersion, 4));
  EXPECT_EQ(n, (Notification{2, 1, hex("0004")}));
  std::vector<std::byte> out;
  encode_notification(NotifyError::with_u8(ErrorCode::kMessageHeader, header_error::kBadMessageType, 9), out);
  EXPECT_EQ(bytes::to_hex(out), std::string(kMarker) + "0016030103" "09");
  auto whole = hex("0102");
  auto v = Notification::from(NotifyError::with_view(ErrorCode::kUpdateMessage, 1, whole));
  EXPECT_EQ(v.data, whole);
}

TEST(Notification, Rfc4271Sec4_5DataIsCutToTheMessageLimit) {
  Notification n{3, 1, std::vector<std::byte>(5000, std::byte{0xab})};
  std::vector<std::byte> out;
  encode_notification(n, out);
  EXPECT_EQ(out.size(), kMaxMessageLen);
  out.clear();
  encode_notification(n, out, kMaxExtendedMessageLen);
  EXPECT_EQ(out.size(), kHeaderLen + 2 + 5000);
  auto h = check_header(bytes::Span(out).first(kHeaderLen), kMaxExtendedMessageLen);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->length, out.size());
}

RC_GTEST_PROP(Notification, DecodeEncodeRoundTrip, ()) {
  Notification n = *gen::notification();
  std::vector<std::byte> out;
  encode_notification(n, out);
  std::vector<std::byte> b(out.begin() + kHeaderLen, out.end());
  auto r = decode_notification(b);
  RC_ASSERT(r.ok());
  RC_ASSERT(*r == n);
}

// Valid UTF-8 from arbitrary code points (surrogates skipped).
std::string utf8_from(const std::vector<uint32_t>& cps) {
  std::string s;
  auto put = [&s](uint32_t v) { s += static_cast<char>(static_cast<uint8_t>(v)); };
  for (uint32_t cp : cps) {
    cp %= 0x110000;
    if (cp >= 0xd800 && cp <= 0xdfff) continue;
    if (cp < 0x80) {
      put(cp);
    } else if (cp < 0x800) {
      put(0xc0 | (cp >> 6));
      put(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
      put(0xe0 | (cp >> 12));
      put(0x80 | ((cp >> 6) & 0x3f));
      put(0x80 | (cp & 0x3f));
    } else {
      put(0xf0 | (cp >> 18));
      put(0x80 | ((cp >> 12) & 0x3f));
      put(0x80 | ((cp >> 6) & 0x3f));
      put(0x80 | (cp & 0x3f));
    }
  }
  return s;
}

RC_GTEST_PROP(Notification, ShutdownTextRoundTripsWhenShort, (std::vector<uint32_t> cps)) {
  std::string text = utf8_from(cps);
  RC_PRE(!text.empty() && text.size() <= kMaxShutdownCommunication);
  auto n = Notification::shutdown(cease::kAdministrativeReset, text);
  RC_ASSERT(shutdown_communication(n) == std::optional<std::string_view>(text));
}

RC_GTEST_PROP(Notification, TruncateUtf8KeepsAValidMaximalPrefix, (std::vector<uint32_t> cps, uint8_t max)) {
  std::string s = utf8_from(cps);
  RC_ASSERT(is_valid_utf8(s));
  auto t = truncate_utf8(s, max);
  RC_ASSERT(t.size() <= max);
  RC_ASSERT(is_valid_utf8(t));
  RC_ASSERT(s.substr(0, t.size()) == t);
  RC_ASSERT(t.size() == s.size() || max - t.size() < 4);
}

RC_GTEST_PROP(Notification, ArbitraryBodiesNeverCrash, (std::vector<uint8_t> raw)) {
  std::vector<std::byte> v;
  for (uint8_t b : raw) v.push_back(std::byte{b});
  auto r = decode_notification(v);
  if (r.ok()) (void)shutdown_communication(*r);
}

}  // namespace
}  // namespace petrel::codec
