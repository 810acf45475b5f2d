// Fuzz target: an UPDATE body decoded as a view, every prefix iterated, the
// attribute set built and re-encoded. Differential checks (a trap on a
// difference): the canonical bytes written straight from the view equal
// the set's, and the import loop checks on the view (table/export.h, what
// the session asks) answer as on the set. The first byte picks the session:
// bit 0 2-octet AS, bit 1 ADD-PATH receive (IPv4/IPv6 unicast), bit 2
// extended next hop for IPv4, bit 3 internal peer.
// AS-path expressions on the numbers agree with RE2 on the path's text.
// Then the import (table/import.h) into a table, once on the view and once
// through an accept-all filter (the AttributeSet's way), which must agree;
// a family the session did not negotiate (bit 4: IPv4 unicast, bit 5:
// IPv6 unicast) never has a route. Bit 6: enforce_first_as off; bit 7: the
// peer's AS is the path's first.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <re2/re2.h>

#include "codec/update.h"
#include "codec/update_builder.h"
#include "fuzz/fuzz.h"
#include "table/export.h"
#include "table/import.h"
#include "table/policy.h"
#include "table/table.h"

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
  // AS-path expressions on the numbers (table::AsPathTokens) answer as RE2
  // does on the path's text, for the path as received, whatever its
  // segments.
  {
    static const char* const kExpressions[] = {"_1_", "^65001_", "_(1|2[0-9])$", "^0$", "_23456_"};
    static const auto tokens = [] {
      std::vector<std::pair<petrel::table::AsPathTokens, std::unique_ptr<RE2>>> t;
      for (const char* e : kExpressions)
        t.emplace_back(*petrel::table::AsPathTokens::of(e), std::make_unique<RE2>(petrel::table::as_path_regex(e)));
      return t;
    }();
    std::string text;
    petrel::table::as_path_text(to_as_path(s.as_path(), AsWidth::k4), text);
    for (const auto& [t, re] : tokens)
      if (t.matches(s.as_path_segments()) != RE2::PartialMatch(text, *re)) __builtin_trap();
  }
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

  namespace table = petrel::table;
  static const table::TableOptions small = [] {
    table::TableOptions o;
    o.shards = 1;
    o.journal_retention = 64;
    return o;
  }();
  static table::Table tables[2] = {table::Table(small), table::Table(small)};
  static const auto accept_all = table::PolicyChain::compile({table::PolicyDef{"all", {}, table::PolicyThen::kAccept}});
  table::ImportRules rules;
  rules.local_as = 65001;
  rules.router_id = id;
  rules.cluster_id = cluster_id;
  rules.internal = mode & 8;
  rules.peer_as = rules.internal ? 65001 : (mode & 128) ? first : 65010;
  rules.enforce_first_as = !(mode & 64);
  rules.families = FamilySet{kIpv4Unicast, kIpv6Unicast, kIpv4Multicast, kIpv6Multicast};
  if (mode & 16) rules.families.remove(kIpv4Unicast);
  if (mode & 32) rules.families.remove(kIpv6Unicast);
  const bool taw = v.action() == ErrorAction::kTreatAsWithdraw;
  table::ImportOutcome outcome[2];
  for (int i = 0; i < 2; ++i) {
    table::Table& t = tables[i];
    table::PeerInfo info;
    info.asn = rules.peer_as;
    info.internal = rules.internal;
    const uint16_t slot = *t.add_peer(info);
    table::ImportRules r = rules;
    if (i == 1) r.filter = accept_all.get();
    table::Batch b(t);
    outcome[i] = table::import_update(v, taw, r, b);
    t.apply(slot, b);
    for (size_t f = 0; f < kKnownFamilies; ++f) {
      const uint64_t n = t.peer_routes(slot, static_cast<table::FamilyIndex>(f));
      if (!rules.families.has(kKnownFamilyList[f]) && n != 0) __builtin_trap();
      if (n > outcome[i].announced[f] - outcome[i].refused[f]) __builtin_trap();
    }
    (void)t.remove_peer(slot);
  }
  if (outcome[0].refusal != outcome[1].refusal || outcome[0].announced != outcome[1].announced ||
      outcome[0].refused != outcome[1].refused || outcome[0].unnegotiated != outcome[1].unnegotiated ||
      outcome[0].unnegotiated_prefixes != outcome[1].unnegotiated_prefixes)
    __builtin_trap();
  return 0;
}
