// GET /api/rpki and the RPKI metrics (daemon/rpki_api.h).
#include "daemon/rpki_api.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>

#include "crates/json/json.h"
#include "daemon/metrics.h"
#include "rpki/client.h"

namespace petrel::daemon {

namespace {

constexpr table::Validation kStates[] = {table::Validation::kValid, table::Validation::kInvalid,
                                         table::Validation::kNotFound};
constexpr table::AspaState kAspaStates[] = {table::AspaState::kValid, table::AspaState::kInvalid,
                                            table::AspaState::kUnknown, table::AspaState::kUnchecked};

// The cache states a metric reports, one sample each (1 for the current).
constexpr std::string_view kCacheStates[] = {"down", "connecting", "syncing", "in-sync"};

std::string_view cache_state(const RpkiCacheStatus& c) {
  if (c.state == "down") return "down";
  if (c.state == "connecting" || c.state == "handshake") return "connecting";
  return c.in_sync ? "in-sync" : "syncing";
}

void optional_number(json::Writer& w, std::string_view key, const auto& v) {
  w.key(key);
  if (v)
    w.number(*v);
  else
    w.null();
}

}  // namespace

std::string_view validation_name(table::Validation v) {
  switch (v) {
    case table::Validation::kUnchecked: return "unchecked";
    case table::Validation::kNotFound: return "not-found";
    case table::Validation::kValid: return "valid";
    case table::Validation::kInvalid: return "invalid";
  }
  return "unchecked";
}

std::string_view aspa_name(table::AspaState s) {
  switch (s) {
    case table::AspaState::kUnchecked: return "unchecked";
    case table::AspaState::kUnknown: return "unknown";
    case table::AspaState::kValid: return "valid";
    case table::AspaState::kInvalid: return "invalid";
  }
  return "unchecked";
}

TableValidationCounts count_validation(const table::Table& t) {
  TableValidationCounts n;
  std::map<uint16_t, ValidationCounts> by_slot;
  t.walk([&](const table::Change&, const std::optional<table::RouteView>&, std::span<const table::Route> routes) {
    for (const table::Route& r : routes) {
      const auto s = static_cast<size_t>(table::validation_of(r));
      ++n.routes[s];
      ++by_slot[r.peer][s];
      ++n.aspa[static_cast<size_t>(table::aspa_of(r))];
    }
  });
  for (const auto& [slot, counts] : by_slot) n.peers.push_back({t.peer(slot).name, counts});
  std::sort(n.peers.begin(), n.peers.end(),
            [](const PeerValidationCounts& a, const PeerValidationCounts& b) { return a.peer < b.peer; });
  return n;
}

std::string rpki_json(const RpkiView& v) {
  std::string out;
  json::Writer w(out);
  w.begin_object();
  w.key_raw("enabled").boolean(v.enabled);
  w.key_raw("reject_invalid").boolean(v.reject_invalid);
  w.key_raw("reject_aspa_invalid").boolean(v.reject_aspa_invalid);
  w.key_raw("vrps").begin_object();
  if (v.vrps) {
    w.member("ipv4", static_cast<uint64_t>(v.vrps->v4));
    w.member("ipv6", static_cast<uint64_t>(v.vrps->v6));
    w.key_raw("source");
    if (v.vrps->source.empty())
      w.null();
    else
      w.string(v.vrps->source);
    optional_number(w, "serial", v.vrps->serial);
    w.member("published_unix_ms", v.vrps->published_unix_ms);
  }
  w.end_object();
  w.member("aspas", static_cast<uint64_t>(v.vrps ? v.vrps->aspas : 0));
  auto counts = [&](const ValidationCounts& c) {
    for (table::Validation s : kStates) w.member(validation_name(s), c[static_cast<size_t>(s)]);
  };
  w.key_raw("routes").begin_object();
  counts(v.routes);
  w.end_object();
  w.key_raw("aspa_routes").begin_object();
  for (table::AspaState s : kAspaStates) w.member(aspa_name(s), v.aspa_routes[static_cast<size_t>(s)]);
  w.end_object();
  w.key_raw("peers").begin_array();
  for (const PeerValidationCounts& p : v.peers) {
    w.begin_object();
    w.member("peer", p.peer);
    counts(p.routes);
    w.end_object();
  }
  w.end_array();
  w.key_raw("caches").begin_array();
  for (const RpkiCacheStatus& c : v.caches) {
    w.begin_object();
    w.member("cache", c.name);
    w.member("preference", static_cast<unsigned>(c.preference));
    w.member("state", cache_state(c));
    w.member("client_state", c.state);
    w.key_raw("active").boolean(c.active);
    w.key_raw("failed").boolean(c.failed);
    w.member("version", static_cast<unsigned>(c.version));
    optional_number(w, "session_id", c.session_id);
    optional_number(w, "serial", c.serial);
    w.member("vrps", static_cast<uint64_t>(c.vrps));
    w.member("aspas", static_cast<uint64_t>(c.aspas));
    w.member("refresh", c.refresh);
    w.member("retry", c.retry);
    w.member("expire", c.expire);
    w.key_raw("last_update_unix_ms");
    if (c.last_update_unix_ms)
      w.number(c.last_update_unix_ms);
    else
      w.null();
    w.member("updates", c.updates);
    w.member("connects", c.connects);
    w.member("failures", c.failures);
    w.member("transport", c.transport);
    w.key_raw("last_error");
    if (c.last_error.empty())
      w.null();
    else
      w.string(c.last_error);
    w.end_object();
  }
  w.end_array();
  w.key_raw("slurm").begin_object();
  w.key_raw("files").begin_array();
  for (const std::string& f : v.slurm.files) w.string(f);
  w.end_array();
  w.member("prefix_filters", static_cast<uint64_t>(v.slurm.prefix_filters));
  w.member("prefix_assertions", static_cast<uint64_t>(v.slurm.prefix_assertions));
  w.member("bgpsec_filters", static_cast<uint64_t>(v.slurm.bgpsec_filters));
  w.member("bgpsec_assertions", static_cast<uint64_t>(v.slurm.bgpsec_assertions));
  w.member("aspa_filters", static_cast<uint64_t>(v.slurm.aspa_filters));
  w.member("aspa_assertions", static_cast<uint64_t>(v.slurm.aspa_assertions));
  w.member("vrps_removed", static_cast<uint64_t>(v.vrps ? v.vrps->slurm_removed : 0));
  w.member("vrps_added", static_cast<uint64_t>(v.vrps ? v.vrps->slurm_added : 0));
  w.member("aspas_removed", static_cast<uint64_t>(v.vrps ? v.vrps->slurm_aspas_removed : 0));
  w.member("aspas_added", static_cast<uint64_t>(v.vrps ? v.vrps->slurm_aspas_added : 0));
  w.end_object();
  w.end_object();
  out += '\n';
  return out;
}

std::string rpki_metrics(const RpkiView& v) {
  if (!v.enabled) return {};
  std::string out;
  Metrics m(out);
  m.family("petrel_rpki_vrps", "gauge", "VRPs in force (from the preferred cache in sync), by family.");
  m.sample({{"family", "ipv4"}}, v.vrps ? v.vrps->v4 : 0);
  m.sample({{"family", "ipv6"}}, v.vrps ? v.vrps->v6 : 0);
  m.family("petrel_rpki_aspas", "gauge", "ASPAs in force (RTR version 2, from the same cache as the VRPs).");
  m.sample({}, v.vrps ? v.vrps->aspas : 0);
  m.family("petrel_rpki_slurm_entries", "gauge", "SLURM (RFC 8416) filters and assertions in force, by kind.");
  m.sample({{"kind", "prefix_filter"}}, v.slurm.prefix_filters);
  m.sample({{"kind", "prefix_assertion"}}, v.slurm.prefix_assertions);
  m.sample({{"kind", "bgpsec_filter"}}, v.slurm.bgpsec_filters);
  m.sample({{"kind", "bgpsec_assertion"}}, v.slurm.bgpsec_assertions);
  m.sample({{"kind", "aspa_filter"}}, v.slurm.aspa_filters);
  m.sample({{"kind", "aspa_assertion"}}, v.slurm.aspa_assertions);
  m.family("petrel_rpki_slurm_vrps", "gauge",
           "VRPs of the cache's data that SLURM filters removed, and assertions' VRPs it added, in force.");
  m.sample({{"change", "removed"}}, v.vrps ? v.vrps->slurm_removed : 0);
  m.sample({{"change", "added"}}, v.vrps ? v.vrps->slurm_added : 0);
  m.family("petrel_rpki_slurm_aspas", "gauge",
           "ASPAs of the cache's data that SLURM ASPA filters removed, and customers its ASPA assertions added or "
           "gave more providers, in force.");
  m.sample({{"change", "removed"}}, v.vrps ? v.vrps->slurm_aspas_removed : 0);
  m.sample({{"change", "added"}}, v.vrps ? v.vrps->slurm_aspas_added : 0);
  m.family("petrel_rpki_cache_state", "gauge", "Each RTR cache's state: 1 for the state it is in.");
  for (const RpkiCacheStatus& c : v.caches)
    for (std::string_view s : kCacheStates) m.sample({{"cache", c.name}, {"state", s}}, cache_state(c) == s ? 1 : 0);
  m.family("petrel_routes_by_validation", "gauge", "Routes in the table by RPKI validation state (RFC 6811).");
  for (table::Validation s : kStates) m.sample({{"state", validation_name(s)}}, v.routes[static_cast<size_t>(s)]);
  m.family("petrel_routes_by_aspa", "gauge",
           "Routes in the table by ASPA verification state (unchecked: from internal peers or peers without a "
           "local_role).");
  for (table::AspaState s : kAspaStates) m.sample({{"state", aspa_name(s)}}, v.aspa_routes[static_cast<size_t>(s)]);
  return out;
}

api::Response rpki_response(std::string_view method, const RpkiView& v) {
  return api::respond_get(method, [&] { return rpki_json(v); });
}

RpkiView rpki_view(const Server& s) {
  RpkiView v;
  std::optional<std::vector<RpkiCacheStatus>> caches = s.rpki_status();
  v.enabled = caches.has_value();
  if (!v.enabled) return v;
  v.reject_invalid = s.rpki_reject_invalid();
  v.reject_aspa_invalid = s.table().reject_aspa_invalid();
  v.vrps = s.vrps().current();
  v.caches = std::move(*caches);
  v.slurm = s.rpki_slurm();
  static std::mutex mu;
  static std::chrono::steady_clock::time_point at;
  static TableValidationCounts counts;
  static bool have = false;
  std::lock_guard lock(mu);
  auto now = std::chrono::steady_clock::now();
  if (!have || std::chrono::duration<double>(now - at).count() > kCountsMaxAgeSeconds) {
    counts = count_validation(s.table());
    at = now;
    have = true;
  }
  v.routes = counts.routes;
  v.aspa_routes = counts.aspa;
  v.peers = counts.peers;
  return v;
}

}  // namespace petrel::daemon
