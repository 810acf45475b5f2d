// GET /api/kernel/origin and its metrics (see origin_api.h).
#include "daemon/origin_api.h"

#include "crates/json/json.h"
#include "daemon/metrics.h"

namespace petrel::daemon {

std::string origin_json(const OriginStatus& s) {
  std::string out;
  json::Writer w(out);
  w.begin_object();
  w.key("from_kernel").begin_object();
  w.key("watching").boolean(s.watching);
  w.key("error");
  if (s.watch_error.empty()) w.null();
  else w.string(s.watch_error);
  w.member("notifications", s.notifications);
  w.member("resyncs", s.resyncs);
  w.member("originated_count", static_cast<uint64_t>(s.originated.size()));
  w.member("refused", s.refused);
  w.key("originated").begin_array();
  for (const OriginatedPrefix& p : s.originated) {
    w.begin_object();
    w.member("prefix", p.prefix);
    w.member("source", "kernel");
    w.member("entry", static_cast<uint64_t>(p.entry));
    w.member("protocols", p.protocols);
    w.member("table", p.table);
    w.end_object();
  }
  w.end_array();
  w.end_object();
  w.member("sessions_ended_by_link_down", s.links_down);
  w.key("static").begin_object();
  w.key("configured").boolean(s.statics);
  w.key("running").boolean(s.static_status.running);
  w.member("table", s.static_status.table);
  w.member("metric", s.static_status.metric);
  w.member("installed", s.static_status.counts.installed);
  w.member("pending", s.static_status.counts.pending);
  w.member("unresolved", s.static_status.counts.unresolved);
  w.member("refused", s.static_status.counts.refused);
  w.key("last_error");
  if (s.static_status.last_error.empty()) w.null();
  else w.string(s.static_status.last_error);
  w.key("announced").begin_array();
  for (const std::string& p : s.announced_statics) w.string(p);
  w.end_array();
  w.end_object();
  w.end_object();
  return out;
}

std::string origin_metrics(const OriginStatus& s) {
  std::string out;
  Metrics m(out);
  if (s.watching) {
    m.family("petrel_kernel_originated_prefixes", "gauge",
             "Prefixes announced because a kernel route of an [[originate]] from_kernel source holds them.");
    m.sample({}, static_cast<uint64_t>(s.originated.size()));
    m.family("petrel_kernel_origin_refused_total", "counter",
             "Kernel routes not announced because their [[originate]] entry had max_prefixes prefixes.");
    m.sample({}, s.refused);
  }
  m.family("petrel_link_down_sessions_total", "counter",
           "Sessions ended at once because the interface to the peer went down (link_down_ends_session).");
  m.sample({}, s.links_down);
  if (s.statics) {
    m.family("petrel_static_routes", "gauge", "[[static]] routes by state: installed, pending, unresolved, refused.");
    m.sample({{"state", "installed"}}, s.static_status.counts.installed);
    m.sample({{"state", "pending"}}, s.static_status.counts.pending);
    m.sample({{"state", "unresolved"}}, s.static_status.counts.unresolved);
    m.sample({{"state", "refused"}}, s.static_status.counts.refused);
  }
  return out;
}

api::Response origin_response(std::string_view method, const OriginStatus& s) {
  api::Response r;
  if (api::refuse_method(method, r)) return r;
  r.body = origin_json(s);
  return r;
}

}  // namespace petrel::daemon
