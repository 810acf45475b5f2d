// Tests of fsm/restart.h: which families the restarting speaker still
// defers (RFC 4724 section 4.1).
#include "fsm/restart.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <map>
#include <set>

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

// Against a naive model: random sessions coming up (with or without the
// capability, with or without R, listing some families) and End-of-RIB
// markers; a family stays deferred exactly while some peer still owes
// it an End-of-RIB and the timer has not run out, and once settled it
// stays settled.
RC_GTEST_PROP(RestartDeferral, MatchesANaiveModel, ()) {
  const std::vector<codec::Family> fams = {kIpv4Unicast, kIpv6Unicast};
  const std::vector<std::string> names = {"a", "b", "c"};
  std::vector<RestartDeferral::Peer> peers;
  std::map<std::string, std::set<int>> owed;  // model: families (index) still owed
  for (const std::string& n : names) {
    RestartDeferral::Peer p{n, {}};
    for (int i = 0; i < 2; ++i)
      if (*rc::gen::arbitrary<bool>()) {
        p.families.add(fams[i]);
        owed[n].insert(i);
      }
    peers.push_back(p);
  }
  codec::FamilySet kept;
  bool kept_model[2];
  for (int i = 0; i < 2; ++i)
    if ((kept_model[i] = *rc::gen::arbitrary<bool>())) kept.add(fams[i]);
  const double deadline = 50;
  RestartDeferral d(peers, kept, deadline);
  bool settled_before[2] = {false, false};
  double now = 0;
  for (int step = 0, n = *rc::gen::inRange(0, 30); step < n; ++step) {
    const std::string& who = names[*rc::gen::inRange<size_t>(0, names.size())];
    if (*rc::gen::arbitrary<bool>()) {
      const int i = *rc::gen::inRange(0, 2);
      d.end_of_rib(who, fams[i]);
      owed[who].erase(i);
    } else {
      std::optional<codec::GracefulRestart> cap;
      if (*rc::gen::arbitrary<bool>()) {
        codec::GracefulRestart g;
        g.restarting = *rc::gen::arbitrary<bool>();
        std::set<int> listed;
        for (int i = 0; i < 2; ++i)
          if (*rc::gen::arbitrary<bool>()) {
            g.families.push_back({fams[i], true});
            listed.insert(i);
          }
        cap = g;
        std::set<int> still;
        if (!g.restarting)
          for (int i : owed[who])
            if (listed.count(i)) still.insert(i);
        owed[who] = still;
      } else {
        owed[who].clear();
      }
      d.session_up(who, cap);
    }
    now += *rc::gen::inRange(0, 10);
    for (int i = 0; i < 2; ++i) {
      bool waiting = false;
      for (const auto& [name, o] : owed) waiting |= o.count(i) != 0;
      const auto got = d.settled(fams[i], now);
      const auto want = !kept_model[i] ? RestartDeferral::Settled::kNotDeferred
                        : !waiting     ? RestartDeferral::Settled::kEndOfRib
                        : now >= deadline ? RestartDeferral::Settled::kTimer
                                          : RestartDeferral::Settled::kNo;
      RC_ASSERT(got == want);
      if (settled_before[i]) RC_ASSERT(got != RestartDeferral::Settled::kNo);
      settled_before[i] = got != RestartDeferral::Settled::kNo;
    }
  }
}

}  // namespace
}  // namespace petrel::fsm
