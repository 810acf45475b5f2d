// The values RPKI origin validation works on: a Validated ROA Payload (VRP)
// and a BGPsec router key, as the RTR protocol delivers them, and the three
// validation states of RFC 6811 section 2.
//
// A Vrp is a prefix (host bits cleared), a maximum length and an origin AS.
// A RouterKey is kept as received (RFC 8210 section 5.10); Petrel does not
// do BGPsec path validation yet.
#pragma once

#include <array>
#include <compare>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "crates/net/ip.h"

namespace petrel::rpki {

struct Vrp {
  net::Prefix prefix;
  uint8_t max_len = 0;
  uint32_t asn = 0;

  friend bool operator==(const Vrp&, const Vrp&) = default;
  friend std::strong_ordering operator<=>(const Vrp&, const Vrp&) = default;
};

// "192.0.2.0/24-24 AS64496"
std::string to_string(const Vrp& v);

struct RouterKey {
  std::array<uint8_t, 20> ski{};  // Subject Key Identifier
  uint32_t asn = 0;
  std::vector<uint8_t> spki;      // Subject Public Key Info, DER as received

  friend bool operator==(const RouterKey&, const RouterKey&) = default;
  friend auto operator<=>(const RouterKey&, const RouterKey&) = default;
};

// RFC 6811 section 2.
enum class Validity : uint8_t { kNotFound, kValid, kInvalid };
std::string_view validity_name(Validity v);

// RFC 6811 section 2 word for word, by a scan of every VRP: covered,
// matched, else not found (nullopt origin: NONE; a VRP for AS 0 matches
// nothing). O(VRPs) a route: the reference that tests and the fuzz
// target hold VrpTable to, not for the daemon's lookups.
Validity validate_by_scan(std::span<const Vrp> vrps, const net::Prefix& route, std::optional<uint32_t> origin);

}  // namespace petrel::rpki
