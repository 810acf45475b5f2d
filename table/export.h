// The rules of BGP for passing a route on (docs/export.md): whether a
// route may go to a peer at all, and the attributes it goes with. Pure:
// the daemon's exporter (daemon/exporter.h) calls it for each route it
// considers, and caches the result per attribute set.
//
//   - never back to the peer it came from;
//   - NO_ADVERTISE: to no peer; NO_EXPORT and NO_EXPORT_SUBCONFED: to no
//     external peer (RFC 1997; Petrel has no confederations, so the two
//     are the same);
//   - LLGR_STALE (a long-lived stale route, RFC 9494 section 4.3): only to
//     a peer that negotiated long-lived graceful restart (to the others
//     it is withdrawn); the community goes with it. RFC 9494 section
//     4.6's optional partial deployment (to internal peers without LLGR,
//     with NO_EXPORT and LOCAL_PREF 0) is not done;
//   - learned from an internal peer: to external peers, and to internal
//     peers only by route reflection (RFC 4456 section 6: from a client to
//     every internal peer, from a non-client to clients only), with
//     ORIGINATOR_ID set and our cluster id prepended to CLUSTER_LIST;
//   - to an external peer (RFC 4271 section 5.1): our AS prepended to the
//     AS_PATH (confederation segments removed, RFC 5065 section 5.3), the
//     next hop set to our address on the session, LOCAL_PREF, ORIGINATOR_ID
//     and CLUSTER_LIST removed, and a MULTI_EXIT_DISC kept only on routes
//     this router originates (5.1.4: a MED received from a neighbouring AS
//     is not passed to another);
//   - to an internal peer: AS_PATH and next hop unchanged (a route this
//     router originates without a next hop gets ours), LOCAL_PREF sent
//     (the route's, or the default degree of preference);
//   - the peer's next-hop mode (ExportTarget::next_hop) changes the next
//     hop alone: kSelf, to an internal peer, sets ours on routes learned
//     from external peers and originated here (not on reflected routes:
//     RFC 4456 section 10, a reflector does not change NEXT_HOP); kUnchanged,
//     to an external peer, keeps the route's own next hop when it lies in a
//     network the peer shares with us (RFC 4271 section 5.1.3's "third
//     party" NEXT_HOP; the peer can reach it in one hop), else ours;
//   - to a route-server client (RFC 7947 section 2.2), a route learned
//     from an external peer: AS_PATH unchanged (2.2.2.1: our AS is not
//     prepended), next hop unchanged (2.2.1; an IPv6 link-local next hop
//     only to a client on our link, RFC 2545 section 3), MULTI_EXIT_DISC
//     unchanged (2.2.3), communities unchanged (2.2.4); LOCAL_PREF,
//     ORIGINATOR_ID and CLUSTER_LIST removed as for any external peer.
//     NO_EXPORT and NO_ADVERTISE are obeyed: they speak to the route
//     server's AS, which the clients are outside of (RFC 1997). Routes of
//     our own AS (originated, or from internal peers) go as to any
//     external peer.
//   - with a role on the session (RFC 9234, `local_role`: ours; the peer's
//     is its counterpart), the OTC egress procedure of section 5: a route
//     that carries OTC goes to no provider, lateral peer or route server;
//     one without OTC gets OTC with our AS when it goes to a customer, a
//     lateral peer or (from a route server) a route-server client.
// 2-octet peers (AS_TRANS and AS4_PATH) are the encoder's job
// (codec/update_builder.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "codec/attribute_set.h"
#include "codec/capabilities.h"
#include "codec/mp_nlri.h"
#include "codec/types.h"
#include "codec/update.h"
#include "crates/net/ip.h"
#include "table/best_path.h"

namespace petrel::table {

// `peer.next_hop`: what an export does to a route's next hop beyond the
// rules' default.
enum class NextHopMode : uint8_t { kDefault, kSelf, kUnchanged };

// The peer a route would go to, as the rules need it.
struct ExportTarget {
  uint32_t local_as = 0;
  uint32_t cluster_id = 0;  // ours, host order (the router id unless configured)
  bool internal = false;
  bool rr_client = false;
  bool route_server_client = false;  // RFC 7947; an external peer
  uint32_t slot = UINT32_MAX;  // its table slot (its own routes stay with it)
  // Our addresses on the session, for next hops we set: IPv4 for IPv4
  // families, IPv6 (global and, when the peer is on our link, link-local)
  // for IPv6 families and for IPv4 ones with an RFC 8950 next hop.
  std::optional<net::IpAddress> next_hop_v4;
  std::optional<codec::NextHop> next_hop_v6;
  bool extended_next_hop_v4 = false;  // RFC 8950 negotiated for IPv4 unicast
  uint32_t default_local_pref = 100;
  // Both sides sent the LLGR capability (RFC 9494 section 3.1) with the
  // graceful restart one it needs (section 4.1): LLGR_STALE routes may go.
  bool long_lived_graceful_restart = false;
  // RFC 9234: our role on the session (external peers; none: no role).
  std::optional<codec::Role> local_role;
  // The peer's next-hop mode (above); kDefault: RFC 4271's.
  NextHopMode next_hop = NextHopMode::kDefault;
  // The networks of our interface on the session that hold the peer's
  // address (one a family): where a kUnchanged next hop may be.
  std::optional<net::Prefix> shared_v4, shared_v6;
  friend bool operator==(const ExportTarget&, const ExportTarget&) = default;
};

// Where the route came from.
struct ExportSource {
  const PeerInfo* peer = nullptr;
  uint32_t slot = 0;
};

enum class ExportVerdict : uint8_t {
  kSend,
  kToSender,        // the peer it came from
  kNoAdvertise,     // NO_ADVERTISE
  kNoExport,        // NO_EXPORT / NO_EXPORT_SUBCONFED to an external peer
  kInternalToInternal,  // learned from an internal peer, no reflection applies
  kNoNextHop,       // no address of ours of the family this route needs (to
                    // a route-server client: the route's own next hop cannot
                    // go to it)
  kLongLivedStale,  // LLGR_STALE to a peer without LLGR (RFC 9494 section 4.3)
  kOversized,       // our AS prepended (or our cluster added), AS_PATH or
                    // CLUSTER_LIST would not fit its 16-bit length
  kOnlyToCustomer,  // carries OTC, to a provider, lateral peer or route
                    // server (RFC 9234 section 5, egress 2)
};
std::string_view export_verdict_name(ExportVerdict v);

// RFC 9234 section 5 by our role on a session (the peer's role is the
// counterpart: provider-customer, rs-rs_client, peer-peer).
//  Ingress 1 and 2: a route with OTC from a customer or route-server client
//  is a leak, and from a lateral peer unless OTC is the peer's AS.
//  Ingress 3: a route without OTC from a provider, lateral peer or route
//  server gets OTC with the peer's AS.
//  Egress 1: a route without OTC gets OTC with our AS to a customer, a
//  lateral peer, or (ours being rs) a route-server client.
//  Egress 2: a route with OTC goes to no provider, lateral peer or route
//  server.
enum class OtcIngress : uint8_t { kKeep, kLeak, kAdd };
OtcIngress otc_ingress(codec::Role ours, std::optional<uint32_t> otc, uint32_t peer_as);
bool otc_added_on_egress(codec::Role ours);
bool otc_stops_egress(codec::Role ours);
// "provider", "customer", "peer", "rs", "rs-client" (RFC 9234's names).
std::string_view role_name(codec::Role r);
std::optional<codec::Role> parse_role(std::string_view text);

// Whether the route may go to `to` (no attributes built).
ExportVerdict may_export(const ExportTarget& to, const ExportSource& from, const codec::AttributeSet& attrs);

struct Exported {
  ExportVerdict verdict = ExportVerdict::kSend;
  codec::AttributeSet attrs;  // when kSend
};
// The attributes the route goes to `to` with, for a prefix of family `f`.
Exported export_route(const ExportTarget& to, const ExportSource& from, codec::Family f,
                      const codec::AttributeSet& attrs);

// RFC 4271 section 5.1.2 (b) with RFC 5065 section 5.3: confederation
// segments go, then `asn` leads the path.
void prepend_as(codec::AsPath& path, uint32_t asn);

// How many times `asn` appears in the AS_PATH (for the own-AS check on
// import, with its allow_own_as allowance).
uint32_t count_as(const codec::AttributeSet& attrs, uint32_t asn);
// The same of an UPDATE as received, always the answer of
// count_as(u.attribute_set(), asn): on a 4-octet AS session from the
// AS_PATH as it came, without building the set (the session's import
// path interns the UPDATE's canonical bytes directly); on a 2-octet one
// through the set (AS4_PATH merged in, RFC 6793 section 4.2.3).
uint32_t count_as(const codec::UpdateView& u, uint32_t asn);

// RFC 4456 section 8 on import from an internal peer: a route that
// carries our router id as ORIGINATOR_ID or our cluster id in its
// CLUSTER_LIST has looped.
bool reflection_loop(const codec::AttributeSet& attrs, uint32_t router_id, uint32_t cluster_id);
// The same of an UPDATE as received (the attributes u.attribute_set()
// would keep), without building the set.
bool reflection_loop(const codec::UpdateView& u, uint32_t router_id, uint32_t cluster_id);

}  // namespace petrel::table
