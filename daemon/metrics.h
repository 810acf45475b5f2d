// A writer of the Prometheus text format (version 0.0.4): a family's
// HELP and TYPE lines, then its samples with their labels escaped. Every
// /metrics section (daemon/api.cpp, kernel_api.cpp, rpki_api.cpp) writes
// through it, so names, labels and escapes are written one way.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

namespace petrel::daemon {

class Metrics {
 public:
  using Labels = std::initializer_list<std::pair<std::string_view, std::string_view>>;

  explicit Metrics(std::string& out) : out_(out) {}

  // Starts a family: `type` "gauge" or "counter". `name` must outlive the
  // family's samples.
  void family(std::string_view name, std::string_view type, std::string_view help);
  // A sample of the current family; labels are name/value pairs.
  void sample(Labels labels, uint64_t value);

 private:
  std::string& out_;
  std::string_view name_;
};

// A label value with '\\', '"' and newline escaped (format 0.0.4).
void append_label(std::string& out, std::string_view v);

}  // namespace petrel::daemon
