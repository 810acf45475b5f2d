// Synthetic tables as UPDATE bytes (see feed.h).
#include "tools/bench/feed.h"

#include "codec/update_builder.h"

namespace petrel::bench {

bytes::Span Feed::body(size_t i) const {
  size_t start = offsets[i];
  size_t end = i + 1 < offsets.size() ? offsets[i + 1] : wire.size();
  return bytes::Span(wire).subspan(start + codec::kHeaderLen, end - start - codec::kHeaderLen);
}

codec::AttributeSet to_attribute_set(const synth::Attributes& a, const net::IpAddress& next_hop,
                                     std::optional<uint32_t> neighbour_as) {
  codec::PathAttributes p;
  p.origin = static_cast<codec::Origin>(a.origin);
  codec::AsPath path;
  if (!a.as_path.empty()) {
    std::vector<uint32_t> seq = a.as_path;
    if (neighbour_as) seq.front() = *neighbour_as;
    path.segments.push_back({codec::SegmentType::kAsSequence, std::move(seq)});
  }
  if (!a.as_set.empty()) path.segments.push_back({codec::SegmentType::kAsSet, a.as_set});
  p.as_path = std::move(path);
  if (next_hop.is_v4()) {
    p.next_hop = next_hop;
  } else {
    p.mp_family = codec::kIpv6Unicast;
    p.mp_next_hop = codec::NextHop{next_hop, std::nullopt};
  }
  p.med = a.med;
  p.communities = a.communities;
  for (const auto& l : a.large_communities) p.large_communities.push_back({l[0], l[1], l[2]});
  return codec::AttributeSet::from(p);
}

namespace {

// Appends the messages of one family's groups, recording where each starts.
Result<uint64_t, const char*> pack(const synth::Table& t, const std::vector<synth::Group>& groups,
                                   codec::Family family, const net::IpAddress& nh,
                                   std::optional<uint32_t> neighbour_as, const codec::UpdateBuilder& b,
                                   Feed& f) {
  std::vector<codec::NlriPrefix> list;
  uint64_t routes = 0;
  for (const auto& g : groups) {
    auto set = to_attribute_set(t.attrs[g.attrs], nh, neighbour_as);
    list.clear();
    for (const auto& p : g.prefixes) list.push_back({p, 0});
    size_t before = f.wire.size();
    auto r = b.announce(family, set, list, f.wire);
    if (!r.ok()) return fail(r.error().data());  // the builder's reasons are literals
    routes += g.prefixes.size();
    for (size_t at = before; at < f.wire.size();) {
      f.offsets.push_back(static_cast<uint32_t>(at));
      size_t len = (std::to_integer<size_t>(f.wire[at + 16]) << 8) | std::to_integer<size_t>(f.wire[at + 17]);
      at += len;
    }
  }
  return routes;
}

void add_end_of_rib(codec::Family family, Feed& f) {
  f.offsets.push_back(static_cast<uint32_t>(f.wire.size()));
  codec::UpdateBuilder::end_of_rib(family, f.wire);
}

}  // namespace

Result<Feed, const char*> build_feed(const synth::Table& t, const FeedOptions& o,
                                     const codec::SessionParams& params) {
  Feed f;
  codec::UpdateBuilder b(params);
  if (o.ipv4 && !t.v4.empty()) {
    auto n = pack(t, t.v4, codec::kIpv4Unicast, o.next_hop_v4, o.neighbour_as, b, f);
    if (!n) return fail(n.error());
    f.v4_routes = *n;
    if (o.end_of_rib) add_end_of_rib(codec::kIpv4Unicast, f);
  }
  if (o.ipv6 && !t.v6.empty()) {
    if (!o.next_hop_v6) return fail("IPv6 routes need an IPv6 next hop");
    auto n = pack(t, t.v6, codec::kIpv6Unicast, *o.next_hop_v6, o.neighbour_as, b, f);
    if (!n) return fail(n.error());
    f.v6_routes = *n;
    if (o.end_of_rib) add_end_of_rib(codec::kIpv6Unicast, f);
  }
  f.sets = t.attrs.size();
  return f;
}

}  // namespace petrel::bench
