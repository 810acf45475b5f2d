// Tests for codec/update: the view over an UPDATE (RFC 4271 section 4.3),
// its attribute set, the RFC 6793 section 4.2.3 reconstruction, and real
// UPDATEs from a RouteViews MRT dump (tests/codec/data).
#include "codec/update.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <cstdio>

#include "codec/framer.h"
#include "codec/update_builder.h"
#include "tests/codec/update_util.h"

namespace petrel::codec {
namespace {

using testing::base_attrs;
using testing::body;
using testing::hx;

std::vector<std::string> texts(const NlriRange& r) {
  std::vector<std::string> out;
  for (const NlriPrefix& p : r) out.push_back(p.prefix.to_string());
  return out;
}

TEST(UpdateView, ClassicFieldsAndAttributeSet) {
  auto b = body("0800", base_attrs() + "800404000000c8" + "c00804fde90001",
                "180a0001" "10ac10" "00");
  auto v = UpdateView::decode(b, {}, PeerType::kExternal);
  ASSERT_EQ(v.action(), ErrorAction::kNone);
  EXPECT_EQ(texts(v.withdrawn()), (std::vector<std::string>{"0.0.0.0/8"}));
  EXPECT_EQ(texts(v.nlri()), (std::vector<std::string>{"10.0.1.0/24", "172.16.0.0/16", "0.0.0.0/0"}));
  AttributeSet s = v.attribute_set();
  EXPECT_EQ(s.origin(), Origin::kIgp);
  EXPECT_EQ(s.as_path_length(), 2u);
  EXPECT_EQ(s.first_as(), 65001u);
  EXPECT_EQ(s.origin_as(), 65002u);
  EXPECT_EQ(s.med(), 200u);
  EXPECT_EQ(s.next_hop()->to_string(), "192.0.2.1");
  EXPECT_TRUE(s.has_community(0xfde90001));
  EXPECT_FALSE(s.local_pref());
}

TEST(UpdateView, HostBitsAreClearedInPrefixes) {
  auto b = body("", base_attrs(), "170a0001");
  auto v = UpdateView::decode(b, {}, PeerType::kExternal);
  ASSERT_EQ(v.action(), ErrorAction::kNone);
  EXPECT_EQ(texts(v.nlri()), (std::vector<std::string>{"10.0.0.0/23"}));
}

TEST(UpdateView, AddPathIdsPerFamilyAndDirection) {
  auto b = body("00000007" "080a", base_attrs(), "00000001" "180a0001" "00000002" "180a0001");
  SessionParams p;
  p.add_path_receive.add(kIpv4Unicast);
  auto v = UpdateView::decode(b, p, PeerType::kExternal);
  ASSERT_EQ(v.action(), ErrorAction::kNone);
  std::vector<uint32_t> ids;
  for (const auto& x : v.nlri()) ids.push_back(x.path_id);
  EXPECT_EQ(ids, (std::vector<uint32_t>{1, 2}));
  EXPECT_EQ((*v.withdrawn().begin()).path_id, 7u);
  // The same bytes without ADD-PATH are a different (broken) message.
  EXPECT_EQ(UpdateView::decode(b, {}, PeerType::kExternal).action(), ErrorAction::kSessionReset);
}

TEST(UpdateView, Ipv6GlobalAndLinkLocalNextHops) {
  std::string mp = "800e3100020120" "20010db8000000000000000000000001" "fe800000000000000000000000000001"
                   "00" "2020010db8" "302001 0db8 0001";
  auto b = body("", std::string(testing::kOrigin) + std::string(testing::kAsPath4) + mp, "");
  auto v = UpdateView::decode(b, {}, PeerType::kExternal);
  ASSERT_EQ(v.action(), ErrorAction::kNone);
  ASSERT_TRUE(v.mp_reach());
  EXPECT_EQ(v.mp_reach()->next_hop.global.to_string(), "2001:db8::1");
  EXPECT_EQ(v.mp_reach()->next_hop.link_local->to_string(), "fe80::1");
  EXPECT_EQ(texts(v.mp_reach()->nlri), (std::vector<std::string>{"2001:db8::/32", "2001:db8:1::/48"}));
  AttributeSet s = v.attribute_set();
  EXPECT_EQ(s.mp_family(), kIpv6Unicast);
  EXPECT_EQ(s.mp_next_hop()->link_local->to_string(), "fe80::1");
}

TEST(UpdateView, Rfc6793Section4_2_3_ReconstructsThePathOnATwoOctetSession) {
  SessionParams p;
  p.four_octet_as = false;
  // AS_PATH: 65001 23456 23456; AS4_PATH: 4200000000 4200000001.
  std::string as_path = "4002080203fde95ba05ba0";
  std::string as4 = "c0110a0202fa56ea00fa56ea01";
  auto b = body("", std::string(testing::kOrigin) + as_path + std::string(testing::kNextHop) + as4,
                "180a0000");
  auto v = UpdateView::decode(b, p, PeerType::kExternal);
  ASSERT_EQ(v.action(), ErrorAction::kNone);
  auto path = v.attribute_set().decode().as_path;
  ASSERT_TRUE(path);
  EXPECT_EQ(*path, (AsPath{{{SegmentType::kAsSequence, {65001, 4200000000u, 4200000001u}}}}));
}

TEST(UpdateView, Rfc6793Section4_2_3_AggregatorWithoutAsTransIgnoresAs4) {
  SessionParams p;
  p.four_octet_as = false;
  std::string as_path = "4002060202fde95ba0";
  std::string as4 = "c0110a0202fa56ea00fa56ea01";
  std::string agg = "c00706fde9c0000201";
  auto b = body("", std::string(testing::kOrigin) + as_path + std::string(testing::kNextHop) + agg + as4,
                "180a0000");
  auto v = UpdateView::decode(b, p, PeerType::kExternal);
  auto path = v.attribute_set().decode().as_path;
  EXPECT_EQ(*path, (AsPath{{{SegmentType::kAsSequence, {65001, 23456}}}}));
}

TEST(AsPath, Rfc6793Section4_2_3_FewerAs4NumbersKeepsTheLeadingPart) {
  AsPath two{{{SegmentType::kConfedSequence, {1}}, {SegmentType::kAsSequence, {10, 23456, 23456}},
              {SegmentType::kAsSet, {23456, 7}}}};
  AsPath four{{{SegmentType::kAsSequence, {4200000000u}}, {SegmentType::kAsSet, {4200000001u, 7}}}};
  AsPath want{{{SegmentType::kConfedSequence, {1}}, {SegmentType::kAsSequence, {10, 23456, 4200000000u}},
               {SegmentType::kAsSet, {4200000001u, 7}}}};
  EXPECT_EQ(reconstruct_as4_path(two, four), want);
  // More AS4_PATH numbers than AS_PATH ones: AS4_PATH is ignored.
  EXPECT_EQ(reconstruct_as4_path(AsPath{{{SegmentType::kAsSequence, {1}}}}, four),
            (AsPath{{{SegmentType::kAsSequence, {1}}}}));
}

TEST(UpdateView, AttributeSetIsCanonicalWhateverTheOrder) {
  auto a = body("", base_attrs() + "800404000000c8" + "c00804fde90001", "180a0001");
  auto b = body("", "c00804fde90001" "800404000000c8" + base_attrs(), "180a0002");
  auto va = UpdateView::decode(a, {}, PeerType::kExternal);
  auto vb = UpdateView::decode(b, {}, PeerType::kExternal);
  EXPECT_EQ(va.attribute_set(), vb.attribute_set());
  auto again = AttributeSet::from_canonical(va.attribute_set().wire());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, va.attribute_set());
  EXPECT_EQ(AttributeSet::from(va.attribute_set().decode()), va.attribute_set());
}

// Real UPDATEs (RouteViews, 2016-08-11, BGP4MP_MESSAGE_AS4): each decodes
// without error, and its attribute set survives encode and decode.
TEST(UpdateView, RealUpdatesDecodeAndReencode) {
  auto data = testing::read_data_file("updates_20160811.bin");
  ASSERT_GT(data.size(), 10000u);
  bytes::Span all(data);
  size_t pos = 0, count = 0, prefixes = 0;
  while (pos < all.size()) {
    auto h = check_header(all.subspan(pos, kHeaderLen), kMaxMessageLen);
    ASSERT_TRUE(h.ok());
    bytes::Span b = all.subspan(pos + kHeaderLen, h->length - kHeaderLen);
    pos += h->length;
    ++count;
    auto v = UpdateView::decode(b, {}, PeerType::kExternal);
    ASSERT_EQ(v.action(), ErrorAction::kNone) << "message " << count << ": "
                                              << v.report().diagnostics()[0].reason;
    std::vector<NlriPrefix> ann, wd;
    AttributeSet s = v.attribute_set();
    EXPECT_EQ(bytes::to_hex(AttributeSet::from(s.decode()).wire()), bytes::to_hex(s.wire()));
    std::vector<std::byte> out;
    for (const auto& r : v.announced()) {
      std::vector<NlriPrefix> list(r.begin(), r.end());
      ann.insert(ann.end(), list.begin(), list.end());
      auto n = UpdateBuilder({}).announce(r.family(), s, list, out);
      ASSERT_TRUE(n.ok()) << n.error();
    }
    for (const auto& r : v.withdrawals()) {
      std::vector<NlriPrefix> list(r.begin(), r.end());
      wd.insert(wd.end(), list.begin(), list.end());
      auto n = UpdateBuilder({}).withdraw(r.family(), list, out);
      ASSERT_TRUE(n.ok()) << n.error();
    }
    prefixes += ann.size() + wd.size();
    std::vector<NlriPrefix> ann2, wd2;
    size_t p2 = 0;
    while (p2 < out.size()) {
      auto h2 = check_header(bytes::Span(out).subspan(p2, kHeaderLen), kMaxMessageLen);
      ASSERT_TRUE(h2.ok());
      auto v2 = UpdateView::decode(bytes::Span(out).subspan(p2 + kHeaderLen, h2->length - kHeaderLen),
                                   {}, PeerType::kExternal);
      p2 += h2->length;
      ASSERT_EQ(v2.action(), ErrorAction::kNone);
      for (const auto& r : v2.announced()) {
        for (const auto& x : r) ann2.push_back(x);
        EXPECT_EQ(v2.attribute_set(), s);
      }
      for (const auto& r : v2.withdrawals())
        for (const auto& x : r) wd2.push_back(x);
    }
    EXPECT_EQ(ann2, ann);
    EXPECT_EQ(wd2, wd);
  }
  EXPECT_EQ(count, 400u);
  EXPECT_GT(prefixes, 400u);
}

// A 2-octet AS_PATH value of AS_SEQUENCE segments of these sizes, every AS
// 65001 (fde9).
std::string two_octet_path(const std::vector<size_t>& sizes) {
  std::string v;
  for (size_t n : sizes) {
    char head[16];
    std::snprintf(head, sizeof head, "02%02zx", n);
    v += head;
    for (size_t i = 0; i < n; ++i) v += "fde9";
  }
  return v;
}

// An UPDATE announcing 10.0.0.0/24 with this AS_PATH value (and extra
// attributes), decoded on a 2-octet AS session.
struct TwoOctet {
  std::vector<std::byte> bytes;
  UpdateView view;
};
TwoOctet two_octet_update(const std::string& path, const std::string& extra = "") {
  char head[32];
  std::snprintf(head, sizeof head, "5002%04zx", path.size() / 2);
  TwoOctet t;
  t.bytes = body("", std::string(testing::kOrigin) + head + path + std::string(testing::kNextHop) + extra,
                 "180a0000");
  SessionParams p;
  p.four_octet_as = false;
  p.extended_message = true;
  t.view = UpdateView::decode(t.bytes, p, PeerType::kExternal);
  return t;
}

bool has_as_path_diag(const UpdateView& v) {
  for (const auto& d : v.report().diagnostics())
    if (d.attr_type == attr_type::kAsPath && d.action == ErrorAction::kTreatAsWithdraw) return true;
  return false;
}

// The widened path (2 + 4n octets a segment) is exactly 65536 octets: a
// 16-bit length written unchecked wraps to 0, the path reads as empty and
// the rest of it as further attributes.
TEST(UpdateView, WidenedAsPathPastTheLengthFieldIsTreatAsWithdraw) {
  std::vector<size_t> sizes(64, 255);  // 66 segments, 16351 ASes: 132 + 65404 octets
  sizes.insert(sizes.end(), {30, 1});
  auto t = two_octet_update(two_octet_path(sizes));
  EXPECT_EQ(t.view.action(), ErrorAction::kTreatAsWithdraw);
  EXPECT_TRUE(has_as_path_diag(t.view));
  EXPECT_EQ(t.view.announced().count, 1u);  // to withdraw
  // Whatever a caller does, no set carries a wrapped AS_PATH or the rest
  // of the path as attributes: AS_PATH is left out, ORIGIN and NEXT_HOP stay.
  std::vector<std::byte> canonical;
  ASSERT_TRUE(t.view.write_attribute_set(canonical));
  auto set = t.view.attribute_set();
  EXPECT_EQ(std::vector<std::byte>(set.wire().begin(), set.wire().end()), canonical);
  auto a = set.decode();
  EXPECT_FALSE(a.as_path);
  EXPECT_TRUE(a.unknown.empty());
  EXPECT_FALSE(a.local_pref);
  EXPECT_EQ(a.origin, Origin::kIgp);
  ASSERT_TRUE(a.next_hop);
  EXPECT_EQ(a.next_hop->to_string(), "192.0.2.1");
}

TEST(UpdateView, MerelyLongWidenedAsPathIsTreatAsWithdraw) {
  auto t = two_octet_update(two_octet_path(std::vector<size_t>(70, 255)));
  EXPECT_EQ(t.view.action(), ErrorAction::kTreatAsWithdraw);
  EXPECT_TRUE(has_as_path_diag(t.view));
}

TEST(UpdateView, WidenedAsPathThatFitsIsKept) {
  // 64 x 255 ASes widen to 65408 octets: still fits.
  auto t = two_octet_update(two_octet_path(std::vector<size_t>(64, 255)));
  ASSERT_EQ(t.view.action(), ErrorAction::kNone);
  auto set = t.view.attribute_set();
  EXPECT_EQ(set.as_path_length(), 64u * 255u);
  EXPECT_EQ(set.as_path().size(), 65408u);
  EXPECT_EQ(set.first_as(), 65001u);
  EXPECT_EQ(set.origin_as(), 65001u);
}

TEST(UpdateView, WidenedAsPathWithAs4PathMergedIsMeasuredAfterTheMerge) {
  // 66 x 255 2-octet ASes widen to 67452 octets; an AS4_PATH of one AS
  // leaves 66 x 255 - 1 of them plus one 4-octet AS: still too long.
  auto t = two_octet_update(two_octet_path(std::vector<size_t>(66, 255)), "c01106" "0201fa56ea00");
  EXPECT_EQ(t.view.action(), ErrorAction::kTreatAsWithdraw);
  EXPECT_TRUE(has_as_path_diag(t.view));
}

TEST(UpdateView, WidenedAsPathWithoutNlriIsAttributeDiscard) {
  // Nothing is announced: only AS_PATH is lost (attribute discard, so no
  // RFC 7606 section 5.2 session reset), and the set still builds.
  std::string path = two_octet_path(std::vector<size_t>(70, 255));
  char head[32];
  std::snprintf(head, sizeof head, "5002%04zx", path.size() / 2);
  auto b = body("180a0000", std::string(testing::kOrigin) + head + path, "");
  SessionParams p;
  p.four_octet_as = false;
  auto v = UpdateView::decode(b, p, PeerType::kExternal);
  EXPECT_EQ(v.action(), ErrorAction::kAttributeDiscard);
  EXPECT_EQ(v.withdrawals().count, 1u);
  EXPECT_FALSE(v.attribute_set().decode().as_path);
}

TEST(AsPath, EncodedSizeAndNoWrappedLength) {
  AsPath p{{{SegmentType::kAsSequence, std::vector<uint32_t>(600, 65001)},
            {SegmentType::kAsSet, {1, 2}}}};
  std::vector<std::byte> out;
  bytes::Writer w(out);
  encode_as_path_value(w, p, AsWidth::k4);
  EXPECT_EQ(out.size(), as_path_value_size(p, AsWidth::k4));
  EXPECT_EQ(as_path_value_size(p, AsWidth::k2), 3u * 2 + 600u * 2 + 2 + 4);
  // 16384 4-octet ASes need 65536 + 130 octets: the attribute is left out
  // rather than written with a wrapped length.
  AsPath big{{{SegmentType::kAsSequence, std::vector<uint32_t>(16384, 65001)}}};
  out.assign(3, std::byte{0x55});
  encode_as_path(w, big, AsWidth::k4);
  EXPECT_EQ(out.size(), 3u);
  std::vector<std::byte> value(kMaxAttributeValue + 1);
  EXPECT_FALSE(write_attribute(w, attr_flag::kOptional | attr_flag::kTransitive, 200, value));
  EXPECT_EQ(out.size(), 3u);
  value.pop_back();
  EXPECT_TRUE(write_attribute(w, attr_flag::kOptional | attr_flag::kTransitive, 200, value));
  EXPECT_EQ(out.size(), 3u + 4u + kMaxAttributeValue);
}

// Arbitrary bytes never crash the decoder or its iterators (sanitizers
// watch), whatever the session.
RC_GTEST_PROP(UpdateView, ArbitraryBytesAreSafe, (std::vector<uint8_t> raw, uint8_t mode)) {
  std::vector<std::byte> b(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) b[i] = std::byte{raw[i]};
  SessionParams p;
  p.four_octet_as = mode & 1;
  if (mode & 2) p.add_path_receive = FamilySet{kIpv4Unicast, kIpv6Unicast};
  if (mode & 4) p.extended_next_hop.add(kIpv4Unicast);
  auto v = UpdateView::decode(b, p, mode & 8 ? PeerType::kInternal : PeerType::kExternal);
  size_t n = 0;
  for (const auto& r : v.announced())
    for (const auto& x : r) n += x.prefix.len();
  for (const auto& r : v.withdrawals())
    for (const auto& x : r) n += x.prefix.len();
  if (v.action() != ErrorAction::kSessionReset) (void)v.attribute_set();
  (void)v.end_of_rib();
  RC_ASSERT(n < raw.size() * 8 * 128 + 1);
}

}  // namespace
}  // namespace petrel::codec
