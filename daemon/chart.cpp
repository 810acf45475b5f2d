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
  for (size_t i = 0; i < series.size(); ++i) {
    const auto& r = reduced[i];
    if (r.empty()) continue;
    std::string points;
    for (size_t j = 0; j < r.size(); ++j) {
      // The newest point at the right edge, older ones leftwards.
      const size_t slot = slots - r.size() + j;
      const long x = std::lround(static_cast<double>(slot) * (o.width - 1) / static_cast<double>(slots - 1));
      const long y = pad_top + plot_h - std::lround(r[j] * scale);
      points += fmt::format("{}{},{}", j == 0 ? "" : " ", x, y);
    }
    if (r.size() == 1) points += fmt::format(" {},{}", o.width - 1, pad_top + plot_h - std::lround(r[0] * scale));
    out += fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\" points=\"{}\"/>", series[i].color,
                       points);
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
