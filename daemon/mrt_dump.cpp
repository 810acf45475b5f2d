// `petrel dump`'s snapshot and file (mrt_dump.h).
#include "daemon/mrt_dump.h"

#include <algorithm>
#include <unordered_map>
#include <vector>

#include "codec/types.h"
#include "daemon/mrt_file.h"
#include "mrt/writer.h"

namespace petrel::daemon {

namespace {

// Written out whenever the buffer holds this much.
constexpr size_t kFlushBytes = 1 << 20;

struct SnapRoute {
  uint16_t peer = 0;  // index into Snapshot::peers
  uint32_t path_id = 0;
  size_t attr_at = 0;
  size_t attr_len = 0;
};

struct SnapPrefix {
  net::Prefix prefix;
  size_t first = 0;  // into Snapshot::routes
  size_t count = 0;
};

struct Snapshot {
  std::vector<mrt::DumpPeer> peers;
  std::vector<SnapPrefix> prefixes;
  std::vector<SnapRoute> routes;
  std::vector<std::byte> attributes;  // every route's, one after another
  uint64_t left_out = 0;  // routes of peers past the peer table's bound
};

// The IPv4 and IPv6 unicast routes of `t`, each shard under its lock only
// while its routes are copied (Table::walk).
Snapshot take_snapshot(const table::Table& t, uint32_t collector_id, uint32_t local_as) {
  const auto v4 = static_cast<table::FamilyIndex>(codec::known_index(codec::kIpv4Unicast));
  const auto v6 = static_cast<table::FamilyIndex>(codec::known_index(codec::kIpv6Unicast));
  Snapshot s;
  std::unordered_map<uint16_t, uint16_t> index_of;  // table slot -> peer index
  t.walk([&](const table::Change& c, const std::optional<table::RouteView>&, const auto& routes) {
    if (c.family != v4 && c.family != v6) return;
    SnapPrefix p{c.prefix, s.routes.size(), 0};
    for (const auto& r : routes) {
      auto it = index_of.find(r.peer);
      if (it == index_of.end()) {
        if (s.peers.size() >= 0xFFFF) {  // more peers than an MRT peer table holds
          ++s.left_out;
          continue;
        }
        const table::PeerInfo& info = t.peer(r.peer);
        mrt::DumpPeer d;
        d.bgp_id = info.local ? collector_id : info.router_id;
        d.address = info.address;
        d.as = info.local ? local_as : info.asn;
        it = index_of.emplace(r.peer, static_cast<uint16_t>(s.peers.size())).first;
        s.peers.push_back(d);
      }
      const bytes::Span w = r.attrs->wire();
      s.routes.push_back(SnapRoute{it->second, r.path_id, s.attributes.size(), w.size()});
      s.attributes.insert(s.attributes.end(), w.begin(), w.end());
      ++p.count;
    }
    if (p.count != 0) s.prefixes.push_back(p);
  });
  std::sort(s.prefixes.begin(), s.prefixes.end(),
            [](const SnapPrefix& a, const SnapPrefix& b) { return a.prefix < b.prefix; });
  return s;
}

}  // namespace

std::string default_dump_path(std::time_t now) {
  return mrt_file_name(std::string(kDefaultDumpDir) + "/petrel-%Y%m%dT%H%M%SZ.mrt", now);
}

DumpOutcome dump_table(const table::Table& t, const std::string& path, bool gzip, uint32_t collector_id,
                       uint32_t local_as, std::time_t now) {
  DumpOutcome out;
  out.path = path;
  Snapshot s = take_snapshot(t, collector_id, local_as);

  MrtFile file;
  if (!file.open(path, gzip)) {
    out.error = file.error();
    return out;
  }
  auto fail = [&](const std::string& error) {
    file.abandon();
    out.error = error;
    return out;
  };
  const auto ts = static_cast<uint32_t>(std::clamp<std::time_t>(now, 0, 0xFFFFFFFF));
  mrt::TableDumpWriter w(ts);
  std::vector<std::byte> buf;
  buf.reserve(kFlushBytes + 64 * 1024);
  if (!w.peer_index_table(collector_id, "petrel", s.peers, buf))
    return fail("too many peers for an MRT peer table (65535 at most)");
  std::vector<mrt::DumpRoute> routes;
  for (const SnapPrefix& p : s.prefixes) {
    routes.clear();
    for (size_t i = p.first; i < p.first + p.count; ++i) {
      const SnapRoute& r = s.routes[i];
      mrt::DumpRoute d;
      d.peer_index = r.peer;
      d.originated = ts;  // the table keeps no arrival time
      if (r.path_id != 0) d.path_id = r.path_id;
      d.attributes = bytes::Span(s.attributes).subspan(r.attr_at, r.attr_len);
      routes.push_back(d);
    }
    w.rib(p.prefix, routes, buf);
    if (buf.size() >= kFlushBytes) {
      if (!file.write(buf)) return fail(file.error());
      buf.clear();
    }
  }
  if (!file.write(buf) || !file.finish()) return fail(file.error());
  out.ok = true;
  out.prefixes = w.stats().prefixes;
  out.routes = w.stats().routes;
  out.routes_left_out = w.stats().routes_left_out + s.left_out;
  out.peers = s.peers.size();
  out.bytes = w.stats().bytes;  // before compression
  return out;
}

}  // namespace petrel::daemon
