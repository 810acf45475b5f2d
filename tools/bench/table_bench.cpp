// table-bench: the routing table on a full synthetic Internet table
// (tools/synth, docs/synthetic-table.md), as sessions deliver it.
//
// Each peer's table is packed into UPDATE messages first (codec
// UpdateBuilder, 4096-octet messages, 4-octet AS session); the timed part
// is what a session worker does per message: UpdateView::decode, then
// Table::apply (interning the attribute set, one lock per shard touched).
//
// Cases, each a JSON line for scripts and a row of the table for people:
//   one-peer   one peer's IPv4 table into an empty table
//   more-peers 3 more peers' tables (same prefixes, other attribute sets)
//   peer-down  the first peer's session goes down: all its routes withdrawn
//   export     one peer's table passed on to an external peer by its
//              exporter (table/exporter.h): from the journals to encoded
//              UPDATEs; then a second peer with the same outcome (its
//              outgoing attribute sets are shared with the first)
//   group      the same table to an update group (table/export_group.h)
//              of one member, then of --members members (default 10):
//              memory per further member, UPDATEs encoded and written
//   nexthop    (--nexthops 1, instead of the others) next-hop tracking:
//              see nexthop_case below
// Each case runs `--runs` times on a fresh table; the median is reported.
// Beside it, the baseline: the same messages decoded and their prefixes
// walked without a table, in the same run (the machine is shared).
//
// Memory is what jemalloc counts as allocated (stats.allocated), before
// and after; the messages are built before the first reading.
//
// Usage: table-bench [--prefixes N] [--sets N] [--peers N] [--runs N] [--shards N] [--export 0|1]
//                    [--breakdown 0|1] [--sweep-threads N] [--expected-prefixes N] [--members N]
//                    [--nexthops 0|1]
// (--export 0 leaves the export case out: quicker when tuning the table;
// --breakdown 1 prints, for the one-peer and more-peers phases of the last
// run, where the allocated bytes went: the table's own counts and
// jemalloc's current bytes per size class; --sweep-threads N: the threads
// that share a peer's withdrawal, default the table's, min(2, hardware
// threads); the peer-down case reports its wall time, the CPU time of all
// of them and of the calling thread; --expected-prefixes N: the table's
// maps made for N IPv4 prefixes when it is made, as the daemon's
// router.expected_ipv4_prefixes does, default 0: they grow as the routes
// come). Each run's figures go to stderr.
//
// The insert runs come first in the process: run 0 is a process's first
// table, on pages the kernel has to fault in and zero, as a daemon's first
// full table is; later runs (and the table-alone and export cases, after
// them) reuse pages freed by the runs before (jemalloc keeps them for a
// while), and went in up to 1.5 times as fast in one process.
#include <jemalloc/jemalloc.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "codec/framer.h"
#include "codec/update.h"
#include "codec/update_builder.h"
#include "tools/bench/proc.h"
#include "tools/synth/synth.h"
#include "table/export_group.h"
#include "table/exporter.h"
#include "table/table.h"

namespace {

using namespace petrel;

double cpu_s() { return bench::thread_cpu_s(); }
// The whole process's CPU time: a peer's withdrawal runs on the sweep's
// threads (TableOptions::sweep_threads), not the caller's alone. (It also
// counts jemalloc's background thread, if it runs meanwhile.)
double process_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}
using bench::wall_s;

size_t allocated() {
  uint64_t epoch = 1;
  size_t sz = sizeof(epoch);
  mallctl("epoch", &epoch, &sz, &epoch, sz);
  size_t v = 0;
  sz = sizeof(v);
  if (mallctl("stats.allocated", &v, &sz, nullptr, 0) != 0) return 0;
  return v;
}

// jemalloc's bytes in use per size class, all arenas merged: small
// classes (bins) and large ones (extents).
struct SizeClasses {
  std::vector<size_t> size, bytes, count;
};
SizeClasses size_classes() {
  uint64_t epoch = 1;
  size_t sz = sizeof(epoch);
  mallctl("epoch", &epoch, &sz, &epoch, sz);
  SizeClasses c;
  auto read = [](const std::string& name) {
    size_t v = 0, n = sizeof(v);
    if (mallctl(name.c_str(), &v, &n, nullptr, 0) != 0) return size_t{0};
    return v;
  };
  auto read32 = [](const char* name) {
    unsigned v = 0;
    size_t n = sizeof(v);
    if (mallctl(name, &v, &n, nullptr, 0) != 0) return 0u;
    return v;
  };
  const std::string all = "stats.arenas." + std::to_string(MALLCTL_ARENAS_ALL);
  // kind: "bin" (small classes) or "lextent" (large); cur: the count's name.
  auto add = [&](const char* count, const std::string& kind, const char* cur) {
    for (unsigned j = 0, n = read32(count); j < n; ++j) {
      const size_t size = read("arenas." + kind + "." + std::to_string(j) + ".size");
      const size_t regs = read(all + "." + kind + "s." + std::to_string(j) + "." + cur);
      c.size.push_back(size);
      c.count.push_back(regs);
      c.bytes.push_back(regs * size);
    }
  };
  add("arenas.nbins", "bin", "curregs");
  add("arenas.nlextents", "lextent", "curlextents");
  return c;
}

// What one phase allocated, per route: the table's own counts (route
// arrays, map slots, journals, attribute sets and the interner's index)
// and jemalloc's size classes whose bytes moved by at least 0.1 per route.
void print_breakdown(const char* phase, double routes, const table::Table::Memory& m0,
                     const table::Table::Memory& m1, size_t index0, size_t index1, const SizeClasses& c0,
                     const SizeClasses& c1) {
  auto per = [&](size_t a, size_t b) { return (static_cast<double>(b) - static_cast<double>(a)) / routes; };
  std::printf("breakdown %s, bytes per route (%.0f routes): map slots and route arrays %.2f, journals %.2f, "
              "attribute sets %.2f (their index %.2f; %.0f new sets)\n",
              phase, routes, per(m0.map_bytes, m1.map_bytes), per(m0.journal_bytes, m1.journal_bytes),
              per(m0.attr_bytes, m1.attr_bytes), per(index0, index1),
              static_cast<double>(m1.attr_sets) - static_cast<double>(m0.attr_sets));
  double total = 0;
  for (size_t j = 0; j < c1.size.size() && j < c0.size.size(); ++j) {
    const double d = per(c0.bytes[j], c1.bytes[j]);
    total += d;
    if (d >= 0.1 || d <= -0.1)
      std::printf("  jemalloc class %7zu: %+8.2f bytes per route (%+.0f allocations)\n", c1.size[j], d,
                  static_cast<double>(c1.count[j]) - static_cast<double>(c0.count[j]));
  }
  std::printf("  jemalloc, all classes: %+.2f bytes per route\n", total);
}

codec::AttributeSet to_set(const synth::Attributes& a, net::IpAddress next_hop) {
  codec::PathAttributes p;
  p.origin = static_cast<codec::Origin>(a.origin);
  codec::AsPath path;
  if (!a.as_path.empty()) path.segments.push_back({codec::SegmentType::kAsSequence, a.as_path});
  if (!a.as_set.empty()) path.segments.push_back({codec::SegmentType::kAsSet, a.as_set});
  p.as_path = std::move(path);
  p.next_hop = next_hop;
  p.med = a.med;
  p.communities = a.communities;
  for (const auto& l : a.large_communities) p.large_communities.push_back({l[0], l[1], l[2]});
  return codec::AttributeSet::from(p);
}

struct Feed {
  std::vector<std::byte> wire;        // UPDATE messages back to back
  std::vector<uint32_t> offsets;      // where each starts
  uint64_t routes = 0;
  size_t sets = 0;
};

// `nexthops` > 1: the peer's groups of prefixes take next hops
// 198.51.100.(peer * nexthops + 1 ...) in turn, else the peer's one.
Feed build_feed(const synth::Table& t, uint32_t peer, const codec::SessionParams& params, uint32_t nexthops = 1) {
  Feed f;
  codec::UpdateBuilder b(params);
  net::IpAddress nh = net::IpAddress::v4(0xC0000200u + peer + 1);
  std::vector<codec::NlriPrefix> list;
  size_t group = 0;
  for (const auto& g : t.v4) {
    if (nexthops > 1) nh = net::IpAddress::v4(0xC6336401u + peer * nexthops + static_cast<uint32_t>(group++ % nexthops));
    auto set = to_set(t.attrs[g.attrs], nh);
    list.clear();
    for (const auto& p : g.prefixes) list.push_back({p, 0});
    size_t before = f.wire.size();
    auto r = b.announce(codec::kIpv4Unicast, set, list, f.wire);
    if (!r.ok()) {
      std::fprintf(stderr, "table-bench: cannot build an UPDATE: %.*s\n", static_cast<int>(r.error().size()),
                   r.error().data());
      std::exit(1);
    }
    f.routes += g.prefixes.size();
    // Split the appended bytes into messages by their length fields.
    for (size_t at = before; at < f.wire.size();) {
      f.offsets.push_back(static_cast<uint32_t>(at));
      size_t len = (std::to_integer<size_t>(f.wire[at + 16]) << 8) | std::to_integer<size_t>(f.wire[at + 17]);
      at += len;
    }
  }
  f.sets = t.attrs.size();
  return f;
}

bytes::Span body(const Feed& f, size_t i) {
  size_t start = f.offsets[i];
  size_t end = i + 1 < f.offsets.size() ? f.offsets[i + 1] : f.wire.size();
  return bytes::Span(f.wire).subspan(start + codec::kHeaderLen, end - start - codec::kHeaderLen);
}

// Feeds one peer's messages into the table as a session does: the
// messages of one socket read (kReadBytes) decoded and applied as one
// batch. Returns CPU seconds.
constexpr size_t kReadBytes = 64 * 1024;  // daemon/peer.cpp's read size
double insert(table::Table& t, uint16_t slot, const Feed& f, const codec::SessionParams& params) {
  double c0 = cpu_s();
  table::Batch batch(t);
  size_t read_start = 0;
  for (size_t i = 0; i < f.offsets.size(); ++i) {
    auto u = codec::UpdateView::decode(body(f, i), params, codec::PeerType::kExternal);
    if (u.action() != codec::ErrorAction::kNone) {
      std::fprintf(stderr, "table-bench: message %zu does not decode\n", i);
      std::exit(1);
    }
    batch.add(u);
    if (f.offsets[i] - read_start >= kReadBytes) {
      t.apply(slot, batch);
      read_start = f.offsets[i];
    }
  }
  t.apply(slot, batch);
  return cpu_s() - c0;
}

// The baseline: decoding alone, every prefix visited.
double decode_only(const Feed& f, const codec::SessionParams& params, uint64_t& sink) {
  double c0 = cpu_s();
  for (size_t i = 0; i < f.offsets.size(); ++i) {
    auto u = codec::UpdateView::decode(body(f, i), params, codec::PeerType::kExternal);
    auto set = u.attribute_set();
    sink += set.wire().size();
    for (const auto& r : u.announced())
      for (const auto& p : r) sink += p.prefix.len();
  }
  return cpu_s() - c0;
}

// The table alone: the same batches, decoded beforehand (attribute set
// and prefixes per UPDATE), then applied. Returns CPU seconds.
struct Decoded {
  codec::AttributeSet attrs;
  std::vector<codec::NlriPrefix> prefixes;
};
std::vector<Decoded> predecode(const Feed& f, const codec::SessionParams& params) {
  std::vector<Decoded> out;
  out.reserve(f.offsets.size());
  for (size_t i = 0; i < f.offsets.size(); ++i) {
    auto u = codec::UpdateView::decode(body(f, i), params, codec::PeerType::kExternal);
    Decoded d{u.attribute_set(), {}};
    for (const auto& r : u.announced())
      for (const auto& p : r) d.prefixes.push_back(p);
    out.push_back(std::move(d));
  }
  return out;
}
double apply_only(table::Table& t, uint16_t slot, const std::vector<Decoded>& batches) {
  double c0 = cpu_s();
  table::Batch batch(t);
  size_t routes = 0;
  for (const auto& d : batches) {
    batch.add(0, &d.attrs, d.prefixes, {});
    routes += d.prefixes.size();
    if (batch.size() >= 256) t.apply(slot, batch);  // about a read's worth
  }
  t.apply(slot, batch);
  return routes ? cpu_s() - c0 : 0;
}

table::PeerInfo peer_info(uint32_t i) {
  table::PeerInfo p;
  p.address = net::IpAddress::v4(0xC0000200u + i + 1);
  p.router_id = 0x0A000000u + i + 1;
  p.asn = 64600 + i;
  return p;
}

// TableOptions::sweep_threads where the table has it (the same source
// builds against the commit before it, for baseline figures).
template <typename O>
void set_sweep_threads(O& o, uint32_t v) {
  if constexpr (requires { o.sweep_threads; }) o.sweep_threads = v;
}
template <typename O>
void set_expected_prefixes(O& o, uint32_t v) {
  if constexpr (requires { o.expected_ipv4_prefixes; }) o.expected_ipv4_prefixes = v;
}
template <typename O>
size_t sweep_threads_of(const O& o) {
  if constexpr (requires { o.sweep_threads; }) return o.sweep_threads;
  return 1;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// The nexthop case (--nexthops 1, alone): next-hop tracking
// (table/nexthop.h). Two peers send the same synthetic table of
// `prefixes` / 2 prefixes, each over two next hops of its own (four in
// the table); the first peer's routes are best (the router ID decides).
// Timed: Table::nexthops_changed for one of the first peer's next hops
// going unresolved (the best of its half of the prefixes moves to the
// second peer) and coming back; Table::nexthop_report (the walk a scrape
// of /metrics makes); and, beside it, the first peer's insert with and
// without a resolver.
struct AllResolved : table::NexthopResolver {
  table::NexthopState resolve(const net::IpAddress&) const override { return {}; }
};
int nexthop_case(uint32_t prefixes, uint32_t sets, uint32_t runs, table::TableOptions topt,
                 const codec::SessionParams& params) {
  synth::Params sp;
  sp.v4_prefixes = prefixes / 2;
  sp.v6_prefixes = 0;
  sp.attr_sets = sets;
  const synth::Table one = synth::generate(sp, 0);
  const Feed f0 = build_feed(one, 0, params, 2), f1 = build_feed(one, 1, params, 2);
  const net::IpAddress gone = net::IpAddress::v4(0xC6336401u);  // the first peer's first
  std::vector<double> down, up, insert_on, insert_off, report;
  uint64_t flipped = 0, moved = 0;
  AllResolved resolver;
  for (uint32_t run = 0; run < runs; ++run) {
    {
      table::Table t(topt);
      const uint16_t s0 = *t.add_peer(peer_info(0));
      insert_off.push_back(insert(t, s0, f0, params));
    }
    table::TableOptions o = topt;
    o.nexthops = &resolver;
    table::Table t(o);
    const uint16_t s0 = *t.add_peer(peer_info(0)), s1 = *t.add_peer(peer_info(1));
    insert_on.push_back(insert(t, s0, f0, params));
    insert(t, s1, f1, params);
    const uint64_t best0 = t.peer_best(s0, 0);
    std::vector<table::NexthopUpdate> u{{gone, {false, 0}}};
    double w0 = wall_s();
    flipped = t.nexthops_changed(u);
    down.push_back(wall_s() - w0);
    moved = best0 - t.peer_best(s0, 0);
    u[0].state = {true, 0};
    w0 = wall_s();
    const uint64_t back = t.nexthops_changed(u);
    up.push_back(wall_s() - w0);
    w0 = wall_s();
    const table::NexthopReport rep = t.nexthop_report();  // what a scrape of /metrics walks
    report.push_back(wall_s() - w0);
    if (back != flipped || t.peer_best(s0, 0) != best0 || moved == 0 || rep.nexthops.size() != 4) {
      std::fprintf(stderr, "table-bench: nexthop case: %llu routes flipped, %llu back, %llu best moved\n",
                   static_cast<unsigned long long>(flipped), static_cast<unsigned long long>(back),
                   static_cast<unsigned long long>(moved));
      return 1;
    }
    std::fprintf(stderr, "run %u: unresolved %.3f s, resolved again %.3f s (%llu routes, %llu best moved)\n", run,
                 down.back(), up.back(), static_cast<unsigned long long>(flipped),
                 static_cast<unsigned long long>(moved));
  }
  const double r = static_cast<double>(f0.routes);
  std::printf("{\"case\":\"nexthop\",\"routes\":%llu,\"flipped\":%llu,\"best_moved\":%llu,\"unresolved_s\":%.3f,"
              "\"resolved_s\":%.3f,\"report_s\":%.3f,\"insert_routes_per_s\":%.0f,\"insert_tracked_routes_per_s\":%.0f}\n",
              static_cast<unsigned long long>(f0.routes + f1.routes), static_cast<unsigned long long>(flipped),
              static_cast<unsigned long long>(moved), median(down), median(up), median(report), r / median(insert_off),
              r / median(insert_on));
  return 0;
}

// The exporter of an external peer in `slot`, fed the whole table: CPU
// seconds until it has written everything, the octets and the memory it
// allocated (its Adj-RIB-Out and the outgoing sets it interned).
struct ExportRun {
  double cpu = 0;
  size_t bytes = 0;
  size_t allocated = 0;
  uint64_t advertised = 0;
};
ExportRun export_all(table::Table& t, table::Interner& out, uint32_t slot, std::vector<std::unique_ptr<table::Exporter>>& keep) {
  table::ExporterSetup s;
  s.target.local_as = 64500;
  s.target.slot = slot;
  s.target.next_hop_v4 = *net::IpAddress::parse("198.18.1.1");
  s.families.add(codec::Family{1, 1});
  ExportRun r;
  size_t a0 = allocated();
  double c0 = cpu_s();
  auto ex = std::make_unique<table::Exporter>(t, out, s);
  std::vector<std::byte> buf;
  buf.reserve(2 << 20);
  for (int i = 0; i < 10'000'000; ++i) {
    bool more = ex->pump(buf, 1 << 20);
    r.bytes += buf.size();
    buf.clear();
    if (!more) break;
  }
  r.cpu = cpu_s() - c0;
  buf.shrink_to_fit();
  r.allocated = allocated() - a0;
  r.advertised = ex->counters().advertised[0].load();
  keep.push_back(std::move(ex));
  return r;
}

// An update group of `members` external peers (export_group.h), all
// joined before the first read, pumped in turn until each has the whole
// table: CPU seconds for all of them, memory allocated once all are done
// (the group's Adj-RIB-Out, its stream's leftovers and the members), and
// the UPDATEs encoded (once for the group) against those written.
struct GroupRun {
  double cpu = 0;
  size_t allocated = 0;
  uint64_t encoded = 0, written = 0;
  bool complete = true;
};
GroupRun export_group(table::Table& t, table::Interner& out, uint32_t members) {
  table::ExporterSetup s;
  s.target.local_as = 64500;
  s.target.next_hop_v4 = *net::IpAddress::parse("198.18.1.1");
  s.families.add(codec::Family{1, 1});
  GroupRun r;
  size_t a0 = allocated();
  double c0 = cpu_s();
  auto groups = std::make_unique<table::ExportGroups>(t, out);
  std::vector<std::unique_ptr<table::GroupMember>> ms;
  for (uint32_t i = 0; i < members; ++i) {
    s.target.slot = 4000 + i;
    ms.push_back(groups->join(s, nullptr, static_cast<uint16_t>(4000 + i)));
  }
  std::vector<std::byte> buf;
  buf.reserve(2 << 20);
  std::vector<uint8_t> busy(members, 1);
  for (int round = 0; round < 10'000'000; ++round) {
    bool any = false;
    for (uint32_t i = 0; i < members; ++i) {
      if (!busy[i]) continue;
      busy[i] = ms[i]->pump(buf, 1 << 20);
      buf.clear();
      any |= busy[i] != 0;
    }
    if (!any) break;
  }
  r.cpu = cpu_s() - c0;
  buf.shrink_to_fit();
  r.allocated = allocated() - a0;
  r.encoded = groups->stats().messages;
  for (const auto& m : ms) {
    r.written += m->counters().updates.load();
    r.complete &= m->initial_done() && m->counters().advertised[0].load() == ms[0]->counters().advertised[0].load();
  }
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  uint32_t prefixes = 1'000'000, sets = 250'000, peers = 4, runs = 3;
  bool with_export = true, breakdown = false;
  uint32_t members = 10;
  bool nexthops = false;
  table::TableOptions topt;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    auto v = static_cast<uint32_t>(std::strtoul(argv[i + 1], nullptr, 10));
    if (k == "--prefixes") prefixes = v;
    else if (k == "--sets") sets = v;
    else if (k == "--peers") peers = std::max<uint32_t>(v, 1);
    else if (k == "--runs") runs = std::max<uint32_t>(v, 1);
    else if (k == "--shards") topt.shards = std::max<uint32_t>(v, 1);
    else if (k == "--export") with_export = v != 0;
    else if (k == "--members") members = static_cast<uint32_t>(v);
    else if (k == "--nexthops") nexthops = v != 0;
    else if (k == "--breakdown") breakdown = v != 0;
    else if (k == "--sweep-threads") set_sweep_threads(topt, std::max<uint32_t>(v, 1));
    else if (k == "--expected-prefixes") set_expected_prefixes(topt, v);
    else {
      std::fprintf(stderr,
                   "usage: table-bench [--prefixes N] [--sets N] [--peers N] [--runs N] [--shards N] [--export 0|1] "
                   "[--breakdown 0|1] [--sweep-threads N] [--expected-prefixes N] [--members N] [--nexthops 0|1]\n");
      return 2;
    }
  }
  if (allocated() == 0) {
    std::fprintf(stderr, "table-bench: jemalloc statistics are not available (a sanitizer build?)\n");
    return 77;
  }
  codec::SessionParams params;
  params.four_octet_as = true;
  if (nexthops) return nexthop_case(prefixes, sets, runs, topt, params);
  synth::Params sp;
  sp.v4_prefixes = prefixes;
  sp.v6_prefixes = 0;
  sp.attr_sets = sets;
  double g0 = wall_s();
  std::vector<Feed> feeds;
  for (uint32_t p = 0; p < peers; ++p) feeds.push_back(build_feed(synth::generate(sp, p), p, params));
  std::fprintf(stderr, "table-bench: %u peers' tables of %u IPv4 prefixes built as %zu UPDATEs each in %.1f s\n",
               peers, prefixes, feeds[0].offsets.size(), wall_s() - g0);

  std::vector<double> one_cpu, one_wall, base_cpu, more_cpu, down_cpu, down_wall, down_caller, table_cpu;
  size_t one_bytes = 0, more_bytes = 0, one_sets = 0, all_sets = 0;
  uint64_t more_routes = 0, sink = 0;
  table::Table::Memory mem{};
  for (uint32_t run = 0; run < runs; ++run) {
    base_cpu.push_back(decode_only(feeds[0], params, sink));
    const bool last = run + 1 == runs;
    SizeClasses sc0, sc1, sc2;
    if (breakdown && last) sc0 = size_classes();
    size_t a0 = allocated();
    {
      table::Table t(topt);
      std::vector<uint16_t> slots;
      for (uint32_t p = 0; p < peers; ++p) slots.push_back(*t.add_peer(peer_info(p)));
      const table::Table::Memory m0 = t.memory();
      const size_t index0 = t.interner().index_bytes();
      double w0 = wall_s();
      const long f0 = bench::minor_faults();
      one_cpu.push_back(insert(t, slots[0], feeds[0], params));
      one_wall.push_back(wall_s() - w0);
      const long one_faults = bench::minor_faults() - f0;
      const long one_huge_mb = bench::anon_huge_kb() / 1024;
      size_t a1 = allocated();
      one_bytes = a1 - a0;
      one_sets = t.interner().size();
      mem = t.memory();
      const size_t index1 = t.interner().index_bytes();
      if (breakdown && last) {
        sc1 = size_classes();
        print_breakdown("one-peer", static_cast<double>(feeds[0].routes), m0, mem, index0, index1, sc0, sc1);
      }
      if (t.routes() != feeds[0].routes) {
        std::fprintf(stderr, "table-bench: %llu routes in the table, %llu sent\n",
                     static_cast<unsigned long long>(t.routes()), static_cast<unsigned long long>(feeds[0].routes));
        return 1;
      }
      double more = 0;
      more_routes = 0;
      for (uint32_t p = 1; p < peers; ++p) {
        more += insert(t, slots[p], feeds[p], params);
        more_routes += feeds[p].routes;
      }
      more_cpu.push_back(more);
      std::fprintf(stderr,
                   "run %u: one peer %.0f routes/s (%ld page faults, %ld MiB in huge pages after), decode alone "
                   "%.0f, more peers %.0f\n",
                   run, static_cast<double>(feeds[0].routes) / one_cpu.back(), one_faults, one_huge_mb,
                   static_cast<double>(feeds[0].routes) / base_cpu.back(),
                   more_routes ? static_cast<double>(more_routes) / more : 0.0);
      size_t a2 = allocated();
      more_bytes = a2 - a1;
      if (breakdown && last && more_routes) {
        sc2 = size_classes();
        print_breakdown("more-peers", static_cast<double>(more_routes), mem, t.memory(), index1,
                        t.interner().index_bytes(), sc1, sc2);
      }
      all_sets = t.interner().size();
      double c0 = cpu_s(), p0 = process_cpu_s(), w1 = wall_s();
      uint64_t gone = t.remove_peer(slots[0]);
      down_wall.push_back(wall_s() - w1);
      down_cpu.push_back(process_cpu_s() - p0);
      down_caller.push_back(cpu_s() - c0);
      std::fprintf(stderr, "run %u: peer down %.3f s wall, %.3f s CPU, %.3f s caller\n", run, down_wall.back(),
                   down_cpu.back(), down_caller.back());
      if (gone != feeds[0].routes) {
        std::fprintf(stderr, "table-bench: peer down withdrew %llu routes\n", static_cast<unsigned long long>(gone));
        return 1;
      }
    }
  }
  {
    auto batches = predecode(feeds[0], params);
    for (uint32_t run = 0; run < runs; ++run) {
      table::Table t(topt);
      uint16_t slot = *t.add_peer(peer_info(0));
      table_cpu.push_back(apply_only(t, slot, batches));
      std::fprintf(stderr, "run %u: table alone %.0f routes/s\n", run, static_cast<double>(feeds[0].routes) / table_cpu.back());
    }
  }
  std::vector<double> export_cpu, export2_cpu;
  ExportRun ex1{}, ex2{};
  for (uint32_t run = 0; run < runs && with_export; ++run) {
    table::Table t(topt);
    uint16_t slot = *t.add_peer(peer_info(0));
    insert(t, slot, feeds[0], params);
    table::Interner out;
    std::vector<std::unique_ptr<table::Exporter>> keep;
    ex1 = export_all(t, out, 4000, keep);
    ex2 = export_all(t, out, 4001, keep);
    export_cpu.push_back(ex1.cpu);
    export2_cpu.push_back(ex2.cpu);
    if (ex1.advertised != feeds[0].routes || ex2.advertised != feeds[0].routes) {
      std::fprintf(stderr, "table-bench: the exporter advertised %llu of %llu routes\n",
                   static_cast<unsigned long long>(ex1.advertised), static_cast<unsigned long long>(feeds[0].routes));
      return 1;
    }
    keep.clear();
  }
  // Update groups: one member, then `members` of one group.
  std::vector<double> group1_cpu, groupn_cpu;
  GroupRun g1{}, gn{};
  for (uint32_t run = 0; run < runs && with_export && members > 1; ++run) {
    table::Table t(topt);
    uint16_t slot = *t.add_peer(peer_info(0));
    insert(t, slot, feeds[0], params);
    table::Interner out;
    g1 = export_group(t, out, 1);
    gn = export_group(t, out, members);
    group1_cpu.push_back(g1.cpu);
    groupn_cpu.push_back(gn.cpu);
    if (!g1.complete || !gn.complete) {
      std::fprintf(stderr, "table-bench: a group member did not get the whole table\n");
      return 1;
    }
  }
  const double one_routes = static_cast<double>(feeds[0].routes);
  const double base_rate = one_routes / median(base_cpu);
  const double table_rate = one_routes / median(table_cpu);
  const double one_rate = one_routes / median(one_cpu);
  const double more_rate = more_routes ? static_cast<double>(more_routes) / median(more_cpu) : 0;
  // The insert's speed as a share of decoding alone in the same run: the
  // VM's CPU speed moves by a third for minutes at a time, this ratio much
  // less (docs/performance.md, "Routing table, seventh round").
  std::vector<double> over_decode;
  for (size_t i = 0; i < one_cpu.size(); ++i) over_decode.push_back(base_cpu[i] / one_cpu[i]);
  std::printf("{\"case\":\"one-peer\",\"routes\":%.0f,\"routes_per_s\":%.0f,\"first_run_routes_per_s\":%.0f,"
              "\"wall_routes_per_s\":%.0f,\"insert_over_decode\":%.3f,"
              "\"decode_only_routes_per_s\":%.0f,\"table_only_routes_per_s\":%.0f,\"bytes_per_route\":%.1f,"
              "\"allocated_bytes\":%zu,"
              "\"attr_sets\":%zu,\"map_bytes\":%zu,\"journal_bytes\":%zu,\"attr_bytes\":%zu,\"runs\":%u}\n",
              one_routes, one_rate, one_routes / one_cpu[0], one_routes / median(one_wall), median(over_decode),
              base_rate, table_rate,
              static_cast<double>(one_bytes) / one_routes, one_bytes, one_sets, mem.map_bytes, mem.journal_bytes,
              mem.attr_bytes, runs);
  if (peers > 1)
    std::printf("{\"case\":\"more-peers\",\"peers\":%u,\"routes\":%llu,\"routes_per_s\":%.0f,"
                "\"bytes_per_route\":%.1f,\"attr_sets\":%zu,\"runs\":%u}\n",
                peers - 1, static_cast<unsigned long long>(more_routes), more_rate,
                static_cast<double>(more_bytes) / static_cast<double>(more_routes), all_sets, runs);
  std::printf("{\"case\":\"peer-down\",\"routes\":%.0f,\"withdraw_s\":%.3f,\"wall_withdraw_s\":%.3f,"
              "\"caller_cpu_s\":%.3f,\"sweep_threads\":%zu,\"runs\":%u}\n",
              one_routes, median(down_cpu), median(down_wall), median(down_caller), sweep_threads_of(topt), runs);
  if (with_export)
    std::printf("{\"case\":\"export\",\"routes\":%.0f,\"routes_per_s\":%.0f,\"bytes_out\":%zu,"
              "\"bytes_per_route\":%.1f,\"second_peer_routes_per_s\":%.0f,\"second_peer_bytes_per_route\":%.1f,"
              "\"runs\":%u}\n",
              one_routes, one_routes / median(export_cpu), ex1.bytes, static_cast<double>(ex1.allocated) / one_routes,
              one_routes / median(export2_cpu), static_cast<double>(ex2.allocated) / one_routes, runs);
  if (with_export && members > 1)
    std::printf("{\"case\":\"group\",\"routes\":%.0f,\"members\":%u,\"one_member_bytes_per_route\":%.1f,"
                "\"group_bytes_per_route\":%.1f,\"per_further_member_bytes_per_route\":%.3f,"
                "\"one_member_cpu_s\":%.3f,\"group_cpu_s\":%.3f,\"updates_encoded\":%llu,\"updates_written\":%llu,"
                "\"runs\":%u}\n",
                one_routes, members, static_cast<double>(g1.allocated) / one_routes,
                static_cast<double>(gn.allocated) / one_routes,
                (static_cast<double>(gn.allocated) - static_cast<double>(g1.allocated)) / (members - 1) / one_routes,
                median(group1_cpu), median(groupn_cpu), static_cast<unsigned long long>(gn.encoded),
                static_cast<unsigned long long>(gn.written), runs);
  std::printf("\n%-12s %10s %14s %14s %14s %12s %10s %12s\n", "case", "routes", "routes/s (CPU)", "decode only/s",
              "table only/s", "bytes/route", "attr sets", "withdraw s");
  std::printf("%-12s %10.0f %14.0f %14.0f %14.0f %12.1f %10zu %12s\n", "one-peer", one_routes, one_rate, base_rate,
              table_rate, static_cast<double>(one_bytes) / one_routes, one_sets, "-");
  if (peers > 1)
    std::printf("%-12s %10llu %14.0f %14s %14s %12.1f %10zu %12s\n", "more-peers",
                static_cast<unsigned long long>(more_routes), more_rate, "-", "-",
                static_cast<double>(more_bytes) / static_cast<double>(more_routes), all_sets, "-");
  std::printf("%-12s %10.0f %14s %14s %14s %12s %10s %12.3f\n", "peer-down", one_routes, "-", "-", "-", "-", "-",
              median(down_cpu));
  if (with_export) {
    std::printf("%-12s %10.0f %14.0f %14s %14s %12.1f %10s %12s\n", "export", one_routes,
              one_routes / median(export_cpu), "-", "-", static_cast<double>(ex1.allocated) / one_routes, "-", "-");
    std::printf("%-12s %10.0f %14.0f %14s %14s %12.1f %10s %12s\n", "export-2nd", one_routes,
                one_routes / median(export2_cpu), "-", "-", static_cast<double>(ex2.allocated) / one_routes, "-", "-");
  }
  std::printf("\npeer-down: %.3f s wall, %.3f s CPU of all threads, %.3f s of the calling thread (sweep threads: %s)\n",
              median(down_wall), median(down_cpu), median(down_caller),
              sweep_threads_of(topt) ? std::to_string(sweep_threads_of(topt)).c_str() : "the table's default");
  std::printf("one peer's table: %.1f MB allocated (slots and route arrays %.1f MB, journals %.1f MB, "
              "attribute sets %.1f MB); medians of %u runs, CPU time of one core\n",
              static_cast<double>(one_bytes) / 1e6, static_cast<double>(mem.map_bytes) / 1e6,
              static_cast<double>(mem.journal_bytes) / 1e6, static_cast<double>(mem.attr_bytes) / 1e6, runs);
  return sink == 0 ? 1 : 0;
}
