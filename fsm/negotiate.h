// The checks an OPEN must pass against the configuration, and capability
// negotiation: one function from our configuration and the peer's OPEN to
// either the negotiated session or the NOTIFICATION that refuses it.
//
// RFC 4271 sections 4.2 and 6.2 (Bad Peer AS, hold time), RFC 6793 section
// 4 (AS_TRANS and the 4-octet AS capability), RFC 6286 section 2.2 (BGP
// Identifier: non-zero, and different from ours for an internal peer),
// RFC 7607 (AS 0), RFC 5492 section 5 (Unsupported Capability with the
// capability as data), RFC 4760 section 8 (families both sides have; none
// advertised means IPv4 unicast), RFC 7911 section 4 (ADD-PATH direction),
// RFC 8654, RFC 8950, RFC 2918, RFC 7313, RFC 4724, RFC 9234 section 4.2
// (roles).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "codec/capabilities.h"
#include "codec/notification.h"
#include "codec/open.h"
#include "codec/types.h"
#include "crates/result/result.h"
#include "fsm/config.h"

namespace petrel::fsm {

// Everything fixed by the OPEN exchange.
struct Negotiated {
  codec::SessionParams params;       // what the decoders and encoders need
  codec::FamilySet families;         // families both sides advertised that Petrel decodes
  std::vector<codec::Family> all_families;  // every family both advertised
  uint32_t peer_as = 0;
  uint32_t peer_id = 0;
  uint16_t hold_time = 0;            // seconds; 0: no hold timer, no keepalives
  uint16_t keepalive = 0;            // seconds; 0 when hold_time is 0
  bool route_refresh = false;        // both sides: RFC 2918
  bool enhanced_route_refresh = false;  // both sides: RFC 7313
  // The peer's graceful restart capability, when both sides sent one.
  std::optional<codec::GracefulRestart> graceful_restart;
  // RFC 8538: both sides set the N bit (so NOTIFICATIONs other than a
  // Hard Reset leave the routes with the helper; fsm/graceful.h).
  bool graceful_notification = false;
  // The peer's long-lived graceful restart capability (RFC 9494), when
  // both sides sent one and, with it, the graceful restart capability
  // (section 4.1: without that the LLGR capability is disregarded).
  std::optional<codec::LongLivedGracefulRestart> long_lived_graceful_restart;
  std::optional<codec::Role> peer_role;  // RFC 9234, as the peer sent it
  codec::Capabilities peer_capabilities; // as received, for the status page
};

// The hold time both sides use: the smaller of the two (RFC 4271 section
// 4.2), so 0 on either side switches the hold timer off.
uint16_t negotiate_hold_time(uint16_t ours, uint16_t theirs);
// Seconds between KEEPALIVEs: a third of the hold time, or the configured
// value if that is smaller; at least 1; 0 when the hold time is 0.
uint16_t keepalive_interval(uint16_t hold_time, uint16_t configured);
// RFC 9687 section 3: the configured send hold time, or by default the
// larger of 8 minutes and twice the hold time.
Duration send_hold_time(const PeerConfig& config, uint16_t hold_time);

// The families a speaker supports: those in its multiprotocol capabilities,
// or IPv4 unicast alone when it sent none (RFC 4760 section 8).
std::vector<codec::Family> advertised_families(const codec::Capabilities& caps);

// The OPEN we send for this configuration.
codec::Open our_open(const PeerConfig& config);

// Checks the peer's OPEN (already decoded, so the checks of
// codec::decode_open are done) against the configuration and negotiates.
// The error is the NOTIFICATION to send.
Result<Negotiated, codec::Notification> negotiate(const PeerConfig& config, const codec::Open& theirs);

}  // namespace petrel::fsm
