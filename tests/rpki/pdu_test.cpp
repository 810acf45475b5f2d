// Tests of rpki/pdu.h: each PDU of RFC 8210 section 5 (and RFC 6810's End
// of Data) against hand-written bytes, header checks, the bound on a
// Router Key's SPKI, round trips and hostile input.
#include "rpki/pdu.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include "tests/rpki/rpki_testing.h"

namespace petrel::rpki {
namespace {

using testing::hex;

void expect_wire(uint8_t version, const Pdu& pdu, const char* wire) {
  auto bytes = hex(wire);
  EXPECT_EQ(bytes::to_hex(encode(version, pdu)), bytes::to_hex(bytes));
  auto m = decode(bytes);
  ASSERT_TRUE(m.ok()) << m.error().what;
  EXPECT_EQ(m->version, version);
  EXPECT_TRUE(m->pdu == pdu);
}

TEST(Pdu, EveryTypeOnTheWire) {
  expect_wire(1, SerialNotify{0x1234, 7}, "01 00 1234 0000000c 00000007");
  expect_wire(1, SerialQuery{0x1234, 8}, "01 01 1234 0000000c 00000008");
  expect_wire(1, ResetQuery{}, "01 02 0000 00000008");
  expect_wire(0, ResetQuery{}, "00 02 0000 00000008");
  expect_wire(1, CacheResponse{0xbeef}, "01 03 beef 00000008");
  expect_wire(1, PrefixPdu{true, {*net::Prefix::parse("192.0.2.0/24"), 26, 64496}},
              "01 04 0000 00000014 01 18 1a 00 c0000200 0000fbf0");
  expect_wire(1, PrefixPdu{false, {*net::Prefix::parse("2001:db8::/32"), 48, 65551}},
              "01 06 0000 00000020 00 20 30 00 20010db8000000000000000000000000 0001000f");
  expect_wire(1, EndOfData{5, 9, Intervals{3600, 600, 7200}},
              "01 07 0005 00000018 00000009 00000e10 00000258 00001c20");
  expect_wire(0, EndOfData{5, 9, std::nullopt}, "00 07 0005 0000000c 00000009");
  expect_wire(1, CacheReset{}, "01 08 0000 00000008");
  RouterKey key;
  key.ski.fill(0xab);
  key.asn = 64496;
  key.spki = {0x30, 0x01};
  expect_wire(1, RouterKeyPdu{true, key},
              "01 09 0100 00000022 abababababababababababababababababababab 0000fbf0 3001");
  ErrorReport r{ErrorCode::kNoDataAvailable, hex("01 02 0000 00000008"), "no data"};
  expect_wire(1, r, "01 0a 0002 0000001f 00000008 0102000000000008 00000007 6e6f2064617461");
}

// draft-ietf-sidrops-8210bis: version 2 is version 1's PDUs plus ASPA.
TEST(Pdu, Version2OnTheWire) {
  expect_wire(2, ResetQuery{}, "02 02 0000 00000008");
  expect_wire(2, EndOfData{5, 9, Intervals{3600, 600, 7200}},
              "02 07 0005 00000018 00000009 00000e10 00000258 00001c20");
  expect_wire(2, AspaPdu{true, Aspa{64500, {64501, 64502}}, std::nullopt},
              "02 0b 0100 00000014 0000fbf4 0000fbf5 0000fbf6");
  expect_wire(2, AspaPdu{true, Aspa{64500, {}}, std::nullopt}, "02 0b 0100 0000000c 0000fbf4");
  expect_wire(2, AspaPdu{false, Aspa{64500, {}}, std::nullopt}, "02 0b 0000 0000000c 0000fbf4");
  // 8210bis-10's layout, as StayRTR 0.5 sends it (captured from stayrtr
  // 0.5.1 serving a customer with no providers, and with two).
  expect_wire(2, AspaPdu{true, Aspa{64500, {}}, 0}, "02 0b 0000 00000010 01000000 0000fbf4");
  expect_wire(2, AspaPdu{true, Aspa{64500, {64501, 64502}}, 1},
              "02 0b 0000 00000018 01010002 0000fbf4 0000fbf5 0000fbf6");
  expect_wire(2, AspaPdu{false, Aspa{64500, {}}, 0}, "02 0b 0000 00000010 00000000 0000fbf4");
}

TEST(Pdu, AspaProvidersAreSortedAndDistinct) {
  auto m = decode(hex("02 0b 0100 00000018 0000fbf4 0000fbf6 0000fbf5 0000fbf6"));
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(std::get<AspaPdu>(m->pdu).aspa.providers, (std::vector<uint32_t>{64501, 64502}));
  // A withdrawal keeps no providers.
  m = decode(hex("02 0b 0000 00000010 0000fbf4 0000fbf5"));
  ASSERT_TRUE(m.ok());
  EXPECT_FALSE(std::get<AspaPdu>(m->pdu).announce);
  EXPECT_TRUE(std::get<AspaPdu>(m->pdu).aspa.providers.empty());
}

TEST(Pdu, AspaBadBodies) {
  auto code = [](const char* h) {
    auto r = decode(hex(h));
    return r.ok() ? -1 : static_cast<int>(r.error().code);
  };
  int corrupt = static_cast<int>(ErrorCode::kCorruptData);
  EXPECT_EQ(code("02 0b 0100 0000000e 0000fbf4 0000"), corrupt);       // half a provider
  EXPECT_EQ(code("02 0b 0100 0000000d 0000fbf4 00"), corrupt);
  EXPECT_EQ(code("01 0b 0100 0000000c 0000fbf4"), static_cast<int>(ErrorCode::kUnsupportedPduType));
  // The most providers a PDU can carry, and one more.
  std::string most = "02 0b 0100 00010000 0000fbf4";
  for (uint32_t i = 0; i < (kMaxPduLen - 12) / 4; ++i) most += " 00000001";
  EXPECT_EQ(code(most.c_str()), -1);
  EXPECT_EQ(code("02 0b 0100 00010004 0000fbf4"), corrupt);
}

// A Router Key's SPKI may be up to kMaxSpkiLen octets (a P-256 key's is
// 91); one octet more is Corrupt Data, though the PDU is well within
// kMaxPduLen.
TEST(Pdu, RouterKeySpkiBound) {
  RouterKey key;
  key.ski.fill(0xab);
  key.asn = 64496;
  for (size_t len : {size_t{0}, size_t{91}, kMaxSpkiLen}) {
    key.spki.assign(len, 0x30);
    auto m = decode(encode(1, RouterKeyPdu{true, key}));
    ASSERT_TRUE(m.ok()) << len;
    EXPECT_EQ(std::get<RouterKeyPdu>(m->pdu).key.spki.size(), len);
  }
  key.spki.assign(kMaxSpkiLen + 1, 0x30);
  auto m = decode(encode(1, RouterKeyPdu{true, key}));
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().code, ErrorCode::kCorruptData);
  EXPECT_NE(m.error().what.find("SPKI"), std::string_view::npos);
}

TEST(Pdu, EndOfDataWithoutIntervalsEncodesDefaults) {
  auto m = decode(encode(1, EndOfData{1, 2, std::nullopt}));
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(std::get<EndOfData>(m->pdu).intervals, Intervals{});
}

TEST(Pdu, HeaderChecks) {
  auto code = [](const char* h) {
    auto r = check_header(hex(h));
    return r.ok() ? -1 : static_cast<int>(r.error().code);
  };
  EXPECT_EQ(code("01 00 0000 0000000c"), -1);
  EXPECT_EQ(code("02 00 0000 0000000c"), -1);
  EXPECT_EQ(code("03 00 0000 0000000c"), static_cast<int>(ErrorCode::kUnsupportedProtocolVersion));
  EXPECT_EQ(code("02 0b 0100 0000000c"), -1);                                          // ASPA in version 2
  EXPECT_EQ(code("02 0b 0100 00000008"), static_cast<int>(ErrorCode::kCorruptData));   // no customer
  EXPECT_EQ(code("02 0b 0100 00010004"), static_cast<int>(ErrorCode::kCorruptData));   // past kMaxPduLen
  EXPECT_EQ(code("01 05 0000 00000008"), static_cast<int>(ErrorCode::kUnsupportedPduType));
  EXPECT_EQ(code("01 0b 0000 00000008"), static_cast<int>(ErrorCode::kUnsupportedPduType));
  EXPECT_EQ(code("00 09 0000 00000020"), static_cast<int>(ErrorCode::kUnsupportedPduType));
  EXPECT_EQ(code("01 09 0000 00000020"), -1);
  EXPECT_EQ(code("01 09 0000 0000001f"), static_cast<int>(ErrorCode::kCorruptData));
  EXPECT_EQ(code("01 00 0000 0000000d"), static_cast<int>(ErrorCode::kCorruptData));
  EXPECT_EQ(code("01 04 0000 00000020"), static_cast<int>(ErrorCode::kCorruptData));
  EXPECT_EQ(code("00 07 0000 00000018"), static_cast<int>(ErrorCode::kCorruptData));  // v1 length in v0
  EXPECT_EQ(code("01 07 0000 0000000c"), static_cast<int>(ErrorCode::kCorruptData));  // v0 length in v1
  EXPECT_EQ(code("01 0a 0000 0000000f"), static_cast<int>(ErrorCode::kCorruptData));
  EXPECT_EQ(code("01 0a 0000 ffffffff"), static_cast<int>(ErrorCode::kCorruptData));
  EXPECT_EQ(code("01 00 0000"), static_cast<int>(ErrorCode::kCorruptData));
}

TEST(Pdu, BadBodies) {
  auto code = [](const char* h) {
    auto r = decode(hex(h));
    return r.ok() ? -1 : static_cast<int>(r.error().code);
  };
  int corrupt = static_cast<int>(ErrorCode::kCorruptData);
  EXPECT_EQ(code("01 04 0000 00000014 01 21 21 00 c0000200 00000001"), corrupt);  // /33
  EXPECT_EQ(code("01 04 0000 00000014 01 18 17 00 c0000200 00000001"), corrupt);  // max < len
  EXPECT_EQ(code("01 06 0000 00000020 01 20 81 00 20010db8000000000000000000000000 00000001"), corrupt);
  EXPECT_EQ(code("01 0a 0000 00000010 00000001 00000000"), corrupt);          // PDU overruns
  EXPECT_EQ(code("01 0a 0000 00000011 00000000 00000000 00"), corrupt);       // trailing byte
  EXPECT_EQ(code("01 0a 0000 00000010 00000000 00000001"), corrupt);          // text overruns
  EXPECT_EQ(code("01 00 0000 0000000c 000000"), corrupt);                     // shorter than header says
  EXPECT_EQ(code("01 0a 0000 00000010 00000000 00000000"), -1);
}

TEST(Pdu, PrefixHostBitsAreCleared) {
  auto m = decode(hex("01 04 0000 00000014 01 18 18 00 c0000201 00000001"));
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(std::get<PrefixPdu>(m->pdu).vrp.prefix, *net::Prefix::parse("192.0.2.0/24"));
}

TEST(Pdu, Names) {
  EXPECT_EQ(pdu_type_name(PduType::kEndOfData), "End of Data");
  EXPECT_EQ(error_code_name(ErrorCode::kDuplicateAnnouncement), "Duplicate Announcement Received");
  EXPECT_EQ(error_code_name(static_cast<ErrorCode>(99)), "unknown");
  EXPECT_FALSE(is_fatal(ErrorCode::kNoDataAvailable));
  EXPECT_TRUE(is_fatal(ErrorCode::kCorruptData));
  EXPECT_EQ(clamp({0, 0, 0}), (Intervals{1, 1, 600}));
  EXPECT_EQ(clamp({100000, 8000, 200000}), (Intervals{86400, 7200, 172800}));
}

RC_GTEST_PROP(Pdu, RoundTrip, ()) {
  Message m = *testing::gen_message();
  auto wire = encode(m.version, m.pdu);
  auto back = decode(wire);
  RC_ASSERT(back.ok());
  RC_ASSERT(*back == m);
  auto h = check_header(bytes::Span(wire).first(kHeaderLen));
  RC_ASSERT(h.ok());
  RC_ASSERT(h->length == wire.size());
}

// Hostile input: any bytes decode to an error or to a message that
// encodes to bytes that decode to the same message.
RC_GTEST_PROP(Pdu, HostileBytes, ()) {
  auto raw = *rc::gen::container<std::vector<uint8_t>>(rc::gen::arbitrary<uint8_t>());
  // Often give it a plausible header so bodies get exercised.
  if (raw.size() >= 8 && *rc::gen::arbitrary<bool>()) {
    raw[0] = raw[0] % 3;
    raw[4] = raw[5] = 0;
    raw[6] = static_cast<uint8_t>(raw.size() >> 8);
    raw[7] = static_cast<uint8_t>(raw.size());
  }
  std::vector<std::byte> in;
  for (uint8_t b : raw) in.push_back(std::byte{b});
  auto m = decode(in);
  if (!m) return;
  auto again = decode(encode(m->version, m->pdu));
  RC_ASSERT(again.ok());
  RC_ASSERT(*again == *m);
}

}  // namespace
}  // namespace petrel::rpki
