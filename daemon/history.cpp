// The last hour's samples (daemon/history.h) and their JSON.
#include "daemon/history.h"

#include <algorithm>
#include <cmath>

#include "crates/json/json.h"

namespace petrel::daemon {

const PeerSeries* HistoryView::peer(std::string_view name) const {
  auto it = std::lower_bound(peers.begin(), peers.end(), name,
                             [](const PeerSeries& s, std::string_view n) { return s.name < n; });
  return it != peers.end() && it->name == name ? &*it : nullptr;
}

void History::sample(int64_t unix_s, int64_t now_ms, const std::vector<PeerCounts>& peers, const TableCounts& table) {
  std::lock_guard lock(mu_);
  const auto time = static_cast<uint32_t>(std::clamp<int64_t>(unix_s, 0, UINT32_MAX));
  const double seconds = static_cast<double>(now_ms - last_ms_) / 1000.0;
  auto rate = [&](uint64_t now, uint64_t before, bool first) {
    if (first || !sampled_ || now < before || seconds <= 0) return 0.0f;
    return static_cast<float>(static_cast<double>(now - before) / seconds);
  };
  std::map<std::string, PeerState, std::less<>> next;
  for (const PeerCounts& c : peers) {
    auto old = peers_.find(c.name);
    const bool first = old == peers_.end();
    PeerState st = first ? PeerState{} : std::move(old->second);
    st.ring.push(PeerSample{time, static_cast<uint32_t>(std::min<uint64_t>(c.prefixes, UINT32_MAX)),
                            rate(c.updates_in, st.last_in, first), rate(c.updates_out, st.last_out, first)});
    st.last_in = c.updates_in;
    st.last_out = c.updates_out;
    next.insert_or_assign(c.name, std::move(st));
  }
  peers_ = std::move(next);
  table_.push(TableSample{time, static_cast<uint32_t>(std::min<uint64_t>(table.prefixes, UINT32_MAX)), table.routes,
                          table.memory});
  last_ms_ = now_ms;
  sampled_ = true;
}

HistoryView History::view(std::string_view peer) const {
  HistoryView v;
  std::lock_guard lock(mu_);
  v.table = table_.values();
  for (const auto& [name, st] : peers_)
    if (peer.empty() || name == peer) v.peers.push_back(PeerSeries{name, st.ring.values()});
  return v;
}

namespace {

// Two decimals are enough for a rate and keep the columns short.
double rounded(float v) { return std::round(static_cast<double>(v) * 100.0) / 100.0; }

template <typename T, typename F>
void column(json::Writer& w, std::string_view key, const std::vector<T>& samples, F get) {
  w.key_raw(key).begin_array();
  for (const T& s : samples) w.number(get(s));
  w.end_array();
}

}  // namespace

std::string history_json(const HistoryView& h) {
  std::string out;
  json::Writer w(out);
  w.begin_object();
  w.member("interval_seconds", h.interval_seconds);
  w.member("capacity", h.capacity);
  w.key_raw("table").begin_object();
  column(w, "time", h.table, [](const TableSample& s) { return s.time; });
  column(w, "prefixes", h.table, [](const TableSample& s) { return s.prefixes; });
  column(w, "routes", h.table, [](const TableSample& s) { return s.routes; });
  column(w, "memory_bytes", h.table, [](const TableSample& s) { return s.memory; });
  w.end_object();
  w.key_raw("peers").begin_array();
  for (const PeerSeries& p : h.peers) {
    w.begin_object();
    w.member("name", p.name);
    column(w, "time", p.samples, [](const PeerSample& s) { return s.time; });
    column(w, "prefixes", p.samples, [](const PeerSample& s) { return s.prefixes; });
    column(w, "updates_in_per_second", p.samples, [](const PeerSample& s) { return rounded(s.updates_in); });
    column(w, "updates_out_per_second", p.samples, [](const PeerSample& s) { return rounded(s.updates_out); });
    w.end_object();
  }
  w.end_array();
  w.end_object().line_end();
  return out;
}

}  // namespace petrel::daemon
