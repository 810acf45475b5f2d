// Bounded byte reader and growable byte writer.
//
// Decoders read only through Reader: every read checks the remaining length
// and fails (std::nullopt / false) instead of running past the end. A
// length-delimited part becomes a sub-reader that cannot see past its own
// end. Writer appends big-endian integers and can patch a length field it
// reserved earlier. No I/O, no allocation in Reader.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace petrel::bytes {

using Span = std::span<const std::byte>;

inline Span as_bytes(std::string_view s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}
inline std::string_view as_chars(Span s) {
  return {reinterpret_cast<const char*>(s.data()), s.size()};
}

class Reader {
 public:
  Reader() = default;
  explicit Reader(Span data) : data_(data) {}

  [[nodiscard]] size_t remaining() const { return data_.size() - pos_; }
  [[nodiscard]] bool empty() const { return pos_ == data_.size(); }
  [[nodiscard]] size_t offset() const { return pos_; }
  [[nodiscard]] Span whole() const { return data_; }

  [[nodiscard]] std::optional<uint8_t> u8() {
    if (remaining() < 1) return std::nullopt;
    return std::to_integer<uint8_t>(data_[pos_++]);
  }
  [[nodiscard]] std::optional<uint16_t> u16() {
    if (remaining() < 2) return std::nullopt;
    auto v = static_cast<uint16_t>((at(0) << 8) | at(1));
    pos_ += 2;
    return v;
  }
  [[nodiscard]] std::optional<uint32_t> u32() {
    if (remaining() < 4) return std::nullopt;
    uint32_t v = (uint32_t{at(0)} << 24) | (uint32_t{at(1)} << 16) |
                 (uint32_t{at(2)} << 8) | uint32_t{at(3)};
    pos_ += 4;
    return v;
  }
  [[nodiscard]] std::optional<uint64_t> u64() {
    auto hi = u32();
    if (!hi) return std::nullopt;
    auto lo = u32();
    if (!lo) {
      pos_ -= 4;
      return std::nullopt;
    }
    return (uint64_t{*hi} << 32) | *lo;
  }
  // The next n bytes, or nothing if fewer remain (then nothing is consumed).
  [[nodiscard]] std::optional<Span> take(size_t n) {
    if (remaining() < n) return std::nullopt;
    Span s = data_.subspan(pos_, n);
    pos_ += n;
    return s;
  }
  // A reader over the next n bytes, consumed from this one.
  [[nodiscard]] std::optional<Reader> sub(size_t n) {
    auto s = take(n);
    if (!s) return std::nullopt;
    return Reader(*s);
  }
  [[nodiscard]] bool skip(size_t n) {
    if (remaining() < n) return false;
    pos_ += n;
    return true;
  }
  // Copies n bytes into out; false (and nothing consumed) if fewer remain.
  [[nodiscard]] bool copy_to(void* out, size_t n) {
    if (remaining() < n) return false;
    if (n != 0) std::memcpy(out, data_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  // Everything not yet read, consumed.
  Span rest() {
    Span s = data_.subspan(pos_);
    pos_ = data_.size();
    return s;
  }
  [[nodiscard]] Span peek_rest() const { return data_.subspan(pos_); }

 private:
  [[nodiscard]] uint8_t at(size_t i) const { return std::to_integer<uint8_t>(data_[pos_ + i]); }

  Span data_;
  size_t pos_ = 0;
};

class Writer {
 public:
  explicit Writer(std::vector<std::byte>& out) : out_(out) {}

  [[nodiscard]] size_t size() const { return out_.size(); }
  void u8(uint8_t v) { out_.push_back(std::byte{v}); }
  void u16(uint16_t v) {
    std::byte b[2] = {std::byte(v >> 8), std::byte(v & 0xff)};
    out_.insert(out_.end(), b, b + 2);
  }
  void u32(uint32_t v) {
    std::byte b[4] = {std::byte(v >> 24), std::byte((v >> 16) & 0xff),
                      std::byte((v >> 8) & 0xff), std::byte(v & 0xff)};
    out_.insert(out_.end(), b, b + 4);
  }
  void u64(uint64_t v) {
    u32(static_cast<uint32_t>(v >> 32));
    u32(static_cast<uint32_t>(v));
  }
  void bytes(Span s) { out_.insert(out_.end(), s.begin(), s.end()); }
  void raw(const void* p, size_t n) {
    auto b = static_cast<const std::byte*>(p);
    out_.insert(out_.end(), b, b + n);
  }
  void fill(std::byte v, size_t n) { out_.insert(out_.end(), n, v); }
  // Reserves n zero bytes and returns their offset, to patch later.
  size_t reserve(size_t n) {
    size_t at = out_.size();
    out_.insert(out_.end(), n, std::byte{0});
    return at;
  }
  void patch_u8(size_t at, uint8_t v) { out_[at] = std::byte{v}; }
  void patch_u16(size_t at, uint16_t v) {
    out_[at] = std::byte(v >> 8);
    out_[at + 1] = std::byte(v & 0xff);
  }
  std::vector<std::byte>& buffer() { return out_; }

 private:
  std::vector<std::byte>& out_;
};

// Hex helpers for tests, tools and logs.
std::string to_hex(Span s);
// Parses hex digits, ignoring whitespace and ':'; nullopt on any other
// character or an odd number of digits.
std::optional<std::vector<std::byte>> from_hex(std::string_view s);

}  // namespace petrel::bytes
