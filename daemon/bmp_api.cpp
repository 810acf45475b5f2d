// GET /api/bmp and the petrel_bmp_* metrics (see bmp_api.h).
#include "daemon/bmp_api.h"

#include "crates/json/json.h"
#include "daemon/metrics.h"

namespace petrel::daemon {

std::string bmp_json(const std::vector<BmpStationStatus>& stations) {
  std::string out;
  json::Writer w(out);
  w.begin_object();
  w.key("stations").begin_array();
  for (const BmpStationStatus& s : stations) {
    w.begin_object();
    w.member("station", s.name);
    w.member("state", s.state);
    w.member("messages", s.messages);
    w.member("bytes", s.bytes);
    w.member("connects", s.connects);
    w.member("drops", s.drops);
    w.member("dropped_bytes", s.dropped_bytes);
    w.member("queued_bytes", s.queued_bytes);
    w.key("last_error");
    if (s.last_error.empty()) w.null();
    else w.string(s.last_error);
    w.end_object();
  }
  w.end_array();
  w.end_object();
  out += '\n';
  return out;
}

std::string bmp_metrics(const std::vector<BmpStationStatus>& stations) {
  if (stations.empty()) return {};
  std::string out;
  Metrics m(out);
  m.family("petrel_bmp_up", "gauge", "1 while the BMP station's connection is open, else 0.");
  for (const auto& s : stations) m.sample({{"station", s.name}}, s.state == "up" ? 1 : 0);
  m.family("petrel_bmp_messages_total", "counter", "BMP messages queued for the station on open connections.");
  for (const auto& s : stations) m.sample({{"station", s.name}}, s.messages);
  m.family("petrel_bmp_bytes_total", "counter", "Octets of those messages.");
  for (const auto& s : stations) m.sample({{"station", s.name}}, s.bytes);
  m.family("petrel_bmp_connects_total", "counter", "Connections to the station that opened.");
  for (const auto& s : stations) m.sample({{"station", s.name}}, s.connects);
  m.family("petrel_bmp_drops_total", "counter",
           "Connections dropped because the station fell behind (queue past bmp.max_queue, or the table's "
           "journal overran): it gets the whole table again when it reconnects.");
  for (const auto& s : stations) m.sample({{"station", s.name}}, s.drops);
  m.family("petrel_bmp_dropped_bytes_total", "counter", "Octets queued for the station and never sent.");
  for (const auto& s : stations) m.sample({{"station", s.name}}, s.dropped_bytes);
  m.family("petrel_bmp_queued_bytes", "gauge", "Octets queued for the station now.");
  for (const auto& s : stations) m.sample({{"station", s.name}}, s.queued_bytes);
  return out;
}

api::Response bmp_response(std::string_view method, const std::vector<BmpStationStatus>& stations) {
  api::Response r;
  if (api::refuse_method(method, r)) return r;
  r.body = bmp_json(stations);
  return r;
}

}  // namespace petrel::daemon
