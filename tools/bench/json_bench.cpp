// Benchmark of the JSON writer: how many prefixes per second it writes as
// `petrel decode` does (one string per prefix inside an UPDATE object),
// with the prefix text formatted beforehand (formatting is crates/net's).
// Run: meson test -C BUILD --benchmark json-writer
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "crates/json/json.h"

int main() {
  std::vector<std::string> prefixes;
  for (uint32_t i = 0; i < 4096; ++i) {
    prefixes.push_back(std::to_string(10 + (i >> 8)) + "." + std::to_string(i & 0xff) + "." +
                       std::to_string((i * 7) & 0xff) + ".0/24");
  }
  constexpr uint64_t kPrefixes = 20'000'000;
  constexpr uint64_t kPerUpdate = 8;
  std::string out;
  out.reserve(1 << 20);
  uint64_t bytes = 0;
  auto start = std::chrono::steady_clock::now();
  for (uint64_t n = 0; n < kPrefixes; n += kPerUpdate) {
    petrel::json::Writer w(out);
    w.begin_object().key_raw("type").string_raw("UPDATE").key_raw("announce").begin_array();
    for (uint64_t k = 0; k < kPerUpdate; ++k) w.string_raw(prefixes[(n + k) & 4095]);
    w.end_array().key_raw("as_path").begin_array().number(64496).number(64511u).end_array();
    w.end_object().line_end();
    if (out.size() > (1 << 20) - 512) {
      bytes += out.size();
      out.clear();
    }
  }
  bytes += out.size();
  std::chrono::duration<double> secs = std::chrono::steady_clock::now() - start;
  std::printf("json-writer: %llu prefixes in %.3f s: %.1f million prefixes/s, %.0f MB/s\n",
              static_cast<unsigned long long>(kPrefixes), secs.count(),
              static_cast<double>(kPrefixes) / secs.count() / 1e6,
              static_cast<double>(bytes) / secs.count() / 1e6);
  return 0;
}
