// BGP capabilities: the values carried in the OPEN's Capabilities optional
// parameter, decoded into one struct and encoded back.
//
// RFC 5492 (capabilities advertisement), RFC 4760 section 8 (multiprotocol),
// RFC 2918 (route refresh; the pre-standard code 128 is accepted too),
// RFC 7313 (enhanced route refresh), RFC 6793 (4-octet AS), RFC 7911
// section 4 (ADD-PATH), RFC 8950 section 3 (extended next hop), RFC 8654
// (extended message), RFC 4724 section 3 and RFC 8538 (graceful restart and
// its N bit), RFC 9494 (long-lived graceful restart), RFC 9234 section 4.1
// (BGP role), draft-walton-bgp-hostname-capability (FQDN, code 73).
//
// Repeated capabilities are merged: list capabilities (multiprotocol,
// ADD-PATH, extended next hop, LLGR families) append; for graceful restart
// and single values (4-octet AS, hostname) the last one wins (RFC 4724
// section 3: a receiver ignores all but the last graceful restart
// capability). The encoder splits a list that does not fit in one
// capability's 255 octets into several capabilities of the same code
// (graceful restart excepted: it is one capability of at most
// kMaxGracefulRestartFamilies entries), so encode then decode is the
// identity.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "codec/types.h"
#include "crates/bytes/bytes.h"
#include "crates/result/result.h"

namespace petrel::codec {

// Capability codes (IANA "Capability Codes" registry).
namespace cap_code {
inline constexpr uint8_t kMultiprotocol = 1;           // RFC 4760
inline constexpr uint8_t kRouteRefresh = 2;            // RFC 2918
inline constexpr uint8_t kExtendedNextHop = 5;         // RFC 8950
inline constexpr uint8_t kExtendedMessage = 6;         // RFC 8654
inline constexpr uint8_t kRole = 9;                    // RFC 9234
inline constexpr uint8_t kGracefulRestart = 64;        // RFC 4724
inline constexpr uint8_t kFourOctetAs = 65;            // RFC 6793
inline constexpr uint8_t kAddPath = 69;                // RFC 7911
inline constexpr uint8_t kEnhancedRouteRefresh = 70;   // RFC 7313
inline constexpr uint8_t kLongLivedGracefulRestart = 71;  // RFC 9494
inline constexpr uint8_t kFqdn = 73;                   // draft-walton-bgp-hostname
inline constexpr uint8_t kRouteRefreshOld = 128;       // pre-RFC 2918 (Cisco)
}  // namespace cap_code

// RFC 7911 section 4: Send/Receive. A value other than 1..3 makes the whole
// ADD-PATH capability "not understood": it is kept in `unknown`.
enum class AddPathMode : uint8_t { kReceive = 1, kSend = 2, kBoth = 3 };

struct AddPathFamily {
  Family family;
  AddPathMode mode = AddPathMode::kBoth;
  friend bool operator==(const AddPathFamily&, const AddPathFamily&) = default;
};

// RFC 8950 section 3: NLRI of `family` may carry a next hop of
// `next_hop_afi`. (The wire NLRI SAFI is 2 octets; one above 255 makes the
// capability "not understood": it is kept in `unknown`.)
struct ExtendedNextHop {
  Family family;
  uint16_t next_hop_afi = 0;
  friend bool operator==(const ExtendedNextHop&, const ExtendedNextHop&) = default;
};

// RFC 4724 section 3 with the N bit of RFC 8538 section 2.
struct GracefulRestart {
  struct PerFamily {
    Family family;
    bool forwarding_preserved = false;  // the F bit
    friend bool operator==(const PerFamily&, const PerFamily&) = default;
  };
  bool restarting = false;      // the R bit
  bool notification = false;    // the N bit (RFC 8538)
  uint16_t restart_time = 0;    // seconds, 12 bits
  std::vector<PerFamily> families;
  friend bool operator==(const GracefulRestart&, const GracefulRestart&) = default;
};

// The entries one graceful restart capability holds: (255 - 2) / 4.
inline constexpr size_t kMaxGracefulRestartFamilies = 63;

// RFC 9494 section 3.
struct LongLivedGracefulRestart {
  struct PerFamily {
    Family family;
    bool forwarding_preserved = false;  // the F bit
    uint32_t stale_time = 0;            // seconds, 24 bits
    friend bool operator==(const PerFamily&, const PerFamily&) = default;
  };
  std::vector<PerFamily> families;
  friend bool operator==(const LongLivedGracefulRestart&, const LongLivedGracefulRestart&) = default;
};

// RFC 9234 section 4.1. Other values are representable (and not an error
// for the codec); the FSM decides what to do with them.
enum class Role : uint8_t { kProvider = 0, kRouteServer = 1, kRsClient = 2, kCustomer = 3, kPeer = 4 };

// draft-walton-bgp-hostname-capability: each at most 255 octets on the wire.
struct Fqdn {
  std::string hostname;
  std::string domain;
  friend bool operator==(const Fqdn&, const Fqdn&) = default;
};

struct UnknownCapability {
  uint8_t code = 0;
  std::vector<std::byte> value;
  friend bool operator==(const UnknownCapability&, const UnknownCapability&) = default;
};

struct Capabilities {
  std::vector<Family> multiprotocol;     // in order received, duplicates kept
  bool route_refresh = false;            // code 2 or code 128
  bool route_refresh_old = false;        // code 128 was (or is to be) sent
  bool enhanced_route_refresh = false;
  std::optional<uint32_t> four_octet_as;
  std::vector<AddPathFamily> add_path;
  std::vector<ExtendedNextHop> extended_next_hop;
  bool extended_message = false;
  std::optional<GracefulRestart> graceful_restart;
  std::optional<LongLivedGracefulRestart> long_lived_graceful_restart;
  std::optional<Role> role;
  std::optional<Fqdn> fqdn;
  std::vector<UnknownCapability> unknown;  // in order received

  friend bool operator==(const Capabilities&, const Capabilities&) = default;

  // Pure set operations for negotiation (which the FSM does).
  [[nodiscard]] bool has_family(Family f) const;
  // The advertised multiprotocol families Petrel decodes.
  [[nodiscard]] FamilySet families() const;
  // The ADD-PATH mode advertised for f, if any (the last entry wins).
  [[nodiscard]] std::optional<AddPathMode> add_path_mode(Family f) const;
  // Whether IPv4/IPv6 NLRI of f may carry a next hop of next_hop_afi.
  [[nodiscard]] bool extended_next_hop_allowed(Family f, uint16_t next_hop_afi) const;
};

// Decodes the capabilities in one Capabilities optional parameter's value
// (a sequence of code, length, value) and merges them into `into`. A
// malformed known capability or a truncated TLV is an OPEN Message Error
// (subcode 0, Unspecific; data: the offending capability's bytes). Two BGP
// Role capabilities with different values are a Role Mismatch (RFC 9234
// section 4.2).
Result<void, NotifyError> decode_capabilities(bytes::Span value, Capabilities& into);

// Appends the capabilities as a sequence of code, length, value (the value
// of one Capabilities optional parameter; no parameter header).
void encode_capabilities(const Capabilities& caps, bytes::Writer& w);

}  // namespace petrel::codec
