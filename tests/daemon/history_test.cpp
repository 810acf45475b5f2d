// Tests of daemon/history.h (the last hour's rings and their JSON),
// daemon/chart.h (inline SVG) and the status page's charts with 100 peers.
#include "daemon/history.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "daemon/api.h"
#include "daemon/chart.h"

namespace petrel::daemon {
namespace {

using nlohmann::json;

TEST(HistoryRing, KeepsTheNewestOldestFirst) {
  Ring<PeerSample> r;
  for (uint32_t i = 0; i < kHistorySamples + 5; ++i) r.push(PeerSample{i, i, 0, 0});
  auto v = r.values();
  ASSERT_EQ(v.size(), kHistorySamples);
  EXPECT_EQ(v.front().time, 5u);
  EXPECT_EQ(v.back().time, kHistorySamples + 4);
  Ring<PeerSample> few;
  few.push(PeerSample{7, 1, 0, 0});
  ASSERT_EQ(few.values().size(), 1u);
  EXPECT_EQ(few.values()[0].time, 7u);
}

TEST(History, RatesFromCountersAndPeersComeAndGo) {
  History h;
  h.sample(1000, 50'000, {{"b", 10, 100, 40}, {"a", 5, 0, 0}}, {15, 20, 1'000'000});
  h.sample(1010, 60'000, {{"b", 12, 150, 60}, {"a", 5, 0, 0}}, {17, 22, 1'100'000});
  HistoryView v = h.view();
  ASSERT_EQ(v.peers.size(), 2u);
  EXPECT_EQ(v.peers[0].name, "a") << "by name";
  const PeerSeries* b = v.peer("b");
  ASSERT_NE(b, nullptr);
  ASSERT_EQ(b->samples.size(), 2u);
  EXPECT_EQ(b->samples[0].updates_in, 0.0f) << "no rate for the first sample";
  EXPECT_FLOAT_EQ(b->samples[1].updates_in, 5.0f);  // 50 UPDATEs in 10 s
  EXPECT_FLOAT_EQ(b->samples[1].updates_out, 2.0f);
  EXPECT_EQ(b->samples[1].prefixes, 12u);
  ASSERT_EQ(v.table.size(), 2u);
  EXPECT_EQ(v.table[1].memory, 1'100'000u);
  // "a" leaves the configuration; "b"'s counters go back (a new session
  // object): a rate of 0, not a huge one; a new peer starts its own series.
  h.sample(1020, 70'000, {{"b", 3, 10, 5}, {"c", 1, 500, 0}}, {4, 4, 900'000});
  v = h.view();
  EXPECT_EQ(v.peer("a"), nullptr);
  ASSERT_NE(v.peer("c"), nullptr);
  EXPECT_EQ(v.peer("c")->samples.size(), 1u);
  EXPECT_EQ(v.peer("c")->samples[0].updates_in, 0.0f);
  EXPECT_EQ(v.peer("b")->samples.back().updates_in, 0.0f);
  EXPECT_EQ(h.view("c").peers.size(), 1u);
  EXPECT_TRUE(h.view("nobody").peers.empty());
}

TEST(History, JsonColumnsAndTheEndpoint) {
  History h;
  h.sample(1000, 0, {{"p", 10, 0, 0}}, {10, 10, 5});
  h.sample(1010, 10'000, {{"p", 11, 3, 1}}, {11, 11, 6});
  json j = json::parse(history_json(h.view()));
  EXPECT_EQ(j["interval_seconds"], 10);
  EXPECT_EQ(j["capacity"], 360);
  EXPECT_EQ(j["table"]["time"], json::array({1000, 1010}));
  EXPECT_EQ(j["table"]["memory_bytes"], json::array({5, 6}));
  ASSERT_EQ(j["peers"].size(), 1u);
  EXPECT_EQ(j["peers"][0]["name"], "p");
  EXPECT_EQ(j["peers"][0]["prefixes"], json::array({10, 11}));
  EXPECT_EQ(j["peers"][0]["updates_in_per_second"], json::array({0, 0.3}));
  auto read = [&](std::string_view peer) { return h.view(peer); };
  EXPECT_EQ(api::respond_history("GET", {}, read).status, 200u);
  EXPECT_EQ(api::respond_history("GET", {{"peer", "p"}}, read).status, 200u);
  EXPECT_EQ(api::respond_history("GET", {{"peer", "q"}}, read).status, 404u);
  EXPECT_EQ(api::respond_history("GET", {{"pear", "p"}}, read).status, 400u);
  EXPECT_EQ(api::respond_history("POST", {}, read).status, 405u);
}

TEST(Chart, BucketMaxAlignsOnTheNewest) {
  EXPECT_EQ(bucket_max({1, 5, 2, 3, 9, 4, 0}, 3), (std::vector<double>{1, 5, 9}));
  EXPECT_EQ(bucket_max({1, 2}, 1), (std::vector<double>{1, 2}));
  EXPECT_TRUE(bucket_max({}, 6).empty());
}

TEST(Chart, ShortNumbers) {
  EXPECT_EQ(short_number(0), "0");
  EXPECT_EQ(short_number(12), "12");
  EXPECT_EQ(short_number(0.5), "0.5");
  EXPECT_EQ(short_number(12345), "12.3k");
  EXPECT_EQ(short_number(1234567), "1.2M");
}

TEST(Chart, ASeriesEndsAtNowAndFitsTheBox) {
  ChartOptions o;  // 120 x 28, 360 samples in 60 buckets
  std::string svg = svg_chart({{"prefixes", "#00f", {0, 10, 20}}}, o);
  EXPECT_TRUE(svg.starts_with("<svg"));
  EXPECT_TRUE(svg.ends_with("</svg>"));
  EXPECT_NE(svg.find("<title>prefixes: 20 now, 20 at most (last hour)</title>"), std::string::npos);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(svg, m, std::regex("<path d=\"([^\"]*)\"")));
  // Three samples fit one bucket of six: one step, the last 2 pixels of
  // the window, at the top of the scale, over its area.
  EXPECT_EQ(m[1].str(), "M118,27V2H120V27Z");
  // An hour of samples: 60 steps from x 0 to 120, y within the box.
  std::vector<double> hour(360);
  for (size_t i = 0; i < hour.size(); ++i) hour[i] = static_cast<double>(i % 50);
  svg = svg_chart({{"in", "#0a0", hour}}, o);
  ASSERT_TRUE(std::regex_search(svg, m, std::regex("<path d=\"([^\"]*)\"")));
  const std::string d = m[1].str();
  EXPECT_TRUE(d.starts_with("M0,27V")) << d;
  EXPECT_TRUE(d.ends_with("H120V27Z")) << d;
  size_t steps = 0;
  std::regex step("V(\\d+)H(\\d+)");
  for (auto it = std::sregex_iterator(d.begin(), d.end(), step); it != std::sregex_iterator(); ++it, ++steps) {
    EXPECT_LE(std::stoi((*it)[1]), 28);
    EXPECT_LE(std::stoi((*it)[2]), 120);
  }
  EXPECT_EQ(steps, 60u);
  // Nothing yet: an empty chart, no path.
  EXPECT_EQ(svg_chart({{"x", "#000", {}}}, o).find("<path"), std::string::npos);
}

// 100 peers with a full hour each: the page stays small (the charts are
// reduced to 60 buckets a series) and well-formed.
TEST(StatusPageCharts, HundredPeersWithAnHourEach) {
  History h;
  std::vector<PeerCounts> counts(100);
  api::Snapshot s;
  s.version = "test";
  for (size_t i = 0; i < counts.size(); ++i) {
    counts[i].name = "peer-" + std::to_string(i);
    api::PeerSnapshot p;
    p.name = counts[i].name;
    p.address = "192.0.2." + std::to_string(i);
    p.families = {codec::kIpv4Unicast};
    p.state = fsm::State::kEstablished;
    s.peers.push_back(p);
  }
  for (size_t t = 0; t < kHistorySamples; ++t) {
    for (size_t i = 0; i < counts.size(); ++i) {
      counts[i].prefixes = 1000 * i + t;
      counts[i].updates_in += t % 7 * i;
      counts[i].updates_out += t % 3;
    }
    h.sample(static_cast<int64_t>(1000 + 10 * t), static_cast<int64_t>(10'000 * t), counts,
             {100 * t, 200 * t, 1'000'000 * t});
  }
  s.history = h.view();
  std::string page = api::status_page_html(s);
  size_t svgs = 0;
  for (size_t at = page.find("<svg"); at != std::string::npos; at = page.find("<svg", at + 1)) ++svgs;
  EXPECT_EQ(svgs, 2 * 100 + 2u) << "two per peer, two for the table";
  EXPECT_NE(page.find("id=\"table-chart\""), std::string::npos);
  EXPECT_NE(page.find("id=\"memory-chart\""), std::string::npos);
  RecordProperty("page_bytes", static_cast<int>(page.size()));
  EXPECT_LT(page.size(), 250'000u) << "the page with 100 peers is " << page.size() << " bytes";
  EXPECT_EQ(page.find("NaN"), std::string::npos);
}

}  // namespace
}  // namespace petrel::daemon
