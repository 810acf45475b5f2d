// Tests of fsm/restart.h: which families the restarting speaker still
// defers (RFC 4724 section 4.1).
#include "fsm/restart.h"

#include <gtest/gtest.h>

namespace petrel::fsm {
namespace {

using codec::kIpv4Unicast;
using codec::kIpv6Unicast;
using S = RestartDeferral::Settled;

codec::GracefulRestart capability(std::initializer_list<codec::Family> fs, bool restarting = false) {
  codec::GracefulRestart g;
  g.restarting = restarting;
  for (codec::Family f : fs) g.families.push_back({f, true});
  return g;
}

RestartDeferral two_peers() {
  return RestartDeferral({{"a", {kIpv4Unicast, kIpv6Unicast}}, {"b", {kIpv4Unicast}}}, {kIpv4Unicast, kIpv6Unicast},
                         100.0);
}

TEST(RestartDeferral, WaitsForEveryPeersEndOfRibPerFamily) {
  RestartDeferral d = two_peers();
  EXPECT_TRUE(d.restarting(0));
  EXPECT_TRUE(d.forwarding_kept(kIpv4Unicast));
  d.session_up("a", capability({kIpv4Unicast, kIpv6Unicast}));
  d.session_up("b", capability({kIpv4Unicast}));
  d.end_of_rib("a", kIpv4Unicast);
  EXPECT_EQ(d.settled(kIpv4Unicast, 1), S::kNo);
  EXPECT_EQ(d.waiting_for(kIpv4Unicast), std::vector<std::string>{"b"});
  d.end_of_rib("a", kIpv6Unicast);
  EXPECT_EQ(d.settled(kIpv6Unicast, 1), S::kEndOfRib);
  EXPECT_TRUE(d.restarting(1));
  d.end_of_rib("b", kIpv4Unicast);
  EXPECT_EQ(d.settled(kIpv4Unicast, 1), S::kEndOfRib);
  EXPECT_FALSE(d.restarting(1));
}

TEST(RestartDeferral, TheTimerEndsTheWait) {
  RestartDeferral d = two_peers();  // b never comes up
  d.session_up("a", capability({kIpv4Unicast, kIpv6Unicast}));
  d.end_of_rib("a", kIpv4Unicast);
  EXPECT_EQ(d.settled(kIpv4Unicast, 99.9), S::kNo);
  EXPECT_EQ(d.settled(kIpv4Unicast, 100), S::kTimer);
  EXPECT_FALSE(d.restarting(100));
}

TEST(RestartDeferral, PeersWithoutTheCapabilityOrRestartingTooAreNotWaitedFor) {
  RestartDeferral d = two_peers();
  d.session_up("a", std::nullopt);                         // no capability on both sides
  d.session_up("b", capability({kIpv4Unicast}, true));  // R bit: it waits for us
  EXPECT_EQ(d.settled(kIpv4Unicast, 0), S::kEndOfRib);
  EXPECT_EQ(d.settled(kIpv6Unicast, 0), S::kEndOfRib);
}

TEST(RestartDeferral, OnlyTheFamiliesTheCapabilityListsAreWaitedFor) {
  RestartDeferral d = two_peers();
  d.session_up("a", capability({kIpv4Unicast}));
  EXPECT_EQ(d.settled(kIpv6Unicast, 0), S::kEndOfRib);
  EXPECT_EQ(d.settled(kIpv4Unicast, 0), S::kNo);
}

TEST(RestartDeferral, NothingKeptNothingDeferred) {
  RestartDeferral d({{"a", {kIpv4Unicast}}}, {}, 100.0);
  EXPECT_FALSE(d.restarting(0));
  EXPECT_FALSE(d.forwarding_kept(kIpv4Unicast));
  EXPECT_EQ(d.settled(kIpv4Unicast, 0), S::kNotDeferred);
  RestartDeferral none;
  EXPECT_FALSE(none.restarting(0));
}

}  // namespace
}  // namespace petrel::fsm
