// Fuzz target: each path attribute decoder on its own. The first byte
// picks the decoder (and, for AS_PATH and AGGREGATOR, the AS width); the
// rest is the attribute value. Whatever decodes is encoded again.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "codec/as_path.h"
#include "codec/attribute_set.h"
#include "codec/communities.h"
#include "codec/mp_nlri.h"
#include "codec/simple_attributes.h"
#include "fuzz/fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace petrel::codec;  // NOLINT
  using petrel::bytes::Writer;
  if (size == 0) return 0;
  const uint8_t sel = data[0];
  auto v = petrel::fuzz::span(data + 1, size - 1);
  std::vector<std::byte> out;
  Writer w(out);
  const bool four = sel & 0x80;
  switch (sel & 0x0f) {
    case 0:
      if (auto x = decode_origin(v)) encode_origin(w, *x);
      break;
    case 1:
      if (auto x = decode_as_path(v, {four ? AsWidth::k4 : AsWidth::k2, (sel & 0x40) != 0})) {
        encode_as_path(w, *x, AsWidth::k4);
        (void)summarize_as_path(v, four ? AsWidth::k4 : AsWidth::k2);
        (void)reconstruct_as4_path(*x, *x);
      }
      break;
    case 2:
      if (auto x = decode_next_hop(v)) encode_next_hop(w, *x);
      break;
    case 3:
      if (auto x = decode_med(v)) encode_med(w, *x);
      if (auto x = decode_local_pref(v)) encode_local_pref(w, *x);
      if (auto x = decode_originator_id(v)) encode_originator_id(w, *x);
      if (auto x = decode_otc(v)) encode_otc(w, *x);
      if (decode_atomic_aggregate(v)) encode_atomic_aggregate(w);
      break;
    case 4:
      if (auto x = decode_aggregator(v, four)) encode_aggregator(w, *x, four);
      if (auto x = decode_as4_aggregator(v)) encode_as4_aggregator(w, *x);
      break;
    case 5:
      if (auto x = decode_communities(v)) encode_communities(w, *x);
      break;
    case 6:
      if (auto x = decode_cluster_list(v)) encode_cluster_list(w, *x);
      break;
    case 7:
      if (auto x = decode_ext_communities(v)) encode_ext_communities(w, *x);
      break;
    case 8:
      if (auto x = decode_ipv6_ext_communities(v)) encode_ipv6_ext_communities(w, *x);
      break;
    case 9:
      if (auto x = decode_large_communities(v)) encode_large_communities(w, *x);
      break;
    case 10: {
      FamilySet ap = (sel & 0x40) ? FamilySet{kIpv4Unicast, kIpv6Unicast} : FamilySet{};
      if (auto x = decode_mp_reach(v, ap, FamilySet{kIpv4Unicast})) {
        std::vector<NlriPrefix> list(x->nlri.begin(), x->nlri.end());
        if (x->supported) encode_mp_reach(w, x->family, x->next_hop, list, ap.has(x->family));
      }
      break;
    }
    case 11: {
      FamilySet ap = (sel & 0x40) ? FamilySet{kIpv4Unicast, kIpv6Unicast} : FamilySet{};
      if (auto x = decode_mp_unreach(v, ap)) {
        std::vector<NlriPrefix> list(x->withdrawn.begin(), x->withdrawn.end());
        encode_mp_unreach(w, x->family, list, ap.has(x->family));
      }
      break;
    }
    default:
      if (auto s = AttributeSet::from_canonical(v)) (void)AttributeSet::from(s->decode());
      break;
  }
  return 0;
}
