// Hex conversion for the byte crate.
#include "crates/bytes/bytes.h"

#include <string>

namespace petrel::bytes {

std::string to_hex(Span s) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.resize(s.size() * 2);
  for (size_t i = 0; i < s.size(); ++i) {
    auto b = std::to_integer<uint8_t>(s[i]);
    out[2 * i] = kDigits[b >> 4];
    out[2 * i + 1] = kDigits[b & 0xf];
  }
  return out;
}

static int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::optional<std::vector<std::byte>> from_hex(std::string_view s) {
  std::vector<std::byte> out;
  out.reserve(s.size() / 2);
  int hi = -1;
  for (char c : s) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ':') continue;
    int v = hex_value(c);
    if (v < 0) return std::nullopt;
    if (hi < 0) {
      hi = v;
    } else {
      out.push_back(std::byte(static_cast<uint8_t>((hi << 4) | v)));
      hi = -1;
    }
  }
  if (hi >= 0) return std::nullopt;
  return out;
}

}  // namespace petrel::bytes
