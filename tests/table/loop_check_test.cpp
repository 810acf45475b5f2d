// The import loop checks (table/export.h) on an UPDATE as received
// against the same checks on its AttributeSet: the session's import path
// asks count_as(UpdateView) and reflection_loop(UpdateView) so that it
// need not build the set, and they must answer exactly as the set would,
// on random and mutated UPDATEs, from 2- and 4-octet AS sessions
// (AS4_PATH merged on the former, RFC 6793), internal and external peers
// (ORIGINATOR_ID and CLUSTER_LIST discarded from the latter, RFC 7606
// section 7.9 / RFC 4456).
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <vector>

#include "codec/update.h"
#include "codec/update_builder.h"
#include "table/export.h"
#include "tests/table/attrs_gen.h"

namespace petrel::table {
namespace {

using codec::AttributeSet;
using codec::PathAttributes;

// The first message's body that `pa` and two prefixes make, or empty.
std::vector<std::byte> update_body(const PathAttributes& pa, const codec::SessionParams& params) {
  std::vector<codec::NlriPrefix> prefixes{{*net::Prefix::make(net::IpAddress::v4(0x0A000000u), 8), 0},
                                          {*net::Prefix::make(net::IpAddress::v4(0xC6336400u), 24), 0}};
  std::vector<std::byte> msgs;
  codec::UpdateBuilder b(params);
  if (!b.announce(codec::kIpv4Unicast, AttributeSet::from(pa), prefixes, msgs).ok()) return {};
  const size_t len = std::to_integer<size_t>(msgs[16]) << 8 | std::to_integer<size_t>(msgs[17]);
  return {msgs.begin() + codec::kHeaderLen, msgs.begin() + static_cast<ptrdiff_t>(len)};
}

RC_GTEST_PROP(LoopCheck, TheUpdateAnswersAsItsAttributeSetDoes, (uint8_t mode)) {
  codec::SessionParams params;
  params.four_octet_as = mode & 1;
  const codec::PeerType peer = mode & 2 ? codec::PeerType::kInternal : codec::PeerType::kExternal;
  const PathAttributes pa = *testing::gen_attrs();
  std::vector<std::byte> body = update_body(pa, params);
  RC_PRE(!body.empty());
  if (mode & 4) {  // a few octets changed, or the body cut short
    for (int k = 0, n = *rc::gen::inRange(1, 4); k < n; ++k)
      body[*rc::gen::inRange<size_t>(0, body.size())] = std::byte{*rc::gen::arbitrary<uint8_t>()};
    if (*rc::gen::arbitrary<bool>() && body.size() > 4) body.resize(*rc::gen::inRange<size_t>(4, body.size()));
  }
  const auto u = codec::UpdateView::decode(body, params, peer);
  RC_PRE(u.action() != codec::ErrorAction::kSessionReset);
  const AttributeSet set = u.attribute_set();
  // ASes to count: every one of the path (each segment type), AS_TRANS,
  // and one at random.
  std::vector<uint32_t> asns{codec::kAsTrans, *rc::gen::arbitrary<uint32_t>()};
  if (pa.as_path)
    for (const auto& seg : pa.as_path->segments) asns.insert(asns.end(), seg.asns.begin(), seg.asns.end());
  for (uint32_t asn : asns) RC_ASSERT(count_as(u, asn) == count_as(set, asn));
  // Router and cluster ids: the ORIGINATOR_ID, each CLUSTER_LIST entry,
  // and one at random.
  std::vector<uint32_t> ids{pa.originator_id.value_or(0), *rc::gen::arbitrary<uint32_t>()};
  ids.insert(ids.end(), pa.cluster_list.begin(), pa.cluster_list.end());
  for (uint32_t router : ids)
    for (uint32_t cluster : ids)
      RC_ASSERT(reflection_loop(u, router, cluster) == reflection_loop(set, router, cluster));
  RC_TAG(params.four_octet_as, peer == codec::PeerType::kInternal);
}

// A 2-octet session: a 4-octet AS of ours reaches us as AS_TRANS in the
// AS_PATH and for real in AS4_PATH; it is counted, and AS_TRANS is not
// counted as ours.
TEST(LoopCheck, TwoOctetSessionCountsTheMergedPath) {
  codec::SessionParams params;
  params.four_octet_as = false;
  PathAttributes pa;
  pa.origin = codec::Origin::kIgp;
  pa.as_path = codec::AsPath{{{codec::SegmentType::kAsSequence, {65010, 4200000001u, 65020, 4200000001u}}}};
  pa.next_hop = net::IpAddress::v4(0xC0000201u);
  const auto body = update_body(pa, params);
  ASSERT_FALSE(body.empty());
  const auto u = codec::UpdateView::decode(body, params, codec::PeerType::kExternal);
  ASSERT_EQ(u.action(), codec::ErrorAction::kNone);
  ASSERT_TRUE(u.attribute(codec::attr_type::kAs4Path).has_value());
  EXPECT_EQ(count_as(u, 4200000001u), 2u);
  EXPECT_EQ(count_as(u, codec::kAsTrans), 0u);
  EXPECT_EQ(count_as(u, 65020), 1u);
}

// An internal peer's ORIGINATOR_ID and CLUSTER_LIST are looked at; an
// external peer's are discarded on receipt and never make a loop.
TEST(LoopCheck, ReflectionAttributesCountOnlyFromInternalPeers) {
  codec::SessionParams params;
  params.four_octet_as = true;
  PathAttributes pa;
  pa.origin = codec::Origin::kIgp;
  pa.as_path = codec::AsPath{};
  pa.next_hop = net::IpAddress::v4(0xC0000201u);
  pa.local_pref = 100;
  pa.originator_id = 0x0A000001u;
  pa.cluster_list = {7, 9};
  const auto body = update_body(pa, params);
  ASSERT_FALSE(body.empty());
  const auto in = codec::UpdateView::decode(body, params, codec::PeerType::kInternal);
  EXPECT_TRUE(reflection_loop(in, 0x0A000001u, 1));
  EXPECT_TRUE(reflection_loop(in, 0x0A000002u, 9));
  EXPECT_FALSE(reflection_loop(in, 0x0A000002u, 8));
  const auto ex = codec::UpdateView::decode(body, params, codec::PeerType::kExternal);
  EXPECT_FALSE(reflection_loop(ex, 0x0A000001u, 9));
}

}  // namespace
}  // namespace petrel::table
