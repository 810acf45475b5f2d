// IP addresses and prefixes as small fixed-size values.
//
// An IpAddress is an IPv4 or IPv6 address in network byte order (IPv4 uses
// the first four bytes; the rest stay zero so equality and hashing work on
// the whole value). A Prefix is an address and a length with the host bits
// cleared: two prefixes that cover the same addresses compare equal.
// Text forms are the canonical ones: dotted quad for IPv4 and RFC 5952
// (lower case, longest zero run compressed, first on a tie, never a single
// zero field) for IPv6.
#pragma once

#include <array>
#include <bit>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <cstring>

namespace petrel::net {

enum class IpFamily : uint8_t { V4 = 4, V6 = 6 };

class IpAddress {
 public:
  static constexpr size_t kMaxTextLen = 46;  // "ffff:...:255.255.255.255" + margin

  constexpr IpAddress() = default;

  static IpAddress v4(uint32_t host_order) {
    IpAddress a;
    a.family_ = IpFamily::V4;
    a.bytes_[0] = static_cast<uint8_t>(host_order >> 24);
    a.bytes_[1] = static_cast<uint8_t>(host_order >> 16);
    a.bytes_[2] = static_cast<uint8_t>(host_order >> 8);
    a.bytes_[3] = static_cast<uint8_t>(host_order);
    return a;
  }
  // From network-order bytes: 4 for IPv4, 16 for IPv6.
  static IpAddress from_bytes(IpFamily f, const uint8_t* b) {
    IpAddress a;
    a.family_ = f;
    std::memcpy(a.bytes_.data(), b, width(f));
    return a;
  }
  static std::optional<IpAddress> parse(std::string_view text);

  static constexpr size_t width(IpFamily f) { return f == IpFamily::V4 ? 4 : 16; }
  static constexpr unsigned max_len(IpFamily f) { return f == IpFamily::V4 ? 32 : 128; }

  [[nodiscard]] IpFamily family() const { return family_; }
  [[nodiscard]] bool is_v4() const { return family_ == IpFamily::V4; }
  [[nodiscard]] bool is_v6() const { return family_ == IpFamily::V6; }
  [[nodiscard]] size_t size() const { return width(family_); }
  [[nodiscard]] const uint8_t* data() const { return bytes_.data(); }
  [[nodiscard]] const std::array<uint8_t, 16>& bytes() const { return bytes_; }
  [[nodiscard]] uint32_t v4_value() const {
    return (uint32_t{bytes_[0]} << 24) | (uint32_t{bytes_[1]} << 16) |
           (uint32_t{bytes_[2]} << 8) | uint32_t{bytes_[3]};
  }
  // fe80::/10
  [[nodiscard]] bool is_link_local() const {
    return is_v6() && bytes_[0] == 0xfe && (bytes_[1] & 0xc0) == 0x80;
  }
  [[nodiscard]] bool is_unspecified() const;
  [[nodiscard]] bool is_multicast() const {
    return is_v4() ? (bytes_[0] & 0xf0) == 0xe0 : bytes_[0] == 0xff;
  }

  // Writes the canonical text form at out (at least kMaxTextLen bytes) and
  // returns one past its last character. No allocation.
  char* format(char* out) const;
  [[nodiscard]] std::string to_string() const;

  friend bool operator==(const IpAddress&, const IpAddress&) = default;
  friend std::strong_ordering operator<=>(const IpAddress& a, const IpAddress& b) {
    if (auto c = a.family_ <=> b.family_; c != 0) return c;
    return a.bytes_ <=> b.bytes_;
  }

 private:
  friend class Prefix;
  std::array<uint8_t, 16> bytes_{};
  IpFamily family_ = IpFamily::V4;
};

class Prefix {
 public:
  constexpr Prefix() = default;

  // Clears host bits; nothing if len is longer than the family allows.
  // Inline: NLRI decoding builds one per prefix.
  static std::optional<Prefix> make(const IpAddress& addr, unsigned len) {
    if (len > IpAddress::max_len(addr.family())) return std::nullopt;
    Prefix p;
    p.addr_ = addr;
    p.len_ = static_cast<uint8_t>(len);
    p.clear_host_bits();
    return p;
  }
  // "192.0.2.0/24", "2001:db8::/32". Host bits set are accepted and cleared
  // unless strict, where they make the text invalid.
  enum class HostBits : uint8_t { kClear, kReject };
  static std::optional<Prefix> parse(std::string_view text, HostBits hb = HostBits::kClear);

  [[nodiscard]] const IpAddress& addr() const { return addr_; }
  [[nodiscard]] IpFamily family() const { return addr_.family(); }
  [[nodiscard]] uint8_t len() const { return len_; }
  // Bytes needed to hold len bits, as NLRI encodes them.
  [[nodiscard]] size_t wire_bytes() const { return (len_ + 7u) / 8u; }

  [[nodiscard]] bool contains(const IpAddress& a) const;
  [[nodiscard]] bool contains(const Prefix& p) const {
    return p.family() == family() && p.len_ >= len_ && contains(p.addr_);
  }

  char* format(char* out) const;  // out: at least kMaxTextLen bytes
  static constexpr size_t kMaxTextLen = IpAddress::kMaxTextLen + 4;
  [[nodiscard]] std::string to_string() const;

  friend bool operator==(const Prefix&, const Prefix&) = default;
  friend std::strong_ordering operator<=>(const Prefix& a, const Prefix& b) {
    if (auto c = a.addr_ <=> b.addr_; c != 0) return c;
    return a.len_ <=> b.len_;
  }

 private:
  // Masks the address to len_ bits, two 64-bit words at a time.
  void clear_host_bits() {
    uint64_t w[2];
    std::memcpy(w, addr_.bytes_.data(), 16);
    if constexpr (std::endian::native == std::endian::little) {
      w[0] = __builtin_bswap64(w[0]);
      w[1] = __builtin_bswap64(w[1]);
    }
    unsigned len = len_;
    uint64_t mhi = len >= 64 ? ~0ull : len == 0 ? 0 : ~0ull << (64 - len);
    uint64_t mlo = len <= 64 ? 0 : len >= 128 ? ~0ull : ~0ull << (128 - len);
    w[0] &= mhi;
    w[1] &= mlo;
    if constexpr (std::endian::native == std::endian::little) {
      w[0] = __builtin_bswap64(w[0]);
      w[1] = __builtin_bswap64(w[1]);
    }
    std::memcpy(addr_.bytes_.data(), w, 16);
  }

  IpAddress addr_;
  uint8_t len_ = 0;
};

size_t hash_value(const IpAddress& a);
size_t hash_value(const Prefix& p);

}  // namespace petrel::net

template <>
struct std::hash<petrel::net::IpAddress> {
  size_t operator()(const petrel::net::IpAddress& a) const { return petrel::net::hash_value(a); }
};
template <>
struct std::hash<petrel::net::Prefix> {
  size_t operator()(const petrel::net::Prefix& p) const { return petrel::net::hash_value(p); }
};
