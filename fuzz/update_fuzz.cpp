// Fuzz target: an UPDATE body decoded as a view, every prefix iterated, the
// attribute set built and re-encoded. The first byte picks the session:
// bit 0 2-octet AS, bit 1 ADD-PATH receive (IPv4/IPv6 unicast), bit 2
// extended next hop for IPv4, bit 3 internal peer.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "codec/update.h"
#include "codec/update_builder.h"
#include "fuzz/fuzz.h"

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
  std::vector<std::byte> out;
  for (const auto& r : v.announced()) {
    std::vector<NlriPrefix> list(r.begin(), r.end());
    (void)UpdateBuilder(p).announce(r.family(), s, list, out);
  }
  (void)UpdateBuilder(p).build(kIpv4Unicast, nullptr, {}, wd, out);
  return 0;
}
