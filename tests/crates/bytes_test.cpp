// Tests for crates/bytes: bounded reads never pass the end; hex round trip.
#include "crates/bytes/bytes.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

namespace petrel::bytes {
namespace {

std::vector<std::byte> bv(std::initializer_list<int> l) {
  std::vector<std::byte> v;
  for (int x : l) v.push_back(std::byte(x));
  return v;
}

TEST(Reader, ReadsBigEndianIntegers) {
  auto d = bv({0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07});
  Reader r(d);
  EXPECT_EQ(r.u8(), 0x01);
  EXPECT_EQ(r.u16(), 0x0203);
  EXPECT_EQ(r.u32(), 0x04050607u);
  EXPECT_TRUE(r.empty());
  EXPECT_FALSE(r.u8().has_value());
}

TEST(Reader, ShortReadConsumesNothing) {
  auto d = bv({0x01, 0x02, 0x03});
  Reader r(d);
  EXPECT_FALSE(r.u32().has_value());
  EXPECT_EQ(r.remaining(), 3u);
  EXPECT_FALSE(r.take(4).has_value());
  EXPECT_FALSE(r.u64().has_value());
  EXPECT_EQ(r.remaining(), 3u);
}

TEST(Reader, SubReaderCannotSeePastItsEnd) {
  auto d = bv({0x00, 0x02, 0xaa, 0xbb, 0xcc});
  Reader r(d);
  auto len = r.u16();
  ASSERT_TRUE(len);
  auto sub = r.sub(*len);
  ASSERT_TRUE(sub);
  EXPECT_EQ(sub->u16(), 0xaabb);
  EXPECT_FALSE(sub->u8().has_value());
  EXPECT_EQ(r.u8(), 0xcc);
}

TEST(Writer, PatchesReservedLength) {
  std::vector<std::byte> out;
  Writer w(out);
  size_t at = w.reserve(2);
  w.u32(0xdeadbeef);
  w.patch_u16(at, static_cast<uint16_t>(w.size() - at - 2));
  EXPECT_EQ(to_hex(out), "0004deadbeef");
}

TEST(Hex, RejectsOddAndBadDigits) {
  EXPECT_FALSE(from_hex("abc").has_value());
  EXPECT_FALSE(from_hex("zz").has_value());
  auto v = from_hex("de ad:BE EF");
  ASSERT_TRUE(v);
  EXPECT_EQ(to_hex(*v), "deadbeef");
}

RC_GTEST_PROP(Reader, ArbitraryReadsStayInBounds, (std::vector<uint8_t> data, std::vector<uint8_t> ops)) {
  std::vector<std::byte> d(data.size());
  for (size_t i = 0; i < data.size(); ++i) d[i] = std::byte(data[i]);
  Reader r(d);
  size_t consumed = 0;
  for (uint8_t op : ops) {
    size_t before = r.remaining();
    switch (op % 5) {
      case 0: if (r.u8()) consumed += 1; break;
      case 1: if (r.u16()) consumed += 2; break;
      case 2: if (r.u32()) consumed += 4; break;
      case 3: if (auto s = r.take(op / 5)) consumed += s->size(); break;
      case 4: if (auto s = r.sub(op / 7)) consumed += s->remaining(); break;
    }
    RC_ASSERT(r.remaining() <= before);
  }
  RC_ASSERT(consumed + r.remaining() == d.size());
}

RC_GTEST_PROP(Hex, RoundTrip, (std::vector<uint8_t> data)) {
  std::vector<std::byte> d(data.size());
  for (size_t i = 0; i < data.size(); ++i) d[i] = std::byte(data[i]);
  auto back = from_hex(to_hex(d));
  RC_ASSERT(back.has_value());
  RC_ASSERT(*back == d);
}

}  // namespace
}  // namespace petrel::bytes
