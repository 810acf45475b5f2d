// The table (table/table.h): batches, implicit withdrawals, peers going
// down, stale marks, journals and followers; checked against a naive model
// and, with concurrent writers and followers, against the table itself;
// followers' wake-ups (Table::subscribe).
#include "table/table.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <tuple>

#include "codec/update.h"
#include "codec/update_builder.h"
#include "tests/table/attrs_testing.h"

namespace petrel::table {
namespace {

using codec::NlriPrefix;

constexpr FamilyIndex kV4 = 0;  // codec::kKnownFamilyList order
constexpr FamilyIndex kV6 = 1;

net::Prefix P(const char* s) { return *net::Prefix::parse(s); }
NlriPrefix N(const char* s, uint32_t path_id = 0) { return NlriPrefix{P(s), path_id}; }

codec::AttributeSet attrs(uint32_t path_len, uint32_t med = 0, uint32_t first_as = 65001) {
  codec::PathAttributes a;
  a.origin = codec::Origin::kIgp;
  codec::AsPath path;
  codec::AsSegment seg;
  seg.type = codec::SegmentType::kAsSequence;
  for (uint32_t i = 0; i < path_len; ++i) seg.asns.push_back(first_as + i);
  if (path_len) path.segments.push_back(seg);
  a.as_path = path;
  a.next_hop = net::IpAddress::v4(0xC0000201);
  a.med = med;
  return codec::AttributeSet::from(a);
}

using testing::peer_info;

// Everything a follower learned: the best route per prefix, by value.
struct Seen {
  uint16_t slot;
  uint32_t path_id;
  std::vector<std::byte> wire;
  friend bool operator==(const Seen&, const Seen&) = default;
};
using View = std::map<std::pair<FamilyIndex, net::Prefix>, Seen>;

size_t follow_into(const Table& t, Follower& fo, View& v, size_t max = 1000, size_t max_first = SIZE_MAX) {
  return t.read(fo, max, [&](const FollowEvent& ev) {
    if (ev.resync)
      std::erase_if(v, [&](const auto& kv) { return t.shard_of(kv.first.second) == ev.shard; });
    if (ev.change.family == UINT8_MAX) return;  // an empty shard's resync
    auto key = std::make_pair(ev.change.family, ev.change.prefix);
    if (ev.best) {
      auto w = ev.best->attrs->wire();
      v[key] = Seen{ev.best->slot, ev.best->path_id, {w.begin(), w.end()}};
    } else {
      v.erase(key);
    }
  }, max_first);
}

bool same_wire(bytes::Span a, bytes::Span b) { return std::equal(a.begin(), a.end(), b.begin(), b.end()); }

View table_view(const Table& t) {
  View v;
  t.walk([&](const Change& c, const std::optional<RouteView>& best, std::span<const Route>) {
    if (!best) return;
    auto w = best->attrs->wire();
    v[{c.family, c.prefix}] = Seen{best->slot, best->path_id, {w.begin(), w.end()}};
  });
  return v;
}

TEST(TableTest, AnnounceThenLookupAndCounts) {
  Table t;
  auto s = t.add_peer(peer_info(1));
  ASSERT_TRUE(s);
  auto a = attrs(3);
  std::vector<NlriPrefix> ann = {N("192.0.2.0/24"), N("198.51.100.0/24")};
  auto r = t.apply(*s, kV4, &a, ann, {});
  EXPECT_EQ(r.announced, 2u);
  EXPECT_EQ(r.best_changes, 2u);
  EXPECT_EQ(t.prefixes(kV4), 2u);
  EXPECT_EQ(t.peer_routes(*s, kV4), 2u);
  EXPECT_EQ(t.routes(), 2u);
  EXPECT_EQ(t.interner().size(), 1u);  // one set for both prefixes
  int seen = 0;
  EXPECT_TRUE(t.lookup(kV4, P("192.0.2.0/24"), [&](const RouteView& rv, bool best) {
    ++seen;
    EXPECT_TRUE(best);
    EXPECT_EQ(rv.slot, *s);
    EXPECT_EQ(rv.attrs->as_path_length(), 3u);
  }));
  EXPECT_EQ(seen, 1);
  EXPECT_FALSE(t.lookup(kV4, P("203.0.113.0/24"), [&](const RouteView&, bool) { ADD_FAILURE(); }));
  EXPECT_FALSE(t.lookup(kV6, P("2001:db8::/32"), [&](const RouteView&, bool) { ADD_FAILURE(); }));
}

// A batch that gathered a burst gives its room back once applied, keeps a
// small one, and gathers and applies as before afterwards.
TEST(TableTest, ABatchGivesBackTheRoomOfABurst) {
  Table t;
  auto s = t.add_peer(peer_info(1));
  ASSERT_TRUE(s);
  auto a = attrs(3);
  std::vector<NlriPrefix> burst;
  for (uint32_t i = 0; i < 1000; ++i)
    burst.push_back(NlriPrefix{*net::Prefix::make(net::IpAddress::v4((10u << 24) | (i << 8)), 24), 0});
  Batch b(t);
  b.add(kV4, &a, burst, {});
  b.release_storage(64);  // not while it holds operations
  EXPECT_GE(b.capacity(), 1000u);
  t.apply(*s, b);
  EXPECT_EQ(t.peer_routes(*s, kV4), 1000u);
  b.release_storage(64);
  EXPECT_EQ(b.capacity(), 0u);
  std::vector<NlriPrefix> few = {N("192.0.2.0/24")};
  b.add(kV4, &a, few, burst);
  t.apply(*s, b);
  EXPECT_EQ(t.peer_routes(*s, kV4), 1u);
  b.release_storage(64);
  b.add(kV4, &a, {}, few);
  t.apply(*s, b);
  b.release_storage(64);  // a small room stays
  EXPECT_GT(b.capacity(), 0u);
  EXPECT_LE(b.capacity(), 64u);
  EXPECT_EQ(t.peer_routes(*s, kV4), 0u);
}

// TableOptions::expected_ipv4_prefixes / expected_ipv6_prefixes: the
// unicast maps have their room before the first route, three quarters full
// at that many prefixes (not rounded up to a power of two), and filling
// them to it does not grow them.
TEST(TableTest, ExpectedPrefixesSizeTheMapsAhead) {
  TableOptions o;
  o.shards = 4;
  Table none(o);
  o.expected_ipv4_prefixes = 100000;
  o.expected_ipv6_prefixes = 20000;
  Table sized(o);
  const size_t slots = sized.memory().map_bytes;
  EXPECT_LT(none.memory().map_bytes, 100000u);
  // 4 maps of 33,334 24-byte slots and 4 of 6,667 40-byte ones.
  EXPECT_EQ(slots, 4u * (33334 * 24 + 6667 * 40));
  // Growing to as many prefixes ends at the same size.
  auto set = attrs(1, 10, 65001);
  const uint16_t slot = *none.add_peer(peer_info(1));
  (void)*sized.add_peer(peer_info(1));
  std::vector<NlriPrefix> batch;
  for (uint32_t i = 0; i < 100000; ++i) {
    batch.push_back({*net::Prefix::make(net::IpAddress::v4(0x0A000000 | (i << 8)), 24), 0});
    if (batch.size() == 1000) {
      for (Table* t : {&none, &sized}) t->apply(slot, kV4, &set, batch, {});
      batch.clear();
    }
  }
  EXPECT_EQ(sized.memory().map_bytes, slots);
  EXPECT_EQ(none.routes(), 100000u);
  EXPECT_EQ(sized.routes(), 100000u);
  EXPECT_EQ(none.memory().map_bytes, 4u * 32768 * 24);  // no IPv6 map made
}

TEST(TableTest, ImplicitWithdrawReplacesAndFreesTheOldSet) {
  Table t;
  auto s = *t.add_peer(peer_info(1));
  auto a = attrs(3), b = attrs(4);
  std::vector<NlriPrefix> ann = {N("192.0.2.0/24")};
  t.apply(s, kV4, &a, ann, {});
  auto r = t.apply(s, kV4, &b, ann, {});
  EXPECT_EQ(r.announced, 1u);
  EXPECT_EQ(r.best_changes, 1u);  // same route, new attributes
  EXPECT_EQ(t.peer_routes(s, kV4), 1u);
  EXPECT_EQ(t.interner().size(), 1u);  // the first set went with its last route
  t.lookup(kV4, P("192.0.2.0/24"), [&](const RouteView& rv, bool) { EXPECT_EQ(rv.attrs->as_path_length(), 4u); });
  // The same again changes nothing.
  r = t.apply(s, kV4, &b, ann, {});
  EXPECT_EQ(r.best_changes, 0u);
}

TEST(TableTest, WithdrawRemovesAndCountsUnknown) {
  Table t;
  auto s = *t.add_peer(peer_info(1));
  auto a = attrs(2);
  std::vector<NlriPrefix> ann = {N("2001:db8::/32"), N("2001:db8:1::/48")};
  t.apply(s, kV6, &a, ann, {});
  std::vector<NlriPrefix> wd = {N("2001:db8::/32"), N("2001:db8:ffff::/48")};
  auto r = t.apply(s, kV6, nullptr, {}, wd);
  EXPECT_EQ(r.withdrawn, 1u);
  EXPECT_EQ(r.not_found, 1u);
  EXPECT_EQ(t.prefixes(kV6), 1u);
  EXPECT_EQ(t.peer_routes(s, kV6), 1u);
  wd = {N("2001:db8:1::/48")};
  t.apply(s, kV6, nullptr, {}, wd);
  EXPECT_EQ(t.prefixes(kV6), 0u);
  EXPECT_EQ(t.interner().size(), 0u);
  // A withdrawal of another peer's route does not touch it.
  auto s2 = *t.add_peer(peer_info(2));
  t.apply(s, kV6, &a, ann, {});
  r = t.apply(s2, kV6, nullptr, {}, ann);
  EXPECT_EQ(r.not_found, 2u);
  EXPECT_EQ(t.prefixes(kV6), 2u);
}

TEST(TableTest, BestMovesWhenTheBestIsWithdrawn) {
  Table t;
  auto s1 = *t.add_peer(peer_info(1)), s2 = *t.add_peer(peer_info(2));
  auto shorter = attrs(2, 0, 65002), longer = attrs(5, 0, 65001);
  std::vector<NlriPrefix> ann = {N("192.0.2.0/24")};
  t.apply(s1, kV4, &longer, ann, {});
  auto r = t.apply(s2, kV4, &shorter, ann, {});
  EXPECT_EQ(r.best_changes, 1u);
  auto best_slot = [&] {
    int slot = -1;
    t.lookup(kV4, P("192.0.2.0/24"), [&](const RouteView& rv, bool b) { if (b) slot = rv.slot; });
    return slot;
  };
  EXPECT_EQ(best_slot(), s2);
  // Withdrawing the other route leaves the best where it is.
  r = t.apply(s1, kV4, nullptr, {}, ann);
  EXPECT_EQ(r.best_changes, 0u);
  t.apply(s1, kV4, &longer, ann, {});
  r = t.apply(s2, kV4, nullptr, {}, ann);
  EXPECT_EQ(r.best_changes, 1u);
  EXPECT_EQ(best_slot(), s1);
}

TEST(TableTest, AddPathKeepsOneRoutePerPathId) {
  Table t;
  auto s = *t.add_peer(peer_info(1));
  auto a = attrs(3), b = attrs(2);
  std::vector<NlriPrefix> one = {N("192.0.2.0/24", 1)}, two = {N("192.0.2.0/24", 2)};
  t.apply(s, kV4, &a, one, {});
  t.apply(s, kV4, &b, two, {});
  EXPECT_EQ(t.peer_routes(s, kV4), 2u);
  EXPECT_EQ(t.prefixes(kV4), 1u);
  int n = 0;
  uint32_t best_id = 0;
  t.lookup(kV4, P("192.0.2.0/24"), [&](const RouteView& rv, bool best) {
    ++n;
    if (best) best_id = rv.path_id;
  });
  EXPECT_EQ(n, 2);
  EXPECT_EQ(best_id, 2u);  // the shorter path
  t.apply(s, kV4, nullptr, {}, two);
  EXPECT_EQ(t.peer_routes(s, kV4), 1u);
}

// A peer's paths per prefix are bounded (PeerInfo::max_paths_per_prefix):
// a further path identifier is refused and counted; a known one is still
// replaced and withdrawn; after a withdrawal there is room for one more;
// another peer and another prefix have bounds of their own.
TEST(TableTest, PathsPerPrefixFromOnePeerAreBounded) {
  Table t;
  PeerInfo info = peer_info(1);
  info.max_paths_per_prefix = 3;
  const auto s = *t.add_peer(info), other = *t.add_peer(peer_info(2));
  const auto a = attrs(2), b = attrs(1);
  std::vector<NlriPrefix> five;
  for (uint32_t id = 1; id <= 5; ++id) five.push_back(N("192.0.2.0/24", id));
  BatchResult r = t.apply(s, kV4, &a, five, {});
  EXPECT_EQ(r.announced, 3u);
  EXPECT_EQ(r.paths_refused, 2u);
  EXPECT_EQ(t.peer_routes(s, kV4), 3u);
  EXPECT_EQ(t.peer_paths_refused(s), 2u);
  // Path 2 again with another set: a replacement, not a further path.
  r = t.apply(s, kV4, &b, std::vector<NlriPrefix>{N("192.0.2.0/24", 2)}, {});
  EXPECT_EQ(r.announced, 1u);
  EXPECT_EQ(r.paths_refused, 0u);
  // Path 4 was never taken: its withdrawal is not found.
  r = t.apply(s, kV4, nullptr, {}, std::vector<NlriPrefix>{N("192.0.2.0/24", 4), N("192.0.2.0/24", 1)});
  EXPECT_EQ(r.not_found, 1u);
  EXPECT_EQ(r.withdrawn, 1u);
  r = t.apply(s, kV4, &a, std::vector<NlriPrefix>{N("192.0.2.0/24", 4), N("192.0.2.0/24", 5)}, {});
  EXPECT_EQ(r.announced, 1u);
  EXPECT_EQ(r.paths_refused, 1u);
  EXPECT_EQ(t.peer_paths_refused(s), 3u);
  std::vector<uint32_t> ids;
  t.lookup(kV4, P("192.0.2.0/24"), [&](const RouteView& rv, bool) { ids.push_back(rv.path_id); });
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(ids, (std::vector<uint32_t>{2, 3, 4}));
  // Another prefix from the same peer, and another peer (default bound).
  r = t.apply(s, kV4, &a, std::vector<NlriPrefix>{N("198.51.100.0/24", 9)}, {});
  EXPECT_EQ(r.announced, 1u);
  r = t.apply(other, kV4, &a, five, {});
  EXPECT_EQ(r.announced, 5u);
  EXPECT_EQ(t.peer_paths_refused(other), 0u);
  // A slot taken again starts its count at zero.
  t.remove_peer(s);
  const auto again = *t.add_peer(info);
  EXPECT_EQ(t.peer_paths_refused(again), 0u);
}

// Many paths for one prefix (past Entry::kIndexFrom, where the entry keeps
// an index) from a few peers, announced, replaced and withdrawn at random
// under a random bound per peer: after every step the routes, the bound,
// the best (select_best over all of them) and the counts are the model's,
// and the follower ends with the table.
RC_GTEST_PROP(TableProperty, ManyPathsMatchANaiveModel, ()) {
  std::vector<codec::AttributeSet> pool;
  // One neighbouring AS and MED mostly (a flood of paths alike), others
  // with another MED or AS, one with a longer path.
  pool.push_back(attrs(2, 10, 65001));
  pool.push_back(attrs(2, 10, 65001));
  pool.push_back(attrs(2, 5, 65001));
  pool.push_back(attrs(2, 20, 65001));
  pool.push_back(attrs(2, 7, 65009));
  pool.push_back(attrs(3, 0, 65001));
  Table t(TableOptions{.shards = 2,
                       .journal_retention = *rc::gen::inRange<size_t>(1, 300),
                       .best = {.always_compare_med = *rc::gen::weightedElement<bool>({{3, false}, {1, true}})},
                       .sweep_threads = 1,
                       .hash_key = HashKey{*rc::gen::arbitrary<uint64_t>(), 7}});
  const std::vector<std::string> texts = {"192.0.2.0/24", "2001:db8::/32"};
  constexpr int kPeers = 3;
  std::vector<uint16_t> slots;
  std::vector<uint32_t> limits;
  std::vector<uint64_t> refused(kPeers, 0);
  for (int i = 0; i < kPeers; ++i) {
    PeerInfo info = peer_info(static_cast<uint32_t>(i + 1), i == 2);
    info.max_paths_per_prefix = *rc::gen::element<uint32_t>(0, 2, 40, 90, 200);
    limits.push_back(info.max_paths_per_prefix);
    slots.push_back(*t.add_peer(info));
  }
  std::map<std::pair<FamilyIndex, net::Prefix>, std::map<std::pair<uint16_t, uint32_t>, int>> model;
  Follower fo = t.follow();
  View seen;
  const auto steps = *rc::gen::inRange(1, 60);
  for (int step = 0; step < steps; ++step) {
    const auto peer = static_cast<size_t>(*rc::gen::inRange(0, kPeers));
    const uint16_t slot = slots[peer];
    const int kind = *rc::gen::inRange(0, 20);
    if (kind == 0) {  // the peer goes down and comes back
      t.remove_peer(slot);
      for (auto& [k, routes] : model) std::erase_if(routes, [&](const auto& kv) { return kv.first.first == slot; });
      PeerInfo info = peer_info(static_cast<uint32_t>(peer + 1), peer == 2);
      info.max_paths_per_prefix = limits[peer];
      slots[peer] = *t.add_peer(info);
      refused[peer] = 0;
      continue;
    }
    const bool announce = kind <= 13;
    const auto ai = *rc::gen::weightedElement<int>({{8, 0}, {4, 1}, {1, 2}, {1, 3}, {1, 4}, {1, 5}});
    const auto& x = texts[*rc::gen::inRange<size_t>(0, texts.size())];
    const FamilyIndex fam = x.find(':') == std::string::npos ? kV4 : kV6;
    // A run of path identifiers (a flood) or a few at random.
    std::vector<NlriPrefix> list;
    const auto n = *rc::gen::inRange<uint32_t>(1, 80);
    const auto from = *rc::gen::inRange<uint32_t>(0, 150);
    const bool run = *rc::gen::arbitrary<bool>();
    for (uint32_t i = 0; i < n; ++i)
      list.push_back(N(x.c_str(), run ? from + i : *rc::gen::inRange<uint32_t>(0, 250)));
    const BatchResult r = announce ? t.apply(slot, fam, &pool[static_cast<size_t>(ai)], list, {})
                                   : t.apply(slot, fam, nullptr, {}, list);
    uint32_t model_refused = 0;
    auto& routes = model[{fam, list[0].prefix}];
    for (const auto& p : list) {
      if (!announce) {
        routes.erase({slot, p.path_id});
        continue;
      }
      if (!routes.contains({slot, p.path_id}) && limits[peer] != 0) {
        const auto mine = std::count_if(routes.begin(), routes.end(), [&](const auto& kv) { return kv.first.first == slot; });
        if (static_cast<uint32_t>(mine) >= limits[peer]) {
          ++model_refused;
          continue;
        }
      }
      routes[{slot, p.path_id}] = ai;
    }
    RC_ASSERT(r.paths_refused == model_refused);
    refused[peer] += model_refused;
    RC_ASSERT(t.peer_paths_refused(slot) == refused[peer]);
    // The touched prefix: its routes and best as the model's.
    const bool found = t.lookup_all(fam, list[0].prefix, [&](std::span<const RouteView> views, int best) {
      RC_ASSERT(views.size() == routes.size());
      std::vector<Candidate> cands;
      for (const RouteView& v : views) {
        auto m = routes.find({v.slot, v.path_id});
        RC_ASSERT(m != routes.end());
        RC_ASSERT(same_wire(v.attrs->wire(), pool[static_cast<size_t>(m->second)].wire()));
        cands.push_back(Candidate{v.attrs, v.peer, v.path_id, v.slot, true});
      }
      RC_ASSERT(best == select_best(cands, t.best_path_options()));
    });
    RC_ASSERT(found == !routes.empty());
    if (*rc::gen::inRange(0, 4) == 0) follow_into(t, fo, seen, *rc::gen::inRange<size_t>(1, 50));
  }
  size_t route_count = 0, most = 0;
  for (const auto& [k, r] : model) {
    route_count += r.size();
    most = std::max(most, r.size());
  }
  RC_CLASSIFY(most > Entry<Key4>::kIndexFrom, "ends indexed");
  RC_ASSERT(t.routes() == route_count);
  RC_ASSERT(t.memory().map_bytes == t.memory(/*walk=*/true).map_bytes);
  follow_into(t, fo, seen, 100000);
  RC_ASSERT(seen == table_view(t));
}

TEST(TableTest, PeerDownWithdrawsEverythingAndFreesTheSlot) {
  Table t;
  auto s1 = *t.add_peer(peer_info(1)), s2 = *t.add_peer(peer_info(2));
  auto a = attrs(3), b = attrs(2, 0, 65002);
  std::vector<NlriPrefix> v4 = {N("192.0.2.0/24"), N("198.51.100.0/24"), N("203.0.113.0/24")};
  std::vector<NlriPrefix> v6 = {N("2001:db8::/32")};
  t.apply(s1, kV4, &a, v4, {});
  t.apply(s1, kV6, &a, v6, {});
  t.apply(s2, kV4, &b, std::span(v4).first(1), {});
  Follower fo = t.follow();
  View seen;
  follow_into(t, fo, seen);
  EXPECT_EQ(seen.size(), 4u);
  EXPECT_EQ(t.remove_peer(s1), 4u);
  EXPECT_EQ(t.prefixes(kV4), 1u);
  EXPECT_EQ(t.prefixes(kV6), 0u);
  EXPECT_EQ(t.routes(), 1u);
  EXPECT_EQ(t.interner().size(), 1u);
  follow_into(t, fo, seen);
  EXPECT_EQ(seen, table_view(t));
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen.begin()->second.slot, s2);
  // The slot is free again.
  auto s3 = t.add_peer(peer_info(3));
  ASSERT_TRUE(s3);
  EXPECT_EQ(*s3, s1);
  EXPECT_EQ(t.peer_routes(*s3, kV4), 0u);
}

// skip() puts a follower at the journals' end: the table as it is then is
// not handed to it, the changes after are, and no resynchronisation.
TEST(TableTest, SkipStartsAFollowerAtTheEnd) {
  Table t;
  auto s1 = *t.add_peer(peer_info(1));
  auto a = attrs(3);
  std::vector<NlriPrefix> before = {N("192.0.2.0/24"), N("198.51.100.0/24")};
  t.apply(s1, kV4, &a, before, {});
  Follower fo = t.follow();
  t.skip(fo);
  std::vector<NlriPrefix> after = {N("203.0.113.0/24")};
  t.apply(s1, kV4, &a, after, {});
  std::vector<net::Prefix> handed;
  bool resync = false;
  (void)t.read(fo, 1000, [&](const FollowEvent& ev) {
    resync = resync || ev.resync;
    handed.push_back(ev.change.prefix);
  });
  EXPECT_FALSE(resync);
  ASSERT_EQ(handed.size(), 1u);
  EXPECT_EQ(handed[0], after[0].prefix);
  EXPECT_EQ(fo.resyncs(), 0u);
  // Skipping again leaves nothing to read.
  t.apply(s1, kV4, nullptr, {}, after);
  t.skip(fo);
  EXPECT_EQ(t.read(fo, 1000, [](const FollowEvent&) {}), 0u);
}

// The best counts are gathered per batch and per sweep in a few
// (peer, family) sums: here one batch, then one peer's going down, move
// best routes between more peers than it holds at once.
TEST(TableTest, BestCountsStayRightWhenTheBestMovesAmongManyPeers) {
  Table t;
  constexpr uint32_t kOthers = 12;
  std::vector<uint16_t> others;
  std::vector<std::string> texts;
  for (uint32_t i = 0; i < kOthers; ++i) {
    others.push_back(*t.add_peer(peer_info(10 + i)));
    texts.push_back("10." + std::to_string(i) + ".0.0/16");
  }
  const auto longer = attrs(3), shorter = attrs(1);
  std::vector<NlriPrefix> all;
  for (uint32_t i = 0; i < kOthers; ++i) {
    const NlriPrefix p{P(texts[i].c_str()), 0};
    all.push_back(p);
    t.apply(others[i], kV4, &longer, std::span(&p, 1), {});
    EXPECT_EQ(t.peer_best(others[i], kV4), 1u);
  }
  // One batch takes the best of every prefix from its peer.
  const uint16_t s = *t.add_peer(peer_info(1));
  t.apply(s, kV4, &shorter, all, {});
  EXPECT_EQ(t.peer_best(s, kV4), kOthers);
  for (uint16_t o : others) EXPECT_EQ(t.peer_best(o, kV4), 0u);
  // Its going down hands each back.
  EXPECT_EQ(t.remove_peer(s), kOthers);
  EXPECT_EQ(t.peer_best(s, kV4), 0u);
  for (uint16_t o : others) EXPECT_EQ(t.peer_best(o, kV4), 1u);
}

// RFC 7854 statistic type 1: a route announced again exactly as held is
// a duplicate; a stale one confirmed (route refresh, graceful restart) is
// not, nor is a changed one.
TEST(TableTest, DuplicateAnnouncementsAreCounted) {
  Table t;
  auto s = *t.add_peer(peer_info(1));
  auto a = attrs(3), b = attrs(4);
  std::vector<NlriPrefix> two = {N("192.0.2.0/24"), N("198.51.100.0/24")};
  EXPECT_EQ(t.apply(s, kV4, &a, two, {}).duplicates, 0u);
  EXPECT_EQ(t.apply(s, kV4, &a, two, {}).duplicates, 2u);
  EXPECT_EQ(t.apply(s, kV4, &b, std::span(two).first(1), {}).duplicates, 0u);
  t.mark_stale(s, kV4);
  EXPECT_EQ(t.apply(s, kV4, &a, std::span(two).last(1), {}).duplicates, 0u);
}

TEST(TableTest, StaleRoutesAreSweptUnlessAnnouncedAgain) {
  Table t;
  auto s = *t.add_peer(peer_info(1));
  auto a = attrs(3);
  std::vector<NlriPrefix> all = {N("192.0.2.0/24"), N("198.51.100.0/24"), N("203.0.113.0/24")};
  t.apply(s, kV4, &a, all, {});
  EXPECT_EQ(t.mark_stale(s, kV4), 3u);
  EXPECT_EQ(t.mark_stale(s, kV6), 0u);
  t.apply(s, kV4, &a, std::span(all).first(1), {});  // the refresh resends one
  EXPECT_EQ(t.sweep_stale(s, kV4), 2u);
  EXPECT_EQ(t.prefixes(kV4), 1u);
  bool stale = true;
  t.lookup(kV4, P("192.0.2.0/24"), [&](const RouteView& rv, bool) { stale = rv.stale; });
  EXPECT_FALSE(stale);
  EXPECT_EQ(t.sweep_stale(s, kV4), 0u);
}

// Graceful restart (RFC 4724 section 4.2): a restarting peer's routes are
// marked stale; those it announces again unchanged are confirmed without a
// journal entry (no follower, such as an exporter or the kernel, is told),
// a changed one is journaled, and the sweep takes the rest. The stale count
// follows every path out of the stale state.
TEST(TableTest, StaleRoutesConfirmedUnchangedAreNotJournaled) {
  Table t;
  auto s = *t.add_peer(peer_info(1));
  auto a = attrs(3), b = attrs(2);
  std::vector<NlriPrefix> all = {N("192.0.2.0/24"), N("198.51.100.0/24"), N("203.0.113.0/24"),
                                 N("198.18.0.0/24")};
  t.apply(s, kV4, &a, all, {});
  EXPECT_EQ(t.peer_stale(s, kV4), 0u);
  EXPECT_EQ(t.mark_stale(s, kV4), 4u);
  EXPECT_EQ(t.peer_stale(s, kV4), 4u);
  EXPECT_EQ(t.mark_stale(s, kV4), 0u);  // marked already
  EXPECT_EQ(t.peer_stale(s, kV4), 4u);
  Follower fo = t.follow();
  t.skip(fo);
  auto changes = [&] {
    std::vector<net::Prefix> seen;
    t.read(fo, 1000, [&](const FollowEvent& ev) { seen.push_back(ev.change.prefix); });
    return seen;
  };
  t.apply(s, kV4, &a, std::span(all).first(1), {});  // the same route again
  EXPECT_EQ(t.peer_stale(s, kV4), 3u);
  EXPECT_TRUE(changes().empty());
  t.apply(s, kV4, &b, std::span(all).subspan(1, 1), {});  // changed
  EXPECT_EQ(t.peer_stale(s, kV4), 2u);
  EXPECT_EQ(changes(), std::vector<net::Prefix>{P("198.51.100.0/24")});
  t.apply(s, kV4, nullptr, {}, std::span(all).subspan(2, 1));  // withdrawn while stale
  EXPECT_EQ(t.peer_stale(s, kV4), 1u);
  EXPECT_EQ(changes(), std::vector<net::Prefix>{P("203.0.113.0/24")});
  EXPECT_EQ(t.sweep_stale(s, kV4), 1u);
  EXPECT_EQ(t.peer_stale(s, kV4), 0u);
  EXPECT_EQ(changes(), std::vector<net::Prefix>{P("198.18.0.0/24")});
  EXPECT_EQ(t.peer_routes(s, kV4), 2u);
  // A peer going down with stale routes leaves no count behind.
  EXPECT_EQ(t.mark_stale(s, kV4), 2u);
  EXPECT_EQ(t.remove_peer(s), 2u);
  EXPECT_EQ(t.peer_stale(s, kV4), 0u);
}

TEST(TableTest, AppliesADecodedUpdate) {
  Table t;
  auto s = *t.add_peer(peer_info(1));
  codec::SessionParams params;
  params.four_octet_as = true;
  codec::UpdateBuilder builder(params);
  auto a = attrs(3);
  std::vector<NlriPrefix> ann = {N("192.0.2.0/24"), N("198.51.100.0/24")};
  std::vector<std::byte> wire;
  ASSERT_TRUE(builder.announce(codec::kIpv4Unicast, a, ann, wire).ok());
  auto body = bytes::Span(wire).subspan(codec::kHeaderLen);
  auto u = codec::UpdateView::decode(body, params, codec::PeerType::kExternal);
  ASSERT_EQ(u.action(), codec::ErrorAction::kNone);
  auto r = t.apply(s, u);
  EXPECT_EQ(r.announced, 2u);
  EXPECT_EQ(t.prefixes(kV4), 2u);
  // Treat-as-withdraw: the same UPDATE's prefixes go.
  r = t.apply(s, u, /*treat_as_withdraw=*/true);
  EXPECT_EQ(r.withdrawn, 2u);
  EXPECT_EQ(t.prefixes(kV4), 0u);
  EXPECT_EQ(t.interner().size(), 0u);
}

TEST(TableTest, NewFollowerGetsTheWholeTableThenOnlyChanges) {
  Table t(TableOptions{.shards = 4, .journal_retention = 4, .best = {}});
  auto s = *t.add_peer(peer_info(1));
  auto a = attrs(3);
  std::vector<NlriPrefix> ann;
  std::vector<std::string> texts;
  for (int i = 0; i < 40; ++i) texts.push_back("10." + std::to_string(i) + ".0.0/16");
  for (const auto& x : texts) ann.push_back(N(x.c_str()));
  t.apply(s, kV4, &a, ann, {});
  Follower fo = t.follow();
  View v;
  follow_into(t, fo, v);
  EXPECT_EQ(v.size(), 40u);
  EXPECT_EQ(v, table_view(t));
  size_t events = 0;
  t.read(fo, 100, [&](const FollowEvent&) { ++events; });
  EXPECT_EQ(events, 0u) << "a follower at the end reads nothing";
  // More changes than a shard's retention: the follower falls behind and
  // is resynchronised, ending with the table's content.
  auto b = attrs(4);
  t.apply(s, kV4, &b, ann, {});
  t.apply(s, kV4, nullptr, {}, std::span(ann).first(10));
  follow_into(t, fo, v);
  EXPECT_GT(fo.resyncs(), 0u);
  EXPECT_EQ(v, table_view(t));
  EXPECT_EQ(v.size(), 30u);
}

// A follower that fell behind every shard's journal is not handed the
// whole table in one read when it asks for one shard at a time: each read
// resynchronises one overrun shard, says that more wait, and the last one
// leaves it equal to the table.
TEST(TableTest, OverrunShardsAreHandedWholeOneAtATimeWhenAsked) {
  Table t(TableOptions{.shards = 4, .journal_retention = 2, .best = {}});
  auto s = *t.add_peer(peer_info(1));
  std::vector<NlriPrefix> ann;
  std::vector<std::string> texts;
  for (int i = 0; i < 64; ++i) texts.push_back("10." + std::to_string(i) + ".0.0/16");
  for (const auto& x : texts) ann.push_back(N(x.c_str()));
  auto a = attrs(3), b = attrs(4);
  t.apply(s, kV4, &a, ann, {});
  Follower fo = t.follow();
  View v;
  for (int i = 0; i < 4; ++i) follow_into(t, fo, v, 1000, 1);
  ASSERT_TRUE(fo.primed());
  EXPECT_FALSE(fo.resync_waiting());
  EXPECT_EQ(v, table_view(t));
  t.apply(s, kV4, &b, ann, {});  // 16 changes a shard, 2 kept: every journal overran
  for (uint64_t read = 1; read <= 4; ++read) {
    follow_into(t, fo, v, 1000, 1);
    EXPECT_EQ(fo.resyncs(), read) << "one shard whole per read";
    EXPECT_EQ(fo.resync_waiting(), read < 4);
  }
  EXPECT_EQ(v, table_view(t));
  EXPECT_EQ(follow_into(t, fo, v, 1000, 1), 0u);
  EXPECT_FALSE(fo.resync_waiting());
}

// ---- against a model

struct ModelRoute {
  int attrs;  // index into the pool
};

RC_GTEST_PROP(TableProperty, MatchesANaiveModel, ()) {
  std::vector<codec::AttributeSet> pool;
  for (uint32_t i = 0; i < 6; ++i) pool.push_back(attrs(1 + i % 3, i * 10, 65001 + i % 2));
  // LOCAL_PREF, which routes are chosen by (whoever the peer): 200 leaves
  // the route's rank unknown (Route::rank; the sets decide), 100 does not.
  for (uint32_t lp : {200u, 100u}) {
    codec::PathAttributes a = pool[1].decode();
    a.local_pref = lp;
    pool.push_back(codec::AttributeSet::from(a));
  }
  const std::vector<std::string> texts = {"10.0.0.0/8", "10.1.0.0/16", "192.0.2.0/24", "192.0.2.128/25",
                                          "2001:db8::/32", "2001:db8:1::/48", "0.0.0.0/0"};
  // Withdrawals swept by two threads (the caller and a helper), however few
  // the routes; the maps sized ahead or not (a hint changes no answer).
  Table t(TableOptions{.shards = 3,
                       .journal_retention = *rc::gen::inRange<size_t>(1, 64),
                       .best = {},
                       .sweep_threads = 2,
                       .parallel_sweep_from = 0,
                       .expected_ipv4_prefixes = *rc::gen::element<size_t>(0, 1, 5, 1000),
                       .expected_ipv6_prefixes = *rc::gen::element<size_t>(0, 3, 1000)});
  const int peers = 3;
  std::vector<uint16_t> slots;
  for (int i = 0; i < peers; ++i) slots.push_back(*t.add_peer(peer_info(static_cast<uint32_t>(i + 1), i == 2)));
  // (family, prefix) -> (slot, path id) -> attrs
  std::map<std::pair<FamilyIndex, net::Prefix>, std::map<std::pair<uint16_t, uint32_t>, ModelRoute>> model;
  Follower fo = t.follow();
  View seen;
  const auto steps = *rc::gen::inRange(1, 120);
  for (int step = 0; step < steps; ++step) {
    const int peer = *rc::gen::inRange(0, peers);
    const int kind = *rc::gen::inRange(0, 10);
    if (kind == 0) {  // the peer goes down and comes back
      t.remove_peer(slots[static_cast<size_t>(peer)]);
      for (auto& [k, routes] : model) std::erase_if(routes, [&](const auto& kv) { return kv.first.first == slots[static_cast<size_t>(peer)]; });
      slots[static_cast<size_t>(peer)] = *t.add_peer(peer_info(static_cast<uint32_t>(peer + 1), peer == 2));
    } else {
      const bool announce = kind <= 6;
      const int ai = *rc::gen::inRange(0, static_cast<int>(pool.size()));
      const auto n = *rc::gen::inRange(1, 4);
      std::vector<NlriPrefix> v4, v6;
      for (int i = 0; i < n; ++i) {
        const auto& x = texts[*rc::gen::inRange<size_t>(0, texts.size())];
        uint32_t path_id = *rc::gen::inRange<uint32_t>(0, 2);
        (x.find(':') == std::string::npos ? v4 : v6).push_back(N(x.c_str(), path_id));
      }
      uint16_t slot = slots[static_cast<size_t>(peer)];
      for (auto [fam, list] : {std::pair{kV4, &v4}, std::pair{kV6, &v6}}) {
        if (list->empty()) continue;
        if (announce) t.apply(slot, fam, &pool[static_cast<size_t>(ai)], *list, {});
        else t.apply(slot, fam, nullptr, {}, *list);
        for (const auto& p : *list) {
          auto& routes = model[{fam, p.prefix}];
          if (announce) routes[{slot, p.path_id}] = ModelRoute{ai};
          else routes.erase({slot, p.path_id});
        }
      }
    }
    if (*rc::gen::inRange(0, 4) == 0) follow_into(t, fo, seen, *rc::gen::inRange<size_t>(1, 8));
  }
  std::erase_if(model, [](const auto& kv) { return kv.second.empty(); });
  // Every prefix, every route and its best, as the model has them.
  size_t prefixes = 0;
  t.walk([&](const Change& c, const std::optional<RouteView>& best, std::span<const Route> routes) {
    ++prefixes;
    auto it = model.find({c.family, c.prefix});
    RC_ASSERT(it != model.end());
    RC_ASSERT(routes.size() == it->second.size());
    std::vector<Candidate> cands;
    for (const Route& r : routes) {
      auto m = it->second.find({r.peer, r.path_id});
      RC_ASSERT(m != it->second.end());
      RC_ASSERT(r.attrs->wire().size() == pool[static_cast<size_t>(m->second.attrs)].wire().size());
      RC_ASSERT(std::equal(r.attrs->wire().begin(), r.attrs->wire().end(),
                           pool[static_cast<size_t>(m->second.attrs)].wire().begin()));
      cands.push_back(Candidate{r.attrs, &t.peer(r.peer), r.path_id, r.peer, true});
    }
    int b = select_best(cands, t.best_path_options());
    RC_ASSERT(best.has_value());
    RC_ASSERT(best->slot == routes[static_cast<size_t>(b)].peer);
    RC_ASSERT(best->path_id == routes[static_cast<size_t>(b)].path_id);
  });
  RC_ASSERT(prefixes == model.size());
  // Each peer's count of best routes, kept as the table changed, equals
  // the count over a walk.
  std::map<std::pair<uint16_t, FamilyIndex>, uint64_t> best_of;
  t.walk([&](const Change& c, const std::optional<RouteView>& best, auto) {
    if (best) ++best_of[{best->slot, c.family}];
  });
  for (uint16_t slot : slots)
    for (FamilyIndex f : {kV4, kV6}) RC_ASSERT((t.peer_best(slot, f) == best_of[std::pair{slot, f}]));
  // The bytes counted as the table changed equal a walk of every entry.
  RC_ASSERT(t.memory().map_bytes == t.memory(/*walk=*/true).map_bytes);
  size_t route_count = 0;
  for (const auto& [k, r] : model) route_count += r.size();
  RC_ASSERT(t.routes() == route_count);
  // The follower, once it has read everything, holds exactly the table.
  follow_into(t, fo, seen, 1000);
  RC_ASSERT(seen == table_view(t));
  // Attribute sets are freed with their last route.
  std::set<int> used;
  for (const auto& [k, r] : model)
    for (const auto& [id, mr] : r) used.insert(mr.attrs);
  RC_ASSERT(t.interner().size() == used.size());
}

// Writers on several threads and followers reading at their own pace: at
// the end every follower holds exactly the table's state.
// A writer's peer going down is swept by two threads (the pool's one job at
// a time: a second writer's withdrawal meanwhile is swept by its caller
// alone).
void concurrent_run(size_t retention, unsigned seed) {
  Table t(TableOptions{
      .shards = 8, .journal_retention = retention, .best = {}, .sweep_threads = 2, .parallel_sweep_from = 0});
  std::vector<codec::AttributeSet> pool;
  for (uint32_t i = 0; i < 8; ++i) pool.push_back(attrs(1 + i % 4, i, 65001 + i % 3));
  std::vector<net::Prefix> prefixes;
  for (uint32_t i = 0; i < 512; ++i)
    prefixes.push_back(*net::Prefix::make(net::IpAddress::v4(0x0A000000 | (i << 8)), 24));
  constexpr int kWriters = 4, kFollowers = 3, kOps = 2000;
  std::atomic<int> writers_left{kWriters};
  std::atomic<int> followers_primed{0};  // writers start once every follower has read the table once
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      auto wait_until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
      while (followers_primed.load() < kFollowers && std::chrono::steady_clock::now() < wait_until)
        std::this_thread::yield();
      uint16_t slot = *t.add_peer(peer_info(static_cast<uint32_t>(w + 1), w % 2 == 1));
      uint64_t x = seed * 7919u + static_cast<uint64_t>(w);
      auto next = [&] { x = x * 6364136223846793005ull + 1442695040888963407ull; return static_cast<uint32_t>(x >> 33); };
      for (int op = 0; op < kOps; ++op) {
        std::vector<NlriPrefix> list;
        for (uint32_t k = 0, n = 1 + next() % 6; k < n; ++k) list.push_back({prefixes[next() % prefixes.size()], 0});
        uint32_t what = next() % 100;
        if (what < 60) t.apply(slot, kV4, &pool[next() % pool.size()], list, {});
        else if (what < 98) t.apply(slot, kV4, nullptr, {}, list);
        else {
          t.remove_peer(slot);
          slot = *t.add_peer(peer_info(static_cast<uint32_t>(w + 1), w % 2 == 1));
        }
      }
      writers_left.fetch_sub(1);
    });
  }
  std::vector<View> views(kFollowers);
  std::vector<uint64_t> resyncs(kFollowers);
  for (int f = 0; f < kFollowers; ++f) {
    threads.emplace_back([&, f] {
      Follower fo = t.follow();
      auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      // Read in small steps while the writers run (follower f pauses
      // longer, so it falls behind more), then drain.
      // With a tiny retention the last follower reads once and then not
      // until the writers are done, so it falls behind whatever the
      // machine's scheduling (a loaded machine let every follower keep up).
      const bool sleeper = retention <= 8 && f == kFollowers - 1;
      follow_into(t, fo, views[static_cast<size_t>(f)], SIZE_MAX);
      followers_primed.fetch_add(1);
      while (writers_left.load() > 0 && std::chrono::steady_clock::now() < deadline) {
        if (sleeper) {
          std::this_thread::sleep_for(std::chrono::microseconds(200));
          continue;
        }
        follow_into(t, fo, views[static_cast<size_t>(f)], static_cast<size_t>(4 + 20 * f));
        std::this_thread::sleep_for(std::chrono::microseconds(50 * (f + 1)));
      }
      follow_into(t, fo, views[static_cast<size_t>(f)], SIZE_MAX);
      resyncs[static_cast<size_t>(f)] = fo.resyncs();
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_EQ(writers_left.load(), 0);
  View truth = table_view(t);
  EXPECT_EQ(t.memory().map_bytes, t.memory(/*walk=*/true).map_bytes);
  for (int f = 0; f < kFollowers; ++f) {
    EXPECT_EQ(views[static_cast<size_t>(f)].size(), truth.size()) << "follower " << f;
    EXPECT_TRUE(views[static_cast<size_t>(f)] == truth) << "follower " << f << " differs from the table";
  }
  if (retention <= 8) {
    uint64_t total = 0;
    for (auto r : resyncs) total += r;
    EXPECT_GT(total, 0u) << "a tiny retention should make some follower fall behind";
  }
}

TEST(TableConcurrencyTest, FollowersEndWithTheTableState) { concurrent_run(1 << 16, 1); }

// Everything a table holds, by value: each prefix's routes (peer, path
// identifier, flags, set bytes) in their order and which one is best.
using Contents = std::map<std::pair<FamilyIndex, net::Prefix>,
                          std::pair<std::vector<std::tuple<uint16_t, uint32_t, uint16_t, std::vector<std::byte>>>, int>>;
Contents contents(const Table& t) {
  Contents c;
  t.walk([&](const Change& ch, const std::optional<RouteView>& best, std::span<const Route> routes) {
    auto& [list, b] = c[{ch.family, ch.prefix}];
    b = -1;
    for (const Route& r : routes) {
      if (best && best->slot == r.peer && best->path_id == r.path_id) b = static_cast<int>(list.size());
      auto w = r.attrs->wire();
      list.emplace_back(r.peer, r.path_id, r.flags, std::vector<std::byte>(w.begin(), w.end()));
    }
  });
  return c;
}

// What a follower is handed after skip(): each shard's journal, in order.
using Journals = std::vector<std::vector<std::tuple<FamilyIndex, net::Prefix, bool, int, uint32_t>>>;
Journals journals(const Table& t, Follower& fo) {
  Journals j(t.shard_count());
  t.read(fo, SIZE_MAX, [&](const FollowEvent& ev) {
    j[ev.shard].emplace_back(ev.change.family, ev.change.prefix, ev.change.best_changed,
                             ev.best ? ev.best->slot : -1, ev.best ? ev.best->path_id : 0);
  });
  return j;
}

// A peer's withdrawal (and a stale sweep) shared by two threads, each
// sweeping whole shards, leaves exactly the state the caller's sweep alone
// leaves: every route and best, each shard's journal entries in the same
// order, the peers' route and best counts, the attribute sets and bytes.
RC_GTEST_PROP(TableProperty, ParallelRemovalLeavesTheSerialState, ()) {
  std::vector<codec::AttributeSet> pool;
  for (uint32_t i = 0; i < 6; ++i) pool.push_back(attrs(1 + i % 3, i * 10, 65001 + i % 2));
  codec::PathAttributes lp = pool[1].decode();
  lp.local_pref = 200;  // an unknown rank, whoever the peer: the sets decide
  pool.push_back(codec::AttributeSet::from(lp));
  const size_t shards = *rc::gen::inRange<size_t>(1, 9);
  Table serial(TableOptions{.shards = shards, .journal_retention = 1 << 16, .best = {}, .sweep_threads = 1});
  Table parallel(TableOptions{.shards = shards,
                              .journal_retention = 1 << 16,
                              .best = {},
                              .sweep_threads = 2,
                              .parallel_sweep_from = 0});
  constexpr int kPeers = 4;
  std::vector<uint16_t> slots;
  for (int i = 0; i < kPeers; ++i) {
    slots.push_back(*serial.add_peer(peer_info(static_cast<uint32_t>(i + 1), i == 3)));
    RC_ASSERT(*parallel.add_peer(peer_info(static_cast<uint32_t>(i + 1), i == 3)) == slots.back());
  }
  const auto steps = *rc::gen::inRange(1, 200);
  for (int step = 0; step < steps; ++step) {
    const uint16_t slot = slots[*rc::gen::inRange<size_t>(0, kPeers)];
    const auto& set = pool[*rc::gen::inRange<size_t>(0, pool.size())];
    const bool v6 = *rc::gen::inRange(0, 5) == 0;
    std::vector<NlriPrefix> list;
    for (int k = 0, n = *rc::gen::inRange(1, 8); k < n; ++k) {
      const auto i = *rc::gen::inRange<uint32_t>(0, 300);
      const uint8_t b6[16] = {0x20, 0x01, 0x0d, 0xb8, static_cast<uint8_t>(i >> 8), static_cast<uint8_t>(i)};
      auto p = v6 ? *net::Prefix::make(net::IpAddress::from_bytes(net::IpFamily::V6, b6), 48)
                  : *net::Prefix::make(net::IpAddress::v4(0x0A000000 | (i << 8)), 24);
      list.push_back({p, *rc::gen::inRange<uint32_t>(0, 2)});
    }
    const bool announce = *rc::gen::inRange(0, 5) != 0;
    for (Table* t : {&serial, &parallel}) {
      if (announce) t->apply(slot, v6 ? kV6 : kV4, &set, list, {});
      else t->apply(slot, v6 ? kV6 : kV4, nullptr, {}, list);
    }
  }
  RC_ASSERT(contents(serial) == contents(parallel));
  Follower fs = serial.follow(), fp = parallel.follow();
  serial.skip(fs);
  parallel.skip(fp);
  // One peer's routes of IPv4 marked stale, some announced again, the
  // rest swept; then another peer goes down.
  const uint16_t stale = slots[*rc::gen::inRange<size_t>(0, kPeers)];
  RC_ASSERT(serial.mark_stale(stale, kV4) == parallel.mark_stale(stale, kV4));
  const std::vector<NlriPrefix> again = {{*net::Prefix::make(net::IpAddress::v4(0x0A000000 | (7 << 8)), 24), 0}};
  serial.apply(stale, kV4, &pool[0], again, {});
  parallel.apply(stale, kV4, &pool[0], again, {});
  RC_ASSERT(serial.sweep_stale(stale, kV4) == parallel.sweep_stale(stale, kV4));
  const uint16_t down = slots[*rc::gen::inRange<size_t>(0, kPeers)];
  const uint64_t routes = serial.peer_routes(down, kV4) + serial.peer_routes(down, kV6);
  RC_ASSERT(serial.remove_peer(down) == routes);
  RC_ASSERT(parallel.remove_peer(down) == routes);
  RC_ASSERT(contents(serial) == contents(parallel));
  RC_ASSERT(journals(serial, fs) == journals(parallel, fp));
  for (uint16_t s : slots)
    for (FamilyIndex f : {kV4, kV6}) {
      RC_ASSERT(serial.peer_routes(s, f) == parallel.peer_routes(s, f));
      RC_ASSERT(serial.peer_best(s, f) == parallel.peer_best(s, f));
    }
  RC_ASSERT(serial.interner().size() == parallel.interner().size());
  RC_ASSERT(serial.interner().bytes() == parallel.interner().bytes());
  RC_ASSERT(serial.memory().map_bytes == parallel.memory().map_bytes);
  RC_ASSERT(parallel.memory().map_bytes == parallel.memory(/*walk=*/true).map_bytes);
}
TEST(TableConcurrencyTest, FollowersThatFallBehindAreResynchronised) { concurrent_run(4, 2); }

// ---- wake-ups (Table::subscribe)

// A validator whose answer the test sets, to make revalidate() change a
// route's state.
class SetValidator : public Validator {
 public:
  std::atomic<Validation> answer{Validation::kNotFound};
  [[nodiscard]] Validation validate(const net::Prefix&, const Attrs&) const override { return answer.load(); }
};

// Every kind of write that appends to a journal wakes the subscriber: a
// batch, a peer's going down (a sweep), a sweep of stale routes, a
// revalidation. A write that appends nothing (a withdrawal of a route the
// table does not hold, marking routes stale) does not.
TEST(TableWakeTest, EveryWriteThatJournalsWakes) {
  SetValidator validator;
  TableOptions o;
  o.validator = &validator;
  Table t(o);
  int wakes = 0;
  Subscription sub = t.subscribe([&] { ++wakes; });
  auto s1 = *t.add_peer(peer_info(1));
  EXPECT_EQ(wakes, 0);
  auto a = attrs(3);
  std::vector<NlriPrefix> v4 = {N("192.0.2.0/24"), N("198.51.100.0/24")};
  t.apply(s1, kV4, &a, v4, {});
  EXPECT_EQ(wakes, 1);
  EXPECT_TRUE(sub.take());
  EXPECT_FALSE(sub.take());  // nothing owed since
  std::vector<NlriPrefix> unknown = {N("203.0.113.0/24")};
  t.apply(s1, kV4, nullptr, {}, unknown);
  EXPECT_EQ(t.mark_stale(s1, kV4), 2u);
  EXPECT_EQ(wakes, 1);
  EXPECT_FALSE(sub.take());
  EXPECT_EQ(t.sweep_stale(s1, kV4), 2u);
  EXPECT_EQ(wakes, 2);
  EXPECT_TRUE(sub.take());
  t.apply(s1, kV4, &a, v4, {});
  EXPECT_TRUE(sub.take());
  validator.answer = Validation::kInvalid;
  EXPECT_EQ(t.revalidate([](const net::Prefix&) { return true; }), 2u);
  EXPECT_EQ(wakes, 4);
  EXPECT_TRUE(sub.take());
  EXPECT_EQ(t.remove_peer(s1), 2u);
  EXPECT_EQ(wakes, 5);
}

// Writes before the follower takes the wake cost one wake; each take()
// lets the next write wake again.
TEST(TableWakeTest, WakesAreCoalescedUntilTaken) {
  Table t;
  int wakes = 0;
  Subscription sub = t.subscribe([&] { ++wakes; });
  auto s1 = *t.add_peer(peer_info(1));
  auto a = attrs(3), b = attrs(2);
  std::vector<NlriPrefix> v4 = {N("192.0.2.0/24")};
  for (int i = 0; i < 10; ++i) t.apply(s1, kV4, i % 2 ? &a : &b, v4, {});
  EXPECT_EQ(wakes, 1);
  // The follower takes the wake, then reads: every change is there.
  Follower fo = t.follow();
  t.skip(fo);
  EXPECT_TRUE(sub.take());
  // (The last of the ten was `a`: announcing it again changes nothing.)
  t.apply(s1, kV4, &b, v4, {});
  EXPECT_EQ(wakes, 2);
  EXPECT_EQ(t.read(fo, SIZE_MAX, [](const FollowEvent&) {}), 1u);
  t.apply(s1, kV4, &a, v4, {});
  EXPECT_EQ(wakes, 2);  // not taken since the last wake
  EXPECT_TRUE(sub.take());
  t.apply(s1, kV4, &b, v4, {});
  EXPECT_EQ(wakes, 3);
}

// Two subscribers are woken independently; one that is reset, destroyed
// or moved from is not woken again (a moved-to one is).
TEST(TableWakeTest, NoWakeAfterUnsubscribing) {
  Table t;
  int first = 0, second = 0;
  auto s1 = *t.add_peer(peer_info(1));
  auto a = attrs(3), b = attrs(2);
  std::vector<NlriPrefix> v4 = {N("192.0.2.0/24")};
  Subscription moved;
  {
    Subscription one = t.subscribe([&] { ++first; });
    Subscription two = t.subscribe([&] { ++second; });
    EXPECT_TRUE(one);
    t.apply(s1, kV4, &a, v4, {});
    EXPECT_EQ(first, 1);
    EXPECT_EQ(second, 1);
    one.reset();
    EXPECT_FALSE(one);
    EXPECT_FALSE(one.take());
    EXPECT_TRUE(two.take());
    t.apply(s1, kV4, &b, v4, {});
    EXPECT_EQ(first, 1);
    EXPECT_EQ(second, 2);
    EXPECT_TRUE(two.take());
    moved = std::move(two);
    EXPECT_FALSE(two);  // NOLINT(bugprone-use-after-move): a moved-from subscription is empty
    EXPECT_TRUE(moved);
  }
  t.apply(s1, kV4, &a, v4, {});
  EXPECT_EQ(second, 3);
  EXPECT_TRUE(moved.take());
  moved = Subscription{};
  t.apply(s1, kV4, &b, v4, {});
  EXPECT_EQ(first, 1);
  EXPECT_EQ(second, 3);
}

// Writers on several threads, a follower that only ever reads when woken
// (take, read, wait for the next wake) and a subscriber that comes and
// goes. No wake is missed: the follower ends with the table's state having
// read only when woken (told that the writers are done, it only compares
// what it holds with the table, and waits for a wake again while they
// differ: a wake lost at the end leaves it behind, and the test fails after
// kCatchUp); wakes are coalesced (never two without a take between them);
// and none comes once the transient subscriber has reset.
TEST(TableWakeTest, WokenFollowerKeepsUpWithConcurrentWriters) {
  Table t(TableOptions{.shards = 8, .journal_retention = 1 << 16, .best = {}});
  std::vector<codec::AttributeSet> pool;
  for (uint32_t i = 0; i < 8; ++i) pool.push_back(attrs(1 + i % 4, i, 65001 + i % 3));
  std::vector<net::Prefix> prefixes;
  for (uint32_t i = 0; i < 512; ++i)
    prefixes.push_back(*net::Prefix::make(net::IpAddress::v4(0x0A000000 | (i << 8)), 24));
  constexpr int kWriters = 3, kOps = 3000;
  constexpr auto kCatchUp = std::chrono::seconds(10);  // after the writers are done

  std::mutex mu;
  std::condition_variable cv;
  bool woken = false, check = false;
  std::atomic<bool> writers_done{false};
  std::atomic<int> wakes{0}, takes{0}, over_coalesced{0};
  Subscription sub = t.subscribe([&] {
    // A second wake without a take between them breaks the coalescing.
    if (wakes.fetch_add(1) + 1 > takes.load() + 1) over_coalesced.fetch_add(1);
    std::lock_guard lock(mu);
    woken = true;
    cv.notify_one();
  });

  View seen;
  bool caught_up = false;
  std::thread follower([&] {
    Follower fo = t.follow();
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    bool read = true;
    while (std::chrono::steady_clock::now() < deadline) {
      if (read) {
        takes.fetch_add(1);
        (void)sub.take();
        follow_into(t, fo, seen, SIZE_MAX);
      }
      if (writers_done.load() && seen == table_view(t)) {
        caught_up = true;
        break;
      }
      std::unique_lock lock(mu);
      cv.wait_for(lock, std::chrono::seconds(1), [&] { return woken || check; });
      if (check) deadline = std::min(deadline, std::chrono::steady_clock::now() + kCatchUp);
      read = woken;
      woken = check = false;
    }
  });

  // A subscriber that comes and goes while the writers write.
  std::atomic<bool> transient_done{false};
  std::atomic<int> after_reset{0};
  std::thread churn([&] {
    for (int i = 0; i < 200; ++i) {
      std::atomic<bool> gone{false};
      Subscription s = t.subscribe([&] {
        if (gone.load()) after_reset.fetch_add(1);
      });
      std::this_thread::sleep_for(std::chrono::microseconds(100));
      s.reset();
      gone = true;
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    transient_done = true;
  });

  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      uint16_t slot = *t.add_peer(peer_info(static_cast<uint32_t>(w + 1)));
      uint64_t x = 7919u + static_cast<uint64_t>(w);
      auto next = [&] { x = x * 6364136223846793005ull + 1442695040888963407ull; return static_cast<uint32_t>(x >> 33); };
      for (int op = 0; op < kOps; ++op) {
        std::vector<NlriPrefix> list = {{prefixes[next() % prefixes.size()], 0}};
        if (next() % 100 < 60) t.apply(slot, kV4, &pool[next() % pool.size()], list, {});
        else t.apply(slot, kV4, nullptr, {}, list);
      }
    });
  }
  for (auto& th : writers) th.join();
  churn.join();
  writers_done = true;
  {
    std::lock_guard lock(mu);
    check = true;
    cv.notify_one();
  }
  follower.join();
  EXPECT_TRUE(transient_done.load());
  EXPECT_TRUE(caught_up) << "the follower, reading only when woken, did not reach the table's state within "
                         << kCatchUp.count() << " s of the writers' end";
  EXPECT_EQ(seen, table_view(t));
  EXPECT_GT(wakes.load(), 0);
  EXPECT_EQ(over_coalesced.load(), 0);
  EXPECT_EQ(after_reset.load(), 0);
}

// RFC 9494 section 4.2: a down peer's routes become long-lived stale: each
// gets LLGR_STALE (journaled: exporters must hear of it), stays stale (the
// End-of-RIB sweep still applies), loses to any other peer's route; NO_LLGR
// routes are withdrawn; a route that had LLGR_STALE already is untouched.
TEST(TableTest, LongLivedStaleRoutesGetTheCommunityAndNoLlgrOnesGo) {
  Table t;
  auto s = *t.add_peer(peer_info(1));
  auto other = *t.add_peer(peer_info(2));
  auto plain = attrs(1);  // shorter than the other peer's: the best before
  codec::PathAttributes pa = plain.decode();
  pa.communities = {codec::community::kNoLlgr};
  const auto no_llgr = codec::AttributeSet::from(pa);
  pa.communities = {codec::community::kLlgrStale};
  const auto already = codec::AttributeSet::from(pa);
  t.apply(s, kV4, &plain, std::vector<NlriPrefix>{N("192.0.2.0/24"), N("198.51.100.0/24")}, {});
  t.apply(s, kV4, &no_llgr, std::vector<NlriPrefix>{N("203.0.113.0/24")}, {});
  t.apply(s, kV4, &already, std::vector<NlriPrefix>{N("198.18.0.0/24")}, {});
  auto longer = attrs(4, 0, 65100);
  t.apply(other, kV4, &longer, std::vector<NlriPrefix>{N("198.51.100.0/24")}, {});
  auto best_peer = [&](const char* p) {
    int32_t peer = -1;
    t.lookup(kV4, P(p), [&](const RouteView& r, bool best) {
      if (best) peer = r.slot;
    });
    return peer;
  };
  EXPECT_EQ(best_peer("198.51.100.0/24"), s);
  EXPECT_EQ(t.mark_stale(s, kV4), 4u);
  Follower fo = t.follow();
  t.skip(fo);
  const auto r = t.mark_long_lived_stale(s, kV4);
  EXPECT_EQ(r.kept, 3u);
  EXPECT_EQ(r.dropped, 1u);
  EXPECT_EQ(t.peer_routes(s, kV4), 3u);
  EXPECT_EQ(t.peer_stale(s, kV4), 3u);
  std::set<net::Prefix> seen;
  t.read(fo, 1000, [&](const FollowEvent& ev) { seen.insert(ev.change.prefix); });
  EXPECT_EQ(seen, (std::set<net::Prefix>{P("192.0.2.0/24"), P("198.51.100.0/24"), P("203.0.113.0/24")}));
  t.lookup(kV4, P("192.0.2.0/24"), [&](const RouteView& v, bool) {
    EXPECT_TRUE(v.attrs->llgr_stale());
    EXPECT_TRUE(v.stale);
    EXPECT_TRUE(v.attrs->decode().has_community(codec::community::kLlgrStale));
  });
  EXPECT_EQ(best_peer("198.51.100.0/24"), other);  // least preferred now
  EXPECT_EQ(best_peer("192.0.2.0/24"), s);         // alone, still the best
  EXPECT_EQ(best_peer("203.0.113.0/24"), -1);      // NO_LLGR: gone
  // The peer back: an announcement replaces the long-lived stale route.
  t.apply(s, kV4, &plain, std::vector<NlriPrefix>{N("198.51.100.0/24")}, {});
  EXPECT_EQ(best_peer("198.51.100.0/24"), s);
  EXPECT_EQ(t.peer_stale(s, kV4), 2u);
  EXPECT_EQ(t.sweep_stale(s, kV4), 2u);
  EXPECT_EQ(t.peer_routes(s, kV4), 1u);
}

}  // namespace
}  // namespace petrel::table
