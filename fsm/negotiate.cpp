// OPEN checks against the configuration and capability negotiation.
// RFC 4271 6.2, RFC 6793 4, RFC 6286 2.2, RFC 7607, RFC 5492 5, RFC 4760 8,
// RFC 7911 4, RFC 8654, RFC 8950 3, RFC 2918, RFC 7313, RFC 4724, RFC 9234.
#include "fsm/negotiate.h"

#include <algorithm>

namespace petrel::fsm {

namespace {

using codec::AddPathMode;
using codec::Capabilities;
using codec::ErrorCode;
using codec::Family;
using codec::Notification;

constexpr uint16_t kIpv6Afi = 2;

Notification refuse(uint8_t subcode) {
  return Notification{static_cast<uint8_t>(ErrorCode::kOpenMessage), subcode, {}};
}

bool can_send(std::optional<AddPathMode> m) {
  return m && (*m == AddPathMode::kSend || *m == AddPathMode::kBoth);
}
bool can_receive(std::optional<AddPathMode> m) {
  return m && (*m == AddPathMode::kReceive || *m == AddPathMode::kBoth);
}

// RFC 9234 section 4.2, table 2: the pairs of roles that fit together.
bool roles_fit(codec::Role ours, codec::Role theirs) {
  using codec::Role;
  switch (ours) {
    case Role::kProvider: return theirs == Role::kCustomer;
    case Role::kCustomer: return theirs == Role::kProvider;
    case Role::kRouteServer: return theirs == Role::kRsClient;
    case Role::kRsClient: return theirs == Role::kRouteServer;
    case Role::kPeer: return theirs == Role::kPeer;
  }
  return false;  // a value outside the registry fits nothing
}

bool has(const std::vector<Family>& v, Family f) { return std::find(v.begin(), v.end(), f) != v.end(); }

// The capabilities of `required` the peer did not advertise, as we would
// advertise them: RFC 5492 section 5 wants them as the NOTIFICATION data.
Capabilities missing_capabilities(const PeerConfig& config, const Capabilities& theirs,
                                  const std::vector<Family>& common) {
  const RequiredCapabilities& req = config.required;
  Capabilities miss;
  for (Family f : codec::kKnownFamilyList)
    if (req.families.has(f) && !has(common, f)) miss.multiprotocol.push_back(f);
  if (req.four_octet_as && !theirs.four_octet_as) miss.four_octet_as = config.local_as;
  if (req.route_refresh && !theirs.route_refresh) miss.route_refresh = true;
  if (req.enhanced_route_refresh && !theirs.enhanced_route_refresh) miss.enhanced_route_refresh = true;
  if (req.extended_message && !theirs.extended_message) miss.extended_message = true;
  if (req.graceful_restart && !theirs.graceful_restart)
    miss.graceful_restart = config.capabilities.graceful_restart.value_or(codec::GracefulRestart{});
  for (Family f : codec::kKnownFamilyList) {
    // We receive path ids only if they send them, and the other way round.
    bool want_rx = req.add_path_receive.has(f) && !can_send(theirs.add_path_mode(f));
    bool want_tx = req.add_path_send.has(f) && !can_receive(theirs.add_path_mode(f));
    if (want_rx || want_tx) {
      AddPathMode m = want_rx && want_tx ? AddPathMode::kBoth
                      : want_rx          ? AddPathMode::kReceive
                                         : AddPathMode::kSend;
      miss.add_path.push_back({f, m});
    }
    if (req.extended_next_hop.has(f) && !theirs.extended_next_hop_allowed(f, kIpv6Afi))
      miss.extended_next_hop.push_back({f, kIpv6Afi});
  }
  return miss;
}

}  // namespace

uint16_t negotiate_hold_time(uint16_t ours, uint16_t theirs) { return std::min(ours, theirs); }

uint16_t keepalive_interval(uint16_t hold_time, uint16_t configured) {
  if (hold_time == 0) return 0;
  auto third = static_cast<uint16_t>(std::max(1, hold_time / 3));
  if (configured != 0 && configured < third) return configured;
  return third;
}

Duration send_hold_time(const PeerConfig& config, uint16_t hold_time) {
  if (config.send_hold.count() > 0) return config.send_hold;
  return std::max<Duration>(std::chrono::minutes(8), std::chrono::seconds(2 * uint32_t{hold_time}));
}

std::vector<Family> advertised_families(const Capabilities& caps) {
  if (caps.multiprotocol.empty()) return {codec::kIpv4Unicast};
  std::vector<Family> out;
  for (Family f : caps.multiprotocol)
    if (!has(out, f)) out.push_back(f);
  return out;
}

codec::Open our_open(const PeerConfig& config) {
  return codec::Open::make(config.local_as, config.hold_time, config.local_id, config.capabilities);
}

Result<Negotiated, Notification> negotiate(const PeerConfig& config, const codec::Open& theirs) {
  if (theirs.version != codec::kBgpVersion) {
    Notification n = refuse(codec::open_error::kUnsupportedVersion);
    n.data = {std::byte{0}, std::byte{codec::kBgpVersion}};
    return fail(std::move(n));
  }
  // RFC 6793 section 4: the capability carries the real AS; without it My
  // AS is the AS (AS_TRANS included, which then matches no configuration).
  uint32_t peer_as = theirs.as();
  if (peer_as == 0 || (config.peer_as != 0 && peer_as != config.peer_as))
    return fail(refuse(codec::open_error::kBadPeerAs));
  bool internal = peer_as == config.local_as;
  // RFC 6286 section 2.2: any non-zero value, unique within an AS.
  if (theirs.bgp_id == 0 || (internal && theirs.bgp_id == config.local_id))
    return fail(refuse(codec::open_error::kBadBgpIdentifier));
  if (theirs.hold_time == 1 || theirs.hold_time == 2)
    return fail(refuse(codec::open_error::kUnacceptableHoldTime));

  const Capabilities& ours = config.capabilities;
  const Capabilities& caps = theirs.caps;
  if (ours.role) {
    // RFC 9234 section 4.2: roles that do not fit always end the session;
    // a missing Role capability only in strict mode.
    if (caps.role ? !roles_fit(*ours.role, *caps.role) : config.strict_role)
      return fail(refuse(codec::open_error::kRoleMismatch));
  }

  std::vector<Family> common;
  for (Family f : advertised_families(caps))
    if (has(advertised_families(ours), f)) common.push_back(f);

  Capabilities miss = missing_capabilities(config, caps, common);
  if (!(miss == Capabilities{})) {
    Notification n = refuse(codec::open_error::kUnsupportedCapability);
    bytes::Writer w(n.data);
    codec::encode_capabilities(miss, w);
    return fail(std::move(n));
  }

  Negotiated neg;
  neg.peer_as = peer_as;
  neg.peer_id = theirs.bgp_id;
  neg.hold_time = negotiate_hold_time(config.hold_time, theirs.hold_time);
  neg.keepalive = keepalive_interval(neg.hold_time, config.keepalive);
  neg.all_families = common;
  for (Family f : common) neg.families.add(f);
  // Open::make always offers the 4-octet AS capability (RFC 6793 section 3).
  neg.params.four_octet_as = caps.four_octet_as.has_value();
  neg.params.extended_message = ours.extended_message && caps.extended_message;
  for (Family f : codec::kKnownFamilyList) {
    if (!neg.families.has(f)) continue;
    // RFC 7911 section 4: our Send with their Receive means we send path
    // ids; their Send with our Receive means we receive them.
    if (can_send(ours.add_path_mode(f)) && can_receive(caps.add_path_mode(f))) neg.params.add_path_send.add(f);
    if (can_receive(ours.add_path_mode(f)) && can_send(caps.add_path_mode(f))) neg.params.add_path_receive.add(f);
    // RFC 8950: both sides take IPv6 next hops for this family.
    if (ours.extended_next_hop_allowed(f, kIpv6Afi) && caps.extended_next_hop_allowed(f, kIpv6Afi))
      neg.params.extended_next_hop.add(f);
  }
  neg.route_refresh = ours.route_refresh && caps.route_refresh;
  neg.enhanced_route_refresh = ours.enhanced_route_refresh && caps.enhanced_route_refresh;
  if (ours.graceful_restart && caps.graceful_restart) {
    neg.graceful_restart = caps.graceful_restart;
    neg.graceful_notification = ours.graceful_restart->notification && caps.graceful_restart->notification;
    if (ours.long_lived_graceful_restart && caps.long_lived_graceful_restart)
      neg.long_lived_graceful_restart = caps.long_lived_graceful_restart;
  }
  neg.peer_role = caps.role;
  neg.peer_capabilities = caps;
  return neg;
}

}  // namespace petrel::fsm
