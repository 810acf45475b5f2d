// The Prometheus text writer (see metrics.h).
#include "daemon/metrics.h"

#include <fmt/format.h>

namespace petrel::daemon {

void append_label(std::string& out, std::string_view v) {
  for (char c : v) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '"': out += "\\\""; break;
      case '\n': out += "\\n"; break;
      default: out += c;
    }
  }
}

void Metrics::family(std::string_view name, std::string_view type, std::string_view help) {
  name_ = name;
  out_ += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

void Metrics::sample(Labels labels, uint64_t value) {
  out_ += name_;
  if (labels.size() != 0) {
    out_ += '{';
    bool first = true;
    for (const auto& [k, v] : labels) {
      if (!first) out_ += ',';
      first = false;
      out_ += k;
      out_ += "=\"";
      append_label(out_, v);
      out_ += '"';
    }
    out_ += '}';
  }
  out_ += fmt::format(" {}\n", value);
}

}  // namespace petrel::daemon
