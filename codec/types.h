// Basic BGP values shared by every message: message types, address
// families, NOTIFICATION error codes, the negotiated session parameters the
// decoders need, and the RFC 7606 error actions.
//
// RFC 4271 section 4 (message types), 4.5 and 6 (error codes), RFC 4760
// (AFI/SAFI), RFC 7606 section 2 (error handling approaches), RFC 8654
// (extended messages), RFC 9687 (send hold timer error code).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "crates/bytes/bytes.h"

namespace petrel::codec {

inline constexpr size_t kHeaderLen = 19;
inline constexpr size_t kMarkerLen = 16;
inline constexpr size_t kMaxMessageLen = 4096;
inline constexpr size_t kMaxExtendedMessageLen = 65535;  // RFC 8654
inline constexpr uint16_t kAsTrans = 23456;              // RFC 6793

enum class MessageType : uint8_t {
  kOpen = 1,
  kUpdate = 2,
  kNotification = 3,
  kKeepalive = 4,
  kRouteRefresh = 5,
};
std::string_view message_type_name(MessageType t);

// Address family identifiers (RFC 4760; IANA registries).
enum class Afi : uint16_t { kIpv4 = 1, kIpv6 = 2, kL2vpn = 25 };
enum class Safi : uint8_t {
  kUnicast = 1,
  kMulticast = 2,
  kMplsLabel = 4,
  kMcastVpn = 5,
  kVpls = 65,
  kEvpn = 70,
  kBgpLs = 71,
  kSrTe = 73,
  kMplsVpn = 128,
  kMulticastVpn = 129,
  kRouteTarget = 132,
  kFlowspec = 133,
  kFlowspecVpn = 134,
};

struct Family {
  uint16_t afi = 0;
  uint8_t safi = 0;

  friend constexpr bool operator==(Family, Family) = default;
  friend constexpr auto operator<=>(Family a, Family b) {
    return (uint32_t{a.afi} << 8 | a.safi) <=> (uint32_t{b.afi} << 8 | b.safi);
  }
};

inline constexpr Family kIpv4Unicast{1, 1};
inline constexpr Family kIpv6Unicast{2, 1};
inline constexpr Family kIpv4Multicast{1, 2};
inline constexpr Family kIpv6Multicast{2, 2};

// The families Petrel decodes into prefixes, as a small bit set. Every other
// family is named and skipped.
inline constexpr size_t kKnownFamilies = 4;
inline constexpr std::array<Family, kKnownFamilies> kKnownFamilyList = {
    kIpv4Unicast, kIpv6Unicast, kIpv4Multicast, kIpv6Multicast};

// Index in kKnownFamilyList, or -1 for a family Petrel does not decode.
constexpr int known_index(Family f) {
  for (size_t i = 0; i < kKnownFamilies; ++i)
    if (kKnownFamilyList[i] == f) return static_cast<int>(i);
  return -1;
}

class FamilySet {
 public:
  constexpr FamilySet() = default;
  constexpr FamilySet(std::initializer_list<Family> fs) {
    for (Family f : fs) add(f);
  }
  constexpr void add(Family f) {
    if (int i = known_index(f); i >= 0) bits_ |= static_cast<uint8_t>(1u << i);
  }
  constexpr void remove(Family f) {
    if (int i = known_index(f); i >= 0) bits_ &= static_cast<uint8_t>(~(1u << i));
  }
  [[nodiscard]] constexpr bool has(Family f) const {
    int i = known_index(f);
    return i >= 0 && (bits_ >> i) & 1u;
  }
  [[nodiscard]] constexpr bool empty() const { return bits_ == 0; }
  [[nodiscard]] constexpr uint8_t bits() const { return bits_; }
  friend constexpr FamilySet operator&(FamilySet a, FamilySet b) {
    FamilySet s;
    s.bits_ = a.bits_ & b.bits_;
    return s;
  }
  friend constexpr bool operator==(FamilySet, FamilySet) = default;

 private:
  uint8_t bits_ = 0;
};

// "ipv4-unicast", "ipv6-multicast", "l2vpn-evpn", ...; "afi-N-safi-M" for
// a pair without a name. Writes into buf (at least 32 bytes).
std::string_view family_name(Family f, std::span<char, 32> buf);
// The inverse for names of known families and the named others.
bool parse_family(std::string_view name, Family& out);

// What the decoders need to know of a session: fixed at OPEN exchange.
struct SessionParams {
  bool four_octet_as = true;         // RFC 6793 negotiated by both sides
  bool extended_message = false;     // RFC 8654 negotiated by both sides
  FamilySet add_path_receive;        // RFC 7911: NLRI we receive carry path ids
  FamilySet add_path_send;           // RFC 7911: NLRI we send carry path ids
  FamilySet extended_next_hop;       // RFC 8950: IPv4 NLRI with IPv6 next hops allowed

  [[nodiscard]] size_t max_message_len() const {
    return extended_message ? kMaxExtendedMessageLen : kMaxMessageLen;
  }
};

// NOTIFICATION error codes (RFC 4271 section 4.5, RFC 7313, RFC 9687).
enum class ErrorCode : uint8_t {
  kMessageHeader = 1,
  kOpenMessage = 2,
  kUpdateMessage = 3,
  kHoldTimerExpired = 4,
  kFsm = 5,
  kCease = 6,
  kRouteRefresh = 7,
  kSendHoldTimerExpired = 8,
};
std::string_view error_code_name(ErrorCode c);
// Text for a (code, subcode) pair, "unknown" for one without a name.
std::string_view error_subcode_name(ErrorCode c, uint8_t subcode);

namespace header_error {
inline constexpr uint8_t kConnectionNotSynchronized = 1;
inline constexpr uint8_t kBadMessageLength = 2;
inline constexpr uint8_t kBadMessageType = 3;
}  // namespace header_error

namespace open_error {
inline constexpr uint8_t kUnspecific = 0;
inline constexpr uint8_t kUnsupportedVersion = 1;
inline constexpr uint8_t kBadPeerAs = 2;
inline constexpr uint8_t kBadBgpIdentifier = 3;
inline constexpr uint8_t kUnsupportedOptionalParameter = 4;
inline constexpr uint8_t kUnacceptableHoldTime = 6;
inline constexpr uint8_t kUnsupportedCapability = 7;  // RFC 5492
inline constexpr uint8_t kRoleMismatch = 11;          // RFC 9234
}  // namespace open_error

namespace update_error {
inline constexpr uint8_t kMalformedAttributeList = 1;
inline constexpr uint8_t kUnrecognizedWellKnown = 2;
inline constexpr uint8_t kMissingWellKnown = 3;
inline constexpr uint8_t kAttributeFlags = 4;
inline constexpr uint8_t kAttributeLength = 5;
inline constexpr uint8_t kInvalidOrigin = 6;
inline constexpr uint8_t kInvalidNextHop = 8;
inline constexpr uint8_t kOptionalAttribute = 9;
inline constexpr uint8_t kInvalidNetworkField = 10;
inline constexpr uint8_t kMalformedAsPath = 11;
}  // namespace update_error

namespace fsm_error {
inline constexpr uint8_t kUnspecified = 0;
inline constexpr uint8_t kUnexpectedInOpenSent = 1;     // RFC 6608
inline constexpr uint8_t kUnexpectedInOpenConfirm = 2;  // RFC 6608
inline constexpr uint8_t kUnexpectedInEstablished = 3;  // RFC 6608
}  // namespace fsm_error

namespace cease {
inline constexpr uint8_t kMaxPrefixes = 1;
inline constexpr uint8_t kAdministrativeShutdown = 2;
inline constexpr uint8_t kPeerDeconfigured = 3;
inline constexpr uint8_t kAdministrativeReset = 4;
inline constexpr uint8_t kConnectionRejected = 5;
inline constexpr uint8_t kOtherConfigurationChange = 6;
inline constexpr uint8_t kConnectionCollision = 7;
inline constexpr uint8_t kOutOfResources = 8;
inline constexpr uint8_t kHardReset = 9;  // RFC 8538
inline constexpr uint8_t kBfdDown = 10;
}  // namespace cease

namespace route_refresh_error {
inline constexpr uint8_t kInvalidMessageLength = 1;  // RFC 7313
}

// A NOTIFICATION a decoder asks for. The data is either a view into the
// bytes being decoded (valid as long as they are) or a few bytes held here,
// so the error path never allocates.
struct NotifyError {
  ErrorCode code = ErrorCode::kCease;
  uint8_t subcode = 0;
  bytes::Span view;
  std::array<std::byte, 8> inline_data{};
  uint8_t inline_len = 0;

  static NotifyError make(ErrorCode c, uint8_t sub) { return NotifyError{c, sub, {}, {}, 0}; }
  static NotifyError with_view(ErrorCode c, uint8_t sub, bytes::Span data) {
    return NotifyError{c, sub, data, {}, 0};
  }
  static NotifyError with_u8(ErrorCode c, uint8_t sub, uint8_t v) {
    NotifyError e = make(c, sub);
    e.inline_data[0] = std::byte{v};
    e.inline_len = 1;
    return e;
  }
  static NotifyError with_u16(ErrorCode c, uint8_t sub, uint16_t v) {
    NotifyError e = make(c, sub);
    e.inline_data[0] = std::byte(v >> 8);
    e.inline_data[1] = std::byte(v & 0xff);
    e.inline_len = 2;
    return e;
  }
  [[nodiscard]] bytes::Span data() const {
    if (inline_len) return bytes::Span(inline_data.data(), inline_len);
    return view;
  }
};

// RFC 7606 section 2: what a malformation costs, weakest first. The
// strongest action found in one UPDATE wins.
enum class ErrorAction : uint8_t {
  kNone = 0,
  kAttributeDiscard = 1,
  kTreatAsWithdraw = 2,
  kAfiSafiDisable = 3,
  kSessionReset = 4,
};
std::string_view error_action_name(ErrorAction a);

}  // namespace petrel::codec
