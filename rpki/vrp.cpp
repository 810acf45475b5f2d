// Text forms of the RPKI value types, and RFC 6811's plain definition.
#include "rpki/vrp.h"

namespace petrel::rpki {

std::string to_string(const Vrp& v) {
  return v.prefix.to_string() + "-" + std::to_string(v.max_len) + " AS" + std::to_string(v.asn);
}

Validity validate_by_scan(std::span<const Vrp> vrps, const net::Prefix& route, std::optional<uint32_t> origin) {
  bool covered = false;
  for (const Vrp& v : vrps) {
    if (!v.prefix.contains(route)) continue;
    covered = true;
    if (origin && *origin != 0 && v.asn == *origin && route.len() <= v.max_len) return Validity::kValid;
  }
  return covered ? Validity::kInvalid : Validity::kNotFound;
}

std::string_view validity_name(Validity v) {
  switch (v) {
    case Validity::kNotFound: return "not-found";
    case Validity::kValid: return "valid";
    case Validity::kInvalid: return "invalid";
  }
  return "?";
}

}  // namespace petrel::rpki
