// Tests of daemon/api.h: the JSON bodies parse and say what the snapshot
// says, the routes answer 200/404/405 as docs/http-api.md promises, and the
// metrics are well-formed Prometheus text (checked by `promtool check
// metrics` as well when promtool is installed).
#include "daemon/api.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "tests/promtool.h"

namespace petrel::daemon::api {
namespace {

using nlohmann::json;

PeerSnapshot upstream() {
  PeerSnapshot p;
  p.name = "upstream-1";
  p.address = "192.0.2.1";
  p.remote_asn = 64500;
  p.description = "transit \"A\"";
  p.families = {codec::kIpv4Unicast, codec::kIpv6Unicast};
  p.state = fsm::State::kEstablished;
  p.uptime_seconds = 42;
  p.announced = {1000, 20, 0, 0};
  p.withdrawn = {10, 0, 0, 0};
  p.routes = {985, 20, 0, 0};  // the table's count, not announced - withdrawn
  p.refused = {15, 0, 0, 0};
  p.advertised = {4000, 7, 0, 0};
  p.best = {900, 20, 0, 0};
  p.messages_in = {0, 1, 57, 0, 3, 0};
  p.messages_out = {0, 1, 0, 0, 4, 0};
  p.treat_as_withdraw = 2;
  p.attribute_discard = 1;
  p.own_as_loops = 6;
  p.reflection_loops = 3;
  p.unnegotiated_family = 4;
  p.empty_as_path = 8;
  p.first_as = 9;
  p.max_prefixes = {1200000, 0, 0, 0};
  p.max_prefixes_restart = 300;
  p.max_prefixes_warnings = 2;
  p.max_prefixes_exceeded = 1;
  p.held_down = true;
  p.short_sessions = 4;
  p.damped_ms = 7500;
  p.oversized = 4;
  p.established_total = 1;
  p.paths_refused = 8;
  p.stale = {700, 0, 0, 0};
  p.graceful.enabled = true;
  p.graceful.restart_time = 120;
  p.graceful.stale_routes_time = 360;
  p.graceful.negotiated = true;
  p.graceful.peer_restart_time = 90;
  p.graceful.peer_families = {{codec::Family{1, 1}, true}};
  p.graceful.phase = "restarting";
  p.graceful.stale_until_ms = 1767225600000;  // 2026-01-01T00:00:00Z
  p.graceful.restarts = 2;
  p.graceful.long_lived_stale_time = 3600;
  p.graceful.long_lived_negotiated = true;
  p.graceful.peer_long_lived_families = {{codec::Family{1, 1}, 86400}};
  p.graceful.long_lived = 1;
  return p;
}

PeerSnapshot link_local() {
  PeerSnapshot p;
  p.name = "ix\\peer";
  p.address = "fe80::2%eth0";
  p.remote_asn = 4200000000;
  p.passive = true;
  p.families = {codec::kIpv6Unicast};
  p.state = fsm::State::kActive;
  p.last_error = "Hold Timer Expired";
  p.connections_refused = 5;
  return p;
}

Snapshot sample() {
  Snapshot s;
  s.version = "0.1.0";
  s.asn = 64496;
  s.router_id = "198.51.100.1";
  s.uptime_seconds = 3600;
  s.connections_refused = 7;
  s.peers = {upstream(), link_local()};
  s.table.prefixes = {985, 20, 0, 0};
  s.table.routes = 1005;
  s.table.attr_sets = 17;
  s.exports = {2, 5, 1234, 4096};
  s.table.attr_bytes = 3000;
  s.table.map_bytes = 40000;
  s.table.journal_bytes = 2000;
  s.table.routes_ineligible = 12;
  s.table.nexthops_resolved = 3;
  s.table.nexthops_unresolved = 1;
  s.memory.available = true;
  s.memory.background_thread = true;
  s.memory.allocated = 123456789;
  s.memory.active = 130000000;
  s.memory.metadata = 4000000;
  s.memory.resident = 140000000;
  s.memory.mapped = 150000000;
  s.memory.retained = 9000000;
  return s;
}

TEST(ApiStatus, HoldsTheRouterAndCounts) {
  json j = json::parse(status_json(sample()));
  EXPECT_EQ(j["version"], "0.1.0");
  EXPECT_EQ(j["asn"], 64496);
  EXPECT_EQ(j["router_id"], "198.51.100.1");
  EXPECT_EQ(j["uptime_seconds"], 3600);
  EXPECT_EQ(j["peers"]["configured"], 2);
  EXPECT_EQ(j["peers"]["established"], 1);
  EXPECT_EQ(j["connections_refused"], 7);
  const json& m = j["memory"];
  EXPECT_EQ(m["allocator"], "jemalloc");
  EXPECT_EQ(m["background_thread"], true);
  EXPECT_EQ(m["allocated"], 123456789);
  EXPECT_EQ(m["active"], 130000000);
  EXPECT_EQ(m["metadata"], 4000000);
  EXPECT_EQ(m["resident"], 140000000);
  EXPECT_EQ(m["mapped"], 150000000);
  EXPECT_EQ(m["retained"], 9000000);
}

TEST(ApiStatusPage, SectionsOfConfiguredParts) {
  Snapshot s = sample();
  EXPECT_EQ(status_page_html(s).find("class=\"section\""), std::string::npos) << "none when not configured";
  s.sections.push_back({"Kernel routes", "/api/kernel", {{"installed", "3"}, {"last error", "<refused>"}}});
  std::string h = status_page_html(s);
  EXPECT_NE(h.find("<h2>Kernel routes</h2>"), std::string::npos);
  EXPECT_NE(h.find("<tr><td>installed</td><td>3</td></tr>"), std::string::npos);
  EXPECT_NE(h.find("<td>&lt;refused&gt;</td>"), std::string::npos);
  EXPECT_NE(h.find("<a href=\"/api/kernel\">/api/kernel</a>"), std::string::npos);
}

TEST(ApiStatusPage, RefusedRoutesKept) {
  Snapshot s = sample();
  EXPECT_NE(status_page_html(s).find("<p>None kept"), std::string::npos);
  s.refused = {{"up", "192.0.2.0/24", "cone.<leak>"}, {"up", "198.51.100.0/24", "cone.leak"}};
  s.refused_kept = 7;
  std::string h = status_page_html(s);
  EXPECT_NE(h.find("<tr><td>up</td><td>192.0.2.0/24</td><td>cone.&lt;leak&gt;</td></tr>"), std::string::npos) << h;
  EXPECT_NE(h.find("7 kept in all, the first 2 shown"), std::string::npos) << h;
  s.refused_kept = 2;
  EXPECT_NE(status_page_html(s).find("2 kept in all. All of them"), std::string::npos);
}

TEST(ApiStatus, MemoryNotAvailableWithoutJemalloc) {
  Snapshot s = sample();
  s.memory = MemoryStats{};
  json j = json::parse(status_json(s));
  EXPECT_TRUE(j["memory"]["allocator"].is_null());
  EXPECT_FALSE(j["memory"].contains("allocated"));
  EXPECT_EQ(metrics_text(s).find("petrel_memory_bytes"), std::string::npos);
  EXPECT_NE(status_page_html(s).find("Not available"), std::string::npos);
  EXPECT_NE(status_page_html(s).find("ipv4-unicast 985 / 900 / 4000"), std::string::npos)
      << "each peer's routes received / best / advertised";
}

TEST(ApiPeers, ListsEveryPeerInOrder) {
  json j = json::parse(peers_json(sample()));
  ASSERT_TRUE(j["peers"].is_array());
  ASSERT_EQ(j["peers"].size(), 2u);
  EXPECT_EQ(j["peers"][0]["name"], "upstream-1");
  EXPECT_EQ(j["peers"][1]["name"], "ix\\peer");
  EXPECT_EQ(json::parse(peers_json(Snapshot{}))["peers"], json::array());
}

TEST(ApiPeers, EstablishedPeer) {
  json p = json::parse(peer_json(upstream()));
  EXPECT_EQ(p["address"], "192.0.2.1");
  EXPECT_EQ(p["remote_asn"], 64500);
  EXPECT_EQ(p["description"], "transit \"A\"");
  EXPECT_EQ(p["passive"], false);
  EXPECT_EQ(p["enabled"], true);
  EXPECT_EQ(p["state"], "established");
  EXPECT_EQ(p["uptime_seconds"], 42);
  EXPECT_TRUE(p["last_error"].is_null());
  EXPECT_EQ(p["established_total"], 1);
  EXPECT_EQ(p["families"], json({"ipv4-unicast", "ipv6-unicast"}));
  const json& v4 = p["update_prefixes"]["ipv4-unicast"];
  EXPECT_EQ(v4["announced"], 1000);
  EXPECT_EQ(v4["withdrawn"], 10);
  EXPECT_EQ(v4["received"], 985);
  EXPECT_EQ(v4["refused"], 15);
  EXPECT_EQ(v4["advertised"], 4000);
  EXPECT_EQ(v4["best"], 900);
  EXPECT_EQ(p["update_prefixes"]["ipv6-unicast"]["received"], 20);
  EXPECT_FALSE(p["update_prefixes"].contains("ipv4-multicast"));
  EXPECT_EQ(p["messages"]["in"]["update"], 57);
  EXPECT_EQ(p["messages"]["in"]["open"], 1);
  EXPECT_EQ(p["messages"]["in"]["keepalive"], 3);
  EXPECT_EQ(p["messages"]["out"]["keepalive"], 4);
  EXPECT_EQ(p["messages"]["out"]["route-refresh"], 0);
  EXPECT_EQ(p["rfc7606"]["treat_as_withdraw"], 2);
  EXPECT_EQ(p["rfc7606"]["attribute_discard"], 1);
  EXPECT_EQ(p["loops"]["own_as"], 6);
  EXPECT_EQ(p["loops"]["reflection"], 3);
  EXPECT_EQ(p["unnegotiated_family"], 4);
  EXPECT_EQ(p["as_path_checks"]["enforce_first_as"], true);
  EXPECT_EQ(p["as_path_checks"]["empty_as_path"], 8);
  EXPECT_EQ(p["as_path_checks"]["first_as"], 9);
  EXPECT_EQ(p["max_prefixes"]["limits"]["ipv4-unicast"], 1200000);
  EXPECT_FALSE(p["max_prefixes"]["limits"].contains("ipv6-unicast"));
  EXPECT_EQ(p["max_prefixes"]["action"], "cease");
  EXPECT_EQ(p["max_prefixes"]["restart_seconds"], 300);
  EXPECT_EQ(p["max_prefixes"]["warn_percent"], 90);
  EXPECT_EQ(p["max_prefixes"]["warnings"], 2);
  EXPECT_EQ(p["max_prefixes"]["exceeded"], 1);
  EXPECT_EQ(p["max_prefixes"]["held_down"], true);
  EXPECT_EQ(p["damping"]["enabled"], true);
  EXPECT_EQ(p["damping"]["short_sessions"], 4);
  EXPECT_EQ(p["damping"]["held_ms"], 7500);
  EXPECT_EQ(p["paths_refused"], 8);
  EXPECT_EQ(p["oversized"], 4);
  const auto& g = p["graceful_restart"];
  EXPECT_EQ(g["enabled"], true);
  EXPECT_EQ(g["restart_time"], 120);
  EXPECT_EQ(g["stale_routes_time"], 360);
  EXPECT_EQ(g["negotiated"], true);
  EXPECT_EQ(g["notification"], false);
  EXPECT_EQ(g["peer_restart_time"], 90);
  EXPECT_EQ(g["peer_families"]["ipv4-unicast"]["forwarding_preserved"], true);
  EXPECT_EQ(g["state"], "restarting");
  EXPECT_EQ(g["stale_until"], "2026-01-01T00:00:00Z");
  EXPECT_EQ(g["stale_routes"]["ipv4-unicast"], 700);
  EXPECT_FALSE(g["stale_routes"].contains("ipv6-unicast"));
  EXPECT_EQ(g["stale_routes_total"], 700);
  EXPECT_EQ(g["restarts"], 2);
  EXPECT_EQ(g["expired"], 0);
  EXPECT_EQ(g["long_lived_stale_time"], 3600);
  EXPECT_EQ(g["long_lived_negotiated"], true);
  EXPECT_EQ(g["peer_long_lived_families"]["ipv4-unicast"]["stale_time"], 86400);
  EXPECT_EQ(g["long_lived"], 1);
}

TEST(ApiPeers, PeerNotEstablished) {
  json p = json::parse(peer_json(link_local()));
  EXPECT_EQ(p["address"], "fe80::2%eth0");
  EXPECT_EQ(p["remote_asn"], 4200000000u);
  EXPECT_EQ(p["state"], "active");
  EXPECT_TRUE(p["uptime_seconds"].is_null());
  EXPECT_EQ(p["last_error"], "Hold Timer Expired");
  EXPECT_EQ(p["connections_refused"], 5);
  EXPECT_EQ(p["passive"], true);
}

TEST(ApiPeers, PrefixesOfAFamilyNotConfiguredStillShow) {
  PeerSnapshot p = link_local();
  p.announced[2] = 3;  // ipv4-multicast
  json j = json::parse(peer_json(p));
  EXPECT_EQ(j["update_prefixes"]["ipv4-multicast"]["announced"], 3);
  EXPECT_EQ(j["families"], json({"ipv6-unicast"}));
}

TEST(ApiPeers, StateNames) {
  EXPECT_EQ(state_json_name(fsm::State::kIdle), "idle");
  EXPECT_EQ(state_json_name(fsm::State::kConnect), "connect");
  EXPECT_EQ(state_json_name(fsm::State::kOpenSent), "opensent");
  EXPECT_EQ(state_json_name(fsm::State::kOpenConfirm), "openconfirm");
  EXPECT_EQ(state_number(fsm::State::kIdle), 1);
  EXPECT_EQ(state_number(fsm::State::kEstablished), 6);
}

TEST(ApiRoutes, Endpoints) {
  Snapshot s = sample();
  Response r = respond("GET", "/api/status", s);
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(r.content_type, "application/json");
  EXPECT_EQ(json::parse(r.body)["asn"], 64496);

  r = respond("GET", "/api/peers", s);
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(json::parse(r.body)["peers"].size(), 2u);

  r = respond("GET", "/api/peers/upstream-1", s);
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(json::parse(r.body)["name"], "upstream-1");

  r = respond("GET", "/metrics", s);
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(r.content_type, "text/plain; version=0.0.4; charset=utf-8");

  r = respond("HEAD", "/api/peers", s);
  EXPECT_EQ(r.status, 200u);
}

TEST(ApiRoutes, UnknownPeerIs404WithJsonError) {
  Response r = respond("GET", "/api/peers/nobody", sample());
  EXPECT_EQ(r.status, 404u);
  EXPECT_EQ(r.content_type, "application/json");
  json j = json::parse(r.body);
  EXPECT_EQ(j["error"], "no peer named \"nobody\"");
}

TEST(ApiRoutes, UnknownPathIs404) {
  for (const char* path : {"/api", "/api/", "/api/peers/upstream-1/routes", "/metrics/x", "/nope", "/index.html"}) {
    Response r = respond("GET", path, sample());
    EXPECT_EQ(r.status, 404u) << path;
    EXPECT_TRUE(json::parse(r.body).contains("error")) << path;
  }
}

TEST(ApiRoutes, OtherMethodsAre405) {
  for (const char* method : {"POST", "PUT", "DELETE", "PATCH", "OPTIONS"}) {
    Response r = respond(method, "/api/peers", sample());
    EXPECT_EQ(r.status, 405u) << method;
    EXPECT_EQ(r.allow, "GET, HEAD");
    EXPECT_TRUE(json::parse(r.body).contains("error"));
  }
}

// One sample line of the text format: name, labels, value.
struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  std::string value;
};

std::vector<Sample> parse_metrics(const std::string& text, std::set<std::string>& typed) {
  static const std::regex kSample(R"(^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? ([0-9]+)$)");
  static const std::regex kLabel(R"re(([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)")re");
  static const std::regex kType(R"(^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge)$)");
  std::vector<Sample> out;
  std::istringstream in(text);
  std::string line;
  std::string current;
  while (std::getline(in, line)) {
    std::smatch m;
    if (line.starts_with("# HELP ")) continue;
    if (std::regex_match(line, m, kType)) {
      EXPECT_FALSE(typed.contains(m[1])) << "family written twice: " << m[1];
      current = m[1];
      typed.insert(current);
      continue;
    }
    if (!std::regex_match(line, m, kSample)) {
      ADD_FAILURE() << "not a sample line: " << line;
      continue;
    }
    Sample s{m[1], {}, m[4]};
    EXPECT_EQ(s.name, current) << "sample outside its family: " << line;
    std::string labels = m[3];
    for (std::sregex_iterator it(labels.begin(), labels.end(), kLabel), end; it != end; ++it)
      s.labels[(*it)[1]] = (*it)[2];
    out.push_back(std::move(s));
  }
  return out;
}

const Sample* find(const std::vector<Sample>& samples, std::string_view name,
                   const std::map<std::string, std::string>& labels) {
  for (const auto& s : samples)
    if (s.name == name && s.labels == labels) return &s;
  return nullptr;
}

TEST(ApiMetrics, WellFormedAndComplete) {
  std::string text = metrics_text(sample());
  ASSERT_TRUE(text.ends_with("\n"));
  std::set<std::string> typed;
  auto samples = parse_metrics(text, typed);
  EXPECT_EQ(typed, (std::set<std::string>{"petrel_build_info", "petrel_peer_state",
                                          "petrel_peer_update_prefixes_total", "petrel_messages_total",
                                          "petrel_peer_established_total", "petrel_update_errors_total",
                                          "petrel_update_loops_total", "petrel_peer_connections_refused_total",
                                          "petrel_peer_paths_refused_total", "petrel_peer_oversized_routes_total",
                                          "petrel_connections_refused_total", "petrel_peer_routes",
                                          "petrel_peer_stale_routes", "petrel_peer_graceful_restarts_total",
                                          "petrel_table_prefixes", "petrel_table_routes",
                                          "petrel_table_attribute_sets", "petrel_table_bytes",
                                          "petrel_peer_prefixes", "petrel_attribute_sets",
                                          "petrel_memory_bytes", "petrel_update_refused_total",
                                          "petrel_peer_max_prefixes", "petrel_peer_max_prefixes_events_total",
                                          "petrel_export_groups", "petrel_export_group_members",
                                          "petrel_export_updates_encoded_total", "petrel_export_stream_bytes",
                                          "petrel_routes_ineligible", "petrel_nexthops"}));
  auto value = [&](std::string_view name, const std::map<std::string, std::string>& labels) -> std::string {
    const Sample* s = find(samples, name, labels);
    return s ? s->value : "<missing>";
  };
  EXPECT_EQ(value("petrel_build_info", {{"version", "0.1.0"}}), "1");
  EXPECT_EQ(value("petrel_peer_state", {{"peer", "upstream-1"}, {"state", "established"}}), "6");
  EXPECT_EQ(value("petrel_peer_state", {{"peer", "ix\\\\peer"}, {"state", "active"}}), "3");
  EXPECT_EQ(value("petrel_peer_update_prefixes_total",
                  {{"peer", "upstream-1"}, {"family", "ipv4-unicast"}, {"kind", "announced"}}),
            "1000");
  EXPECT_EQ(value("petrel_peer_update_prefixes_total",
                  {{"peer", "upstream-1"}, {"family", "ipv4-unicast"}, {"kind", "withdrawn"}}),
            "10");
  EXPECT_EQ(value("petrel_messages_total", {{"peer", "upstream-1"}, {"direction", "in"}, {"type", "update"}}), "57");
  EXPECT_EQ(value("petrel_messages_total", {{"peer", "upstream-1"}, {"direction", "out"}, {"type", "keepalive"}}),
            "4");
  EXPECT_EQ(value("petrel_peer_established_total", {{"peer", "upstream-1"}}), "1");
  EXPECT_EQ(value("petrel_update_errors_total", {{"peer", "upstream-1"}, {"action", "treat_as_withdraw"}}), "2");
  EXPECT_EQ(value("petrel_update_errors_total", {{"peer", "upstream-1"}, {"action", "attribute_discard"}}), "1");
  EXPECT_EQ(value("petrel_update_loops_total", {{"peer", "upstream-1"}, {"kind", "own-as"}}), "6");
  EXPECT_EQ(value("petrel_update_loops_total", {{"peer", "upstream-1"}, {"kind", "reflection"}}), "3");
  EXPECT_EQ(value("petrel_update_refused_total", {{"peer", "upstream-1"}, {"reason", "unnegotiated-family"}}), "4");
  EXPECT_EQ(value("petrel_update_refused_total", {{"peer", "upstream-1"}, {"reason", "empty-as-path"}}), "8");
  EXPECT_EQ(value("petrel_update_refused_total", {{"peer", "upstream-1"}, {"reason", "first-as"}}), "9");
  EXPECT_EQ(value("petrel_peer_max_prefixes", {{"peer", "upstream-1"}, {"family", "ipv4-unicast"}}), "1200000");
  EXPECT_EQ(value("petrel_peer_max_prefixes", {{"peer", "upstream-1"}, {"family", "ipv6-unicast"}}), "<missing>");
  EXPECT_EQ(value("petrel_peer_max_prefixes_events_total", {{"peer", "upstream-1"}, {"kind", "warning"}}), "2");
  EXPECT_EQ(value("petrel_peer_max_prefixes_events_total", {{"peer", "upstream-1"}, {"kind", "exceeded"}}), "1");
  EXPECT_EQ(value("petrel_peer_connections_refused_total", {{"peer", "ix\\\\peer"}}), "5");
  EXPECT_EQ(value("petrel_connections_refused_total", {}), "7");
  EXPECT_EQ(value("petrel_peer_paths_refused_total", {{"peer", "upstream-1"}}), "8");
  EXPECT_EQ(value("petrel_peer_paths_refused_total", {{"peer", "ix\\\\peer"}}), "0");
  EXPECT_EQ(value("petrel_peer_oversized_routes_total", {{"peer", "upstream-1"}}), "4");
  EXPECT_EQ(value("petrel_peer_routes", {{"peer", "upstream-1"}, {"family", "ipv4-unicast"}}), "985");
  EXPECT_EQ(value("petrel_peer_stale_routes", {{"peer", "upstream-1"}, {"family", "ipv4-unicast"}}), "700");
  EXPECT_EQ(value("petrel_peer_graceful_restarts_total", {{"peer", "upstream-1"}, {"outcome", "kept"}}), "2");
  EXPECT_EQ(value("petrel_peer_graceful_restarts_total", {{"peer", "upstream-1"}, {"outcome", "long-lived"}}), "1");
  EXPECT_EQ(value("petrel_peer_routes", {{"peer", "ix\\\\peer"}, {"family", "ipv6-unicast"}}), "0");
  EXPECT_EQ(value("petrel_table_prefixes", {{"family", "ipv6-unicast"}}), "20");
  EXPECT_EQ(value("petrel_table_routes", {{"family", "ipv4-unicast"}}), "985");
  EXPECT_EQ(value("petrel_table_routes", {{"family", "ipv6-unicast"}}), "20");
  EXPECT_EQ(value("petrel_attribute_sets", {}), "17");
  EXPECT_EQ(value("petrel_peer_prefixes", {{"peer", "upstream-1"}, {"family", "ipv4-unicast"}, {"kind", "received"}}),
            "985");
  EXPECT_EQ(value("petrel_peer_prefixes", {{"peer", "upstream-1"}, {"family", "ipv4-unicast"}, {"kind", "accepted"}}),
            "985");
  EXPECT_EQ(value("petrel_peer_prefixes", {{"peer", "upstream-1"}, {"family", "ipv6-unicast"}, {"kind", "advertised"}}),
            "7");
  EXPECT_EQ(value("petrel_peer_prefixes", {{"peer", "upstream-1"}, {"family", "ipv4-unicast"}, {"kind", "best"}}),
            "900");
  EXPECT_EQ(value("petrel_peer_update_prefixes_total",
                  {{"peer", "upstream-1"}, {"family", "ipv4-unicast"}, {"kind", "refused"}}),
            "15");
  EXPECT_EQ(value("petrel_memory_bytes", {{"kind", "allocated"}}), "123456789");
  EXPECT_EQ(value("petrel_memory_bytes", {{"kind", "retained"}}), "9000000");
  EXPECT_EQ(value("petrel_table_attribute_sets", {}), "17");
  EXPECT_EQ(value("petrel_export_groups", {}), "2");
  EXPECT_EQ(value("petrel_routes_ineligible", {}), "12");
  EXPECT_EQ(value("petrel_nexthops", {{"state", "resolved"}}), "3");
  EXPECT_EQ(value("petrel_nexthops", {{"state", "unresolved"}}), "1");
  EXPECT_EQ(value("petrel_export_group_members", {}), "5");
  EXPECT_EQ(value("petrel_export_updates_encoded_total", {}), "1234");
  EXPECT_EQ(value("petrel_export_stream_bytes", {}), "4096");
  EXPECT_EQ(value("petrel_table_bytes", {{"part", "map"}}), "40000");
  EXPECT_EQ(value("petrel_table_bytes", {{"part", "journal"}}), "2000");
  EXPECT_EQ(value("petrel_table_bytes", {{"part", "attribute_sets"}}), "3000");
}

TEST(ApiMetrics, LabelValuesAreEscaped) {
  Snapshot s;
  s.version = "1";
  PeerSnapshot p;
  p.name = "a\"b\\c\nd";
  s.peers = {p};
  std::string text = metrics_text(s);
  EXPECT_NE(text.find(R"(peer="a\"b\\c\nd")"), std::string::npos);
  std::set<std::string> typed;
  parse_metrics(text, typed);
}

// promtool (Debian package prometheus) is the reference checker; the test
// skips where it is not installed.
TEST(ApiMetrics, PromtoolAccepts) {
  if (!promtool::installed()) GTEST_SKIP() << "promtool not installed";
  const auto verdict = promtool::check_metrics(metrics_text(sample()));
  ASSERT_TRUE(verdict.has_value());
  EXPECT_EQ(verdict->status, 0) << verdict->output;
  EXPECT_EQ(verdict->output, "") << "promtool found problems";
}

TEST(ApiStatusPage, ShowsPeersRoutesAndTheTable) {
  Snapshot s = sample();
  s.peers[0].description = "<script>alert(1)</script> & co";
  Response r = respond("GET", "/", s);
  ASSERT_EQ(r.status, 200u);
  EXPECT_EQ(r.content_type, kHtmlType);
  const std::string& h = r.body;
  EXPECT_TRUE(h.starts_with("<!DOCTYPE html>"));
  EXPECT_NE(h.find("AS64496, router ID 198.51.100.1"), std::string::npos);
  EXPECT_NE(h.find("Sessions established: 1 of 2"), std::string::npos);
  // the peers, by name (escaped), state and routes from the table
  EXPECT_NE(h.find(">upstream-1</a>"), std::string::npos);
  EXPECT_NE(h.find(">ix\\peer</a>"), std::string::npos);
  EXPECT_NE(h.find("<td class=\"up\">established</td>"), std::string::npos);
  EXPECT_NE(h.find("<td class=\"down\">active</td>"), std::string::npos);
  EXPECT_NE(h.find("ipv4-unicast 985 / 900 / 4000<br>ipv6-unicast 20 / 20 / 7"), std::string::npos);
  EXPECT_NE(h.find("Hold Timer Expired"), std::string::npos);
  EXPECT_EQ(h.find("<script>"), std::string::npos) << "a description must not become markup";
  EXPECT_NE(h.find("&lt;script&gt;alert(1)&lt;/script&gt; &amp; co"), std::string::npos);
  // the table
  EXPECT_NE(h.find("<tr><td>ipv4-unicast</td><td class=\"n\">985</td></tr>"), std::string::npos);
  EXPECT_NE(h.find("1005 routes, 17 distinct attribute sets"), std::string::npos);
  // jemalloc's figures, in MB
  EXPECT_NE(h.find("<tr><td>allocated</td><td class=\"n\">123.5</td></tr>"), std::string::npos);
  EXPECT_NE(h.find("<tr><td>retained</td><td class=\"n\">9.0</td></tr>"), std::string::npos);
  EXPECT_NE(h.find("Background thread: on."), std::string::npos);
  // the lookup box asks the route query for the longest match
  EXPECT_NE(h.find("<form id=\"lookup\" method=\"get\" action=\"/api/routes\">"), std::string::npos);
  EXPECT_NE(h.find("name=\"match\" value=\"longest\""), std::string::npos);
  // the looking glass's form (GET /lg), a longest match selected
  EXPECT_NE(h.find("<form id=\"looking-glass\" method=\"get\" action=\"/lg\">"), std::string::npos);
  EXPECT_NE(h.find("<option value=\"longest\" selected>"), std::string::npos);
  EXPECT_TRUE(h.ends_with("</body></html>\n"));
}

// GET /api/routes/{prefix}, with a lookup standing in for the table.
PrefixSnapshot contested() {
  PrefixSnapshot p;
  p.prefix = "192.0.2.0/24";
  p.family = "ipv4-unicast";
  RouteSnapshot best;
  best.peer = "upstream-1";
  best.peer_address = "192.0.2.1";
  best.best = true;
  best.attributes.origin = codec::Origin::kIgp;
  best.attributes.as_path = codec::AsPath{{{codec::SegmentType::kAsSequence, {64500}}}};
  best.attributes.next_hop = net::IpAddress::v4(0xC0000201);
  RouteSnapshot other = best;
  other.peer = "ix\\peer";
  other.peer_address = "fe80::2%eth0";
  other.path_id = 7;
  other.best = false;
  other.stale = true;
  other.lost_by = "AS path length";
  other.eligible = false;
  other.igp_cost = 20;
  other.attributes.as_path = codec::AsPath{{{codec::SegmentType::kAsSequence, {4200000000, 64501}}}};
  p.routes = {best, other};
  return p;
}

TEST(ApiPrefixRoutes, BestFirstWithTheReasonForEachOther) {
  std::string asked;
  Response r = respond_routes("GET", "/api/routes/192.0.2.0/24", [&](const net::Prefix& p, PrefixSnapshot& out) {
    asked = p.to_string();
    out = contested();
    return true;
  });
  EXPECT_EQ(asked, "192.0.2.0/24");
  ASSERT_EQ(r.status, 200u);
  json j = json::parse(r.body);
  EXPECT_EQ(j["prefix"], "192.0.2.0/24");
  EXPECT_EQ(j["family"], "ipv4-unicast");
  ASSERT_EQ(j["routes"].size(), 2u);
  EXPECT_EQ(j["routes"][0]["peer"], "upstream-1");
  EXPECT_EQ(j["routes"][0]["best"], true);
  EXPECT_TRUE(j["routes"][0]["lost_by"].is_null());
  EXPECT_EQ(j["routes"][0]["attributes"]["as_path"][0]["asns"], json({64500}));
  EXPECT_EQ(j["routes"][0]["attributes"]["next_hop"], "192.0.2.1");
  EXPECT_EQ(j["routes"][1]["peer"], "ix\\peer");
  EXPECT_EQ(j["routes"][1]["peer_address"], "fe80::2%eth0");
  EXPECT_EQ(j["routes"][1]["path_id"], 7);
  EXPECT_EQ(j["routes"][1]["best"], false);
  EXPECT_EQ(j["routes"][1]["stale"], true);
  EXPECT_EQ(j["routes"][1]["lost_by"], "AS path length");
  EXPECT_EQ(j["routes"][0]["eligible"], true);
  EXPECT_EQ(j["routes"][0]["igp_cost"], 0);
  EXPECT_EQ(j["routes"][1]["eligible"], false);
  EXPECT_EQ(j["routes"][1]["igp_cost"], 20);
  EXPECT_EQ(j["routes"][1]["attributes"]["as_path"][0]["asns"], json({4200000000u, 64501}));
}

// Every route shows its next hop: NEXT_HOP's for IPv4, MP_REACH_NLRI's
// for IPv6 (with RFC 2545's link-local address when sent) and for IPv4
// over an IPv6 next hop (RFC 8950).
TEST(ApiPrefixRoutes, NextHopOfEveryFamily) {
  const auto v6 = [](const char* s) { return *net::IpAddress::parse(s); };
  PrefixSnapshot p = contested();
  EXPECT_EQ(json::parse(prefix_routes_json(p))["routes"][0]["next_hop"], "192.0.2.1");
  EXPECT_TRUE(json::parse(prefix_routes_json(p))["routes"][0]["next_hop_link_local"].is_null());

  p.prefix = "2001:db8:1::/48";
  p.family = "ipv6-unicast";
  p.routes[0].attributes.next_hop.reset();
  p.routes[0].attributes.mp_family = codec::kIpv6Unicast;
  p.routes[0].attributes.mp_next_hop = codec::NextHop{v6("2001:db8::2"), v6("fe80::2")};
  p.routes[1].attributes.next_hop.reset();
  p.routes[1].attributes.mp_family = codec::kIpv6Unicast;
  p.routes[1].attributes.mp_next_hop = codec::NextHop{v6("2001:db8::3"), std::nullopt};
  json j = json::parse(prefix_routes_json(p));
  EXPECT_EQ(j["routes"][0]["next_hop"], "2001:db8::2");
  EXPECT_EQ(j["routes"][0]["next_hop_link_local"], "fe80::2");
  EXPECT_EQ(j["routes"][1]["next_hop"], "2001:db8::3");
  EXPECT_TRUE(j["routes"][1]["next_hop_link_local"].is_null());
  // The explanation names them too.
  j = json::parse(explain_json(p));
  EXPECT_EQ(j["routes"][0]["next_hop"], "2001:db8::2");
  EXPECT_EQ(j["routes"][0]["next_hop_link_local"], "fe80::2");

  // IPv4 over IPv6 (RFC 8950): no NEXT_HOP attribute, MP_REACH_NLRI's.
  p.prefix = "192.0.2.0/24";
  p.family = "ipv4-unicast";
  p.routes[0].attributes.mp_family = codec::kIpv4Unicast;
  j = json::parse(prefix_routes_json(p));
  EXPECT_EQ(j["routes"][0]["next_hop"], "2001:db8::2");
  EXPECT_EQ(j["routes"][0]["next_hop_link_local"], "fe80::2");
  // NEXT_HOP, when an IPv4 route has it, is the one the kernel installs.
  p.routes[0].attributes.next_hop = net::IpAddress::v4(0xC0000209);
  EXPECT_EQ(route_next_hop(p.routes[0].attributes, "ipv4-unicast")->global.to_string(), "192.0.2.9");
  EXPECT_EQ(route_next_hop(p.routes[0].attributes, "ipv6-unicast")->global.to_string(), "2001:db8::2");
  // None at all (our own [[originate]] without next_hop): null.
  p.routes[0].attributes.next_hop.reset();
  p.routes[0].attributes.mp_next_hop.reset();
  j = json::parse(prefix_routes_json(p));
  EXPECT_TRUE(j["routes"][0]["next_hop"].is_null());
  EXPECT_TRUE(j["routes"][0]["next_hop_link_local"].is_null());
}

TEST(ApiPrefixRoutes, Ipv6PrefixIsLookedUpAsIs) {
  std::string asked;
  Response r = respond_routes("GET", "/api/routes/2001:db8::/32", [&](const net::Prefix& p, PrefixSnapshot&) {
    asked = p.to_string();
    return false;
  });
  EXPECT_EQ(asked, "2001:db8::/32");
  EXPECT_EQ(r.status, 404u);
  EXPECT_NE(json::parse(r.body)["error"].get<std::string>().find("no route to 2001:db8::/32"), std::string::npos);
}

TEST(ApiPrefixRoutes, BadPrefixIs400AndNeverLooksUp) {
  bool called = false;
  auto lookup = [&](const net::Prefix&, PrefixSnapshot&) {
    called = true;
    return true;
  };
  for (const char* path : {"/api/routes/", "/api/routes/banana", "/api/routes/192.0.2.1/24", "/api/routes/10.0.0.0/33"}) {
    Response r = respond_routes("GET", path, lookup);
    EXPECT_EQ(r.status, 400u) << path;
    EXPECT_TRUE(json::parse(r.body).contains("error")) << path;
  }
  EXPECT_FALSE(called);
  Response r = respond_routes("POST", "/api/routes/192.0.2.0/24", lookup);
  EXPECT_EQ(r.status, 405u);
  EXPECT_EQ(r.allow, "GET, HEAD");
  EXPECT_FALSE(called);
}

// GET /api/routes?...: a fake table of three prefixes.
struct FakeTable {
  std::map<net::Prefix, PrefixSnapshot> prefixes;
  std::vector<std::string> asked;
  FakeTable() {
    for (const char* text : {"10.0.0.0/8", "10.1.0.0/16", "192.0.2.0/24", "2001:db8::/32"}) {
      PrefixSnapshot p = contested();
      p.prefix = text;
      prefixes[*net::Prefix::parse(text)] = p;
    }
  }
  RouteLookup lookup() {
    return [this](const net::Prefix& p, PrefixSnapshot& out) {
      asked.push_back(p.to_string());
      auto it = prefixes.find(p);
      if (it == prefixes.end()) return false;
      out = it->second;
      return true;
    };
  }
  RouteList list() {
    return [this](const std::optional<net::Prefix>& after, size_t limit, std::string_view peer) {
      std::vector<net::Prefix> out;
      for (const auto& [p, snap] : prefixes) {
        if (after && p <= *after) continue;
        bool from_peer = peer.empty();
        for (const auto& r : snap.routes) from_peer = from_peer || r.peer == peer;
        if (from_peer && out.size() < limit) out.push_back(p);
      }
      return out;
    };
  }
  json get(const QueryArgs& args, unsigned want = 200) {
    Response r = respond_route_query("GET", args, lookup(), list());
    EXPECT_EQ(r.status, want) << r.body;
    return json::parse(r.body);
  }
};

TEST(ApiRouteQuery, ExactMatch) {
  FakeTable t;
  json j = t.get({{"prefix", "192.0.2.0/24"}});
  ASSERT_EQ(j["prefixes"].size(), 1u);
  EXPECT_EQ(j["prefixes"][0]["prefix"], "192.0.2.0/24");
  EXPECT_EQ(j["prefixes"][0]["routes"].size(), 2u);
  EXPECT_TRUE(j["next_cursor"].is_null());
  // exact: a more specific prefix the table lacks finds nothing
  EXPECT_EQ(t.get({{"prefix", "10.1.2.0/24"}})["prefixes"], json::array());
}

TEST(ApiRouteQuery, LongestMatchWalksUpToTheCoveringPrefix) {
  FakeTable t;
  json j = t.get({{"prefix", "10.1.2.0/24"}, {"match", "longest"}});
  ASSERT_EQ(j["prefixes"].size(), 1u);
  EXPECT_EQ(j["prefixes"][0]["prefix"], "10.1.0.0/16");
  EXPECT_EQ(t.asked.front(), "10.1.2.0/24");
  EXPECT_EQ(t.asked.back(), "10.1.0.0/16");
  // an address alone
  EXPECT_EQ(t.get({{"prefix", "10.200.0.1"}, {"match", "longest"}})["prefixes"][0]["prefix"], "10.0.0.0/8");
  EXPECT_EQ(t.get({{"prefix", "2001:db8:1::1"}, {"match", "longest"}})["prefixes"][0]["prefix"], "2001:db8::/32");
  EXPECT_EQ(t.get({{"prefix", "172.16.0.1"}, {"match", "longest"}})["prefixes"], json::array());
}

TEST(ApiRouteQuery, PeerAndBestFilters) {
  FakeTable t;
  json j = t.get({{"prefix", "192.0.2.0/24"}, {"best", "true"}});
  ASSERT_EQ(j["prefixes"][0]["routes"].size(), 1u);
  EXPECT_EQ(j["prefixes"][0]["routes"][0]["peer"], "upstream-1");
  j = t.get({{"prefix", "192.0.2.0/24"}, {"best", "false"}});
  ASSERT_EQ(j["prefixes"][0]["routes"].size(), 1u);
  EXPECT_EQ(j["prefixes"][0]["routes"][0]["peer"], "ix\\peer");
  j = t.get({{"prefix", "192.0.2.0/24"}, {"peer", "ix\\peer"}});
  ASSERT_EQ(j["prefixes"][0]["routes"].size(), 1u);
  EXPECT_EQ(j["prefixes"][0]["routes"][0]["path_id"], 7);
  // a listing with a peer that has no routes is empty
  EXPECT_EQ(t.get({{"peer", "nobody"}})["prefixes"], json::array());
}

TEST(ApiRouteQuery, ListingIsPagedInPrefixOrder) {
  FakeTable t;
  std::vector<std::string> seen;
  QueryArgs args = {{"limit", "3"}};
  json j = t.get(args);
  for (const auto& p : j["prefixes"]) seen.push_back(p["prefix"]);
  ASSERT_EQ(seen.size(), 3u);
  ASSERT_EQ(j["next_cursor"], "192.0.2.0/24");
  j = t.get({{"limit", "3"}, {"cursor", j["next_cursor"]}});
  for (const auto& p : j["prefixes"]) seen.push_back(p["prefix"]);
  EXPECT_TRUE(j["next_cursor"].is_null());
  EXPECT_EQ(seen, (std::vector<std::string>{"10.0.0.0/8", "10.1.0.0/16", "192.0.2.0/24", "2001:db8::/32"}));
  // every prefix in one page by default
  EXPECT_EQ(t.get({})["prefixes"].size(), 4u);
}

// The listing walks the table once per listing, not once per page.
TEST(PrefixListings, PagesAfterTheFirstAreCutFromOneCollection) {
  std::vector<net::Prefix> table;
  for (uint32_t i = 0; i < 1000; ++i) table.push_back(*net::Prefix::make(net::IpAddress::v4(0x0a000000u + (i << 8)), 24));
  std::reverse(table.begin(), table.end());  // collected in any order
  PrefixListings listings([&](std::string_view) { return table; });
  std::vector<net::Prefix> seen;
  std::optional<net::Prefix> cursor;
  int64_t now = 1000;
  for (int pages = 0; pages < 20; ++pages) {
    auto page = listings.page(cursor, 100, "", now += 10);
    seen.insert(seen.end(), page.begin(), page.end());
    if (page.size() < 100) break;
    cursor = page.back();
  }
  EXPECT_EQ(listings.collections(), 1u);  // before: one walk of the whole table per page
  ASSERT_EQ(seen.size(), 1000u);
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
  EXPECT_EQ(std::adjacent_find(seen.begin(), seen.end()), seen.end());
}

TEST(PrefixListings, AFirstPageTakesAFreshCopyAndCopiesExpire) {
  std::vector<net::Prefix> table{*net::Prefix::parse("10.0.0.0/8"), *net::Prefix::parse("192.0.2.0/24")};
  PrefixListings listings([&](std::string_view peer) {
    return peer.empty() ? table : std::vector<net::Prefix>{table.front()};
  }, /*ttl_ms=*/1000, /*max_listings=*/2);
  EXPECT_EQ(listings.page(std::nullopt, 1, "", 0).size(), 1u);
  // A prefix added during the listing may be missed; one present throughout
  // is not: the cursor page comes from the copy.
  table.push_back(*net::Prefix::parse("172.16.0.0/12"));
  auto next = listings.page(*net::Prefix::parse("10.0.0.0/8"), 10, "", 500);
  EXPECT_EQ(next, (std::vector<net::Prefix>{*net::Prefix::parse("192.0.2.0/24")}));
  EXPECT_EQ(listings.collections(), 1u);
  // A new listing sees it.
  EXPECT_EQ(listings.page(std::nullopt, 10, "", 600).size(), 3u);
  EXPECT_EQ(listings.collections(), 2u);
  // Per peer filter; at most max_listings kept.
  EXPECT_EQ(listings.page(std::nullopt, 10, "a", 700).size(), 1u);
  EXPECT_EQ(listings.page(std::nullopt, 10, "b", 800).size(), 1u);
  EXPECT_EQ(listings.kept(), 2u);
  // Unused past the ttl: dropped; a cursor then collects again.
  EXPECT_EQ(listings.page(*net::Prefix::parse("10.0.0.0/8"), 10, "", 5000).size(), 2u);
  EXPECT_EQ(listings.kept(), 1u);
  EXPECT_EQ(listings.collections(), 5u);
}

TEST(ApiRouteQuery, BadArgumentsAre400) {
  FakeTable t;
  for (QueryArgs args : std::vector<QueryArgs>{{{"prefix", "banana"}},
                                                {{"prefix", "192.0.2.1/24"}},
                                                {{"prefix", "192.0.2.1"}},
                                                {{"match", "fuzzy"}},
                                                {{"best", "yes"}},
                                                {{"limit", "0"}},
                                                {{"limit", "1001"}},
                                                {{"limit", "x"}},
                                                {{"cursor", "nope"}},
                                                {{"colour", "red"}}}) {
    json j = t.get(args, 400);
    EXPECT_TRUE(j.contains("error"));
  }
  EXPECT_TRUE(t.asked.empty());
  EXPECT_EQ(respond_route_query("DELETE", {}, t.lookup(), t.list()).status, 405u);
}

TEST(ApiExplain, EveryRouteItsInputsAndTheSteps) {
  PrefixSnapshot p = contested();
  p.steps = {"local preference", "AS path length", "origin", "MED"};
  p.routes[0].inputs = {100, 1, 0, std::nullopt, 64500, true, "192.0.2.1", 0};
  p.routes[1].inputs = {100, 2, 0, 50u, 4200000000u, true, "192.0.2.9", 0};
  p.routes[1].lost_at = 1;
  Response r = respond_routes("GET", "/api/routes/192.0.2.0/24/explain", [&](const net::Prefix& q, PrefixSnapshot& out) {
    EXPECT_EQ(q.to_string(), "192.0.2.0/24");
    out = p;
    return true;
  });
  ASSERT_EQ(r.status, 200u) << r.body;
  json j = json::parse(r.body);
  EXPECT_EQ(j["prefix"], "192.0.2.0/24");
  EXPECT_EQ(j["decided_by"], "AS path length");
  ASSERT_EQ(j["routes"].size(), 2u);
  EXPECT_EQ(j["routes"][0]["best"], true);
  EXPECT_EQ(j["routes"][0]["as_path_length"], 1);
  EXPECT_TRUE(j["routes"][0]["med"].is_null());
  EXPECT_EQ(j["routes"][0]["origin"], "igp");
  EXPECT_EQ(j["routes"][1]["as_path_length"], 2);
  EXPECT_EQ(j["routes"][1]["med"], 50);
  EXPECT_EQ(j["routes"][1]["router_id"], "192.0.2.9");
  EXPECT_EQ(j["routes"][1]["lost_by"], "AS path length");
  ASSERT_EQ(j["steps"].size(), 4u);
  EXPECT_EQ(j["steps"][0]["step"], "local preference");
  EXPECT_EQ(j["steps"][0]["eliminated"], json::array());
  EXPECT_EQ(j["steps"][1]["eliminated"], json::parse(R"([{"peer":"ix\\peer","path_id":7}])"));
  // one route: nothing to compare
  p.routes.resize(1);
  EXPECT_EQ(json::parse(explain_json(p))["decided_by"], "only route");
}

}  // namespace
}  // namespace petrel::daemon::api

namespace petrel::daemon::api {
namespace {

TEST(ApiLookingGlass, TheFormKeepsTheSearchEscaped) {
  const std::string f = looking_glass_form("as-path", "_6500\"<1>$");
  EXPECT_NE(f.find("<option value=\"as-path\" selected>"), std::string::npos) << f;
  EXPECT_EQ(f.find("<option value=\"longest\" selected>"), std::string::npos) << f;
  EXPECT_NE(f.find("value=\"_6500&quot;&lt;1&gt;$\""), std::string::npos) << f;
}

}  // namespace
}  // namespace petrel::daemon::api
