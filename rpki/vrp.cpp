// Text forms of the RPKI value types.
#include "rpki/vrp.h"

namespace petrel::rpki {

std::string to_string(const Vrp& v) {
  return v.prefix.to_string() + "-" + std::to_string(v.max_len) + " AS" + std::to_string(v.asn);
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
