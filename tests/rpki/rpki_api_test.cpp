// GET /api/rpki and the RPKI metrics (daemon/rpki_api.h): the JSON body,
// the Prometheus text (checked by promtool where installed), methods, and
// the counts of routes per validation state, whole table and per peer.
#include "daemon/rpki_api.h"

#include <gtest/gtest.h>

#include <string>

#include "codec/attribute_set.h"
#include "tests/promtool.h"

namespace petrel::daemon {
namespace {

net::Prefix P(const char* s) { return *net::Prefix::parse(s); }

RpkiView sample() {
  VrpStore store;
  (void)store.publish({{P("192.0.2.0/24"), 24, 64500}, {P("2001:db8::/32"), 48, 64501}, {P("10.0.0.0/8"), 8, 1}},
                      "127.0.0.1:323", 7, 1764473000000, std::vector<rpki::Aspa>{{64500, {64501}}, {64502, {0}}}, {4, 1, 2, 3});
  RpkiView v;
  v.enabled = true;
  v.vrps = store.current();
  RpkiCacheStatus a;
  a.name = "127.0.0.1:323";
  a.preference = 1;
  a.state = "idle";
  a.in_sync = true;
  a.active = true;
  a.version = 1;
  a.session_id = 9;
  a.serial = 7;
  a.vrps = 3;
  a.aspas = 2;
  a.refresh = 3600;
  a.retry = 600;
  a.expire = 7200;
  a.last_update_unix_ms = 1764473000000;
  RpkiCacheStatus b;
  b.name = "[2001:db8::1]:8282";
  b.preference = 2;
  b.state = "down";
  b.failed = true;
  v.caches = {a, b};
  v.routes = {0, 5, 3, 2};
  v.peers = {{"bird", {0, 5, 3, 2}}};
  v.slurm.files = {"/etc/petrel/slurm.json"};
  v.slurm.prefix_filters = 2;
  v.slurm.prefix_assertions = 1;
  v.slurm.bgpsec_assertions = 3;
  v.slurm.aspa_filters = 1;
  v.slurm.aspa_assertions = 2;
  return v;
}

TEST(RpkiApi, Json) {
  std::string j = rpki_json(sample());
  EXPECT_NE(j.find(R"("enabled":true,"reject_invalid":false)"), std::string::npos) << j;
  EXPECT_NE(j.find(R"("vrps":{"ipv4":2,"ipv6":1,"source":"127.0.0.1:323","serial":7,)"), std::string::npos) << j;
  EXPECT_NE(j.find(R"("aspas":2,"routes":{"valid":3,"invalid":2,"not-found":5})"), std::string::npos) << j;
  EXPECT_NE(j.find(R"("vrps":3,"aspas":2,"refresh":3600)"), std::string::npos) << j;
  EXPECT_NE(j.find(R"("peers":[{"peer":"bird","valid":3,"invalid":2,"not-found":5}])"), std::string::npos) << j;
  EXPECT_NE(j.find(R"({"cache":"127.0.0.1:323","preference":1,"state":"in-sync","client_state":"idle","active":true,)"),
            std::string::npos)
      << j;
  EXPECT_NE(j.find(R"("state":"down","client_state":"down","active":false,"failed":true,)"), std::string::npos) << j;
  EXPECT_NE(j.find(R"("session_id":null,"serial":null)"), std::string::npos) << j;
  EXPECT_NE(j.find(R"("last_update_unix_ms":null)"), std::string::npos) << j;
  EXPECT_NE(j.find(R"(],"slurm":{"files":["/etc/petrel/slurm.json"],"prefix_filters":2,"prefix_assertions":1,)"
                   R"("bgpsec_filters":0,"bgpsec_assertions":3,"aspa_filters":1,"aspa_assertions":2,"vrps_removed":4,)"
                   R"("vrps_added":1,"aspas_removed":2,"aspas_added":3}})"),
            std::string::npos)
      << j;
  EXPECT_EQ(j.back(), '\n');
}

TEST(RpkiApi, MethodsAndDisabled) {
  EXPECT_EQ(rpki_response("GET", sample()).status, 200u);
  auto r = rpki_response("POST", sample());
  EXPECT_EQ(r.status, 405u);
  EXPECT_EQ(r.allow, "GET, HEAD");
  RpkiView off;
  EXPECT_EQ(rpki_metrics(off), "");
  EXPECT_NE(rpki_json(off).find(R"("enabled":false)"), std::string::npos);
}

TEST(RpkiApi, Metrics) {
  std::string m = rpki_metrics(sample());
  for (const char* line : {"petrel_rpki_vrps{family=\"ipv4\"} 2\n", "petrel_rpki_vrps{family=\"ipv6\"} 1\n",
                           "petrel_rpki_aspas 2\n", "petrel_rpki_slurm_entries{kind=\"prefix_filter\"} 2\n",
                           "petrel_rpki_slurm_entries{kind=\"bgpsec_assertion\"} 3\n",
                           "petrel_rpki_slurm_vrps{change=\"removed\"} 4\n",
                           "petrel_rpki_slurm_vrps{change=\"added\"} 1\n",
                           "petrel_rpki_cache_state{cache=\"127.0.0.1:323\",state=\"in-sync\"} 1\n",
                           "petrel_rpki_cache_state{cache=\"127.0.0.1:323\",state=\"down\"} 0\n",
                           "petrel_rpki_cache_state{cache=\"[2001:db8::1]:8282\",state=\"down\"} 1\n",
                           "petrel_routes_by_validation{state=\"valid\"} 3\n",
                           "petrel_routes_by_validation{state=\"invalid\"} 2\n",
                           "petrel_routes_by_validation{state=\"not-found\"} 5\n"})
    EXPECT_NE(m.find(line), std::string::npos) << line << "\n" << m;
}

TEST(RpkiApi, PromtoolAccepts) {
  if (!promtool::installed()) GTEST_SKIP() << "promtool not installed";
  const auto verdict = promtool::check_metrics(rpki_metrics(sample()));
  ASSERT_TRUE(verdict.has_value());
  EXPECT_EQ(verdict->status, 0) << verdict->output;
  EXPECT_EQ(verdict->output, "");
}

codec::AttributeSet path_to(uint32_t origin) {
  codec::PathAttributes a;
  a.origin = codec::Origin::kIgp;
  codec::AsPath path;
  codec::AsSegment seg;
  seg.type = codec::SegmentType::kAsSequence;
  seg.asns = {65002, origin};
  path.segments.push_back(seg);
  a.as_path = path;
  a.next_hop = net::IpAddress::v4(0xC0000201);
  return codec::AttributeSet::from(a);
}

TEST(RpkiApi, CountsPerStateAndPeer) {
  VrpStore store;
  (void)store.publish({{P("192.0.2.0/24"), 25, 64500}}, "c", 1, 1);
  RpkiValidator validator(store, 65001);
  table::TableOptions o;
  o.validator = &validator;
  table::Table t(o);
  table::PeerInfo pa, pb;
  pa.name = "a";
  pa.address = net::IpAddress::v4(0x0A000001);
  pb.name = "b";
  pb.address = net::IpAddress::v4(0x0A000002);
  uint16_t a = *t.add_peer(pa), b = *t.add_peer(pb);
  auto good = path_to(64500), bad = path_to(64666);
  codec::NlriPrefix both[] = {{P("192.0.2.0/24"), 0}, {P("192.0.2.0/25"), 0}}, other[] = {{P("198.51.100.0/24"), 0}};
  (void)t.apply(a, 0, &good, both, {});
  (void)t.apply(a, 0, &good, other, {});
  (void)t.apply(b, 0, &bad, both, {});
  auto n = count_validation(t);
  auto at = [](const ValidationCounts& c, table::Validation s) { return c[static_cast<size_t>(s)]; };
  EXPECT_EQ(at(n.routes, table::Validation::kValid), 2u);
  EXPECT_EQ(at(n.routes, table::Validation::kInvalid), 2u);
  EXPECT_EQ(at(n.routes, table::Validation::kNotFound), 1u);
  ASSERT_EQ(n.peers.size(), 2u);
  EXPECT_EQ(n.peers[0].peer, "a");
  EXPECT_EQ(at(n.peers[0].routes, table::Validation::kValid), 2u);
  EXPECT_EQ(at(n.peers[0].routes, table::Validation::kNotFound), 1u);
  EXPECT_EQ(n.peers[1].peer, "b");
  EXPECT_EQ(at(n.peers[1].routes, table::Validation::kInvalid), 2u);
  EXPECT_EQ(validation_name(table::Validation::kNotFound), "not-found");
}

}  // namespace
}  // namespace petrel::daemon
