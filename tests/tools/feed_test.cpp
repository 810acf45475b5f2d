// tools/bench/feed: a synthetic table packed into UPDATEs decodes back to
// exactly that table, with the neighbour's AS first and its next hops.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <map>

#include "codec/update.h"
#include "tools/bench/feed.h"

namespace petrel::bench {
namespace {

struct Decoded {
  std::map<net::Prefix, int> seen;  // how often each prefix was announced
  int end_of_ribs = 0;
  bool all_clean = true;
  bool first_as_ok = true;
  bool next_hops_ok = true;
};

Decoded decode_all(const Feed& f, uint32_t neighbour_as, const net::IpAddress& nh4, const net::IpAddress& nh6) {
  Decoded d;
  codec::SessionParams params;
  for (size_t i = 0; i < f.messages(); ++i) {
    auto u = codec::UpdateView::decode(f.body(i), params, codec::PeerType::kExternal);
    if (u.action() != codec::ErrorAction::kNone) d.all_clean = false;
    if (u.end_of_rib()) {
      ++d.end_of_ribs;
      continue;
    }
    auto set = u.attribute_set();
    if (set.first_as() != neighbour_as) d.first_as_ok = false;
    for (const auto& range : u.announced())
      for (const auto& p : range) {
        ++d.seen[p.prefix];
        bool v4 = p.prefix.family() == net::IpFamily::V4;
        if (v4 && set.next_hop() != nh4) d.next_hops_ok = false;
        if (!v4 && (!set.mp_next_hop() || set.mp_next_hop()->global != nh6)) d.next_hops_ok = false;
      }
  }
  return d;
}

TEST(Feed, DecodesBackToTheTable) {
  synth::Params sp;
  sp.v4_prefixes = 20000;
  sp.v6_prefixes = 5000;
  sp.attr_sets = 4000;
  auto t = synth::generate(sp, 2);
  FeedOptions o;
  o.neighbour_as = 64999;
  o.next_hop_v4 = *net::IpAddress::parse("198.18.0.2");
  o.next_hop_v6 = *net::IpAddress::parse("fd00::2");
  auto f = build_feed(t, o, codec::SessionParams{});
  ASSERT_TRUE(f.ok()) << f.error();
  EXPECT_EQ(f->v4_routes, t.v4_count());
  EXPECT_EQ(f->v6_routes, t.v6_count());
  auto d = decode_all(*f, 64999, o.next_hop_v4, *o.next_hop_v6);
  EXPECT_TRUE(d.all_clean);
  EXPECT_TRUE(d.first_as_ok);
  EXPECT_TRUE(d.next_hops_ok);
  EXPECT_EQ(d.end_of_ribs, 2);
  EXPECT_EQ(d.seen.size(), t.v4_count() + t.v6_count());
  for (const auto& gs : {&t.v4, &t.v6})
    for (const auto& g : *gs)
      for (const auto& p : g.prefixes) EXPECT_EQ(d.seen[p], 1) << p.to_string();
}

TEST(Feed, IPv6RoutesNeedAnIPv6NextHop) {
  synth::Params sp;
  sp.v4_prefixes = 10;
  sp.v6_prefixes = 10;
  auto t = synth::generate(sp, 0);
  FeedOptions o;
  o.next_hop_v4 = *net::IpAddress::parse("198.18.0.2");
  auto f = build_feed(t, o, codec::SessionParams{});
  EXPECT_FALSE(f.ok());
}

RC_GTEST_PROP(Feed, EveryPrefixOnceInMessagesThatFit, ()) {
  synth::Params sp;
  sp.seed = *rc::gen::inRange<uint64_t>(1, 1000);
  sp.v4_prefixes = *rc::gen::inRange<uint32_t>(1, 3000);
  sp.v6_prefixes = *rc::gen::inRange<uint32_t>(0, 1000);
  sp.attr_sets = *rc::gen::inRange<uint32_t>(1, 2000);
  auto t = synth::generate(sp, *rc::gen::inRange<uint32_t>(0, 8));
  FeedOptions o;
  o.neighbour_as = 65001;
  o.next_hop_v4 = *net::IpAddress::parse("10.0.0.1");
  o.next_hop_v6 = *net::IpAddress::parse("2001:db8::1");
  codec::SessionParams params;
  params.extended_message = *rc::gen::arbitrary<bool>();
  auto f = build_feed(t, o, params);
  RC_ASSERT(f.ok());
  for (size_t i = 0; i < f->messages(); ++i)
    RC_ASSERT(f->body(i).size() + codec::kHeaderLen <= params.max_message_len());
  auto d = decode_all(*f, 65001, o.next_hop_v4, *o.next_hop_v6);
  RC_ASSERT(d.all_clean);
  RC_ASSERT(d.first_as_ok);
  RC_ASSERT(d.next_hops_ok);
  RC_ASSERT(d.seen.size() == t.v4_count() + t.v6_count());
  for (const auto& [p, n] : d.seen) RC_ASSERT(n == 1);
}

}  // namespace
}  // namespace petrel::bench
