// `promtool check metrics` (Debian package prometheus, the reference
// checker of the Prometheus text format) for the tests of /metrics text:
// tests/daemon/api_test.cpp and tests/rpki/rpki_api_test.cpp. Tests skip
// where promtool is not installed.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>

namespace petrel::promtool {

inline bool installed() { return std::system("command -v promtool >/dev/null 2>&1") == 0; }

struct Verdict {
  int status;          // promtool's wait status: 0 when it accepts the text
  std::string output;  // what it wrote (stdout and stderr); empty when it accepts
};

// promtool's verdict on `text`; nullopt when the text could not be handed
// to it (no temporary file, no pipe).
inline std::optional<Verdict> check_metrics(const std::string& text) {
  char path[] = "/tmp/petrel-metrics-XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) return std::nullopt;
  ::close(fd);
  std::ofstream(path) << text;
  const std::string cmd = std::string("promtool check metrics < ") + path + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) {
    std::remove(path);
    return std::nullopt;
  }
  Verdict v{0, {}};
  char buf[256];
  while (size_t n = fread(buf, 1, sizeof buf, pipe)) v.output.append(buf, n);
  v.status = pclose(pipe);
  std::remove(path);
  return v;
}

}  // namespace petrel::promtool
