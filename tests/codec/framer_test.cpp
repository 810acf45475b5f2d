// Tests for codec/framer: RFC 4271 sections 4.1 and 6.1, RFC 8654.
#include "codec/framer.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

namespace petrel::codec {
namespace {

std::vector<std::byte> header(uint16_t len, uint8_t type) {
  std::vector<std::byte> v(16, std::byte{0xff});
  v.push_back(std::byte(len >> 8));
  v.push_back(std::byte(len & 0xff));
  v.push_back(std::byte(type));
  return v;
}

std::vector<std::byte> keepalive() {
  std::vector<std::byte> v;
  encode_keepalive(v);
  return v;
}

TEST(Framer, KeepaliveEncodesAsNineteenOctets) {
  EXPECT_EQ(bytes::to_hex(keepalive()), "ffffffffffffffffffffffffffffffff001304");
}

TEST(Framer, SplitsConcatenatedMessages) {
  Framer f;
  auto k = keepalive();
  std::vector<std::byte> stream;
  for (int i = 0; i < 3; ++i) stream.insert(stream.end(), k.begin(), k.end());
  f.feed(stream);
  Message m;
  NotifyError e;
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(f.next(m, e), Framer::Status::kMessage);
    EXPECT_EQ(m.type, MessageType::kKeepalive);
    EXPECT_EQ(m.body.size(), 0u);
  }
  EXPECT_EQ(f.next(m, e), Framer::Status::kNeedMore);
}

// Section 6.1: marker not all ones -> Connection Not Synchronized.
TEST(Framer, Rfc4271Section6_1BadMarker) {
  auto h = header(19, 4);
  h[3] = std::byte{0};
  Framer f;
  f.feed(h);
  Message m;
  NotifyError e;
  ASSERT_EQ(f.next(m, e), Framer::Status::kError);
  EXPECT_EQ(e.code, ErrorCode::kMessageHeader);
  EXPECT_EQ(e.subcode, header_error::kConnectionNotSynchronized);
  EXPECT_EQ(e.data().size(), 0u);
}

// Section 6.1: bad length -> Bad Message Length with the length field as data.
TEST(Framer, Rfc4271Section6_1BadLength) {
  struct Case { uint16_t len; uint8_t type; };
  for (Case c : {Case{18, 4}, Case{20, 4}, Case{4097, 2}, Case{28, 1}, Case{22, 2}, Case{20, 3}, Case{22, 5}}) {
    Framer f;
    f.feed(header(c.len, c.type));  // only the header: the error must not wait for the body
    Message m;
    NotifyError e;
    ASSERT_EQ(f.next(m, e), Framer::Status::kError) << c.len << " " << int(c.type);
    EXPECT_EQ(e.code, ErrorCode::kMessageHeader);
    EXPECT_EQ(e.subcode, header_error::kBadMessageLength);
    ASSERT_EQ(e.data().size(), 2u);
    EXPECT_EQ(std::to_integer<int>(e.data()[0]) << 8 | std::to_integer<int>(e.data()[1]), c.len);
  }
}

// Section 6.1: unknown type -> Bad Message Type with the type as data.
TEST(Framer, Rfc4271Section6_1BadType) {
  Framer f;
  f.feed(header(19, 9));
  Message m;
  NotifyError e;
  ASSERT_EQ(f.next(m, e), Framer::Status::kError);
  EXPECT_EQ(e.subcode, header_error::kBadMessageType);
  ASSERT_EQ(e.data().size(), 1u);
  EXPECT_EQ(e.data()[0], std::byte{9});
  // The framer stays failed.
  f.feed(keepalive());
  EXPECT_EQ(f.next(m, e), Framer::Status::kError);
}

// RFC 8654: lengths above 4096 only once extended messages are on.
TEST(Framer, Rfc8654ExtendedMessageLength) {
  auto big = header(5000, 2);
  big.resize(5000);
  {
    Framer f;
    f.feed(big);
    Message m;
    NotifyError e;
    EXPECT_EQ(f.next(m, e), Framer::Status::kError);
  }
  Framer f(kMaxExtendedMessageLen);
  f.feed(big);
  Message m;
  NotifyError e;
  ASSERT_EQ(f.next(m, e), Framer::Status::kMessage);
  EXPECT_EQ(m.whole.size(), 5000u);
}

// The stream may be split at every point; the messages come out the same.
RC_GTEST_PROP(Framer, AnySplitGivesSameMessages, (std::vector<uint8_t> sizes, std::vector<size_t> cuts)) {
  std::vector<std::byte> stream;
  std::vector<size_t> lens;
  for (uint8_t s : sizes) {
    size_t body = 4 + s;  // UPDATE minimum body is 4
    auto h = header(static_cast<uint16_t>(19 + body), 2);
    stream.insert(stream.end(), h.begin(), h.end());
    for (size_t i = 0; i < body; ++i) stream.push_back(std::byte(i));
    lens.push_back(body);
  }
  Framer f;
  size_t fed = 0;
  std::vector<size_t> got;
  std::vector<size_t> points;
  for (size_t c : cuts) points.push_back(stream.empty() ? 0 : c % (stream.size() + 1));
  std::sort(points.begin(), points.end());
  points.push_back(stream.size());
  for (size_t p : points) {
    if (p < fed) continue;
    f.feed(bytes::Span(stream).subspan(fed, p - fed));
    fed = p;
    Message m;
    NotifyError e;
    Framer::Status st;
    while ((st = f.next(m, e)) == Framer::Status::kMessage) got.push_back(m.body.size());
    RC_ASSERT(st == Framer::Status::kNeedMore);
  }
  RC_ASSERT(got == lens);
  RC_ASSERT(f.buffered() == 0u);
}

TEST(Framer, ByteByByte) {
  auto k = keepalive();
  Framer f;
  Message m;
  NotifyError e;
  for (size_t i = 0; i < k.size(); ++i) {
    EXPECT_EQ(f.next(m, e), Framer::Status::kNeedMore);
    f.feed(bytes::Span(k).subspan(i, 1));
  }
  EXPECT_EQ(f.next(m, e), Framer::Status::kMessage);
}

}  // namespace
}  // namespace petrel::codec
