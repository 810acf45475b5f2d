// policy-bench: what an import policy costs on a full table (issue 22's
// bound: a typical 10-term policy at most 20 % of import throughput).
//
// One neighbour's synthetic IPv4 table (tools/synth) as UPDATE messages,
// built before any clock starts; the timed part is what a session worker
// does per message: UpdateView::decode, table::import_update (the import
// checks and the policy) and Table::apply per read's worth of messages,
// into a fresh table each run. Cases, alternated run by run so that the
// shared machine's noise falls on both alike:
//   none     no import policy (the fast path: the UPDATE's bytes interned)
//   policy   the ten terms below (bogon prefixes from a set, too specific,
//            an AS-path regular expression, bogon ASes in the path, AS_SET,
//            path length, GRACEFUL_SHUTDOWN, ORIGIN, a MED range, and a
//            community tag on every accepted route, so that each UPDATE's
//            set is changed and interned anew)
// The median CPU seconds of each and their ratio go to stdout as a JSON
// line and a sentence.
//
// Usage: policy-bench [--prefixes N] [--sets N] [--runs N] [--only none|checking|tagging]
//                     [--drop DIGITS]
// (--only: that case alone, for a profiler; no ratio is printed. --drop:
// the terms numbered 0-9 in DIGITS ("2" the AS-path expression, "2345"
// every path term) become terms without conditions or changes, for what
// each costs; 9 is the one that accepts.)
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "codec/update.h"
#include "table/import.h"
#include "table/policy.h"
#include "table/table.h"
#include "tools/bench/feed.h"

namespace petrel {
namespace {

double cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

table::PrefixRange range(const char* text) { return *table::PrefixRange::parse(text); }

table::NumberRange asns(uint32_t lo, uint32_t hi) { return {lo, hi}; }

// tag: the last term adds a community to every accepted route; without
// it the policy only accepts and rejects (and the GRACEFUL_SHUTDOWN and
// ORIGIN terms change the few routes they match).
std::shared_ptr<const table::PolicyChain> ten_terms(bool tag, const std::string& drop) {
  using table::PolicyTerm;
  using table::PolicyThen;
  std::vector<PolicyTerm> t(10);
  for (const char* b : {"0.0.0.0/8 le 32", "10.0.0.0/8 le 32", "100.64.0.0/10 le 32", "127.0.0.0/8 le 32",
                        "169.254.0.0/16 le 32", "172.16.0.0/12 le 32", "192.0.0.0/24 le 32", "192.0.2.0/24 le 32",
                        "192.168.0.0/16 le 32", "198.18.0.0/15 le 32", "198.51.100.0/24 le 32",
                        "203.0.113.0/24 le 32", "224.0.0.0/4 le 32", "240.0.0.0/4 le 32", "0.0.0.0/0"})
    t[0].match.prefix.push_back(range(b));
  t[0].then = PolicyThen::kReject;
  t[1].match.prefix_length = table::NumberRange{25, 32};
  t[1].then = PolicyThen::kReject;
  t[2].match.as_path = "_(6449[6-9]|645[0-0][0-9]|6451[01])_";  // documentation ASes anywhere
  t[2].then = PolicyThen::kReject;
  t[3].match.as_path_contains = {asns(0, 0), asns(23456, 23456), asns(65535, 131071), asns(4200000000u, 4294967295u)};
  t[3].then = PolicyThen::kReject;
  t[4].match.as_set = true;
  t[4].then = PolicyThen::kReject;
  t[5].match.as_path_length = table::NumberRange{51, 65535};
  t[5].then = PolicyThen::kReject;
  t[6].match.community = {*table::CommunityPattern::parse("graceful-shutdown")};
  t[6].set.local_pref = 0;
  t[6].then = PolicyThen::kAccept;
  t[7].match.origin = 1 << static_cast<int>(codec::Origin::kIncomplete);
  t[7].set.med_op = table::MedOp::kAdd;
  t[7].set.med = 10;
  t[8].match.med = table::NumberRange{1000000, UINT32_MAX};
  t[8].then = PolicyThen::kReject;
  if (tag) t[9].set.community_add = {*table::CommunityPattern::parse("64512:100")};
  t[9].then = PolicyThen::kAccept;
  for (const char d : drop) t[static_cast<size_t>(d - '0')] = PolicyTerm{};  // then: next
  return table::PolicyChain::compile({table::PolicyDef{"ten-terms", std::move(t), PolicyThen::kReject}});
}

constexpr size_t kReadBytes = 64 * 1024;  // daemon/peer.cpp's read size

// One run: the feed into a fresh table through import_update. CPU seconds;
// `accepted`: the routes in the table after it.
double run(const bench::Feed& f, const codec::SessionParams& params, const table::PolicyChain* policy,
           uint64_t& accepted) {
  table::Table t(table::TableOptions{});
  table::PeerInfo info;
  info.asn = 64700;
  info.address = net::IpAddress::v4(0xC0000201u);
  const uint16_t slot = *t.add_peer(info);
  table::ImportRules rules;
  rules.local_as = 64512;
  rules.peer_as = 64700;
  rules.families = codec::FamilySet{codec::kIpv4Unicast};
  rules.filter = policy;
  rules.peer_name = "bench";
  const double c0 = cpu_s();
  table::Batch batch(t);
  size_t read_start = 0;
  for (size_t i = 0; i < f.offsets.size(); ++i) {
    auto u = codec::UpdateView::decode(f.body(i), params, codec::PeerType::kExternal);
    table::import_update(u, u.action() == codec::ErrorAction::kTreatAsWithdraw, rules, batch);
    if (f.offsets[i] - read_start >= kReadBytes) {
      t.apply(slot, batch);
      read_start = f.offsets[i];
    }
  }
  t.apply(slot, batch);
  const double cpu = cpu_s() - c0;
  accepted = t.routes();
  return cpu;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace
}  // namespace petrel

int main(int argc, char** argv) {
  using namespace petrel;
  uint32_t prefixes = 1000000, sets = 0, runs = 5;
  std::string only, drop;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    if (k == "--only") {
      only = argv[i + 1];
      continue;
    }
    if (k == "--drop") {
      drop = argv[i + 1];
      if (drop.find_first_not_of("0123456789") != std::string::npos) {
        std::fprintf(stderr, "policy-bench: --drop takes term numbers 0-9, as digits\n");
        return 2;
      }
      continue;
    }
    const auto v = static_cast<uint32_t>(std::strtoul(argv[i + 1], nullptr, 10));
    if (k == "--prefixes") prefixes = v;
    else if (k == "--sets") sets = v;
    else if (k == "--runs") runs = std::max<uint32_t>(v, 1);
    else {
      std::fprintf(stderr, "usage: policy-bench [--prefixes N] [--sets N] [--runs N] [--only CASE] [--drop DIGITS]\n");
      return 2;
    }
  }
  synth::Params sp;
  sp.v4_prefixes = prefixes;
  sp.v6_prefixes = 0;
  if (sets) sp.attr_sets = sets;
  codec::SessionParams params;
  params.four_octet_as = true;
  bench::FeedOptions o;
  o.neighbour_as = 64700;
  o.next_hop_v4 = net::IpAddress::v4(0xC0000201u);
  o.ipv6 = false;
  o.end_of_rib = false;
  auto feed = bench::build_feed(synth::generate(sp, 0), o, params);
  if (!feed) {
    std::fprintf(stderr, "policy-bench: %s\n", feed.error());
    return 1;
  }
  const auto tagging = ten_terms(true, drop), checking = ten_terms(false, drop);
  if (!only.empty()) {
    const table::PolicyChain* chain = only == "none" ? nullptr : only == "checking" ? checking.get() : tagging.get();
    if (only != "none" && only != "checking" && only != "tagging") {
      std::fprintf(stderr, "policy-bench: --only none, checking or tagging\n");
      return 2;
    }
    std::vector<double> t;
    uint64_t accepted = 0;
    for (uint32_t r = 0; r < runs; ++r) t.push_back(run(*feed, params, chain, accepted));
    std::printf("policy-bench: %s %.3f s (median of %u), %llu accepted\n", only.c_str(), median(t), runs,
                static_cast<unsigned long long>(accepted));
    return 0;
  }
  std::vector<double> none, tagged, checked;
  uint64_t routes_none = 0, routes_tagged = 0, routes_checked = 0;
  for (uint32_t r = 0; r < runs; ++r) {
    none.push_back(run(*feed, params, nullptr, routes_none));
    tagged.push_back(run(*feed, params, tagging.get(), routes_tagged));
    checked.push_back(run(*feed, params, checking.get(), routes_checked));
  }
  const double a = median(none), b = median(tagged), c = median(checked);
  const auto routes = static_cast<double>(feed->v4_routes);
  std::printf("{\"case\":\"import-policy\",\"routes\":%llu,\"accepted_with_policy\":%llu,\"messages\":%zu,"
              "\"none_s\":%.3f,\"tagging_s\":%.3f,\"checking_s\":%.3f,\"tagging_ratio\":%.3f,"
              "\"checking_ratio\":%.3f}\n",
              static_cast<unsigned long long>(feed->v4_routes), static_cast<unsigned long long>(routes_tagged),
              feed->messages(), a, b, c, b / a, c / a);
  std::printf("policy-bench: %llu routes in %zu UPDATEs (medians of %u alternated runs)\n"
              "  no policy            %.3f s  %.2f M routes/s\n"
              "  ten terms, checking  %.3f s  %.2f M routes/s  %+.0f %%\n"
              "  ten terms, tagging   %.3f s  %.2f M routes/s  %+.0f %%  (%llu accepted)\n",
              static_cast<unsigned long long>(feed->v4_routes), feed->messages(), runs, a, routes / a / 1e6, c,
              routes / c / 1e6, (c / a - 1) * 100, b, routes / b / 1e6, (b / a - 1) * 100,
              static_cast<unsigned long long>(routes_tagged));
  return routes_checked == routes_tagged ? 0 : 1;
}
