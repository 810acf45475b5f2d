// Fuzz target: SLURM files (rpki/slurm.h, RFC 8416). Any bytes are read
// as a file; what parses is applied to VRPs made from its own prefixes
// (each filter's and assertion's, one bit longer and shorter), and
// SlurmFilter::removes must agree with the RFC's definition scanned
// filter by filter; the overlap check of the file against itself split
// in two must agree with a pairwise scan. ASPA exceptions (version 2) are
// applied to ASPAs of their own customers: every filtered customer is
// gone unless asserted, every assertion's providers are there, and the
// result is sorted by customer, one each.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "fuzz/fuzz.h"
#include "rpki/slurm.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace petrel;
  auto parsed = rpki::parse_slurm(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!parsed) {
    if (parsed.error().message.empty()) std::abort();
    return 0;
  }
  const rpki::Slurm& s = *parsed;
  std::vector<rpki::Vrp> vrps;
  auto around = [&](const net::Prefix& p, uint32_t asn) {
    const unsigned top = net::IpAddress::max_len(p.family());
    for (unsigned len : {p.len() > 0 ? p.len() - 1u : 0u, unsigned{p.len()}, std::min(top, p.len() + 1u)})
      vrps.push_back(rpki::Vrp{*net::Prefix::make(p.addr(), len), static_cast<uint8_t>(top), asn});
  };
  for (const auto& f : s.prefix_filters)
    if (f.prefix) around(*f.prefix, f.asn.value_or(0));
  for (const auto& a : s.prefix_assertions) around(a.prefix, a.asn);
  if (vrps.size() > 3000) vrps.resize(3000);
  rpki::SlurmFilter filter(std::span<const rpki::Slurm>(&s, 1));
  for (const rpki::Vrp& v : vrps) {
    bool want = false;
    for (const auto& f : s.prefix_filters)
      want = want || ((!f.prefix || f.prefix->contains(v.prefix)) && (!f.asn || *f.asn == v.asn));
    if (filter.removes(v) != want) std::abort();
  }
  auto out = filter.apply(vrps);
  if (!std::is_sorted(out.vrps.begin(), out.vrps.end())) std::abort();
  // apply()'s walk and removes()'s searches answer alike for each VRP.
  size_t removed = 0;
  for (const rpki::Vrp& v : vrps) {
    const bool gone = filter.removes(v);
    removed += gone ? 1 : 0;
    const bool asserted = std::any_of(s.prefix_assertions.begin(), s.prefix_assertions.end(),
                                      [&](const auto& a) { return a.vrp() == v; });
    if (std::binary_search(out.vrps.begin(), out.vrps.end(), v) != (!gone || asserted)) std::abort();
  }
  if (out.removed != removed) std::abort();
  for (const auto& a : s.prefix_assertions)
    if (!std::binary_search(out.vrps.begin(), out.vrps.end(), a.vrp())) std::abort();

  std::vector<rpki::Aspa> aspas;
  for (const auto& f : s.aspa_filters) aspas.push_back(rpki::Aspa{f.customer, {f.customer ^ 1u}});
  for (const auto& a : s.aspa_assertions) aspas.push_back(rpki::Aspa{a.customer ^ 2u, a.providers});
  std::sort(aspas.begin(), aspas.end());
  aspas.erase(std::unique(aspas.begin(), aspas.end(), [](const auto& a, const auto& b) { return a.customer == b.customer; }),
              aspas.end());
  auto applied = filter.apply_aspas(aspas);
  auto by_customer = [](const rpki::Aspa& a, const rpki::Aspa& b) { return a.customer < b.customer; };
  if (!std::is_sorted(applied.aspas.begin(), applied.aspas.end(), by_customer)) std::abort();
  for (size_t k = 1; k < applied.aspas.size(); ++k)
    if (applied.aspas[k - 1].customer == applied.aspas[k].customer) std::abort();
  auto find = [&](uint32_t c) {
    auto it = std::lower_bound(applied.aspas.begin(), applied.aspas.end(), rpki::Aspa{c, {}}, by_customer);
    return it != applied.aspas.end() && it->customer == c ? &*it : nullptr;
  };
  for (const auto& a : s.aspa_assertions) {
    const rpki::Aspa* got = find(a.customer);
    if (!got) std::abort();
    for (uint32_t p : a.providers)
      if (!std::binary_search(got->providers.begin(), got->providers.end(), p)) std::abort();
  }
  for (const auto& f : s.aspa_filters) {
    const bool asserted = std::any_of(s.aspa_assertions.begin(), s.aspa_assertions.end(),
                                      [&](const auto& a) { return a.customer == f.customer; });
    if (!asserted && find(f.customer)) std::abort();
  }

  // The file's prefix entries split into two files.
  if (s.prefix_filters.size() + s.prefix_assertions.size() > 400) return 0;
  std::vector<rpki::Slurm> two(2);
  std::vector<net::Prefix> in[2];
  size_t i = 0;
  for (const auto& f : s.prefix_filters) {
    two[i % 2].prefix_filters.push_back(f);
    if (f.prefix) in[i % 2].push_back(*f.prefix);
    ++i;
  }
  for (const auto& a : s.prefix_assertions) {
    two[i % 2].prefix_assertions.push_back(a);
    in[i % 2].push_back(a.prefix);
    ++i;
  }
  bool any = false;
  for (const auto& x : in[0])
    for (const auto& y : in[1]) any = any || x.contains(y) || y.contains(x);
  if (rpki::find_overlap(two).has_value() != any) std::abort();
  return 0;
}
