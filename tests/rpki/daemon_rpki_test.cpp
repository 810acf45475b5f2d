// The daemon's RPKI pieces that need no socket (daemon/rpki.h): the
// snapshot store (publication, the changes it reports, a reader's
// thread-local reference following publications from another thread),
// DeltaCover (which routes a VRP change covers, against a scan) and
// RpkiValidator (the origin AS of RFC 6811: last AS of the final
// AS_SEQUENCE, NONE for a trailing AS_SET, our AS for an empty path),
// its batched form and the table asking for a batch at once.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <span>
#include <thread>
#include <vector>

#include "codec/attribute_set.h"
#include "daemon/rpki.h"
#include "table/table.h"
#include "tests/rpki/table_testing.h"

namespace petrel::daemon {
namespace {

using rpki::Vrp;

net::Prefix P(const char* s) { return *net::Prefix::parse(s); }
Vrp V(const char* p, uint8_t max_len, uint32_t asn) { return Vrp{P(p), max_len, asn}; }

TEST(VrpStore, StartsEmptyAndReportsWhatChanged) {
  VrpStore store;
  auto empty = store.current();
  ASSERT_NE(empty, nullptr);
  EXPECT_EQ(empty->vrps.size(), 0u);
  EXPECT_TRUE(empty->source.empty());
  EXPECT_EQ(store.local().version, empty->version);

  auto d1 = store.publish({V("192.0.2.0/24", 24, 1), V("2001:db8::/32", 48, 2)}, "c1", 7, 1000);
  EXPECT_EQ(d1.announced.size(), 2u);
  EXPECT_TRUE(d1.withdrawn.empty());
  auto s1 = store.current();
  EXPECT_EQ(s1->v4, 1u);
  EXPECT_EQ(s1->v6, 1u);
  EXPECT_EQ(s1->source, "c1");
  EXPECT_EQ(s1->serial, 7u);
  EXPECT_GT(s1->version, empty->version);
  EXPECT_EQ(s1->table.validate(P("192.0.2.0/24"), 1), rpki::Validity::kValid);

  auto d2 = store.publish({V("2001:db8::/32", 48, 2), V("198.51.100.0/24", 24, 3)}, "c1", 8, 2000);
  EXPECT_EQ(d2.announced, std::vector<Vrp>{V("198.51.100.0/24", 24, 3)});
  EXPECT_EQ(d2.withdrawn, std::vector<Vrp>{V("192.0.2.0/24", 24, 1)});
  EXPECT_EQ(store.local().version, d2.version);
  EXPECT_EQ(store.local().table.validate(P("192.0.2.0/24"), 1), rpki::Validity::kNotFound);
  // The old snapshot stays whole for whoever holds it.
  EXPECT_EQ(s1->table.validate(P("192.0.2.0/24"), 1), rpki::Validity::kValid);
  auto recent = store.recent_changes();
  ASSERT_EQ(recent.size(), 2u);
  EXPECT_EQ(recent.back().version, d2.version);
}

// The cache's ASPAs (RTR version 2) are published with its VRPs, as a
// table ready for AS_PATH verification.
TEST(VrpStore, PublishesTheAspasWithTheVrps) {
  VrpStore store;
  EXPECT_EQ(store.current()->aspas, 0u);
  (void)store.publish({V("192.0.2.0/24", 24, 1)}, "c1", 7, 1000,
                      std::vector<rpki::Aspa>{{64500, {64501}}, {64501, {0}}});
  auto s = store.current();
  EXPECT_EQ(s->aspas, 2u);
  EXPECT_EQ(s->aspa.hop(64500, 64501), rpki::Hop::kProviderPlus);
  EXPECT_EQ(s->aspa.verify(std::vector<uint32_t>{64501, 64500}, false, rpki::AspaDirection::kUpstream),
            rpki::AspaState::kValid);
  (void)store.publish({V("192.0.2.0/24", 24, 1)}, "c1", 8, 2000);
  EXPECT_EQ(store.current()->aspas, 0u);
}

// What the daemon publishes with SLURM (RpkiService::publish_if_changed):
// the cache's VRPs through the filter, with its counts kept beside them,
// and the delta is against the VRPs published before (so a route is
// revalidated when SLURM alone changed).
TEST(VrpStore, PublishesVrpsThroughSlurm) {
  VrpStore store;
  const std::vector<rpki::Vrp> cache{V("192.0.2.0/24", 24, 1), V("198.51.100.0/24", 24, 2)};
  rpki::Slurm s;
  s.prefix_filters.push_back({*net::Prefix::parse("192.0.2.0/24"), std::nullopt, ""});
  s.prefix_assertions.push_back({*net::Prefix::parse("203.0.113.0/24"), 24, 3, ""});
  auto a = rpki::SlurmFilter(std::span<const rpki::Slurm>(&s, 1)).apply(cache);
  VrpDelta d = store.publish(std::move(a.vrps), "c1", 7, 1000, {}, {a.removed, a.added, 0, 0});
  auto snap = store.current();
  EXPECT_EQ(snap->vrps, (std::vector<rpki::Vrp>{V("198.51.100.0/24", 24, 2), V("203.0.113.0/24", 24, 3)}));
  EXPECT_EQ(snap->slurm_removed, 1u);
  EXPECT_EQ(snap->slurm_added, 1u);
  EXPECT_EQ(snap->table.validate(*net::Prefix::parse("192.0.2.0/24"), 1), rpki::Validity::kNotFound);
  EXPECT_EQ(snap->table.validate(*net::Prefix::parse("203.0.113.0/24"), 3), rpki::Validity::kValid);
  EXPECT_EQ(d.announced.size(), 2u);
  // The same cache data without SLURM: the filtered VRP comes back, the
  // asserted one goes.
  d = store.publish(cache, "c1", 7, 2000);
  EXPECT_EQ(d.announced, (std::vector<rpki::Vrp>{V("192.0.2.0/24", 24, 1)}));
  EXPECT_EQ(d.withdrawn, (std::vector<rpki::Vrp>{V("203.0.113.0/24", 24, 3)}));
  EXPECT_EQ(store.current()->slurm_removed, 0u);
}

// The same for ASPAs (draft-ietf-sidrops-aspa-slurm): the cache's ASPAs
// through the SLURM ASPA filters and assertions; the customers whose ASPA
// SLURM changed are in the delta, so their routes are verified again.
TEST(VrpStore, PublishesAspasThroughSlurm) {
  VrpStore store;
  const std::vector<rpki::Aspa> cache{{64500, {65002}}, {64510, {64511}}};
  (void)store.publish({}, "c1", 7, 1000, cache);
  rpki::Slurm s;
  s.version = 2;
  s.aspa_filters.push_back({64510, ""});
  s.aspa_assertions.push_back({64500, {64501}, ""});
  s.aspa_assertions.push_back({64600, {65002}, ""});
  auto a = rpki::SlurmFilter(std::span<const rpki::Slurm>(&s, 1)).apply_aspas(cache);
  VrpDelta d = store.publish({}, "c1", 7, 2000, a.aspas, {0, 0, a.removed, a.added});
  EXPECT_EQ(d.aspa_customers, (std::vector<uint32_t>{64500, 64510, 64600}));
  auto snap = store.current();
  EXPECT_EQ(snap->aspas, 2u);
  EXPECT_EQ(snap->slurm_aspas_removed, 1u);
  EXPECT_EQ(snap->slurm_aspas_added, 2u);
  const uint32_t leak[] = {65002, 64501, 64500};  // neighbour first
  EXPECT_EQ(snap->aspa.verify(leak, false, rpki::AspaDirection::kUpstream), rpki::AspaState::kUnknown);
  const uint32_t asserted[] = {65002, 64600};
  EXPECT_EQ(snap->aspa.verify(asserted, false, rpki::AspaDirection::kUpstream), rpki::AspaState::kValid);
  const uint32_t filtered[] = {64511, 64510};
  EXPECT_EQ(snap->aspa.verify(filtered, false, rpki::AspaDirection::kUpstream), rpki::AspaState::kUnknown);
}

TEST(VrpStore, KeepsABoundedListOfChanges) {
  VrpStore store;
  for (uint32_t i = 0; i < VrpStore::kKeptDeltas + 5; ++i) (void)store.publish({V("192.0.2.0/24", 24, i + 1)}, "c", i, i);
  EXPECT_EQ(store.recent_changes().size(), VrpStore::kKeptDeltas);
}

// A whole set (the first one, a reset, a flush) is not kept as a change:
// the store held up to 16 copies of the VRPs besides the snapshot.
TEST(VrpStore, KeptChangesHoldABoundedNumberOfVrps) {
  VrpStore store;
  std::vector<Vrp> big;
  for (uint32_t i = 0; i < VrpStore::kKeptDeltaVrps + 1; ++i)
    big.push_back(Vrp{*net::Prefix::make(net::IpAddress::v4(0x0a000000u + (i << 8)), 24), 24, 64496});
  auto d = store.publish(big, "c", 1, 1);
  EXPECT_EQ(d.announced.size(), big.size());  // the caller still gets the whole change
  auto recent = store.recent_changes();
  ASSERT_EQ(recent.size(), 1u);
  EXPECT_TRUE(recent[0].truncated);
  EXPECT_TRUE(recent[0].announced.empty());
  for (uint32_t i = 0; i < 3; ++i) (void)store.publish({V("192.0.2.0/24", 24, i + 1)}, "c", i + 2, i + 2);
  size_t held = 0;
  for (const auto& r : store.recent_changes()) held += r.announced.size() + r.withdrawn.size();
  EXPECT_LE(held, VrpStore::kKeptDeltaVrps);
  EXPECT_EQ(store.recent_changes().back().announced.size(), 1u);
}

// Readers on other threads see each publication (bounded: 200 of them),
// never a torn or older snapshot after a newer one.
TEST(VrpStore, ReadersFollowPublicationsWithoutALock) {
  VrpStore store;
  std::atomic<bool> done{false};
  std::atomic<uint64_t> regressions{0}, reads{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 2; ++t) {
    readers.emplace_back([&] {
      uint64_t last = 0;
      while (!done.load()) {
        const VrpSnapshot& s = store.local();
        if (s.version < last) ++regressions;
        last = s.version;
        // A snapshot is whole: its count matches its table.
        if (s.vrps.size() != s.table.size()) ++regressions;
        ++reads;
      }
    });
  }
  // The readers are running before the first publication (a small table
  // is built in microseconds: 200 can be over before a thread starts).
  for (int waited = 0; reads.load() < 2 && waited < 5000; ++waited)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  for (uint32_t i = 0; i < 200; ++i) {
    std::vector<Vrp> v;
    for (uint32_t j = 0; j <= i % 7; ++j) v.push_back(V("192.0.2.0/24", 24, j + 1));
    (void)store.publish(std::move(v), "c", i, i);
  }
  done = true;
  for (auto& t : readers) t.join();
  EXPECT_EQ(regressions.load(), 0u);
  EXPECT_GT(reads.load(), 0u);
}

TEST(DeltaCover, CoversRoutesUnderChangedPrefixesOnly) {
  VrpDelta d;
  d.announced = {V("192.0.2.0/24", 24, 1), V("2001:db8::/32", 48, 2)};
  d.withdrawn = {V("10.0.0.0/8", 8, 3)};
  DeltaCover c(d);
  EXPECT_TRUE(c.covers(P("192.0.2.0/24")));
  EXPECT_TRUE(c.covers(P("192.0.2.128/25")));
  EXPECT_TRUE(c.covers(P("10.1.2.0/24")));
  EXPECT_TRUE(c.covers(P("2001:db8:1::/48")));
  EXPECT_FALSE(c.covers(P("192.0.0.0/16")));  // shorter than the VRP prefix
  EXPECT_FALSE(c.covers(P("198.51.100.0/24")));
  EXPECT_FALSE(c.covers(P("2001:db9::/32")));
  EXPECT_FALSE(c.covers(P("::/0")));
  EXPECT_TRUE(DeltaCover(VrpDelta{}).empty());
}

TEST(DeltaCover, ALargeChangeCoversEveryRoute) {
  VrpDelta d;
  for (uint32_t i = 0; i <= DeltaCover::kEveryRoute; ++i)
    d.announced.push_back(Vrp{*net::Prefix::make(net::IpAddress::v4(0x0A000000u + (i << 8)), 24), 24, 1});
  EXPECT_TRUE(DeltaCover(d).covers(P("192.0.2.0/24")));
  d.announced.pop_back();
  EXPECT_FALSE(DeltaCover(d).covers(P("192.0.2.0/24")));
  EXPECT_TRUE(DeltaCover(d).covers(P("10.0.1.0/24")));
}

RC_GTEST_PROP(DeltaCover, AgreesWithAScan, ()) {
  auto gen_prefix = [](unsigned max_len) {
    return rc::gen::apply(
        [](uint32_t a, unsigned len) {
          return *net::Prefix::make(net::IpAddress::v4(a & 0xFF0000FFu), len);  // few distinct addresses
        },
        rc::gen::arbitrary<uint32_t>(), rc::gen::inRange(0u, max_len + 1));
  };
  auto changed = *rc::gen::container<std::vector<net::Prefix>>(gen_prefix(32));
  auto routes = *rc::gen::container<std::vector<net::Prefix>>(gen_prefix(32));
  VrpDelta d;
  for (const auto& p : changed) d.withdrawn.push_back(Vrp{p, 32, 1});
  DeltaCover c(d);
  for (const auto& r : routes) {
    bool scan = false;
    for (const auto& p : changed) scan = scan || p.contains(r);
    RC_ASSERT(c.covers(r) == scan);
  }
}

codec::AttributeSet attrs(std::vector<codec::AsSegment> segs) {
  codec::PathAttributes a;
  a.origin = codec::Origin::kIgp;
  codec::AsPath path;
  path.segments = std::move(segs);
  a.as_path = path;
  a.next_hop = net::IpAddress::v4(0xC0000201);
  return codec::AttributeSet::from(a);
}
codec::AsSegment seq(std::vector<uint32_t> asns) {
  codec::AsSegment s;
  s.type = codec::SegmentType::kAsSequence;
  s.asns = std::move(asns);
  return s;
}
codec::AsSegment set(std::vector<uint32_t> asns) {
  codec::AsSegment s;
  s.type = codec::SegmentType::kAsSet;
  s.asns = std::move(asns);
  return s;
}

TEST(RpkiValidator, OriginAsByRfc6811) {
  VrpStore store;
  (void)store.publish({V("192.0.2.0/24", 24, 64500), V("198.51.100.0/24", 24, 65001)}, "c", 1, 1);
  RpkiValidator v(store, 65001);
  table::Interner interner;
  auto check = [&](const char* prefix, const codec::AttributeSet& a) {
    table::Attrs* in = interner.intern(a);
    auto r = v.validate(P(prefix), *in);
    interner.release(in);
    return r;
  };
  EXPECT_EQ(check("192.0.2.0/24", attrs({seq({65002, 64500})})), table::Validation::kValid);
  EXPECT_EQ(check("192.0.2.0/24", attrs({seq({64500, 65002})})), table::Validation::kInvalid);
  // An AS_SET at the end: NONE, which no VRP matches.
  EXPECT_EQ(check("192.0.2.0/24", attrs({seq({65002}), set({64500})})), table::Validation::kInvalid);
  // An empty AS_PATH: originated in our own AS.
  EXPECT_EQ(check("198.51.100.0/24", attrs({})), table::Validation::kValid);
  EXPECT_EQ(check("203.0.113.0/24", attrs({seq({64500})})), table::Validation::kNotFound);
  // A publication is seen by the next call.
  (void)store.publish({}, "", std::nullopt, 2);
  EXPECT_EQ(check("192.0.2.0/24", attrs({seq({65002, 64500})})), table::Validation::kNotFound);
}

// validate_batch answers as validate() route by route, with the same
// origin rules (the batch mixes families, NONE and an empty path).
TEST(RpkiValidator, BatchAgreesWithSingleLookups) {
  VrpStore store;
  (void)store.publish({V("192.0.2.0/24", 25, 64500), V("198.51.100.0/24", 24, 65001), V("2001:db8::/32", 48, 64500)},
                      "c", 1, 1);
  RpkiValidator v(store, 65001);
  table::Interner interner;
  const codec::AttributeSet sets[] = {attrs({seq({65002, 64500})}), attrs({seq({64500, 65002})}),
                                      attrs({seq({65002}), set({64500})}), attrs({})};
  std::vector<table::Attrs*> in;
  for (const auto& a : sets) in.push_back(interner.intern(a));
  const net::Prefix prefixes[] = {P("192.0.2.0/24"),    P("192.0.2.128/25"), P("192.0.2.0/26"),  P("198.51.100.0/24"),
                                  P("203.0.113.0/24"), P("2001:db8::/32"),   P("2001:db8::/64"), P("2001:db9::/32")};
  std::vector<table::Validator::Query> queries;
  for (const auto& p : prefixes)
    for (const auto* a : in) queries.push_back({&p, a});
  std::vector<table::Validation> out(queries.size(), table::Validation::kUnchecked);
  v.validate_batch(queries, out);
  std::array<size_t, 4> seen{};
  for (size_t i = 0; i < queries.size(); ++i) {
    EXPECT_EQ(out[i], v.validate(*queries[i].prefix, *queries[i].attrs)) << i;
    ++seen[static_cast<size_t>(out[i])];
  }
  EXPECT_EQ(seen[0], 0u);
  EXPECT_GT(seen[1], 0u);
  EXPECT_GT(seen[2], 0u);
  EXPECT_GT(seen[3], 0u);
  for (auto* a : in) interner.release(a);
}

// The table asks for a batch's announcements through validate_batch (not
// validate(), not for withdrawals) and stores what it answers.
class BatchOnly : public table::Validator {
 public:
  mutable size_t singles = 0, calls = 0, routes = 0;
  table::Validation validate(const net::Prefix&, const table::Attrs&) const override {
    ++singles;
    return table::Validation::kNotFound;
  }
  void validate_batch(std::span<const Query> q, std::span<table::Validation> out) const override {
    ++calls;
    routes += q.size();
    for (size_t i = 0; i < q.size(); ++i)
      out[i] = q[i].prefix->len() == 24 ? table::Validation::kValid : table::Validation::kInvalid;
  }
};

TEST(RpkiValidator, TheTableAsksABatchAtOnce) {
  BatchOnly v;
  table::TableOptions o;
  o.validator = &v;
  o.shards = 2;
  table::Table t(o);
  const uint16_t slot = rpki::testing::add_peer(t);
  const auto a = attrs({seq({64999, 64500})});
  std::vector<codec::NlriPrefix> announce, withdraw = {{P("10.9.0.0/16"), 0}};
  for (uint32_t i = 0; i < 40; ++i)
    announce.push_back({*net::Prefix::make(net::IpAddress::v4(0x0A000000 + (i << 8)), i % 2 ? 24 : 23), 0});
  table::Batch b(t);
  b.add(0, &a, announce, withdraw);
  (void)t.apply(slot, b);
  EXPECT_EQ(v.singles, 0u);
  EXPECT_EQ(v.routes, announce.size());
  EXPECT_GE(v.calls, 1u);
  EXPECT_LE(v.calls, o.shards);
  for (const auto& n : announce) {
    std::vector<table::Validation> got;
    t.lookup_all(0, n.prefix, [&](std::span<const table::RouteView> rs, int) {
      for (const auto& r : rs) got.push_back(r.validation);
    });
    const auto want = n.prefix.len() == 24 ? table::Validation::kValid : table::Validation::kInvalid;
    EXPECT_EQ(got, std::vector<table::Validation>{want}) << n.prefix.to_string();
  }
}

// Which customers' ASPAs a publication changed: came, went, or other
// providers; the routes with those ASes are verified again.
TEST(VrpStore, NamesTheCustomersWhoseAspaChanged) {
  VrpStore store;
  auto d = store.publish({}, "c1", 1, 1000, std::vector<rpki::Aspa>{{64500, {64501}}, {64510, {0}}});
  EXPECT_EQ(d.aspa_customers, (std::vector<uint32_t>{64500, 64510}));
  d = store.publish({}, "c1", 2, 2000,
                    std::vector<rpki::Aspa>{{64500, {64501}}, {64510, {64511}}, {64520, {64521}}});
  EXPECT_EQ(d.aspa_customers, (std::vector<uint32_t>{64510, 64520}));
  d = store.publish({}, "c1", 3, 3000, std::vector<rpki::Aspa>{{64510, {64511}}, {64520, {64521}}});
  EXPECT_EQ(d.aspa_customers, (std::vector<uint32_t>{64500}));
  d = store.publish({}, "c1", 4, 4000, std::vector<rpki::Aspa>{{64510, {64511}}, {64520, {64521}}});
  EXPECT_TRUE(d.aspa_customers.empty());
}

// ASPA verification of a route's AS_PATH by the peer's procedure, from
// the published ASPAs; unchecked while switched off or for no procedure.
TEST(RpkiValidator, VerifiesPathsByTheProcedureAsked) {
  VrpStore store;
  (void)store.publish({}, "c", 1, 1, std::vector<rpki::Aspa>{{64500, {65002}}});
  RpkiValidator v(store, 65001);
  table::Interner interner;
  auto verify = [&](const codec::AttributeSet& a, table::AspaCheck c) {
    table::Attrs* in = interner.intern(a);
    auto r = v.verify_path(*in, c);
    interner.release(in);
    return r;
  };
  using table::AspaCheck;
  using table::AspaState;
  EXPECT_EQ(verify(attrs({seq({65002, 64500})}), AspaCheck::kUpstream), AspaState::kValid);
  EXPECT_EQ(verify(attrs({seq({65002, 64501, 64500})}), AspaCheck::kUpstream), AspaState::kInvalid);
  EXPECT_EQ(verify(attrs({seq({65002, 64600})}), AspaCheck::kUpstream), AspaState::kUnknown);
  EXPECT_EQ(verify(attrs({seq({65002}), set({64500})}), AspaCheck::kUpstream), AspaState::kInvalid);  // an AS_SET
  // Downstream (from a provider) allows a down-ramp: 64501 may be 64500's customer side.
  EXPECT_EQ(verify(attrs({seq({65002, 64501, 64500})}), AspaCheck::kDownstream), AspaState::kUnknown);
  EXPECT_EQ(verify(attrs({seq({65002, 64500})}), AspaCheck::kNone), AspaState::kUnchecked);
  v.set_enabled(false);
  EXPECT_EQ(verify(attrs({seq({65002, 64500})}), AspaCheck::kUpstream), AspaState::kUnchecked);
}

}  // namespace
}  // namespace petrel::daemon
