// `petrel top`'s lines (daemon/top_frame.h).
#include "daemon/top_frame.h"

#include <fmt/format.h>

#include <algorithm>
#include <sstream>

#include "daemon/text_table.h"

namespace petrel::daemon {

namespace {

using nlohmann::json;

std::string text_of(const json& obj, std::string_view key) {
  if (!obj.is_object()) return "-";
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return "-";
  return it->is_string() ? it->get<std::string>() : it->dump();
}

uint64_t number_of(const json& obj, std::string_view key) {
  if (!obj.is_object()) return 0;
  auto it = obj.find(key);
  return it != obj.end() && it->is_number_unsigned() ? it->get<uint64_t>() : 0;
}

// The peer's routes in the table, every family.
uint64_t prefixes_of(const json& peer) {
  uint64_t n = 0;
  if (auto it = peer.find("update_prefixes"); it != peer.end() && it->is_object())
    for (const auto& [family, counts] : it->items()) n += number_of(counts, "received");
  return n;
}

std::pair<uint64_t, uint64_t> updates_of(const json& peer) {
  auto it = peer.find("messages");
  if (it == peer.end() || !it->is_object()) return {0, 0};
  return {number_of(it->value("in", json()), "update"), number_of(it->value("out", json()), "update")};
}

std::string megabytes(const json& obj, std::string_view key) {
  if (!obj.is_object() || !obj.contains(key) || !obj[key].is_number()) return "-";
  return fmt::format("{:.1f} MB", obj[key].get<double>() / 1e6);
}

}  // namespace

TopCounts top_counts(const json& peers, int64_t ms) {
  TopCounts c;
  c.ms = ms;
  if (peers.is_object())
    for (const auto& p : peers.value("peers", json::array()))
      if (p.is_object()) c.updates[text_of(p, "name")] = updates_of(p);
  return c;
}

std::vector<std::string> top_lines(const json& status, const json& peers, const TopCounts& now, const TopCounts* before,
                                   const TopFrame& f) {
  std::vector<std::string> lines;
  const json& sessions = status.is_object() ? status.value("peers", json()) : json();
  const json& table = status.is_object() ? status.value("table", json()) : json();
  const json& memory = status.is_object() ? status.value("memory", json()) : json();
  std::string head = fmt::format("petrel {}  AS{}  router ID {}  up {}", text_of(status, "version"),
                                 text_of(status, "asn"), text_of(status, "router_id"),
                                 status.is_object() && status.value("uptime_seconds", json()).is_number()
                                     ? duration_text(status["uptime_seconds"].get<int64_t>())
                                     : "-");
  if (head.size() + f.clock.size() + 2 <= f.width) head.append(f.width - head.size() - f.clock.size(), ' ');
  else head += "  ";
  lines.push_back(head + f.clock);
  lines.push_back(fmt::format("sessions: {} of {} established   table: {} prefixes, {} routes",
                              text_of(sessions, "established"), text_of(sessions, "configured"),
                              text_of(table, "prefixes"), text_of(table, "routes")));
  if (!memory.is_object())
    lines.push_back("memory: -");
  else if (memory.value("allocator", json()).is_string())
    lines.push_back(fmt::format("memory: allocated {}, resident {}, retained {}", megabytes(memory, "allocated"),
                                megabytes(memory, "resident"), megabytes(memory, "retained")));
  else
    lines.push_back("memory: not available (not built with jemalloc)");
  lines.push_back(f.error.empty() ? fmt::format("from {} every {}s; q quits", f.where, f.delay)
                                  : fmt::format("from {}: {}; q quits", f.where, f.error));
  lines.emplace_back();
  const double seconds = before != nullptr ? static_cast<double>(now.ms - before->ms) / 1000.0 : 0;
  auto rate = [&](const std::string& name, bool in) -> std::string {
    if (before == nullptr || seconds <= 0) return "-";
    auto a = before->updates.find(name), b = now.updates.find(name);
    if (a == before->updates.end() || b == now.updates.end()) return "-";
    uint64_t x = in ? a->second.first : a->second.second, y = in ? b->second.first : b->second.second;
    return y < x ? "-" : fmt::format("{:.1f}", static_cast<double>(y - x) / seconds);
  };
  TextTable t({"NAME", "ADDRESS", "AS", "STATE", "UPTIME", "PREFIXES", "UPD IN/s", "UPD OUT/s", "LAST ERROR"});
  const json list = peers.is_object() ? peers.value("peers", json::array()) : json::array();
  // Rows below the lines above and the table's header; when not all fit,
  // the last line says how many more there are.
  const size_t room = f.height > lines.size() + 1 ? f.height - lines.size() - 1 : 0;
  const size_t rows_shown = list.size() <= room ? list.size() : room > 0 ? room - 1 : 0;
  size_t up = 0, shown = 0;
  for (const auto& p : list) {
    const std::string name = text_of(p, "name");
    up += text_of(p, "state") == "established";
    if (shown == rows_shown) continue;
    ++shown;
    t.add({name, text_of(p, "address"), text_of(p, "remote_asn"), text_of(p, "state"),
           p.value("uptime_seconds", json()).is_number() ? duration_text(p["uptime_seconds"].get<int64_t>()) : "-",
           std::to_string(prefixes_of(p)), rate(name, true), rate(name, false), text_of(p, "last_error")});
  }
  std::istringstream rows(t.text());
  for (std::string line; std::getline(rows, line);) lines.push_back(line);
  if (shown < list.size()) lines.push_back(fmt::format("... {} more peers ({} established in all)", list.size() - shown, up));
  for (auto& line : lines)
    if (line.size() > f.width) line.resize(f.width);
  if (lines.size() > f.height) lines.resize(f.height);
  return lines;
}

}  // namespace petrel::daemon
