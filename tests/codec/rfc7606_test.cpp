// RFC 7606: one test per rule, named after the section it covers (plus the
// RFC 4271 section 6.3 rules RFC 7606 leaves in place, and the error rules
// of RFC 4760, 6793, 7607, 8092 and 9234).
#include "codec/rfc7606.h"

#include <gtest/gtest.h>

#include "codec/attributes.h"
#include "codec/update.h"
#include "tests/codec/update_util.h"

namespace petrel::codec {
namespace {

using testing::base_attrs;
using testing::body;
using testing::hx;
using testing::kAsPath4;
using testing::kNextHop;
using testing::kOrigin;

const std::string kNlri = "180a0000";  // 10.0.0.0/24

struct Decoded {
  std::vector<std::byte> bytes;
  UpdateView view;
};

Decoded decode(const std::string& attrs, const std::string& nlri = kNlri,
               PeerType peer = PeerType::kExternal, SessionParams p = {}) {
  Decoded d;
  d.bytes = body("", attrs, nlri);
  d.view = UpdateView::decode(d.bytes, p, peer);
  return d;
}

bool has_diag(const UpdateView& v, uint8_t type, ErrorAction a) {
  for (const auto& d : v.report().diagnostics())
    if (d.attr_type == type && d.action == a) return true;
  return false;
}

TEST(Rfc7606, Section2_WellFormedUpdateHasNoAction) {
  auto d = decode(base_attrs());
  EXPECT_EQ(d.view.action(), ErrorAction::kNone);
  EXPECT_TRUE(d.view.report().diagnostics().empty());
}

TEST(Rfc7606, Section2_StrongestActionWinsAndDecodingGoesOn) {
  // ATOMIC_AGGREGATE with a length (discard) and a bad MED (withdraw).
  auto d = decode(base_attrs() + "40060101" + "8004020001");
  EXPECT_EQ(d.view.action(), ErrorAction::kTreatAsWithdraw);
  EXPECT_TRUE(has_diag(d.view, attr_type::kAtomicAggregate, ErrorAction::kAttributeDiscard));
  EXPECT_TRUE(has_diag(d.view, attr_type::kMultiExitDisc, ErrorAction::kTreatAsWithdraw));
  EXPECT_EQ(d.view.announced().count, 1u);
}

TEST(Rfc7606, Section3_RepeatedAttributeIsDiscardedKeepingTheFirst) {
  auto d = decode(base_attrs() + "8004040000000a" + "8004040000000b");
  EXPECT_EQ(d.view.action(), ErrorAction::kAttributeDiscard);
  EXPECT_EQ(d.view.attribute_set().med(), 10u);
}

TEST(Rfc7606, Section3_RepeatedMpReachIsSessionReset) {
  std::string mp = "800e1500020110" + std::string("20010db8000000000000000000000001") + "00";
  auto d = decode(base_attrs() + mp + mp, "");
  EXPECT_EQ(d.view.action(), ErrorAction::kSessionReset);
  EXPECT_EQ(d.view.report().notification().subcode, update_error::kMalformedAttributeList);
}

TEST(Rfc7606, Section3_FlagConflictIsTreatAsWithdraw) {
  // ORIGIN marked optional.
  auto d = decode("c0010100" + std::string(kAsPath4) + std::string(kNextHop));
  EXPECT_EQ(d.view.action(), ErrorAction::kTreatAsWithdraw);
  EXPECT_TRUE(has_diag(d.view, attr_type::kOrigin, ErrorAction::kTreatAsWithdraw));
}

TEST(Rfc7606, Section3_AttributeLengthConflictIsTreatAsWithdraw) {
  auto e = decode(base_attrs() + "80040300000a");
  EXPECT_EQ(e.view.action(), ErrorAction::kTreatAsWithdraw);
}

TEST(Rfc7606, Section3_MissingWellKnownMandatoryIsTreatAsWithdraw) {
  auto d = decode(std::string(kOrigin) + std::string(kNextHop));
  EXPECT_EQ(d.view.action(), ErrorAction::kTreatAsWithdraw);
  EXPECT_TRUE(has_diag(d.view, attr_type::kAsPath, ErrorAction::kTreatAsWithdraw));
}

TEST(Rfc7606, Section3_NextHopNotNeededWithoutClassicNlri) {
  std::string mp = "800e1a00020110" + std::string("20010db8000000000000000000000001") + "00" +
                   "2020010db8";
  auto d = decode(std::string(kOrigin) + std::string(kAsPath4) + mp, "");
  EXPECT_EQ(d.view.action(), ErrorAction::kNone);
  ASSERT_TRUE(d.view.mp_reach());
  EXPECT_EQ(d.view.announced().count, 1u);
}

TEST(Rfc7606, Section3_UpdateWithoutNlriNeedsNoAttributes) {
  auto d = decode("800f080002012020010db8", "");
  EXPECT_EQ(d.view.action(), ErrorAction::kNone);
  EXPECT_EQ(d.view.withdrawals().count, 1u);
}

TEST(Rfc7606, Section4_AttributeOverrunIsTreatAsWithdrawAndNlriIsFound) {
  // A MED claiming 9 octets where 4 remain.
  auto d = decode(base_attrs() + "8004090000000a");
  EXPECT_EQ(d.view.action(), ErrorAction::kTreatAsWithdraw);
  ASSERT_EQ(d.view.announced().count, 1u);
  EXPECT_EQ((*d.view.nlri().begin()).prefix.to_string(), "10.0.0.0/24");
}

TEST(Rfc7606, Section4_ShortAttributeHeaderIsTreatAsWithdraw) {
  auto d = decode(base_attrs() + "8004");
  EXPECT_EQ(d.view.action(), ErrorAction::kTreatAsWithdraw);
  EXPECT_EQ(d.view.announced().count, 1u);
}

TEST(Rfc7606, Section4_OverrunInMpReachIsSessionReset) {
  auto d = decode(base_attrs() + "800e3000020110", "");
  EXPECT_EQ(d.view.action(), ErrorAction::kSessionReset);
}

TEST(Rfc7606, Section4_OverrunWithNoLocatableNlriIsSessionReset) {
  auto d = decode(base_attrs() + "80040900", "");
  EXPECT_EQ(d.view.action(), ErrorAction::kSessionReset);
  EXPECT_EQ(d.view.report().notification().subcode, update_error::kMalformedAttributeList);
}

// RFC 7606 section 5.2: path attributes other than MP_UNREACH_NLRI with no
// reachable NLRI, and an error above attribute discard: session reset,
// with the NOTIFICATION of that error (RFC 4271 section 6.3 subcodes).
Decoded decode_withdrawal(const std::string& withdrawn, const std::string& attrs) {
  Decoded d;
  d.bytes = body(withdrawn, attrs, "");
  d.view = UpdateView::decode(d.bytes, {}, PeerType::kExternal);
  return d;
}

TEST(Rfc7606, Section5_2_BadOriginWithOnlyWithdrawnRoutesIsSessionReset) {
  auto d = decode_withdrawal(kNlri, "40010105" + std::string(kAsPath4));
  EXPECT_EQ(d.view.action(), ErrorAction::kSessionReset);
  const auto& n = d.view.report().notification();
  EXPECT_EQ(n.code, ErrorCode::kUpdateMessage);
  EXPECT_EQ(n.subcode, update_error::kInvalidOrigin);
  EXPECT_EQ(bytes::to_hex(n.data()), "40010105");
  EXPECT_TRUE(has_diag(d.view, attr_type::kOrigin, ErrorAction::kSessionReset));
  EXPECT_EQ(d.view.withdrawals().count, 0u);
}

TEST(Rfc7606, Section5_2_BadMedNextToMpUnreachIsSessionReset) {
  // MP_UNREACH_NLRI withdrawing 2001:db8::/32, and a 3-octet MED.
  auto d = decode_withdrawal("", "800f0800020120" "20010db8" "800403000001");
  EXPECT_EQ(d.view.action(), ErrorAction::kSessionReset);
  const auto& n = d.view.report().notification();
  EXPECT_EQ(n.subcode, update_error::kAttributeLength);
  EXPECT_EQ(bytes::to_hex(n.data()), "800403000001");
  EXPECT_TRUE(has_diag(d.view, attr_type::kMultiExitDisc, ErrorAction::kSessionReset));
}

TEST(Rfc7606, Section5_2_AttributeOverrunWithOnlyWithdrawnRoutesIsSessionReset) {
  // A MED claiming 9 octets where 4 remain; the withdrawn routes are found
  // (section 4), but no reachable NLRI is.
  auto d = decode_withdrawal(kNlri, std::string(kOrigin) + "8004090000000a");
  EXPECT_EQ(d.view.action(), ErrorAction::kSessionReset);
  EXPECT_EQ(d.view.report().notification().subcode, update_error::kMalformedAttributeList);
}

TEST(Rfc7606, Section5_2_AttributeDiscardWithOnlyWithdrawnRoutesStaysDiscard) {
  // ATOMIC_AGGREGATE with a length: attribute discard is the one approach
  // section 5.2 keeps.
  auto d = decode_withdrawal(kNlri, "40060101");
  EXPECT_EQ(d.view.action(), ErrorAction::kAttributeDiscard);
  EXPECT_EQ(d.view.withdrawals().count, 1u);
}

TEST(Rfc7606, Section5_2_MpUnreachAloneIsNotEscalated) {
  // Only MP_UNREACH_NLRI (an IPv6 prefix with a bad length): section 5.2
  // does not apply; RFC 7606 section 7.12 / RFC 4760 section 7 do.
  auto d = decode_withdrawal("", "800f0800020181" "20010db8");
  EXPECT_EQ(d.view.action(), ErrorAction::kAfiSafiDisable);
}

TEST(Rfc7606, Section5_2_ReachableNlriKeepsTreatAsWithdraw) {
  Decoded e;
  e.bytes = body(kNlri, "40010105" + std::string(kAsPath4) + std::string(kNextHop), kNlri);
  e.view = UpdateView::decode(e.bytes, {}, PeerType::kExternal);
  EXPECT_EQ(e.view.action(), ErrorAction::kTreatAsWithdraw);
  EXPECT_EQ(e.view.withdrawals().count, 1u);
  EXPECT_EQ(e.view.announced().count, 1u);
}

TEST(Rfc7606, Rfc4271Section6_3_WithdrawnLengthOverrunIsSessionReset) {
  auto b = hx("00ff0000");
  auto v = UpdateView::decode(b, {}, PeerType::kExternal);
  EXPECT_EQ(v.action(), ErrorAction::kSessionReset);
  EXPECT_EQ(v.report().notification().code, ErrorCode::kUpdateMessage);
  EXPECT_EQ(v.report().notification().subcode, update_error::kMalformedAttributeList);
  EXPECT_EQ(v.announced().count, 0u);
}

TEST(Rfc7606, Rfc4271Section6_3_TotalAttributeLengthOverrunIsSessionReset) {
  auto b = hx("0000 0010 40010100");
  auto v = UpdateView::decode(b, {}, PeerType::kExternal);
  EXPECT_EQ(v.action(), ErrorAction::kSessionReset);
  EXPECT_EQ(v.report().notification().subcode, update_error::kMalformedAttributeList);
}

TEST(Rfc7606, Rfc4271Section6_3_UnrecognizedWellKnownIsSessionResetWithData) {
  auto d = decode(base_attrs() + "40c80101");
  EXPECT_EQ(d.view.action(), ErrorAction::kSessionReset);
  const auto& n = d.view.report().notification();
  EXPECT_EQ(n.subcode, update_error::kUnrecognizedWellKnown);
  EXPECT_EQ(bytes::to_hex(n.data()), "40c80101");
}

TEST(Rfc7606, Section5_3_PrefixLengthTooLongInNlriIsSessionReset) {
  auto d = decode(base_attrs(), "210a000000ff");
  EXPECT_EQ(d.view.action(), ErrorAction::kSessionReset);
  EXPECT_EQ(d.view.report().notification().subcode, update_error::kInvalidNetworkField);
}

TEST(Rfc7606, Section5_3_NlriOverrunIsSessionReset) {
  auto d = decode(base_attrs(), "180a00");
  EXPECT_EQ(d.view.action(), ErrorAction::kSessionReset);
}

TEST(Rfc7606, Section5_3_WithdrawnRoutesOverrunIsSessionReset) {
  auto b = body("200a0000", "", "");
  auto v = UpdateView::decode(b, {}, PeerType::kExternal);
  EXPECT_EQ(v.action(), ErrorAction::kSessionReset);
  EXPECT_EQ(v.report().notification().subcode, update_error::kInvalidNetworkField);
}

TEST(Rfc7606, Section5_3_BadPrefixInMpReachIsAfiSafiDisable) {
  std::string mp = "800e1a00020110" + std::string("20010db8000000000000000000000001") + "00" +
                   "8120010db8";
  auto d = decode(std::string(kOrigin) + std::string(kAsPath4) + mp, "");
  EXPECT_EQ(d.view.action(), ErrorAction::kAfiSafiDisable);
  ASSERT_EQ(d.view.report().disabled_families().size(), 1u);
  EXPECT_EQ(d.view.report().disabled_families()[0], kIpv6Unicast);
  EXPECT_EQ(d.view.announced().count, 0u);
}

TEST(Rfc7606, Section5_3_UnknownFamilyIsNamedAndSkipped) {
  // L2VPN EVPN: not decoded, not an error.
  auto d = decode(std::string(kOrigin) + std::string(kAsPath4) + "800e0b001946040a00000100" + "0102",
                  "");
  EXPECT_EQ(d.view.action(), ErrorAction::kNone);
  ASSERT_TRUE(d.view.mp_reach());
  EXPECT_FALSE(d.view.mp_reach()->supported);
  EXPECT_EQ(d.view.mp_reach()->family, (Family{25, 70}));
  ASSERT_EQ(d.view.report().diagnostics().size(), 1u);
  EXPECT_EQ(d.view.report().diagnostics()[0].family, (Family{25, 70}));
}

TEST(Rfc7606, Rfc4271Section5_UnknownOptionalTransitiveIsKeptWithPartial) {
  auto d = decode(base_attrs() + "c0c8020102");
  EXPECT_EQ(d.view.action(), ErrorAction::kNone);
  auto set = d.view.attribute_set();
  auto p = set.decode();
  ASSERT_EQ(p.unknown.size(), 1u);
  EXPECT_EQ(p.unknown[0].type, 200);
  EXPECT_TRUE(p.unknown[0].flags & attr_flag::kPartial);
}

TEST(Rfc7606, Rfc4271Section5_UnknownOptionalNonTransitiveIsDropped) {
  auto d = decode(base_attrs() + "80c8020102");
  EXPECT_EQ(d.view.action(), ErrorAction::kNone);
  EXPECT_TRUE(has_diag(d.view, 200, ErrorAction::kNone));
  EXPECT_TRUE(d.view.attribute_set().decode().unknown.empty());
}

TEST(Rfc7606, Section7_1_OriginBadLengthIsTreatAsWithdraw) {
  auto d = decode("4001020000" + std::string(kAsPath4) + std::string(kNextHop));
  EXPECT_EQ(d.view.action(), ErrorAction::kTreatAsWithdraw);
  EXPECT_TRUE(has_diag(d.view, attr_type::kOrigin, ErrorAction::kTreatAsWithdraw));
}

TEST(Rfc7606, Section7_1_OriginUndefinedValueIsTreatAsWithdraw) {
  auto d = decode("40010103" + std::string(kAsPath4) + std::string(kNextHop));
  EXPECT_EQ(d.view.action(), ErrorAction::kTreatAsWithdraw);
}

TEST(Rfc7606, Section7_2_AsPathZeroSegmentLengthIsTreatAsWithdraw) {
  auto d = decode(std::string(kOrigin) + "40020202" "00" + std::string(kNextHop));
  EXPECT_EQ(d.view.action(), ErrorAction::kTreatAsWithdraw);
  EXPECT_TRUE(has_diag(d.view, attr_type::kAsPath, ErrorAction::kTreatAsWithdraw));
}

TEST(Rfc7606, Section7_2_AsPathSegmentOverrunIsTreatAsWithdraw) {
  auto d = decode(std::string(kOrigin) + "400206020200000001" + std::string(kNextHop));
  EXPECT_EQ(d.view.action(), ErrorAction::kTreatAsWithdraw);
}

TEST(Rfc7606, Section7_2_AsPathLoneTrailingOctetIsTreatAsWithdraw) {
  auto d = decode(std::string(kOrigin) + "4002070201000000010a" + std::string(kNextHop));
  EXPECT_EQ(d.view.action(), ErrorAction::kTreatAsWithdraw);
}

TEST(Rfc7606, Section7_2_AsPathUnknownSegmentTypeIsTreatAsWithdraw) {
  auto d = decode(std::string(kOrigin) + "400206070100000001" + std::string(kNextHop));
  EXPECT_EQ(d.view.action(), ErrorAction::kTreatAsWithdraw);
}

TEST(Rfc7606, Section7_2_ConfedSegmentFromExternalPeerIsTreatAsWithdraw) {
  std::string attrs = std::string(kOrigin) + "4002100301000000010202000000020000000a" + std::string(kNextHop);
  auto ext = decode(attrs);
  EXPECT_EQ(ext.view.action(), ErrorAction::kTreatAsWithdraw);
  auto in = decode(attrs, kNlri, PeerType::kInternal);
  EXPECT_EQ(in.view.action(), ErrorAction::kNone);
  // RFC 4271 9.1.2.2 (a) with RFC 5065: confed segments count 0.
  EXPECT_EQ(in.view.attribute_set().as_path_length(), 2u);
  EXPECT_EQ(in.view.attribute_set().first_as(), 2u);
}

TEST(Rfc7606, Section7_3_NextHopBadLengthIsTreatAsWithdraw) {
  auto d = decode(std::string(kOrigin) + std::string(kAsPath4) + "40030500c0000201");
  EXPECT_EQ(d.view.action(), ErrorAction::kTreatAsWithdraw);
  EXPECT_TRUE(has_diag(d.view, attr_type::kNextHop, ErrorAction::kTreatAsWithdraw));
}

TEST(Rfc7606, Section7_4_MedBadLengthIsTreatAsWithdraw) {
  auto d = decode(base_attrs() + "800402000a");
  EXPECT_EQ(d.view.action(), ErrorAction::kTreatAsWithdraw);
}

TEST(Rfc7606, Section7_5_LocalPrefFromExternalPeerIsDiscarded) {
  auto d = decode(base_attrs() + "40050400000064");
  EXPECT_EQ(d.view.action(), ErrorAction::kAttributeDiscard);
  EXPECT_FALSE(d.view.attribute_set().local_pref());
}

TEST(Rfc7606, Section7_5_LocalPrefBadLengthFromInternalPeerIsTreatAsWithdraw) {
  auto d = decode(base_attrs() + "400502000a", kNlri, PeerType::kInternal);
  EXPECT_EQ(d.view.action(), ErrorAction::kTreatAsWithdraw);
  auto ok = decode(base_attrs() + "40050400000064", kNlri, PeerType::kInternal);
  EXPECT_EQ(ok.view.attribute_set().local_pref(), 100u);
}

TEST(Rfc7606, Section7_6_AtomicAggregateBadLengthIsDiscarded) {
  auto d = decode(base_attrs() + "40060101");
  EXPECT_EQ(d.view.action(), ErrorAction::kAttributeDiscard);
  EXPECT_FALSE(d.view.attribute_set().atomic_aggregate());
}

TEST(Rfc7606, Section7_7_AggregatorBadLengthIsDiscarded) {
  auto d = decode(base_attrs() + "c007060001c0000201");  // 6 octets on a 4-octet session
  EXPECT_EQ(d.view.action(), ErrorAction::kAttributeDiscard);
  EXPECT_FALSE(d.view.attribute_set().decode().aggregator);
}

TEST(Rfc7606, Section7_8_CommunitiesBadLengthIsTreatAsWithdraw) {
  auto d = decode(base_attrs() + "c00803000100");
  EXPECT_EQ(d.view.action(), ErrorAction::kTreatAsWithdraw);
  auto z = decode(base_attrs() + "c00800");
  EXPECT_EQ(z.view.action(), ErrorAction::kTreatAsWithdraw);
}

TEST(Rfc7606, Section7_9_OriginatorIdFromExternalPeerIsDiscarded) {
  auto d = decode(base_attrs() + "800904c0000202");
  EXPECT_EQ(d.view.action(), ErrorAction::kAttributeDiscard);
}

TEST(Rfc7606, Section7_9_OriginatorIdBadLengthFromInternalIsTreatAsWithdraw) {
  auto d = decode(base_attrs() + "800903c00002", kNlri, PeerType::kInternal);
  EXPECT_EQ(d.view.action(), ErrorAction::kTreatAsWithdraw);
}

TEST(Rfc7606, Section7_10_ClusterListFromExternalPeerIsDiscarded) {
  auto d = decode(base_attrs() + "800a04c0000202");
  EXPECT_EQ(d.view.action(), ErrorAction::kAttributeDiscard);
}

TEST(Rfc7606, Section7_10_ClusterListBadLengthFromInternalIsTreatAsWithdraw) {
  auto d = decode(base_attrs() + "800a05c000020201", kNlri, PeerType::kInternal);
  EXPECT_EQ(d.view.action(), ErrorAction::kTreatAsWithdraw);
  auto ok = decode(base_attrs() + "800a08c0000202c0000203", kNlri, PeerType::kInternal);
  EXPECT_EQ(ok.view.attribute_set().cluster_list_length(), 2u);
}

TEST(Rfc7606, Section7_11_MpReachNextHopLengthMismatchIsAfiSafiDisable) {
  std::string mp = "800e1200020108" "0000000000000001" "00" "2020010db8";
  auto d = decode(std::string(kOrigin) + std::string(kAsPath4) + mp, "");
  EXPECT_EQ(d.view.action(), ErrorAction::kAfiSafiDisable);
  EXPECT_TRUE(d.view.report().is_disabled(kIpv6Unicast));
  EXPECT_EQ(d.view.report().notification().subcode, update_error::kOptionalAttribute);
}

TEST(Rfc7606, Section7_11_MpReachTooShortToNameFamilyIsSessionReset) {
  auto d = decode(std::string(kOrigin) + std::string(kAsPath4) + "800e020002", "");
  EXPECT_EQ(d.view.action(), ErrorAction::kSessionReset);
}

TEST(Rfc7606, Section7_11_MpUnreachBadPrefixIsAfiSafiDisable) {
  auto d = decode("800f0600020181ffff", "");
  EXPECT_EQ(d.view.action(), ErrorAction::kAfiSafiDisable);
  EXPECT_TRUE(d.view.report().is_disabled(kIpv6Unicast));
}

TEST(Rfc7606, Rfc8950Section3_Ipv6NextHopForIpv4NeedsExtendedNextHop) {
  std::string mp = "800e1900010110" + std::string("20010db8000000000000000000000001") + "00" + "180a0000";
  auto no = decode(std::string(kOrigin) + std::string(kAsPath4) + mp, "");
  EXPECT_EQ(no.view.action(), ErrorAction::kAfiSafiDisable);
  SessionParams p;
  p.extended_next_hop.add(kIpv4Unicast);
  auto yes = decode(std::string(kOrigin) + std::string(kAsPath4) + mp, "", PeerType::kExternal, p);
  EXPECT_EQ(yes.view.action(), ErrorAction::kNone);
  EXPECT_TRUE(yes.view.mp_reach()->next_hop.global.is_v6());
}

TEST(Rfc7606, Section7_14_ExtendedCommunitiesBadLengthIsTreatAsWithdraw) {
  auto d = decode(base_attrs() + "c010040002fde9");
  EXPECT_EQ(d.view.action(), ErrorAction::kTreatAsWithdraw);
}

TEST(Rfc7606, Section7_15_Ipv6ExtendedCommunitiesBadLengthIsTreatAsWithdraw) {
  auto d = decode(base_attrs() + "c019080002fde900000000");
  EXPECT_EQ(d.view.action(), ErrorAction::kTreatAsWithdraw);
}

TEST(Rfc7606, Rfc8092Section6_LargeCommunityBadLengthIsTreatAsWithdraw) {
  auto d = decode(base_attrs() + "c020080000fde900000001");
  EXPECT_EQ(d.view.action(), ErrorAction::kTreatAsWithdraw);
}

TEST(Rfc7606, Rfc9234Section5_OtcBadLengthIsTreatAsWithdraw) {
  auto d = decode(base_attrs() + "c0230200fd");
  EXPECT_EQ(d.view.action(), ErrorAction::kTreatAsWithdraw);
}

TEST(Rfc7606, Rfc6793Section6_MalformedAs4PathIsDiscarded) {
  SessionParams two;
  two.four_octet_as = false;
  std::string as2 = "40020402015ba0";  // AS_PATH: AS_TRANS
  auto d = decode(std::string(kOrigin) + as2 + std::string(kNextHop) + "c0110402010000", kNlri,
                  PeerType::kExternal, two);
  EXPECT_EQ(d.view.action(), ErrorAction::kAttributeDiscard);
  EXPECT_EQ(d.view.attribute_set().first_as(), kAsTrans);
}

TEST(Rfc7606, Rfc6793Section4_1_As4PathOnFourOctetSessionIsDiscarded) {
  auto d = decode(base_attrs() + "c01106020100010000");
  EXPECT_EQ(d.view.action(), ErrorAction::kAttributeDiscard);
}

TEST(Rfc7606, Rfc7607_AsZeroInAsPathIsTreatAsWithdraw) {
  auto d = decode(std::string(kOrigin) + "4002060201" "00000000" + std::string(kNextHop));
  EXPECT_EQ(d.view.action(), ErrorAction::kTreatAsWithdraw);
}

TEST(Rfc7606, Rfc7607_AsZeroInAggregatorIsDiscarded) {
  auto d = decode(base_attrs() + "c00708" "00000000" "c0000201");
  EXPECT_EQ(d.view.action(), ErrorAction::kAttributeDiscard);
}

}  // namespace
}  // namespace petrel::codec
