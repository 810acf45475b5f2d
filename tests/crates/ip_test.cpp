// Tests for crates/net: parsing, RFC 5952 text, normalisation.
#include "crates/net/ip.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

namespace petrel::net {
namespace {

std::string canon(std::string_view s) {
  auto a = IpAddress::parse(s);
  return a ? a->to_string() : "<invalid>";
}

TEST(IpAddress, ParsesAndFormatsIpv4) {
  EXPECT_EQ(canon("192.0.2.1"), "192.0.2.1");
  EXPECT_EQ(canon("0.0.0.0"), "0.0.0.0");
  EXPECT_EQ(canon("255.255.255.255"), "255.255.255.255");
  EXPECT_EQ(canon("256.0.0.1"), "<invalid>");
  EXPECT_EQ(canon("1.2.3"), "<invalid>");
  EXPECT_EQ(canon("1.2.3.4.5"), "<invalid>");
  EXPECT_EQ(canon("01.2.3.4"), "<invalid>");
  EXPECT_EQ(canon(""), "<invalid>");
}

// RFC 5952 section 4: the examples of the RFC.
TEST(IpAddress, Rfc5952Section4) {
  EXPECT_EQ(canon("2001:0db8::0001"), "2001:db8::1");                      // 4.1
  EXPECT_EQ(canon("2001:db8:0:0:0:0:2:1"), "2001:db8::2:1");               // 4.2.1
  EXPECT_EQ(canon("2001:db8:0:1:1:1:1:1"), "2001:db8:0:1:1:1:1:1");        // 4.2.2
  EXPECT_EQ(canon("2001:0:0:1:0:0:0:1"), "2001:0:0:1::1");                 // 4.2.3
  EXPECT_EQ(canon("2001:db8:0:0:1:0:0:1"), "2001:db8::1:0:0:1");           // 4.2.3 tie
  EXPECT_EQ(canon("2001:DB8::AB"), "2001:db8::ab");                        // 4.3
  EXPECT_EQ(canon("::"), "::");
  EXPECT_EQ(canon("::1"), "::1");
  EXPECT_EQ(canon("fe80::"), "fe80::");
  EXPECT_EQ(canon("::ffff:192.0.2.1"), "::ffff:192.0.2.1");               // section 5
  EXPECT_EQ(canon("1:2:3:4:5:6:7::"), "1:2:3:4:5:6:7:0");
}

TEST(IpAddress, RejectsBadIpv6) {
  EXPECT_EQ(canon("1::2::3"), "<invalid>");
  EXPECT_EQ(canon(":1:2"), "<invalid>");
  EXPECT_EQ(canon("1:2:"), "<invalid>");
  EXPECT_EQ(canon("12345::"), "<invalid>");
  EXPECT_EQ(canon("1:2:3:4:5:6:7:8:9"), "<invalid>");
  EXPECT_EQ(canon("1:2:3:4:5:6:7:8::"), "<invalid>");
  EXPECT_EQ(canon("g::"), "<invalid>");
}

TEST(IpAddress, LinkLocal) {
  EXPECT_TRUE(IpAddress::parse("fe80::1")->is_link_local());
  EXPECT_TRUE(IpAddress::parse("febf::1")->is_link_local());
  EXPECT_FALSE(IpAddress::parse("fec0::1")->is_link_local());
  EXPECT_FALSE(IpAddress::parse("10.0.0.1")->is_link_local());
}

TEST(Prefix, ClearsHostBits) {
  auto p = Prefix::parse("10.1.2.3/8");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->to_string(), "10.0.0.0/8");
  EXPECT_FALSE(Prefix::parse("10.1.2.3/8", Prefix::HostBits::kReject).has_value());
  EXPECT_EQ(Prefix::parse("2001:db8:ffff::/33")->to_string(), "2001:db8:8000::/33");
  EXPECT_FALSE(Prefix::parse("10.0.0.0/33").has_value());
  EXPECT_FALSE(Prefix::parse("::/129").has_value());
  EXPECT_FALSE(Prefix::parse("10.0.0.0/").has_value());
  EXPECT_FALSE(Prefix::parse("10.0.0.0/08").has_value());
  EXPECT_EQ(Prefix::parse("0.0.0.0/0")->to_string(), "0.0.0.0/0");
}

TEST(Prefix, Contains) {
  auto p = *Prefix::parse("192.0.2.0/25");
  EXPECT_TRUE(p.contains(*IpAddress::parse("192.0.2.127")));
  EXPECT_FALSE(p.contains(*IpAddress::parse("192.0.2.128")));
  EXPECT_TRUE(p.contains(*Prefix::parse("192.0.2.64/26")));
  EXPECT_FALSE(p.contains(*Prefix::parse("192.0.2.0/24")));
  EXPECT_FALSE(p.contains(*IpAddress::parse("::")));
}

// Our formatter agrees with glibc's inet_ntop, which follows RFC 5952, and
// our parser reads back what either writes.
RC_GTEST_PROP(IpAddress, Ipv6TextMatchesInetNtop, (std::array<uint8_t, 16> raw, uint16_t zero_mask)) {
  for (size_t i = 0; i < 8; ++i)
    if ((zero_mask >> i) & 1) raw[2 * i] = raw[2 * i + 1] = 0;
  // Avoid the IPv4-compatible and mapped forms, which glibc writes its own way.
  RC_PRE(!(raw[0] == 0 && raw[1] == 0 && raw[2] == 0 && raw[3] == 0 && raw[4] == 0 && raw[5] == 0 &&
           raw[6] == 0 && raw[7] == 0 && raw[8] == 0 && raw[9] == 0));
  auto a = IpAddress::from_bytes(IpFamily::V6, raw.data());
  char buf[INET6_ADDRSTRLEN];
  RC_ASSERT(inet_ntop(AF_INET6, raw.data(), buf, sizeof buf) != nullptr);
  RC_ASSERT(a.to_string() == std::string(buf));
  RC_ASSERT(IpAddress::parse(a.to_string()) == a);
}

RC_GTEST_PROP(Prefix, NormalisedRoundTrip, (std::array<uint8_t, 16> raw, uint8_t len_seed, bool v4)) {
  IpFamily f = v4 ? IpFamily::V4 : IpFamily::V6;
  unsigned len = len_seed % (IpAddress::max_len(f) + 1);
  auto p = Prefix::make(IpAddress::from_bytes(f, raw.data()), len);
  RC_ASSERT(p.has_value());
  auto q = Prefix::parse(p->to_string(), Prefix::HostBits::kReject);
  RC_ASSERT(q.has_value());
  RC_ASSERT(*q == *p);
  RC_ASSERT(p->contains(IpAddress::from_bytes(f, raw.data())));
}

}  // namespace
}  // namespace petrel::net
