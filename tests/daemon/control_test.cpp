// The control channel's protocol (daemon/control_protocol.h): request
// lines to requests, the command line to request lines, answers, and the
// bounds on hostile input.
#include "daemon/control_protocol.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>

namespace petrel::daemon::control {
namespace {

TEST(ControlParse, Reload) {
  auto r = parse_request(R"({"command":"reload"})");
  ASSERT_TRUE(r.request) << r.error;
  EXPECT_TRUE(std::holds_alternative<Reload>(*r.request));
  EXPECT_TRUE(parse_request("{\"command\":\"reload\"}\r").request);
}

TEST(ControlParse, PeerActions) {
  auto r = parse_request(R"({"command":"peer","peer":"up1","action":"shutdown","message":"maintenance"})");
  ASSERT_TRUE(r.request) << r.error;
  const auto& p = std::get<PeerCommand>(*r.request);
  EXPECT_EQ(p.peer, "up1");
  EXPECT_EQ(p.action, PeerAction::kShutdown);
  EXPECT_EQ(p.message, "maintenance");
  for (const char* a : {"disable", "enable", "reset", "soft-in", "soft-out"}) {
    auto q = parse_request(std::string(R"({"command":"peer","peer":"x","action":")") + a + "\"}");
    ASSERT_TRUE(q.request) << a << ": " << q.error;
    EXPECT_STREQ(peer_action_name(std::get<PeerCommand>(*q.request).action), a);
  }
  EXPECT_FALSE(parse_request(R"({"command":"peer","peer":"x","action":"explode"})").request);
  EXPECT_FALSE(parse_request(R"({"command":"peer","action":"reset"})").request);
  EXPECT_FALSE(parse_request(R"({"command":"peer","peer":"x","action":"reset","message":"m"})").request);
  // RFC 9003: at most 255 octets.
  std::string long_msg(256, 'a');
  auto l = parse_request(R"({"command":"peer","peer":"x","action":"shutdown","message":")" + long_msg + "\"}");
  EXPECT_FALSE(l.request);
  EXPECT_NE(l.error.find("255"), std::string::npos);
}

TEST(ControlParse, Announce) {
  auto r = parse_request(
      R"({"command":"announce","prefix":"192.0.2.0/24","next_hop":"198.51.100.1","communities":["65000:1","no-export"],)"
      R"("large_communities":["65000:1:2"],"med":10,"local_pref":200})");
  ASSERT_TRUE(r.request) << r.error;
  const OriginateConfig& o = std::get<Announce>(*r.request).route;
  EXPECT_EQ(o.prefix.to_string(), "192.0.2.0/24");
  EXPECT_EQ(o.next_hop->to_string(), "198.51.100.1");
  EXPECT_EQ(o.communities.size(), 2u);
  ASSERT_EQ(o.large_communities.size(), 1u);
  EXPECT_EQ(o.large_communities[0].local2, 2u);
  EXPECT_EQ(*o.med, 10u);
  EXPECT_EQ(*o.local_pref, 200u);
}

TEST(ControlParse, AnnounceErrors) {
  for (const char* line : {
           R"({"command":"announce","prefix":"192.0.2.1/24"})",            // host bits
           R"({"command":"announce","prefix":"nonsense"})",
           R"({"command":"announce"})",
           R"({"command":"announce","prefix":"2001:db8::/32","next_hop":"192.0.2.1"})",
           R"({"command":"announce","prefix":"192.0.2.0/24","next_hop":"224.0.0.1"})",
           R"({"command":"announce","prefix":"192.0.2.0/24","med":-1})",
           R"({"command":"announce","prefix":"192.0.2.0/24","med":4294967296})",
           R"({"command":"announce","prefix":"192.0.2.0/24","med":1.5})",
           R"({"command":"announce","prefix":"192.0.2.0/24","communities":"65000:1"})",
           R"({"command":"announce","prefix":"192.0.2.0/24","communities":["x"]})",
           R"({"command":"announce","prefix":"192.0.2.0/24","colour":"red"})",
           R"({"command":"withdraw","prefix":"192.0.2.0/24","extra":1})",
       }) {
    auto r = parse_request(line);
    EXPECT_FALSE(r.request) << line;
    EXPECT_FALSE(r.error.empty()) << line;
  }
}

TEST(ControlParse, Withdraw) {
  auto r = parse_request(R"({"command":"withdraw","prefix":"2001:db8::/48"})");
  ASSERT_TRUE(r.request) << r.error;
  EXPECT_EQ(std::get<Withdraw>(*r.request).prefix.to_string(), "2001:db8::/48");
}

TEST(ControlParse, HostileInput) {
  for (std::string line : {std::string(""), std::string("{"), std::string("[]"), std::string("42"),
                           std::string("\"reload\""), std::string("{\"command\":1}"), std::string("{\"command\":\"\"}"),
                           std::string("\xff\xfe", 2), std::string("{\"command\":\"reload\"}{}"),
                           std::string("{\"command\":\"reload\",\"command\":\"reload\"}x"), std::string(1, '\0')}) {
    EXPECT_FALSE(parse_request(line).request) << line;
  }
  // Deep nesting is dropped while parsing, not recursed into.
  std::string deep = "{\"command\":\"reload\",\"x\":" + std::string(5000, '[') + std::string(5000, ']') + "}";
  EXPECT_FALSE(parse_request(deep).request);
  // Over the line bound: refused before parsing.
  std::string big = "{\"command\":\"reload\",\"x\":\"" + std::string(kMaxLineBytes, 'a') + "\"}";
  auto r = parse_request(big);
  EXPECT_FALSE(r.request);
  EXPECT_NE(r.error.find("longer"), std::string::npos);
  // Too many communities.
  std::string many = R"({"command":"announce","prefix":"192.0.2.0/24","communities":[)";
  for (size_t i = 0; i <= kMaxCommunities; ++i) many += (i ? ",\"" : "\"") + std::to_string(i) + ":1\"";
  EXPECT_FALSE(parse_request(many + "]}").request);
}

TEST(ControlArgs, Commands) {
  auto line = [](std::vector<std::string_view> a) { return request_from_args(a).line; };
  EXPECT_EQ(line({"reload"}), R"({"command":"reload"})");
  EXPECT_EQ(nlohmann::json::parse(line({"peer", "up1", "reset", "--soft-in"}))["action"], "soft-in");
  EXPECT_EQ(nlohmann::json::parse(line({"peer", "up1", "shutdown", "--message", "bye"}))["message"], "bye");
  auto j = nlohmann::json::parse(line({"route", "announce", "192.0.2.0/24", "next-hop", "198.51.100.1", "communities",
                                       "65000:1", "65000:2", "med", "5", "local-pref", "300"}));
  EXPECT_EQ(j["communities"].size(), 2u);
  EXPECT_EQ(j["med"], 5);
  EXPECT_EQ(j["local_pref"], 300);
  // What the command line builds, the daemon parses.
  EXPECT_TRUE(parse_request(j.dump()).request);
  EXPECT_TRUE(parse_request(line({"route", "withdraw", "192.0.2.0/24"})).request);
  EXPECT_TRUE(parse_request(line({"route", "list"})).request);
  for (std::vector<std::string_view> bad : std::vector<std::vector<std::string_view>>{
           {}, {"reload", "now"}, {"peer", "x"}, {"peer", "x", "explode"}, {"peer", "x", "reset", "--hard"},
           {"route", "announce"}, {"route", "announce", "192.0.2.0/24", "med"},
           {"route", "announce", "192.0.2.0/24", "med", "99999999999"}, {"route", "announce", "192.0.2.0/24", "colour"},
           {"route", "announce", "192.0.2.0/24", "communities"}, {"route", "withdraw", "192.0.2.0/24", "x"}}) {
    EXPECT_TRUE(request_from_args(bad).line.empty());
    EXPECT_FALSE(request_from_args(bad).error.empty());
  }
}

TEST(ControlParse, Dump) {
  auto r = parse_request(R"({"command":"dump"})");
  ASSERT_TRUE(r.request) << r.error;
  ASSERT_TRUE(std::holds_alternative<Dump>(*r.request));
  EXPECT_TRUE(std::get<Dump>(*r.request).file.empty());
  r = parse_request(R"({"command":"dump","file":"/tmp/x.mrt"})");
  ASSERT_TRUE(r.request) << r.error;
  EXPECT_EQ(std::get<Dump>(*r.request).file, "/tmp/x.mrt");
  for (const char* bad : {R"({"command":"dump","file":"x.mrt"})", R"({"command":"dump","file":""})",
                          R"({"command":"dump","file":"/tmp/"})", R"({"command":"dump","file":"/a\u0000b"})",
                          R"({"command":"dump","file":7})", R"({"command":"dump","path":"/x"})"})
    EXPECT_FALSE(parse_request(bad).request) << bad;
  EXPECT_FALSE(parse_request(R"({"command":"dump","file":")" + std::string(kMaxDumpPathBytes, 'a') + "\"}").request);
  EXPECT_EQ(request_from_args({"dump"}).line, R"({"command":"dump"})");
  EXPECT_TRUE(parse_request(request_from_args({"dump", "/var/tmp/t.mrt"}).line).request);
  EXPECT_TRUE(request_from_args({"dump", "/a", "/b"}).line.empty());
}

TEST(ControlAnswer, Shapes) {
  EXPECT_EQ(answer_ok(), R"({"ok":true})");
  auto e = nlohmann::json::parse(answer_error("bad", {"f.toml:1:2: x: y"}));
  EXPECT_FALSE(e["ok"].get<bool>());
  EXPECT_EQ(e["details"][0], "f.toml:1:2: x: y");
  // Invalid UTF-8 from a request is replaced, not thrown.
  EXPECT_FALSE(answer_error(std::string("\xff", 1)).empty());
  OriginateConfig o;
  o.prefix = *net::Prefix::parse("192.0.2.0/24");
  auto r = nlohmann::json::parse(answer_routes({o}));
  EXPECT_EQ(r["routes"][0]["origin"], "injected");
  auto d = nlohmann::json::parse(answer_dump(DumpSummary{"/tmp/d.mrt", 3, 4, 2, 100, 1}));
  EXPECT_TRUE(d["ok"].get<bool>());
  EXPECT_EQ(d["file"], "/tmp/d.mrt");
  EXPECT_EQ(d["prefixes"], 3);
  EXPECT_EQ(d["routes"], 4);
  EXPECT_NE(d["result"].get<std::string>().find("1 routes left out"), std::string::npos);
}

// The lines of control.injected_routes_file read back as what was injected.
TEST(ControlAnswer, AnnounceRequestRoundTrips) {
  OriginateConfig full;
  full.prefix = *net::Prefix::parse("2001:db8:1::/48");
  full.next_hop = *net::IpAddress::parse("2001:db8::1");
  full.origin = codec::Origin::kIncomplete;
  full.communities = {0xFFFFFF01, (65000u << 16) | 7};
  full.large_communities = {{65000, 1, 2}};
  full.med = 0;
  full.local_pref = 300;
  OriginateConfig bare;
  bare.prefix = *net::Prefix::parse("192.0.2.0/24");
  OriginateConfig egp = bare;
  egp.origin = codec::Origin::kEgp;
  for (const OriginateConfig& o : {full, bare, egp}) {
    const std::string line = announce_request(o);
    ParseResult p = parse_request(line);
    ASSERT_TRUE(p.request) << line << ": " << p.error;
    const auto* a = std::get_if<Announce>(&*p.request);
    ASSERT_NE(a, nullptr) << line;
    EXPECT_EQ(a->route, o) << line;
  }
}

}  // namespace
}  // namespace petrel::daemon::control
