// Community attributes: COMMUNITIES (RFC 1997), EXTENDED_COMMUNITIES
// (RFC 4360), IPv6 Address Specific Extended Community (RFC 5701) and
// LARGE_COMMUNITY (RFC 8092).
//
// Each is a list of fixed-size values; a length that is not a non-zero
// multiple of the value size is malformed (RFC 7606 sections 7.8, 7.14,
// 7.15; RFC 8092 section 6) and costs treat-as-withdraw.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "codec/rfc7606.h"
#include "crates/bytes/bytes.h"
#include "crates/result/result.h"

namespace petrel::codec {

namespace community {
inline constexpr uint32_t kNoExport = 0xFFFFFF01;
inline constexpr uint32_t kNoAdvertise = 0xFFFFFF02;
inline constexpr uint32_t kNoExportSubconfed = 0xFFFFFF03;
inline constexpr uint32_t kGracefulShutdown = 0xFFFF0000;  // RFC 8326
inline constexpr uint32_t kBlackhole = 0xFFFF029A;         // RFC 7999
inline constexpr uint32_t kLlgrStale = 0xFFFF0006;         // RFC 9494 section 3.2 (65535:6)
inline constexpr uint32_t kNoLlgr = 0xFFFF0007;            // RFC 9494 section 3.3 (65535:7)
}  // namespace community

// An extended community: type, sub-type and six octets, as one number in
// wire order (RFC 4360 section 2).
struct ExtCommunity {
  uint64_t value = 0;
  [[nodiscard]] uint8_t type() const { return static_cast<uint8_t>(value >> 56); }
  [[nodiscard]] uint8_t subtype() const { return static_cast<uint8_t>(value >> 48); }
  friend bool operator==(ExtCommunity, ExtCommunity) = default;
};

// RFC 5701: type, sub-type, an IPv6 global administrator, a 2-octet local
// administrator.
struct Ipv6ExtCommunity {
  uint8_t type = 0;
  uint8_t subtype = 0;
  std::array<uint8_t, 16> global{};
  uint16_t local = 0;
  friend bool operator==(const Ipv6ExtCommunity&, const Ipv6ExtCommunity&) = default;
};

struct LargeCommunity {
  uint32_t global = 0;
  uint32_t local1 = 0;
  uint32_t local2 = 0;
  friend bool operator==(const LargeCommunity&, const LargeCommunity&) = default;
};

// Length checks only (the values need no further validation).
Result<void, AttrError> check_communities(bytes::Span v);
Result<void, AttrError> check_ext_communities(bytes::Span v);
Result<void, AttrError> check_ipv6_ext_communities(bytes::Span v);
Result<void, AttrError> check_large_communities(bytes::Span v);

Result<std::vector<uint32_t>, AttrError> decode_communities(bytes::Span v);
Result<std::vector<ExtCommunity>, AttrError> decode_ext_communities(bytes::Span v);
Result<std::vector<Ipv6ExtCommunity>, AttrError> decode_ipv6_ext_communities(bytes::Span v);
Result<std::vector<LargeCommunity>, AttrError> decode_large_communities(bytes::Span v);

// Whole attributes. An empty list writes nothing (an empty attribute would
// be malformed).
void encode_communities(bytes::Writer& w, std::span<const uint32_t> c);
void encode_ext_communities(bytes::Writer& w, std::span<const ExtCommunity> c);
void encode_ipv6_ext_communities(bytes::Writer& w, std::span<const Ipv6ExtCommunity> c);
void encode_large_communities(bytes::Writer& w, std::span<const LargeCommunity> c);

// Whether a validated COMMUNITIES value holds c (no allocation).
bool has_community(bytes::Span validated, uint32_t c);

}  // namespace petrel::codec
