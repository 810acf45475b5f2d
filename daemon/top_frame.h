// `petrel top`'s screen as lines of text, from the API's answers (GET
// /api/status and /api/peers, docs/http-api.md): pure, so the tests
// render frames without a daemon or a terminal (daemon/top.cpp draws them).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace petrel::daemon {

// Each peer's UPDATE counters (in, out) at a time (steady milliseconds):
// the rates are the difference between two refreshes.
struct TopCounts {
  int64_t ms = 0;
  std::map<std::string, std::pair<uint64_t, uint64_t>, std::less<>> updates;
};
TopCounts top_counts(const nlohmann::json& peers, int64_t ms);

struct TopFrame {
  std::string where;      // the API's address
  std::string clock;      // the wall time to show, "23:12:04"
  double delay = 2;       // seconds between refreshes
  std::string error;      // the last request's failure; empty: none
  size_t width = 80, height = 24;
};

// The screen: at most f.height lines, none wider than f.width. `before` is
// the previous refresh's counts (nullptr: none yet, rates "-").
std::vector<std::string> top_lines(const nlohmann::json& status, const nlohmann::json& peers, const TopCounts& now,
                                   const TopCounts* before, const TopFrame& f);

}  // namespace petrel::daemon
