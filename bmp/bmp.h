// BMP, the BGP Monitoring Protocol (RFC 7854), with the Loc-RIB peer of
// RFC 9069: the messages a monitored router sends its stations, as bytes.
// Part of bmp/, a pure module: no I/O, no clock (the caller passes the
// time in every per-peer header); it includes codec/ and crates/ only.
//
// Every function appends one or more whole messages (common header
// included, RFC 7854 section 4.1) to `out`. The daemon's client
// (daemon/bmp.cpp) decides what to send when; docs/bmp.md says what an
// operator sees.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "codec/attribute_set.h"
#include "codec/nlri.h"
#include "codec/types.h"
#include "crates/bytes/bytes.h"
#include "crates/net/ip.h"
#include "crates/result/result.h"

namespace petrel::bmp {

inline constexpr uint8_t kVersion = 3;
inline constexpr size_t kCommonHeaderLen = 6;
inline constexpr size_t kPerPeerHeaderLen = 42;

// RFC 7854 section 4.1.
enum class MessageType : uint8_t {
  kRouteMonitoring = 0,
  kStatisticsReport = 1,
  kPeerDown = 2,
  kPeerUp = 3,
  kInitiation = 4,
  kTermination = 5,
  kRouteMirroring = 6,
};

// RFC 7854 section 4.2; RFC 9069 (Loc-RIB).
enum class PeerType : uint8_t {
  kGlobal = 0,
  kRouteDistinguisher = 1,
  kLocal = 2,
  kLocRib = 3,
};

// Per-peer header flags (RFC 7854 section 4.2, RFC 8671 for O). For a
// Loc-RIB peer the first bit is F instead (RFC 9069).
inline constexpr uint8_t kFlagV = 0x80;  // the peer address is IPv6
inline constexpr uint8_t kFlagL = 0x40;  // post-policy Adj-RIB-In
inline constexpr uint8_t kFlagA = 0x20;  // legacy 2-octet AS_PATH
inline constexpr uint8_t kFlagO = 0x10;  // Adj-RIB-Out (RFC 8671)
inline constexpr uint8_t kFlagF = 0x80;  // Loc-RIB: filtered (RFC 9069)

struct PeerHeader {
  PeerType type = PeerType::kGlobal;
  // The flags but V, which follows from the address (kFlagL, kFlagA, ...).
  uint8_t flags = 0;
  uint64_t distinguisher = 0;
  // Unset (default-constructed IPv4 0.0.0.0) for a Loc-RIB peer: zeros.
  net::IpAddress address;
  uint32_t as = 0;
  uint32_t bgp_id = 0;  // host order
  uint32_t seconds = 0;  // since the epoch; 0: unknown
  uint32_t micros = 0;
};

// Information TLV types (RFC 7854 section 4.4, RFC 9069).
namespace info {
inline constexpr uint16_t kString = 0;
inline constexpr uint16_t kSysDescr = 1;
inline constexpr uint16_t kSysName = 2;
inline constexpr uint16_t kTableName = 3;  // RFC 9069: VRF/Table Name
}  // namespace info

struct InfoTlv {
  uint16_t type = 0;
  std::string_view value;  // cut at 65535 octets
};

// Peer Down reasons (RFC 7854 section 4.9, RFC 9069).
enum class DownReason : uint8_t {
  kLocalNotification = 1,    // data: the NOTIFICATION we sent
  kLocalNoNotification = 2,  // data: the FSM event code (2 octets)
  kRemoteNotification = 3,   // data: the NOTIFICATION received
  kRemoteNoNotification = 4,  // no data: the peer closed
  kDeconfigured = 5,          // no data
  kLocalSystemClosed = 6,     // RFC 9069: TLVs follow (Loc-RIB)
};

// Termination reasons (RFC 7854 section 4.5).
enum class TerminationReason : uint16_t {
  kAdministrativelyClosed = 0,
  kUnspecified = 1,
  kOutOfResources = 2,
  kRedundantConnection = 3,
  kPermanentlyClosed = 4,
};

// Statistics types (RFC 7854 section 4.8).
namespace stat {
inline constexpr uint16_t kRejectedByPolicy = 0;
inline constexpr uint16_t kDuplicatePrefixes = 1;
inline constexpr uint16_t kDuplicateWithdraws = 2;
inline constexpr uint16_t kClusterListLoops = 3;
inline constexpr uint16_t kAsPathLoops = 4;
inline constexpr uint16_t kOriginatorIdLoops = 5;
inline constexpr uint16_t kConfedLoops = 6;
inline constexpr uint16_t kAdjRibInRoutes = 7;  // 64-bit gauge
inline constexpr uint16_t kLocRibRoutes = 8;    // 64-bit gauge
inline constexpr uint16_t kAdjRibInRoutesPerFamily = 9;  // AFI, SAFI, 64-bit gauge
inline constexpr uint16_t kLocRibRoutesPerFamily = 10;   // AFI, SAFI, 64-bit gauge
inline constexpr uint16_t kTreatAsWithdrawUpdates = 11;
inline constexpr uint16_t kTreatAsWithdrawPrefixes = 12;
inline constexpr uint16_t kDuplicateUpdates = 13;
}  // namespace stat

// One statistic. Types 7 and 8 are 64-bit gauges, 9 and 10 the same per
// family, the others 32-bit counters (a larger value is written as its
// low 32 bits: counters wrap, RFC 7854 section 4.8).
struct Stat {
  uint16_t type = 0;
  uint64_t value = 0;
  codec::Family family{};  // types 9 and 10 only
};

// The common header alone, for a message whose body (`body_len` octets)
// the caller appends.
void common_header(MessageType type, size_t body_len, std::vector<std::byte>& out);
void per_peer_header(const PeerHeader& h, std::vector<std::byte>& out);

// Initiation (section 4.3): sysDescr, sysName and any other TLVs.
void initiation(std::span<const InfoTlv> tlvs, std::vector<std::byte>& out);
// Termination (section 4.5): a reason TLV and, if not empty, a string.
void termination(TerminationReason reason, std::string_view text, std::vector<std::byte>& out);

// Peer Up (section 4.10): the session's local address and ports and the
// two OPEN messages whole (header included), then information TLVs.
struct PeerUp {
  net::IpAddress local_address;
  uint16_t local_port = 0;
  uint16_t remote_port = 0;
  bytes::Span sent_open;
  bytes::Span received_open;
  std::span<const InfoTlv> tlvs;
};
void peer_up(const PeerHeader& h, const PeerUp& up, std::vector<std::byte>& out);

// Peer Down (section 4.9). `data`: the NOTIFICATION message whole for
// reasons 1 and 3, the FSM event code's 2 octets for reason 2, the TLVs
// (encoded by info_tlvs) for reason 6, nothing otherwise.
void peer_down(const PeerHeader& h, DownReason reason, bytes::Span data, std::vector<std::byte>& out);
// TLVs as Initiation and Peer Up carry them, for peer_down's data.
void info_tlvs(std::span<const InfoTlv> tlvs, std::vector<std::byte>& out);

// Route Monitoring (section 4.6) of one BGP UPDATE message, whole.
void route_monitoring(const PeerHeader& h, bytes::Span update, std::vector<std::byte>& out);

// Route Monitoring of routes as UPDATEs codec::UpdateBuilder packs with
// `params` (the monitored session's: AS width, path identifiers where it
// sends them as the collector will read them from its OPENs): one
// message per UPDATE, withdrawals first. An attribute set too large for a
// 4096-octet UPDATE goes in an extended one (RFC 8654). The error is the
// builder's.
Result<size_t, std::string_view> route_monitoring(const PeerHeader& h, codec::Family f,
                                                  const codec::AttributeSet* attrs,
                                                  std::span<const codec::NlriPrefix> announce,
                                                  std::span<const codec::NlriPrefix> withdraw,
                                                  codec::SessionParams params, std::vector<std::byte>& out);

// Statistics Report (section 4.8).
void statistics(const PeerHeader& h, std::span<const Stat> stats, std::vector<std::byte>& out);

}  // namespace petrel::bmp
