// The table's import path without an AttributeSet (Batch::add from an
// UpdateView: UpdateView::write_attribute_set's bytes interned with
// Interner::intern(bytes::Span), the header's fields read from the bytes)
// against the way through a whole AttributeSet, on random UPDATEs and on
// the same UPDATEs with bytes changed (RFC 7606 findings, discarded and
// repeated attributes, 2- and 4-octet sessions, internal and external
// peers). The RFC 7606 outcome itself comes from the one decoder both ways
// share (UpdateView::decode); what could differ is the canonical bytes, the
// header's fields and what the table then holds.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <vector>

#include "codec/update.h"
#include "codec/update_builder.h"
#include "table/table.h"
#include "tests/table/attrs_gen.h"

namespace petrel::table {
namespace {

using codec::AttributeSet;
using codec::PathAttributes;
using testing::gen_attrs;

// The header's fields from both ways in agree, and agree with the set.
void check_same_fields(const Attrs& fast, const Attrs& slow, const AttributeSet& set) {
  RC_ASSERT(fast.wire().size() == slow.wire().size());
  RC_ASSERT(std::equal(fast.wire().begin(), fast.wire().end(), slow.wire().begin()));
  RC_ASSERT(fast.origin() == slow.origin());
  RC_ASSERT(fast.origin() == (set.origin() ? static_cast<uint8_t>(*set.origin()) : uint8_t{3}));
  RC_ASSERT(fast.as_path_length() == slow.as_path_length());
  RC_ASSERT(fast.as_path_length() == std::min<uint32_t>(set.as_path_length(), 0xFFFF));
  RC_ASSERT(fast.has_med() == set.med().has_value());
  RC_ASSERT(fast.med() == set.med().value_or(0));
  RC_ASSERT(fast.has_local_pref() == set.local_pref().has_value());
  RC_ASSERT(fast.local_pref() == set.local_pref().value_or(0));
  RC_ASSERT(fast.has_originator_id() == set.originator_id().has_value());
  RC_ASSERT(fast.cluster_list_length() == set.cluster_list_length());
  RC_ASSERT(fast.has_med() == slow.has_med());
  RC_ASSERT(fast.has_local_pref() == slow.has_local_pref());
  RC_ASSERT(fast.has_originator_id() == slow.has_originator_id());
  RC_ASSERT(fast.cluster_list_length() == slow.cluster_list_length());
  RC_ASSERT(fast.llgr_stale() == set.has_community(codec::community::kLlgrStale));
  RC_ASSERT(fast.llgr_stale() == slow.llgr_stale());
}

// What a table holds, for comparing two: per prefix, its routes' sets'
// bytes, path identifiers and which is best.
struct Held {
  std::vector<std::vector<std::byte>> sets;
  std::vector<uint32_t> path_ids;
  int best = -1;
  friend bool operator==(const Held&, const Held&) = default;
};
std::vector<std::pair<std::string, Held>> contents(const Table& t) {
  std::vector<std::pair<std::string, Held>> out;
  t.walk([&](const Change& c, const std::optional<RouteView>& best, std::span<const Route> routes) {
    Held h;
    for (size_t i = 0; i < routes.size(); ++i) {
      auto w = routes[i].attrs->wire();
      h.sets.emplace_back(w.begin(), w.end());
      h.path_ids.push_back(routes[i].path_id);
      if (best && best->attrs == routes[i].attrs && best->path_id == routes[i].path_id) h.best = static_cast<int>(i);
    }
    out.emplace_back(c.prefix.to_string() + "/" + std::to_string(c.family), std::move(h));
  });
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

PeerInfo peer_of(uint32_t i) {
  PeerInfo p;
  p.address = net::IpAddress::v4(0xC6336400u + i);
  p.router_id = 0x0A000000u + i;
  p.asn = 64500 + i;
  return p;
}

RC_GTEST_PROP(FastImport, AgreesWithTheAttributeSetWayOnRandomAndMutatedUpdates,
              (uint8_t mode, uint32_t seed)) {
  codec::SessionParams params;
  params.four_octet_as = mode & 1;
  const codec::PeerType peer = mode & 2 ? codec::PeerType::kInternal : codec::PeerType::kExternal;
  // Several UPDATEs into two tables: one through the fast path, one
  // through a whole AttributeSet.
  Table fast_t, slow_t;
  const uint16_t fs = *fast_t.add_peer(peer_of(1)), ss = *slow_t.add_peer(peer_of(1));
  const uint16_t fo = *fast_t.add_peer(peer_of(2)), so = *slow_t.add_peer(peer_of(2));
  const auto updates = *rc::gen::inRange(1, 12);
  size_t compared = 0;
  for (int u = 0; u < updates; ++u) {
    const PathAttributes pa = *gen_attrs();
    const AttributeSet set = AttributeSet::from(pa);
    std::vector<codec::NlriPrefix> prefixes;
    for (uint32_t i = 0, n = *rc::gen::inRange(1, 5); i < n; ++i)
      prefixes.push_back({*net::Prefix::make(net::IpAddress::v4(((seed + i) % 64) << 26), 6), 0});
    std::vector<std::byte> msgs;
    codec::UpdateBuilder b(params);
    if (!b.announce(codec::kIpv4Unicast, set, prefixes, msgs).ok()) continue;
    // The first message's body, changed in up to 3 octets (or cut short)
    // a third of the time.
    const size_t len = std::to_integer<size_t>(msgs[16]) << 8 | std::to_integer<size_t>(msgs[17]);
    std::vector<std::byte> body(msgs.begin() + codec::kHeaderLen, msgs.begin() + static_cast<ptrdiff_t>(len));
    if (*rc::gen::inRange(0, 3) == 0) {
      for (int k = 0, n = *rc::gen::inRange(1, 4); k < n && !body.empty(); ++k) {
        const size_t at = *rc::gen::inRange<size_t>(0, body.size());
        body[at] = std::byte{*rc::gen::arbitrary<uint8_t>()};
      }
      if (*rc::gen::arbitrary<bool>() && body.size() > 4) body.resize(*rc::gen::inRange<size_t>(4, body.size()));
    }
    const auto v = codec::UpdateView::decode(body, params, peer);
    if (v.action() == codec::ErrorAction::kSessionReset) continue;
    const AttributeSet from_view = v.attribute_set();
    std::vector<std::byte> canonical(3, std::byte{0x55});  // not empty: cleared first
    RC_ASSERT(v.write_attribute_set(canonical));
    RC_ASSERT(canonical == std::vector<std::byte>(from_view.wire().begin(), from_view.wire().end()));
    Interner in_fast, in_slow;
    Attrs* a = in_fast.intern(bytes::Span(canonical));
    Attrs* s = in_slow.intern(from_view);
    check_same_fields(*a, *s, from_view);
    in_fast.release(a);
    in_slow.release(s);
    // The tables: same batches (treat-as-withdraw as the session applies
    // it), alternating between the two peers.
    const bool taw = v.action() == codec::ErrorAction::kTreatAsWithdraw;
    const bool other = u % 2 == 1;
    Batch bf(fast_t), bs(slow_t);
    const auto gf = bf.add(v, taw);
    const auto gs = bs.add(v, taw, &from_view);
    RC_ASSERT(gf.announced == gs.announced);
    RC_ASSERT(gf.withdrawn == gs.withdrawn);
    const BatchResult rf = fast_t.apply(other ? fo : fs, bf);
    const BatchResult rs = slow_t.apply(other ? so : ss, bs);
    RC_ASSERT(rf.announced == rs.announced);
    RC_ASSERT(rf.withdrawn == rs.withdrawn);
    RC_ASSERT(rf.best_changes == rs.best_changes);
    ++compared;
  }
  RC_ASSERT(contents(fast_t) == contents(slow_t));
  RC_ASSERT(fast_t.interner().size() == slow_t.interner().size());
  RC_TAG(compared);
}

// The decode's verdict is the floor: a view that decoded as treat-as-
// withdraw announces nothing even when the caller asks for announcements
// (here a 2-octet session's AS_PATH that widens past 65535 octets).
TEST(FastImport, TreatAsWithdrawViewAnnouncesNothingWhateverTheCaller) {
  std::vector<std::byte> b;
  bytes::Writer w(b);
  std::vector<std::byte> attrs;
  bytes::Writer a(attrs);
  a.u8(0x40), a.u8(1), a.u8(1), a.u8(0);  // ORIGIN IGP
  a.u8(0x50), a.u8(2), a.u16(70 * 512);   // AS_PATH: 70 x 255 2-octet ASes
  for (int s = 0; s < 70; ++s) {
    a.u8(2), a.u8(255);
    for (int i = 0; i < 255; ++i) a.u16(65001);
  }
  a.u8(0x40), a.u8(3), a.u8(4), a.u32(0xC0000201u);  // NEXT_HOP
  w.u16(0), w.u16(static_cast<uint16_t>(attrs.size())), w.bytes(attrs);
  w.u8(24), w.u8(10), w.u8(0), w.u8(0);  // 10.0.0.0/24
  codec::SessionParams params;
  params.four_octet_as = false;
  params.extended_message = true;
  const auto v = codec::UpdateView::decode(b, params, codec::PeerType::kExternal);
  ASSERT_EQ(v.action(), codec::ErrorAction::kTreatAsWithdraw);
  Table t;
  const uint16_t slot = *t.add_peer(peer_of(1));
  Batch batch(t);
  const auto got = batch.add(v);  // treat_as_withdraw not passed
  const size_t v4 = static_cast<size_t>(codec::known_index(codec::kIpv4Unicast));
  EXPECT_EQ(got.announced[v4], 0u);
  EXPECT_EQ(got.withdrawn[v4], 1u);
  t.apply(slot, batch);
  EXPECT_EQ(t.peer_routes(slot, static_cast<FamilyIndex>(v4)), 0u);
  EXPECT_EQ(t.interner().size(), 0u);
}

// The interner's two ways in give one set for the same bytes: interned
// from an AttributeSet, then found from its bytes (and the reverse).
TEST(FastImport, BytesFindTheSetAnAttributeSetMade) {
  PathAttributes pa;
  pa.origin = codec::Origin::kEgp;
  pa.as_path = codec::AsPath{{{codec::SegmentType::kAsSequence, {64500, 64501, 64502}}}};
  pa.next_hop = net::IpAddress::v4(0xC0000201u);
  pa.med = 7;
  pa.cluster_list = {1, 2};
  const AttributeSet set = AttributeSet::from(pa);
  Interner in;
  Attrs* a = in.intern(set);
  Attrs* b = in.intern(set.wire());
  EXPECT_EQ(a, b);
  EXPECT_EQ(a->refs(), 2u);
  EXPECT_EQ(a->origin(), 1);
  EXPECT_EQ(a->as_path_length(), 3u);
  EXPECT_TRUE(a->has_med());
  EXPECT_EQ(a->cluster_list_length(), 2u);
  EXPECT_FALSE(a->has_local_pref());
  in.release(a, 2);
  EXPECT_EQ(in.size(), 0u);
  Attrs* c = in.intern(set.wire());
  EXPECT_EQ(in.intern(set), c);
  EXPECT_EQ(c->as_path_length(), 3u);
  in.release(c, 2);
  EXPECT_EQ(in.size(), 0u);
}

}  // namespace
}  // namespace petrel::table
