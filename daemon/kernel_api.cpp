// GET /api/kernel and the petrel_kernel_* metrics (see kernel_api.h).
#include "daemon/kernel_api.h"

#include <algorithm>

#include <fmt/format.h>

#include "crates/json/json.h"
#include "daemon/metrics.h"

namespace petrel::daemon {

std::string kernel_json(const KernelStatus& s) {
  std::string out;
  json::Writer w(out);
  w.begin_object();
  w.key("enabled").boolean(s.enabled);
  w.key("running").boolean(s.running);
  w.member("table", s.table);
  w.member("metric", s.metric);
  w.key("multipath").boolean(s.multipath);
  w.key("nexthop_objects").boolean(s.nexthop_objects);
  w.key("stale_removal").boolean(s.removals_allowed);
  w.key("deferred").begin_array();
  for (const auto& f : s.deferred) w.string(f);
  w.end_array();
  w.key("routes").begin_object();
  w.member("installed", s.counts.installed);
  w.member("pending", s.counts.pending);
  w.member("unresolved", s.counts.unresolved);
  w.member("refused", s.counts.refused);
  w.member("stale", s.counts.stale);
  w.end_object();
  w.member("nexthop_object_count", s.counts.nexthop_objects);
  w.member("refusals", s.counts.refusals);
  w.member("requests", s.stats.requests);
  w.member("batches", s.stats.batches);
  w.member("notifications", s.stats.notifications);
  w.member("table_resyncs", s.table_resyncs);
  w.member("queued", s.queued);
  // Where the syncer thread's time went, in seconds (docs/http-api.md).
  w.key("time_s").begin_object();
  auto seconds = [&](const char* k, uint64_t ns) { w.key(k).number(static_cast<double>(ns) / 1e9); };
  seconds("journal", s.read_ns);
  seconds("plan", s.stats.plan_ns);
  seconds("encode", s.stats.encode_ns);
  seconds("sendmsg", s.stats.send_ns);
  seconds("answers", s.stats.answer_ns);
  seconds("waiting", s.wait_ns);
  w.end_object();
  w.key("last_error");
  if (s.last_error.empty()) w.null();
  else w.string(s.last_error);
  w.key("interfaces").begin_array();
  for (const auto& i : s.interfaces) {
    w.begin_object();
    w.member("index", i.index);
    w.member("name", i.name);
    w.key("up").boolean(i.up);
    w.key("addresses").begin_array();
    for (const auto& a : i.addresses) w.string(a);
    w.end_array();
    w.end_object();
  }
  w.end_array();
  w.end_object();
  out += '\n';
  return out;
}

std::string kernel_metrics(const KernelStatus& s) {
  if (!s.enabled) return {};
  std::string out;
  Metrics m(out);
  m.family("petrel_kernel_routes", "gauge",
           "Prefixes of the kernel installer by state: installed (in the kernel), pending (waiting for a request "
           "or its answer, or read from the table and not yet planned), unresolved (no directly reachable next hop), refused (by the kernel, retried), stale "
           "(ours from an earlier run, not yet removed).");
  m.sample({{"state", "installed"}}, s.counts.installed);
  m.sample({{"state", "pending"}}, s.counts.pending);
  m.sample({{"state", "unresolved"}}, s.counts.unresolved);
  m.sample({{"state", "refused"}}, s.counts.refused);
  m.sample({{"state", "stale"}}, s.counts.stale);
  m.family("petrel_kernel_deferred", "gauge",
           "1 while Petrel's own graceful restart defers the family's kernel changes (until its peers' "
           "End-of-RIB or selection_deferral_time), else 0.");
  for (const char* f : {"ipv4-unicast", "ipv6-unicast"})
    m.sample({{"family", f}}, std::find(s.deferred.begin(), s.deferred.end(), f) != s.deferred.end() ? 1 : 0);
  m.family("petrel_kernel_nexthop_objects", "gauge",
           "Kernel nexthop objects of the installer (one per gateway and interface, one per multipath set).");
  m.sample({}, s.counts.nexthop_objects);
  m.family("petrel_kernel_nexthop_objects_enabled", "gauge",
           "1 when routes refer to kernel nexthop objects, 0 when they carry their gateways.");
  m.sample({}, s.nexthop_objects ? 1 : 0);
  m.family("petrel_kernel_refusals_total", "counter", "Route requests the kernel refused.");
  m.sample({}, s.counts.refusals);
  m.family("petrel_kernel_requests_total", "counter", "Route requests sent to the kernel.");
  m.sample({}, s.stats.requests);
  m.family("petrel_kernel_up", "gauge", "1 while the kernel installer runs, 0 when it could not start or stopped.");
  m.sample({}, s.running ? 1 : 0);
  m.family("petrel_kernel_last_error", "gauge", "1 with the last error as a label, when there was one.");
  if (!s.last_error.empty()) m.sample({{"error", s.last_error}}, 1);
  m.family("petrel_kernel_interface_up", "gauge", "The interfaces the installer knows: 1 up, 0 down.");
  for (const auto& i : s.interfaces) m.sample({{"interface", i.name}}, i.up ? 1 : 0);
  return out;
}

api::Response kernel_response(std::string_view method, const std::optional<KernelStatus>& status) {
  return api::respond_get(method, [&] { return kernel_json(status.value_or(KernelStatus{})); });
}

std::string nexthops_json(const NexthopsStatus& s) {
  std::string out;
  json::Writer w(out);
  w.begin_object();
  w.key("tracking").boolean(s.tracking);
  w.member("resolve_table", s.resolve_table);
  w.key("resolve_via_default").boolean(s.resolve_via_default);
  w.member("resolve_routes", s.resolve_routes);
  w.member("resolve_routes_over_limit", s.resolve_routes_over_limit);
  w.member("untracked", s.untracked);
  w.member("count", static_cast<uint64_t>(s.nexthops.size()));
  w.key("truncated").boolean(s.nexthops.size() > kMaxNexthopsShown);
  w.key("nexthops").begin_array();
  for (size_t n = 0; n < s.nexthops.size() && n < kMaxNexthopsShown; ++n) {
    const NexthopInfo& i = s.nexthops[n];
    w.begin_object();
    w.member("address", i.address.to_string());
    w.key("resolved").boolean(i.state.resolved);
    w.member("cost", i.state.cost);
    w.member("resolution", s.tracking ? fib::to_string(i.resolved.how) : "untracked");
    w.member("metric", i.resolved.metric);
    w.key("via_route");
    if (i.resolved.via) w.string(i.resolved.via->to_string());
    else w.null();
    w.key("via").begin_array();
    for (size_t h = 0; h < i.resolved.hops.size(); ++h) {
      w.begin_object();
      w.member("gateway", i.resolved.hops[h].gateway.to_string());
      w.member("ifindex", i.resolved.hops[h].ifindex);
      w.member("interface", h < i.interfaces.size() ? i.interfaces[h] : std::string());
      w.end_object();
    }
    w.end_array();
    w.end_object();
  }
  w.end_array();
  w.end_object();
  return out;
}

api::Response nexthops_response(std::string_view method, const NexthopsStatus& status) {
  return api::respond_get(method, [&] { return nexthops_json(status); });
}

}  // namespace petrel::daemon
