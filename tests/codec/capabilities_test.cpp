// Tests for codec/capabilities: RFC 5492 section 4 and each capability's
// RFC. Vectors are hand-made or taken from real captures.
#include "codec/capabilities.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include "tests/codec/open_gen.h"

namespace petrel::codec {
namespace {

std::vector<std::byte> hex(std::string_view s) { return bytes::from_hex(s).value(); }

Capabilities decode_ok(std::string_view h) {
  auto v = hex(h);
  Capabilities c;
  auto r = decode_capabilities(v, c);
  EXPECT_TRUE(r.ok()) << h;
  return c;
}

NotifyError decode_err(std::string_view h, std::vector<std::byte>& keep) {
  keep = hex(h);
  Capabilities c;
  auto r = decode_capabilities(keep, c);
  EXPECT_FALSE(r.ok()) << h;
  return r.ok() ? NotifyError{} : r.error();
}

std::string encode_hex(const Capabilities& c) {
  std::vector<std::byte> out;
  bytes::Writer w(out);
  encode_capabilities(c, w);
  return bytes::to_hex(out);
}

TEST(Capabilities, Rfc4760Sec8MultiprotocolIgnoresReservedOctet) {
  auto c = decode_ok("01 04 0002 ff 01  01 04 0001 00 02");
  ASSERT_EQ(c.multiprotocol.size(), 2u);
  EXPECT_EQ(c.multiprotocol[0], kIpv6Unicast);
  EXPECT_EQ(c.multiprotocol[1], kIpv4Multicast);
  EXPECT_TRUE(c.has_family(kIpv6Unicast));
  EXPECT_FALSE(c.has_family(kIpv4Unicast));
  EXPECT_EQ(c.families(), (FamilySet{kIpv6Unicast, kIpv4Multicast}));
  EXPECT_EQ(encode_hex(c), "010400020001010400010002");
}

TEST(Capabilities, Rfc2918RouteRefreshAndPreStandardCode128) {
  auto c = decode_ok("0200");
  EXPECT_TRUE(c.route_refresh);
  EXPECT_FALSE(c.route_refresh_old);
  auto old = decode_ok("8000");
  EXPECT_TRUE(old.route_refresh);
  EXPECT_TRUE(old.route_refresh_old);
  EXPECT_EQ(encode_hex(old), "02008000");
}

TEST(Capabilities, Rfc7313EnhancedRouteRefreshAndRfc8654ExtendedMessage) {
  auto c = decode_ok("4600 0600");
  EXPECT_TRUE(c.enhanced_route_refresh);
  EXPECT_TRUE(c.extended_message);
}

TEST(Capabilities, Rfc6793FourOctetAs) {
  auto c = decode_ok("41 04 a4c46652");
  EXPECT_EQ(c.four_octet_as, 0xa4c46652u);
  EXPECT_EQ(encode_hex(c), "4104a4c46652");
}

TEST(Capabilities, Rfc7911Sec4AddPath) {
  auto c = decode_ok("45 08 0001 01 01 0002 01 03");
  ASSERT_EQ(c.add_path.size(), 2u);
  EXPECT_EQ(c.add_path[0], (AddPathFamily{kIpv4Unicast, AddPathMode::kReceive}));
  EXPECT_EQ(c.add_path_mode(kIpv6Unicast), AddPathMode::kBoth);
  EXPECT_EQ(c.add_path_mode(kIpv4Multicast), std::nullopt);
  EXPECT_EQ(encode_hex(c), "450800010101000201" "03");
}

TEST(Capabilities, Rfc7911Sec4AddPathBadModeIsNotUnderstood) {
  auto c = decode_ok("45 08 0001 01 01 0002 01 04");
  EXPECT_TRUE(c.add_path.empty());
  ASSERT_EQ(c.unknown.size(), 1u);
  EXPECT_EQ(c.unknown[0].code, cap_code::kAddPath);
  EXPECT_EQ(bytes::to_hex(c.unknown[0].value), "0001010100020104");
}

TEST(Capabilities, Rfc8950Sec3ExtendedNextHop) {
  auto c = decode_ok("05 0c 0001 0001 0002  0001 0080 0002");
  ASSERT_EQ(c.extended_next_hop.size(), 2u);
  EXPECT_TRUE(c.extended_next_hop_allowed(kIpv4Unicast, 2));
  EXPECT_FALSE(c.extended_next_hop_allowed(kIpv4Unicast, 1));
  EXPECT_TRUE(c.extended_next_hop_allowed(Family{1, 128}, 2));
  EXPECT_EQ(encode_hex(c), "050c000100010002000100800002");
}

TEST(Capabilities, Rfc8950Sec3WideSafiIsNotUnderstood) {
  auto c = decode_ok("05 06 0001 0100 0002");
  EXPECT_TRUE(c.extended_next_hop.empty());
  ASSERT_EQ(c.unknown.size(), 1u);
  EXPECT_EQ(c.unknown[0].code, cap_code::kExtendedNextHop);
}

TEST(Capabilities, Rfc4724Sec3GracefulRestartWithRfc8538NotificationBit) {
  // From a real capture: R and N set, 300 s, no families.
  auto c = decode_ok("40 02 c12c");
  ASSERT_TRUE(c.graceful_restart);
  EXPECT_TRUE(c.graceful_restart->restarting);
  EXPECT_TRUE(c.graceful_restart->notification);
  EXPECT_EQ(c.graceful_restart->restart_time, 300);
  // N only, 60 s, IPv4 unicast with forwarding preserved.
  auto d = decode_ok("40 06 403c 0001 01 80");
  ASSERT_TRUE(d.graceful_restart);
  EXPECT_FALSE(d.graceful_restart->restarting);
  EXPECT_TRUE(d.graceful_restart->notification);
  EXPECT_EQ(d.graceful_restart->restart_time, 60);
  ASSERT_EQ(d.graceful_restart->families.size(), 1u);
  EXPECT_EQ(d.graceful_restart->families[0].family, kIpv4Unicast);
  EXPECT_TRUE(d.graceful_restart->families[0].forwarding_preserved);
  EXPECT_EQ(encode_hex(d), "4006403c00010180");
}

TEST(Capabilities, Rfc9494Sec3LongLivedGracefulRestart) {
  auto c = decode_ok("47 0e 0001 01 80 000000  0002 01 00 015180");
  ASSERT_TRUE(c.long_lived_graceful_restart);
  const auto& f = c.long_lived_graceful_restart->families;
  ASSERT_EQ(f.size(), 2u);
  EXPECT_TRUE(f[0].forwarding_preserved);
  EXPECT_EQ(f[0].stale_time, 0u);
  EXPECT_EQ(f[1].family, kIpv6Unicast);
  EXPECT_FALSE(f[1].forwarding_preserved);
  EXPECT_EQ(f[1].stale_time, 86400u);
  EXPECT_EQ(encode_hex(c), "470e00010180000000000201000151" "80");
}

TEST(Capabilities, Rfc9234Sec4_1Role) {
  auto c = decode_ok("09 01 03");
  EXPECT_EQ(c.role, Role::kCustomer);
  EXPECT_EQ(encode_hex(c), "090103");
}

TEST(Capabilities, Rfc9234Sec4_2DifferingRolesAreARoleMismatch) {
  std::vector<std::byte> keep;
  auto e = decode_err("09 01 03  09 01 00", keep);
  EXPECT_EQ(e.code, ErrorCode::kOpenMessage);
  EXPECT_EQ(e.subcode, open_error::kRoleMismatch);
  // The same role twice is fine.
  EXPECT_EQ(decode_ok("090104 090104").role, Role::kPeer);
}

TEST(Capabilities, FqdnHostnameAndDomain) {
  auto c = decode_ok("49 10 0e 65786974312d64656269616e2d39 00");
  ASSERT_TRUE(c.fqdn);
  EXPECT_EQ(c.fqdn->hostname, "exit1-debian-9");
  EXPECT_EQ(c.fqdn->domain, "");
  EXPECT_EQ(encode_hex(c), "49100e65786974312d64656269616e2d3900");
}

TEST(Capabilities, FqdnThatDoesNotParseIsKeptAsUnknown) {
  auto c = decode_ok("49 03 05 6162");
  EXPECT_FALSE(c.fqdn);
  ASSERT_EQ(c.unknown.size(), 1u);
  EXPECT_EQ(c.unknown[0].code, cap_code::kFqdn);
}

TEST(Capabilities, Rfc5492Sec4UnknownCapabilitiesAreKeptInOrder) {
  auto c = decode_ok("07 02 abcd  03 00");
  ASSERT_EQ(c.unknown.size(), 2u);
  EXPECT_EQ(c.unknown[0].code, 7);
  EXPECT_EQ(bytes::to_hex(c.unknown[0].value), "abcd");
  EXPECT_EQ(c.unknown[1].code, 3);
  EXPECT_TRUE(c.unknown[1].value.empty());
  EXPECT_EQ(encode_hex(c), "0702abcd0300");
}

TEST(Capabilities, Rfc5492Sec4MalformedKnownCapabilityIsAnOpenError) {
  const char* cases[] = {
      "01 03 000101",          // multiprotocol is 4 octets
      "02 01 00",              // route refresh is empty
      "80 01 00",              // so is the old code
      "46 01 00",              // enhanced route refresh
      "06 01 00",              // extended message
      "41 02 0001",            // 4-octet AS is 4 octets
      "45 03 000101",          // ADD-PATH entries are 4 octets
      "05 04 00010001",        // extended next hop entries are 6 octets
      "40 01 00",              // graceful restart needs its 2-octet header
      "40 05 0078 000101",     // then 4-octet entries
      "47 06 000101800000",    // LLGR entries are 7 octets
      "09 02 0001",            // role is 1 octet
  };
  for (const char* h : cases) {
    std::vector<std::byte> keep;
    auto e = decode_err(h, keep);
    EXPECT_EQ(e.code, ErrorCode::kOpenMessage) << h;
    EXPECT_EQ(e.subcode, open_error::kUnspecific) << h;
    EXPECT_EQ(bytes::to_hex(e.data()), bytes::to_hex(keep)) << h;  // the capability itself
  }
}

TEST(Capabilities, Rfc5492Sec4TruncatedCapabilityIsAnOpenError) {
  for (const char* h : {"41", "41 04 0000", "0200 41 05 00000001"}) {
    std::vector<std::byte> keep;
    auto e = decode_err(h, keep);
    EXPECT_EQ(e.code, ErrorCode::kOpenMessage) << h;
    EXPECT_EQ(e.subcode, open_error::kUnspecific) << h;
  }
}

TEST(Capabilities, RepeatedCapabilitiesAreMerged) {
  auto c = decode_ok("45 04 0001 01 01  45 04 0002 01 02");
  EXPECT_EQ(c.add_path.size(), 2u);
}

TEST(Capabilities, Rfc4724Sec3OnlyTheLastGracefulRestartCapabilityCounts) {
  // The first: R and N set, 120 s, IPv4 unicast with F; the last: no flags,
  // 30 s, IPv6 unicast without F.
  auto c = decode_ok("40 06 c078 0001 01 80  45 04 0001 01 01  40 06 001e 0002 01 00");
  ASSERT_TRUE(c.graceful_restart);
  const GracefulRestart last{.restarting = false, .notification = false, .restart_time = 30,
                             .families = {{kIpv6Unicast, false}}};
  EXPECT_EQ(*c.graceful_restart, last);
  // A last one with no families leaves none.
  auto d = decode_ok("40 06 0078 0001 01 80  40 02 0010");
  ASSERT_TRUE(d.graceful_restart);
  EXPECT_EQ(*d.graceful_restart, (GracefulRestart{.restart_time = 16, .families = {}}));
}

TEST(Capabilities, GracefulRestartIsEncodedAsOneCapability) {
  Capabilities c;
  c.graceful_restart.emplace();
  c.graceful_restart->restart_time = 90;
  for (uint16_t i = 0; i < 70; ++i) c.graceful_restart->families.push_back({Family{i, 1}, i % 2 == 0});
  std::vector<std::byte> out;
  bytes::Writer w(out);
  encode_capabilities(c, w);
  ASSERT_EQ(out.size(), 2 + 2 + 63 * 4u);  // cut at what one capability holds
  Capabilities back;
  ASSERT_TRUE(decode_capabilities(out, back).ok());
  ASSERT_TRUE(back.graceful_restart);
  EXPECT_EQ(back.graceful_restart->restart_time, 90);
  c.graceful_restart->families.resize(kMaxGracefulRestartFamilies);
  EXPECT_EQ(back, c);
}

TEST(Capabilities, LongListsAreSplitOverSeveralCapabilities) {
  Capabilities c;
  for (uint16_t i = 0; i < 100; ++i) c.add_path.push_back({Family{i, 1}, AddPathMode::kSend});
  std::vector<std::byte> out;
  bytes::Writer w(out);
  encode_capabilities(c, w);
  // 63 entries of 4 octets fit in one capability, the other 37 in a second.
  ASSERT_EQ(out.size(), 2 + 63 * 4 + 2 + 37 * 4u);
  EXPECT_EQ(std::to_integer<int>(out[1]), 252);
  Capabilities back;
  ASSERT_TRUE(decode_capabilities(out, back).ok());
  EXPECT_EQ(back, c);
}

TEST(Capabilities, EmptyValueDecodesToNothing) {
  Capabilities c;
  ASSERT_TRUE(decode_capabilities({}, c).ok());
  EXPECT_EQ(c, Capabilities{});
  EXPECT_EQ(encode_hex(c), "");
}

RC_GTEST_PROP(Capabilities, DecodeEncodeRoundTrip, ()) {
  Capabilities c = *gen::capabilities();
  std::vector<std::byte> out;
  bytes::Writer w(out);
  encode_capabilities(c, w);
  Capabilities back;
  RC_ASSERT(decode_capabilities(out, back).ok());
  RC_ASSERT(back == c);
}

RC_GTEST_PROP(Capabilities, ArbitraryBytesNeverCrash, (std::vector<uint8_t> raw)) {
  std::vector<std::byte> v;
  for (uint8_t b : raw) v.push_back(std::byte{b});
  Capabilities c;
  auto r = decode_capabilities(v, c);
  if (!r.ok()) {
    // Error data views into the input.
    auto d = r.error().data();
    RC_ASSERT(d.empty() || (d.data() >= v.data() && d.data() + d.size() <= v.data() + v.size()));
  }
}

}  // namespace
}  // namespace petrel::codec
