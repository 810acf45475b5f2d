// The per-shard prefix map (table/prefix_map.h): Key4/Key6 round trips,
// Entry's inline route and heap array (best index, heap bytes), and the
// open-addressing map checked against std::map over random operation
// sequences on a small domain of keys, many of which share a home slot
// near the end of the table so that probe runs are long and wrap around
// (backward-shift deletion across the wrap, sweep visiting each entry
// once). Growth past many rehashes with 50 000 IPv4 and 5 000 IPv6 keys.
#include "table/prefix_map.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <array>
#include <map>
#include <set>
#include <span>
#include <tuple>
#include <vector>

namespace petrel::table {
namespace {

// Attrs pointers that are never dereferenced: distinct, suitably aligned
// addresses inside one static buffer.
constexpr size_t kFakeAttrs = 64;
alignas(Attrs) std::array<std::byte, kFakeAttrs * sizeof(Attrs)> g_fake_attrs{};
Attrs* fake_attrs(size_t i) { return reinterpret_cast<Attrs*>(g_fake_attrs.data() + (i % kFakeAttrs) * sizeof(Attrs)); }

Route route(uint16_t peer, uint32_t path_id) {
  return Route{fake_attrs(peer * 4u + path_id), path_id, peer, 0};
}

using RouteId = std::tuple<uint16_t, uint32_t, const Attrs*, uint16_t>;
RouteId id_of(const Route& r) { return {r.peer, r.path_id, r.attrs, r.flags}; }

net::Prefix v4(uint32_t addr, unsigned len) { return *net::Prefix::make(net::IpAddress::v4(addr), len); }
net::Prefix v6(std::string_view text) { return *net::Prefix::parse(text); }

TEST(PrefixKeys, Key4RoundTripsAndCompares) {
  for (const net::Prefix& p : {v4(0, 0), v4(0x0A000000, 8), v4(0xC0000200, 24), v4(0xFFFFFFFF, 32), v4(0x80000000, 1)}) {
    EXPECT_EQ(Key4::of(p).prefix(), p) << p.to_string();
    EXPECT_NE(static_cast<unsigned>(Key4::of(p).len), unsigned{Key4::kEmpty});
  }
  EXPECT_EQ(Key4::of(v4(0xC0000200, 24)), Key4::of(*net::Prefix::parse("192.0.2.0/24")));
  EXPECT_FALSE(Key4::of(v4(0xC0000200, 24)) == Key4::of(v4(0xC0000200, 23)));
  EXPECT_FALSE(Key4::of(v4(0xC0000200, 24)) == Key4::of(v4(0xC0000300, 24)));
  EXPECT_FALSE(Key4::of(v4(0, 0)) == Key4{});  // 0.0.0.0/0 is not the empty key
  EXPECT_EQ(Key4::of(v4(0xC0000200, 24)).hash(), Key4::of(v4(0xC0000200, 24)).hash());
}

TEST(PrefixKeys, Key6RoundTripsAndCompares) {
  for (std::string_view t : {"::/0", "2001:db8::/32", "2001:db8:1:2::/64", "2001:db8::ff:0/112",
                             "2001:db8::1/128", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128", "8000::/1"}) {
    const net::Prefix p = v6(t);
    EXPECT_EQ(Key6::of(p).prefix(), p) << t;
  }
  EXPECT_EQ(Key6::of(v6("2001:db8::/32")), Key6::of(v6("2001:db8::/32")));
  EXPECT_FALSE(Key6::of(v6("2001:db8::/32")) == Key6::of(v6("2001:db8::/33")));
  // Differing only in the high or only in the low half.
  EXPECT_FALSE(Key6::of(v6("2001:db8::1/128")) == Key6::of(v6("2001:db8::2/128")));
  EXPECT_FALSE(Key6::of(v6("2001:db8::1/128")) == Key6::of(v6("2001:db9::1/128")));
  EXPECT_FALSE(Key6::of(v6("::/0")) == Key6{});
}

TEST(PrefixEntry, OneRouteInlineThenAHeapArray) {
  Entry<Key4> e;
  EXPECT_TRUE(e.empty());
  EXPECT_EQ(e.size(), 0u);
  EXPECT_EQ(e.best(), Entry<Key4>::kNone);
  EXPECT_EQ(e.best_route(), nullptr);

  e.push(route(1, 0));
  EXPECT_EQ(e.kind, 1);
  EXPECT_EQ(e.size(), 1u);
  EXPECT_EQ(e.heap_bytes(), 0u);
  EXPECT_EQ(id_of(e.routes()[0]), id_of(route(1, 0)));
  EXPECT_EQ(e.best(), Entry<Key4>::kNone);
  e.set_best(0);
  EXPECT_EQ(e.best(), 0u);
  ASSERT_NE(e.best_route(), nullptr);
  EXPECT_EQ(e.best_route()->peer, 1);

  e.push(route(2, 7));  // to the heap; the best stays
  EXPECT_EQ(e.kind, 2);
  EXPECT_EQ(e.size(), 2u);
  EXPECT_GE(e.heap_bytes(), 2 * sizeof(Route));
  EXPECT_LE(e.heap_bytes(), 64u);  // an array for two, not more
  EXPECT_EQ(e.best(), 0u);
  EXPECT_EQ(e.find(2, 7), 1u);
  EXPECT_EQ(e.find(2, 0), Entry<Key4>::kNone);
  EXPECT_EQ(e.find(1, 0), 0u);

  // Growing the array keeps the routes and the best index.
  e.set_best(1);
  for (uint16_t p = 3; p < 12; ++p) {
    e.push(route(p, 0));
    EXPECT_EQ(e.best(), 1u);
    EXPECT_EQ(e.best_route()->peer, 2);
  }
  EXPECT_EQ(e.size(), 11u);
  EXPECT_GE(e.heap_bytes(), 11 * sizeof(Route));
  for (uint16_t p = 3; p < 12; ++p) EXPECT_EQ(e.find(p, 0), p - 1u);
  EXPECT_EQ(id_of(e.routes()[0]), id_of(route(1, 0)));

  // Removing unsets the best; the last route takes the removed one's place.
  Route gone = e.remove(0);
  EXPECT_EQ(id_of(gone), id_of(route(1, 0)));
  EXPECT_EQ(e.best(), Entry<Key4>::kNone);
  EXPECT_EQ(e.size(), 10u);
  EXPECT_EQ(e.routes()[0].peer, 11);
  e.set_best(3);
  EXPECT_EQ(e.best(), 3u);
  while (e.size() > 2) (void)e.remove(e.size() - 1);
  EXPECT_EQ(e.kind, 2);

  // Back to one route: inline again, no heap, no best.
  e.set_best(0);
  gone = e.remove(0);
  EXPECT_EQ(gone.peer, 11);
  EXPECT_EQ(e.kind, 1);
  EXPECT_EQ(e.size(), 1u);
  EXPECT_EQ(e.heap_bytes(), 0u);
  EXPECT_EQ(e.best(), Entry<Key4>::kNone);
  EXPECT_EQ(id_of(e.routes()[0]), id_of(route(2, 7)));

  gone = e.remove(0);
  EXPECT_EQ(id_of(gone), id_of(route(2, 7)));
  EXPECT_TRUE(e.empty());
  EXPECT_EQ(e.best(), Entry<Key4>::kNone);
  e.free_routes();
}

TEST(PrefixEntry, BestOfAnInlineRoute) {
  Entry<Key6> e;
  e.set_best(0);  // no route: nothing to be best
  EXPECT_EQ(e.best(), Entry<Key6>::kNone);
  e.push(route(1, 0));
  e.set_best(0);
  EXPECT_EQ(e.best(), 0u);
  e.set_best(Entry<Key6>::kNone);
  EXPECT_EQ(e.best(), Entry<Key6>::kNone);
  // Without a best, the move to the heap has none either.
  e.push(route(2, 0));
  EXPECT_EQ(e.best(), Entry<Key6>::kNone);
  (void)e.remove(1);
  EXPECT_EQ(e.kind, 1);
  // A new route after the removal does not inherit a stale best.
  e.push(route(3, 0));
  EXPECT_EQ(e.best(), Entry<Key6>::kNone);
  EXPECT_GE(e.heap_bytes(), 2 * sizeof(Route));
  e.free_routes();
  EXPECT_TRUE(e.empty());
}

TEST(PrefixMapBasics, EmptyMapAndBytes) {
  PrefixMap<Key4> m;
  EXPECT_EQ(m.size(), 0u);
  EXPECT_EQ(m.find(Key4::of(v4(0, 0))), nullptr);
  int visited = 0;
  m.for_each([&](Entry<Key4>&) { ++visited; });
  m.sweep([&](Entry<Key4>&) {
    ++visited;
    return true;
  });
  EXPECT_EQ(visited, 0);

  Entry<Key4>& e = m.find_or_insert(Key4::of(v4(0x0A000000, 8)));
  EXPECT_TRUE(e.empty());
  EXPECT_EQ(m.size(), 1u);
  EXPECT_EQ(m.bytes(), m.slot_bytes());
  e.push(route(1, 0));
  e.push(route(2, 0));
  e.push(route(3, 0));
  EXPECT_EQ(m.bytes(), m.slot_bytes() + e.heap_bytes());
  EXPECT_EQ(&m.find_or_insert(Key4::of(v4(0x0A000000, 8))), &e);
  EXPECT_EQ(m.size(), 1u);
  EXPECT_EQ(m.find(Key4::of(v4(0x0A000000, 8))), &e);
  EXPECT_EQ(m.find(Key4::of(v4(0x0A000000, 9))), nullptr);
  // The destructor frees the array (LeakSanitizer would say otherwise).
}

// Keys of the small domain: half of them share a home slot at the end of
// the table for every capacity up to 64 (the top six bits of the hash are
// ones), so their probe runs wrap around slot 0; the rest are ordinary.
template <typename K>
bool homes_at_end(const K& k) {
  return (k.hash() >> 58) == 0x3F;
}

std::vector<net::Prefix> domain4() {
  std::vector<net::Prefix> out;
  for (uint32_t i = 0; out.size() < 12; ++i) {
    net::Prefix p = v4(0x0A000000u + (i << 8), 24);
    if (homes_at_end(Key4::of(p))) out.push_back(p);
  }
  for (net::Prefix p : {v4(0, 0), v4(0xFFFFFFFF, 32), v4(0x0A000000, 8), v4(0x0A000000, 16), v4(0xC0000200, 24),
                        v4(0xC0000200, 25), v4(0xC0000280, 25), v4(0xC6336400, 24), v4(0xCB007100, 24),
                        v4(0x64400000, 10), v4(0xAC100000, 12), v4(0xC0A80000, 16)})
    out.push_back(p);
  return out;
}

std::vector<net::Prefix> domain6() {
  std::vector<net::Prefix> out;
  for (uint32_t i = 0; out.size() < 12; ++i) {
    std::array<uint8_t, 16> b{0x20, 0x01, 0x0d, 0xb8};
    b[4] = static_cast<uint8_t>(i >> 8);
    b[5] = static_cast<uint8_t>(i);
    net::Prefix p = *net::Prefix::make(net::IpAddress::from_bytes(net::IpFamily::V6, b.data()), 48);
    if (homes_at_end(Key6::of(p))) out.push_back(p);
  }
  for (std::string_view t : {"::/0", "2001:db8::/32", "2001:db8::/33", "2001:db8:8000::/33", "2001:db8::1/128",
                             "2001:db8::2/128", "fe80::/10", "2a00::/12", "2001:db8:0:1::/64",
                             "2001:db8:0:1:8000::/65", "::ffff:0:0/96", "ff00::/8"})
    out.push_back(v6(t));
  return out;
}

using Model = std::map<net::Prefix, std::vector<Route>>;

bool same_routes(std::span<const Route> routes, const std::vector<Route>& want) {
  return routes.size() == want.size() && std::all_of(want.begin(), want.end(), [&](const Route& w) {
           return std::any_of(routes.begin(), routes.end(), [&](const Route& r) { return id_of(r) == id_of(w); });
         });
}

// The map holds exactly the model: every entry (through for_each) is a
// prefix of the model, each at most once, with the same routes in any
// order (so none is empty), and there are as many entries as the model
// has prefixes. (Plain bools: RC_ASSERT costs a string each time.)
template <typename K>
bool same_as_model(PrefixMap<K>& m, const Model& model) {
  bool ok = m.size() == model.size();
  std::vector<const void*> seen;
  seen.reserve(model.size());
  m.for_each([&](Entry<K>& e) {
    auto it = model.find(e.key.prefix());
    if (it == model.end()) {
      ok = false;
      return;
    }
    seen.push_back(&*it);
    ok = ok && same_routes(e.routes(), it->second);
  });
  std::sort(seen.begin(), seen.end());
  return ok && std::adjacent_find(seen.begin(), seen.end()) == seen.end() && seen.size() == model.size();
}

// The entry of `p` holds the model's routes for it, or is absent with it.
template <typename K>
bool same_entry_as_model(PrefixMap<K>& m, const Model& model, const net::Prefix& p) {
  const Entry<K>* e = m.find(K::of(p));
  auto it = model.find(p);
  if (!e || it == model.end()) return !e && it == model.end();
  return e->key == K::of(p) && same_routes(e->routes(), it->second);
}

enum class OpKind : uint8_t { kAdd, kRemove, kFind, kSweep };
struct Op {
  OpKind kind = OpKind::kAdd;
  uint8_t key = 0;
  uint16_t peer = 0;
  uint32_t path_id = 0;
};

// One draw per operation, split into its fields: adds 6 in 12, removes
// 4, finds 1, sweeps 1.
rc::Gen<Op> gen_op(size_t keys) {
  const auto n = static_cast<uint32_t>(keys);
  // At full size: rapidcheck scales a range down with the case's size.
  return rc::gen::map(rc::gen::resize(100, rc::gen::inRange<uint32_t>(0, 12 * n * 4 * 2)), [n](uint32_t x) {
    Op op;
    const uint32_t k = x % 12;
    x /= 12;
    op.kind = k < 6 ? OpKind::kAdd : k < 10 ? OpKind::kRemove : k < 11 ? OpKind::kFind : OpKind::kSweep;
    op.key = static_cast<uint8_t>(x % n);
    x /= n;
    op.peer = static_cast<uint16_t>(x % 4);
    op.path_id = x / 4;
    return op;
  });
}

template <typename K>
void check_against_model(const std::vector<net::Prefix>& domain) {
  const auto ops = *rc::gen::container<std::vector<Op>>(gen_op(domain.size()));
  PrefixMap<K> m;
  Model model;
  int since_full = 0;
  for (const Op& op : ops) {
    const net::Prefix& p = domain[op.key];
    const K k = K::of(p);
    switch (op.kind) {
      case OpKind::kAdd: {
        Entry<K>& e = m.find_or_insert(k);
        RC_ASSERT(e.key == k);
        auto& mv = model[p];
        const bool in_model = std::any_of(mv.begin(), mv.end(), [&](const Route& r) {
          return r.peer == op.peer && r.path_id == op.path_id;
        });
        RC_ASSERT((e.find(op.peer, op.path_id) != Entry<K>::kNone) == in_model);
        if (!in_model) {
          e.push(route(op.peer, op.path_id));
          mv.push_back(route(op.peer, op.path_id));
        }
        break;
      }
      case OpKind::kRemove: {
        Entry<K>* e = m.find(k);
        auto it = model.find(p);
        RC_ASSERT((e != nullptr) == (it != model.end()));
        if (!e) break;
        const uint32_t i = e->find(op.peer, op.path_id);
        auto& mv = it->second;
        auto mi = std::find_if(mv.begin(), mv.end(), [&](const Route& r) {
          return r.peer == op.peer && r.path_id == op.path_id;
        });
        RC_ASSERT((i != Entry<K>::kNone) == (mi != mv.end()));
        if (i == Entry<K>::kNone) break;
        RC_ASSERT(id_of(e->remove(i)) == id_of(*mi));
        mv.erase(mi);
        if (e->empty()) {
          m.erase(e);
          model.erase(it);
        }
        break;
      }
      case OpKind::kFind: {
        Entry<K>* e = m.find(k);
        auto it = model.find(p);
        RC_ASSERT((e != nullptr) == (it != model.end()));
        if (e) {
          RC_ASSERT(e->key == k);
          RC_ASSERT(e->size() == it->second.size());
        }
        break;
      }
      case OpKind::kSweep: {
        std::set<net::Prefix> visited;
        std::set<net::Prefix> expected;
        for (const auto& [q, routes] : model) expected.insert(q);
        m.sweep([&](Entry<K>& e) {
          RC_ASSERT(visited.insert(e.key.prefix()).second);  // once each
          for (uint32_t i = e.size(); i-- > 0;)
            if (e.routes()[i].peer == op.peer) (void)e.remove(i);
          return !e.empty();
        });
        RC_ASSERT(visited == expected);
        for (auto it = model.begin(); it != model.end();) {
          std::erase_if(it->second, [&](const Route& r) { return r.peer == op.peer; });
          it = it->second.empty() ? model.erase(it) : std::next(it);
        }
        break;
      }
    }
    RC_ASSERT(m.size() == model.size());
    RC_ASSERT(m.capacity() * 4 >= m.size() * 5);  // load factor at most 0.8: probes end
    RC_ASSERT(same_entry_as_model(m, model, p));
    if (op.kind == OpKind::kSweep || ++since_full == 8) {
      RC_ASSERT(same_as_model(m, model));
      since_full = 0;
    }
  }
  RC_ASSERT(same_as_model(m, model));
  for (const net::Prefix& p : domain) RC_ASSERT((m.find(K::of(p)) != nullptr) == model.contains(p));
}

TEST(PrefixMapBasics, DomainKeysShareTheirHomeSlot) {
  // The property tests rely on these long, wrapping probe runs.
  size_t at_end = 0;
  for (const net::Prefix& p : domain4()) at_end += homes_at_end(Key4::of(p));
  EXPECT_GE(at_end, 12u);
  at_end = 0;
  for (const net::Prefix& p : domain6()) at_end += homes_at_end(Key6::of(p));
  EXPECT_GE(at_end, 12u);
}

// The inverse of an odd number modulo 2^64 (Newton's iteration).
uint64_t inverse(uint64_t a) {
  uint64_t x = a;  // right to 3 bits
  for (int i = 0; i < 5; ++i) x *= 2 - a * x;
  return x;
}

// IPv6 /64s chosen as a peer could choose them against the fixed mix the
// map used before its multipliers were drawn per process: every one's
// hash had the same top 24 bits (one home in any map of up to 16M slots),
// so 20,000 of them made one probe run and each look-up walked half of
// it, 10,000 slots on average. Under the drawn multipliers they scatter.
TEST(PrefixMapBasics, PrefixesChosenAgainstAKnownHashDoNotShareAHome) {
  constexpr uint64_t kOld1 = 0x9E3779B97F4A7C15ull, kOld2 = 0xC2B2AE3D27D4EB4Full;
  auto old_hash = [&](uint64_t hi) {
    uint64_t h = (hi * kOld1) ^ 64;
    h *= kOld2;
    return h ^ (h >> 31);
  };
  constexpr size_t kCount = 20000;
  PrefixMap<Key6> m;
  std::vector<Key6> keys;
  for (uint64_t i = 1; keys.size() < kCount; ++i) {
    // The old hash's top 31 bits are those of (hi * kOld1 ^ 64) * kOld2:
    // a value with the top 24 bits 0x5A5A5A, taken back through both.
    const uint64_t g = 0x5A5A5Aull << 40 | i << 8;
    const uint64_t hi = ((g * inverse(kOld2)) ^ 64) * inverse(kOld1);
    ASSERT_EQ(old_hash(hi) >> 40, 0x5A5A5Aull);
    Key6 k;
    k.hi = hi;
    k.lo = 0;
    k.len = 64;
    keys.push_back(k);
    m.find_or_insert(k);
  }
  ASSERT_EQ(m.size(), kCount);
  size_t walked = 0;
  for (const Key6& k : keys) walked += m.displacement(k);
  // Random homes at this load walk a few slots on average.
  EXPECT_LT(walked / kCount, 8u);
}

RC_GTEST_PROP(PrefixMapModel, Ipv4MatchesStdMap, ()) {
  static const std::vector<net::Prefix> domain = domain4();
  check_against_model<Key4>(domain);
}

RC_GTEST_PROP(PrefixMapModel, Ipv6MatchesStdMap, ()) {
  static const std::vector<net::Prefix> domain = domain6();
  check_against_model<Key6>(domain);
}

// Many rehashes (from 16 slots to tens of thousands), then half the keys
// erased, then a sweep.
template <typename K>
void grow_and_shrink(const std::vector<net::Prefix>& keys) {
  PrefixMap<K> m;
  size_t overfull = 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    Entry<K>& e = m.find_or_insert(K::of(keys[i]));
    ASSERT_TRUE(e.empty()) << i;
    e.push(route(static_cast<uint16_t>(i % 3), static_cast<uint32_t>(i % 5)));
    if (i % 7 == 0) e.push(route(3, 9));
    overfull += m.capacity() * 4 < m.size() * 5;  // load factor above 0.8
  }
  ASSERT_EQ(m.size(), keys.size());
  EXPECT_EQ(overfull, 0u);
  EXPECT_EQ(m.capacity() & (m.capacity() - 1), 0u);
  const auto intact = [&](const Entry<K>* e, size_t i) {
    return e && e->key == K::of(keys[i]) && e->size() == (i % 7 == 0 ? 2u : 1u) && e->routes()[0].peer == i % 3 &&
           e->routes()[0].path_id == i % 5;
  };
  // Erase the odd ones; then the even ones are all there, the odd gone.
  size_t wrong = 0;
  for (size_t i = 1; i < keys.size(); i += 2) {
    Entry<K>* e = m.find(K::of(keys[i]));
    if (!intact(e, i)) {
      ADD_FAILURE() << "key " << i << " lost or changed after growing";
      return;
    }
    while (!e->empty()) (void)e->remove(0);
    m.erase(e);
  }
  ASSERT_EQ(m.size(), (keys.size() + 1) / 2);
  for (size_t i = 0; i < keys.size(); ++i) {
    const Entry<K>* e = m.find(K::of(keys[i]));
    wrong += i % 2 == 0 ? !intact(e, i) : e != nullptr;
  }
  EXPECT_EQ(wrong, 0u);
  // One sweep takes peer 3's extra routes and every route of peer 0.
  size_t visited = 0;
  m.sweep([&](Entry<K>& e) {
    ++visited;
    for (uint32_t j = e.size(); j-- > 0;)
      if (e.routes()[j].peer == 3 || e.routes()[j].peer == 0) (void)e.remove(j);
    return !e.empty();
  });
  EXPECT_EQ(visited, (keys.size() + 1) / 2);
  size_t left = 0;
  for (size_t i = 0; i < keys.size(); i += 2) left += i % 3 != 0;
  EXPECT_EQ(m.size(), left);
  size_t seen = 0;
  m.for_each([&](Entry<K>& e) {
    ++seen;
    EXPECT_EQ(e.size(), 1u);
    EXPECT_NE(e.routes()[0].peer, 0);
  });
  EXPECT_EQ(seen, left);
}

TEST(PrefixMapGrowth, FiftyThousandIpv4Keys) {
  std::vector<net::Prefix> keys;
  for (uint32_t i = 0; i < 50000; ++i) keys.push_back(v4(0x0A000000u + (i << 8), 24));
  grow_and_shrink<Key4>(keys);
}

// reserve(): room made once, entries kept, and keys walked out of another
// map (in hash order, as an exporter copies a table shard) go in with no
// further growth.
TEST(PrefixMapGrowth, ReserveMakesRoomOnceAndKeepsEntries) {
  PrefixMap<Key4> source;
  for (uint32_t i = 0; i < 50000; ++i) source.find_or_insert(Key4::of(v4(0x0A000000u + (i << 8), 24))).push(route(1, i));
  PrefixMap<Key4> m;
  m.find_or_insert(Key4::of(v4(0xC0000200u, 24))).push(route(2, 7));
  m.reserve(50001);
  const size_t cap = m.capacity();
  EXPECT_GE(cap * 4, 50001u * 5);
  EXPECT_LE(cap, 50001u * 4 / 3 + 1) << "sized for what it must hold, not a power of two";
  const Entry<Key4>* kept = m.find(Key4::of(v4(0xC0000200u, 24)));
  ASSERT_NE(kept, nullptr);
  EXPECT_EQ(kept->routes()[0].path_id, 7u);
  source.for_each([&](Entry<Key4>& e) { m.find_or_insert(e.key).push(e.routes()[0]); });
  EXPECT_EQ(m.capacity(), cap);
  EXPECT_EQ(m.size(), 50001u);
  size_t wrong = 0;
  source.for_each([&](Entry<Key4>& e) {
    const Entry<Key4>* got = m.find(e.key);
    wrong += !got || got->routes()[0].path_id != e.routes()[0].path_id;
  });
  EXPECT_EQ(wrong, 0u);
  m.reserve(10);  // never shrinks
  EXPECT_EQ(m.capacity(), cap);
}

// visit_from() as the exporter's route refresh walks its Adj-RIB-Out: in
// small slices, with other entries emptied (not erased: the exporter keeps
// them until the walk is done, as an erase may move an entry from ahead of
// the cursor to behind it) and new keys inserted between slices, at a load
// from 0.5 to 0.75 with scattered keys (sequential ones hash to evenly
// spread slots). Every entry present throughout is seen exactly once.
TEST(PrefixMapWalk, SlicesSeeEveryEntryOnceWhenNothingIsErased) {
  auto key = [](uint32_t i) {  // a bijection of i: no two alike
    uint32_t x = i * 2654435761u;
    x ^= x >> 13;
    x *= 0x85EBCA6Bu;
    x ^= x >> 16;
    return Key4::of(v4(x, 32));
  };
  PrefixMap<Key4> m;
  m.reserve(14000);  // no rehash during the walk
  const size_t cap = m.capacity();
  for (uint32_t i = 100000; i < 103000; ++i) m.find_or_insert(key(i)).push(route(3, i));
  for (uint32_t i = 0; i < 6000; ++i) m.find_or_insert(key(i)).push(route(1, i));
  ASSERT_EQ(m.size(), 9000u);
  std::map<uint32_t, int> seen;  // path id -> visits
  size_t cursor = 0;
  uint32_t next = 6000, rng = 1;
  for (int guard = 0; guard < 100000 && cursor < m.capacity(); ++guard) {
    cursor = m.visit_from(cursor, 3, [&](Entry<Key4>& e) {
      if (!e.empty() && e.routes()[0].peer == 1) ++seen[e.routes()[0].path_id];
    });
    for (int k = 0; k < 16; ++k) {  // other entries emptied and made again
      rng = rng * 1103515245u + 12345u;
      const uint32_t i = 100000 + (rng >> 8) % 3000;
      if (Entry<Key4>* e = m.find(key(i)); e && !e->empty()) (void)e->remove(0);
      m.find_or_insert(key(i)).push(route(3, i));
    }
    m.find_or_insert(key(next)).push(route(2, next));
    ++next;
  }
  EXPECT_EQ(m.capacity(), cap);
  EXPECT_EQ(cursor, m.capacity());
  size_t missed = 0, twice = 0;
  for (uint32_t i = 0; i < 6000; ++i) {
    missed += seen[i] == 0;
    twice += seen[i] > 1;
  }
  EXPECT_EQ(missed, 0u);
  EXPECT_EQ(twice, 0u);
  m.sweep([](const Entry<Key4>& e) { return !e.empty(); });
  EXPECT_EQ(m.size(), 3000u + 6000u + (next - 6000));
}

TEST(PrefixMapGrowth, FiveThousandIpv6Keys) {
  std::vector<net::Prefix> keys;
  for (uint32_t i = 0; i < 5000; ++i) {
    std::array<uint8_t, 16> b{0x20, 0x01, 0x0d, 0xb8};
    b[6] = static_cast<uint8_t>(i >> 16);
    b[7] = static_cast<uint8_t>(i >> 8);
    b[8] = static_cast<uint8_t>(i);  // in the low half
    keys.push_back(*net::Prefix::make(net::IpAddress::from_bytes(net::IpFamily::V6, b.data()), 72));
  }
  grow_and_shrink<Key6>(keys);
}

}  // namespace
}  // namespace petrel::table
