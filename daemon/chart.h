// Line charts as inline SVG for the status page (daemon/api.cpp): drawn by
// the server, no script and no external asset, small enough that a page
// of 100+ peers, two charts each, stays light.
//
// A chart spans a fixed window of `capacity` equally spaced samples (the
// last hour of daemon/history.h); a series shorter than that (the daemon
// started less than an hour ago) is drawn at the right, ending at "now".
// Samples are reduced to at most `max_points` buckets per series, each the
// largest of its samples, so that a burst is not averaged away; each
// bucket is drawn as a step as wide as its share of the window, over a
// tinted area.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace petrel::daemon {

struct ChartSeries {
  std::string_view label;  // for the legend and the tooltip
  std::string_view color;  // a CSS colour
  std::vector<double> values;  // oldest first
};

struct ChartOptions {
  int width = 120;
  int height = 28;
  size_t capacity = 360;   // samples in the window
  size_t max_points = 60;  // per series
  bool labels = false;     // the scale's top, "-1h" and "now" written in the chart
  std::string_view unit;   // after the numbers of the labels and tooltip ("MB", "/s")
  std::string_view id;     // the svg's id attribute, empty for none
};

// One <svg> element; its <title> says each series' latest and largest
// value (a tooltip without script).
std::string svg_chart(const std::vector<ChartSeries>& series, const ChartOptions& o);

// values reduced to buckets of `bucket` samples, aligned on the newest:
// each the largest of its bucket, oldest first.
std::vector<double> bucket_max(const std::vector<double>& values, size_t bucket);

// 1234567 as "1.2M", 12345 as "12.3k", 12 as "12", 0.5 as "0.5".
std::string short_number(double v);

}  // namespace petrel::daemon
