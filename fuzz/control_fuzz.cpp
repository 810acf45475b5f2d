// Fuzz target: the control socket's request lines (daemon/control_protocol.h),
// every byte from a local client that may be hostile. A line parses to a
// request or to an error text, never both and never neither; the same
// bytes split into command-line words build a request line or a usage
// error, and what they build parses.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "daemon/control_protocol.h"
#include "fuzz/fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace petrel::daemon::control;
  std::string_view line(reinterpret_cast<const char*>(data), size);
  ParseResult r = parse_request(line);
  if (r.request.has_value() == !r.error.empty()) std::abort();
  std::vector<std::string_view> words;
  for (size_t i = 0; i < line.size() && words.size() < 64;) {
    size_t j = line.find(' ', i);
    if (j == std::string_view::npos) j = line.size();
    if (j > i) words.push_back(line.substr(i, j - i));
    i = j + 1;
  }
  ArgsResult a = request_from_args(words);
  if (a.line.empty() == a.error.empty()) std::abort();
  if (!a.line.empty()) {
    ParseResult back = parse_request(a.line);
    if (back.request.has_value() == !back.error.empty()) std::abort();
  }
  return 0;
}
