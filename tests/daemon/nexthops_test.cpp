// Tests of daemon/nexthops.h: the next-hop tracker the table asks, before
// a kernel syncer attaches its resolver (resolved, cost 0), with one
// (resolved through the kernel's routes), after their changes (the next
// hops that changed), and once detached again.
#include "daemon/nexthops.h"

#include <gtest/gtest.h>
#include <linux/if.h>
#include <linux/rtnetlink.h>

#include <algorithm>

namespace petrel::daemon {
namespace {

net::IpAddress addr(const char* s) { return *net::IpAddress::parse(s); }

fib::Message route(uint16_t type, const char* dst, uint32_t metric, const char* gw, uint32_t ifindex) {
  fib::Route r;
  r.dst = *net::Prefix::parse(dst);
  r.table = 254;
  r.metric = metric;
  r.protocol = RTPROT_STATIC;
  r.type = RTN_UNICAST;
  r.nexthops.push_back(fib::NextHop{true, addr(gw), ifindex, 0});
  return fib::Message{fib::Header{type, 0, 0, 0}, r};
}

TEST(NexthopTracker, ResolvedUntilAttachedThenFollowsTheKernel) {
  NexthopTracker t;
  EXPECT_EQ(t.resolve(addr("203.0.113.9")), (table::NexthopState{true, 0}));  // no syncer: as before
  EXPECT_EQ(t.resolve(addr("10.0.0.2")), (table::NexthopState{true, 0}));
  EXPECT_FALSE(t.status().tracking);
  EXPECT_EQ(t.status().nexthops.size(), 2u);

  fib::Interfaces ifs;
  (void)ifs.apply(fib::Message{fib::Header{RTM_NEWLINK, 0, 0, 0}, fib::Link{2, IFF_UP | IFF_RUNNING, "eth0"}});
  auto a = addr("10.0.0.1");
  (void)ifs.apply(fib::Message{fib::Header{RTM_NEWADDR, 0, 0, 0}, fib::Address{2, 24, 0, a, a}});
  fib::Resolver r;
  int owner = 0;
  std::vector<table::NexthopUpdate> changed;
  {
    auto lock = t.update();
    changed = t.attach(&owner, &r, &ifs, lock);
  }
  // 203.0.113.9 has no route: unresolved now; 10.0.0.2 is connected (no change).
  ASSERT_EQ(changed.size(), 1u);
  EXPECT_EQ(changed[0].address, addr("203.0.113.9"));
  EXPECT_FALSE(changed[0].state.resolved);

  {
    auto lock = t.update();
    (void)r.apply(route(RTM_NEWROUTE, "203.0.113.0/24", 20, "10.0.0.3", 2));
    changed = t.refresh(lock);
  }
  ASSERT_EQ(changed.size(), 1u);
  EXPECT_EQ(changed[0].state, (table::NexthopState{true, 20}));
  EXPECT_EQ(t.resolve(addr("203.0.113.9")), (table::NexthopState{true, 20}));
  EXPECT_EQ(t.resolve(addr("fe80::1")), (table::NexthopState{true, 0}));  // link-local: the session's link

  NexthopsStatus s = t.status();
  EXPECT_TRUE(s.tracking);
  EXPECT_EQ(s.resolve_routes, 1u);
  auto it = std::find_if(s.nexthops.begin(), s.nexthops.end(),
                         [](const NexthopInfo& i) { return i.address == addr("203.0.113.9"); });
  ASSERT_NE(it, s.nexthops.end());
  EXPECT_EQ(it->resolved.how, fib::Resolution::kRecursive);
  EXPECT_EQ(it->resolved.via, net::Prefix::parse("203.0.113.0/24"));
  EXPECT_EQ(it->interfaces, std::vector<std::string>{"eth0"});

  // A second syncer (a reload's) attached with an empty view: it answers;
  // once it goes, the first one answers again.
  fib::Resolver empty;
  int second = 0;
  {
    auto lock = t.update();
    changed = t.attach(&second, &empty, &ifs, lock);
  }
  ASSERT_EQ(changed.size(), 1u);
  EXPECT_FALSE(changed[0].state.resolved);
  changed = t.detach(&second);
  ASSERT_EQ(changed.size(), 1u);
  EXPECT_EQ(changed[0].state, (table::NexthopState{true, 20}));

  // An owner never attached changes nothing; the last one's: back to cost 0.
  int other = 0;
  EXPECT_TRUE(t.detach(&other).empty());
  changed = t.detach(&owner);
  ASSERT_EQ(changed.size(), 1u);
  EXPECT_EQ(changed[0].state, (table::NexthopState{true, 0}));
  EXPECT_FALSE(t.status().tracking);
}

}  // namespace
}  // namespace petrel::daemon
