// Parsing and canonical formatting of IP addresses and prefixes
// (RFC 5952 for IPv6 text).
#include "crates/net/ip.h"

#include <cstring>

namespace petrel::net {

namespace {

char* put_u8_decimal(char* out, uint8_t v) {
  if (v >= 100) {
    *out++ = static_cast<char>('0' + v / 100);
    v %= 100;
    *out++ = static_cast<char>('0' + v / 10);
    *out++ = static_cast<char>('0' + v % 10);
  } else if (v >= 10) {
    *out++ = static_cast<char>('0' + v / 10);
    *out++ = static_cast<char>('0' + v % 10);
  } else {
    *out++ = static_cast<char>('0' + v);
  }
  return out;
}

char* put_hex16(char* out, uint16_t v) {
  static constexpr char kDigits[] = "0123456789abcdef";
  bool started = false;
  for (int shift = 12; shift >= 0; shift -= 4) {
    unsigned d = (v >> shift) & 0xf;
    if (d != 0 || started || shift == 0) {
      *out++ = kDigits[d];
      started = true;
    }
  }
  return out;
}

std::optional<std::array<uint8_t, 4>> parse_v4(std::string_view s) {
  std::array<uint8_t, 4> out{};
  size_t i = 0;
  for (int part = 0; part < 4; ++part) {
    if (part > 0) {
      if (i >= s.size() || s[i] != '.') return std::nullopt;
      ++i;
    }
    size_t start = i;
    unsigned v = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9' && i - start < 3) {
      v = v * 10 + static_cast<unsigned>(s[i] - '0');
      ++i;
    }
    if (i == start || v > 255) return std::nullopt;
    if (i - start > 1 && s[start] == '0') return std::nullopt;  // no octal-looking forms
    out[static_cast<size_t>(part)] = static_cast<uint8_t>(v);
  }
  if (i != s.size()) return std::nullopt;
  return out;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::optional<std::array<uint8_t, 16>> parse_v6(std::string_view s) {
  uint16_t groups[8] = {};
  int n = 0;
  int gap = -1;  // index in groups where "::" stands
  size_t i = 0;
  if (s.size() >= 2 && s[0] == ':' && s[1] == ':') {
    gap = 0;
    i = 2;
    if (i == s.size()) return std::array<uint8_t, 16>{};
  } else if (!s.empty() && s[0] == ':') {
    return std::nullopt;
  }
  while (i < s.size()) {
    if (n >= 8) return std::nullopt;
    // An embedded IPv4 address may end the text.
    size_t end = s.find_first_of(':', i);
    std::string_view tok = s.substr(i, end == std::string_view::npos ? s.size() - i : end - i);
    if (tok.find('.') != std::string_view::npos) {
      if (end != std::string_view::npos || n > 6) return std::nullopt;
      auto v4 = parse_v4(tok);
      if (!v4) return std::nullopt;
      groups[n++] = static_cast<uint16_t>(((*v4)[0] << 8) | (*v4)[1]);
      groups[n++] = static_cast<uint16_t>(((*v4)[2] << 8) | (*v4)[3]);
      i = s.size();
      break;
    }
    if (tok.empty() || tok.size() > 4) return std::nullopt;
    unsigned v = 0;
    for (char c : tok) {
      int d = hex_digit(c);
      if (d < 0) return std::nullopt;
      v = (v << 4) | static_cast<unsigned>(d);
    }
    groups[n++] = static_cast<uint16_t>(v);
    i += tok.size();
    if (i == s.size()) break;
    // s[i] == ':'
    ++i;
    if (i < s.size() && s[i] == ':') {
      if (gap >= 0) return std::nullopt;
      gap = n;
      ++i;
    } else if (i == s.size()) {
      return std::nullopt;  // trailing single ':'
    }
  }
  if (gap < 0 && n != 8) return std::nullopt;
  if (gap >= 0 && n > 7) return std::nullopt;
  uint16_t full[8] = {};
  if (gap < 0) {
    std::memcpy(full, groups, sizeof(full));
  } else {
    int tail = n - gap;
    for (int k = 0; k < gap; ++k) full[k] = groups[k];
    for (int k = 0; k < tail; ++k) full[8 - tail + k] = groups[gap + k];
  }
  std::array<uint8_t, 16> out{};
  for (int k = 0; k < 8; ++k) {
    out[static_cast<size_t>(2 * k)] = static_cast<uint8_t>(full[k] >> 8);
    out[static_cast<size_t>(2 * k + 1)] = static_cast<uint8_t>(full[k] & 0xff);
  }
  return out;
}

}  // namespace

std::optional<IpAddress> IpAddress::parse(std::string_view text) {
  if (text.find(':') != std::string_view::npos) {
    auto b = parse_v6(text);
    if (!b) return std::nullopt;
    return from_bytes(IpFamily::V6, b->data());
  }
  auto b = parse_v4(text);
  if (!b) return std::nullopt;
  return from_bytes(IpFamily::V4, b->data());
}

bool IpAddress::is_unspecified() const {
  for (size_t i = 0; i < size(); ++i)
    if (bytes_[i] != 0) return false;
  return true;
}

char* IpAddress::format(char* out) const {
  if (is_v4()) {
    for (size_t k = 0; k < 4; ++k) {
      if (k) *out++ = '.';
      out = put_u8_decimal(out, bytes_[k]);
    }
    return out;
  }
  uint16_t g[8];
  for (size_t k = 0; k < 8; ++k)
    g[k] = static_cast<uint16_t>((bytes_[2 * k] << 8) | bytes_[2 * k + 1]);
  // RFC 5952 section 4.2: compress the longest run of two or more zero
  // fields, the first one on a tie.
  int best = -1, best_len = 0;
  for (int k = 0; k < 8;) {
    if (g[k] != 0) {
      ++k;
      continue;
    }
    int start = k;
    while (k < 8 && g[k] == 0) ++k;
    if (k - start > best_len) {
      best = start;
      best_len = k - start;
    }
  }
  if (best_len < 2) best = -1;
  // RFC 5952 section 5: IPv4-mapped addresses end in dotted quad.
  bool mapped = best == 0 && best_len == 5 && g[5] == 0xffff;
  for (int k = 0; k < 8; ++k) {
    if (k == best) {
      *out++ = ':';
      if (k == 0) *out++ = ':';
      k += best_len - 1;
      continue;
    }
    if (mapped && k == 6) {
      for (size_t j = 12; j < 16; ++j) {
        if (j > 12) *out++ = '.';
        out = put_u8_decimal(out, bytes_[j]);
      }
      break;
    }
    out = put_hex16(out, g[k]);
    if (k != 7) *out++ = ':';
  }
  return out;
}

std::string IpAddress::to_string() const {
  char buf[kMaxTextLen];
  char* end = format(buf);
  return std::string(buf, end);
}

std::optional<Prefix> Prefix::parse(std::string_view text, HostBits hb) {
  size_t slash = text.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  auto addr = IpAddress::parse(text.substr(0, slash));
  if (!addr) return std::nullopt;
  std::string_view lt = text.substr(slash + 1);
  if (lt.empty() || lt.size() > 3) return std::nullopt;
  unsigned len = 0;
  for (char c : lt) {
    if (c < '0' || c > '9') return std::nullopt;
    len = len * 10 + static_cast<unsigned>(c - '0');
  }
  if (lt.size() > 1 && lt[0] == '0') return std::nullopt;
  auto p = make(*addr, len);
  if (!p) return std::nullopt;
  if (hb == HostBits::kReject && p->addr() != *addr) return std::nullopt;
  return p;
}

bool Prefix::contains(const IpAddress& a) const {
  if (a.family() != family()) return false;
  const auto& x = a.bytes();
  const auto& y = addr_.bytes();
  size_t full = len_ / 8;
  for (size_t k = 0; k < full; ++k)
    if (x[k] != y[k]) return false;
  unsigned rem = len_ % 8;
  if (rem == 0) return true;
  auto mask = static_cast<uint8_t>(0xff << (8 - rem));
  return (x[full] & mask) == y[full];
}

char* Prefix::format(char* out) const {
  out = addr_.format(out);
  *out++ = '/';
  if (len_ >= 100) *out++ = static_cast<char>('0' + len_ / 100);
  if (len_ >= 10) *out++ = static_cast<char>('0' + (len_ / 10) % 10);
  *out++ = static_cast<char>('0' + len_ % 10);
  return out;
}

std::string Prefix::to_string() const {
  char buf[kMaxTextLen];
  char* end = format(buf);
  return std::string(buf, end);
}

size_t hash_value(const IpAddress& a) {
  // FNV-1a over the significant bytes and the family.
  uint64_t h = 1469598103934665603ull ^ static_cast<uint64_t>(a.family());
  for (size_t k = 0; k < a.size(); ++k) {
    h ^= a.data()[k];
    h *= 1099511628211ull;
  }
  return static_cast<size_t>(h);
}

size_t hash_value(const Prefix& p) {
  return hash_value(p.addr()) * 31u + p.len();
}

}  // namespace petrel::net
