// The export rules (export.h).
#include "table/export.h"

#include <algorithm>

#include "codec/as_path.h"
#include "codec/attributes.h"
#include "codec/communities.h"
#include "crates/bytes/bytes.h"

namespace petrel::table {

namespace {

bool is_confed(codec::SegmentType t) {
  return t == codec::SegmentType::kConfedSequence || t == codec::SegmentType::kConfedSet;
}

}  // namespace

void prepend_as(codec::AsPath& path, uint32_t asn) {
  std::erase_if(path.segments, [](const codec::AsSegment& s) { return is_confed(s.type); });
  if (!path.segments.empty() && path.segments.front().type == codec::SegmentType::kAsSequence &&
      path.segments.front().asns.size() < 255) {
    auto& a = path.segments.front().asns;
    a.insert(a.begin(), asn);
    return;
  }
  path.segments.insert(path.segments.begin(), codec::AsSegment{codec::SegmentType::kAsSequence, {asn}});
}

namespace {

// RFC 7947 section 2.2.1: a route-server client gets the route's own next
// hop (a third-party next hop, RFC 4271 section 5.1.3). RFC 2545 section 3:
// the link-local half only to a client on our link, which is where the
// route server and its clients meet (one peering LAN). A client is on our
// link when we give it a link-local next hop of ours, beside a global one or
// alone. False: it cannot go to `to` (no next hop of the route's family, an
// IPv6 next hop for an IPv4 route without RFC 8950, or a link-local one
// alone to a client off our link).
bool keep_next_hop(const ExportTarget& to, bool v4, codec::PathAttributes& pa) {
  if (v4 && pa.next_hop) return true;
  if (!pa.mp_family || !pa.mp_next_hop) return false;
  codec::NextHop& nh = *pa.mp_next_hop;
  if (v4 && nh.global.is_v6() && !to.extended_next_hop_v4) return false;
  if (to.next_hop_v6 && (to.next_hop_v6->link_local || to.next_hop_v6->global.is_link_local())) return true;
  nh.link_local.reset();
  return !nh.global.is_link_local();
}

// RFC 4271 section 5.1.3: to an external peer, the route's own next hop
// (a "third party" one) when the peer shares a network with it, so that it
// reaches it in one hop. An IPv6 one goes without its link-local half
// unless that is ours to give (keep_next_hop).
bool third_party_next_hop(const ExportTarget& to, bool v4, const codec::PathAttributes& pa) {
  std::optional<net::IpAddress> nh;
  if (v4 && pa.next_hop) nh = pa.next_hop;
  else if (pa.mp_family && pa.mp_next_hop) nh = pa.mp_next_hop->global;
  if (!nh || nh->is_unspecified()) return false;
  const auto& shared = nh->is_v4() ? to.shared_v4 : to.shared_v6;
  if (!shared || !shared->contains(*nh)) return false;
  if (v4 && nh->is_v6() && !to.extended_next_hop_v4) return false;
  return true;
}

}  // namespace

std::string_view export_verdict_name(ExportVerdict v) {
  switch (v) {
    case ExportVerdict::kSend: return "send";
    case ExportVerdict::kToSender: return "to-sender";
    case ExportVerdict::kNoAdvertise: return "no-advertise";
    case ExportVerdict::kNoExport: return "no-export";
    case ExportVerdict::kInternalToInternal: return "internal-to-internal";
    case ExportVerdict::kNoNextHop: return "no-next-hop";
    case ExportVerdict::kLongLivedStale: return "long-lived-stale";
    case ExportVerdict::kOversized: return "oversized";
    case ExportVerdict::kOnlyToCustomer: return "only-to-customer";
  }
  return "?";
}

OtcIngress otc_ingress(codec::Role ours, std::optional<uint32_t> otc, uint32_t peer_as) {
  using codec::Role;
  switch (ours) {
    case Role::kProvider:  // from a customer
    case Role::kRouteServer:  // from a route-server client
      return otc ? OtcIngress::kLeak : OtcIngress::kKeep;
    case Role::kPeer:
      if (otc) return *otc == peer_as ? OtcIngress::kKeep : OtcIngress::kLeak;
      return OtcIngress::kAdd;
    case Role::kCustomer:  // from a provider
    case Role::kRsClient:  // from a route server
      return otc ? OtcIngress::kKeep : OtcIngress::kAdd;
  }
  return OtcIngress::kKeep;
}

bool otc_added_on_egress(codec::Role ours) {
  return ours == codec::Role::kProvider || ours == codec::Role::kPeer || ours == codec::Role::kRouteServer;
}

bool otc_stops_egress(codec::Role ours) {
  return ours == codec::Role::kCustomer || ours == codec::Role::kPeer || ours == codec::Role::kRsClient;
}

std::string_view role_name(codec::Role r) {
  switch (r) {
    case codec::Role::kProvider: return "provider";
    case codec::Role::kRouteServer: return "rs";
    case codec::Role::kRsClient: return "rs-client";
    case codec::Role::kCustomer: return "customer";
    case codec::Role::kPeer: return "peer";
  }
  return "?";
}

std::optional<codec::Role> parse_role(std::string_view text) {
  for (codec::Role r : {codec::Role::kProvider, codec::Role::kRouteServer, codec::Role::kRsClient,
                        codec::Role::kCustomer, codec::Role::kPeer})
    if (role_name(r) == text) return r;
  return std::nullopt;
}

ExportVerdict may_export(const ExportTarget& to, const ExportSource& from, const codec::AttributeSet& attrs) {
  if (from.slot == to.slot) return ExportVerdict::kToSender;
  if (attrs.has_community(codec::community::kNoAdvertise)) return ExportVerdict::kNoAdvertise;
  if (!to.internal && (attrs.has_community(codec::community::kNoExport) ||
                       attrs.has_community(codec::community::kNoExportSubconfed)))
    return ExportVerdict::kNoExport;
  // RFC 9494 section 4.3: a long-lived stale route is not advertised to a
  // neighbour that did not advertise the LLGR capability.
  if (!to.long_lived_graceful_restart && attrs.has_community(codec::community::kLlgrStale))
    return ExportVerdict::kLongLivedStale;
  const PeerInfo& src = *from.peer;
  if (to.internal && src.internal && !src.local && !src.rr_client && !to.rr_client)
    return ExportVerdict::kInternalToInternal;
  if (to.local_role && !to.internal && attrs.otc() && otc_stops_egress(*to.local_role))
    return ExportVerdict::kOnlyToCustomer;
  return ExportVerdict::kSend;
}

Exported export_route(const ExportTarget& to, const ExportSource& from, codec::Family f,
                      const codec::AttributeSet& attrs) {
  Exported out;
  out.verdict = may_export(to, from, attrs);
  if (out.verdict != ExportVerdict::kSend) return out;
  const PeerInfo& src = *from.peer;
  const bool v4 = f.afi == static_cast<uint16_t>(codec::Afi::kIpv4);
  codec::PathAttributes pa = attrs.decode();
  if (!pa.origin) pa.origin = codec::Origin::kIncomplete;
  if (!pa.as_path) pa.as_path = codec::AsPath{};

  // Whose next hop: ours to an external peer, and to an internal one when
  // this router originated the route without one.
  bool has_next_hop = v4 ? (pa.next_hop.has_value() || (pa.mp_family && pa.mp_next_hop))
                         : (pa.mp_family && pa.mp_next_hop);
  // RFC 7947 section 2.2: transparent for routes from other ASes; routes
  // of our own AS go to a route-server client as to any external peer.
  const bool transparent = to.route_server_client && !to.internal && !src.internal && !src.local;
  bool set_ours = !transparent && (!to.internal || (src.local && !has_next_hop));
  if (to.internal && to.next_hop == NextHopMode::kSelf && !(src.internal && !src.local)) set_ours = true;
  if (!to.internal && !transparent && to.next_hop == NextHopMode::kUnchanged && third_party_next_hop(to, v4, pa))
    set_ours = false;
  if (transparent && !keep_next_hop(to, v4, pa)) {
    out.verdict = ExportVerdict::kNoNextHop;
    return out;
  }
  if (set_ours) {
    pa.next_hop.reset();
    pa.mp_family.reset();
    pa.mp_next_hop.reset();
    if (v4 && to.next_hop_v4) {
      pa.next_hop = to.next_hop_v4;
    } else if (to.next_hop_v6 && (!v4 || to.extended_next_hop_v4)) {
      pa.mp_family = f;
      pa.mp_next_hop = to.next_hop_v6;
    } else {
      out.verdict = ExportVerdict::kNoNextHop;
      return out;
    }
  } else if (pa.mp_family && *pa.mp_family != f) {
    pa.mp_family = f;  // the same next hop, in this family's MP_REACH_NLRI
  }

  if (to.internal) {
    if (!pa.local_pref) pa.local_pref = to.default_local_pref;
    if (src.internal && !src.local) {  // reflected (may_export allowed it)
      if (!pa.originator_id) pa.originator_id = src.router_id;
      pa.cluster_list.insert(pa.cluster_list.begin(), to.cluster_id);
    }
  } else {
    // RFC 7947 sections 2.2.2.1 and 2.2.3: no AS of ours, the MED as it came.
    if (!transparent) prepend_as(*pa.as_path, to.local_as);
    pa.local_pref.reset();
    pa.originator_id.reset();
    pa.cluster_list.clear();
    if (!src.local && !transparent) pa.med.reset();
    // RFC 9234 section 5, egress 1 (may_export applied egress 2).
    if (to.local_role && !pa.otc && otc_added_on_egress(*to.local_role)) pa.otc = to.local_as;
  }
  // A path received at the largest length is one AS too long once ours is
  // prepended: the set's builder would leave AS_PATH out (codec/attributes.h)
  // and the route would go without one. Not sent instead.
  if (codec::as_path_value_size(*pa.as_path, codec::AsWidth::k4) > codec::kMaxAttributeValue ||
      pa.cluster_list.size() * 4 > codec::kMaxAttributeValue) {
    out.verdict = ExportVerdict::kOversized;
    return out;
  }
  out.attrs = codec::AttributeSet::from(pa);
  return out;
}

namespace {

uint32_t count_as(codec::AsSegmentRange segments, uint32_t asn) {
  uint32_t n = 0;
  for (const auto& seg : segments)
    for (size_t i = 0; i < seg.count; ++i)
      if (seg.at(i) == asn) ++n;
  return n;
}

// `cluster_list`: a CLUSTER_LIST attribute's value (empty when absent).
bool reflection_loop(std::optional<uint32_t> originator_id, bytes::Span cluster_list, uint32_t router_id,
                     uint32_t cluster_id) {
  if (originator_id && *originator_id == router_id) return true;
  bytes::Reader r(cluster_list);
  while (r.remaining() >= 4)
    if (*r.u32() == cluster_id) return true;
  return false;
}

}  // namespace

uint32_t count_as(const codec::AttributeSet& attrs, uint32_t asn) { return count_as(attrs.as_path_segments(), asn); }

uint32_t count_as(const codec::UpdateView& u, uint32_t asn) {
  if (!u.params().four_octet_as) return count_as(u.attribute_set(), asn);
  const auto path = u.attribute(codec::attr_type::kAsPath);
  return path ? count_as(codec::AsSegmentRange(path->value, codec::AsWidth::k4), asn) : 0;
}

bool reflection_loop(const codec::AttributeSet& attrs, uint32_t router_id, uint32_t cluster_id) {
  bytes::Span clusters;
  if (attrs.cluster_list_length() > 0)
    for (const auto& a : attrs.attributes())
      if (a.type == codec::attr_type::kClusterList) clusters = a.value;
  return reflection_loop(attrs.originator_id(), clusters, router_id, cluster_id);
}

bool reflection_loop(const codec::UpdateView& u, uint32_t router_id, uint32_t cluster_id) {
  std::optional<uint32_t> originator;
  if (const auto o = u.attribute(codec::attr_type::kOriginatorId)) {
    bytes::Reader r(o->value);
    if (auto v = r.u32()) originator = *v;
  }
  const auto clusters = u.attribute(codec::attr_type::kClusterList);
  return reflection_loop(originator, clusters ? clusters->value : bytes::Span(), router_id, cluster_id);
}

}  // namespace petrel::table
