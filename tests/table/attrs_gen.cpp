// The generators of attrs_gen.h.
#include "tests/table/attrs_gen.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace petrel::table::testing {

using codec::PathAttributes;

rc::Gen<codec::AsPath> gen_path() {
  return rc::gen::apply(
      [](std::vector<std::pair<uint8_t, std::vector<uint32_t>>> segs) {
        codec::AsPath p;
        if (segs.size() > 4) segs.resize(4);
        for (auto& [t, asns] : segs) {
          if (asns.empty()) continue;
          if (asns.size() > 40) asns.resize(40);
          p.segments.push_back({static_cast<codec::SegmentType>(1 + t % 4), asns});
        }
        return p;
      },
      rc::gen::container<std::vector<std::pair<uint8_t, std::vector<uint32_t>>>>(
          rc::gen::pair(rc::gen::arbitrary<uint8_t>(),
                        rc::gen::container<std::vector<uint32_t>>(
                            rc::gen::oneOf(rc::gen::inRange<uint32_t>(1, 70000), rc::gen::arbitrary<uint32_t>())))));
}

rc::Gen<PathAttributes> gen_attrs() {
  return rc::gen::apply(
      [](uint8_t origin, codec::AsPath path, uint32_t present, uint32_t med, uint32_t lp, uint32_t orig,
         std::vector<uint32_t> communities, std::vector<uint32_t> clusters,
         std::vector<std::pair<uint8_t, std::vector<uint8_t>>> unknown) {
        PathAttributes a;
        if (communities.size() > 6) communities.resize(6);
        if (clusters.size() > 4) clusters.resize(4);
        if (unknown.size() > 3) unknown.resize(3);
        if (present & 1) a.origin = static_cast<codec::Origin>(origin % 3);
        if (present & 2) a.as_path = path;
        a.next_hop = net::IpAddress::v4(0xC0000201u);
        if (present & 4) a.med = med;
        if (present & 8) a.local_pref = lp;
        if (present & 16) a.originator_id = orig;
        if (present & 32) a.communities = communities;
        if ((present & 32) && (present & 1024)) a.communities.push_back(codec::community::kLlgrStale);  // RFC 9494
        if (present & 64) a.cluster_list = clusters;
        if (present & 128) a.atomic_aggregate = true;
        if (present & 256) a.aggregator = codec::Aggregator{med, net::IpAddress::v4(lp)};
        if (present & 512) a.large_communities.push_back({med, lp, orig});
        for (auto& [t, v] : unknown) {
          // Type codes no descriptor knows (kept, with Partial set).
          const uint8_t type = static_cast<uint8_t>(200 + t % 50);
          if (std::any_of(a.unknown.begin(), a.unknown.end(), [&](const auto& u) { return u.type == type; }))
            continue;
          if (v.size() > 8) v.resize(8);
          std::vector<std::byte> b(v.size());
          for (size_t i = 0; i < v.size(); ++i) b[i] = std::byte{v[i]};
          a.unknown.push_back({codec::attr_flag::kOptional | codec::attr_flag::kTransitive, type, b});
        }
        return a;
      },
      rc::gen::arbitrary<uint8_t>(), gen_path(), rc::gen::arbitrary<uint32_t>(), rc::gen::arbitrary<uint32_t>(),
      rc::gen::arbitrary<uint32_t>(), rc::gen::arbitrary<uint32_t>(),
      rc::gen::arbitrary<std::vector<uint32_t>>(), rc::gen::arbitrary<std::vector<uint32_t>>(),
      rc::gen::arbitrary<std::vector<std::pair<uint8_t, std::vector<uint8_t>>>>());
}

}  // namespace petrel::table::testing
