// What the session state machine needs to know of one peer: the values the
// daemon maps its TOML configuration onto. Plain data, no parsing here.
//
// RFC 4271 section 8.1 (session attributes: ConnectRetryTime, HoldTime,
// KeepaliveTime, DelayOpen, PassiveTcpEstablishment), RFC 9687 section 3
// (SendHoldTime), RFC 5492 (capabilities we offer and those we insist on),
// RFC 9234 section 4.2 (strict role mode).
#pragma once

#include <chrono>
#include <cstdint>

#include "codec/capabilities.h"
#include "codec/types.h"
#include "crates/timing/timing.h"

namespace petrel::fsm {

// Time as the daemon hands it in: a monotonic clock in milliseconds
// (crates/timing). The FSM only compares and adds; it never reads a clock.
using Duration = timing::Duration;
using Time = timing::Time;

// Capabilities the peer must advertise; a missing one ends the OPEN
// exchange with OPEN Message Error / Unsupported Capability (RFC 5492
// section 5) carrying the capability we expected as data.
struct RequiredCapabilities {
  codec::FamilySet families;           // multiprotocol, negotiated by both
  bool four_octet_as = false;          // RFC 6793
  bool route_refresh = false;          // RFC 2918
  bool enhanced_route_refresh = false; // RFC 7313
  bool extended_message = false;       // RFC 8654
  bool graceful_restart = false;       // RFC 4724
  codec::FamilySet add_path_receive;   // the peer must be able to send path ids
  codec::FamilySet add_path_send;      // the peer must be able to receive them
  codec::FamilySet extended_next_hop;  // the peer must accept IPv6 next hops
};

struct PeerConfig {
  uint32_t local_as = 0;
  // 0 accepts any AS (a dynamic neighbour); the daemon then decides.
  uint32_t peer_as = 0;
  uint32_t local_id = 0;  // our BGP Identifier, host order

  // Seconds offered in our OPEN; 0 means no hold timer and no keepalives
  // (RFC 4271 section 4.2). 1 and 2 are not valid and the daemon rejects
  // them when it reads the configuration.
  uint16_t hold_time = 90;
  // Seconds between KEEPALIVEs; 0 means a third of the negotiated hold
  // time. A value larger than that third is lowered to it.
  uint16_t keepalive = 0;
  std::chrono::seconds connect_retry{120};
  // The hold timer while waiting for the peer's OPEN: RFC 4271 section
  // 8.2.2 suggests 4 minutes.
  std::chrono::seconds open_hold{240};
  // RFC 4271 section 8.1.1 DelayOpen: 0 is off. When on, after the TCP
  // connection comes up we wait this long for the peer's OPEN before
  // sending ours.
  std::chrono::seconds delay_open{0};
  // RFC 9687: 0 selects the default, the larger of 8 minutes and twice the
  // negotiated hold time.
  std::chrono::seconds send_hold{0};
  // PassiveTcpEstablishment: never dial, wait for the peer to connect.
  bool passive = false;

  // What we put in our OPEN. four_octet_as is filled in from local_as.
  codec::Capabilities capabilities;
  RequiredCapabilities required;
  // RFC 9234 strict mode: a peer that sends no Role capability is refused
  // with Role Mismatch. Only meaningful when capabilities.role is set.
  bool strict_role = false;

  [[nodiscard]] bool internal() const { return peer_as != 0 && peer_as == local_as; }
};

}  // namespace petrel::fsm
