// Fuzz target: the canonical attribute set of an UPDATE on a 2-octet AS
// session, held to an independent reading of the original bytes. The set
// rewrites AS_PATH and AGGREGATOR with 4-octet AS numbers and folds in
// AS4_PATH / AS4_AGGREGATOR (RFC 6793 section 4.2.3); what it then says
// (AS path, its length and neighbour AS, ORIGIN, NEXT_HOP, MED, LOCAL_PREF,
// communities, AGGREGATOR, every other attribute's bytes, and no attribute
// the message did not carry) must be what the message said. A trap on any
// difference. Inputs go up to 65535 octets (-max_len=65535): a long path
// widens past the 16-bit Attribute Length.
//
// The reader here is written for plainness, not speed, and shares no code
// with codec/: it walks the attributes itself, keeps the first of each
// type, and merges AS4_PATH as the RFC's text says. It compares nothing
// about an attribute the decoder named in a finding (discarded, malformed,
// repeated), but such an attribute must then be absent or the decoder's.
//
// The first byte picks the session: bit 0 internal peer, bit 1 ADD-PATH
// receive for IPv4/IPv6 unicast. The rest is the UPDATE body.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "codec/update.h"
#include "fuzz/fuzz.h"

namespace {

using petrel::codec::AsPath;
using petrel::codec::AsSegment;
using petrel::codec::SegmentType;

constexpr uint32_t kTrans = 23456;  // AS_TRANS, RFC 6793 section 9

[[noreturn]] void disagree() { __builtin_trap(); }

uint32_t be(const uint8_t* p, size_t n) {
  uint32_t v = 0;
  for (size_t i = 0; i < n; ++i) v = (v << 8) | p[i];
  return v;
}

struct Seg {
  uint8_t type;
  std::vector<uint32_t> asns;
};
using Path = std::vector<Seg>;

// An AS_PATH / AS4_PATH value with `width`-octet AS numbers; nullopt when it
// is not well formed (RFC 4271 4.3, RFC 7606 7.2, RFC 7607).
std::optional<Path> read_path(const std::vector<uint8_t>& v, size_t width, bool allow_confed) {
  Path p;
  size_t i = 0;
  while (i < v.size()) {
    if (v.size() - i < 2) return std::nullopt;
    uint8_t type = v[i], count = v[i + 1];
    i += 2;
    if (type < 1 || type > 4 || count == 0) return std::nullopt;
    if (!allow_confed && (type == 3 || type == 4)) return std::nullopt;
    if (v.size() - i < count * width) return std::nullopt;
    Seg s{type, {}};
    for (size_t k = 0; k < count; ++k) {
      uint32_t as = be(&v[i + k * width], width);
      if (as == 0) return std::nullopt;
      s.asns.push_back(as);
    }
    i += count * width;
    p.push_back(s);
  }
  return p;
}

bool confed(const Seg& s) { return s.type == 3 || s.type == 4; }

// RFC 4271 9.1.2.2 (a), RFC 5065 5.3: an AS_SET counts 1, confederation
// segments 0.
uint32_t count(const Path& p) {
  uint32_t n = 0;
  for (const Seg& s : p) n += s.type == 2 ? static_cast<uint32_t>(s.asns.size()) : s.type == 1 ? 1 : 0;
  return n;
}

// RFC 6793 section 4.2.3, read as written: with fewer AS numbers in
// AS_PATH than in AS4_PATH, AS4_PATH is ignored; otherwise take "as many AS
// numbers and path segments as necessary from the leading part of the
// AS_PATH" so that the result counts as many as AS_PATH, then AS4_PATH. A
// confederation segment comes along if it leads, or is next to a segment
// taken.
Path merge(const Path& as_path, const Path& as4_path) {
  const uint32_t n2 = count(as_path), n4 = count(as4_path);
  if (n2 < n4) return as_path;
  uint32_t need = n2 - n4;
  std::vector<bool> taken(as_path.size(), false);
  std::vector<Seg> part(as_path.begin(), as_path.end());
  for (size_t i = 0; i < as_path.size(); ++i) {
    if (confed(as_path[i])) continue;
    if (need == 0) break;
    taken[i] = true;
    if (as_path[i].type == 1) {
      need -= 1;
    } else {
      size_t k = std::min<size_t>(need, as_path[i].asns.size());
      part[i].asns.resize(k);
      need -= static_cast<uint32_t>(k);
    }
  }
  // Confederation segments: leading, or next to a taken segment (a run of
  // them next to one is taken whole). Repeated until nothing changes.
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 0; i < as_path.size(); ++i) {
      if (taken[i] || !confed(as_path[i])) continue;
      bool prev = i == 0 || taken[i - 1];
      bool next = i + 1 < as_path.size() && taken[i + 1];
      if (prev || next) taken[i] = changed = true;
    }
  }
  Path out;
  for (size_t i = 0; i < as_path.size(); ++i)
    if (taken[i]) out.push_back(part[i]);
  out.insert(out.end(), as4_path.begin(), as4_path.end());
  return out;
}

// The same path whatever the segmentation: consecutive sequences of one
// kind are one sequence.
Path normal(const Path& p) {
  Path out;
  for (const Seg& s : p) {
    if (!out.empty() && (s.type == 2 || s.type == 3) && out.back().type == s.type) {
      out.back().asns.insert(out.back().asns.end(), s.asns.begin(), s.asns.end());
    } else {
      out.push_back(s);
    }
  }
  return out;
}

Path from_codec(const AsPath& p) {
  Path out;
  for (const AsSegment& s : p.segments) out.push_back(Seg{static_cast<uint8_t>(s.type), s.asns});
  return out;
}

bool same(const Path& a, const Path& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].type != b[i].type || a[i].asns != b[i].asns) return false;
  return true;
}

// The octets of the shortest 4-octet encoding (segments split at 255).
size_t widened_size(const Path& p) {
  size_t n = 0;
  for (const Seg& s : normal(p)) n += 2 * ((s.asns.size() + 254) / 255) + 4 * s.asns.size();
  return n;
}

struct Attr {
  uint8_t flags;
  std::vector<uint8_t> value;
};

bool known(uint8_t type) {
  static const std::set<uint8_t> kKnown = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 14, 15, 16, 17, 18, 25, 32, 35};
  return kKnown.count(type) != 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace petrel::codec;  // NOLINT
  if (size < 5) return 0;
  const uint8_t mode = data[0];
  SessionParams params;
  params.four_octet_as = false;
  params.extended_message = true;
  if (mode & 2) params.add_path_receive = FamilySet{kIpv4Unicast, kIpv6Unicast};
  const PeerType peer = mode & 1 ? PeerType::kInternal : PeerType::kExternal;
  const uint8_t* b = data + 1;
  const size_t n = size - 1;
  auto v = UpdateView::decode(petrel::fuzz::span(b, n), params, peer);
  if (v.action() == ErrorAction::kSessionReset) return 0;

  // The independent reading: the body's fields, then each attribute.
  const size_t wlen = be(b, 2);
  if (2 + wlen + 2 > n) disagree();  // the decoder accepted a bad length
  const size_t alen = be(b + 2 + wlen, 2);
  const size_t at = 4 + wlen;
  if (at + alen > n) disagree();
  const bool classic_nlri = at + alen < n;
  std::map<uint8_t, Attr> first;
  for (size_t i = at; i < at + alen;) {
    const size_t left = at + alen - i;
    if (left < 3) break;
    const uint8_t flags = b[i], type = b[i + 1];
    const bool ext = flags & 0x10;
    if (ext && left < 4) break;
    const size_t len = ext ? be(b + i + 2, 2) : b[i + 2];
    const size_t head = ext ? 4 : 3;
    if (left < head + len) break;
    if (!first.count(type)) first[type] = Attr{flags, std::vector<uint8_t>(b + i + head, b + i + head + len)};
    i += head + len;
  }

  // What the decoder named in a finding is not compared.
  if (v.report().dropped() > 0) return 0;
  std::set<uint8_t> named;
  for (const auto& d : v.report().diagnostics())
    if (d.action != ErrorAction::kNone) named.insert(d.attr_type);
  const bool path_named = named.count(2) || named.count(17) || named.count(7) || named.count(18);

  // RFC 6793 section 4.2.3: an AGGREGATOR without AS_TRANS means AS4_PATH
  // and AS4_AGGREGATOR are ignored.
  const Attr* agg = first.count(7) ? &first[7] : nullptr;
  const Attr* agg4 = first.count(18) ? &first[18] : nullptr;
  const bool ignore_as4 = agg && agg->value.size() == 6 && be(agg->value.data(), 2) != kTrans &&
                          (first.count(17) || agg4);

  AttributeSet s = v.attribute_set();
  std::vector<std::byte> canonical;
  if (!v.write_attribute_set(canonical)) disagree();
  if (canonical.size() != s.wire().size() || !std::equal(canonical.begin(), canonical.end(), s.wire().begin()))
    disagree();
  const PathAttributes got = s.decode();
  std::map<uint8_t, RawAttribute> in_set;
  for (const RawAttribute& a : s.attributes()) {
    if (in_set.count(a.type)) disagree();  // canonical: each type once
    in_set[a.type] = a;
  }

  // No attribute the message did not carry (MP_REACH_NLRI is rewritten
  // with no NLRI; AS4_* are folded in; MP_UNREACH_NLRI is left out).
  for (const auto& [type, a] : in_set) {
    if (!first.count(type) || type == 15 || type == 17 || type == 18) disagree();
    if (!known(type) && !((first[type].flags & 0xc0) == 0xc0)) disagree();
  }
  // Every attribute the message carried and the decoder did not name is
  // there (NEXT_HOP only with classic NLRI, RFC 4760 section 3; unknown
  // ones only optional transitive; AS4_* and MP_UNREACH_NLRI never).
  for (const auto& [type, a] : first) {
    if (named.count(type) || type == 14 || type == 15 || type == 17 || type == 18) continue;
    if (type == 2 && path_named) continue;
    bool expected = known(type) ? (type != 3 || classic_nlri) : (a.flags & 0xc0) == 0xc0;
    if (expected != (in_set.count(type) != 0)) disagree();
  }

  // AS_PATH, after the merge.
  if (first.count(2) && !path_named) {
    auto p2 = read_path(first[2].value, 2, peer == PeerType::kInternal);
    if (!p2) disagree();  // the decoder kept a malformed path
    Path want = *p2;
    if (first.count(17) && !ignore_as4) {
      auto p4 = read_path(first[17].value, 4, false);
      if (!p4) disagree();
      want = merge(*p2, *p4);
    }
    if (widened_size(want) > 65535) disagree();  // kept a path that cannot be written
    if (!got.as_path || !same(normal(from_codec(*got.as_path)), normal(want))) disagree();
    if (s.as_path_length() != count(want)) disagree();
    uint32_t first_as = 0;
    for (const Seg& g : want) {
      if (confed(g)) continue;
      first_as = g.type == 2 ? g.asns.front() : 0;
      break;
    }
    if (s.first_as() != first_as) disagree();
  }
  // A path too long for the set (without AS4_PATH, whose merge could
  // shorten it): left out, and its routes cannot be announced.
  if (first.count(2)) {
    auto p2 = read_path(first[2].value, 2, true);
    if (p2 && !first.count(17) && widened_size(*p2) > 65535) {
      if (got.as_path) disagree();
      if (classic_nlri && v.action() < ErrorAction::kTreatAsWithdraw) disagree();
    }
  }

  // AGGREGATOR, with AS4_AGGREGATOR folded in.
  if (agg && !path_named) {
    if (agg->value.size() != 6) disagree();
    uint32_t asn = be(agg->value.data(), 2), addr = be(agg->value.data() + 2, 4);
    if (asn == kTrans && agg4 && !ignore_as4) {
      if (agg4->value.size() != 8) disagree();
      asn = be(agg4->value.data(), 4);
      addr = be(agg4->value.data() + 4, 4);
    }
    if (!got.aggregator || got.aggregator->asn != asn || got.aggregator->address.v4_value() != addr) disagree();
  }

  // The rest is carried as it came: its bytes, and what the set reads.
  for (uint8_t type : std::initializer_list<uint8_t>{1, 3, 4, 5, 6, 8, 9, 10, 16, 25, 32, 35}) {
    if (!first.count(type) || named.count(type) || !in_set.count(type)) continue;
    const auto& want = first[type].value;
    const auto& have = in_set[type].value;
    if (want.size() != have.size() || !std::equal(want.begin(), want.end(), reinterpret_cast<const uint8_t*>(have.data())))
      disagree();
  }
  auto u32 = [&](uint8_t type) -> std::optional<uint32_t> {
    if (!first.count(type) || named.count(type)) return std::nullopt;
    return be(first[type].value.data(), 4);
  };
  if (first.count(1) && !named.count(1) && (!s.origin() || static_cast<uint8_t>(*s.origin()) != first[1].value[0]))
    disagree();
  if (classic_nlri && first.count(3) && !named.count(3) && (!s.next_hop() || s.next_hop()->v4_value() != *u32(3)))
    disagree();
  if (auto m = u32(4); m && s.med() != m) disagree();
  if (auto l = u32(5); l && s.local_pref() != l) disagree();
  if (auto o = u32(9); o && s.originator_id() != o) disagree();
  if (auto o = u32(35); o && s.otc() != o) disagree();
  if (first.count(6) && !named.count(6) && !s.atomic_aggregate()) disagree();
  if (first.count(8) && !named.count(8)) {
    const auto& c = first[8].value;
    if (got.communities.size() != c.size() / 4) disagree();
    for (size_t i = 0; i + 4 <= c.size(); i += 4)
      if (got.communities[i / 4] != be(&c[i], 4) || !s.has_community(be(&c[i], 4))) disagree();
  }
  if (first.count(10) && !named.count(10) && s.cluster_list_length() != first[10].value.size() / 4) disagree();
  // Unknown optional transitive attributes: kept, Partial bit set.
  for (const UnknownAttribute& u : got.unknown) {
    const Attr& a = first[u.type];
    if (u.flags != ((a.flags & 0xe0) | 0x20) || u.value.size() != a.value.size() ||
        !std::equal(a.value.begin(), a.value.end(), reinterpret_cast<const uint8_t*>(u.value.data())))
      disagree();
  }
  return 0;
}
