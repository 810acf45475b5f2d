// GET /api/mrt and the petrel_mrt_* metrics (see mrt_api.h).
#include "daemon/mrt_api.h"

#include "crates/json/json.h"
#include "daemon/metrics.h"

namespace petrel::daemon {

namespace {
void string_or_null(json::Writer& w, std::string_view key, const std::string& s) {
  w.key(key);
  if (s.empty()) w.null();
  else w.string(s);
}
}  // namespace

std::string mrt_json(const MrtStatus& s) {
  std::string out;
  json::Writer w(out);
  w.begin_object();
  w.key("dumps").begin_object();
  w.member("interval", s.dump_interval);
  w.member("written", s.dumps.written);
  w.member("failed", s.dumps.failed);
  w.member("skipped", s.dumps.skipped);
  string_or_null(w, "last_file", s.dumps.last_file);
  string_or_null(w, "last_error", s.dumps.last_error);
  w.end_object();
  w.key("updates");
  if (!s.updates) {
    w.null();
  } else {
    const MrtLogStatus& u = *s.updates;
    w.begin_object();
    string_or_null(w, "file", u.file);
    w.member("records", u.records);
    w.member("dropped", u.dropped);
    w.member("bytes", u.bytes);
    w.member("files", u.files);
    w.member("errors", u.errors);
    w.member("queued", u.queued);
    string_or_null(w, "last_error", u.last_error);
    w.end_object();
  }
  w.end_object();
  out += '\n';
  return out;
}

std::string mrt_metrics(const MrtStatus& s) {
  std::string out;
  Metrics m(out);
  m.family("petrel_mrt_dumps_total", "counter", "MRT table dumps written (periodic and petrel dump).");
  m.sample({}, s.dumps.written);
  m.family("petrel_mrt_dump_failures_total", "counter", "MRT table dumps that failed (the file could not be written).");
  m.sample({}, s.dumps.failed);
  m.family("petrel_mrt_dumps_skipped_total", "counter",
           "Periodic MRT table dumps not started because the previous one was still running.");
  m.sample({}, s.dumps.skipped);
  if (!s.updates) return out;
  const MrtLogStatus& u = *s.updates;
  m.family("petrel_mrt_update_records_total", "counter", "BGP4MP_ET records written to the MRT UPDATE log.");
  m.sample({}, u.records);
  m.family("petrel_mrt_update_records_dropped_total", "counter",
           "UPDATE log records lost: the queue was full (mrt.updates_queue) or the file could not be written.");
  m.sample({}, u.dropped);
  m.family("petrel_mrt_update_bytes_total", "counter", "MRT octets written to the UPDATE log (before compression).");
  m.sample({}, u.bytes);
  m.family("petrel_mrt_update_files_total", "counter", "UPDATE log files completed.");
  m.sample({}, u.files);
  m.family("petrel_mrt_update_file_errors_total", "counter", "UPDATE log files that could not be written.");
  m.sample({}, u.errors);
  m.family("petrel_mrt_update_queued", "gauge", "UPDATE log records waiting for the writer.");
  m.sample({}, u.queued);
  return out;
}

}  // namespace petrel::daemon
