// Inline SVG line charts (daemon/chart.h).
#include "daemon/chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace petrel::daemon {

std::vector<double> bucket_max(const std::vector<double>& values, size_t bucket) {
  if (bucket <= 1) return values;
  // Bucket 0 of the result is the oldest; the newest bucket is full. The
  // values are counts and rates, never below 0.
  std::vector<double> out((values.size() + bucket - 1) / bucket, 0.0);
  const size_t n = values.size();
  for (size_t i = 0; i < n; ++i) {
    size_t from_end = n - 1 - i;
    size_t b = out.size() - 1 - from_end / bucket;
    out[b] = std::max(out[b], values[i]);
  }
  return out;
}

std::string short_number(double v) {
  const double a = std::fabs(v);
  if (a >= 1e9) return fmt::format("{:.1f}G", v / 1e9);
  if (a >= 1e6) return fmt::format("{:.1f}M", v / 1e6);
  if (a >= 1e4) return fmt::format("{:.1f}k", v / 1e3);
  if (a >= 10 || a == std::floor(a)) return fmt::format("{:.0f}", v);
  return fmt::format("{:.1f}", v);
}

std::string svg_chart(const std::vector<ChartSeries>& series, const ChartOptions& o) {
  const size_t bucket = std::max<size_t>(1, (o.capacity + o.max_points - 1) / std::max<size_t>(1, o.max_points));
  const size_t slots = std::max<size_t>(2, (o.capacity + bucket - 1) / bucket);
  std::vector<std::vector<double>> reduced;
  double top = 0;
  for (const ChartSeries& s : series) {
    reduced.push_back(bucket_max(s.values, bucket));
    for (double v : reduced.back()) top = std::max(top, v);
  }
  // Room for the labels' text at the top and bottom.
  const int pad_top = o.labels ? 14 : 2, pad_bottom = o.labels ? 14 : 1;
  const int plot_h = std::max(1, o.height - pad_top - pad_bottom);
  const double scale = top > 0 ? plot_h / top : 0;
  std::string out = fmt::format(
      "<svg{}{}{} width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" role=\"img\">", o.id.empty() ? "" : " id=\"",
      o.id, o.id.empty() ? "" : "\"", o.width, o.height, o.width, o.height);
  out += "<title>";
  for (size_t i = 0; i < series.size(); ++i) {
    const auto& v = series[i].values;
    double peak = 0;
    for (double x : v) peak = std::max(peak, x);
    out += fmt::format("{}{}: {}{} now, {}{} at most", i == 0 ? "" : "; ", series[i].label,
                       v.empty() ? "-" : short_number(v.back()), o.unit, short_number(peak), o.unit);
  }
  out += " (last hour)</title>";
  out += fmt::format("<rect width=\"{}\" height=\"{}\" fill=\"#f6f6f6\"/>", o.width, o.height);
  // Each bucket is a step as wide as its share of the window, so that a
  // series of one bucket (a daemon up for a minute) still shows; the area
  // under it is tinted.
  const long base = pad_top + plot_h;
  auto x_at = [&](size_t slot) {
    return std::lround(static_cast<double>(slot) * o.width / static_cast<double>(slots));
  };
  for (size_t i = 0; i < series.size(); ++i) {
    const auto& r = reduced[i];
    if (r.empty()) continue;
    const size_t first = slots - r.size();
    std::string d = fmt::format("M{},{}", x_at(first), base);
    for (size_t j = 0; j < r.size(); ++j)
      d += fmt::format("V{}H{}", base - std::lround(r[j] * scale), x_at(first + j + 1));
    d += fmt::format("V{}Z", base);
    out += fmt::format("<path d=\"{}\" fill=\"{}\" fill-opacity=\".15\" stroke=\"{}\" stroke-width=\"1.5\"/>", d,
                       series[i].color, series[i].color);
  }
  if (o.labels) {
    out += fmt::format("<text x=\"2\" y=\"11\" font-size=\"11\" fill=\"#555\">{}{}</text>", short_number(top), o.unit);
    out += fmt::format("<text x=\"2\" y=\"{}\" font-size=\"11\" fill=\"#555\">-1h</text>", o.height - 3);
    out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\" fill=\"#555\" text-anchor=\"end\">now</text>",
                       o.width - 2, o.height - 3);
  }
  out += "</svg>";
  return out;
}

}  // namespace petrel::daemon
