// Tests of fib/interfaces.h: which next hops are directly reachable, and
// through which interface, as links and addresses come and go.
#include "fib/interfaces.h"

#include <gtest/gtest.h>
#include <linux/if.h>
#include <linux/rtnetlink.h>

#include "tests/fib/fib_testing.h"

namespace petrel::fib {
namespace {

using testing::addr;

constexpr uint32_t kUp = IFF_UP | IFF_RUNNING;

Message link(uint16_t type, uint32_t index, uint32_t flags, const char* name) {
  return Message{Header{type, 0, 0, 0}, Link{index, flags, name}};
}
Message address(uint16_t type, uint32_t index, const char* local, uint8_t len, const char* peer = nullptr) {
  return Message{Header{type, 0, 0, 0}, Address{index, len, 0, addr(local), addr(peer ? peer : local)}};
}

TEST(Interfaces, ConnectedNetworks) {
  Interfaces ifs;
  EXPECT_TRUE(ifs.apply(link(RTM_NEWLINK, 2, kUp, "eth0")));
  EXPECT_TRUE(ifs.apply(address(RTM_NEWADDR, 2, "10.0.0.1", 24)));
  EXPECT_TRUE(ifs.apply(link(RTM_NEWLINK, 3, kUp, "eth1")));
  EXPECT_TRUE(ifs.apply(address(RTM_NEWADDR, 3, "10.0.0.129", 25)));
  EXPECT_TRUE(ifs.apply(address(RTM_NEWADDR, 3, "2001:db8::1", 64)));
  EXPECT_EQ(ifs.resolve(addr("10.0.0.2")), 2u);
  EXPECT_EQ(ifs.resolve(addr("10.0.0.200")), 3u);  // the longer network
  EXPECT_EQ(ifs.resolve(addr("2001:db8::2")), 3u);
  EXPECT_EQ(ifs.resolve(addr("10.0.1.1")), std::nullopt);  // further than one link
  EXPECT_EQ(ifs.resolve(addr("10.0.0.1")), std::nullopt);  // our own address
  EXPECT_EQ(ifs.index_of("eth1"), 3u);
}

TEST(Interfaces, DownLinksAndRemovedAddresses) {
  Interfaces ifs;
  (void)ifs.apply(link(RTM_NEWLINK, 2, kUp, "eth0"));
  (void)ifs.apply(address(RTM_NEWADDR, 2, "10.0.0.1", 24));
  EXPECT_FALSE(ifs.apply(address(RTM_NEWADDR, 2, "10.0.0.1", 24)));  // nothing new
  EXPECT_TRUE(ifs.apply(link(RTM_NEWLINK, 2, IFF_UP, "eth0")));      // carrier lost
  EXPECT_EQ(ifs.resolve(addr("10.0.0.2")), std::nullopt);
  (void)ifs.apply(link(RTM_NEWLINK, 2, kUp, "eth0"));
  EXPECT_EQ(ifs.resolve(addr("10.0.0.2")), 2u);
  EXPECT_TRUE(ifs.apply(address(RTM_DELADDR, 2, "10.0.0.1", 24)));
  EXPECT_EQ(ifs.resolve(addr("10.0.0.2")), std::nullopt);
  (void)ifs.apply(address(RTM_NEWADDR, 2, "10.0.0.1", 24));
  EXPECT_TRUE(ifs.apply(link(RTM_DELLINK, 2, 0, "eth0")));
  EXPECT_EQ(ifs.resolve(addr("10.0.0.2")), std::nullopt);
}

TEST(Interfaces, PointToPointPeer) {
  Interfaces ifs;
  (void)ifs.apply(link(RTM_NEWLINK, 4, kUp, "ppp0"));
  (void)ifs.apply(address(RTM_NEWADDR, 4, "192.0.2.1", 32, "198.51.100.7"));
  EXPECT_EQ(ifs.resolve(addr("198.51.100.7")), 4u);
  EXPECT_EQ(ifs.resolve(addr("198.51.100.8")), std::nullopt);
}

TEST(Interfaces, LinkLocalNeedsTheSessionsInterface) {
  Interfaces ifs;
  (void)ifs.apply(link(RTM_NEWLINK, 2, kUp, "eth0"));
  (void)ifs.apply(address(RTM_NEWADDR, 2, "fe80::1", 64));
  EXPECT_EQ(ifs.resolve(addr("fe80::2")), std::nullopt);
  EXPECT_EQ(ifs.resolve(addr("fe80::2"), 2), 2u);
  EXPECT_EQ(ifs.resolve(addr("fe80::2"), 9), std::nullopt);  // unknown interface
}

// What the kernel syncer asks to find a session's interface: the one
// holding a local address, or the longest network holding the peer's
// address, up or not.
TEST(Interfaces, HoldingAndNetworkOfUpOrNot) {
  Interfaces ifs;
  (void)ifs.apply(link(RTM_NEWLINK, 2, kUp, "eth0"));
  (void)ifs.apply(address(RTM_NEWADDR, 2, "10.0.0.1", 16));
  (void)ifs.apply(link(RTM_NEWLINK, 3, IFF_UP, "eth1"));  // no carrier
  (void)ifs.apply(address(RTM_NEWADDR, 3, "10.0.1.1", 24));
  EXPECT_EQ(ifs.holding(addr("10.0.1.1")), 3u);
  EXPECT_EQ(ifs.holding(addr("10.0.1.2")), std::nullopt);
  EXPECT_EQ(ifs.network_of(addr("10.0.1.9")), 3u);  // the longer network, though down
  EXPECT_EQ(ifs.resolve(addr("10.0.1.9")), 2u);     // resolve() takes only links up
  EXPECT_EQ(ifs.network_of(addr("10.0.9.9")), 2u);
  EXPECT_EQ(ifs.network_of(addr("10.1.0.1")), std::nullopt);
  EXPECT_EQ(ifs.network_of(addr("2001:db8::1")), std::nullopt);
}

}  // namespace
}  // namespace petrel::fib
