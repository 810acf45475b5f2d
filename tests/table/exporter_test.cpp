// The exporter (table/exporter.h) against a real Table: what it writes is
// decoded as the peer would decode it and replayed into a model of the
// peer's RIB. The initial table with End-of-RIB, only changes, collapsing,
// packing, not back to the sender, filters, route refresh with BoRR/EoRR,
// and a property: after random changes from two peers, pumped at random
// moments with a journal retention small enough to force resyncs, the
// peer's RIB equals what the rules say it should hold.
#include "table/exporter.h"
#include "tests/table/chain_of.h"
#include "table/export_group.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "codec/framer.h"
#include "codec/route_refresh.h"
#include "codec/update.h"

namespace petrel::table {
namespace {

using codec::AsPath;
using codec::AsSegment;
using codec::PathAttributes;
using codec::SegmentType;

const codec::Family kV4{1, 1};
constexpr FamilyIndex kV4Index = 0;

net::IpAddress ip(const char* s) { return *net::IpAddress::parse(s); }
net::Prefix pfx(const char* s) { return *net::Prefix::parse(s); }
net::Prefix nth(uint32_t i) { return *net::Prefix::make(net::IpAddress::v4(0x0A000000u + (i << 8)), 24); }
// nth(0) .. nth(n - 1).
std::vector<net::Prefix> first_n(uint32_t n) {
  std::vector<net::Prefix> ps;
  for (uint32_t i = 0; i < n; ++i) ps.push_back(nth(i));
  return ps;
}

codec::AttributeSet attrs(uint32_t first_as, uint32_t med = 0, std::vector<uint32_t> communities = {}) {
  PathAttributes p;
  p.origin = codec::Origin::kIgp;
  p.as_path = AsPath{{AsSegment{SegmentType::kAsSequence, {first_as, 64999}}}};
  p.next_hop = ip("198.18.0.2");
  if (med) p.med = med;
  p.communities = std::move(communities);
  return codec::AttributeSet::from(p);
}

// An export filter that refuses routes with `community` and accepts the
// rest.
Filter refusing(uint32_t community, std::string name = "refusing") {
  Filter f;
  f.name = std::move(name);
  FilterRule r;
  r.communities = {community};
  r.action = FilterAction::kReject;
  f.rules = {r};
  f.default_action = FilterAction::kAccept;
  return f;
}

// What the peer holds: prefix -> attribute set; and what else it saw.
struct PeerRib {
  std::map<net::Prefix, codec::AttributeSet> routes;
  int updates = 0;
  int end_of_rib = 0;
  std::vector<codec::RefreshSubtype> refresh_markers;
  int announcements = 0;
  codec::SessionParams params;  // add_path_receive set for ADD-PATH tests
  std::map<codec::NlriPrefix, codec::AttributeSet> paths;  // by prefix and path id
  // RFC 7313 section 4 as a receiver does it: a BoRR marks every path
  // stale, an announcement refreshes it, the EoRR purges what is still
  // stale. `trace` holds what came, in order: E End-of-RIB, B BoRR, R EoRR.
  // A sender that keeps to it re-sends or withdraws every path between the
  // BoRR and the EoRR: `purged` counts the paths it let go stale.
  std::set<codec::NlriPrefix> stale;
  size_t purged = 0;
  std::string trace;
  size_t max_message = 0;  // the largest message seen
  // A withdrawal of a path never announced is an error (an update group's
  // member may be sent one for a prefix whose best route is its own).
  bool strict = true;

  void replay(const std::vector<std::byte>& bytes) {
    codec::Framer fr(codec::kMaxExtendedMessageLen);
    fr.feed(bytes);
    codec::Message m;
    codec::NotifyError err;
    for (int guard = 0; guard < 10'000'000; ++guard) {
      auto st = fr.next(m, err);
      if (st == codec::Framer::Status::kNeedMore) return;
      ASSERT_EQ(st, codec::Framer::Status::kMessage);
      max_message = std::max(max_message, m.whole.size());
      if (m.type == codec::MessageType::kRouteRefresh) {
        auto rr = codec::decode_route_refresh(m.body, m.whole);
        ASSERT_TRUE(rr);
        refresh_markers.push_back(rr->subtype);
        if (rr->subtype == codec::RefreshSubtype::kBeginOfRefresh) {
          trace += 'B';
          for (const auto& [np, a] : paths) stale.insert(np);
        } else if (rr->subtype == codec::RefreshSubtype::kEndOfRefresh) {
          trace += 'R';
          purged += stale.size();
          for (const auto& np : stale) {
            paths.erase(np);
            routes.erase(np.prefix);
          }
          stale.clear();
        }
        continue;
      }
      ASSERT_EQ(m.type, codec::MessageType::kUpdate);
      auto u = codec::UpdateView::decode(m.body, params, codec::PeerType::kExternal);
      ASSERT_EQ(u.action(), codec::ErrorAction::kNone);
      if (u.end_of_rib()) {
        ++end_of_rib;
        trace += 'E';
        continue;
      }
      ++updates;
      for (const auto& r : u.withdrawals())
        for (const auto& p : r) {
          routes.erase(p.prefix);
          stale.erase(p);
          const size_t erased = paths.erase(p);
          if (strict) {
            ASSERT_EQ(erased, 1u) << "a withdrawal of a path never announced";
          }
        }
      for (const auto& r : u.announced())
        for (const auto& p : r) {
          routes.insert_or_assign(p.prefix, u.attribute_set());
          paths.insert_or_assign(p, u.attribute_set());
          stale.erase(p);
          ++announcements;
        }
    }
  }
};

struct Fixture {
  Table table;
  Interner out;
  uint16_t a = 0, b = 0;

  // Two external peers, A (router id 2) and B (3); the table has `shards`
  // shards and keeps `retention` changes in each journal.
  explicit Fixture(size_t retention = 8192, size_t shards = 2) : table(TableOptions{shards, retention, {}}) {
    PeerInfo pa;
    pa.address = ip("198.18.0.2");
    pa.router_id = 2;
    pa.asn = 64496;
    a = *table.add_peer(pa);
    PeerInfo pb = pa;
    pb.address = ip("198.18.0.3");
    pb.router_id = 3;
    pb.asn = 64497;
    b = *table.add_peer(pb);
  }

  void announce(uint16_t slot, const codec::AttributeSet& s, std::vector<net::Prefix> ps) {
    std::vector<codec::NlriPrefix> n;
    for (auto& p : ps) n.push_back({p, 0});
    table.apply(slot, kV4Index, &s, n, {});
  }
  void withdraw(uint16_t slot, std::vector<net::Prefix> ps) {
    std::vector<codec::NlriPrefix> n;
    for (auto& p : ps) n.push_back({p, 0});
    table.apply(slot, kV4Index, nullptr, {}, n);
  }

  // The same, with enhanced route refresh (RFC 7313) negotiated.
  ExporterSetup enhanced() {
    ExporterSetup s = setup();
    s.enhanced_route_refresh = true;
    return s;
  }
  ExporterSetup setup(uint32_t target_slot = 100) {
    ExporterSetup s;
    s.target.local_as = 64500;
    s.target.slot = target_slot;
    s.target.next_hop_v4 = ip("198.18.1.1");
    s.families.add(kV4);
    return s;
  }
};

// Pumps until the exporter (or an update group's member) has nothing left
// (bounded).
template <typename E>
void drain(E& ex, PeerRib& rib, size_t budget = 1 << 20) {
  for (int i = 0; i < 100000; ++i) {
    std::vector<std::byte> bytes;
    bool more = ex.pump(bytes, budget);
    rib.replay(bytes);
    if (!more) return;
  }
  FAIL() << "the exporter never settled";
}

TEST(Exporter, InitialTableThenEndOfRibThenOnlyChanges) {
  Fixture fx;
  fx.announce(fx.a, attrs(64496), {nth(1), nth(2), nth(3)});
  fx.announce(fx.a, attrs(64496, 0, {7}), {nth(4), nth(5)});
  Exporter ex(fx.table, fx.out, fx.setup());
  PeerRib rib;
  drain(ex, rib);
  EXPECT_EQ(rib.end_of_rib, 1);
  EXPECT_EQ(rib.updates, 2);  // two attribute sets, one UPDATE each
  ASSERT_EQ(rib.routes.size(), 5u);
  auto got = rib.routes.at(nth(4)).decode();
  EXPECT_EQ(got.as_path->segments[0].asns, (std::vector<uint32_t>{64500, 64496, 64999}));
  EXPECT_EQ(got.next_hop, ip("198.18.1.1"));
  EXPECT_EQ(got.communities, std::vector<uint32_t>{7});
  EXPECT_EQ(ex.counters().advertised[kV4Index].load(), 5u);
  EXPECT_TRUE(ex.initial_done());
  // A MED is not passed between neighbouring ASes: two sets that differ
  // only in MED go out as one.
  fx.announce(fx.a, attrs(64496, 9), {nth(6)});
  drain(ex, rib);
  EXPECT_EQ(rib.updates, 3);
  EXPECT_FALSE(rib.routes.at(nth(6)).decode().med);
  EXPECT_EQ(rib.routes.at(nth(6)), rib.routes.at(nth(1)));
  fx.withdraw(fx.a, {nth(6)});
  drain(ex, rib);
  EXPECT_EQ(rib.updates, 4);

  // Nothing changed: nothing written.
  std::vector<std::byte> bytes;
  EXPECT_FALSE(ex.pump(bytes, 1 << 20));
  EXPECT_TRUE(bytes.empty());
  // A better route from B for a prefix with the same outgoing attributes
  // except the path: one announcement.
  fx.announce(fx.b, attrs(64497), {nth(1)});  // ties with A's down to the router id: A's (2) stays
  drain(ex, rib);
  EXPECT_EQ(rib.updates, 4);  // best did not change (router id 2 < 3): nothing sent
  fx.withdraw(fx.a, {nth(1)});
  drain(ex, rib);  // now B's is best: one announcement
  EXPECT_EQ(rib.updates, 5);
  EXPECT_EQ(rib.routes.at(nth(1)).decode().as_path->segments[0].asns, (std::vector<uint32_t>{64500, 64497, 64999}));
  fx.withdraw(fx.b, {nth(1)});
  drain(ex, rib);
  EXPECT_EQ(rib.updates, 6);
  EXPECT_EQ(rib.routes.count(nth(1)), 0u);
  EXPECT_EQ(ex.counters().advertised[kV4Index].load(), 4u);
}

// The table's shards are copied out one per read (Table::read's
// max_first), yet the initial table goes out packed by set across shards,
// End-of-RIB only after all of it, whatever the write budget.
TEST(Exporter, InitialTableReadAShardAtATimeStillPacksAndEndsWithEndOfRib) {
  Fixture fx(8192, 8);
  std::vector<net::Prefix> one, two;
  for (uint32_t i = 0; i < 400; ++i) (i % 2 ? one : two).push_back(nth(i));
  fx.announce(fx.a, attrs(64496), one);
  fx.announce(fx.a, attrs(64496, 0, {7}), two);
  {
    // Table::read itself: one never-read shard per call, then journals only.
    Follower fo = fx.table.follow();
    std::set<size_t> shards;
    size_t resyncs = 0;
    for (int call = 0; call < 8; ++call) {
      EXPECT_FALSE(fo.primed());
      size_t before = resyncs;
      (void)fx.table.read(fo, 1024, [&](const FollowEvent& ev) {
        if (ev.resync) ++resyncs;
        shards.insert(ev.shard);
      }, 1);
      EXPECT_EQ(resyncs, before + 1);
    }
    EXPECT_TRUE(fo.primed());
    EXPECT_EQ(shards.size(), 8u);
  }
  for (size_t budget : {size_t{1} << 20, size_t{300}}) {
    Exporter ex(fx.table, fx.out, fx.setup());
    PeerRib rib;
    for (int i = 0; i < 10000; ++i) {
      std::vector<std::byte> bytes;
      bool more = ex.pump(bytes, budget);
      rib.replay(bytes);
      if (rib.end_of_rib) {
        EXPECT_EQ(rib.routes.size(), 400u) << "End-of-RIB before the whole table";
      }
      if (!more) break;
    }
    EXPECT_EQ(rib.end_of_rib, 1);
    EXPECT_EQ(rib.routes.size(), 400u);
    // 200 /24s of a set fit in one 4096-octet UPDATE: two UPDATEs in all.
    EXPECT_EQ(rib.updates, 2) << "budget " << budget;
  }
}

// A burst that overruns every shard's journal while the peer is behind:
// the exporter reads the overrun shards whole one at a time (never the
// whole table at once), and pump() says there is more until the last is
// read, though the journals are quiet by then; it writes once all are
// read, so prefixes of one set still pack across shards.
TEST(Exporter, EveryJournalOverrunIsCaughtUpAShardAtATime) {
  Fixture fx(4, 8);
  const std::vector<net::Prefix> all = first_n(400);
  fx.announce(fx.a, attrs(64496), all);
  Exporter ex(fx.table, fx.out, fx.setup());
  PeerRib rib;
  drain(ex, rib);
  ASSERT_EQ(rib.routes.size(), 400u);
  const codec::AttributeSet before = rib.routes.begin()->second;
  fx.announce(fx.a, attrs(64496, 0, {9}), all);  // 50 changes a shard, 4 kept
  fx.withdraw(fx.a, {nth(0), nth(1), nth(2)});
  const uint64_t resyncs = ex.counters().resyncs.load();
  const int updates = rib.updates;
  std::vector<std::byte> bytes;
  EXPECT_TRUE(ex.pump(bytes, 1 << 20)) << "seven overrun shards wait";
  rib.replay(bytes);
  EXPECT_EQ(ex.counters().resyncs.load(), resyncs + 1) << "one shard whole per read";
  drain(ex, rib);
  EXPECT_EQ(ex.counters().resyncs.load(), resyncs + 8);
  EXPECT_EQ(rib.routes.size(), 397u);
  // Written once every overrun shard was read: one UPDATE for the new set
  // across the shards (and one withdrawing three), not one a shard.
  EXPECT_EQ(rib.updates - updates, 2);
  const codec::AttributeSet after = rib.routes.begin()->second;
  EXPECT_NE(after, before);
  for (const auto& [p, a] : rib.routes) EXPECT_EQ(a, after) << p.to_string();
}

// The initial table and a resynchronisation are queued in bulk (marked in
// the Adj-RIB-Out) and put in groups a part at a time: with parts far
// smaller than the table, every set still goes out in one UPDATE (each
// part holds whole sets), pending() counts the marked routes, and changes
// that come while the parts are being written end where the table is.
TEST(Exporter, ABulkWrittenInPartsStillPacksEachSetIntoOneUpdate) {
  constexpr uint32_t kSets = 40, kPerSet = 25;
  Fixture fx(4, 8);
  auto set_of = [](uint32_t i, uint32_t round) { return attrs(64496, 0, {round * 1000 + i % kSets + 1}); };
  for (uint32_t k = 0; k < kSets; ++k) {
    std::vector<net::Prefix> ps;
    for (uint32_t i = k; i < kSets * kPerSet; i += kSets) ps.push_back(nth(i));
    fx.announce(fx.a, set_of(k, 0), ps);
  }
  ExporterSetup s = fx.setup();
  s.bulk_part = 50;  // 20 parts for the 1,000 routes
  Exporter ex(fx.table, fx.out, s);
  PeerRib rib;
  std::vector<std::byte> bytes;
  // The first pump reads the shards (eight reads, eight settles) and
  // writes within a small budget: the rest stays marked and counted.
  for (int i = 0; i < 8 && rib.updates == 0; ++i) {
    bytes.clear();
    ASSERT_TRUE(ex.pump(bytes, 200));
    rib.replay(bytes);
  }
  ASSERT_GT(rib.updates, 0);
  EXPECT_EQ(ex.pending() + rib.routes.size(), size_t{kSets * kPerSet});
  drain(ex, rib, 200);
  EXPECT_EQ(rib.routes.size(), size_t{kSets * kPerSet});
  EXPECT_EQ(rib.updates, int{kSets});  // 25 /24s of a set fit in one UPDATE
  EXPECT_EQ(ex.pending(), 0u);

  // Every journal overrun (four changes kept a shard): read whole again, in
  // bulk; while its parts are written, more changes come, some to routes
  // of parts not written yet, some withdrawals.
  for (uint32_t k = 0; k < kSets; ++k) {
    std::vector<net::Prefix> ps;
    for (uint32_t i = k; i < kSets * kPerSet; i += kSets) ps.push_back(nth(i));
    fx.announce(fx.a, set_of(k, 1), ps);
  }
  const int updates = rib.updates;
  for (int i = 0; i < 12; ++i) {
    bytes.clear();
    ex.pump(bytes, 200);
    rib.replay(bytes);
  }
  for (uint32_t i = 0; i < kSets * kPerSet; i += 7) fx.announce(fx.a, set_of(i, 2), {nth(i)});
  std::vector<net::Prefix> gone;
  for (uint32_t i = 3; i < kSets * kPerSet; i += 11) gone.push_back(nth(i));
  fx.withdraw(fx.a, gone);
  drain(ex, rib, 200);
  EXPECT_EQ(ex.pending(), 0u);
  EXPECT_GT(rib.updates, updates);
  size_t held = 0;
  for (uint32_t i = 0; i < kSets * kPerSet; ++i) {
    auto it = rib.routes.find(nth(i));
    if (i >= 3 && (i - 3) % 11 == 0) {
      EXPECT_TRUE(it == rib.routes.end()) << i;
      continue;
    }
    ++held;
    ASSERT_TRUE(it != rib.routes.end()) << i;
    const uint32_t round = i % 7 == 0 ? 2 : 1;
    EXPECT_EQ(it->second.decode().communities, std::vector<uint32_t>{round * 1000 + i % kSets + 1}) << i;
  }
  EXPECT_EQ(rib.routes.size(), held);
  EXPECT_EQ(ex.counters().advertised[kV4Index].load(), held);

  // A new filter while a bulk is half written: the table is read whole
  // again, and routes of parts already put in the queue are marked anew
  // (new sets for a third of the prefixes): every part is scanned again
  // for them.
  for (uint32_t k = 0; k < kSets; ++k) {
    std::vector<net::Prefix> ps;
    for (uint32_t i = k; i < kSets * kPerSet; i += kSets) ps.push_back(nth(i));
    fx.announce(fx.a, set_of(k, 3), ps);
  }
  for (int i = 0; i < 11; ++i) {
    bytes.clear();
    ex.pump(bytes, 200);
    rib.replay(bytes);
  }
  ASSERT_GT(ex.pending(), 0u) << "the bulk is half written";
  for (uint32_t i = 0; i < kSets * kPerSet; i += 3) fx.announce(fx.a, set_of(i, 4), {nth(i)});
  ex.set_filter(nullptr, false);
  drain(ex, rib, 200);
  EXPECT_EQ(ex.pending(), 0u);
  ASSERT_EQ(rib.routes.size(), size_t{kSets * kPerSet});  // the withdrawn ones came back in round 3
  for (uint32_t i = 0; i < kSets * kPerSet; ++i) {
    auto it = rib.routes.find(nth(i));
    ASSERT_TRUE(it != rib.routes.end()) << i;
    const uint32_t round = i % 3 == 0 ? 4 : 3;
    EXPECT_EQ(it->second.decode().communities, std::vector<uint32_t>{round * 1000 + i % kSets + 1}) << i;
  }
}

TEST(Exporter, AfterABurstItsScratchIsReleasedAndChangesStillGoOut) {
  // More outgoing sets (and source sets) than the exporter keeps scratch
  // for once drained (4096): the initial table's groups and memo are
  // released, and what follows must still come out right.
  constexpr uint32_t kN = 6000;
  Fixture fx(1 << 16);
  for (uint32_t i = 0; i < kN; ++i) fx.announce(fx.a, attrs(64496, 0, {i + 1}), {nth(i)});
  Exporter ex(fx.table, fx.out, fx.setup());
  PeerRib rib;
  drain(ex, rib, 2048);  // many turns: a queue left between them is not scratch
  ASSERT_EQ(rib.end_of_rib, 1);
  ASSERT_EQ(rib.routes.size(), kN);
  EXPECT_EQ(ex.pending(), 0u);
  // A second burst: half of the prefixes get new sets (some of them a set
  // seen before, some new), a sixth are withdrawn.
  for (uint32_t i = 0; i < kN; i += 2) fx.announce(fx.a, attrs(64496, 0, {i % 4 ? kN + i : i + 2}), {nth(i)});
  std::vector<net::Prefix> gone;
  for (uint32_t i = 1; i < kN; i += 6) gone.push_back(nth(i));
  fx.withdraw(fx.a, gone);
  drain(ex, rib, 2048);
  EXPECT_EQ(rib.routes.size(), kN - gone.size());
  for (uint32_t i = 0; i < kN; ++i) {
    auto it = rib.routes.find(nth(i));
    if (i % 6 == 1) {
      EXPECT_TRUE(it == rib.routes.end()) << i;
      continue;
    }
    ASSERT_TRUE(it != rib.routes.end()) << i;
    uint32_t community = i % 2 ? i + 1 : (i % 4 ? kN + i : i + 2);
    EXPECT_EQ(it->second.decode().communities, std::vector<uint32_t>{community}) << i;
  }
  EXPECT_EQ(ex.counters().advertised[kV4Index].load(), kN - gone.size());
}

TEST(Exporter, ChangesCollapseIntoTheLatestState) {
  Fixture fx;
  Exporter ex(fx.table, fx.out, fx.setup());
  PeerRib rib;
  drain(ex, rib);
  for (int i = 0; i < 5; ++i) {
    fx.announce(fx.a, attrs(64496, 1 + static_cast<uint32_t>(i), {static_cast<uint32_t>(i)}), {nth(9)});
  }
  fx.withdraw(fx.a, {nth(10)});  // never announced: nothing to send
  drain(ex, rib);
  EXPECT_EQ(rib.announcements, 1);
  EXPECT_EQ(rib.routes.at(nth(9)).decode().communities, std::vector<uint32_t>{4});
  // Announced and withdrawn before the exporter looked: nothing at all.
  fx.announce(fx.a, attrs(64496), {nth(11)});
  fx.withdraw(fx.a, {nth(11)});
  int before = rib.updates;
  drain(ex, rib);
  EXPECT_EQ(rib.updates, before);
}

TEST(Exporter, PacksPrefixesOfOneSetUpToTheMessageSize) {
  Fixture fx;
  const std::vector<net::Prefix> ps = first_n(3000);
  fx.announce(fx.a, attrs(64496), ps);
  Exporter ex(fx.table, fx.out, fx.setup());
  PeerRib rib;
  drain(ex, rib);
  EXPECT_EQ(rib.routes.size(), 3000u);
  // 3000 /24s are 12000 octets of NLRI: 3 or 4 messages of 4096 octets.
  EXPECT_GE(rib.updates, 3);
  EXPECT_LE(rib.updates, 4);
}

TEST(Exporter, NothingGoesBackToItsSenderAndNoneSendsOnlyEndOfRib) {
  Fixture fx;
  fx.announce(fx.a, attrs(64496), {nth(1)});
  fx.announce(fx.b, attrs(64497), {nth(2)});
  Exporter ex(fx.table, fx.out, fx.setup(fx.a));
  PeerRib rib;
  drain(ex, rib);
  EXPECT_EQ(rib.routes.size(), 1u);
  EXPECT_EQ(rib.routes.count(nth(2)), 1u);

  auto s = fx.setup();
  s.send_nothing = true;
  Exporter none(fx.table, fx.out, s);
  PeerRib nrib;
  drain(none, nrib);
  EXPECT_EQ(nrib.end_of_rib, 1);
  EXPECT_TRUE(nrib.routes.empty());
}

TEST(Exporter, ExportFilter) {
  Fixture fx;
  fx.announce(fx.a, attrs(64496), {pfx("192.0.2.0/24"), pfx("198.51.100.0/24")});
  fx.announce(fx.a, attrs(64496, 0, {0xFDE80001}), {pfx("203.0.113.0/24")});
  Filter f;
  f.name = "out";
  FilterRule r1;
  r1.prefixes = {*PrefixRange::parse("192.0.2.0/24")};
  FilterRule r2;
  r2.communities = {0xFDE80001};
  f.rules = {r1, r2};
  auto s = fx.setup();
  s.filter = kept(f);
  Exporter ex(fx.table, fx.out, s);
  PeerRib rib;
  drain(ex, rib);
  EXPECT_EQ(rib.routes.size(), 2u);
  EXPECT_EQ(rib.routes.count(pfx("198.51.100.0/24")), 0u);
  EXPECT_EQ(ex.counters().filtered.load(), 1u);
}

// A configuration reload's new export filter (set_filter): only the
// difference goes out, and "none" withdraws everything held.
TEST(Exporter, ANewFilterSendsOnlyTheDifference) {
  Fixture fx;
  const std::vector<net::Prefix> all = first_n(10);
  fx.announce(fx.a, attrs(64496), all);
  Exporter ex(fx.table, fx.out, fx.setup());
  PeerRib rib;
  drain(ex, rib);
  ASSERT_EQ(rib.routes.size(), 10u);
  Filter half;  // 10.0.0.0/24 .. 10.0.4.0/24
  half.name = "half";
  FilterRule r;
  for (uint32_t i = 0; i < 5; ++i) r.prefixes.push_back(PrefixRange{nth(i), 24, 24});
  half.rules = {r};
  ex.set_filter(kept(half), false);
  drain(ex, rib);
  EXPECT_EQ(rib.routes.size(), 5u);
  EXPECT_EQ(rib.routes.count(nth(4)), 1u);
  EXPECT_EQ(rib.routes.count(nth(5)), 0u);
  EXPECT_EQ(ex.counters().withdrawn.load(), 5u);
  EXPECT_EQ(rib.announcements, 10);  // what stays is not sent again
  EXPECT_EQ(ex.counters().advertised[kV4Index].load(), 5u);
  ex.set_filter(nullptr, false);  // back to all: the other half only
  drain(ex, rib);
  EXPECT_EQ(rib.routes.size(), 10u);
  EXPECT_EQ(rib.announcements, 15);
  EXPECT_EQ(ex.counters().withdrawn.load(), 5u);
  ex.set_filter(nullptr, true);  // none: everything withdrawn
  drain(ex, rib);
  EXPECT_TRUE(rib.routes.empty());
  EXPECT_EQ(ex.counters().withdrawn.load(), 15u);
  EXPECT_EQ(ex.counters().advertised[kV4Index].load(), 0u);
  EXPECT_EQ(rib.end_of_rib, 1);

  // A peer that started with "none" gets the table when it changes.
  auto s = fx.setup();
  s.send_nothing = true;
  Exporter none(fx.table, fx.out, s);
  PeerRib nrib;
  drain(none, nrib);
  ASSERT_EQ(nrib.end_of_rib, 1);
  none.set_filter(kept(half), false);
  drain(none, nrib);
  EXPECT_EQ(nrib.routes.size(), 5u);
  EXPECT_EQ(nrib.end_of_rib, 1);
  // And a change after the new filter reaches it as any other.
  fx.withdraw(fx.a, {nth(0)});
  drain(none, nrib);
  EXPECT_EQ(nrib.routes.size(), 4u);
}

// Prefix by prefix, the table's best route through the rules.
std::map<net::Prefix, codec::AttributeSet> table_says(Fixture& fx, const ExporterSetup& s) {
  std::map<net::Prefix, codec::AttributeSet> want;
  fx.table.walk([&](const Change& c, const std::optional<RouteView>& best, auto) {
    if (!best) return;
    auto e = export_route(s.target, ExportSource{best->peer, best->slot}, kV4, best->attrs->decode());
    if (e.verdict == ExportVerdict::kSend) want.emplace(c.prefix, e.attrs);
  });
  return want;
}

// A table of n prefixes under a few attribute sets, from peer A.
void fill(Fixture& fx, uint32_t n, uint32_t first = 0) {
  std::vector<net::Prefix> ps[4];
  for (uint32_t i = first; i < first + n; ++i) ps[i % 4].push_back(nth(i));
  for (uint32_t k = 0; k < 4; ++k) fx.announce(fx.a, attrs(64496, 0, {k + 1}), ps[k]);
}

// n prefixes sent with enhanced route refresh negotiated, the initial
// table drained; walks of `slice` routes.
struct Refreshing {
  Fixture fx;
  ExporterSetup s;
  std::unique_ptr<Exporter> ex;
  PeerRib rib;
  explicit Refreshing(uint32_t n, size_t slice = 4096) {
    fill(fx, n);
    s = fx.enhanced();
    s.refresh_slice = slice;
    ex = std::make_unique<Exporter>(fx.table, fx.out, s);
    drain(*ex, rib);
  }
};

TEST(Exporter, RouteRefreshSendsEverythingAgainBetweenBorrAndEorr) {
  Fixture fx;
  fx.announce(fx.a, attrs(64496), {nth(1), nth(2)});
  auto s = fx.enhanced();
  Exporter ex(fx.table, fx.out, s);
  PeerRib rib;
  drain(ex, rib);
  EXPECT_EQ(rib.announcements, 2);
  EXPECT_EQ(ex.refresh(kV4), RefreshOutcome::kQueued);
  drain(ex, rib);
  EXPECT_EQ(rib.announcements, 4);
  EXPECT_EQ(rib.refresh_markers, (std::vector<codec::RefreshSubtype>{codec::RefreshSubtype::kBeginOfRefresh,
                                                                     codec::RefreshSubtype::kEndOfRefresh}));
  EXPECT_EQ(rib.routes.size(), 2u);
  // A family that was not negotiated: ignored (RFC 2918 section 4).
  EXPECT_EQ(ex.refresh(codec::Family{2, 1}), RefreshOutcome::kIgnored);
  std::vector<std::byte> bytes;
  EXPECT_FALSE(ex.pump(bytes, 1 << 20));
  EXPECT_TRUE(bytes.empty());
}

// Issue 19: every ROUTE-REFRESH queued the whole Adj-RIB-Out again (1,000
// of them from a peer sent 100k routes took the daemon to 1.8 GB). Requests
// that come before the walk starts join it: the peer sees exactly what one
// request gives, and nothing grows with the number of requests.
TEST(Exporter, RefreshRequestsCoalesceIntoOne) {
  Fixture fx;
  fill(fx, 10000);
  auto s = fx.enhanced();
  Exporter one(fx.table, fx.out, s), many(fx.table, fx.out, s);
  PeerRib rib_one, rib_many;
  drain(one, rib_one);
  drain(many, rib_many);
  ASSERT_EQ(rib_one.routes.size(), 10000u);
  EXPECT_EQ(one.refresh(kV4), RefreshOutcome::kQueued);
  EXPECT_EQ(many.refresh(kV4), RefreshOutcome::kQueued);
  for (int i = 1; i < 1000; ++i) ASSERT_EQ(many.refresh(kV4), RefreshOutcome::kCoalesced);
  EXPECT_EQ(many.pending(), 0u);  // a request queues nothing by itself
  std::vector<std::byte> out_one, out_many;
  for (int i = 0; i < 1000; ++i)
    if (!one.pump(out_one, 1 << 20)) break;
  for (int i = 0; i < 1000; ++i)
    if (!many.pump(out_many, 1 << 20)) break;
  EXPECT_EQ(out_one, out_many);
  rib_many.replay(out_many);
  EXPECT_EQ(rib_many.announcements, 20000);
  EXPECT_EQ(rib_many.trace, "EBR");
  EXPECT_EQ(rib_many.routes, rib_one.routes);
  EXPECT_EQ(rib_many.purged, 0u);
  EXPECT_EQ(many.counters().refresh_requests.load(), 1000u);
  EXPECT_EQ(many.counters().refreshes.load(), 1u);
  EXPECT_EQ(many.pending(), 0u);
}

// The walk goes in slices as the socket takes the bytes: what is queued
// stays under two slices and each pump writes about its budget, however
// many requests came.
TEST(Exporter, RefreshIsPumpedInSlicesWithinTheBudget) {
  Refreshing t(12000);
  Exporter& ex = *t.ex;
  PeerRib& rib = t.rib;
  const ExporterSetup& s = t.s;
  for (int i = 0; i < 1000; ++i) (void)ex.refresh(kV4);
  constexpr size_t kBudget = 8 << 10;
  size_t calls = 0;
  for (; calls < 100000; ++calls) {
    std::vector<std::byte> bytes;
    bool more = ex.pump(bytes, kBudget);
    // The budget may be passed by one group (a slice of one set at most).
    EXPECT_LE(bytes.size(), kBudget + 5 * s.refresh_slice + codec::kMaxMessageLen);
    EXPECT_LE(ex.pending(), 2 * s.refresh_slice);
    rib.replay(bytes);
    if (!more) break;
  }
  EXPECT_GE(calls, 3u);  // 12,000 /24s are some 48 kB: several slices
  EXPECT_EQ(rib.announcements, 24000);
  EXPECT_EQ(rib.trace, "EBR");
  EXPECT_EQ(rib.routes.size(), 12000u);
}

// A request during a walk: what went out before it may have been read
// under the peer's old policy, so one more walk follows (one, however many
// requests came).
TEST(Exporter, RefreshRequestedDuringAWalkWalksOnceMore) {
  Refreshing t(10000);
  Exporter& ex = *t.ex;
  PeerRib& rib = t.rib;
  EXPECT_EQ(ex.refresh(kV4), RefreshOutcome::kQueued);
  std::vector<std::byte> bytes;
  ASSERT_TRUE(ex.pump(bytes, 4096));  // the walk has begun
  rib.replay(bytes);
  EXPECT_EQ(ex.refresh(kV4), RefreshOutcome::kQueued);
  for (int i = 0; i < 500; ++i) ASSERT_EQ(ex.refresh(kV4), RefreshOutcome::kCoalesced);
  drain(ex, rib, 4096);
  EXPECT_EQ(rib.trace, "EBRBR");
  EXPECT_EQ(rib.purged, 0u);
  EXPECT_EQ(ex.counters().refreshes.load(), 2u);
  EXPECT_EQ(rib.routes.size(), 10000u);
}

// A request before End-of-RIB waits for it (RFC 7313 section 4), then the
// whole Adj-RIB-Out goes again.
TEST(Exporter, RefreshBeforeEndOfRibWaitsForIt) {
  Fixture fx;
  fill(fx, 100);
  auto s = fx.enhanced();
  Exporter ex(fx.table, fx.out, s);
  EXPECT_EQ(ex.refresh(kV4), RefreshOutcome::kQueued);
  PeerRib rib;
  drain(ex, rib);
  EXPECT_EQ(rib.trace, "EBR");
  EXPECT_EQ(rib.announcements, 200);
}

// The table changes under a walk: routes withdrawn (their entries must not
// move the cursor's way), new ones by the thousand (the map grows and the
// walk starts over). Small slices put the cursor everywhere. The peer,
// purging at the EoRR what was not sent since the BoRR as RFC 7313 says,
// ends with exactly what the table says.
TEST(Exporter, RefreshWalkSurvivesChangesUnderIt) {
  Refreshing t(3000, 8);
  Fixture& fx = t.fx;
  Exporter& ex = *t.ex;
  PeerRib& rib = t.rib;
  (void)ex.refresh(kV4);
  uint32_t next = 3000;
  std::vector<net::Prefix> away;  // withdrawn last round, announced again this one
  for (uint32_t round = 0; round < 600; ++round) {
    std::vector<std::byte> bytes;
    ex.pump(bytes, 2048, 256);
    rib.replay(bytes);
    if (!away.empty()) fx.announce(fx.a, attrs(64496, 0, {round % 4 + 1}), away);
    away.clear();
    for (uint32_t k = 0; k < 40; ++k) away.push_back(nth((round * 7919 + k * 613) % next));
    fx.withdraw(fx.a, away);
    if (round % 100 == 50) {  // enough to grow the map
      fill(fx, 3000, next);
      next += 3000;
    }
    if (round % 20 == 0) (void)ex.refresh(kV4);
  }
  drain(ex, rib, 256);
  EXPECT_EQ(rib.trace.substr(0, 3), "EBR");
  EXPECT_GE(rib.refresh_markers.size(), 6u) << rib.trace;
  EXPECT_EQ(rib.purged, 0u);
  const auto want = table_says(fx, t.s);
  EXPECT_EQ(rib.routes.size(), want.size());
  EXPECT_TRUE(rib.routes == want);
}

// Attributes of some 4.4 kB: too large for a 4096-octet UPDATE.
codec::AttributeSet huge(uint32_t first_as) {
  std::vector<uint32_t> many;
  for (uint32_t i = 0; i < 1100; ++i) many.push_back(0xFDE80000u + i);
  return attrs(first_as, 0, std::move(many));
}

// Issue 19: a route whose attributes do not fit in one UPDATE for the peer
// was counted as advertised and never sent, and the peer kept the version
// it had. Now it is not announced, the earlier version is withdrawn, it is
// counted, and the first one is reported.
TEST(Exporter, OversizedRouteIsNotAnnouncedAndItsEarlierVersionWithdrawn) {
  Refreshing t(0);
  Fixture& fx = t.fx;
  Exporter& ex = *t.ex;
  PeerRib& rib = t.rib;
  fx.announce(fx.a, attrs(64496), {nth(1), nth(2)});
  drain(ex, rib);
  ASSERT_EQ(rib.routes.size(), 2u);
  EXPECT_FALSE(ex.first_oversized());
  fx.announce(fx.a, huge(64496), {nth(1), nth(3)});  // 1: a new version too large; 3: new, too large
  drain(ex, rib);
  EXPECT_EQ(rib.routes.size(), 1u);
  EXPECT_EQ(rib.routes.count(nth(1)), 0u);  // withdrawn
  EXPECT_EQ(rib.routes.count(nth(3)), 0u);  // never announced
  EXPECT_LE(rib.max_message, codec::kMaxMessageLen);
  EXPECT_EQ(ex.counters().advertised[kV4Index].load(), 1u);
  EXPECT_EQ(ex.counters().oversized.load(), 2u);
  ASSERT_TRUE(ex.first_oversized());
  const OversizedRoute& o = *ex.first_oversized();
  EXPECT_TRUE(o.prefix == nth(1) || o.prefix == nth(3));
  EXPECT_EQ(o.family, kV4);
  EXPECT_GT(o.attribute_bytes, 4096u);
  EXPECT_EQ(o.max_message, codec::kMaxMessageLen);
  EXPECT_FALSE(o.reason.empty());
  EXPECT_EQ(ex.pending(), 0u);
  // Nothing changed: nothing tried again. A refresh does not send them.
  std::vector<std::byte> bytes;
  EXPECT_FALSE(ex.pump(bytes, 1 << 20));
  EXPECT_TRUE(bytes.empty());
  (void)ex.refresh(kV4);
  drain(ex, rib);
  EXPECT_EQ(rib.trace, "EBR");
  EXPECT_EQ(rib.routes.size(), 1u);
  EXPECT_EQ(rib.purged, 0u);
  EXPECT_EQ(ex.counters().oversized.load(), 2u);
  // A version that fits goes out again; one that goes away is forgotten.
  fx.announce(fx.a, attrs(64496, 0, {9}), {nth(1)});
  fx.withdraw(fx.a, {nth(3)});
  drain(ex, rib);
  EXPECT_EQ(rib.routes.count(nth(1)), 1u);
  EXPECT_EQ(ex.counters().advertised[kV4Index].load(), 2u);
  EXPECT_EQ(ex.pending(), 0u);
}

// The same set goes to a peer with RFC 8654 extended messages.
TEST(Exporter, OversizedForOnePeerFitsAnExtendedMessagePeer) {
  Fixture fx;
  fx.announce(fx.a, huge(64496), {nth(1)});
  auto s = fx.setup();
  s.params.extended_message = true;
  Exporter ex(fx.table, fx.out, s);
  PeerRib rib;
  rib.params.extended_message = true;
  drain(ex, rib);
  EXPECT_EQ(rib.routes.size(), 1u);
  EXPECT_GT(rib.max_message, codec::kMaxMessageLen);
  EXPECT_EQ(ex.counters().oversized.load(), 0u);
  EXPECT_FALSE(ex.first_oversized());
}

TEST(Exporter, AddPathSendsTheBestNPathsWithStableIdentifiers) {
  Fixture fx;
  PeerInfo pc;
  pc.address = ip("198.18.0.4");
  pc.router_id = 4;
  pc.asn = 64498;
  const uint16_t c = *fx.table.add_peer(pc);
  // Three paths to one prefix: A's (shortest), B's, C's (longest).
  auto path_of = [](uint32_t first, int extra) {
    PathAttributes p;
    p.origin = codec::Origin::kIgp;
    std::vector<uint32_t> asns{first};
    for (int i = 0; i < extra; ++i) asns.push_back(64999);
    p.as_path = AsPath{{AsSegment{SegmentType::kAsSequence, asns}}};
    p.next_hop = ip("198.18.0.2");
    return codec::AttributeSet::from(p);
  };
  fx.announce(fx.a, path_of(64496, 0), {nth(1)});
  fx.announce(fx.b, path_of(64497, 1), {nth(1)});
  fx.announce(c, path_of(64498, 2), {nth(1)});
  auto s = fx.setup();
  s.params.add_path_send.add(kV4);
  s.add_path_max = 2;
  Exporter ex(fx.table, fx.out, s);
  PeerRib rib;
  rib.params.add_path_receive.add(kV4);
  drain(ex, rib);
  ASSERT_EQ(rib.paths.size(), 2u);
  std::map<uint32_t, uint32_t> neighbour_of;  // path id -> neighbour AS in the path sent
  for (const auto& [np, a] : rib.paths) {
    EXPECT_NE(np.path_id, 0u);
    neighbour_of[np.path_id] = a.decode().as_path->segments[0].asns[1];
  }
  std::set<uint32_t> firsts;
  for (auto& [id, asn] : neighbour_of) firsts.insert(asn);
  EXPECT_EQ(firsts, (std::set<uint32_t>{64496, 64497}));  // the best two
  uint32_t id_b = 0;
  for (auto& [id, asn] : neighbour_of)
    if (asn == 64497) id_b = id;
  // A's goes: B's keeps its identifier, C's comes in.
  fx.withdraw(fx.a, {nth(1)});
  drain(ex, rib);
  ASSERT_EQ(rib.paths.size(), 2u);
  std::set<uint32_t> now;
  for (const auto& [np, a] : rib.paths) {
    uint32_t asn = a.decode().as_path->segments[0].asns[1];
    now.insert(asn);
    if (asn == 64497) {
      EXPECT_EQ(np.path_id, id_b);
    }
  }
  EXPECT_EQ(now, (std::set<uint32_t>{64497, 64498}));
  EXPECT_EQ(ex.counters().advertised[kV4Index].load(), 2u);
  // Every path, and never the peer's own back.
  auto all = fx.setup(c);
  all.params.add_path_send.add(kV4);
  Exporter ex_all(fx.table, fx.out, all);
  PeerRib rib_all;
  rib_all.params.add_path_receive.add(kV4);
  drain(ex_all, rib_all);
  EXPECT_EQ(rib_all.paths.size(), 1u);  // B's only: A's went, C's is the peer's own
}

// RFC 7947 section 2.3: a best route that may not go to a route-server
// client (its export filter refuses it, or it is the client's own) does
// not hide the next best path from it; a peer that is not a route-server
// client gets nothing for the prefix.
TEST(Exporter, RouteServerClientGetsTheBestPathThatMayGoToIt) {
  Fixture fx;
  constexpr uint32_t kTagged = 0xFDE9029A;  // 65001:666, which the filter refuses
  fx.announce(fx.a, attrs(64496, 5, {kTagged}), {nth(1)});
  PathAttributes longer;  // B's: one AS longer, so A's is the best
  longer.origin = codec::Origin::kIgp;
  longer.as_path = AsPath{{AsSegment{SegmentType::kAsSequence, {64497, 64998, 64999}}}};
  longer.next_hop = ip("198.18.0.3");
  longer.med = 7;
  fx.announce(fx.b, codec::AttributeSet::from(longer), {nth(1)});
  uint32_t best_slot = UINT32_MAX;
  fx.table.lookup(kV4Index, nth(1), [&](const RouteView& r, bool best) {
    if (best) best_slot = r.slot;
  });
  ASSERT_EQ(best_slot, fx.a);

  Filter f = refusing(kTagged, "no-tagged");
  auto rs = fx.setup();
  rs.filter = kept(f);
  rs.target.route_server_client = true;
  Exporter ex(fx.table, fx.out, rs);
  PeerRib rib;
  drain(ex, rib);
  ASSERT_EQ(rib.paths.size(), 1u);
  EXPECT_EQ(rib.paths.begin()->first.path_id, 0u);  // no ADD-PATH: the one identifier
  auto got = rib.routes.at(nth(1)).decode();
  EXPECT_EQ(got.as_path->segments[0].asns, (std::vector<uint32_t>{64497, 64998, 64999}));
  EXPECT_EQ(got.next_hop, ip("198.18.0.3"));
  EXPECT_EQ(got.med, 7u);
  EXPECT_EQ(ex.counters().filtered.load(), 1u);  // A's, asked once

  // The same filter on a peer that is not a route-server client: A's
  // best route is refused and hides B's.
  auto plain = rs;
  plain.target.route_server_client = false;
  Exporter ex_plain(fx.table, fx.out, plain);
  PeerRib rib_plain;
  drain(ex_plain, rib_plain);
  EXPECT_TRUE(rib_plain.routes.empty());

  // A route-server client that is A itself gets B's path, not nothing.
  auto own = fx.setup(fx.a);
  own.target.route_server_client = true;
  Exporter ex_own(fx.table, fx.out, own);
  PeerRib rib_own;
  drain(ex_own, rib_own);
  ASSERT_EQ(rib_own.routes.size(), 1u);
  EXPECT_EQ(rib_own.routes.at(nth(1)).decode().next_hop, ip("198.18.0.3"));

  // B's path goes while A's stays the best: the client's copy is withdrawn.
  fx.withdraw(fx.b, {nth(1)});
  drain(ex, rib);
  EXPECT_TRUE(rib.routes.empty());
  drain(ex_own, rib_own);
  EXPECT_TRUE(rib_own.routes.empty());
  // And comes back.
  fx.announce(fx.b, codec::AttributeSet::from(longer), {nth(1)});
  drain(ex, rib);
  EXPECT_EQ(rib.routes.size(), 1u);
  // A's path loses its tag: the client's one path (identifier 0 in the
  // Adj-RIB-Out too) is replaced by one announcement, not withdrawn and
  // announced again.
  const int updates = rib.updates;
  const uint64_t withdrawn = ex.counters().withdrawn.load();
  fx.announce(fx.a, attrs(64496, 5), {nth(1)});
  drain(ex, rib);
  EXPECT_EQ(rib.routes.at(nth(1)).decode().next_hop, ip("198.18.0.2"));
  EXPECT_EQ(rib.updates, updates + 1);
  EXPECT_EQ(ex.counters().withdrawn.load(), withdrawn);
  EXPECT_EQ(ex.counters().advertised[kV4Index].load(), 1u);
}

// The peer's RIB after everything was pumped equals, prefix by prefix, the
// table's best route through the rules.
void expect_in_step(Fixture& fx, const PeerRib& rib, const ExporterSetup& s) {
  const auto want = table_says(fx, s);
  for (const auto& [p, a] : rib.routes) RC_LOG() << "peer holds " << p.to_string() << "\n";
  for (const auto& [p, a] : want) RC_LOG() << "table says " << p.to_string() << "\n";
  RC_ASSERT(rib.routes == want);
}

// With ADD-PATH (every path): per prefix, the peer holds every route of
// the table through the rules, each once.
void expect_all_paths(Fixture& fx, const PeerRib& rib, const ExporterSetup& s) {
  std::map<net::Prefix, std::multiset<std::vector<std::byte>>> want, got;
  std::vector<net::Prefix> prefixes;  // (walk holds the shard lock that lookup_all takes)
  fx.table.walk([&](const Change& c, const std::optional<RouteView>&, auto) { prefixes.push_back(c.prefix); });
  for (const auto& p : prefixes)
    fx.table.lookup_all(kV4Index, p, [&](std::span<const RouteView> routes, int) {
      for (const auto& r : routes) {
        auto e = export_route(s.target, ExportSource{r.peer, r.slot}, kV4, r.attrs->decode());
        if (e.verdict == ExportVerdict::kSend) {
          auto w = e.attrs.wire();
          want[p].insert(std::vector<std::byte>(w.begin(), w.end()));
        }
      }
    });
  for (const auto& [np, a] : rib.paths) {
    auto w = a.wire();
    got[np.prefix].insert(std::vector<std::byte>(w.begin(), w.end()));
  }
  RC_ASSERT(got == want);
}

RC_GTEST_PROP(Exporter, PeerEndsInStepWithTheTableWhateverTheTiming, ()) {
  const size_t retention = *rc::gen::element<size_t>(2, 8, 64, 8192);
  Fixture fx(retention);
  const uint32_t target = *rc::gen::element<uint32_t>(100, 0);  // 0: peer A itself
  const bool add_path = *rc::gen::arbitrary<bool>();            // every path, RFC 7911
  ExporterSetup s = fx.setup(target);
  s.enhanced_route_refresh = *rc::gen::arbitrary<bool>();       // the peer purges at EoRR
  s.refresh_slice = *rc::gen::element<size_t>(1, 3, 4096);
  if (add_path) s.params.add_path_send.add(kV4);
  Exporter ex(fx.table, fx.out, s);
  PeerRib rib;
  if (add_path) rib.params.add_path_receive.add(kV4);
  const int steps = *rc::gen::inRange(1, 60);
  for (int i = 0; i < steps; ++i) {
    const int what = *rc::gen::inRange(0, 4);
    const uint16_t slot = *rc::gen::element(fx.a, fx.b);
    std::vector<net::Prefix> ps;
    const int n = *rc::gen::inRange(1, 6);
    for (int k = 0; k < n; ++k) ps.push_back(nth(*rc::gen::inRange<uint32_t>(0, 12)));
    for (auto& p : ps) RC_LOG() << (what == 0 ? "withdraw " : "announce ") << slot << " " << p.to_string() << "\n";
    if (what == 0) fx.withdraw(slot, ps);
    else fx.announce(slot, attrs(slot == fx.a ? 64496 : 64497, *rc::gen::inRange<uint32_t>(0, 3)), ps);
    if (*rc::gen::inRange(0, 6) == 0) {
      RC_LOG() << "refresh\n";
      (void)ex.refresh(kV4);
    }
    if (*rc::gen::inRange(0, 3) == 0) {
      std::vector<std::byte> bytes;
      RC_LOG() << "pump\n";
      ex.pump(bytes, *rc::gen::element<size_t>(1, 100, 1 << 20), *rc::gen::element<size_t>(1, 3, 1024));
      rib.replay(bytes);
    }
  }
  drain(ex, rib);
  RC_ASSERT(ex.initial_done());
  RC_ASSERT(rib.purged == 0u);
  if (add_path) expect_all_paths(fx, rib, s);
  else expect_in_step(fx, rib, s);
  RC_ASSERT(ex.pending() == 0u);
}

// What a route-server client should hold (RFC 7947 section 2.3): per
// prefix, the best path of those the rules and its filter let through.
// The fixture's two peers give a prefix at most two paths: the best, then
// the other.
std::map<net::Prefix, codec::AttributeSet> client_says(Fixture& fx, const ExporterSetup& s, const Filter* f) {
  std::map<net::Prefix, codec::AttributeSet> want;
  std::vector<net::Prefix> prefixes;  // (walk holds the shard lock that lookup_all takes)
  fx.table.walk([&](const Change& c, const std::optional<RouteView>&, auto) { prefixes.push_back(c.prefix); });
  for (const auto& p : prefixes)
    fx.table.lookup_all(kV4Index, p, [&](std::span<const RouteView> routes, int best) {
      if (best < 0) return;
      std::vector<size_t> order{static_cast<size_t>(best)};
      for (size_t i = 0; i < routes.size(); ++i)
        if (i != static_cast<size_t>(best) && fx.table.eligible(routes[i])) order.push_back(i);
      for (size_t i : order) {
        const codec::AttributeSet a = routes[i].attrs->decode();
        if (f && !evaluate(*f, p, a).accept) continue;
        auto e = export_route(s.target, ExportSource{routes[i].peer, routes[i].slot}, kV4, a);
        if (e.verdict != ExportVerdict::kSend) continue;
        want.emplace(p, e.attrs);
        return;
      }
    });
  return want;
}

// Property: after random changes from both peers, pumped at random moments,
// a route-server client (peer A itself or a third one) whose filter refuses
// one community holds, per prefix, the best path that may go to it.
RC_GTEST_PROP(Exporter, RouteServerClientEndsWithTheBestPathThatMayGoToIt, ()) {
  Fixture fx(*rc::gen::element<size_t>(2, 8192));
  ExporterSetup s = fx.setup(*rc::gen::element<uint32_t>(100, 0));  // 0: peer A itself
  s.target.route_server_client = true;
  Filter f = refusing(1, "no-1");
  s.filter = kept(f);
  Exporter ex(fx.table, fx.out, s);
  PeerRib rib;
  const int steps = *rc::gen::inRange(1, 40);
  for (int i = 0; i < steps; ++i) {
    const uint16_t slot = *rc::gen::element(fx.a, fx.b);
    const net::Prefix p = nth(*rc::gen::inRange<uint32_t>(0, 6));
    if (*rc::gen::inRange(0, 4) == 0) {
      fx.withdraw(slot, {p});
    } else {
      std::vector<uint32_t> cs;
      if (*rc::gen::arbitrary<bool>()) cs.push_back(1);
      fx.announce(slot, attrs(slot == fx.a ? 64496 : 64497, *rc::gen::inRange<uint32_t>(0, 3), cs), {p});
    }
    if (*rc::gen::inRange(0, 3) == 0) {
      std::vector<std::byte> bytes;
      ex.pump(bytes, 1 << 20, *rc::gen::element<size_t>(1, 1024));
      rib.replay(bytes);
    }
  }
  drain(ex, rib);
  RC_ASSERT(rib.routes == client_says(fx, s, &f));
  for (const auto& [np, a] : rib.paths) RC_ASSERT(np.path_id == 0u);
}

// ---- update groups (export_group.h)

// The best route of each prefix through the rules and the filter, for the
// peer in `s.target.slot`: what a peer's own exporter would send it.
std::map<net::Prefix, codec::AttributeSet> peer_says(Fixture& fx, const ExporterSetup& s, const Filter* f) {
  auto want = table_says(fx, s);
  if (!f) return want;
  std::erase_if(want, [&](const auto& kv) {
    bool accept = false;
    fx.table.lookup(kV4Index, kv.first, [&](const RouteView& r, bool best) {
      if (best) accept = evaluate(*f, kv.first, r.attrs->decode()).accept;
    });
    return !accept;
  });
  return want;
}

// Refuses routes with community 65000:2 (and accepts the rest).
Filter refuse_two() { return refusing(0xFDE80002, "not-two"); }

TEST(ExportGroup, MembersShareOneEncodingAndEachGetsAllButItsOwnRoutes) {
  Fixture fx;
  fill(fx, 400);
  fx.announce(fx.b, attrs(64497), {nth(1000), nth(1001)});
  ExportGroups groups(fx.table, fx.out);
  auto sa = fx.setup(fx.a), sb = fx.setup(fx.b), sc = fx.setup(100);
  auto ma = groups.join(sa, nullptr, fx.a);
  auto mb = groups.join(sb, nullptr, fx.b);
  auto mc = groups.join(sc, nullptr, 100);
  EXPECT_EQ(groups.stats().groups, 1u);
  EXPECT_EQ(mc->group_size(), 3u);
  PeerRib ra, rb, rc;
  ra.strict = rb.strict = rc.strict = false;
  drain(*mc, rc);
  drain(*ma, ra);
  drain(*mb, rb);
  EXPECT_EQ(rc.routes, table_says(fx, sc));
  EXPECT_EQ(ra.routes, table_says(fx, sa));
  EXPECT_EQ(rb.routes, table_says(fx, sb));
  EXPECT_EQ(ra.routes.size(), 2u);    // B's only
  EXPECT_EQ(rb.routes.size(), 400u);  // A's only
  EXPECT_EQ(rc.routes.size(), 402u);
  for (PeerRib* r : {&ra, &rb, &rc}) EXPECT_EQ(r->end_of_rib, 1);
  // The table was encoded once: the group's messages are C's (who gets
  // everything), not the sum of the three.
  EXPECT_EQ(groups.stats().messages, mc->counters().updates.load());
  EXPECT_EQ(ma->counters().advertised[kV4Index].load(), 2u);
  EXPECT_EQ(mb->counters().advertised[kV4Index].load(), 400u);
  EXPECT_EQ(mc->counters().advertised[kV4Index].load(), 402u);
}

// IPv6 unicast through a peer's exporter and an update group: the queue
// keeps an IPv6 prefix in 6 words (an IPv4 one in 3), and what comes out is
// the table's prefixes, lengths and path identifiers as they went in.
TEST(ExportGroup, Ipv6PrefixesGoOutAsTheyCameIn) {
  const codec::Family kV6{2, 1};
  const FamilyIndex kV6Index = 1;
  Fixture fx;
  auto v6_attrs = [](uint32_t community) {
    PathAttributes p;
    p.origin = codec::Origin::kIgp;
    p.as_path = AsPath{{AsSegment{SegmentType::kAsSequence, {64496}}}};
    p.mp_next_hop = codec::NextHop{ip("2001:db8::2"), std::nullopt};
    p.communities = {community};
    return codec::AttributeSet::from(p);
  };
  std::vector<codec::NlriPrefix> ann[2];
  for (uint32_t i = 0; i < 300; ++i) {
    uint8_t b[16] = {0x20, 0x01, 0x0d, 0xb8, static_cast<uint8_t>(i >> 8), static_cast<uint8_t>(i)};
    b[15] = 0x80;  // a host bit past /64 only for the /128s
    const uint8_t len = i % 3 == 0 ? 128 : 48;
    if (len != 128) b[15] = 0;
    ann[i % 2].push_back({*net::Prefix::make(net::IpAddress::from_bytes(net::IpFamily::V6, b), len), 0});
  }
  const auto a1 = v6_attrs(1), a2 = v6_attrs(2);
  fx.table.apply(fx.a, kV6Index, &a1, ann[0], {});
  fx.table.apply(fx.a, kV6Index, &a2, ann[1], {});
  auto v6_setup = [&](uint32_t slot) {
    ExporterSetup s = fx.setup(slot);
    s.families = {};
    s.families.add(kV6);
    s.target.next_hop_v6 = codec::NextHop{ip("2001:db8:1::1"), std::nullopt};
    return s;
  };
  std::set<net::Prefix> want;
  for (const auto& v : ann)
    for (const auto& p : v) want.insert(p.prefix);
  Exporter ex(fx.table, fx.out, v6_setup(100));
  ExportGroups groups(fx.table, fx.out);
  auto m1 = groups.join(v6_setup(101), nullptr, 101);
  auto m2 = groups.join(v6_setup(102), nullptr, 102);
  PeerRib r0, r1, r2;
  drain(ex, r0);
  drain(*m1, r1);
  drain(*m2, r2);
  for (PeerRib* r : {&r0, &r1, &r2}) {
    std::set<net::Prefix> got;
    for (const auto& [p, a] : r->routes) got.insert(p);
    EXPECT_EQ(got, want);
    EXPECT_EQ(r->end_of_rib, 1);
    EXPECT_EQ(r->updates, 2) << "one UPDATE a set";
  }
  EXPECT_EQ(ex.counters().advertised[kV6Index].load(), 300u);
  // Withdrawals of some: the same from both.
  std::vector<codec::NlriPrefix> gone(ann[0].begin(), ann[0].begin() + 50);
  fx.table.apply(fx.a, kV6Index, nullptr, {}, gone);
  for (const auto& p : gone) want.erase(p.prefix);
  drain(ex, r0);
  drain(*m1, r1);
  for (PeerRib* r : {&r0, &r1}) {
    std::set<net::Prefix> got;
    for (const auto& [p, a] : r->routes) got.insert(p);
    EXPECT_EQ(got, want);
  }
}

TEST(ExportGroup, AMemberWhoseOwnRouteBecomesBestIsToldToForgetTheOther) {
  Fixture fx;
  fx.announce(fx.b, attrs(64497), {nth(1)});
  ExportGroups groups(fx.table, fx.out);
  auto sa = fx.setup(fx.a);
  auto ma = groups.join(sa, nullptr, fx.a);
  PeerRib ra;
  ra.strict = false;
  drain(*ma, ra);
  ASSERT_EQ(ra.routes.size(), 1u);  // B's
  // A's own route wins (shorter path): A must not keep B's.
  codec::PathAttributes p;
  p.origin = codec::Origin::kIgp;
  p.as_path = AsPath{{AsSegment{SegmentType::kAsSequence, {64496}}}};
  p.next_hop = ip("198.18.0.2");
  fx.announce(fx.a, codec::AttributeSet::from(p), {nth(1)});
  drain(*ma, ra);
  EXPECT_TRUE(ra.routes.empty());
  EXPECT_EQ(ra.routes, table_says(fx, sa));
}

// history: the group keeps its stream from the start (the newcomer reads
// it) or not (the newcomer is walked through the Adj-RIB-Out).
void late_member(uint64_t history) {
  Fixture fx;
  fill(fx, 300);
  ExportGroups groups(fx.table, fx.out, ExportGroups::kMaxLag, history);
  auto s1 = fx.setup(100), s2 = fx.setup(101);
  auto m1 = groups.join(s1, nullptr, 100);
  PeerRib r1, r2;
  r1.strict = r2.strict = false;
  drain(*m1, r1);
  auto m2 = groups.join(s2, nullptr, 101);
  EXPECT_EQ(m2->group_size(), 2u);
  const uint64_t encoded = groups.stats().messages;
  drain(*m2, r2);
  // Read from the history: nothing encoded for it; walked: its own UPDATEs.
  EXPECT_EQ(groups.stats().messages, encoded);
  if (history) {
    EXPECT_EQ(m2->counters().updates.load(), m1->counters().updates.load());
  }
  EXPECT_EQ(r2.routes, table_says(fx, s2));
  EXPECT_EQ(r2.end_of_rib, 1);
  EXPECT_TRUE(m2->initial_done());
  fx.withdraw(fx.a, {nth(0), nth(1)});
  fx.announce(fx.b, attrs(64497), {nth(5000)});
  drain(*m1, r1);
  drain(*m2, r2);
  EXPECT_EQ(r1.routes, table_says(fx, s1));
  EXPECT_EQ(r2.routes, table_says(fx, s2));
  EXPECT_EQ(r2.end_of_rib, 1);
}

TEST(ExportGroup, ALateMemberIsWalkedThroughTheGroupThenFollowsTheStream) { late_member(0); }

TEST(ExportGroup, ALateMemberReadsTheGroupsHistoryThenFollowsTheStream) { late_member(ExportGroups::kHistory); }

TEST(ExportGroup, ASlowMemberDoesNotHoldTheOthersBack) {
  Fixture fx;
  ExportGroups groups(fx.table, fx.out);
  auto s1 = fx.setup(100), s2 = fx.setup(101);
  auto fast = groups.join(s1, nullptr, 100);
  auto slow = groups.join(s2, nullptr, 101);
  PeerRib rf, rs;
  rf.strict = rs.strict = false;
  for (uint32_t round = 0; round < 5; ++round) {
    fill(fx, 200, round * 200);
    drain(*fast, rf);  // the slow one reads nothing meanwhile
    EXPECT_EQ(rf.routes.size(), (round + 1) * 200u);
  }
  EXPECT_TRUE(rs.routes.empty());
  EXPECT_FALSE(slow->too_slow());
  drain(*slow, rs, 100);  // small reads
  EXPECT_EQ(rs.routes, table_says(fx, s2));
  EXPECT_EQ(rs.end_of_rib, 1);
}

TEST(ExportGroup, AMemberTooFarBehindIsToldSoAndTheOthersGoOn) {
  Fixture fx;
  ExportGroups groups(fx.table, fx.out, 20'000, 0);  // octets a member may lag; no history kept
  auto fast = groups.join(fx.setup(100), nullptr, 100);
  auto slow = groups.join(fx.setup(101), nullptr, 101);
  PeerRib rf;
  rf.strict = false;
  fill(fx, 500);
  drain(*fast, rf);
  EXPECT_FALSE(slow->too_slow());  // asked nothing yet
  fill(fx, 5000, 500);
  drain(*fast, rf);
  EXPECT_EQ(rf.routes.size(), 5500u);
  // Marked by the group without asking for anything, and the stream no
  // longer keeps its part.
  EXPECT_TRUE(slow->too_slow());
  EXPECT_FALSE(fast->too_slow());
  EXPECT_EQ(groups.stats().stream_bytes, 0u);
  std::vector<std::byte> bytes;
  EXPECT_FALSE(slow->pump(bytes, 100));
  EXPECT_TRUE(bytes.empty());
}

TEST(ExportGroup, DifferentFiltersAndAddPathMakeDifferentGroups) {
  Fixture fx;
  ExportGroups groups(fx.table, fx.out);
  auto two = chain(refuse_two());
  Filter renamed = refuse_two();
  renamed.name = "another-name";  // the same rules: the same group
  auto also_two = chain(renamed);
  auto g1 = groups.join(fx.setup(100), two, 100);
  auto g2 = groups.join(fx.setup(101), also_two, 101);
  auto g3 = groups.join(fx.setup(102), nullptr, 102);
  auto ap = fx.setup(103);
  ap.params.add_path_send.add(kV4);
  auto g4 = groups.join(ap, nullptr, 103);
  auto g5 = groups.join(ap, nullptr, 104);
  auto ibgp = fx.setup(105);
  ibgp.target.internal = true;
  auto g6 = groups.join(ibgp, nullptr, 105);
  EXPECT_EQ(g1->group_size(), 2u);
  EXPECT_EQ(g3->group_size(), 1u);
  EXPECT_EQ(g4->group_size(), 1u);
  EXPECT_EQ(g5->group_size(), 1u);
  EXPECT_EQ(groups.stats().groups, 5u);
  g1.reset();
  g2.reset();
  EXPECT_EQ(groups.stats().groups, 4u);
  (void)g6;
}

TEST(ExportGroup, RefreshWalksTheGroupBetweenBorrAndEorr) {
  Fixture fx;
  fill(fx, 50);
  ExportGroups groups(fx.table, fx.out);
  auto s = fx.enhanced();
  auto m = groups.join(s, nullptr, 100);
  auto other = groups.join(fx.setup(101), nullptr, 101);
  PeerRib rib, ro;
  rib.strict = ro.strict = false;
  drain(*m, rib);
  drain(*other, ro);
  EXPECT_EQ(m->refresh(kV4), RefreshOutcome::kQueued);
  EXPECT_EQ(m->refresh(kV4), RefreshOutcome::kCoalesced);
  const int before = rib.announcements;
  drain(*m, rib, 200);
  EXPECT_EQ(rib.trace, "EBR");
  EXPECT_EQ(rib.announcements - before, 50);
  EXPECT_EQ(rib.purged, 0u);
  EXPECT_EQ(rib.routes, table_says(fx, s));
  const int other_before = ro.announcements;
  drain(*other, ro);
  EXPECT_EQ(ro.announcements, other_before);  // the other member was not sent anything again
}

TEST(ExportGroup, ANewFilterMovesTheMemberOutAndSendsOnlyTheDifference) {
  Fixture fx;
  fx.announce(fx.a, attrs(64496, 0, {0xFDE80001}), {nth(1), nth(2)});
  fx.announce(fx.a, attrs(64496, 0, {0xFDE80002}), {nth(3), nth(4)});
  ExportGroups groups(fx.table, fx.out);
  auto s = fx.setup(100);
  auto m = groups.join(s, nullptr, 100);
  auto other = groups.join(fx.setup(101), nullptr, 101);
  PeerRib rib;
  rib.strict = false;
  drain(*m, rib);
  ASSERT_EQ(rib.routes.size(), 4u);
  const Filter model = refuse_two();
  auto f = chain(model);
  m->set_filter(f, false);
  const int announced = rib.announcements, updates = rib.updates;
  drain(*m, rib);
  EXPECT_EQ(rib.routes, peer_says(fx, s, &model));
  EXPECT_EQ(rib.routes.size(), 2u);
  EXPECT_EQ(rib.announcements, announced);  // nothing announced again
  EXPECT_EQ(rib.updates, updates + 1);      // one withdrawal
  EXPECT_EQ(m->group_size(), 1u);
  EXPECT_EQ(other->group_size(), 1u);
  EXPECT_EQ(groups.stats().groups, 2u);
  fx.announce(fx.a, attrs(64496, 0, {0xFDE80001}), {nth(9)});
  drain(*m, rib);
  EXPECT_EQ(rib.routes, peer_says(fx, s, &model));
}

// Members of a group, joining, leaving, reading at random moments, with
// refreshes and new filters among random changes from two peers that
// are members too: in the end each holds what an exporter of its own
// would have sent it.
// A member's send queue as its socket would drain it: `n` octets of what it
// queued (its own bytes and the group's shared ones, in order) go on the
// wire, and the whole messages there are replayed at the peer.
void send_some(sendq::SendQueue& q, size_t n, std::vector<std::byte>& wire, PeerRib& rib) {
  while (n > 0 && q.unsent() > 0) {
    const auto run = q.pending();
    const size_t k = std::min(n, run.size());
    wire.insert(wire.end(), run.begin(), run.begin() + static_cast<std::ptrdiff_t>(k));
    q.consume(k);
    n -= k;
  }
  size_t whole = 0;
  while (wire.size() - whole >= codec::kHeaderLen) {
    const size_t len = (std::to_integer<size_t>(wire[whole + 16]) << 8) | std::to_integer<size_t>(wire[whole + 17]);
    if (len < codec::kHeaderLen || wire.size() - whole < len) break;
    whole += len;
  }
  rib.replay(std::vector<std::byte>(wire.begin(), wire.begin() + static_cast<std::ptrdiff_t>(whole)));
  wire.erase(wire.begin(), wire.begin() + static_cast<std::ptrdiff_t>(whole));
}

// Two members of a group queue the same encoded bytes for their sockets:
// the group's buffer itself, not copies of it, kept while they are unsent.
TEST(ExportGroup, MembersQueueTheGroupsEncodedBytesNotCopies) {
  Fixture fx;
  fill(fx, 300);
  ExportGroups groups(fx.table, fx.out, ExportGroups::kMaxLag, 0);  // no history kept for newcomers
  auto m1 = groups.join(fx.setup(100), nullptr, 100);
  auto m2 = groups.join(fx.setup(101), nullptr, 101);
  sendq::SendQueue q1, q2;
  auto pump_both = [&] {
    for (int round = 0; round < 100; ++round) {
      const bool more1 = m1->pump(q1, 1 << 20);
      const bool more2 = m2->pump(q2, 1 << 20);
      if (!more1 && !more2) return;
    }
    ADD_FAILURE() << "the group never finished";
  };
  pump_both();  // nothing sent yet: the queues hold the whole table
  ASSERT_GT(q1.unsent(), 0u);
  EXPECT_EQ(q1.unsent(), q2.unsent());
  EXPECT_GT(q1.shared_runs(), 0u);
  EXPECT_EQ(q1.pending().data(), q2.pending().data());  // one buffer, two sockets
  // The group goes on writing (and lets go of what both read) while the
  // queues still hold their bytes.
  fx.announce(fx.b, attrs(64497), {nth(5000), nth(5001)});
  pump_both();
  EXPECT_EQ(groups.stats().stream_bytes, 0u);  // the group let go; the queues hold it
  PeerRib r1, r2;
  std::vector<std::byte> w1, w2;
  send_some(q1, SIZE_MAX, w1, r1);
  send_some(q2, SIZE_MAX, w2, r2);
  EXPECT_TRUE(w1.empty());
  EXPECT_EQ(r1.routes.size(), 302u);
  EXPECT_EQ(r1.routes, r2.routes);
  EXPECT_EQ(r1.end_of_rib, 1);
}

RC_GTEST_PROP(ExportGroup, MembersEndInStepWithAPerPeerExportWhateverTheTiming, ()) {
  const size_t retention = *rc::gen::element<size_t>(2, 8, 64, 8192);
  Fixture fx(retention);
  // The stream kept from its start for newcomers: never, for a while, always.
  const uint64_t history = *rc::gen::element<uint64_t>(0, 300, ExportGroups::kHistory);
  ExportGroups groups(fx.table, fx.out, ExportGroups::kMaxLag, history);
  const std::vector<uint16_t> slots = {fx.a, fx.b, 100, 101};
  const Filter two_model = refuse_two();
  auto two = chain(two_model);
  struct Member {
    std::unique_ptr<GroupMember> m;
    PeerRib rib;
    ExporterSetup setup;
    std::shared_ptr<const PolicyChain> filter;
    // Pumped into a send queue (the group's bytes shared, sent a part at a
    // time) rather than copied out.
    bool queued = false;
    sendq::SendQueue q;
    std::vector<std::byte> wire;
  };
  std::vector<std::optional<Member>> members(slots.size());
  auto join = [&](size_t i) {
    Member m;
    m.setup = fx.setup(slots[i]);
    m.setup.enhanced_route_refresh = *rc::gen::arbitrary<bool>();
    m.setup.target.route_server_client = *rc::gen::inRange(0, 3) == 0;  // RFC 7947
    if (*rc::gen::inRange(0, 5) == 0) m.setup.params.add_path_send.add(kV4);  // a group of its own
    m.rib.params.add_path_receive = m.setup.params.add_path_send;
    if (*rc::gen::inRange(0, 4) == 0) m.filter = two;
    m.queued = *rc::gen::arbitrary<bool>();
    m.m = groups.join(m.setup, m.filter, slots[i]);
    m.rib.strict = false;
    members[i] = std::move(m);
  };
  for (size_t i = 0; i < slots.size(); ++i)
    if (*rc::gen::arbitrary<bool>()) join(i);
  const int steps = *rc::gen::inRange(1, 60);
  for (int step = 0; step < steps; ++step) {
    const int what = *rc::gen::inRange(0, 10);
    const size_t i = *rc::gen::inRange<size_t>(0, slots.size());
    if (what <= 3) {
      const uint16_t slot = *rc::gen::element(fx.a, fx.b);
      std::vector<net::Prefix> ps;
      const int n = *rc::gen::inRange(1, 6);
      for (int k = 0; k < n; ++k) ps.push_back(nth(*rc::gen::inRange<uint32_t>(0, 12)));
      RC_LOG() << (what == 0 ? "withdraw " : "announce ") << slot;
      for (auto& p : ps) RC_LOG() << " " << p.to_string();
      RC_LOG() << "\n";
      if (what == 0) fx.withdraw(slot, ps);
      else
        fx.announce(slot, attrs(slot == fx.a ? 64496 : 64497, *rc::gen::inRange<uint32_t>(0, 3),
                                {0xFDE80000u + *rc::gen::inRange<uint32_t>(1, 3)}),
                    ps);
    } else if (what == 4) {
      RC_LOG() << (members[i] ? "leave " : "join ") << i << "\n";
      if (members[i]) members[i].reset();  // the session ends: its peer forgets
      else join(i);
    } else if (what == 5 && members[i]) {
      RC_LOG() << "refresh " << i << "\n";
      (void)members[i]->m->refresh(kV4);
    } else if (what == 6 && members[i]) {
      RC_LOG() << "new filter " << i << "\n";
      members[i]->filter = members[i]->filter ? nullptr : two;
      members[i]->m->set_filter(members[i]->filter, false);
    } else if (members[i]) {
      const size_t budget = *rc::gen::element<size_t>(1, 100, 1 << 20);
      RC_LOG() << "pump " << i << " " << budget << (members[i]->queued ? " queued" : "") << "\n";
      if (members[i]->queued) {
        Member& m = *members[i];
        m.m->pump(m.q, budget);
        // Its socket takes some of it: the rest stays queued while the
        // group goes on.
        send_some(m.q, *rc::gen::element<size_t>(0, 7, 100, 5000, SIZE_MAX), m.wire, m.rib);
      } else {
        std::vector<std::byte> bytes;
        members[i]->m->pump(bytes, budget);
        members[i]->rib.replay(bytes);
      }
    }
  }
  // Everyone reads until nobody has anything left.
  for (int round = 0; round < 1000; ++round) {
    bool more = false;
    for (auto& m : members)
      if (m && m->queued) {
        more |= m->m->pump(m->q, 1 << 20);
        send_some(m->q, SIZE_MAX, m->wire, m->rib);
      } else if (m) {
        std::vector<std::byte> bytes;
        more |= m->m->pump(bytes, 1 << 20);
        m->rib.replay(bytes);
      }
    if (!more) break;
    RC_ASSERT(round < 999);
  }
  for (const auto& m : members)
    if (m) RC_ASSERT(m->q.unsent() == 0u && m->wire.empty());  // every message whole
  for (size_t i = 0; i < members.size(); ++i) {
    if (!members[i]) continue;
    // The model: what an exporter of the member's own sends it now.
    ExporterSetup own = members[i]->setup;
    own.filter = members[i]->filter.get();
    Exporter alone(fx.table, fx.out, own);
    PeerRib model;
    model.params = members[i]->rib.params;
    drain(alone, model);
    auto show = [&](const char* who, const PeerRib& r) {
      for (const auto& [np, a] : r.paths) {
        const auto d = a.decode();
        RC_LOG() << "member " << i << " " << who << " " << np.prefix.to_string() << " id " << np.path_id << " path";
        if (d.as_path)
          for (const auto& seg : d.as_path->segments)
            for (uint32_t as : seg.asns) RC_LOG() << " " << as;
        RC_LOG() << " med " << d.med.value_or(0) << " nh " << (d.next_hop ? d.next_hop->to_string() : "-");
        for (uint32_t c : d.communities) RC_LOG() << " c " << c;
        RC_LOG() << " octets " << a.wire().size() << "\n";
      }
    };
    show("got", members[i]->rib);
    show("model", model);
    RC_LOG() << "member " << i << (members[i]->setup.target.route_server_client ? " rs" : "")
             << (members[i]->filter ? " filter" : "") << " group of " << members[i]->m->group_size() << "\n";
    // (Path by path: with ADD-PATH, `routes` keeps whichever path of a
    // prefix came last.)
    RC_ASSERT(members[i]->rib.paths == model.paths);
    RC_ASSERT(members[i]->rib.end_of_rib == 1);
    // (A refresh walk may end before the member read a withdrawal the
    // stream holds for it: the peer purges that route at the EoRR, which
    // is the same outcome, so `purged` is not asserted here.)
    RC_ASSERT(members[i]->m->initial_done());
  }
}

}  // namespace
}  // namespace petrel::table
