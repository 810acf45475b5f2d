// The BMP encoder (bmp/bmp.h): byte-exact messages built by hand from
// RFC 7854 section 4 and RFC 9069, and Route Monitoring read back
// through a small reader of BMP framing here and codec::UpdateView.
#include "bmp/bmp.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "codec/update.h"
#include "crates/bytes/bytes.h"
#include "tests/bmp/bmp_reader.h"

namespace petrel::bmp {
namespace {

std::vector<std::byte> hex(const std::string& s) {
  std::vector<std::byte> out;
  std::string digits;
  for (char c : s)
    if (c != ' ') digits += c;
  for (size_t i = 0; i + 1 < digits.size(); i += 2)
    out.push_back(static_cast<std::byte>(std::stoi(digits.substr(i, 2), nullptr, 16)));
  return out;
}

using testing::Framed;

std::vector<Framed> split(std::vector<std::byte> all) {
  auto out = testing::take_messages(all);
  EXPECT_TRUE(all.empty());
  return out;
}

PeerHeader v4_peer() {
  PeerHeader h;
  h.flags = kFlagL;
  h.address = net::IpAddress::v4(0xc0000201);  // 192.0.2.1
  h.as = 65001;
  h.bgp_id = 0x0a000001;
  h.seconds = 1000;
  h.micros = 5;
  return h;
}

constexpr const char* kV4PeerHeader =
    "00 40 0000000000000000 000000000000000000000000 c0000201 0000fde9 0a000001 000003e8 00000005";

TEST(Bmp, InitiationCarriesItsTlvs) {
  std::vector<std::byte> out;
  const InfoTlv tlvs[] = {{info::kSysDescr, "P"}, {info::kSysName, "r1"}};
  initiation(tlvs, out);
  EXPECT_EQ(out, hex("03 00000011 04  0001 0001 50  0002 0002 7231"));
}

TEST(Bmp, TerminationHasAReasonAndAnOptionalString) {
  std::vector<std::byte> out;
  termination(TerminationReason::kAdministrativelyClosed, "", out);
  EXPECT_EQ(out, hex("03 0000000c 05  0001 0002 0000"));
  out.clear();
  termination(TerminationReason::kOutOfResources, "bye", out);
  EXPECT_EQ(out, hex("03 00000013 05  0000 0003 627965  0001 0002 0002"));
}

TEST(Bmp, PerPeerHeaderOfAnIpv4Peer) {
  std::vector<std::byte> out;
  per_peer_header(v4_peer(), out);
  EXPECT_EQ(out, hex(kV4PeerHeader));
  EXPECT_EQ(out.size(), kPerPeerHeaderLen);
}

TEST(Bmp, PerPeerHeaderOfAnIpv6PeerSetsV) {
  PeerHeader h;
  h.address = *net::IpAddress::parse("2001:db8::1");
  h.as = 1;
  std::vector<std::byte> out;
  per_peer_header(h, out);
  EXPECT_EQ(out, hex("00 80 0000000000000000 20010db8000000000000000000000001 00000001 00000000 00000000 00000000"));
}

TEST(Bmp, LocRibPeerHasNoAddressAndNoV) {
  PeerHeader h;
  h.type = PeerType::kLocRib;
  h.address = *net::IpAddress::parse("2001:db8::1");  // ignored: RFC 9069
  h.as = 65000;
  h.bgp_id = 0x01020304;
  std::vector<std::byte> out;
  per_peer_header(h, out);
  EXPECT_EQ(out, hex("03 00 0000000000000000 00000000000000000000000000000000 0000fde8 01020304 00000000 00000000"));
}

TEST(Bmp, PeerUpCarriesAddressesPortsAndBothOpens) {
  const auto sent = hex("ffffffffffffffffffffffffffffffff 001d 01 04 fde8 005a 01020304 00");
  const auto received = hex("ffffffffffffffffffffffffffffffff 001d 01 04 fde9 005a 0a000001 00");
  PeerUp up;
  up.local_address = net::IpAddress::v4(0xc0000202);
  up.local_port = 179;
  up.remote_port = 40000;
  up.sent_open = sent;
  up.received_open = received;
  std::vector<std::byte> out;
  PeerHeader h = v4_peer();
  h.flags = 0;
  peer_up(h, up, out);
  std::string want = "03 0000007e 03 00 00 0000000000000000 000000000000000000000000 c0000201 0000fde9 0a000001 "
                     "000003e8 00000005  000000000000000000000000 c0000202 00b3 9c40 "
                     "ffffffffffffffffffffffffffffffff 001d 01 04 fde8 005a 01020304 00 "
                     "ffffffffffffffffffffffffffffffff 001d 01 04 fde9 005a 0a000001 00";
  EXPECT_EQ(out, hex(want));
}

TEST(Bmp, LocRibPeerUpCarriesTheTableName) {
  const auto open = hex("ffffffffffffffffffffffffffffffff 001d 01 04 fde8 005a 01020304 00");
  PeerHeader h;
  h.type = PeerType::kLocRib;
  h.as = 65000;
  h.bgp_id = 0x01020304;
  const InfoTlv name[] = {{info::kTableName, "global"}};
  PeerUp up;
  up.sent_open = open;
  up.received_open = open;
  up.tlvs = name;
  std::vector<std::byte> out;
  peer_up(h, up, out);
  auto msgs = split(out);
  ASSERT_EQ(msgs.size(), 1u);
  EXPECT_EQ(msgs[0].type, MessageType::kPeerUp);
  // 42 header, 16 + 2 + 2 local, 29 + 29 OPENs, TLV 4 + 6.
  ASSERT_EQ(msgs[0].body.size(), 42u + 20 + 58 + 10);
  std::vector<std::byte> tail(msgs[0].body.end() - 10, msgs[0].body.end());
  EXPECT_EQ(tail, hex("0003 0006 676c6f62616c"));
  std::vector<std::byte> local(msgs[0].body.begin() + 42, msgs[0].body.begin() + 62);
  EXPECT_EQ(local, std::vector<std::byte>(20, std::byte{0}));
}

TEST(Bmp, PeerDownWithAndWithoutData) {
  std::vector<std::byte> out;
  peer_down(v4_peer(), DownReason::kRemoteNoNotification, {}, out);
  EXPECT_EQ(out, hex(std::string("03 00000031 02 ") + kV4PeerHeader + " 04"));
  out.clear();
  const auto cease = hex("ffffffffffffffffffffffffffffffff 0015 03 06 02");
  peer_down(v4_peer(), DownReason::kLocalNotification, cease, out);
  EXPECT_EQ(out, hex(std::string("03 00000046 02 ") + kV4PeerHeader +
                     " 01 ffffffffffffffffffffffffffffffff 0015 03 06 02"));
}

TEST(Bmp, StatisticsCountersAndGauges) {
  const Stat stats[] = {{stat::kRejectedByPolicy, 3, {}},
                        {stat::kAdjRibInRoutes, 0x100000000ull, {}},
                        {stat::kAdjRibInRoutesPerFamily, 7, codec::kIpv6Unicast}};
  std::vector<std::byte> out;
  statistics(v4_peer(), stats, out);
  EXPECT_EQ(out, hex(std::string("03 00000057 01 ") + kV4PeerHeader +
                     " 00000003  0000 0004 00000003  0007 0008 0000000100000000"
                     "  0009 000b 0002 01 0000000000000007"));
}

TEST(Bmp, RouteMonitoringWrapsAnUpdate) {
  const auto eor = hex("ffffffffffffffffffffffffffffffff 0017 02 0000 0000");
  std::vector<std::byte> out;
  route_monitoring(v4_peer(), eor, out);
  EXPECT_EQ(out, hex(std::string("03 00000047 00 ") + kV4PeerHeader +
                     " ffffffffffffffffffffffffffffffff 0017 02 0000 0000"));
}

TEST(Bmp, RouteMonitoringOfAWithdrawal) {
  const codec::NlriPrefix gone[] = {{*net::Prefix::parse("10.0.0.0/8"), 0}};
  std::vector<std::byte> out;
  auto n = route_monitoring(v4_peer(), codec::kIpv4Unicast, nullptr, {}, gone, {}, out);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 1u);
  EXPECT_EQ(out, hex(std::string("03 00000049 00 ") + kV4PeerHeader +
                     " ffffffffffffffffffffffffffffffff 0019 02 0002 080a 0000"));
}

// Announcements of both families read back through codec::UpdateView.
TEST(Bmp, RouteMonitoringRoundTrip) {
  for (codec::Family f : {codec::kIpv4Unicast, codec::kIpv6Unicast}) {
    for (bool add_path : {false, true}) {
      codec::PathAttributes a;
      a.origin = codec::Origin::kIgp;
      a.as_path = codec::AsPath{{{codec::SegmentType::kAsSequence, {65001, 4200000000u}}}};
      if (f == codec::kIpv4Unicast) {
        a.next_hop = net::IpAddress::v4(0xc0000201);
      } else {
        a.mp_family = f;
        a.mp_next_hop = codec::NextHop{*net::IpAddress::parse("2001:db8::1"), std::nullopt};
      }
      const codec::AttributeSet set = codec::AttributeSet::from(a);
      std::vector<codec::NlriPrefix> routes;
      for (uint32_t i = 0; i < 2000; ++i) {
        const std::string text = f == codec::kIpv4Unicast
                                     ? "10." + std::to_string(i / 256) + "." + std::to_string(i % 256) + ".0/24"
                                     : "2001:db8:" + std::to_string(i) + "::/48";
        routes.push_back({*net::Prefix::parse(text), add_path ? i + 1 : 0});
      }
      std::vector<std::byte> out;
      codec::SessionParams sent;
      if (add_path) sent.add_path_send.add(f);
      auto n = route_monitoring(v4_peer(), f, &set, routes, {}, sent, out);
      ASSERT_TRUE(n.ok());
      EXPECT_GT(*n, 1u);  // 2000 prefixes do not fit one UPDATE
      auto msgs = split(out);
      ASSERT_EQ(msgs.size(), *n);
      codec::SessionParams params;
      if (add_path) params.add_path_receive.add(f);
      std::vector<codec::NlriPrefix> back;
      for (const Framed& m : msgs) {
        ASSERT_EQ(m.type, MessageType::kRouteMonitoring);
        std::vector<std::byte> header(m.body.begin(), m.body.begin() + kPerPeerHeaderLen);
        EXPECT_EQ(header, hex(kV4PeerHeader));
        auto view = testing::update_of(m, params);
        ASSERT_EQ(view.action(), codec::ErrorAction::kNone);
        EXPECT_EQ(view.attribute_set().as_path_length(), 2u);
        for (const auto& range : view.announced())
          for (const auto& p : range) back.push_back(p);
      }
      EXPECT_EQ(back, routes);
    }
  }
}

}  // namespace
}  // namespace petrel::bmp
