// Fuzz target: an UPDATE body decoded as a view, every prefix iterated, the
// attribute set built and re-encoded. Differential checks (a trap on a
// difference): the canonical bytes written straight from the view equal
// the set's, and the import loop checks on the view (table/export.h, what
// the session asks) answer as on the set. The first byte picks the session:
// bit 0 2-octet AS, bit 1 ADD-PATH receive (IPv4/IPv6 unicast), bit 2
// extended next hop for IPv4, bit 3 internal peer.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "codec/update.h"
#include "codec/update_builder.h"
#include "fuzz/fuzz.h"
#include "table/export.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace petrel::codec;  // NOLINT
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  SessionParams p;
  p.four_octet_as = !(mode & 1);
  if (mode & 2) p.add_path_receive = FamilySet{kIpv4Unicast, kIpv6Unicast};
  p.add_path_send = p.add_path_receive;
  if (mode & 4) p.extended_next_hop.add(kIpv4Unicast);
  p.extended_message = true;
  auto body = petrel::fuzz::span(data + 1, size - 1);
  auto v = UpdateView::decode(body, p, mode & 8 ? PeerType::kInternal : PeerType::kExternal);
  std::vector<NlriPrefix> ann, wd;
  for (const auto& r : v.announced())
    for (const auto& x : r) ann.push_back(x);
  for (const auto& r : v.withdrawals())
    for (const auto& x : r) wd.push_back(x);
  for (const auto& a : v.raw_attributes()) (void)a;
  (void)v.end_of_rib();
  if (v.action() == ErrorAction::kSessionReset) return 0;
  AttributeSet s = v.attribute_set();
  (void)s.decode();
  std::vector<std::byte> canonical;
  if (!v.write_attribute_set(canonical)) __builtin_trap();  // decode() reports what cannot be built
  if (!std::equal(canonical.begin(), canonical.end(), s.wire().begin(), s.wire().end())) __builtin_trap();
  uint32_t first = 0;  // an AS of the path, if any, and its neighbours in number
  for (const auto& seg : s.as_path_segments())
    if (seg.count > 0) first = seg.at(0);
  for (uint32_t asn : {first, first + 1, uint32_t{kAsTrans}, uint32_t{65001}})
    if (petrel::table::count_as(v, asn) != petrel::table::count_as(s, asn)) __builtin_trap();
  const uint32_t id = s.originator_id().value_or(0);
  uint32_t cluster_id = 0;  // the CLUSTER_LIST's last entry, if any
  for (const auto& a : s.attributes())
    if (a.type == attr_type::kClusterList && a.value.size() >= 4)
      cluster_id = *petrel::bytes::Reader(a.value.subspan(a.value.size() - 4)).u32();
  for (uint32_t router : {id, id + 1})
    for (uint32_t cluster : {cluster_id, cluster_id ^ 1u, id})
      if (petrel::table::reflection_loop(v, router, cluster) != petrel::table::reflection_loop(s, router, cluster))
        __builtin_trap();
  std::vector<std::byte> out;
  for (const auto& r : v.announced()) {
    std::vector<NlriPrefix> list(r.begin(), r.end());
    (void)UpdateBuilder(p).announce(r.family(), s, list, out);
  }
  (void)UpdateBuilder(p).build(kIpv4Unicast, nullptr, {}, wd, out);
  return 0;
}
