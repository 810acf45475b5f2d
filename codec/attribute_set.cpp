// Canonical attribute sets: building them from an UPDATE (RFC 6793
// section 4.2.3 folding, RFC 4271 section 5 Partial bit, RFC 4760 section
// 3 NEXT_HOP only with classic NLRI) or from owned values, and extracting
// the fields of RFC 4271 section 9.1.2.2.
#include "codec/attribute_set.h"

#include <algorithm>
#include <cassert>

#include "codec/update.h"

namespace petrel::codec {
namespace {

constexpr uint8_t kFlagBits = attr_flag::kOptional | attr_flag::kTransitive | attr_flag::kPartial;

// Sorts a block of attributes by type code (stable). A block already in
// order, the usual case (MP_REACH_NLRI placed first by RFC 7606 section
// 5.1 is the common exception), is left as it is, with no second copy.
void sort_attributes(std::vector<std::byte>& block) {
  std::array<RawAttribute, 64> small{};
  std::vector<RawAttribute> many;
  size_t n = 0;
  for (const RawAttribute& a : AttributeRange(block)) {
    if (n < small.size()) {
      small[n++] = a;
    } else {
      if (many.empty()) many.assign(small.begin(), small.end());
      many.push_back(a);
    }
  }
  std::span<RawAttribute> list = many.empty() ? std::span<RawAttribute>(small.data(), n)
                                              : std::span<RawAttribute>(many);
  auto by_type = [](const RawAttribute& x, const RawAttribute& y) { return x.type < y.type; };
  if (std::is_sorted(list.begin(), list.end(), by_type)) return;
  std::stable_sort(list.begin(), list.end(), by_type);
  std::vector<std::byte> out;
  out.reserve(block.size());
  bytes::Writer w(out);
  for (const RawAttribute& a : list)
    write_attribute(w, static_cast<uint8_t>(a.flags & kFlagBits), a.type, a.value);
  block.swap(out);
}

void write_mp_next_hop_only(bytes::Writer& w, Family f, const NextHop& nh) {
  size_t at = begin_attribute(w, attr_flag::kOptional, attr_type::kMpReachNlri);
  w.u16(f.afi);
  w.u8(f.safi);
  encode_next_hop_field(w, nh);
  w.u8(0);
  end_attribute(w, at);
}

}  // namespace

AttributeSet AttributeSet::from(const PathAttributes& a) {
  std::vector<std::byte> tmp;
  bytes::Writer w(tmp);
  if (a.origin) encode_origin(w, *a.origin);
  if (a.as_path) encode_as_path(w, *a.as_path, AsWidth::k4);
  if (a.next_hop) encode_next_hop(w, *a.next_hop);
  if (a.med) encode_med(w, *a.med);
  if (a.local_pref) encode_local_pref(w, *a.local_pref);
  if (a.atomic_aggregate) encode_atomic_aggregate(w);
  if (a.aggregator) encode_aggregator(w, *a.aggregator, true);
  encode_communities(w, a.communities);
  if (a.originator_id) encode_originator_id(w, *a.originator_id);
  encode_cluster_list(w, a.cluster_list);
  if (a.mp_family && a.mp_next_hop) write_mp_next_hop_only(w, *a.mp_family, *a.mp_next_hop);
  encode_ext_communities(w, a.ext_communities);
  encode_ipv6_ext_communities(w, a.ipv6_ext_communities);
  encode_large_communities(w, a.large_communities);
  if (a.otc) encode_otc(w, *a.otc);
  for (const auto& u : a.unknown) write_attribute(w, u.flags, u.type, u.value);
  AttributeSet s;
  if (!a.unknown.empty()) sort_attributes(tmp);
  s.wire_ = std::move(tmp);
  if (a.partial) {
    for (const RawAttribute& x : AttributeRange(s.wire_)) {
      if (x.type < 64 && ((a.partial >> x.type) & 1u) && x.optional() && x.transitive()) {
        auto at = static_cast<size_t>(x.whole.data() - s.wire_.data());
        s.wire_[at] |= std::byte{attr_flag::kPartial};
      }
    }
  }
  bool ok = s.extract();
  (void)ok;
  return s;
}

Result<AttributeSet, std::string_view> AttributeSet::from_canonical(bytes::Span wire) {
  AttributeSet s;
  s.wire_.assign(wire.begin(), wire.end());
  if (!s.extract()) return fail(std::string_view("not a valid attribute set"));
  return s;
}

bool AttributeSet::extract() {
  bytes::Reader r(wire_);
  while (!r.empty()) {
    AttrReadError err;
    auto a = read_attribute(r, err);
    if (!a) return false;
    const bytes::Span v = a->value;
    auto offset = [&] { return static_cast<uint32_t>(v.data() - wire_.data()); };
    switch (a->type) {
      case attr_type::kOrigin: {
        auto o = decode_origin(v);
        if (!o) return false;
        origin_ = *o;
        break;
      }
      case attr_type::kAsPath:
        if (!validate_as_path(v, {AsWidth::k4, true})) return false;
        path_ = summarize_as_path(v, AsWidth::k4);
        as_path_at_ = offset();
        as_path_len_ = static_cast<uint32_t>(v.size());
        break;
      case attr_type::kNextHop: {
        auto n = decode_next_hop(v);
        if (!n) return false;
        next_hop_ = *n;
        break;
      }
      case attr_type::kMultiExitDisc:
        if (auto x = decode_med(v)) med_ = *x; else return false;
        break;
      case attr_type::kLocalPref:
        if (auto x = decode_local_pref(v)) local_pref_ = *x; else return false;
        break;
      case attr_type::kAtomicAggregate:
        atomic_aggregate_ = true;
        break;
      case attr_type::kCommunities:
        if (!check_communities(v)) return false;
        communities_at_ = offset();
        communities_len_ = static_cast<uint32_t>(v.size());
        break;
      case attr_type::kOriginatorId:
        if (auto x = decode_originator_id(v)) originator_id_ = *x; else return false;
        break;
      case attr_type::kClusterList:
        if (!check_cluster_list(v)) return false;
        cluster_list_len_ = static_cast<uint32_t>(v.size() / 4);
        break;
      case attr_type::kMpReachNlri: {
        bytes::Reader m(v);
        auto afi = m.u16();
        auto safi = m.u8();
        auto len = m.u8();
        if (!afi || !safi || !len) return false;
        auto nh = m.take(*len);
        if (!nh) return false;
        Family f{*afi, *safi};
        auto hop = decode_mp_next_hop(f, *nh, true);
        if (!hop) return false;
        mp_family_ = f;
        mp_next_hop_ = *hop;
        break;
      }
      case attr_type::kOtc:
        if (auto x = decode_otc(v)) otc_ = *x; else return false;
        break;
      default:
        break;
    }
  }
  return true;
}

bytes::Span AttributeSet::as_path() const {
  return bytes::Span(wire_).subspan(as_path_at_, as_path_len_);
}

bytes::Span AttributeSet::communities() const {
  return bytes::Span(wire_).subspan(communities_at_, communities_len_);
}

bool AttributeSet::has_community(uint32_t c) const { return codec::has_community(communities(), c); }

PathAttributes AttributeSet::decode() const {
  PathAttributes p;
  p.origin = origin_;
  p.next_hop = next_hop_;
  p.med = med_;
  p.local_pref = local_pref_;
  p.atomic_aggregate = atomic_aggregate_;
  p.originator_id = originator_id_;
  p.otc = otc_;
  p.mp_family = mp_family_;
  p.mp_next_hop = mp_next_hop_;
  for (const RawAttribute& a : attributes()) {
    const bytes::Span v = a.value;
    switch (a.type) {
      case attr_type::kAsPath:
        p.as_path = to_as_path(v, AsWidth::k4);
        break;
      case attr_type::kAggregator:
        if (auto g = decode_aggregator(v, true)) p.aggregator = *g;
        break;
      case attr_type::kCommunities:
        if (auto c = decode_communities(v)) p.communities = *c;
        break;
      case attr_type::kClusterList:
        if (auto c = decode_cluster_list(v)) p.cluster_list = *c;
        break;
      case attr_type::kExtendedCommunities:
        if (auto c = decode_ext_communities(v)) p.ext_communities = *c;
        break;
      case attr_type::kIpv6ExtendedCommunities:
        if (auto c = decode_ipv6_ext_communities(v)) p.ipv6_ext_communities = *c;
        break;
      case attr_type::kLargeCommunity:
        if (auto c = decode_large_communities(v)) p.large_communities = *c;
        break;
      default:
        break;
    }
    if (find_descriptor(a.type)) {
      if (a.partial() && a.type < 64) p.partial |= uint64_t{1} << a.type;
    } else {
      p.unknown.push_back({static_cast<uint8_t>(a.flags & kFlagBits), a.type,
                           std::vector<std::byte>(v.begin(), v.end())});
    }
  }
  return p;
}

// Lives here rather than in update.cpp: it is the canonical form's builder.
// Every attribute written is checked to fit its length field (a widened
// AS_PATH may not); one that does not fails the whole set.
bool UpdateView::write_attribute_set(std::vector<std::byte>& out) const {
  out.clear();
  bytes::Writer w(out);
  bool fits = true;
  const bool four = params_.four_octet_as;
  std::array<uint64_t, 4> met{};
  uint8_t last = 0;
  bool sorted = true;  // written in type order so far (no sort needed)
  for (const RawAttribute& a : raw_attributes()) {
    uint64_t bit = uint64_t{1} << (a.type & 63u);
    if (met[a.type >> 6] & bit) continue;  // repeats: the first one counts
    met[a.type >> 6] |= bit;
    const size_t before = w.size();
    const AttrDescriptor* d = find_descriptor(a.type);
    if (!d) {
      if (a.optional() && a.transitive())
        fits &= write_attribute(w, static_cast<uint8_t>((a.flags & kFlagBits) | attr_flag::kPartial), a.type,
                                a.value);
    } else if (attribute(a.type)) {  // else discarded or malformed
      switch (a.type) {
        case attr_type::kAsPath: {
          if (four) {
            fits &= write_attribute(w, attr_flag::kTransitive, a.type, a.value);
            break;
          }
          AsPath path = to_as_path(a.value, AsWidth::k2);
          auto as4 = attribute(attr_type::kAs4Path);
          if (as4 && !ignore_as4_) path = reconstruct_as4_path(path, to_as_path(as4->value, AsWidth::k4));
          const size_t at = begin_attribute(w, attr_flag::kTransitive, attr_type::kAsPath);
          encode_as_path_value(w, path, AsWidth::k4);
          fits &= end_attribute(w, at);
          break;
        }
        case attr_type::kAggregator: {
          auto g = decode_aggregator(a.value, four);
          if (!g) break;
          auto g4 = attribute(attr_type::kAs4Aggregator);
          if (!four && g->asn == kAsTrans && g4 && !ignore_as4_) {
            if (auto x = decode_as4_aggregator(g4->value)) g = *x;
          }
          encode_aggregator(w, *g, true);
          break;
        }
        case attr_type::kAs4Path:
        case attr_type::kAs4Aggregator:
        case attr_type::kMpUnreachNlri:
          break;  // folded in above, or not part of the announced routes' set
        case attr_type::kNextHop:
          if (!nlri_.empty()) fits &= write_attribute(w, attr_flag::kTransitive, a.type, a.value);
          break;
        case attr_type::kMpReachNlri:
          if (mp_reach_ && mp_reach_->supported && !report_.is_disabled(mp_reach_->family))
            write_mp_next_hop_only(w, mp_reach_->family, mp_reach_->next_hop);
          break;
        default:
          fits &= write_attribute(w, static_cast<uint8_t>(a.flags & kFlagBits), a.type, a.value);
          break;
      }
    }
    if (w.size() != before) {
      if (a.type < last) sorted = false;
      last = a.type;
    }
  }
  if (!fits) {
    out.clear();
    return false;
  }
  // Usually in order already (MP_REACH_NLRI first, RFC 7606 section 5.1,
  // is the common exception): then no second pass.
  if (!sorted) sort_attributes(out);
  return true;
}

AttributeSet UpdateView::attribute_set() const {
  AttributeSet s;
  s.wire_.reserve(attrs_.size() + 64);
  attribute_set(s);
  return s;
}

void UpdateView::attribute_set(AttributeSet& into) const {
  std::vector<std::byte> buf = std::move(into.wire_);
  into = AttributeSet{};
  const bool built = write_attribute_set(buf);
  into.wire_ = std::move(buf);
  // decode() reports what cannot be built (and leaves it out): a set
  // that does not build, or does not read back, is a broken invariant.
  const bool ok = built && into.extract();
  assert(ok);
  if (!ok) into = AttributeSet{};
}

}  // namespace petrel::codec
