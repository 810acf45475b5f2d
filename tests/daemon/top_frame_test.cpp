// Tests of daemon/top_frame.h: `petrel top`'s screen from the API's
// answers, its rates between two refreshes, and its bounds.
#include "daemon/top_frame.h"

#include <gtest/gtest.h>

#include <string>

namespace petrel::daemon {
namespace {

using nlohmann::json;

json status() {
  return json::parse(R"({"version":"1.0","asn":65001,"router_id":"192.0.2.1","uptime_seconds":3725,
    "peers":{"configured":2,"established":1},"table":{"prefixes":120,"routes":150,"bytes":9000},
    "memory":{"allocator":"jemalloc","allocated":12300000,"resident":45600000,"retained":1000000}})");
}

json peers(uint64_t in, uint64_t out) {
  json p = json::parse(R"({"peers":[
    {"name":"bird","address":"10.0.0.2","remote_asn":65002,"state":"established","uptime_seconds":65,
     "last_error":null,"update_prefixes":{"ipv4-unicast":{"received":100},"ipv6-unicast":{"received":20}},
     "messages":{"in":{"update":0},"out":{"update":0}}},
    {"name":"down","address":"10.0.0.3","remote_asn":65003,"state":"active","uptime_seconds":null,
     "last_error":"Hold Timer Expired","update_prefixes":{},"messages":{"in":{"update":0},"out":{"update":0}}}]})");
  p["peers"][0]["messages"]["in"]["update"] = in;
  p["peers"][0]["messages"]["out"]["update"] = out;
  return p;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

TEST(TopFrame, PeersPrefixesAndRatesBetweenRefreshes) {
  TopFrame f;
  f.where = "127.0.0.1:8179";
  f.clock = "12:00:00";
  f.width = 100;
  const TopCounts first = top_counts(peers(10, 4), 1000);
  std::string screen = joined(top_lines(status(), peers(10, 4), first, nullptr, f));
  EXPECT_NE(screen.find("petrel 1.0  AS65001  router ID 192.0.2.1  up 1h02m"), std::string::npos) << screen;
  EXPECT_NE(screen.find("12:00:00\n"), std::string::npos) << "the clock at the right";
  EXPECT_NE(screen.find("sessions: 1 of 2 established   table: 120 prefixes, 150 routes"), std::string::npos);
  EXPECT_NE(screen.find("memory: allocated 12.3 MB, resident 45.6 MB"), std::string::npos);
  EXPECT_NE(screen.find("bird  10.0.0.2  65002  established  1m05s   120       -         -"), std::string::npos)
      << screen;
  EXPECT_NE(screen.find("Hold Timer Expired"), std::string::npos);
  // Two seconds later: 30 UPDATEs in, 3 out.
  const TopCounts second = top_counts(peers(40, 7), 3000);
  screen = joined(top_lines(status(), peers(40, 7), second, &first, f));
  EXPECT_NE(screen.find("120       15.0      1.5"), std::string::npos) << screen;
  for (const auto& line : top_lines(status(), peers(40, 7), second, &first, f)) EXPECT_LE(line.size(), 100u);
}

TEST(TopFrame, FitsTheScreenAndSaysWhatIsLeftOut) {
  json many = json::object({{"peers", json::array()}});
  for (int i = 0; i < 50; ++i)
    many["peers"].push_back({{"name", "p" + std::to_string(i)}, {"state", i % 2 ? "established" : "idle"}});
  TopFrame f;
  f.width = 40;
  f.height = 20;
  auto lines = top_lines(status(), many, top_counts(many, 0), nullptr, f);
  ASSERT_EQ(lines.size(), 20u);
  EXPECT_EQ(lines.back(), "... 37 more peers (25 established in all");
  for (const auto& line : lines) EXPECT_LE(line.size(), 40u);
}

TEST(TopFrame, NoAnswerYet) {
  TopFrame f;
  f.where = "127.0.0.1:8179";
  f.error = "Connection refused";
  std::string screen = joined(top_lines(json(), json(), top_counts(json(), 0), nullptr, f));
  EXPECT_NE(screen.find("from 127.0.0.1:8179: Connection refused; q quits"), std::string::npos) << screen;
  EXPECT_NE(screen.find("memory: -"), std::string::npos);
}

}  // namespace
}  // namespace petrel::daemon
