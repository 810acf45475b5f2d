// The HTTP server (daemon/http.h): libmicrohttpd with its internal polling
// thread, on a socket we bind ourselves so a failure says exactly why.
#include "daemon/http.h"

#include <fmt/format.h>
#include <microhttpd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <exception>
#include <vector>

#include "daemon/api.h"
#include "daemon/dry_run.h"
#include "daemon/events.h"
#include "daemon/bmp_api.h"
#include "daemon/mrt_api.h"
#include "daemon/kernel_api.h"
#include "daemon/log.h"
#include "daemon/looking_glass.h"
#include "daemon/memory.h"
#include "daemon/rpki_api.h"
#include "daemon/server.h"
#include "daemon/sockets.h"
#include "table/export.h"

#ifndef PETREL_VERSION
#define PETREL_VERSION "unknown"
#endif

namespace petrel::daemon {

namespace {

constexpr int kBacklog = 16;

int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

api::PeerSnapshot peer_snapshot(const Peer& peer, int64_t now_ms) {
  constexpr auto kRelaxed = std::memory_order_relaxed;
  const std::shared_ptr<const PeerConfig> shown = peer.shown();  // a reload may change it meanwhile
  const PeerConfig& pc = *shown;
  const PeerCounters& c = peer.counters();
  PeerStatus st = peer.status();
  api::PeerSnapshot p;
  p.name = pc.name;
  p.address = pc.address_text();
  p.remote_asn = pc.asn;
  p.passive = pc.passive;
  p.enabled = pc.enabled;
  p.admin_down = peer.admin_down();
  p.hold_time = pc.hold_time;
  p.description = pc.description;
  p.families = pc.families;
  p.state = st.state;
  if (st.state == fsm::State::kEstablished && st.established_since_ms != 0)
    p.uptime_seconds = (now_ms - st.established_since_ms) / 1000;
  p.last_error = std::move(st.last_error);
  for (size_t i = 0; i < codec::kKnownFamilies; ++i) {
    p.announced[i] = c.announced[i].load(kRelaxed);
    p.withdrawn[i] = c.withdrawn[i].load(kRelaxed);
    p.routes[i] = peer.table_routes(i);
    p.refused[i] = c.refused[i].load(kRelaxed);
    p.advertised[i] = peer.advertised(i);
    p.best[i] = peer.best_routes(i);
  }
  p.unknown_family_updates = c.unknown_family_updates.load(kRelaxed);
  p.paths_refused = peer.paths_refused();
  p.refused_kept = peer.refused().kept();
  p.refused_not_kept = peer.refused().not_kept();
  p.duplicate_announcements = c.duplicate_announcements.load(kRelaxed);
  for (size_t t = 0; t < api::kMessageTypes && t < c.messages_in.size(); ++t) {
    p.messages_in[t] = c.messages_in[t].load(kRelaxed);
    p.messages_out[t] = c.messages_out[t].load(kRelaxed);
  }
  p.treat_as_withdraw = c.treat_as_withdraw.load(kRelaxed);
  p.attribute_discard = c.attribute_discard.load(kRelaxed);
  p.own_as_loops = c.own_as_loops.load(kRelaxed);
  p.reflection_loops = c.reflection_loops.load(kRelaxed);
  p.unnegotiated_family = c.unnegotiated_family.load(kRelaxed);
  p.empty_as_path = c.empty_as_path.load(kRelaxed);
  p.first_as = c.first_as.load(kRelaxed);
  p.enforce_first_as = pc.enforce_first_as;
  if (pc.local_role) p.local_role = std::string(table::role_name(*pc.local_role));
  if (st.peer_role) p.peer_role = std::string(table::role_name(*st.peer_role));
  p.route_leaks = c.route_leaks.load(kRelaxed);
  p.max_prefixes = pc.max_prefixes;
  p.max_prefixes_warn_only = pc.max_prefixes_warn_only;
  p.max_prefixes_restart = pc.max_prefixes_restart;
  p.max_prefixes_warn = pc.max_prefixes_warn;
  p.max_prefixes_warnings = c.max_prefixes_warnings.load(kRelaxed);
  p.max_prefixes_exceeded = c.max_prefixes_exceeded.load(kRelaxed);
  p.held_down = peer.held_down();
  p.damp_oscillations = pc.damp_oscillations;
  p.short_sessions = peer.quick_downs();
  p.damped_ms = peer.damped_for_ms();
  p.established_total = c.established.load(kRelaxed);
  p.connections_refused = c.connections_refused.load(kRelaxed);
  p.oversized = c.oversized.load(kRelaxed);
  for (size_t i = 0; i < codec::kKnownFamilies; ++i) p.stale[i] = peer.stale_routes(i);
  auto& g = p.graceful;
  g.enabled = pc.graceful.enabled;
  g.restart_time = pc.graceful.restart_time;
  g.stale_routes_time = pc.graceful.stale_routes_time;
  g.negotiated = st.graceful.negotiated;
  g.notification = st.graceful.notification;
  g.peer_restart_time = st.graceful.peer_restart_time;
  for (const auto& e : st.graceful.peer_families) g.peer_families.emplace_back(e.family, e.forwarding_preserved);
  g.long_lived_stale_time = pc.graceful.enabled ? pc.graceful.long_lived_stale_time : 0;
  g.long_lived_negotiated = st.graceful.long_lived_negotiated;
  for (const auto& e : st.graceful.peer_long_lived_families) g.peer_long_lived_families.emplace_back(e.family, e.stale_time);
  g.phase = graceful_phase_name(st.graceful.phase);
  g.stale_until_ms = st.graceful.stale_until_ms;
  g.restarts = st.graceful.restarts;
  g.expired = st.graceful.expired;
  g.long_lived = st.graceful.long_lived;
  return p;
}

// The status page's kernel, RPKI and BMP sections, when those parts are on.
// The first refused routes kept, for the status page ("why don't I have
// this prefix").
void add_refused(const Server& server, api::Snapshot& s) {
  for (const auto& peer : server.peers()) {
    const table::RefusedRoutes& store = peer->refused();
    s.refused_kept += store.kept();
    if (s.refused.size() >= api::kStatusRefused || store.empty()) continue;
    for (auto& e : store.find(std::nullopt, api::kStatusRefused - s.refused.size()))
      s.refused.push_back({peer->config().name, e.prefix.to_string(), std::move(e.reason)});
  }
}

void add_sections(const Server& server, api::Snapshot& s) {
  auto yes_no = [](bool b) { return std::string(b ? "yes" : "no"); };
  if (std::optional<KernelStatus> k = server.kernel_status()) {
    const KernelStatus& st = *k;
    if (st.enabled) {
      api::Snapshot::Section sec{"Kernel routes", std::string(kKernelPath), {}};
      sec.rows = {{"running", yes_no(st.running)},
                  {"table", std::to_string(st.table)},
                  {"installed", std::to_string(st.counts.installed)},
                  {"pending", std::to_string(st.counts.pending)},
                  {"unresolved next hop", std::to_string(st.counts.unresolved)},
                  {"refused", std::to_string(st.counts.refused)},
                  {"stale from an earlier run", std::to_string(st.counts.stale)},
                  {"last error", st.last_error.empty() ? "none" : st.last_error}};
      s.sections.push_back(std::move(sec));
    }
  }
  RpkiView v = rpki_view(server);
  if (v.enabled) {
    api::Snapshot::Section sec{"RPKI", std::string(kRpkiPath), {}};
    if (v.vrps) {
      sec.rows.emplace_back("VRPs", fmt::format("{} IPv4, {} IPv6", v.vrps->v4, v.vrps->v6));
      sec.rows.emplace_back("from", v.vrps->source.empty() ? "none" : v.vrps->source);
    }
    // The cache's state over its transport, and why it failed while it
    // waits to be dialled again (a refused TLS certificate, SSH login ...).
    for (const auto& c : v.caches)
      sec.rows.emplace_back(fmt::format("cache {}", c.name),
                            fmt::format("{} over {}{}{}", c.state, c.transport, c.active ? " (in use)" : "",
                                        c.failed && !c.last_error.empty() ? ", failed: " + c.last_error : ""));
    const auto& n = v.routes;
    sec.rows.emplace_back("routes valid / invalid / not found",
                          fmt::format("{} / {} / {}", n[static_cast<size_t>(table::Validation::kValid)],
                                      n[static_cast<size_t>(table::Validation::kInvalid)],
                                      n[static_cast<size_t>(table::Validation::kNotFound)]));
    sec.rows.emplace_back("invalid routes rejected", yes_no(v.reject_invalid));
    if (v.vrps) sec.rows.emplace_back("ASPAs", fmt::format("{}", v.vrps->aspas));
    const auto& a = v.aspa_routes;
    sec.rows.emplace_back("ASPA: paths valid / invalid / unknown / not verified",
                          fmt::format("{} / {} / {} / {}", a[static_cast<size_t>(table::AspaState::kValid)],
                                      a[static_cast<size_t>(table::AspaState::kInvalid)],
                                      a[static_cast<size_t>(table::AspaState::kUnknown)],
                                      a[static_cast<size_t>(table::AspaState::kUnchecked)]));
    sec.rows.emplace_back("ASPA-invalid routes rejected", yes_no(v.reject_aspa_invalid));
    s.sections.push_back(std::move(sec));
  }
  if (std::vector<BmpStationStatus> bmp = server.bmp_status(); !bmp.empty()) {
    api::Snapshot::Section sec{"BMP stations", std::string(kBmpPath), {}};
    for (const BmpStationStatus& b : bmp)
      sec.rows.emplace_back(b.name, fmt::format("{}, {} messages, {} drops{}", b.state, b.messages, b.drops,
                                                b.last_error.empty() ? "" : " (" + b.last_error + ")"));
    s.sections.push_back(std::move(sec));
  }
}

// Next-hop tracking's figures, for /metrics only: a walk of the table.
void add_nexthop_stats(const table::Table& t, api::Snapshot& s) {
  if (!t.tracks_nexthops()) return;
  const table::NexthopReport nh = t.nexthop_report();
  s.table.routes_ineligible = nh.ineligible_routes;
  for (const auto& x : nh.nexthops) ++(x.state.resolved ? s.table.nexthops_resolved : s.table.nexthops_unresolved);
}

api::Snapshot snapshot(const HttpServer::Context& ctx) {
  const Server& server = *ctx.server;
  int64_t now = steady_ms();
  api::Snapshot s;
  s.version = PETREL_VERSION;
  s.asn = ctx.asn;
  s.router_id = ctx.router_id;
  s.uptime_seconds = (now - ctx.started_ms) / 1000;
  s.connections_refused = server.refused_connections();
  s.peers.reserve(server.peers().size());
  for (const auto& peer : server.peers()) s.peers.push_back(peer_snapshot(*peer, now));
  const table::Table& t = server.table();
  for (size_t i = 0; i < codec::kKnownFamilies; ++i) s.table.prefixes[i] = t.prefixes(static_cast<table::FamilyIndex>(i));
  s.table.routes = t.routes();
  auto mem = t.memory();
  s.table.attr_sets = mem.attr_sets;
  s.table.attr_bytes = mem.attr_bytes;
  s.table.map_bytes = mem.map_bytes;
  s.table.journal_bytes = mem.journal_bytes;
  const table::ExportGroups::Stats g = server.export_groups().stats();
  s.exports.groups = g.groups;
  s.exports.members = g.members;
  s.exports.updates_encoded = g.messages;
  s.exports.stream_bytes = g.stream_bytes;
  s.memory = read_memory();
  return s;
}

// What best-path selection reads of a route (table/best_path.h), for
// GET /api/routes/{prefix}/explain.
api::BestPathInputs best_path_inputs(const table::RouteView& rv, const table::BestPathOptions& o) {
  api::BestPathInputs in;
  const table::Attrs& a = *rv.attrs;
  in.local_pref = table::degree_of_preference(table::Candidate{rv.attrs, rv.peer, rv.path_id, rv.slot, true}, o);
  in.as_path_length = a.as_path_length();
  in.origin = a.origin();
  if (a.has_med()) in.med = a.med();
  in.neighbour_as = a.neighbour_as();
  in.external = !rv.peer->internal;
  uint32_t id = a.has_originator_id() ? a.originator_id() : rv.peer->router_id;
  in.router_id = net::IpAddress::v4(id).to_string();
  in.cluster_list_length = a.cluster_list_length();
  return in;
}

// Every unicast prefix (with a route from `peer` when not empty), in
// shard order, for api::PrefixListings: one walk, each shard under its
// lock only for copying its prefixes out.
std::vector<net::Prefix> collect_prefixes(const table::Table& t, std::string_view peer) {
  const auto v4 = static_cast<table::FamilyIndex>(codec::known_index(codec::kIpv4Unicast));
  const auto v6 = static_cast<table::FamilyIndex>(codec::known_index(codec::kIpv6Unicast));
  std::vector<net::Prefix> out;
  out.reserve(t.prefixes(v4) + t.prefixes(v6));
  t.walk([&](const table::Change& c, const std::optional<table::RouteView>&, const auto& routes) {
    if (c.family != v4 && c.family != v6) return;
    if (!peer.empty()) {
      bool from_peer = false;
      for (const auto& r : routes) from_peer = from_peer || t.peer(r.peer).name == peer;
      if (!from_peer) return;
    }
    out.push_back(c.prefix);
  });
  return out;
}

MHD_Result collect_arg(void* cls, MHD_ValueKind, const char* key, const char* value) {
  static_cast<api::QueryArgs*>(cls)->emplace_back(key, value != nullptr ? value : "");
  return MHD_YES;
}

// One prefix's routes for the API, read under its shard's lock: the best
// first, each other route with the best-path step that decided against it.
bool lookup_prefix(const table::Table& t, const net::Prefix& p, api::PrefixSnapshot& out) {
  const codec::Family fam = p.family() == net::IpFamily::V6 ? codec::kIpv6Unicast : codec::kIpv4Unicast;
  const auto fi = static_cast<table::FamilyIndex>(codec::known_index(fam));
  out.routes.clear();
  bool found = t.lookup_all(fi, p, [&](std::span<const table::RouteView> views, int best) {
    auto cand = [](const table::RouteView& rv) {
      return table::Candidate{rv.attrs, rv.peer, rv.path_id, rv.slot, true, rv.igp_cost};
    };
    auto add = [&](const table::RouteView& rv, bool is_best) {
      api::RouteSnapshot r;
      r.peer = rv.peer->name;
      r.peer_address = rv.peer->address.to_string();
      r.path_id = rv.path_id;
      r.best = is_best;
      r.stale = rv.stale;
      r.eligible = rv.nexthop_resolved;
      r.igp_cost = rv.igp_cost;
      if (rv.validation != table::Validation::kUnchecked) r.rpki = validation_name(rv.validation);
      if (rv.aspa != table::AspaState::kUnchecked) r.aspa = aspa_name(rv.aspa);
      if (!is_best && !rv.nexthop_resolved) {
        r.lost_by = "unresolved next hop";  // out before any step (RFC 4271 9.1.2.1)
      } else if (!is_best && best >= 0) {
        const auto d = table::compare_pair(cand(views[static_cast<size_t>(best)]), cand(rv), t.best_path_options());
        r.lost_by = std::string(table::decision_name(d));
        r.lost_at = static_cast<int>(d) - static_cast<int>(table::Decision::kLongLivedStale);
      }
      r.attributes = rv.attrs->decode().decode();
      r.inputs = best_path_inputs(rv, t.best_path_options());
      out.routes.push_back(std::move(r));
    };
    if (best >= 0) add(views[static_cast<size_t>(best)], true);
    for (size_t i = 0; i < views.size(); ++i)
      if (static_cast<int>(i) != best) add(views[i], false);
  });
  if (!found) return false;
  out.steps.clear();
  for (auto d = static_cast<int>(table::Decision::kLongLivedStale); d <= static_cast<int>(table::Decision::kPeerSlot);
       ++d)
    out.steps.emplace_back(table::decision_name(static_cast<table::Decision>(d)));
  char buf[32];
  out.prefix = p.to_string();
  out.family = std::string(codec::family_name(fam, buf));
  return true;
}

// GET /api/routes/{prefix}/explain?peer=NAME: the export gate to the peer
// for the prefix's best route, as its exporter walks it.
std::optional<api::ExportExplanation> explain_export(const Server& server, const net::Prefix& p,
                                                     std::string_view name, std::string* error) {
  const Peer* peer = nullptr;
  for (const auto& x : server.peers())
    if (x->config().name == name) peer = x.get();
  if (!peer) {
    *error = fmt::format("no peer is named \"{}\"", name);
    return std::nullopt;
  }
  const Peer::ExportView view = peer->export_view();
  api::ExportExplanation e;
  e.peer = std::string(name);
  e.policy = view.policy.none ? (view.policy.rfc8212 ? "none (RFC 8212)" : "none")
             : view.policy.filter ? view.policy.filter->name()
                                  : "all";
  e.established = view.target.has_value();
  const codec::Family fam = p.family() == net::IpFamily::V6 ? codec::kIpv6Unicast : codec::kIpv4Unicast;
  const auto fi = static_cast<table::FamilyIndex>(codec::known_index(fam));
  struct Best {
    codec::AttributeSet attrs;
    table::PeerInfo source;
    uint16_t slot = 0;
    uint32_t path_id = 0;
    table::Validation validation{};
    table::AspaState aspa{};
  };
  std::optional<Best> best;
  server.table().lookup_all(fi, p, [&](std::span<const table::RouteView> views, int b) {
    if (b < 0) return;
    const table::RouteView& rv = views[static_cast<size_t>(b)];
    best = Best{rv.attrs->decode(), *rv.peer, rv.slot, rv.path_id, rv.validation, rv.aspa};
  });
  if (!best) {
    *error = fmt::format("no best route to {} in the table", p.to_string());
    return std::nullopt;
  }
  e.route_peer = best->source.name;
  e.route_path_id = best->path_id;
  table::PolicyVerdict verdict;
  verdict.accept = !view.policy.none;
  if (view.policy.filter) {
    table::PolicyChain::Prepared scratch;
    verdict = view.policy.filter->evaluate(best->attrs, table::export_facts(p, best->source, best->validation, best->aspa),
                                           scratch);
    e.policy_verdict = verdict.accept ? "accept" : "reject";
    e.decided_by = view.policy.filter->decided_label(verdict);
    for (size_t i = 0; i < verdict.fired_count; ++i) e.changes.push_back(view.policy.filter->term_label(verdict.fired[i]));
  } else if (view.policy.none) {
    e.policy_verdict = "reject";
    e.decided_by = e.policy;
  }
  if (!view.target) return e;
  e.family_negotiated = !view.families || view.families->has(fam);
  table::Exported out = table::export_with_changes(*view.target, table::ExportSource{&best->source, best->slot}, fam,
                                                   best->attrs, view.policy.filter.get(), verdict);
  e.rules = std::string(table::export_verdict_name(out.verdict));
  e.sent = verdict.accept && e.family_negotiated && out.verdict == table::ExportVerdict::kSend;
  if (e.sent) e.attributes = out.attrs.decode();
  return e;
}

// GET /api/events: a stream that lasts until the client goes, is dropped
// for falling behind, or the server stops.
// A comment every 5 s keeps a quiet stream from looking idle: less when
// [http] idle_timeout is shorter than 10 s.
int keepalive_ms(uint32_t idle_timeout_s) { return std::min<int>(5000, static_cast<int>(idle_timeout_s) * 500); }

struct EventStream {
  EventHub* hub;
  std::shared_ptr<EventClient> client;
  int keepalive_ms;
  std::string pending = ": connected\n\n";  // tells the client it is subscribed
};

ssize_t event_stream_read(void* cls, uint64_t, char* buf, size_t max) {
  auto* s = static_cast<EventStream*>(cls);
  if (s->pending.empty()) {
    auto next = s->client->next(s->keepalive_ms);
    if (!next) return MHD_CONTENT_READER_END_OF_STREAM;
    s->pending = std::move(*next);
  }
  size_t n = std::min(max, s->pending.size());
  std::memcpy(buf, s->pending.data(), n);
  s->pending.erase(0, n);
  return static_cast<ssize_t>(n);
}

void event_stream_free(void* cls) {
  auto* s = static_cast<EventStream*>(cls);
  s->hub->unsubscribe(s->client);
  delete s;
}

// The stream's response, or nullptr with r set to the error to send.
MHD_Response* event_stream(const HttpServer::Context& ctx, MHD_Connection* connection, std::string_view method,
                           api::Response& r) {
  r.content_type = api::kJsonType;
  if (method != "GET") {
    r.status = 405;
    r.allow = "GET";
    r.body = api::error_json("the event stream takes GET only");
    return nullptr;
  }
  api::QueryArgs args;
  (void)MHD_get_connection_values(connection, MHD_GET_ARGUMENT_KIND, &collect_arg, &args);
  EventFilter filter;
  for (const auto& [k, v] : args) {
    if (k == "peer") {
      filter.peer = v;
    } else if (k == "prefix") {
      filter.prefix = net::Prefix::parse(v, net::Prefix::HostBits::kReject);
      if (!filter.prefix) {
        r.status = 400;
        r.body = api::error_json("prefix: not a prefix: \"" + v + "\"");
        return nullptr;
      }
    } else {
      r.status = 400;
      r.body = api::error_json("unknown parameter \"" + k + "\" (peer, prefix)");
      return nullptr;
    }
  }
  auto client = ctx.events->subscribe(std::move(filter));
  if (!client) {
    r.status = 503;
    r.body = api::error_json("too many event streams open");
    return nullptr;
  }
  auto* s = new EventStream{ctx.events, std::move(client), keepalive_ms(ctx.idle_timeout)};
  MHD_Response* resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, &event_stream_read, s,
                                                         &event_stream_free);
  if (resp == nullptr) {
    event_stream_free(s);
    return nullptr;
  }
  (void)MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
  (void)MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
  return resp;
}

MHD_Result answer(void* cls, MHD_Connection* connection, const char* url, const char* method, const char*,
                  const char*, size_t* upload_size, void** request_state) {
  // The first call only announces the request; answering there would make
  // libmicrohttpd close the connection (no keep-alive). A body, which no
  // endpoint takes, is read and dropped.
  static int seen;
  if (*request_state == nullptr) {
    *request_state = &seen;
    return MHD_YES;
  }
  if (*upload_size != 0) {
    *upload_size = 0;
    return MHD_YES;
  }
  const auto* ctx = static_cast<const HttpServer::Context*>(cls);
  api::Response r;
  if (std::string_view(url) == "/api/events" && ctx->events != nullptr) {
    MHD_Response* stream = event_stream(*ctx, connection, method, r);
    if (stream != nullptr) {
      MHD_Result ok = MHD_queue_response(connection, MHD_HTTP_OK, stream);
      MHD_destroy_response(stream);
      return ok;
    }
    if (r.status == 200) return MHD_NO;  // out of memory
  }
  try {
    auto lookup = [&](const net::Prefix& p, api::PrefixSnapshot& out) {
      return lookup_prefix(ctx->server->table(), p, out);
    };
    if (r.status != 200) {
      // an event stream's error, already set
    } else if (std::string_view(url) == api::kRouteQueryPath) {
      api::QueryArgs args;
      (void)MHD_get_connection_values(connection, MHD_GET_ARGUMENT_KIND, &collect_arg, &args);
      r = api::respond_route_query(method, args, lookup, [&](const auto& after, size_t limit, std::string_view peer) {
        return ctx->listings->page(after, limit, peer, steady_ms());
      });
    } else if (std::string_view(url) == kPolicyTestPath) {
      api::QueryArgs args;
      (void)MHD_get_connection_values(connection, MHD_GET_ARGUMENT_KIND, &collect_arg, &args);
      r = policy_test(*ctx->server, method, args);
    } else if (std::string_view(url) == kLookingGlassPath) {
      api::QueryArgs args;
      (void)MHD_get_connection_values(connection, MHD_GET_ARGUMENT_KIND, &collect_arg, &args);
      r = looking_glass(*ctx->server, method, args, lookup);
    } else if (std::string_view(url) == api::kHistoryPath) {
      api::QueryArgs args;
      (void)MHD_get_connection_values(connection, MHD_GET_ARGUMENT_KIND, &collect_arg, &args);
      r = api::respond_history(method, args, [&](std::string_view peer) { return ctx->server->history().view(peer); });
    } else if (std::string_view(url) == api::kRefusedPath) {
      api::QueryArgs args;
      (void)MHD_get_connection_values(connection, MHD_GET_ARGUMENT_KIND, &collect_arg, &args);
      std::vector<api::RefusedPeer> peers;
      for (const auto& peer : ctx->server->peers()) {
        const table::RefusedRoutes& store = peer->refused();
        peers.push_back({peer->config().name, store.kept(), store.not_kept(), store.max(),
                         [&store](const std::optional<net::Prefix>& prefix, size_t limit) {
                           std::vector<api::RefusedEntry> out;
                           for (auto& e : store.find(prefix, limit))
                             out.push_back({e.prefix, e.path_id, std::move(e.reason),
                                            e.attrs ? std::optional(e.attrs->decode()) : std::nullopt});
                           return out;
                         }});
      }
      r = api::respond_refused(method, args, peers);
    } else if (std::string_view(url).starts_with(api::kRoutesPath)) {
      api::QueryArgs args;
      (void)MHD_get_connection_values(connection, MHD_GET_ARGUMENT_KIND, &collect_arg, &args);
      api::ExportExplain to;
      for (const auto& [key, value] : args)
        if (key == "peer")
          to = [ctx, name = value](const net::Prefix& p, std::string* error) {
            return explain_export(*ctx->server, p, name, error);
          };
      r = api::respond_routes(
          method, url,
          [&](const net::Prefix& p, api::PrefixSnapshot& out) { return lookup_prefix(ctx->server->table(), p, out); },
          to);
    }
    else if (std::string_view(url) == kRpkiPath)
      r = rpki_response(method, rpki_view(*ctx->server));
    else if (std::string_view(url) == kKernelPath)
      r = kernel_response(method, ctx->server->kernel_status());
    else if (std::string_view(url) == kOriginPath)
      r = origin_response(method, ctx->server->origin_status());
    else if (std::string_view(url) == kNexthopsPath)
      r = nexthops_response(method, ctx->server->nexthops_status());
    else if (std::string_view(url) == kBmpPath)
      r = bmp_response(method, ctx->server->bmp_status());
    else if (std::string_view(url) == kMrtPath) {
      if (!api::refuse_method(method, r)) r.body = mrt_json(ctx->server->mrt_status());
    }
    else {
      api::Snapshot snap = snapshot(*ctx);
      if (std::string_view(url) == "/metrics") add_nexthop_stats(ctx->server->table(), snap);
      // Only the page shows them (RPKI's route counts may walk the table).
      if (std::string_view(url) == "/") {
        add_sections(*ctx->server, snap);
        add_refused(*ctx->server, snap);
        snap.history = ctx->server->history().view();
      }
      r = api::respond(method, url, snap);
    }
    if (std::string_view(url) == "/metrics" && r.status == 200)
      if (std::optional<KernelStatus> k = ctx->server->kernel_status()) r.body += kernel_metrics(*k);
    if (std::string_view(url) == "/metrics" && r.status == 200) r.body += rpki_metrics(rpki_view(*ctx->server));
    if (std::string_view(url) == "/metrics" && r.status == 200) r.body += origin_metrics(ctx->server->origin_status());
    if (std::string_view(url) == "/metrics" && r.status == 200) r.body += bmp_metrics(ctx->server->bmp_status());
    if (std::string_view(url) == "/metrics" && r.status == 200) r.body += mrt_metrics(ctx->server->mrt_status());
  } catch (const std::exception& e) {
    log(LogLevel::kError, "http-error", {{"url", url}}, e.what());
    r.status = 500;
    r.content_type = api::kJsonType;
    r.body = api::error_json("internal error");
  }
  MHD_Response* resp = MHD_create_response_from_buffer(r.body.size(), r.body.data(), MHD_RESPMEM_MUST_COPY);
  if (resp == nullptr) return MHD_NO;
  (void)MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, std::string(r.content_type).c_str());
  (void)MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
  if (!r.allow.empty()) (void)MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, std::string(r.allow).c_str());
  MHD_Result ok = MHD_queue_response(connection, r.status, resp);
  MHD_destroy_response(resp);
  return ok;
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
void mhd_log(void*, const char* fmt, va_list ap) {
  char buf[512];
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  std::string_view text(buf);
  while (!text.empty() && text.back() == '\n') text.remove_suffix(1);
  log(LogLevel::kWarn, "http-library", {}, text);
}
#pragma GCC diagnostic pop

}  // namespace

HttpServer::HttpServer() = default;

HttpServer::~HttpServer() { stop(); }

namespace {

// The listening socket of `listen`, or -1 with why in err.
int open_http_listener(const Endpoint& listen, std::string& err) {
  int fd = open_listener(SocketAddress{listen.address, listen.port, {}, 0}, kBacklog, err, BindMode::kExact);
  if (fd >= 0) return fd;
  if (err.find("Address already in use") != std::string::npos) err += " (is another petrel running?)";
  if (err.find("Cannot assign requested address") != std::string::npos) err += " (the address is not on this host)";
  return -1;
}

}  // namespace

bool HttpServer::bind(const Config& config) {
  ctx_ = std::make_unique<Context>();
  ctx_->asn = config.router.asn;
  ctx_->router_id = config.router.router_id.to_string();
  ctx_->started_ms = steady_ms();
  limits_ = config.http;
  ctx_->idle_timeout = config.http.idle_timeout;
  if (!config.http.listen) {
    log(LogLevel::kInfo, "http-disabled", {}, "[http] listen is empty");
    return true;
  }
  where_ = config.http.listen->to_string();
  std::string err;
  fd_ = open_http_listener(*config.http.listen, err);
  if (fd_ < 0) {
    log(LogLevel::kError, "http-listen-failed", {{"address", where_}}, err);
    return false;
  }
  if (auto local = local_endpoint(fd_)) port_ = local->port;
  return true;
}

MHD_Daemon* HttpServer::start_daemon(int fd, const HttpConfig& limits, Context& ctx) {
  // A thread per connection: an event stream's reader waits for events.
  // MHD_USE_ITC: MHD_quiesce_daemon() can hand the socket on (rebind()).
  unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ERROR_LOG | MHD_USE_ITC;
  return MHD_start_daemon(flags, 0, nullptr, nullptr, &answer, &ctx,
                          MHD_OPTION_EXTERNAL_LOGGER, &mhd_log, nullptr,  // first, or MHD logs to stderr
                          MHD_OPTION_LISTEN_SOCKET, static_cast<MHD_socket>(fd),
                          // [http]: the API is for operators and scrapers, not
                          // crowds; one client address cannot take every
                          // connection, and a silent one is dropped.
                          MHD_OPTION_CONNECTION_LIMIT, static_cast<unsigned>(limits.max_connections),
                          MHD_OPTION_PER_IP_CONNECTION_LIMIT, static_cast<unsigned>(limits.max_connections_per_address),
                          MHD_OPTION_CONNECTION_TIMEOUT, static_cast<unsigned>(limits.idle_timeout), MHD_OPTION_END);
}

void HttpServer::log_listening() const {
  log(LogLevel::kInfo, "http-listening",
      {{"address", where_}, {"port", port_}, {"max_connections", limits_.max_connections},
       {"max_connections_per_address", limits_.max_connections_per_address},
       {"idle_timeout", limits_.idle_timeout}});
}

bool HttpServer::start(const Server& server) {
  server_ = &server;
  if (fd_ < 0) return true;  // disabled
  start_events();
  daemon_ = start_daemon(fd_, limits_, *ctx_);
  if (daemon_ == nullptr) {
    log(LogLevel::kError, "http-start-failed", {{"address", where_}}, "libmicrohttpd could not start");
    events_->stop();  // now: it follows the server's table, which goes before this object
    return false;
  }
  fd_ = -1;  // libmicrohttpd owns and closes it now
  log_listening();
  return true;
}

void HttpServer::start_events() {
  ctx_->server = server_;
  if (!events_) {
    events_ = std::make_unique<EventHub>();
    events_->start(server_->table());
    const Server* server = server_;
    listings_ = std::make_unique<api::PrefixListings>(
        [server](std::string_view peer) { return collect_prefixes(server->table(), peer); });
  }
  ctx_->events = events_.get();
  ctx_->listings = listings_.get();
}

void HttpServer::stop_daemon(MHD_Daemon* d) {
  if (d == nullptr) return;
  // Its event streams end first (their threads wait for events), then
  // libmicrohttpd joins its threads.
  if (events_) events_->close_clients();
  MHD_stop_daemon(d);
}

std::string HttpServer::rebind(const Config& config) {
  const HttpConfig& next = config.http;
  if (server_ == nullptr || !ctx_) return "the HTTP server has not started";
  if (!next.listen) {
    stop_daemon(daemon_);
    daemon_ = nullptr;
    limits_ = next;
    log(LogLevel::kInfo, "http-disabled", {}, "[http] listen is empty");
    return {};
  }
  const std::string where = next.listen->to_string();
  // The new socket first: when it cannot be had, the old one serves on.
  // The same address (new limits): the running daemon hands its socket
  // on (MHD_quiesce_daemon), so no connection is refused meanwhile.
  const bool same = daemon_ != nullptr && limits_.listen == next.listen;
  int fd = -1;
  if (same) {
    fd = MHD_quiesce_daemon(daemon_);
    if (fd == MHD_INVALID_SOCKET) return where + ": libmicrohttpd did not hand its socket on";
  } else {
    std::string err;
    fd = open_http_listener(*next.listen, err);
    if (fd < 0) return where + ": " + err;
  }
  start_events();  // when HTTP was off until now
  // Each daemon its own context: the old one's threads read theirs until
  // it stops.
  auto ctx = std::make_unique<Context>(*ctx_);
  ctx->idle_timeout = next.idle_timeout;
  MHD_Daemon* d = start_daemon(fd, next, *ctx);
  std::string failed;
  HttpConfig limits = next;
  if (d == nullptr && same) {
    // The quiesced daemon accepts no more: one with the old limits takes
    // the socket back.
    failed = where + ": libmicrohttpd could not start with the new limits; the old ones stay";
    limits = limits_;
    ctx = std::make_unique<Context>(*ctx_);
    d = start_daemon(fd, limits, *ctx);
  }
  if (d == nullptr) {
    ::close(fd);
    if (!same) return where + ": libmicrohttpd could not start";
    stop_daemon(daemon_);
    daemon_ = nullptr;
    return failed + "; it did not start again either: HTTP is off until the next reload or restart";
  }
  stop_daemon(daemon_);  // closes the old socket (not a quiesced one: it is d's now)
  daemon_ = d;
  ctx_ = std::move(ctx);
  limits_ = limits;
  where_ = where;
  port_ = 0;
  if (auto local = local_endpoint(fd)) port_ = local->port;
  log_listening();
  return failed;
}

void HttpServer::stop() {
  // First the hub: it ends every event stream, whose threads libmicrohttpd
  // then joins.
  if (events_) events_->stop();
  if (daemon_ != nullptr) {
    MHD_stop_daemon(daemon_);
    daemon_ = nullptr;
  }
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

}  // namespace petrel::daemon
