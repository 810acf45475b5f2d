// Tests of fib/netlink.h: messages against bytes laid out by hand from
// <linux/rtnetlink.h>, round trips of random messages, and hostile input.
#include "fib/netlink.h"

#include <cstdio>
#include <cstring>

#include <gtest/gtest.h>
#include <linux/if.h>
#include <linux/netlink.h>
#include <linux/nexthop.h>
#include <linux/rtnetlink.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include "fib/interfaces.h"
#include "tests/fib/fib_testing.h"

namespace petrel::fib {
namespace {

using testing::addr;
using testing::prefix;

std::vector<std::byte> hex(const char* s) { return *bytes::from_hex(s); }

Route gateway_route() {
  Route r;
  r.dst = prefix("192.0.2.0/24");
  r.table = 100;
  r.metric = 32;
  r.protocol = RTPROT_BGP;
  r.type = RTN_UNICAST;
  r.nexthops.push_back(NextHop{true, addr("10.0.0.2"), 3, 0});
  return r;
}

// Little-endian host (x86-64, aarch64): the wire is host order.
TEST(Netlink, RouteOnTheWire) {
  std::vector<std::byte> out;
  encode(Message{Header{RTM_NEWROUTE, NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL, 7, 0}, gateway_route()},
         out);
  EXPECT_EQ(bytes::to_hex(out), bytes::to_hex(hex(
      "44000000 1800 0506 07000000 00000000"  // nlmsghdr: len 68, RTM_NEWROUTE, flags, seq 7, pid 0
      "02 18 00 00 64 ba 00 01 00000000"      // rtmsg: AF_INET /24 table 100 proto bgp scope 0 unicast
      "0800 0100 c0000200"                    // RTA_DST 192.0.2.0
      "0800 0f00 64000000"                    // RTA_TABLE 100
      "0800 0600 20000000"                    // RTA_PRIORITY 32
      "0800 0500 0a000002"                    // RTA_GATEWAY 10.0.0.2
      "0800 0400 03000000")));                // RTA_OIF 3
  auto m = decode(out);
  ASSERT_TRUE(m.ok()) << to_string(m.error());
  EXPECT_EQ(std::get<Route>(m->body), gateway_route());
}

TEST(Netlink, MultipathOnTheWire) {
  Route r = gateway_route();
  r.dst = prefix("2001:db8::/32");
  r.nexthops = {NextHop{true, addr("fe80::1"), 2, 0}, NextHop{true, addr("fe80::2"), 4, 1}};
  std::vector<std::byte> out;
  encode(Message{Header{RTM_NEWROUTE, NLM_F_REQUEST, 1, 0}, r}, out);
  // RTA_MULTIPATH: two rtnexthops of 8 octets, each with RTA_GATEWAY (20).
  EXPECT_NE(bytes::to_hex(out).find(bytes::to_hex(hex(
                "3c00 0900"                       // RTA_MULTIPATH, 4 + 2 * 28
                "1c00 00 00 02000000"             // rtnexthop len 28, flags 0, hops 0, ifindex 2
                "1400 0500 fe800000000000000000000000000001"
                "1c00 00 01 04000000"
                "1400 0500 fe800000000000000000000000000002"))),
            std::string::npos);
  auto m = decode(out);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(std::get<Route>(m->body), r);
}

// RFC 8950: an IPv4 route over an IPv6 next hop carries RTA_VIA (struct
// rtvia: AF_INET6 in 16 bits, then the address), alone or in RTA_MULTIPATH.
TEST(Netlink, ViaOnTheWire) {
  Route r = gateway_route();
  r.nexthops = {NextHop{true, addr("fe80::2"), 3, 0}};
  std::vector<std::byte> out;
  encode(Message{Header{RTM_NEWROUTE, NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL, 7, 0}, r}, out);
  EXPECT_EQ(bytes::to_hex(out), bytes::to_hex(hex(
      "54000000 1800 0506 07000000 00000000"  // nlmsghdr: len 84
      "02 18 00 00 64 ba 00 01 00000000"      // rtmsg: AF_INET /24 table 100 proto bgp scope 0 unicast
      "0800 0100 c0000200"                    // RTA_DST 192.0.2.0
      "0800 0f00 64000000"                    // RTA_TABLE 100
      "0800 0600 20000000"                    // RTA_PRIORITY 32
      "1600 1200 0a00 fe800000000000000000000000000002 0000"  // RTA_VIA (22 + 2 padding): AF_INET6 fe80::2
      "0800 0400 03000000")));                // RTA_OIF 3
  auto m = decode(out);
  ASSERT_TRUE(m.ok()) << to_string(m.error());
  EXPECT_EQ(std::get<Route>(m->body), r);

  r.nexthops = {NextHop{true, addr("2001:db8::1"), 2, 0}, NextHop{true, addr("10.0.0.2"), 4, 0}};
  out.clear();
  encode(Message{Header{RTM_NEWROUTE, NLM_F_REQUEST, 1, 0}, r}, out);
  EXPECT_NE(bytes::to_hex(out).find(bytes::to_hex(hex(
                "3400 0900"                       // RTA_MULTIPATH, 4 + 32 + 16
                "2000 00 00 02000000"             // rtnexthop len 32, ifindex 2
                "1600 1200 0a00 20010db8000000000000000000000001 0000"
                "1000 00 00 04000000"             // rtnexthop len 16, ifindex 4
                "0800 0500 0a000002"))),           // RTA_GATEWAY 10.0.0.2
            std::string::npos);
  m = decode(out);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(std::get<Route>(m->body), r);

  // A via of an unknown family, or too short for its family: an error.
  for (const char* via : {"0a00 1200 0700 0a000002 0000", "0800 1200 0a00 0a00", "0500 1200 0a 000000"}) {
    std::vector<std::byte> bad = hex((std::string("00000000 1800 0000 01000000 00000000 02 18 00 00 64 ba 00 01 00000000") + via).c_str());
    const auto n = static_cast<uint32_t>(bad.size());
    std::memcpy(bad.data(), &n, 4);
    EXPECT_FALSE(decode(bad).ok()) << via;
  }
}

TEST(Netlink, NexthopObjectsOnTheWire) {
  NexthopObject gw;
  gw.id = 7;
  gw.family = kAfInet;
  gw.protocol = RTPROT_BGP;
  gw.has_gateway = true;
  gw.gateway = addr("10.0.0.2");
  gw.ifindex = 3;
  std::vector<std::byte> out;
  encode(Header{RTM_NEWNEXTHOP, NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL, 7, 0}, gw, out);
  EXPECT_EQ(bytes::to_hex(out), bytes::to_hex(hex(
      "30000000 6800 0506 07000000 00000000"  // nlmsghdr: len 48, RTM_NEWNEXTHOP, flags, seq 7
      "02 00 ba 00 00000000"                  // nhmsg: AF_INET, scope 0, proto bgp, flags 0
      "0800 0100 07000000"                    // NHA_ID 7
      "0800 0500 03000000"                    // NHA_OIF 3
      "0800 0600 0a000002")));                // NHA_GATEWAY 10.0.0.2
  auto m = decode(out);
  ASSERT_TRUE(m.ok()) << to_string(m.error());
  EXPECT_EQ(std::get<NexthopObject>(m->body), gw);

  NexthopObject group;
  group.id = 9;
  group.protocol = RTPROT_BGP;
  group.group = {GroupMember{7, 0}, GroupMember{8, 1}};
  out.clear();
  encode(Header{RTM_NEWNEXTHOP, NLM_F_REQUEST, 1, 0}, group, out);
  EXPECT_NE(bytes::to_hex(out).find(bytes::to_hex(hex(
                "1400 0200"              // NHA_GROUP, 4 + 2 * 8
                "07000000 00 00 0000"    // id 7, weight 0
                "08000000 01 00 0000"))),  // id 8, weight 1
            std::string::npos);
  m = decode(out);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(std::get<NexthopObject>(m->body), group);

  // A route referring to object 7: RTA_NH_ID (30) alone, no gateway.
  Route r = gateway_route();
  r.nexthops.clear();
  r.nhid = 7;
  out.clear();
  encode(Header{RTM_NEWROUTE, NLM_F_REQUEST, 2, 0}, r, out);
  EXPECT_NE(bytes::to_hex(out).find(bytes::to_hex(hex("0800 1e00 07000000"))), std::string::npos);
  EXPECT_EQ(bytes::to_hex(out).find(bytes::to_hex(hex("0800 0500"))), std::string::npos);  // no RTA_GATEWAY
  m = decode(out);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(std::get<Route>(m->body), r);

  std::vector<std::byte> dump;
  encode_dump(RTM_GETNEXTHOP, 0, 4, dump);
  EXPECT_EQ(bytes::to_hex(dump), bytes::to_hex(hex("18000000 6a00 0103 04000000 00000000 00 00 00 00 00000000")));
}

TEST(Netlink, BadNexthopObjects) {
  // A gateway on an object of no family (AF_UNSPEC): no width to read it by.
  EXPECT_EQ(decode(hex("20000000 6800 0000 00000000 00000000 00 00 ba 00 00000000 0800 0600 0a000002")).error(),
            DecodeError::kBadAddress);
  // NHA_GROUP not a whole number of nexthop_grp (8 octets).
  EXPECT_EQ(decode(hex("24000000 6800 0000 00000000 00000000 00 00 ba 00 00000000 0a00 0200 07000000 0000 0000"))
                .error(),
            DecodeError::kBadAddress);
  EXPECT_EQ(decode(hex("14000000 6800 0000 00000000 00000000 0000 0000")).error(), DecodeError::kShortBody);
}

TEST(Netlink, AckAndDone) {
  // NLMSG_ERROR with error -17 (EEXIST) answering seq 9.
  auto wire = hex("24000000 0200 0001 09000000 44332211 efffffff 4c000000 1800 0506 09000000 00000000");
  auto m = decode(wire);
  ASSERT_TRUE(m.ok());
  const auto& a = std::get<Ack>(m->body);
  EXPECT_EQ(a.error, -17);
  EXPECT_EQ(a.request.seq, 9u);
  EXPECT_EQ(a.request.type, RTM_NEWROUTE);
  auto d = decode(hex("14000000 0300 0200 01000000 00000000 00000000"));
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(std::holds_alternative<Done>(d->body));
}

TEST(Netlink, LinkAndAddress) {
  Link l{5, IFF_UP | IFF_RUNNING, "veth0"};
  std::vector<std::byte> out;
  encode(Message{Header{RTM_NEWLINK, 0, 0, 0}, l}, out);
  Address a{5, 24, 0, addr("10.0.0.1"), addr("10.0.0.1")};
  encode(Message{Header{RTM_NEWADDR, 0, 0, 0}, a}, out);
  bytes::Reader r(out);
  auto one = next_message(r);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(std::get<Link>(decode(*one)->body), l);
  auto two = next_message(r);
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(std::get<Address>(decode(*two)->body), a);
  EXPECT_TRUE(r.empty());
}

TEST(Netlink, DumpRequest) {
  std::vector<std::byte> out;
  encode_dump(RTM_GETROUTE, kAfInet6, 3, out);
  EXPECT_EQ(bytes::to_hex(out), bytes::to_hex(hex("1c000000 1a00 0103 03000000 00000000 0a000000 00000000 00000000")));
}

TEST(Netlink, OtherFamiliesAndTypesAreNotErrors) {
  std::vector<std::byte> out;
  encode_dump(RTM_GETROUTE, 28 /* AF_MPLS */, 1, out);
  out[4] = std::byte{RTM_NEWROUTE};  // as if the kernel sent an MPLS route
  auto m = decode(out);
  ASSERT_TRUE(m.ok());
  EXPECT_TRUE(std::holds_alternative<Other>(m->body));
}

TEST(Netlink, BadInput) {
  EXPECT_EQ(decode(hex("1000")).error(), DecodeError::kShortHeader);
  EXPECT_EQ(decode(hex("20000000 1800 0000 00000000 00000000")).error(), DecodeError::kBadLength);
  EXPECT_EQ(decode(hex("14000000 1800 0000 00000000 00000000 00000000")).error(), DecodeError::kShortBody);
  // IPv4 /33
  EXPECT_EQ(decode(hex("1c000000 1800 0000 00000000 00000000 02 21 00 00 fe 00 00 01 00000000")).error(),
            DecodeError::kBadPrefixLength);
  // RTA_DST of 3 octets
  EXPECT_EQ(decode(hex("24000000 1800 0000 00000000 00000000 02 18 00 00 fe 00 00 01 00000000 0700 0100 c00002 00"))
                .error(),
            DecodeError::kBadAddress);
  // an attribute running past the end
  EXPECT_EQ(decode(hex("24000000 1800 0000 00000000 00000000 02 18 00 00 fe 00 00 01 00000000 0c00 0100 c0000200"))
                .error(),
            DecodeError::kBadAttribute);
  bytes::Reader r(hex("08000000 0000"));
  EXPECT_EQ(next_message(r).error(), DecodeError::kShortHeader);
}

RC_GTEST_PROP(Netlink, RoutesRoundTrip, ()) {
  Route r = *testing::gen_route();
  auto type = *rc::gen::element<uint16_t>(RTM_NEWROUTE, RTM_DELROUTE);
  Message m{Header{type, *rc::gen::arbitrary<uint16_t>(), *rc::gen::arbitrary<uint32_t>(),
                   *rc::gen::arbitrary<uint32_t>()},
            r};
  std::vector<std::byte> out;
  encode(m, out);
  RC_ASSERT(out.size() % 4 == 0);
  bytes::Reader rd(out);
  auto one = next_message(rd);
  RC_ASSERT(one.ok());
  auto back = decode(*one);
  RC_ASSERT(back.ok());
  RC_ASSERT(*back == m);
}

RC_GTEST_PROP(Netlink, OtherMessagesRoundTrip, ()) {
  bool v6 = *rc::gen::arbitrary<bool>();
  Message m;
  m.header.seq = *rc::gen::arbitrary<uint32_t>();
  switch (*rc::gen::inRange(0, 5)) {
    case 0: {
      m.header.type = *rc::gen::element<uint16_t>(RTM_NEWLINK, RTM_DELLINK);
      auto name = *rc::gen::container<std::string>(rc::gen::inRange('a', 'z'));
      m.body = Link{*rc::gen::arbitrary<uint32_t>(), *rc::gen::arbitrary<uint32_t>(), name};
      break;
    }
    case 1: {
      m.header.type = *rc::gen::element<uint16_t>(RTM_NEWADDR, RTM_DELADDR);
      auto local = testing::make_addr(v6, *rc::gen::arbitrary<uint64_t>());
      auto peer = *rc::gen::arbitrary<bool>() ? testing::make_addr(v6, *rc::gen::arbitrary<uint64_t>()) : local;
      m.body = Address{*rc::gen::arbitrary<uint32_t>(),
                       static_cast<uint8_t>(*rc::gen::inRange(0, v6 ? 129 : 33)), *rc::gen::arbitrary<uint8_t>(),
                       local, peer};
      break;
    }
    case 3:
      m.header.type = *rc::gen::element<uint16_t>(RTM_NEWNEXTHOP, RTM_DELNEXTHOP);
      m.header.flags = *rc::gen::arbitrary<uint16_t>();
      m.body = *testing::gen_nexthop_object();
      break;
    case 2:
      m.header.type = NLMSG_ERROR;
      m.body = Ack{*rc::gen::arbitrary<int32_t>(),
                   Header{*rc::gen::arbitrary<uint16_t>(), *rc::gen::arbitrary<uint16_t>(),
                          *rc::gen::arbitrary<uint32_t>(), *rc::gen::arbitrary<uint32_t>()}};
      break;
    default:
      m.header.type = NLMSG_DONE;
      m.body = Done{};
      break;
  }
  std::vector<std::byte> out;
  encode(m, out);
  auto back = decode(out);
  RC_ASSERT(back.ok());
  RC_ASSERT(*back == m);
}

RC_GTEST_PROP(Netlink, HostileBytesNeverCrash, ()) {
  auto raw = *rc::gen::container<std::vector<uint8_t>>(rc::gen::arbitrary<uint8_t>());
  std::vector<std::byte> buf(raw.size());
  if (!raw.empty()) std::memcpy(buf.data(), raw.data(), raw.size());
  if (buf.size() >= 4) {  // mostly a plausible length
    uint32_t len = static_cast<uint32_t>(buf.size());
    std::memcpy(buf.data(), &len, 4);
  }
  bytes::Reader r(buf);
  for (int i = 0; i < 64 && !r.empty(); ++i) {
    auto one = next_message(r);
    if (!one) break;
    RC_ASSERT(one->size() >= 16u);
    (void)decode(*one);
  }
}

}  // namespace
}  // namespace petrel::fib

// ---- real messages, captured from a kernel (fuzz/corpus/netlink)

namespace petrel::fib {
namespace {

std::vector<Message> read_corpus(const char* name) {
  std::string path = std::string(PETREL_FIB_CORPUS) + "/" + name;
  std::FILE* f = std::fopen(path.c_str(), "rb");
  EXPECT_NE(f, nullptr) << path;
  std::vector<std::byte> buf;
  if (!f) return {};
  std::byte chunk[4096];
  for (size_t n; (n = std::fread(chunk, 1, sizeof chunk, f)) > 0;) buf.insert(buf.end(), chunk, chunk + n);
  std::fclose(f);
  std::vector<Message> out;
  bytes::Reader r(buf);
  while (!r.empty()) {
    auto one = next_message(r);
    EXPECT_TRUE(one.ok());
    if (!one) break;
    auto m = decode(*one);
    EXPECT_TRUE(m.ok()) << to_string(m.error());
    if (m) out.push_back(*m);
  }
  return out;
}

const Route* find_route(const std::vector<Message>& ms, const net::Prefix& p) {
  for (const Message& m : ms)
    if (const auto* r = std::get_if<Route>(&m.body); r && r->dst == p && r->table == 100) return r;
  return nullptr;
}

TEST(NetlinkReal, RouteDumps) {
  auto v4 = read_corpus("route_dump_v4");
  ASSERT_FALSE(v4.empty());
  EXPECT_TRUE(std::holds_alternative<Done>(v4.back().body));
  const Route* r = find_route(v4, testing::prefix("192.0.2.0/24"));
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->protocol, RTPROT_BGP);
  EXPECT_EQ(r->metric, 32u);
  ASSERT_EQ(r->nexthops.size(), 1u);
  EXPECT_EQ(r->nexthops[0].gateway, testing::addr("10.9.0.2"));
  const Route* mp = find_route(v4, testing::prefix("198.51.100.0/24"));
  ASSERT_NE(mp, nullptr);
  EXPECT_EQ(mp->nexthops.size(), 2u);
  const Route* un = find_route(v4, testing::prefix("203.0.113.0/24"));
  ASSERT_NE(un, nullptr);
  EXPECT_EQ(un->type, RTN_UNREACHABLE);

  auto v6 = read_corpus("route_dump_v6");
  const Route* mp6 = find_route(v6, testing::prefix("2001:db8:200::/48"));
  ASSERT_NE(mp6, nullptr);
  ASSERT_EQ(mp6->nexthops.size(), 2u);
  EXPECT_EQ(mp6->nexthops[1].gateway, testing::addr("2001:db8:9::3"));
}

// Captured from `ip nexthop add id 5 via 10.9.0.2 dev d0 proto bgp`, 6 via
// 10.8.0.2 dev d1, 7 group 5/6,2, 8 via 2001:db8:9::2 dev d0, and routes
// in table 100 with nhid 5, 7 and 8 (metric 32, proto bgp).
TEST(NetlinkReal, NexthopObjectsAndRoutesThatReferToThem) {
  auto nh = read_corpus("nexthop_dump");
  ASSERT_FALSE(nh.empty());
  EXPECT_TRUE(std::holds_alternative<Done>(nh.back().body));
  std::vector<NexthopObject> objects;
  for (const Message& m : nh)
    if (const auto* o = std::get_if<NexthopObject>(&m.body)) objects.push_back(*o);
  ASSERT_EQ(objects.size(), 4u);
  EXPECT_EQ(objects[0].id, 5u);
  EXPECT_EQ(objects[0].family, kAfInet);
  EXPECT_EQ(objects[0].protocol, RTPROT_BGP);
  EXPECT_EQ(objects[0].gateway, testing::addr("10.9.0.2"));
  EXPECT_NE(objects[0].ifindex, 0u);
  EXPECT_EQ(objects[2].id, 7u);
  EXPECT_EQ(objects[2].family, 0);
  EXPECT_EQ(objects[2].group, (std::vector<GroupMember>{{5, 0}, {6, 1}}));  // weights 1 and 2
  EXPECT_EQ(objects[3].gateway, testing::addr("2001:db8:9::2"));

  auto v4 = read_corpus("route_dump_nhid_v4");
  const Route* r = find_route(v4, testing::prefix("192.0.2.0/24"));
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->nhid, 5u);
  ASSERT_EQ(r->nexthops.size(), 1u);  // the object's next hop beside its id (nexthop_compat_mode)
  EXPECT_EQ(r->nexthops[0].gateway, testing::addr("10.9.0.2"));
  const Route* mp = find_route(v4, testing::prefix("198.51.100.0/24"));
  ASSERT_NE(mp, nullptr);
  EXPECT_EQ(mp->nhid, 7u);
  EXPECT_EQ(mp->nexthops.size(), 2u);
  auto v6 = read_corpus("route_dump_nhid_v6");
  const Route* r6 = find_route(v6, testing::prefix("2001:db8:100::/48"));
  ASSERT_NE(r6, nullptr);
  EXPECT_EQ(r6->nhid, 8u);
}

TEST(NetlinkReal, LinksAddressesAndErrors) {
  Interfaces ifs;
  for (const Message& m : read_corpus("links")) (void)ifs.apply(m);
  for (const Message& m : read_corpus("addresses")) (void)ifs.apply(m);
  auto d0 = ifs.index_of("d0");
  ASSERT_TRUE(d0.has_value());
  EXPECT_EQ(ifs.resolve(testing::addr("10.9.0.2")), d0);
  EXPECT_EQ(ifs.resolve(testing::addr("2001:db8:9::2")), d0);
  auto e = read_corpus("error_esrch");
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(std::get<Ack>(e[0].body).error, -3);  // ESRCH
  EXPECT_EQ(std::get<Ack>(e[0].body).request.seq, 5u);
}

}  // namespace
}  // namespace petrel::fib
