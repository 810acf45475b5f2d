// The HTTP API's JSON bodies and Prometheus text (daemon/api.h).
//
// Prometheus text exposition format 0.0.4: every family is written once,
// HELP and TYPE first, then all its samples; label values escape '\\', '"'
// and newline. Counters end in _total.
#include "daemon/api.h"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <algorithm>
#include <ctime>
#include <initializer_list>
#include <span>
#include <utility>

#include "codec/to_json.h"
#include "crates/json/json.h"
#include "daemon/chart.h"
#include "daemon/metrics.h"
#include "daemon/text_table.h"

namespace petrel::daemon::api {

namespace {

constexpr std::array<codec::MessageType, 5> kTypes = {
    codec::MessageType::kOpen, codec::MessageType::kUpdate, codec::MessageType::kNotification,
    codec::MessageType::kKeepalive, codec::MessageType::kRouteRefresh};

std::string_view family_text(size_t i, std::span<char, 32> buf) {
  return codec::family_name(codec::kKnownFamilyList[i], buf);
}

// Families worth showing for a peer: the configured ones, and any other the
// peer sent prefixes of anyway.
bool shows_family(const PeerSnapshot& p, size_t i) {
  return p.families.has(codec::kKnownFamilyList[i]) || p.announced[i] != 0 || p.withdrawn[i] != 0 ||
         p.routes[i] != 0;
}

// "graceful_restart": what we offer, what the last session negotiated, and
// the helper's state with the peer's stale routes (docs/http-api.md).
void write_graceful(json::Writer& w, const PeerSnapshot& p) {
  char buf[32];
  const auto& g = p.graceful;
  w.key_raw("graceful_restart").begin_object();
  w.key_raw("enabled").boolean(g.enabled);
  w.member("restart_time", g.restart_time);
  w.member("stale_routes_time", g.stale_routes_time);
  w.key_raw("negotiated").boolean(g.negotiated);
  w.key_raw("notification").boolean(g.notification);
  w.member("peer_restart_time", g.peer_restart_time);
  w.key_raw("peer_families").begin_object();
  for (const auto& [f, forwarding] : g.peer_families) {
    w.key(codec::family_name(f, buf)).begin_object();
    w.key_raw("forwarding_preserved").boolean(forwarding);
    w.end_object();
  }
  w.end_object();
  w.member("long_lived_stale_time", g.long_lived_stale_time);
  w.key_raw("long_lived_negotiated").boolean(g.long_lived_negotiated);
  w.key_raw("peer_long_lived_families").begin_object();
  for (const auto& [f, stale_time] : g.peer_long_lived_families) {
    w.key(codec::family_name(f, buf)).begin_object();
    w.member("stale_time", stale_time);
    w.end_object();
  }
  w.end_object();
  w.key_raw("state").string(g.phase);
  w.key_raw("stale_until");
  if (g.stale_until_ms) {
    w.string(fmt::format("{:%Y-%m-%dT%H:%M:%S}Z", fmt::gmtime(static_cast<std::time_t>(g.stale_until_ms / 1000))));
  } else {
    w.null();
  }
  uint64_t total = 0;
  w.key_raw("stale_routes").begin_object();
  for (size_t i = 0; i < codec::kKnownFamilies; ++i) {
    total += p.stale[i];
    if (p.stale[i]) w.member(family_text(i, buf), p.stale[i]);
  }
  w.end_object();
  w.member("stale_routes_total", total);
  w.member("restarts", g.restarts);
  w.member("expired", g.expired);
  w.member("long_lived", g.long_lived);
  w.end_object();
}

void write_peer(json::Writer& w, const PeerSnapshot& p) {
  char buf[32];
  w.begin_object();
  w.member("name", p.name);
  w.member("address", p.address);
  w.member("remote_asn", p.remote_asn);
  w.member("description", p.description);
  w.key_raw("passive").boolean(p.passive);
  w.key_raw("enabled").boolean(p.enabled);
  w.key_raw("admin_disabled").boolean(p.admin_down);
  w.member("hold_time", p.hold_time);
  w.key_raw("state").string_raw(state_json_name(p.state));
  w.key_raw("uptime_seconds");
  if (p.uptime_seconds) {
    w.number(*p.uptime_seconds);
  } else {
    w.null();
  }
  w.key_raw("last_error");
  if (p.last_error.empty()) {
    w.null();
  } else {
    w.string(p.last_error);
  }
  w.member("established_total", p.established_total);
  w.member("connections_refused", p.connections_refused);
  w.key_raw("families").begin_array();
  for (size_t i = 0; i < codec::kKnownFamilies; ++i)
    if (p.families.has(codec::kKnownFamilyList[i])) w.string_raw(family_text(i, buf));
  w.end_array();
  w.key_raw("update_prefixes").begin_object();
  for (size_t i = 0; i < codec::kKnownFamilies; ++i) {
    if (!shows_family(p, i)) continue;
    w.key_raw(family_text(i, buf)).begin_object();
    w.member("announced", p.announced[i]);
    w.member("withdrawn", p.withdrawn[i]);
    w.member("received", p.routes[i]);  // routes in the table (Adj-RIB-In)
    w.member("refused", p.refused[i]);  // by import policy
    w.member("best", p.best[i]);  // prefixes whose best route is the peer's
    w.member("advertised", p.advertised[i]);  // Adj-RIB-Out
    w.end_object();
  }
  w.end_object();
  w.member("unknown_family_updates", p.unknown_family_updates);
  w.member("paths_refused", p.paths_refused);
  w.member("refused_kept", p.refused_kept);
  w.member("refused_not_kept", p.refused_not_kept);
  w.member("duplicate_announcements", p.duplicate_announcements);
  w.member("oversized", p.oversized);  // routes not sent: too large for one UPDATE
  w.key_raw("messages").begin_object();
  for (int dir = 0; dir < 2; ++dir) {
    const auto& counts = dir == 0 ? p.messages_in : p.messages_out;
    w.key_raw(dir == 0 ? "in" : "out").begin_object();
    for (auto t : kTypes) w.member(codec::message_type_name(t), counts[static_cast<size_t>(t)]);
    w.end_object();
  }
  w.end_object();
  w.key_raw("rfc7606").begin_object();
  w.member("treat_as_withdraw", p.treat_as_withdraw);
  w.member("attribute_discard", p.attribute_discard);
  w.end_object();
  w.key_raw("loops").begin_object();
  w.member("own_as", p.own_as_loops);
  w.member("reflection", p.reflection_loops);
  w.end_object();
  w.member("unnegotiated_family", p.unnegotiated_family);
  w.key_raw("as_path_checks").begin_object();
  w.key_raw("enforce_first_as").boolean(p.enforce_first_as);
  w.member("empty_as_path", p.empty_as_path);
  w.member("first_as", p.first_as);
  w.end_object();
  w.key_raw("roles").begin_object();
  if (p.local_role.empty()) w.key_raw("local").null();
  else w.member("local", p.local_role);
  if (p.peer_role.empty()) w.key_raw("peer").null();
  else w.member("peer", p.peer_role);
  w.member("route_leaks", p.route_leaks);
  w.end_object();
  w.key_raw("max_prefixes").begin_object();
  w.key_raw("limits").begin_object();
  for (size_t i = 0; i < codec::kKnownFamilies; ++i)
    if (p.max_prefixes[i]) w.member(family_text(i, buf), p.max_prefixes[i]);
  w.end_object();
  w.key_raw("action").string_raw(p.max_prefixes_warn_only ? "warn" : "cease");
  w.member("restart_seconds", p.max_prefixes_restart);
  w.member("warn_percent", p.max_prefixes_warn);
  w.member("warnings", p.max_prefixes_warnings);
  w.member("exceeded", p.max_prefixes_exceeded);
  w.key_raw("held_down").boolean(p.held_down);
  w.end_object();
  w.key_raw("damping").begin_object();
  w.key_raw("enabled").boolean(p.damp_oscillations);
  w.member("short_sessions", p.short_sessions);
  w.member("held_ms", p.damped_ms);
  w.end_object();
  write_graceful(w, p);
  w.end_object();
}

// jemalloc's figures by name, in the order the status page shows them.
struct MemoryKind {
  std::string_view name;
  uint64_t MemoryStats::*field;
};
constexpr std::array<MemoryKind, 6> kMemoryKinds = {{
    {"allocated", &MemoryStats::allocated},
    {"active", &MemoryStats::active},
    {"metadata", &MemoryStats::metadata},
    {"resident", &MemoryStats::resident},
    {"mapped", &MemoryStats::mapped},
    {"retained", &MemoryStats::retained},
}};

// "memory": {"allocator": "jemalloc", "background_thread": true, "allocated": ...}
// or {"allocator": null} where jemalloc is not the allocator (sanitizers).
void write_memory(json::Writer& w, const MemoryStats& m) {
  w.key_raw("memory").begin_object();
  w.key_raw("allocator");
  if (!m.available) {
    w.null();
    w.end_object();
    return;
  }
  w.string_raw("jemalloc");
  w.key_raw("background_thread").boolean(m.background_thread);
  for (const auto& k : kMemoryKinds) w.member(k.name, m.*k.field);
  w.end_object();
}

}  // namespace

std::string_view state_json_name(fsm::State s) {
  switch (s) {
    case fsm::State::kIdle: return "idle";
    case fsm::State::kConnect: return "connect";
    case fsm::State::kActive: return "active";
    case fsm::State::kOpenSent: return "opensent";
    case fsm::State::kOpenConfirm: return "openconfirm";
    case fsm::State::kEstablished: return "established";
  }
  return "unknown";
}

int state_number(fsm::State s) { return static_cast<int>(s) + 1; }

std::string status_json(const Snapshot& s) {
  std::string out;
  json::Writer w(out);
  size_t established = 0;
  for (const auto& p : s.peers)
    if (p.state == fsm::State::kEstablished) ++established;
  w.begin_object();
  w.member("version", s.version);
  w.member("asn", s.asn);
  w.member("router_id", s.router_id);
  w.member("uptime_seconds", s.uptime_seconds);
  w.key_raw("peers").begin_object();
  w.member("configured", s.peers.size());
  w.member("established", established);
  w.end_object();
  w.member("connections_refused", s.connections_refused);
  uint64_t prefixes = 0;
  for (uint64_t n : s.table.prefixes) prefixes += n;
  w.key_raw("table").begin_object();
  w.member("prefixes", prefixes);
  w.member("routes", s.table.routes);
  w.member("bytes", s.table.map_bytes + s.table.journal_bytes + s.table.attr_bytes);
  w.end_object();
  write_memory(w, s.memory);
  w.end_object().line_end();
  return out;
}

std::string peers_json(const Snapshot& s) {
  std::string out;
  json::Writer w(out);
  w.begin_object();
  w.key_raw("peers").begin_array();
  for (const auto& p : s.peers) write_peer(w, p);
  w.end_array();
  w.end_object().line_end();
  return out;
}

std::string peer_json(const PeerSnapshot& p) {
  std::string out;
  json::Writer w(out);
  write_peer(w, p);
  w.line_end();
  return out;
}

std::optional<codec::NextHop> route_next_hop(const codec::PathAttributes& a, std::string_view family) {
  const bool ipv4 = family.starts_with("ipv4");
  if (ipv4 && a.next_hop) return codec::NextHop{*a.next_hop, std::nullopt};
  if (a.mp_next_hop) return *a.mp_next_hop;
  return std::nullopt;
}

namespace {

// Which of a prefix's routes a query shows.
struct RouteFilter {
  std::string_view peer;     // empty: every peer
  std::optional<bool> best;  // true: only the best; false: only the others
  [[nodiscard]] bool keeps(const RouteSnapshot& r) const {
    if (!peer.empty() && r.peer != peer) return false;
    return !best || r.best == *best;
  }
};

// A route's peer, path, whether it is the best and, if not, why, and its
// next hop: `next_hop` the global address, `next_hop_link_local` RFC
// 2545's second one (null unless the peer sent 32 octets).
void write_route_head(json::Writer& w, const RouteSnapshot& r, std::string_view family) {
  w.member("peer", r.peer);
  w.member("peer_address", r.peer_address);
  w.member("path_id", r.path_id);
  w.key_raw("best").boolean(r.best);
  w.key_raw("lost_by");
  if (r.best) {
    w.null();
  } else {
    w.string(r.lost_by);
  }
  w.key_raw("eligible").boolean(r.eligible);
  w.member("igp_cost", r.igp_cost);
  const std::optional<codec::NextHop> nh = route_next_hop(r.attributes, family);
  w.key_raw("next_hop");
  if (nh) {
    w.string(nh->global.to_string());
  } else {
    w.null();
  }
  w.key_raw("next_hop_link_local");
  if (nh && nh->link_local) {
    w.string(nh->link_local->to_string());
  } else {
    w.null();
  }
}

void write_prefix_routes(json::Writer& w, const PrefixSnapshot& p, const RouteFilter& filter) {
  w.begin_object();
  w.member("prefix", p.prefix);
  w.member("family", p.family);
  w.key_raw("routes").begin_array();
  for (const auto& r : p.routes) {
    if (!filter.keeps(r)) continue;
    w.begin_object();
    write_route_head(w, r, p.family);
    w.key_raw("stale").boolean(r.stale);
    w.key_raw("rpki");
    if (r.rpki.empty())
      w.null();
    else
      w.string(r.rpki);
    w.key_raw("aspa");
    if (r.aspa.empty())
      w.null();
    else
      w.string(r.aspa);
    codec::attributes_to_json(r.attributes, w);
    w.end_object();
  }
  w.end_array();
  w.end_object();
}

std::string_view origin_text(uint8_t o) {
  switch (o) {
    case 0: return "igp";
    case 1: return "egp";
    case 2: return "incomplete";
    default: return "absent";
  }
}

}  // namespace

std::string prefix_routes_json(const PrefixSnapshot& p) {
  std::string out;
  json::Writer w(out);
  write_prefix_routes(w, p, {});
  w.line_end();
  return out;
}

namespace {

void write_export(json::Writer& w, const ExportExplanation& e) {
  w.key_raw("export").begin_object();
  w.member("peer", e.peer);
  w.member("policy", e.policy);
  w.key_raw("established").boolean(e.established);
  w.member("route_peer", e.route_peer);
  w.member("route_path_id", e.route_path_id);
  w.key_raw("policy_verdict");
  if (e.policy_verdict.empty()) w.null();
  else w.string(e.policy_verdict);
  w.key_raw("decided_by");
  if (e.decided_by.empty()) w.null();
  else w.string(e.decided_by);
  w.key_raw("changes").begin_array();
  for (const auto& c : e.changes) w.string(c);
  w.end_array();
  w.key_raw("rules");
  if (e.rules.empty()) w.null();
  else w.string(e.rules);
  w.key_raw("family_negotiated").boolean(e.family_negotiated);
  w.key_raw("sent").boolean(e.sent);
  if (e.attributes) {
    codec::attributes_to_json(*e.attributes, w);  // the member "attributes"
  } else {
    w.key_raw("attributes").null();
  }
  w.end_object();
}

}  // namespace

std::string explain_json(const PrefixSnapshot& p, const ExportExplanation* to) {
  std::string out;
  json::Writer w(out);
  w.begin_object();
  w.member("prefix", p.prefix);
  w.member("family", p.family);
  const bool has_best = !p.routes.empty() && p.routes.front().best;
  // The step that separated the best from the runner-up: the last one
  // that put a route out.
  int decisive = -1;
  for (const auto& r : p.routes)
    if (!r.best) decisive = std::max(decisive, r.lost_at);
  w.key_raw("decided_by");
  if (!has_best) {
    w.null();
  } else if (p.routes.size() == 1) {
    w.string_raw("only route");
  } else if (decisive >= 0 && static_cast<size_t>(decisive) < p.steps.size()) {
    w.string(p.steps[static_cast<size_t>(decisive)]);
  } else {
    w.null();
  }
  w.key_raw("routes").begin_array();
  for (const auto& r : p.routes) {
    const BestPathInputs& in = r.inputs;
    w.begin_object();
    write_route_head(w, r, p.family);
    w.member("local_pref", in.local_pref);
    w.member("as_path_length", in.as_path_length);
    w.member("origin", origin_text(in.origin));
    w.key_raw("med");
    if (in.med) {
      w.number(*in.med);
    } else {
      w.null();
    }
    w.member("neighbour_as", in.neighbour_as);
    w.key_raw("external").boolean(in.external);
    w.member("router_id", in.router_id);
    w.member("cluster_list_length", in.cluster_list_length);
    w.end_object();
  }
  w.end_array();
  // Step by step, in the order selection applies them: the routes each
  // step put out against the best. A route compared with the best alone
  // loses at one step; MED compares only routes from one neighbouring AS.
  w.key_raw("steps").begin_array();
  for (size_t i = 0; i < p.steps.size(); ++i) {
    w.begin_object();
    w.member("step", p.steps[i]);
    w.key_raw("eliminated").begin_array();
    for (const auto& r : p.routes) {
      if (r.best || r.lost_at != static_cast<int>(i)) continue;
      w.begin_object().member("peer", r.peer).member("path_id", r.path_id).end_object();
    }
    w.end_array();
    w.end_object();
  }
  w.end_array();
  if (to) write_export(w, *to);
  w.end_object().line_end();
  return out;
}

std::string error_json(std::string_view message) {
  std::string out;
  json::Writer w(out);
  w.begin_object().member("error", message).end_object().line_end();
  return out;
}

std::string metrics_text(const Snapshot& s) {
  std::string out;
  out.reserve(1024 + s.peers.size() * 2048);
  Metrics m(out);
  char buf[32];

  m.family("petrel_build_info", "gauge", "Petrel's version as a label; the value is always 1.");
  m.sample({{"version", s.version}}, 1);

  m.family("petrel_peer_state", "gauge",
           "BGP FSM state of the peer: 1 Idle, 2 Connect, 3 Active, 4 OpenSent, 5 OpenConfirm, 6 Established.");
  for (const auto& p : s.peers)
    m.sample({{"peer", p.name}, {"state", state_json_name(p.state)}}, static_cast<uint64_t>(state_number(p.state)));

  m.family("petrel_peer_update_prefixes_total", "counter",
           "Prefixes in UPDATE messages received from the peer, by family and kind (announced or withdrawn); "
           "counts of UPDATE contents, not of a routing table.");
  for (const auto& p : s.peers) {
    for (size_t i = 0; i < codec::kKnownFamilies; ++i) {
      if (!shows_family(p, i)) continue;
      auto fam = family_text(i, buf);
      m.sample({{"peer", p.name}, {"family", fam}, {"kind", "announced"}}, p.announced[i]);
      m.sample({{"peer", p.name}, {"family", fam}, {"kind", "withdrawn"}}, p.withdrawn[i]);
      m.sample({{"peer", p.name}, {"family", fam}, {"kind", "refused"}}, p.refused[i]);
    }
  }

  // A gauge per peer and family, for the families the peer shows.
  auto per_family = [&](const char* name, const char* help,
                        std::array<uint64_t, codec::kKnownFamilies> PeerSnapshot::*field) {
    m.family(name, "gauge", help);
    for (const auto& p : s.peers)
      for (size_t i = 0; i < codec::kKnownFamilies; ++i)
        if (shows_family(p, i)) m.sample({{"peer", p.name}, {"family", family_text(i, buf)}}, (p.*field)[i]);
  };
  per_family("petrel_peer_routes", "Routes from the peer in the routing table now (its Adj-RIB-In), by family.",
             &PeerSnapshot::routes);
  per_family("petrel_peer_stale_routes",
             "Routes from the peer kept stale in the routing table now, by family: while it restarts (graceful "
             "restart helper) or refreshes (enhanced route refresh), until announced again or swept.",
             &PeerSnapshot::stale);
  m.family("petrel_peer_graceful_restarts_total", "counter",
           "Sessions of the peer that went down with their routes kept (graceful restart helper), and stale "
           "timers that ran out before the peer came back or sent its End-of-RIB (outcome=\"expired\"), and "
           "restart times that ran out with the routes kept long-lived stale (outcome=\"long-lived\", RFC 9494).");
  for (const auto& p : s.peers) {
    m.sample({{"peer", p.name}, {"outcome", "kept"}}, p.graceful.restarts);
    m.sample({{"peer", p.name}, {"outcome", "expired"}}, p.graceful.expired);
    m.sample({{"peer", p.name}, {"outcome", "long-lived"}}, p.graceful.long_lived);
  }

  m.family("petrel_table_prefixes", "gauge", "Prefixes with at least one route in the routing table, by family.");
  for (size_t i = 0; i < codec::kKnownFamilies; ++i)
    m.sample({{"family", family_text(i, buf)}}, s.table.prefixes[i]);
  m.family("petrel_peer_prefixes", "gauge",
           "Prefixes by peer, family and kind: received and accepted (the peer's routes in the table; import "
           "policy refuses before storing, so the two are equal), best (prefixes whose best route is the peer's), "
           "advertised (paths the peer holds from us).");
  for (const auto& p : s.peers) {
    for (size_t i = 0; i < codec::kKnownFamilies; ++i) {
      if (!shows_family(p, i)) continue;
      m.sample({{"peer", p.name}, {"family", family_text(i, buf)}, {"kind", "received"}}, p.routes[i]);
      m.sample({{"peer", p.name}, {"family", family_text(i, buf)}, {"kind", "accepted"}}, p.routes[i]);
      m.sample({{"peer", p.name}, {"family", family_text(i, buf)}, {"kind", "best"}}, p.best[i]);
      m.sample({{"peer", p.name}, {"family", family_text(i, buf)}, {"kind", "advertised"}}, p.advertised[i]);
    }
  }

  m.family("petrel_table_routes", "gauge", "Routes in the routing table by family, every peer and path.");
  for (size_t i = 0; i < codec::kKnownFamilies; ++i) {
    uint64_t n = 0;
    for (const auto& p : s.peers) n += p.routes[i];
    m.sample({{"family", family_text(i, buf)}}, n);
  }
  // Figures without labels: one sample each.
  const struct {
    const char* name;
    const char* type;
    const char* help;
    uint64_t value;
  } single[] = {
      {"petrel_export_groups", "gauge",
       "Update groups: sessions with the same export outcome share one export pass (docs/export.md).",
       s.exports.groups},
      {"petrel_export_group_members", "gauge", "Sessions in update groups.", s.exports.members},
      {"petrel_export_updates_encoded_total", "counter",
       "UPDATE messages the update groups encoded, each once for all the members it went to (compare with "
       "petrel_messages_total{direction=\"out\",type=\"UPDATE\"}).",
       s.exports.updates_encoded},
      {"petrel_export_stream_bytes", "gauge",
       "Encoded UPDATEs the update groups keep for members that have not read them yet.", s.exports.stream_bytes},
      {"petrel_table_attribute_sets", "gauge", "Distinct interned attribute sets in the routing table.",
       s.table.attr_sets},
      {"petrel_routes_ineligible", "gauge",
       "Routes excluded from best path because their next hop does not resolve (docs/table.md, next hops).",
       s.table.routes_ineligible},
      {"petrel_attribute_sets", "gauge",
       "Distinct interned attribute sets (the same as petrel_table_attribute_sets, by the name issue 7 gives).",
       s.table.attr_sets},
  };
  for (const auto& one : single) {
    m.family(one.name, one.type, one.help);
    m.sample({}, one.value);
  }
  m.family("petrel_nexthops", "gauge", "Distinct next hops the routing table's routes use, by state.");
  m.sample({{"state", "resolved"}}, s.table.nexthops_resolved);
  m.sample({{"state", "unresolved"}}, s.table.nexthops_unresolved);
  if (s.memory.available) {
    m.family("petrel_memory_bytes", "gauge",
             "jemalloc's statistics, by kind: allocated, active, metadata, resident, mapped, retained.");
    for (const auto& k : kMemoryKinds) m.sample({{"kind", k.name}}, s.memory.*k.field);
  }
  m.family("petrel_table_bytes", "gauge",
           "Bytes the routing table holds, by part: prefix slots and route arrays (map), journals, attribute sets.");
  m.sample({{"part", "map"}}, s.table.map_bytes);
  m.sample({{"part", "journal"}}, s.table.journal_bytes);
  m.sample({{"part", "attribute_sets"}}, s.table.attr_bytes);

  m.family("petrel_messages_total", "counter", "BGP messages received (in) and sent (out), by peer and type.");
  for (const auto& p : s.peers) {
    for (int dir = 0; dir < 2; ++dir) {
      const auto& counts = dir == 0 ? p.messages_in : p.messages_out;
      for (auto t : kTypes)
        m.sample({{"peer", p.name}, {"direction", dir == 0 ? "in" : "out"}, {"type", codec::message_type_name(t)}},
                 counts[static_cast<size_t>(t)]);
    }
  }

  m.family("petrel_peer_established_total", "counter", "Times the session with the peer reached Established.");
  for (const auto& p : s.peers) m.sample({{"peer", p.name}}, p.established_total);

  m.family("petrel_update_errors_total", "counter",
           "Malformed UPDATEs from the peer handled by RFC 7606, by action (treat_as_withdraw, attribute_discard).");
  for (const auto& p : s.peers) {
    m.sample({{"peer", p.name}, {"action", "treat_as_withdraw"}}, p.treat_as_withdraw);
    m.sample({{"peer", p.name}, {"action", "attribute_discard"}}, p.attribute_discard);
  }

  m.family("petrel_update_loops_total", "counter",
           "UPDATEs from the peer whose routes were refused as loops, by kind (own-as: our AS in the AS_PATH; "
           "reflection: our ORIGINATOR_ID or cluster id).");
  for (const auto& p : s.peers) {
    m.sample({{"peer", p.name}, {"kind", "own-as"}}, p.own_as_loops);
    m.sample({{"peer", p.name}, {"kind", "reflection"}}, p.reflection_loops);
  }

  m.family("petrel_update_refused_total", "counter",
           "UPDATEs from the peer whose NLRI import ignored or refused whole, by reason (unnegotiated-family: "
           "NLRI of a family the session did not negotiate, ignored; empty-as-path, first-as: an external peer's "
           "AS_PATH empty or not starting with its AS, treated as withdrawn; route-leak: OTC from a customer, RS "
           "client or lateral peer, RFC 9234, refused).");
  for (const auto& p : s.peers) {
    m.sample({{"peer", p.name}, {"reason", "unnegotiated-family"}}, p.unnegotiated_family);
    m.sample({{"peer", p.name}, {"reason", "empty-as-path"}}, p.empty_as_path);
    m.sample({{"peer", p.name}, {"reason", "first-as"}}, p.first_as);
    m.sample({{"peer", p.name}, {"reason", "route-leak"}}, p.route_leaks);
  }

  m.family("petrel_peer_max_prefixes", "gauge", "The peer's max_prefixes limit per family (families with a limit).");
  for (const auto& p : s.peers)
    for (size_t i = 0; i < codec::kKnownFamilies; ++i)
      if (p.max_prefixes[i]) m.sample({{"peer", p.name}, {"family", family_text(i, buf)}}, p.max_prefixes[i]);

  m.family("petrel_peer_max_prefixes_events_total", "counter",
           "Times the peer's accepted routes crossed max_prefixes_warn percent of the limit (warning) or the limit "
           "(exceeded).");
  for (const auto& p : s.peers) {
    m.sample({{"peer", p.name}, {"kind", "warning"}}, p.max_prefixes_warnings);
    m.sample({{"peer", p.name}, {"kind", "exceeded"}}, p.max_prefixes_exceeded);
  }
  m.family("petrel_peer_paths_refused_total", "counter",
           "ADD-PATH paths from the peer refused because the prefix already had peer.max_paths_per_prefix of its "
           "paths; counted since the session came up.");
  for (const auto& p : s.peers) m.sample({{"peer", p.name}}, p.paths_refused);
  m.family("petrel_peer_oversized_routes_total", "counter",
           "Routes not sent to the peer because their attributes do not fit in one UPDATE for it (an earlier "
           "version it held is withdrawn).");
  for (const auto& p : s.peers) m.sample({{"peer", p.name}}, p.oversized);

  m.family("petrel_peer_connections_refused_total", "counter",
           "Connections from the peer's address closed at once (peer disabled, shutting down, or one already "
           "being set up).");
  for (const auto& p : s.peers) m.sample({{"peer", p.name}}, p.connections_refused);

  m.family("petrel_connections_refused_total", "counter",
           "Connections to the BGP listeners from addresses that are not configured peers, closed at once.");
  m.sample({}, s.connections_refused);
  return out;
}

bool refuse_method(std::string_view method, Response& r) {
  if (method == "GET" || method == "HEAD") return false;
  r.status = 405;
  r.allow = "GET, HEAD";
  r.body = error_json(fmt::format("method {} is not allowed; use GET", method));
  return true;
}

Response respond_routes(std::string_view method, std::string_view path, const RouteLookup& lookup,
                        const ExportExplain& explain_to) {
  Response r;
  if (refuse_method(method, r)) return r;
  std::string_view text = path.substr(std::min(path.size(), kRoutesPath.size()));
  constexpr std::string_view kExplain = "/explain";
  const bool explain = text.ends_with(kExplain);
  if (explain) text.remove_suffix(kExplain.size());
  auto prefix = net::Prefix::parse(text, net::Prefix::HostBits::kReject);
  if (!prefix) {
    r.status = 400;
    r.body = error_json(fmt::format("not a prefix: \"{}\" (write it as 192.0.2.0/24 or 2001:db8::/32, "
                                    "with no host bits set)", text));
    return r;
  }
  PrefixSnapshot snap;
  if (!lookup(*prefix, snap)) {
    r.status = 404;
    r.body = error_json(fmt::format("no route to {} in the table", prefix->to_string()));
    return r;
  }
  std::optional<ExportExplanation> to;
  if (explain && explain_to) {
    std::string error;
    to = explain_to(*prefix, &error);
    if (!to) {
      r.status = 404;
      r.body = error_json(error);
      return r;
    }
  }
  r.body = explain ? explain_json(snap, to ? &*to : nullptr) : prefix_routes_json(snap);
  return r;
}

namespace {

std::optional<size_t> parse_count(std::string_view text) {
  size_t n = 0;
  if (text.empty() || text.size() > 9) return std::nullopt;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + static_cast<size_t>(c - '0');
  }
  return n;
}

Response bad_query(std::string message) {
  Response r;
  r.status = 400;
  r.body = error_json(message);
  return r;
}

}  // namespace

std::optional<net::Prefix> parse_query_prefix(std::string_view text, bool longest) {
  if (text.find('/') == std::string_view::npos && longest) {
    auto a = net::IpAddress::parse(text);
    if (!a) return std::nullopt;
    return net::Prefix::make(*a, net::IpAddress::max_len(a->family()));
  }
  return net::Prefix::parse(text, longest ? net::Prefix::HostBits::kClear : net::Prefix::HostBits::kReject);
}

bool find_prefix(const net::Prefix& p, bool longest, const RouteLookup& lookup, PrefixSnapshot& out) {
  // Longest match: the prefix itself, then each shorter one that covers it.
  for (int len = p.len(); len >= (longest ? 0 : p.len()); --len) {
    auto q = net::Prefix::make(p.addr(), static_cast<unsigned>(len));
    if (q && lookup(*q, out)) return true;
  }
  return false;
}

Response respond_refused(std::string_view method, const QueryArgs& args, const std::vector<RefusedPeer>& peers) {
  Response r;
  if (refuse_method(method, r)) return r;
  std::optional<std::string_view> peer;
  std::optional<net::Prefix> prefix;
  size_t limit = kDefaultPageSize;
  for (const auto& [k, v] : args) {
    if (k == "peer") {
      peer = v;
    } else if (k == "prefix") {
      prefix = net::Prefix::parse(v, net::Prefix::HostBits::kReject);
      if (!prefix) return bad_query(fmt::format("not a prefix: \"{}\" (192.0.2.0/24, no host bits set)", v));
    } else if (k == "limit") {
      auto n = parse_count(v);
      if (!n || *n == 0 || *n > kMaxPageSize)
        return bad_query(fmt::format("limit is a number from 1 to {}, not \"{}\"", kMaxPageSize, v));
      limit = *n;
    } else {
      return bad_query(fmt::format("unknown parameter \"{}\" (peer, prefix, limit)", k));
    }
  }
  if (peer && std::none_of(peers.begin(), peers.end(), [&](const RefusedPeer& x) { return x.name == *peer; })) {
    r.status = 404;
    r.body = error_json(fmt::format("no peer is named \"{}\"", *peer));
    return r;
  }
  std::string out;
  json::Writer w(out);
  w.begin_object();
  w.key_raw("refused").begin_array();
  size_t left = limit;
  for (const RefusedPeer& x : peers) {
    if (peer && x.name != *peer) continue;
    for (const auto& e : x.find(prefix, left)) {
      w.begin_object();
      w.member("peer", x.name);
      w.member("prefix", e.prefix.to_string());
      w.member("path_id", e.path_id);
      w.member("reason", e.reason);
      if (e.attributes) codec::attributes_to_json(*e.attributes, w);
      else w.key_raw("attributes").null();
      w.end_object();
      --left;
    }
  }
  w.end_array();
  w.key_raw("peers").begin_array();
  for (const RefusedPeer& x : peers) {
    if (peer && x.name != *peer) continue;
    w.begin_object();
    w.member("peer", x.name);
    w.member("kept", x.kept);
    w.member("not_kept", x.not_kept);
    w.member("keep_at_most", x.keep_at_most);
    w.end_object();
  }
  w.end_array();
  w.key_raw("truncated").boolean(left == 0);
  w.end_object().line_end();
  r.body = std::move(out);
  return r;
}

Response respond_route_query(std::string_view method, const QueryArgs& args, const RouteLookup& lookup,
                             const RouteList& list) {
  Response r;
  if (refuse_method(method, r)) return r;
  std::optional<std::string_view> prefix_text, cursor_text;
  bool longest = false;
  size_t limit = kDefaultPageSize;
  RouteFilter filter;
  for (const auto& [k, v] : args) {
    if (k == "prefix") {
      prefix_text = v;
    } else if (k == "match") {
      if (v != "exact" && v != "longest") return bad_query(fmt::format("match is \"exact\" or \"longest\", not \"{}\"", v));
      longest = v == "longest";
    } else if (k == "peer") {
      filter.peer = v;
    } else if (k == "best") {
      if (v != "true" && v != "false") return bad_query(fmt::format("best is \"true\" or \"false\", not \"{}\"", v));
      filter.best = v == "true";
    } else if (k == "limit") {
      auto n = parse_count(v);
      if (!n || *n == 0 || *n > kMaxPageSize)
        return bad_query(fmt::format("limit is a number from 1 to {}, not \"{}\"", kMaxPageSize, v));
      limit = *n;
    } else if (k == "cursor") {
      cursor_text = v;
    } else {
      return bad_query(fmt::format("unknown parameter \"{}\" (prefix, match, peer, best, limit, cursor)", k));
    }
  }
  std::optional<net::Prefix> after;
  if (cursor_text) {
    after = net::Prefix::parse(*cursor_text, net::Prefix::HostBits::kReject);
    if (!after) return bad_query(fmt::format("not a cursor: \"{}\" (use next_cursor of the last page)", *cursor_text));
  }
  std::string out;
  json::Writer w(out);
  w.begin_object();
  w.key_raw("prefixes").begin_array();
  std::optional<net::Prefix> next;
  PrefixSnapshot snap;
  if (prefix_text) {
    auto p = parse_query_prefix(*prefix_text, longest);
    if (!p)
      return bad_query(fmt::format("not a prefix: \"{}\" (write it as 192.0.2.0/24 or 2001:db8::/32, with no host "
                                   "bits set; match=longest also takes an address)", *prefix_text));
    if (find_prefix(*p, longest, lookup, snap)) write_prefix_routes(w, snap, filter);
  } else {
    std::vector<net::Prefix> page = list(after, limit, filter.peer);
    for (const auto& p : page) {
      // A prefix whose routes all went since the listing is left out.
      if (!lookup(p, snap)) continue;
      bool any = false;
      for (const auto& route : snap.routes) any = any || filter.keeps(route);
      if (any) write_prefix_routes(w, snap, filter);
    }
    if (page.size() == limit) next = page.back();
  }
  w.end_array();
  w.key_raw("next_cursor");
  if (next) {
    w.string(next->to_string());
  } else {
    w.null();
  }
  w.end_object().line_end();
  r.body = std::move(out);
  return r;
}

Response respond_history(std::string_view method, const QueryArgs& args, const HistoryRead& read) {
  Response r;
  if (refuse_method(method, r)) return r;
  std::string peer;
  for (const auto& [key, value] : args) {
    if (key != "peer") return bad_query(fmt::format("unknown parameter \"{}\" (peer)", key));
    peer = value;
  }
  HistoryView h = read(peer);
  if (!peer.empty() && h.peers.empty()) {
    r.status = 404;
    r.body = error_json(fmt::format("no peer named \"{}\"", peer));
    return r;
  }
  r.body = history_json(h);
  return r;
}

PrefixListings::PrefixListings(Collect collect, int64_t ttl_ms, size_t max_listings)
    : collect_(std::move(collect)), ttl_ms_(ttl_ms), max_listings_(std::max<size_t>(max_listings, 1)) {}

std::vector<net::Prefix> PrefixListings::page(const std::optional<net::Prefix>& after, size_t limit,
                                              std::string_view peer, int64_t now_ms) {
  std::shared_ptr<const std::vector<net::Prefix>> copy;
  {
    std::lock_guard lock(mu_);
    std::erase_if(listings_, [&](const Listing& l) { return now_ms - l.used_ms > ttl_ms_; });
    if (after) {
      for (Listing& l : listings_) {
        if (l.peer == peer) {
          l.used_ms = now_ms;
          copy = l.prefixes;
        }
      }
    }
  }
  if (!copy) {
    std::lock_guard collecting(collect_mu_);
    auto fresh = std::make_shared<std::vector<net::Prefix>>(collect_(peer));
    std::sort(fresh->begin(), fresh->end());
    fresh->erase(std::unique(fresh->begin(), fresh->end()), fresh->end());
    copy = fresh;
    std::lock_guard lock(mu_);
    ++collections_;
    std::erase_if(listings_, [&](const Listing& l) { return l.peer == peer; });
    if (listings_.size() >= max_listings_) {
      auto oldest = std::min_element(listings_.begin(), listings_.end(),
                                     [](const Listing& a, const Listing& b) { return a.used_ms < b.used_ms; });
      listings_.erase(oldest);
    }
    listings_.push_back(Listing{std::string(peer), copy, now_ms});
  }
  auto from = after ? std::upper_bound(copy->begin(), copy->end(), *after) : copy->begin();
  auto to = from + static_cast<std::ptrdiff_t>(std::min<size_t>(limit, static_cast<size_t>(copy->end() - from)));
  return {from, to};
}

uint64_t PrefixListings::collections() const {
  std::lock_guard lock(mu_);
  return collections_;
}

size_t PrefixListings::kept() const {
  std::lock_guard lock(mu_);
  return listings_.size();
}

std::string html_escape(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  for (char c : in) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string looking_glass_form(std::string_view by, std::string_view q) {
  static constexpr std::pair<std::string_view, std::string_view> kBy[] = {
      {"longest", "prefix: longest match"}, {"exact", "prefix: exact"}, {"more", "prefix: more-specifics"},
      {"community", "community"},           {"as-path", "AS path regular expression"}};
  std::string out = "<form id=\"looking-glass\" method=\"get\" action=\"/lg\"><select name=\"by\">";
  for (const auto& [value, text] : kBy)
    out += fmt::format("<option value=\"{}\"{}>{}</option>", value, value == by ? " selected" : "", text);
  out += fmt::format("</select> <input name=\"q\" value=\"{}\" placeholder=\"192.0.2.1, 65000:100, _65002$\" "
                     "size=\"32\"> <button type=\"submit\">search</button></form>\n",
                     html_escape(q));
  return out;
}

namespace {

// Per peer, two small charts of the last hour: its prefixes, and its
// UPDATEs per second in and out.
std::string peer_charts(const HistoryView& h, const PeerSnapshot& p) {
  const PeerSeries* series = h.peer(p.name);
  if (series == nullptr) return "";
  ChartSeries prefixes{"prefixes", "#2463b0", {}};
  ChartSeries in{"UPDATEs in", "#1a8a3a", {}}, out{"UPDATEs out", "#d2700a", {}};
  for (const PeerSample& x : series->samples) {
    prefixes.values.push_back(x.prefixes);
    in.values.push_back(x.updates_in);
    out.values.push_back(x.updates_out);
  }
  ChartOptions o;
  o.capacity = h.capacity;
  std::string html = svg_chart({std::move(prefixes)}, o);
  o.unit = "/s";
  html += ' ';
  html += svg_chart({std::move(in), std::move(out)}, o);
  return html;
}

// The table's prefixes and routes, and the memory, over the last hour.
std::string table_charts(const HistoryView& h) {
  ChartSeries prefixes{"prefixes", "#2463b0", {}}, routes{"routes", "#7a3fb0", {}}, memory{"memory", "#b03a2e", {}};
  for (const TableSample& x : h.table) {
    prefixes.values.push_back(x.prefixes);
    routes.values.push_back(static_cast<double>(x.routes));
    memory.values.push_back(static_cast<double>(x.memory) / 1e6);
  }
  ChartOptions o;
  o.width = 360;
  o.height = 110;
  o.capacity = h.capacity;
  o.max_points = 120;
  o.labels = true;
  o.id = "table-chart";
  std::string html = "<p class=\"charts\">";
  html += svg_chart({std::move(prefixes), std::move(routes)}, o);
  html += ' ';
  o.id = "memory-chart";
  o.unit = " MB";
  html += svg_chart({std::move(memory)}, o);
  html += fmt::format(
      "<br><span class=\"key\"><b style=\"color:#2463b0\">prefixes</b>, <b style=\"color:#7a3fb0\">routes</b>; "
      "<b style=\"color:#b03a2e\">memory</b> (jemalloc's allocated, else the table's count); the last hour, a sample "
      "every {} s.</span></p>\n",
      h.interval_seconds);
  return html;
}

}  // namespace

std::string status_page_html(const Snapshot& s) {
  char buf[32];
  size_t up = 0;
  for (const auto& p : s.peers) up += p.state == fsm::State::kEstablished;
  std::string out;
  out += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">";
  out += "<meta http-equiv=\"refresh\" content=\"10\">";
  out += fmt::format("<title>petrel AS{} {}</title>", s.asn, html_escape(s.router_id));
  out += "<style>body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse}"
         "td,th{padding:.25em .8em;border-bottom:1px solid #ccc;text-align:left}"
         "td.n{text-align:right;font-variant-numeric:tabular-nums}.down{color:#b00}.up{color:#070}"
         "#peers td:first-child,td.chart{white-space:nowrap}td.chart{padding:.1em .8em}td.chart svg{vertical-align:middle}.key{font-size:.85em;color:#555}"
         "</style>";
  out += "</head><body>\n";
  out += fmt::format("<h1>petrel {} &mdash; AS{}, router ID {}</h1>\n", html_escape(s.version), s.asn,
                     html_escape(s.router_id));
  out += fmt::format("<p>Up {}. Sessions established: {} of {}. Connections refused from unknown addresses: {}.</p>\n",
                     duration_text(s.uptime_seconds), up, s.peers.size(), s.connections_refused);
  out += "<h2>Peers</h2>\n<table id=\"peers\"><tr><th>name</th><th>address</th><th>AS</th><th>state</th><th>for</th>"
         "<th>routes: received / best / advertised</th><th>last hour: prefixes; UPDATEs/s "
         "<b style=\"color:#1a8a3a\">in</b>, <b style=\"color:#d2700a\">out</b></th><th>last error</th>"
         "<th>description</th></tr>\n";
  for (const auto& p : s.peers) {
    std::string routes;
    for (size_t i = 0; i < codec::kKnownFamilies; ++i) {
      if (!shows_family(p, i)) continue;
      if (!routes.empty()) routes += "<br>";
      routes += fmt::format("{} {} / {} / {}", family_text(i, buf), p.routes[i], p.best[i], p.advertised[i]);
    }
    const bool established = p.state == fsm::State::kEstablished;
    out += fmt::format(
        "<tr><td><a href=\"/api/peers/{0}\">{0}</a></td><td>{1}</td><td class=\"n\">{2}</td>"
        "<td class=\"{3}\">{4}</td><td>{5}</td><td class=\"n\">{6}</td><td class=\"chart\">{9}</td><td>{7}</td>"
        "<td>{8}</td></tr>\n",
        html_escape(p.name), html_escape(p.address), p.remote_asn, established ? "up" : "down",
        state_json_name(p.state), p.uptime_seconds ? duration_text(*p.uptime_seconds) : "",
        routes, html_escape(p.last_error), html_escape(p.description), peer_charts(s.history, p));
  }
  out += "</table>\n<h2>Routing table</h2>\n<table><tr><th>family</th><th>prefixes</th></tr>\n";
  for (size_t i = 0; i < codec::kKnownFamilies; ++i)
    out += fmt::format("<tr><td>{}</td><td class=\"n\">{}</td></tr>\n", family_text(i, buf), s.table.prefixes[i]);
  out += fmt::format("</table>\n<p>{} routes, {} distinct attribute sets, {:.1f} MB counted by the table.</p>\n",
                     s.table.routes, s.table.attr_sets,
                     static_cast<double>(s.table.map_bytes + s.table.journal_bytes + s.table.attr_bytes) / 1e6);
  out += table_charts(s.history);
  out += "<h2>Refused by import policy</h2>\n";
  if (s.refused.empty()) {
    out += "<p>None kept (<code>peer.keep_refused</code>).</p>\n";
  } else {
    out += "<table id=\"refused\"><tr><th>peer</th><th>prefix</th><th>refused by</th></tr>\n";
    for (const auto& r : s.refused)
      out += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td></tr>\n", html_escape(r.peer),
                         html_escape(r.prefix), html_escape(r.reason));
    out += fmt::format("</table>\n<p>{} kept in all{}. All of them, with their attributes: "
                       "<a href=\"/api/refused\">/api/refused</a>.</p>\n",
                       s.refused_kept, s.refused.size() < s.refused_kept ? fmt::format(", the first {} shown", s.refused.size()) : "");
  }
  for (const auto& sec : s.sections) {
    out += fmt::format("<h2>{}</h2>\n<table class=\"section\">\n", html_escape(sec.title));
    for (const auto& [name, value] : sec.rows)
      out += fmt::format("<tr><td>{}</td><td>{}</td></tr>\n", html_escape(name), html_escape(value));
    out += fmt::format("</table>\n<p>More: <a href=\"{0}\">{0}</a>.</p>\n", html_escape(sec.json_path));
  }
  out += "<h2>Memory</h2>\n";
  if (s.memory.available) {
    out += "<table id=\"memory\"><tr><th>jemalloc</th><th>MB</th></tr>\n";
    for (const auto& k : kMemoryKinds)
      out += fmt::format("<tr><td>{}</td><td class=\"n\">{:.1f}</td></tr>\n", k.name,
                         static_cast<double>(s.memory.*k.field) / 1e6);
    out += fmt::format("</table>\n<p>Background thread: {}.</p>\n", s.memory.background_thread ? "on" : "off");
  } else {
    out += "<p>Not available: this build does not use jemalloc (a sanitizer build).</p>\n";
  }
  out += "<h2>Looking glass</h2>\n";
  out += looking_glass_form("longest", "");
  out += "<h2>Route lookup</h2>\n<form id=\"lookup\" method=\"get\" action=\"/api/routes\">"
         "<input type=\"hidden\" name=\"match\" value=\"longest\">"
         "<input name=\"prefix\" placeholder=\"192.0.2.1 or 2001:db8::/32\" size=\"30\"> "
         "<button type=\"submit\">routes</button></form>\n";
  out += "<p>One prefix's routes: <code>/api/routes/192.0.2.0/24</code>. JSON: <a href=\"/api/status\">/api/status</a>, "
         "<a href=\"/api/peers\">/api/peers</a>. Prometheus: <a href=\"/metrics\">/metrics</a>.</p>\n";
  out += "</body></html>\n";
  return out;
}

Response respond(std::string_view method, std::string_view path, const Snapshot& s) {
  Response r;
  if (refuse_method(method, r)) return r;
  if (path == "/") {
    r.content_type = kHtmlType;
    r.body = status_page_html(s);
  } else if (path == "/api/status") {
    r.body = status_json(s);
  } else if (path == "/api/peers" || path == "/api/peers/") {
    r.body = peers_json(s);
  } else if (path.starts_with("/api/peers/")) {
    std::string_view name = path.substr(std::string_view("/api/peers/").size());
    for (const auto& p : s.peers) {
      if (p.name == name) {
        r.body = peer_json(p);
        return r;
      }
    }
    r.status = 404;
    r.body = error_json(fmt::format("no peer named \"{}\"", name));
  } else if (path == "/metrics") {
    r.content_type = kMetricsType;
    r.body = metrics_text(s);
  } else {
    r.status = 404;
    r.body = error_json(fmt::format("no such resource: {}", path));
  }
  return r;
}

}  // namespace petrel::daemon::api
