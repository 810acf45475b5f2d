// NLRI: prefixes as they are encoded in the withdrawn routes and NLRI
// fields of an UPDATE and inside MP_REACH_NLRI / MP_UNREACH_NLRI.
//
// RFC 4271 section 4.3 (length in bits, then the fewest octets holding
// it), RFC 4760 section 5 (the same encoding for other families), RFC 7911
// section 3 (a 4-octet path identifier before each prefix when ADD-PATH is
// negotiated for the family and direction). RFC 7606 section 5.3: a
// length longer than the family allows, or a prefix running past the end
// of its field, makes the field syntactically incorrect.
//
// A field is validated once; NlriRange then yields each prefix as a
// normalised value (host bits cleared) without allocation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <span>
#include <string_view>

#include "codec/types.h"
#include "crates/bytes/bytes.h"
#include "crates/net/ip.h"
#include "crates/result/result.h"

namespace petrel::codec {

struct NlriPrefix {
  net::Prefix prefix;
  uint32_t path_id = 0;  // RFC 7911; 0 when ADD-PATH is off
  friend bool operator==(const NlriPrefix&, const NlriPrefix&) = default;
  friend auto operator<=>(const NlriPrefix&, const NlriPrefix&) = default;
};

// The IP family of a known AFI (1 and 2), used to read its prefixes.
inline net::IpFamily ip_family(Family f) {
  return f.afi == 2 ? net::IpFamily::V6 : net::IpFamily::V4;
}

struct NlriFormat {
  net::IpFamily ip = net::IpFamily::V4;
  bool add_path = false;
};

// Checks a whole field; the number of prefixes on success, a static reason
// otherwise.
Result<size_t, std::string_view> validate_nlri(bytes::Span field, NlriFormat fmt);

class NlriIterator {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = NlriPrefix;
  using difference_type = std::ptrdiff_t;
  using pointer = const NlriPrefix*;
  using reference = const NlriPrefix&;

  NlriIterator() = default;
  NlriIterator(bytes::Span field, NlriFormat fmt) : r_(field), fmt_(fmt) { advance(); }

  const NlriPrefix& operator*() const { return cur_; }
  const NlriPrefix* operator->() const { return &cur_; }
  NlriIterator& operator++() {
    advance();
    return *this;
  }
  friend bool operator==(const NlriIterator& a, const NlriIterator& b) { return a.done_ == b.done_; }

 private:
  void advance();
  bytes::Reader r_;
  NlriFormat fmt_{};
  NlriPrefix cur_{};
  bool done_ = true;
};

// The prefixes of a validated field of one family.
class NlriRange {
 public:
  NlriRange() = default;
  NlriRange(Family f, bytes::Span field, NlriFormat fmt) : family_(f), field_(field), fmt_(fmt) {}

  [[nodiscard]] NlriIterator begin() const { return {field_, fmt_}; }
  [[nodiscard]] NlriIterator end() const { return {}; }
  [[nodiscard]] bool empty() const { return field_.empty(); }
  [[nodiscard]] Family family() const { return family_; }
  [[nodiscard]] bytes::Span bytes() const { return field_; }
  [[nodiscard]] NlriFormat format() const { return fmt_; }

 private:
  Family family_{};
  bytes::Span field_;
  NlriFormat fmt_{};
};

// Octets one prefix takes on the wire.
inline size_t nlri_size(const NlriPrefix& p, bool add_path) {
  return (add_path ? 4u : 0u) + 1u + p.prefix.wire_bytes();
}
void encode_nlri(bytes::Writer& w, const NlriPrefix& p, bool add_path);
// Writes into out at pos (out must have nlri_size() octets there) and
// returns the position after it: the builder's inner loop, no reallocation.
size_t encode_nlri_at(std::span<std::byte> out, size_t pos, const NlriPrefix& p, bool add_path);

}  // namespace petrel::codec
