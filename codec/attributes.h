// Path attributes: type codes, flags, the descriptor table and the raw
// attribute walk.
//
// RFC 4271 section 4.3 (attribute header: flags, type, 1- or 2-octet
// length), 5 (well-known / optional, transitive), 6.3 (flag and length
// checks). The descriptor table is the one place that says, per attribute,
// which flags it must carry, which lengths are valid and what a
// malformation costs under RFC 7606 (sections 3, 7.x; RFC 6793 section 6
// for AS4_*, RFC 8092 section 6, RFC 9234 section 5).
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string_view>

#include "codec/rfc7606.h"
#include "codec/types.h"
#include "crates/bytes/bytes.h"

namespace petrel::codec {

namespace attr_flag {
inline constexpr uint8_t kOptional = 0x80;
inline constexpr uint8_t kTransitive = 0x40;
inline constexpr uint8_t kPartial = 0x20;
inline constexpr uint8_t kExtendedLength = 0x10;
}  // namespace attr_flag

namespace attr_type {
inline constexpr uint8_t kOrigin = 1;
inline constexpr uint8_t kAsPath = 2;
inline constexpr uint8_t kNextHop = 3;
inline constexpr uint8_t kMultiExitDisc = 4;
inline constexpr uint8_t kLocalPref = 5;
inline constexpr uint8_t kAtomicAggregate = 6;
inline constexpr uint8_t kAggregator = 7;
inline constexpr uint8_t kCommunities = 8;
inline constexpr uint8_t kOriginatorId = 9;
inline constexpr uint8_t kClusterList = 10;
inline constexpr uint8_t kMpReachNlri = 14;
inline constexpr uint8_t kMpUnreachNlri = 15;
inline constexpr uint8_t kExtendedCommunities = 16;
inline constexpr uint8_t kAs4Path = 17;
inline constexpr uint8_t kAs4Aggregator = 18;
inline constexpr uint8_t kIpv6ExtendedCommunities = 25;
inline constexpr uint8_t kLargeCommunity = 32;
inline constexpr uint8_t kOtc = 35;
}  // namespace attr_type

// How the Attribute Length is checked before the value is decoded.
enum class LengthRule : uint8_t {
  kAny,          // the decoder checks
  kFixed,        // exactly `length`
  kMultiple,     // a non-zero multiple of `length`
  kAggregator,   // 6 on a 2-octet session, 8 on a 4-octet one
};

struct AttrDescriptor {
  uint8_t type;
  std::string_view name;
  uint8_t flags;            // expected Optional and Transitive bits
  LengthRule rule;
  uint8_t length;
  ErrorAction cost;         // what a malformed value costs
  ErrorAction flags_cost;   // what wrong Optional/Transitive bits cost
  bool internal_only;       // from an external peer: discarded (7606 7.5, 7.9, 7.10)
  bool mandatory;           // well-known mandatory when NLRI is present
};

// The descriptor of a recognised attribute, or nullptr.
const AttrDescriptor* find_descriptor(uint8_t type);
// "ORIGIN", "AS_PATH", ...; "unknown" for an unrecognised type.
std::string_view attr_name(uint8_t type);

// One attribute as it is on the wire: `whole` includes the header.
struct RawAttribute {
  uint8_t flags = 0;
  uint8_t type = 0;
  bytes::Span value;
  bytes::Span whole;

  [[nodiscard]] bool optional() const { return flags & attr_flag::kOptional; }
  [[nodiscard]] bool transitive() const { return flags & attr_flag::kTransitive; }
  [[nodiscard]] bool partial() const { return flags & attr_flag::kPartial; }
};

// Reads one attribute header and value. On failure, `short_header` says
// whether fewer than 3 (or 4) octets were left (RFC 7606 section 4 second
// case) rather than a value running past the end (first case).
struct AttrReadError {
  bool short_header = false;
};
std::optional<RawAttribute> read_attribute(bytes::Reader& r, AttrReadError& err);

// Iterates the attributes of a block that has been walked once without
// error (UpdateView trims the block to its readable part).
class AttributeIterator {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = RawAttribute;
  using difference_type = std::ptrdiff_t;
  using pointer = const RawAttribute*;
  using reference = const RawAttribute&;

  AttributeIterator() = default;
  explicit AttributeIterator(bytes::Span block) : r_(block) { advance(); }

  const RawAttribute& operator*() const { return cur_; }
  const RawAttribute* operator->() const { return &cur_; }
  AttributeIterator& operator++() {
    advance();
    return *this;
  }
  friend bool operator==(const AttributeIterator& a, const AttributeIterator& b) {
    return a.done_ == b.done_;
  }

 private:
  void advance();
  bytes::Reader r_;
  RawAttribute cur_{};
  bool done_ = true;
};

class AttributeRange {
 public:
  AttributeRange() = default;
  explicit AttributeRange(bytes::Span block) : block_(block) {}
  [[nodiscard]] AttributeIterator begin() const { return AttributeIterator(block_); }
  [[nodiscard]] AttributeIterator end() const { return {}; }
  [[nodiscard]] bytes::Span bytes() const { return block_; }

 private:
  bytes::Span block_;
};

// The largest attribute value: the Extended Length form's 2-octet
// Attribute Length (RFC 4271 section 4.3).
inline constexpr size_t kMaxAttributeValue = 65535;

// Writes an attribute header with a length placeholder and returns where
// the value starts; end_attribute() patches the length, switching to the
// Extended Length form only when the value exceeds 255 octets. A value
// longer than kMaxAttributeValue cannot be written with its length: the
// whole attribute is taken back out of the writer and end_attribute()
// returns false (a length is never written wrapped). Encoders of lists
// built here (AS_PATH, communities) leave such an attribute out; code that
// must not lose one checks the result, as the canonical set's builder does.
size_t begin_attribute(bytes::Writer& w, uint8_t flags, uint8_t type);
bool end_attribute(bytes::Writer& w, size_t value_start);
// A whole attribute from a value (flags' Extended Length bit is computed).
// False, and nothing written, for a value longer than kMaxAttributeValue.
bool write_attribute(bytes::Writer& w, uint8_t flags, uint8_t type, bytes::Span value);

// Checks the Attribute Length against the table's rule.
bool length_ok(const AttrDescriptor& d, size_t len, bool four_octet_as);

}  // namespace petrel::codec
