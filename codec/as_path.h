// AS_PATH and AS4_PATH (RFC 4271 sections 4.3 and 5.1.2, RFC 5065 for the
// confederation segments, RFC 6793 for 4-octet AS numbers).
//
// A path is validated once (RFC 7606 section 7.2: unknown segment type,
// zero-length segment, overrun, a lone trailing octet; confederation
// segments from an external peer; RFC 7607: AS 0) and then read lazily
// through AsSegmentRange. AsPath is the owning form used by tools, tests
// and the RFC 6793 section 4.2.3 reconstruction of a 2-octet session's
// path from AS_PATH and AS4_PATH.
#pragma once

#include <cstdint>
#include <iterator>
#include <vector>

#include "codec/rfc7606.h"
#include "crates/bytes/bytes.h"
#include "crates/result/result.h"

namespace petrel::codec {

enum class SegmentType : uint8_t {
  kAsSet = 1,
  kAsSequence = 2,
  kConfedSequence = 3,  // RFC 5065
  kConfedSet = 4,
};
std::string_view segment_type_name(SegmentType t);

enum class AsWidth : uint8_t { k2 = 2, k4 = 4 };

struct AsSegment {
  SegmentType type = SegmentType::kAsSequence;
  std::vector<uint32_t> asns;
  friend bool operator==(const AsSegment&, const AsSegment&) = default;
};

struct AsPath {
  std::vector<AsSegment> segments;
  friend bool operator==(const AsPath&, const AsPath&) = default;

  // RFC 4271 section 9.1.2.2 (a): an AS_SET counts 1, confederation
  // segments count 0 (RFC 5065 section 5.3).
  [[nodiscard]] uint32_t length() const;
  // The leftmost AS of a leading AS_SEQUENCE (the neighbour AS), or 0.
  [[nodiscard]] uint32_t first_as() const;
};

struct AsPathRules {
  AsWidth width = AsWidth::k4;
  bool allow_confed = true;   // false for an external peer's AS_PATH, and for AS4_PATH
};

// RFC 7606 section 7.2 and RFC 7607 checks.
Result<void, AttrError> validate_as_path(bytes::Span v, AsPathRules rules);

// A segment of a validated path, read in place.
struct AsSegmentView {
  SegmentType type = SegmentType::kAsSequence;
  uint8_t count = 0;
  AsWidth width = AsWidth::k4;
  bytes::Span asns;
  [[nodiscard]] uint32_t at(size_t i) const;
};

class AsSegmentIterator {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = AsSegmentView;
  using difference_type = std::ptrdiff_t;
  using pointer = const AsSegmentView*;
  using reference = const AsSegmentView&;

  AsSegmentIterator() = default;
  AsSegmentIterator(bytes::Span v, AsWidth w) : r_(v), width_(w) { advance(); }
  const AsSegmentView& operator*() const { return cur_; }
  const AsSegmentView* operator->() const { return &cur_; }
  AsSegmentIterator& operator++() {
    advance();
    return *this;
  }
  friend bool operator==(const AsSegmentIterator& a, const AsSegmentIterator& b) {
    return a.done_ == b.done_;
  }

 private:
  void advance();
  bytes::Reader r_;
  AsWidth width_ = AsWidth::k4;
  AsSegmentView cur_{};
  bool done_ = true;
};

// Segments of an already validated AS_PATH / AS4_PATH value.
class AsSegmentRange {
 public:
  AsSegmentRange() = default;
  AsSegmentRange(bytes::Span v, AsWidth w) : v_(v), w_(w) {}
  [[nodiscard]] AsSegmentIterator begin() const { return {v_, w_}; }
  [[nodiscard]] AsSegmentIterator end() const { return {}; }

 private:
  bytes::Span v_;
  AsWidth w_ = AsWidth::k4;
};

// Facts best-path selection wants, from a validated value.
struct AsPathSummary {
  uint32_t length = 0;    // RFC 4271 9.1.2.2 (a)
  uint32_t first_as = 0;  // leftmost AS of a leading AS_SEQUENCE, or 0
  uint32_t origin_as = 0; // rightmost AS of a trailing AS_SEQUENCE, or 0
};
AsPathSummary summarize_as_path(bytes::Span validated, AsWidth w);

Result<AsPath, AttrError> decode_as_path(bytes::Span v, AsPathRules rules);
AsPath to_as_path(bytes::Span validated, AsWidth w);

// Writes the value only. Segments longer than 255 ASNs are split; on a
// 2-octet width an AS above 65535 is written as AS_TRANS.
void encode_as_path_value(bytes::Writer& w, const AsPath& p, AsWidth width);
// The octets encode_as_path_value() writes. An AS_PATH attribute can carry
// at most kMaxAttributeValue of them (its Attribute Length field has 16
// bits): a 2-octet session's path widened to 4-octet AS numbers may not.
size_t as_path_value_size(const AsPath& p, AsWidth width);
// Whole attributes. A path whose value would not fit the length field is
// left out (nothing is written: see end_attribute()).
void encode_as_path(bytes::Writer& w, const AsPath& p, AsWidth width);
void encode_as4_path(bytes::Writer& w, const AsPath& p);
// Whether a 2-octet peer needs AS4_PATH to learn the true path.
bool needs_as4_path(const AsPath& p);

// RFC 6793 section 4.2.3: the path of a 2-octet session, from its AS_PATH
// and AS4_PATH (already validated, AS4_PATH without confed segments).
AsPath reconstruct_as4_path(const AsPath& as_path, const AsPath& as4_path);

}  // namespace petrel::codec
