// AS_PATH / AS4_PATH: RFC 4271 sections 4.3, 5.1.2 and 9.1.2.2, RFC 5065
// section 3, RFC 6793 sections 4.2.2 and 4.2.3, RFC 7606 section 7.2,
// RFC 7607 (AS 0).
#include "codec/as_path.h"

#include <algorithm>

#include "codec/attributes.h"
#include "codec/simple_attributes.h"

namespace petrel::codec {
namespace {

bool is_confed(SegmentType t) {
  return t == SegmentType::kConfedSequence || t == SegmentType::kConfedSet;
}

uint32_t segment_length(SegmentType t, size_t count) {
  switch (t) {
    case SegmentType::kAsSet:
      return 1;
    case SegmentType::kAsSequence:
      return static_cast<uint32_t>(count);
    case SegmentType::kConfedSequence:
    case SegmentType::kConfedSet:
      return 0;
  }
  return 0;
}

}  // namespace

std::string_view segment_type_name(SegmentType t) {
  switch (t) {
    case SegmentType::kAsSet:
      return "AS_SET";
    case SegmentType::kAsSequence:
      return "AS_SEQUENCE";
    case SegmentType::kConfedSequence:
      return "AS_CONFED_SEQUENCE";
    case SegmentType::kConfedSet:
      return "AS_CONFED_SET";
  }
  return "unknown";
}

uint32_t AsPath::length() const {
  uint32_t n = 0;
  for (const auto& s : segments) n += segment_length(s.type, s.asns.size());
  return n;
}

uint32_t AsPath::first_as() const {
  for (const auto& s : segments) {
    if (is_confed(s.type)) continue;
    return s.type == SegmentType::kAsSequence && !s.asns.empty() ? s.asns.front() : 0;
  }
  return 0;
}

Result<void, AttrError> validate_as_path(bytes::Span v, AsPathRules rules) {
  bytes::Reader r(v);
  const size_t width = static_cast<size_t>(rules.width);
  while (!r.empty()) {
    if (r.remaining() < 2) return fail(AttrError{"a lone octet after the last segment"});
    uint8_t type = *r.u8();
    uint8_t count = *r.u8();
    if (type < 1 || type > 4) return fail(AttrError{"unrecognised segment type"});
    if (count == 0) return fail(AttrError{"segment length is zero"});
    if (!rules.allow_confed && is_confed(static_cast<SegmentType>(type)))
      return fail(AttrError{"confederation segment not allowed here"});
    auto asns = r.take(size_t{count} * width);
    if (!asns) return fail(AttrError{"segment overruns the attribute"});
    AsSegmentView s{static_cast<SegmentType>(type), count, rules.width, *asns};
    for (size_t i = 0; i < count; ++i)
      if (s.at(i) == 0) return fail(AttrError{"AS number 0 (RFC 7607)"});
  }
  return {};
}

uint32_t AsSegmentView::at(size_t i) const {
  if (width == AsWidth::k2) {
    return (std::to_integer<uint32_t>(asns[2 * i]) << 8) | std::to_integer<uint32_t>(asns[2 * i + 1]);
  }
  return load_u32(asns, i);
}

void AsSegmentIterator::advance() {
  if (r_.remaining() < 2) {
    done_ = true;
    return;
  }
  uint8_t type = *r_.u8();
  uint8_t count = *r_.u8();
  auto asns = r_.take(size_t{count} * static_cast<size_t>(width_));
  if (!asns) {
    done_ = true;
    return;
  }
  cur_ = AsSegmentView{static_cast<SegmentType>(type), count, width_, *asns};
  done_ = false;
}

AsPathSummary summarize_as_path(bytes::Span validated, AsWidth w) {
  AsPathSummary s;
  bool first_seen = false;
  AsSegmentView last{};
  bool any = false;
  for (const AsSegmentView& seg : AsSegmentRange(validated, w)) {
    s.length += segment_length(seg.type, seg.count);
    if (!first_seen && !is_confed(seg.type)) {
      first_seen = true;
      if (seg.type == SegmentType::kAsSequence) s.first_as = seg.at(0);
    }
    last = seg;
    any = true;
  }
  if (any && last.type == SegmentType::kAsSequence) s.origin_as = last.at(last.count - 1u);
  return s;
}

AsPath to_as_path(bytes::Span validated, AsWidth w) {
  AsPath p;
  for (const AsSegmentView& seg : AsSegmentRange(validated, w)) {
    AsSegment s;
    s.type = seg.type;
    s.asns.reserve(seg.count);
    for (size_t i = 0; i < seg.count; ++i) s.asns.push_back(seg.at(i));
    p.segments.push_back(std::move(s));
  }
  return p;
}

Result<AsPath, AttrError> decode_as_path(bytes::Span v, AsPathRules rules) {
  if (auto ok = validate_as_path(v, rules); !ok) return fail(ok.error());
  return to_as_path(v, rules.width);
}

void encode_as_path_value(bytes::Writer& w, const AsPath& p, AsWidth width) {
  for (const auto& s : p.segments) {
    for (size_t at = 0; at < s.asns.size(); at += 255) {
      size_t n = std::min<size_t>(255, s.asns.size() - at);
      w.u8(static_cast<uint8_t>(s.type));
      w.u8(static_cast<uint8_t>(n));
      for (size_t i = at; i < at + n; ++i) {
        uint32_t as = s.asns[i];
        if (width == AsWidth::k4) {
          w.u32(as);
        } else {
          w.u16(as > 0xffff ? kAsTrans : static_cast<uint16_t>(as));
        }
      }
    }
  }
}

size_t as_path_value_size(const AsPath& p, AsWidth width) {
  size_t n = 0;
  for (const auto& s : p.segments)
    n += 2 * ((s.asns.size() + 254) / 255) + s.asns.size() * static_cast<size_t>(width);
  return n;
}

void encode_as_path(bytes::Writer& w, const AsPath& p, AsWidth width) {
  size_t at = begin_attribute(w, attr_flag::kTransitive, attr_type::kAsPath);
  encode_as_path_value(w, p, width);
  end_attribute(w, at);
}

void encode_as4_path(bytes::Writer& w, const AsPath& p) {
  size_t at = begin_attribute(w, attr_flag::kOptional | attr_flag::kTransitive, attr_type::kAs4Path);
  // RFC 6793 section 3: AS4_PATH carries no confederation segments.
  AsPath plain;
  for (const auto& s : p.segments)
    if (!is_confed(s.type)) plain.segments.push_back(s);
  encode_as_path_value(w, plain, AsWidth::k4);
  end_attribute(w, at);
}

bool needs_as4_path(const AsPath& p) {
  for (const auto& s : p.segments)
    for (uint32_t as : s.asns)
      if (as > 0xffff) return true;
  return false;
}

AsPath reconstruct_as4_path(const AsPath& as_path, const AsPath& as4_path) {
  uint32_t n2 = as_path.length();
  uint32_t n4 = as4_path.length();
  if (n2 < n4) return as_path;
  uint32_t need = n2 - n4;
  AsPath out;
  // Take the leading part of AS_PATH worth `need` ASes; confederation
  // segments come along when leading or next to a taken segment.
  bool prev_taken = true;  // a leading confederation segment is taken
  for (const auto& s : as_path.segments) {
    if (is_confed(s.type)) {
      prev_taken = prev_taken || need > 0;
      if (prev_taken) out.segments.push_back(s);
      continue;
    }
    if (need == 0) break;
    prev_taken = true;
    if (s.type == SegmentType::kAsSet) {
      out.segments.push_back(s);
      need -= 1;
      continue;
    }
    size_t take = std::min<size_t>(need, s.asns.size());
    AsSegment part{s.type, std::vector<uint32_t>(s.asns.begin(),
                                                 s.asns.begin() + static_cast<std::ptrdiff_t>(take))};
    out.segments.push_back(std::move(part));
    need -= static_cast<uint32_t>(take);
  }
  for (const auto& s : as4_path.segments) {
    if (!out.segments.empty() && s.type == SegmentType::kAsSequence &&
        out.segments.back().type == SegmentType::kAsSequence) {
      auto& b = out.segments.back().asns;
      b.insert(b.end(), s.asns.begin(), s.asns.end());
    } else {
      out.segments.push_back(s);
    }
  }
  return out;
}

}  // namespace petrel::codec
