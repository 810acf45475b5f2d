// Command-line values and the result file the load tools share
// (petrel-load, petrel-fanout). Header only.
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

namespace petrel::bench {

// A whole decimal number; nothing for anything else.
inline std::optional<uint64_t> parse_count(const char* s) {
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0') return std::nullopt;
  return v;
}

// Seconds, 0 to a day.
inline std::optional<double> parse_seconds(const char* s) {
  char* end = nullptr;
  double v = std::strtod(s, &end);
  if (end == s || *end != '\0' || v < 0 || v > 86400) return std::nullopt;
  return v;
}

// A tool's usage text: fail() prints it with the reason and exits 2;
// count() and seconds() read an option's value or fail with `what`.
struct Usage {
  const char* tool;
  const char* text;

  [[noreturn]] void fail(const char* why) const {
    std::fprintf(stderr, "%s: %s\n%s", tool, why, text);
    std::exit(2);
  }
  [[nodiscard]] uint64_t count(const char* s, const char* what) const {
    if (auto v = parse_count(s)) return *v;
    fail(what);
  }
  [[nodiscard]] double seconds(const char* s, const char* what) const {
    if (auto v = parse_seconds(s)) return *v;
    fail(what);
  }
};

// Writes `text` and a newline to `path` whole or not at all (beside it,
// then renamed), so that a script waiting for the file never reads half.
inline void write_whole(const std::string& path, const std::string& text) {
  std::string tmp = path + ".tmp";
  if (FILE* f = std::fopen(tmp.c_str(), "w")) {
    std::fprintf(f, "%s\n", text.c_str());
    std::fclose(f);
    std::rename(tmp.c_str(), path.c_str());
  }
}

}  // namespace petrel::bench
