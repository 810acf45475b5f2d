// Tests of daemon/config.h: the golden files of tests/golden/config (each
// NAME.toml parses to NAME.dump or fails with exactly NAME.err), the
// examples of docs/examples, and that every key documented in
// docs/configuration.md has a golden test.
//
// The folders come from the environment (set by tests/daemon/meson.build).
// PETREL_REGENERATE_GOLDEN=1 rewrites the .dump/.err files from the
// current output; review the diff before committing it.
#include "daemon/config.h"

#include "table/filter.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

namespace petrel::daemon {
namespace {

namespace fs = std::filesystem;

fs::path env_dir(const char* name) {
  const char* v = std::getenv(name);
  return v ? fs::path(v) : fs::path();
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
}

std::vector<fs::path> files_with(const fs::path& dir, const std::string& ext) {
  std::vector<fs::path> out;
  if (dir.empty() || !fs::is_directory(dir)) return out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() == ext) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

std::string errors_text(const ConfigErrors& errs) {
  std::string s;
  for (const auto& e : errs) s += e.to_string() + "\n";
  return s;
}

TEST(ConfigGolden, EveryFileMatches) {
  fs::path dir = env_dir("PETREL_GOLDEN_CONFIG_DIR");
  ASSERT_FALSE(dir.empty()) << "PETREL_GOLDEN_CONFIG_DIR is not set";
  // Files named by golden files (password_file) are found from the
  // configuration's folder; the sources here are bare file names.
  fs::current_path(dir);
  auto inputs = files_with(dir, ".toml");
  ASSERT_GE(inputs.size(), 25u) << "golden files in " << dir;
  bool regenerate = std::getenv("PETREL_REGENERATE_GOLDEN") != nullptr;
  for (const fs::path& in : inputs) {
    SCOPED_TRACE(in.filename().string());
    fs::path dump_path = in, err_path = in;
    dump_path.replace_extension(".dump");
    err_path.replace_extension(".err");
    auto cfg = parse_config(read_file(in), in.filename().string());
    if (regenerate) {
      fs::remove(dump_path);
      fs::remove(err_path);
      if (cfg) write_file(dump_path, dump(*cfg));
      else write_file(err_path, errors_text(cfg.error()));
      continue;
    }
    bool has_dump = fs::exists(dump_path);
    bool has_err = fs::exists(err_path);
    ASSERT_NE(has_dump, has_err) << "exactly one of .dump and .err must exist";
    if (has_dump) {
      ASSERT_TRUE(cfg.ok()) << errors_text(cfg.error());
      EXPECT_EQ(dump(*cfg), read_file(dump_path));
    } else {
      ASSERT_FALSE(cfg.ok()) << "expected errors, got:\n" << dump(*cfg);
      EXPECT_EQ(errors_text(cfg.error()), read_file(err_path));
    }
  }
}

// `cfg` with its inline secrets replaced as the dump replaces them.
Config without_secrets(Config cfg) {
  for (PeerConfig& p : cfg.peers) {
    if (!p.password.empty() && p.password_file.empty()) p.password = kDumpSecretPlaceholder;
    if (p.tcp_ao && p.tcp_ao->password_file.empty()) p.tcp_ao->password = kDumpSecretPlaceholder;
  }
  return cfg;
}

// The dump is itself a configuration that gives the same Config back
// (secrets aside) and dumps the same again.
void expect_round_trip(const Config& cfg) {
  std::string text = dump(cfg);
  auto again = parse_config(text, "dump");
  ASSERT_TRUE(again.ok()) << errors_text(again.error()) << text;
  EXPECT_EQ(*again, without_secrets(cfg));
  EXPECT_EQ(dump(*again), text);
}

// The valid golden configurations, by file name (read from their folder,
// where a password_file is found).
std::vector<std::pair<std::string, Config>> valid_golden_configs() {
  std::vector<std::pair<std::string, Config>> out;
  fs::path dir = env_dir("PETREL_GOLDEN_CONFIG_DIR");
  if (dir.empty()) return out;
  fs::current_path(dir);
  for (const fs::path& in : files_with(dir, ".toml"))
    if (auto cfg = parse_config(read_file(in), in.filename().string())) out.emplace_back(in.filename(), *cfg);
  return out;
}

TEST(ConfigGolden, DumpParsesBackToTheSameConfig) {
  auto golden = valid_golden_configs();
  EXPECT_GE(golden.size(), 25u);
  for (const auto& [name, cfg] : golden) {
    SCOPED_TRACE(name);
    expect_round_trip(cfg);
  }
}

TEST(ConfigExamples, DumpParsesBackToTheSameConfig) {
  auto examples = files_with(env_dir("PETREL_EXAMPLES_DIR"), ".toml");
  ASSERT_GE(examples.size(), 3u);
  for (const fs::path& p : examples) {
    SCOPED_TRACE(p.filename().string());
    auto cfg = load_config(p.string());
    ASSERT_TRUE(cfg.ok()) << errors_text(cfg.error());
    expect_round_trip(*cfg);
  }
}

// ---- the dump's keys against docs/configuration.md

fs::path docs_dir() {
  fs::path d = env_dir("PETREL_DOCS_DIR");
  return d.empty() ? env_dir("PETREL_EXAMPLES_DIR").parent_path() : d;
}

// The documented keys ("### `peer.hold_time`") of each table ("peer",
// "rpki.cache", "filter.rule"), in the page's order, and the tables in
// the order they first appear.
struct DocumentedKeys {
  std::vector<std::string> tables;
  std::map<std::string, std::vector<std::string>> keys;
};

DocumentedKeys documented_keys() {
  DocumentedKeys d;
  std::string text = read_file(docs_dir() / "configuration.md");
  std::regex heading(R"(^### `([a-z0-9_.]+)`)", std::regex::multiline);
  for (auto it = std::sregex_iterator(text.begin(), text.end(), heading); it != std::sregex_iterator(); ++it) {
    std::string dotted = (*it)[1];
    std::string table = dotted.substr(0, dotted.rfind('.'));
    if (!d.keys.count(table)) d.tables.push_back(table);
    d.keys[table].push_back(dotted.substr(dotted.rfind('.') + 1));
  }
  return d;
}

// One [table] or [[table]] of a dump and the keys it names, written
// ("key = value") or said to be unset ("# key not set...").
struct DumpedTable {
  std::string name;
  std::vector<std::string> keys;
};

std::vector<DumpedTable> dumped_tables(const std::string& text) {
  std::vector<DumpedTable> out;
  std::regex header(R"(^\[\[?([a-z0-9_.]+)\]\]?$)");
  std::regex key(R"(^(?:# )?([a-z0-9_]+)(?: = | not set))");
  std::istringstream in(text);
  std::smatch m;
  for (std::string l; std::getline(in, l);) {
    if (std::regex_match(l, m, header)) out.push_back({m[1], {}});
    else if (std::regex_search(l, m, key) && !out.empty()) out.back().keys.push_back(m[1]);
  }
  return out;
}

// Every table of the dump lists exactly the documented keys, in the
// documented order; the tables come in the documented order, and every
// table that always exists is there.
void expect_documented_order(const std::string& text, const DocumentedKeys& docs) {
  size_t last = 0;
  std::string previous;
  std::set<std::string> seen;
  for (const DumpedTable& t : dumped_tables(text)) {
    SCOPED_TRACE(t.name);
    auto at = std::find(docs.tables.begin(), docs.tables.end(), t.name);
    ASSERT_NE(at, docs.tables.end()) << "a table docs/configuration.md does not document";
    size_t index = static_cast<size_t>(at - docs.tables.begin());
    // A [[filter]]'s rules come before the next [[filter]].
    if (!(t.name == "filter" && previous == "filter.rule") && !(t.name == "policy" && previous == "policy.term")) {
      EXPECT_GE(index, last) << "after [" << previous << "]";
    }
    last = index;
    previous = t.name;
    seen.insert(t.name);
    EXPECT_EQ(t.keys, docs.keys.at(t.name));
  }
  for (const char* always : {"router", "http", "control", "log", "kernel", "rpki"})
    EXPECT_TRUE(seen.count(always)) << "no [" << always << "] in the dump";
}

TEST(ConfigDocs, DumpHasEveryKeyInTheDocumentedOrder) {
  DocumentedKeys docs = documented_keys();
  ASSERT_GE(docs.tables.size(), 10u) << docs_dir();
  auto golden = valid_golden_configs();
  EXPECT_GE(golden.size(), 25u);
  for (const auto& [name, cfg] : golden) {
    SCOPED_TRACE(name);
    expect_documented_order(dump(cfg), docs);
  }
  for (const fs::path& p : files_with(env_dir("PETREL_EXAMPLES_DIR"), ".toml")) {
    SCOPED_TRACE(p.filename().string());
    if (auto cfg = load_config(p.string())) expect_documented_order(dump(*cfg), docs);
  }
  // The checker itself: a key out of order or missing is caught.
  auto cfg = parse_config("[router]\nasn = 65001\nrouter_id = \"198.18.0.1\"\n", "t.toml");
  ASSERT_TRUE(cfg.ok());
  std::string text = dump(*cfg);
  std::string swapped = std::regex_replace(text, std::regex("port = 179\nrfc8212 = true\n"),
                                           "rfc8212 = true\nport = 179\n");
  ASSERT_NE(swapped, text);
  EXPECT_NE(dumped_tables(swapped)[0].keys, docs.keys.at("router"));
}

// Secrets never appear in the dump: a placeholder, and a comment says so.
TEST(ConfigDump, SecretsAreNotPrinted) {
  auto cfg = parse_config(
      "[router]\nasn = 65001\nrouter_id = \"198.18.0.1\"\n"
      "[[peer]]\nname = \"a\"\naddress = \"198.18.0.2\"\nasn = 65002\npassword = \"md5-secret\"\n"
      "[[peer]]\nname = \"b\"\naddress = \"198.18.0.3\"\nasn = 65003\n"
      "tcp_ao = { key_id = 1, password = \"ao-secret\" }\n",
      "t.toml");
  ASSERT_TRUE(cfg.ok()) << errors_text(cfg.error());
  std::string text = dump(*cfg);
  EXPECT_EQ(text.find("md5-secret"), std::string::npos) << text;
  EXPECT_EQ(text.find("ao-secret"), std::string::npos) << text;
  EXPECT_NE(text.find("password = \"(not shown)\""), std::string::npos) << text;
  EXPECT_NE(text.find("# password: a placeholder, not the secret"), std::string::npos) << text;
  EXPECT_NE(text.find("# tcp_ao.password: a placeholder, not the secret"), std::string::npos) << text;
}

// router.user's documented default, "", may be written.
TEST(Config, EmptyUserIsTheDefault) {
  auto cfg = parse_config("[router]\nasn = 65001\nrouter_id = \"198.18.0.1\"\nuser = \"\"\n", "t.toml");
  ASSERT_TRUE(cfg.ok()) << errors_text(cfg.error());
  EXPECT_EQ(cfg->router.user, "");
}

TEST(ConfigExamples, EveryExampleIsValid) {
  fs::path dir = env_dir("PETREL_EXAMPLES_DIR");
  ASSERT_FALSE(dir.empty()) << "PETREL_EXAMPLES_DIR is not set";
  auto examples = files_with(dir, ".toml");
  ASSERT_GE(examples.size(), 3u);
  for (const fs::path& p : examples) {
    auto cfg = load_config(p.string());
    EXPECT_TRUE(cfg.ok()) << p << "\n" << (cfg ? "" : errors_text(cfg.error()));
  }
}

// The edge policy of docs/examples/two-upstreams.toml does what its
// comments say: bogons, the default route, too specific and too wide
// prefixes and BLACKHOLE are refused; GRACEFUL_SHUTDOWN gets LOCAL_PREF 0;
// the rest LOCAL_PREF 200 from transit A and 100 from transit B.
TEST(ConfigExamples, TwoUpstreamsPolicyDoesWhatItsCommentsSay) {
  fs::path dir = env_dir("PETREL_EXAMPLES_DIR");
  ASSERT_FALSE(dir.empty()) << "PETREL_EXAMPLES_DIR is not set";
  auto cfg = load_config((dir / "two-upstreams.toml").string());
  ASSERT_TRUE(cfg.ok()) << errors_text(cfg.error());
  auto filter = [&](std::string_view name) -> const table::Filter& {
    auto it = std::find_if(cfg->filters.begin(), cfg->filters.end(),
                           [&](const table::Filter& f) { return f.name == name; });
    EXPECT_NE(it, cfg->filters.end()) << name;
    return *it;
  };
  const table::Filter& a = filter("from-transit-a");
  const table::Filter& b = filter("from-transit-b");
  codec::PathAttributes plain;
  plain.origin = codec::Origin::kIgp;
  plain.as_path = codec::AsPath{{codec::AsSegment{codec::SegmentType::kAsSequence, {64500, 3356}}}};
  plain.next_hop = *net::IpAddress::parse("203.0.113.1");
  auto with = [&](std::string_view community) {
    codec::PathAttributes p = plain;
    p.communities = {*table::parse_community(community)};
    return codec::AttributeSet::from(p);
  };
  const codec::AttributeSet ordinary = codec::AttributeSet::from(plain);
  auto pfx = [](std::string_view text) { return *net::Prefix::parse(text); };

  for (const char* refused : {"10.1.0.0/16", "192.168.1.0/24", "100.64.0.0/10", "224.0.0.0/4", "0.0.0.0/0",
                              "8.8.8.0/25", "4.0.0.0/7", "2001:db8:1::/48", "fe80::/64", "::/0", "2a00:1::/49",
                              "2000::/3", "2002:c000::/24"}) {
    EXPECT_FALSE(table::evaluate(a, pfx(refused), ordinary).accept) << refused;
    EXPECT_FALSE(table::evaluate(b, pfx(refused), ordinary).accept) << refused;
  }
  EXPECT_FALSE(table::evaluate(a, pfx("8.8.8.0/24"), with("blackhole")).accept);
  auto shut = table::evaluate(a, pfx("8.8.8.0/24"), with("graceful-shutdown"));
  EXPECT_TRUE(shut.accept);
  EXPECT_EQ(shut.local_pref, 0u);
  auto from_a = table::evaluate(a, pfx("8.8.8.0/24"), ordinary);
  auto from_b = table::evaluate(b, pfx("2a00:1450::/32"), ordinary);
  EXPECT_TRUE(from_a.accept);
  EXPECT_EQ(from_a.local_pref, 200u);
  EXPECT_TRUE(from_b.accept);
  EXPECT_EQ(from_b.local_pref, 100u);
  EXPECT_EQ(table::evaluate(a, pfx("8.0.0.0/8"), ordinary).local_pref, 200u);  // /8: wide, not too wide
  EXPECT_EQ(table::evaluate(b, pfx("2001::/16"), ordinary).local_pref, 100u);
}

TEST(ConfigExamples, EdgePolicyDoesWhatItsCommentsSay) {
  fs::path dir = env_dir("PETREL_EXAMPLES_DIR");
  ASSERT_FALSE(dir.empty()) << "PETREL_EXAMPLES_DIR is not set";
  auto cfg = load_config((dir / "edge-policy.toml").string());
  ASSERT_TRUE(cfg.ok()) << errors_text(cfg.error());
  auto peer = [&](std::string_view name) -> const PeerConfig& {
    auto it = std::find_if(cfg->peers.begin(), cfg->peers.end(), [&](const PeerConfig& p) { return p.name == name; });
    EXPECT_NE(it, cfg->peers.end()) << name;
    return *it;
  };
  auto path = [](std::vector<uint32_t> asns) {
    codec::PathAttributes a;
    a.origin = codec::Origin::kIgp;
    a.as_path = codec::AsPath{{codec::AsSegment{codec::SegmentType::kAsSequence, std::move(asns)}}};
    a.next_hop = *net::IpAddress::parse("203.0.113.1");
    return a;
  };
  auto pfx = [](std::string_view text) { return *net::Prefix::parse(text); };
  struct Outcome {
    bool accept = false;
    codec::PathAttributes attrs;
    std::string decided_by;  // the term (or default) that decided
  };
  // What a policy chain does to a route from `from` (import) or to `to`
  // (export, the source's type given).
  auto run = [&](const Policy& pol, std::string_view prefix, codec::PathAttributes a, const PeerConfig* from,
                 table::PeerType type = table::PeerType::kExternal) {
    table::PolicyChain::Prepared scratch;
    const net::Prefix p = pfx(prefix);
    table::RouteFacts f;
    f.prefix = &p;
    f.peer_type = type;
    if (from) {
      f.peer_name = from->name;
      f.peer_as = from->asn;
      f.local_role = from->local_role;
    }
    EXPECT_TRUE(pol.filter);
    const table::PolicyVerdict v = pol.filter->evaluate(codec::AttributeSet::from(a), f, scratch);
    Outcome o{v.accept, a, pol.filter->decided_label(v)};
    if (v.accept) {
      table::ApplyContext ctx;
      ctx.local_as = cfg->router.asn;
      ctx.family = p.family() == net::IpFamily::V4 ? codec::kIpv4Unicast : codec::kIpv6Unicast;
      EXPECT_TRUE(pol.filter->apply(v, o.attrs, ctx));
    }
    return o;
  };
  const PeerConfig& a = peer("transit-a");
  const PeerConfig& b = peer("transit-b");
  const PeerConfig& c = peer("customer-1");
  const Policy from_a = import_policy(*cfg, a), from_b = import_policy(*cfg, b), from_c = import_policy(*cfg, c);

  // Bogons, too specific or too wide, bogon ASes, AS_SETs, overlong paths.
  for (const char* bogon : {"10.1.0.0/16", "192.168.1.0/24", "0.0.0.0/0", "8.8.8.0/25", "4.0.0.0/7", "2001:db8:1::/48",
                            "::/0", "2a00:1::/49", "2002:c000::/24"})
    EXPECT_FALSE(run(from_a, bogon, path({64500, 3356}), &a).accept) << bogon;
  EXPECT_FALSE(run(from_a, "8.8.8.0/24", path({64500, 4200000001u, 15169}), &a).accept);
  EXPECT_FALSE(run(from_a, "8.8.8.0/24", path({64500, 23456}), &a).accept);
  auto with_set = path({64500});
  with_set.as_path->segments.push_back(codec::AsSegment{codec::SegmentType::kAsSet, {15169, 15170}});
  EXPECT_FALSE(run(from_a, "8.8.8.0/24", with_set, &a).accept);
  EXPECT_FALSE(run(from_a, "8.8.8.0/24", path(std::vector<uint32_t>(51, 64500)), &a).accept);
  EXPECT_TRUE(run(from_a, "8.8.8.0/24", path(std::vector<uint32_t>(50, 64500)), &a).accept);

  // BLACKHOLE refused; GRACEFUL_SHUTDOWN to LOCAL_PREF 0; A preferred.
  auto tagged = [&](std::string_view community) {
    auto x = path({64500, 15169});
    x.communities = {*table::parse_community(community)};
    return x;
  };
  EXPECT_FALSE(run(from_a, "8.8.8.0/24", tagged("blackhole"), &a).accept);
  auto shut = run(from_a, "8.8.8.0/24", tagged("graceful-shutdown"), &a);
  ASSERT_TRUE(shut.accept);
  EXPECT_EQ(shut.attrs.local_pref, 0u);
  auto via_a = run(from_a, "8.8.8.0/24", path({64500, 15169}), &a);
  auto via_b = run(from_b, "2a00:1450::/32", path({64501, 15169}), &b);
  ASSERT_TRUE(via_a.accept && via_b.accept);
  EXPECT_EQ(via_a.attrs.local_pref, 200u);
  EXPECT_FALSE(via_b.attrs.local_pref);  // the default, 100
  const uint32_t from_transits = 64512u << 16 | 100;
  EXPECT_EQ(via_a.attrs.communities, std::vector<uint32_t>{from_transits});
  // Our own communities from outside are removed.
  auto spoofed = run(from_a, "8.8.8.0/24", tagged("64512:300"), &a);
  ASSERT_TRUE(spoofed.accept);
  EXPECT_EQ(spoofed.attrs.communities, std::vector<uint32_t>{from_transits});

  // The customer: its prefixes from its own AS only, tagged 64512:300.
  auto cust = run(from_c, "192.0.2.0/24", path({64496, 64496}), &c);
  ASSERT_TRUE(cust.accept);
  EXPECT_EQ(cust.attrs.local_pref, 300u);
  EXPECT_EQ(cust.attrs.communities, std::vector<uint32_t>{64512u << 16 | 300});
  EXPECT_FALSE(run(from_c, "192.0.2.0/25", path({64496}), &c).accept);       // too specific for its set
  EXPECT_FALSE(run(from_c, "8.8.8.0/24", path({64496}), &c).accept);         // not its prefix
  auto leak = run(from_c, "192.0.2.0/24", path({64496, 15169}), &c);         // not its AS: a leak
  EXPECT_FALSE(leak.accept);
  EXPECT_EQ(leak.decided_by, "from-customer-1.outside-cone");  // the refusing term names itself

  // To the transits: our routes and our customers', not the other transit's;
  // one prepend towards B.
  const Policy to_a = export_policy(*cfg, a), to_b = export_policy(*cfg, b);
  EXPECT_TRUE(run(to_a, "198.51.100.0/24", path({}), nullptr, table::PeerType::kLocal).accept);
  EXPECT_FALSE(run(to_a, "2a00:1450::/32", via_b.attrs, nullptr).accept);
  auto cust_to_a = run(to_a, "192.0.2.0/24", cust.attrs, nullptr);
  ASSERT_TRUE(cust_to_a.accept);
  EXPECT_TRUE(cust_to_a.attrs.communities.empty());  // our tags stay home
  auto cust_to_b = run(to_b, "192.0.2.0/24", cust.attrs, nullptr);
  ASSERT_TRUE(cust_to_b.accept);
  EXPECT_EQ(cust_to_b.attrs.as_path->segments[0].asns, (std::vector<uint32_t>{64512, 64496, 64496}));
}

// Every key documented in docs/configuration.md ("### `peer.hold_time`")
// appears in at least one golden file.
TEST(ConfigDocs, EveryDocumentedKeyHasAGoldenTest) {
  fs::path docs = env_dir("PETREL_EXAMPLES_DIR").parent_path() / "configuration.md";
  std::string text = read_file(docs);
  ASSERT_FALSE(text.empty()) << docs;
  std::string golden;
  for (const fs::path& in : files_with(env_dir("PETREL_GOLDEN_CONFIG_DIR"), ".toml")) golden += read_file(in);

  std::regex heading(R"(^### `([a-z_.]+)`)", std::regex::multiline);
  size_t documented = 0;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), heading); it != std::sregex_iterator(); ++it) {
    std::string key = (*it)[1];
    ++documented;
    std::string last = key.substr(key.rfind('.') + 1);
    std::regex used("(^|[\\s{,])" + last + "\\s*=", std::regex::multiline);
    EXPECT_TRUE(std::regex_search(golden, used)) << "no golden file sets " << key;
  }
  EXPECT_GE(documented, 30u);
}

TEST(Config, MinimalDefaults) {
  auto cfg = parse_config(
      "[router]\nasn = 65001\nrouter_id = \"198.18.0.1\"\n"
      "[[peer]]\nname = \"a\"\naddress = \"2001:db8::2\"\nasn = 65002\n",
      "t.toml");
  ASSERT_TRUE(cfg.ok()) << errors_text(cfg.error());
  EXPECT_EQ(cfg->router.asn, 65001u);
  ASSERT_EQ(cfg->router.listen.size(), 2u);
  EXPECT_EQ(cfg->router.port, 179);
  ASSERT_TRUE(cfg->http.listen.has_value());
  EXPECT_EQ(cfg->http.listen->to_string(), "127.0.0.1:8179");
  ASSERT_EQ(cfg->peers.size(), 1u);
  const PeerConfig& p = cfg->peers[0];
  EXPECT_EQ(p.hold_time, 90);
  EXPECT_EQ(p.keepalive, 30);
  EXPECT_EQ(p.families, codec::FamilySet{codec::kIpv6Unicast});
  EXPECT_FALSE(p.send_hold_time.has_value());
  EXPECT_TRUE(p.enabled);
  EXPECT_TRUE(p.is_ebgp(65001));
}

TEST(Config, LinkLocalPeerKeepsItsInterface) {
  auto cfg = parse_config(
      "[router]\nasn = 65001\nrouter_id = \"198.18.0.1\"\n"
      "[[peer]]\nname = \"a\"\naddress = \"FE80::0:2%veth0\"\nasn = 65002\n",
      "t.toml");
  ASSERT_TRUE(cfg.ok()) << errors_text(cfg.error());
  EXPECT_EQ(cfg->peers[0].interface, "veth0");
  EXPECT_EQ(cfg->peers[0].address_text(), "fe80::2%veth0");
}

TEST(Config, SendHoldTimeDefaultFollowsRfc9687) {
  PeerConfig p;
  EXPECT_EQ(effective_send_hold_time(p, 90), 480u);
  EXPECT_EQ(effective_send_hold_time(p, 0), 480u);
  EXPECT_EQ(effective_send_hold_time(p, 300), 600u);
  p.send_hold_time = 0;
  EXPECT_EQ(effective_send_hold_time(p, 90), 0u);
  p.send_hold_time = 100;
  EXPECT_EQ(effective_send_hold_time(p, 90), 100u);
}

TEST(Config, ErrorsAreSortedByPosition) {
  auto cfg = parse_config(
      "[router]\nasn = 0\nrouter_id = \"0.0.0.0\"\nbogus = 1\n", "t.toml");
  ASSERT_FALSE(cfg.ok());
  ASSERT_EQ(cfg.error().size(), 3u);
  EXPECT_EQ(cfg.error()[0].line, 2u);
  EXPECT_EQ(cfg.error()[1].line, 3u);
  EXPECT_EQ(cfg.error()[2].line, 4u);
  EXPECT_EQ(cfg.error()[2].key, "router.bogus");
}

TEST(Config, UnreadableFileIsAnError) {
  auto cfg = load_config("/nonexistent/petrel.toml");
  ASSERT_FALSE(cfg.ok());
  ASSERT_EQ(cfg.error().size(), 1u);
  EXPECT_EQ(cfg.error()[0].to_string(), "/nonexistent/petrel.toml: cannot read: No such file or directory");
}

TEST(Config, Rfc8212WarnsOfExternalPeersWithoutAPolicy) {
  auto cfg = parse_config(
      "[router]\nasn = 65001\nrouter_id = \"198.18.0.1\"\n"
      "[[peer]]\nname = \"bare\"\naddress = \"198.51.100.2\"\nasn = 65002\n"
      "[[peer]]\nname = \"half\"\naddress = \"198.51.100.3\"\nasn = 65003\nimport = \"all\"\n"
      "[[peer]]\nname = \"both\"\naddress = \"198.51.100.4\"\nasn = 65004\nimport = \"none\"\nexport = \"all\"\n"
      "[[peer]]\nname = \"internal\"\naddress = \"198.51.100.5\"\nasn = 65001\n",
      "t.toml");
  ASSERT_TRUE(cfg.ok()) << errors_text(cfg.error());
  auto w = rfc8212_warnings(*cfg);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0],
            "peer[0] \"bare\" (198.51.100.2, AS 65002): an external peer without import or export: under RFC 8212 "
            "(router.rfc8212) Petrel accepts no route from it and announces none to it; add import = \"all\" and "
            "export = \"all\" (or a [[filter]]'s name) to its [[peer]]");
  EXPECT_EQ(w[1],
            "peer[1] \"half\" (198.51.100.3, AS 65003): an external peer without export: under RFC 8212 "
            "(router.rfc8212) Petrel announces no route to it; add export = \"all\" (or a [[filter]]'s name) to its "
            "[[peer]]");
  cfg->router.rfc8212 = false;  // the operator chose the old behaviour
  EXPECT_TRUE(rfc8212_warnings(*cfg).empty());
}

TEST(Config, ErrorText) {
  ConfigError e{"f.toml", 3, 7, "peer[0].asn", "expected an AS number"};
  EXPECT_EQ(e.to_string(), "f.toml:3:7: peer[0].asn: expected an AS number");
  ConfigError s{"f.toml", 1, 2, "", "syntax error: x"};
  EXPECT_EQ(s.to_string(), "f.toml:1:2: syntax error: x");
}

// ---- reload (plan_reload, applied_config)

Config parsed(const std::string& text) {
  auto cfg = parse_config(text, "t.toml");
  EXPECT_TRUE(cfg.ok()) << errors_text(cfg.error());
  return cfg.ok() ? *cfg : Config{};
}

// Two external peers, a and b; `peers` and `tail` replace parts.
std::string reload_config(const std::string& a_lines, const std::string& tail = "",
                          const std::string& router = "") {
  return "[router]\nasn = 65001\nrouter_id = \"198.18.0.1\"\n" + router +
         "[[peer]]\nname = \"a\"\naddress = \"198.18.0.2\"\nasn = 65002\n" + a_lines +
         "[[peer]]\nname = \"b\"\naddress = \"198.18.0.3\"\nasn = 65003\nimport = \"all\"\nexport = \"all\"\n" +
         "[[filter]]\nname = \"half\"\n[[filter.rule]]\nprefixes = [\"10.0.0.0/8 le 24\"]\naction = \"accept\"\n" + tail;
}

// [rpki] slurm: a relative path is taken from the configuration's folder,
// the file's contents are part of the configuration, so that a changed
// file (same path) makes the reload apply [rpki] again, and a broken one
// fails the parse (the reload keeps what is in force).
TEST(Reload, SlurmFileContentsAreConfiguration) {
  fs::path dir = fs::temp_directory_path() / ("petrel-slurm-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto slurm = [&](const std::string& assertions) {
    write_file(dir / "s.json", R"({"slurmVersion": 1, "validationOutputFilters": {"prefixFilters": [],)"
                               R"( "bgpsecFilters": []}, "locallyAddedAssertions": {"prefixAssertions": [)" +
                                   assertions + R"(], "bgpsecAssertions": []}})");
  };
  const std::string text = reload_config("import = \"all\"\nexport = \"all\"\n", "[rpki]\nslurm = [\"s.json\"]\n");
  const std::string source = (dir / "petrel.toml").string();
  slurm(R"({"prefix": "192.0.2.0/24", "asn": 64500})");
  auto a = parse_config(text, source);
  ASSERT_TRUE(a.ok()) << errors_text(a.error());
  ASSERT_EQ(a->rpki.slurm.size(), 1u);
  EXPECT_EQ(a->rpki.slurm[0].path, (dir / "s.json").string());
  EXPECT_EQ(a->rpki.slurm[0].data.prefix_assertions.size(), 1u);
  EXPECT_TRUE(plan_reload(*a, *a).empty());
  slurm(R"({"prefix": "192.0.2.0/24", "asn": 64501})");
  auto b = parse_config(text, source);
  ASSERT_TRUE(b.ok()) << errors_text(b.error());
  ReloadPlan p = plan_reload(*a, *b);
  EXPECT_EQ(p.sections, std::vector<std::string>{"rpki"});
  EXPECT_EQ(applied_config(*a, *b).rpki, b->rpki);
  slurm(R"({"prefix": "192.0.2.0/24"})");
  auto c = parse_config(text, source);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(errors_text(c.error()).find("rpki.slurm[0]: " + (dir / "s.json").string() +
                                        ": /locallyAddedAssertions/prefixAssertions/0/asn: missing"),
            std::string::npos)
      << errors_text(c.error());
  fs::remove_all(dir);
}

// Files the configuration names are read only when they are regular
// files, and a password file only up to a bound: /dev/zero (which never
// ends) and a FIFO (whose open waits for a writer) are errors at once,
// not a reload that fills the memory or hangs the main loop.
TEST(Config, NamedFilesMustBeRegularAndPasswordsBounded) {
  fs::path dir = fs::temp_directory_path() / ("petrel-named-files-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string source = (dir / "petrel.toml").string();
  const fs::path fifo = dir / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  write_file(dir / "long", std::string(5000, 'x'));
  write_file(dir / "good", "secret\n");
  auto peer_with = [&](const std::string& line) {
    return parse_config(reload_config("import = \"all\"\nexport = \"all\"\n" + line), source);
  };
  auto error_of = [](const auto& parsed) { return parsed.ok() ? std::string() : errors_text(parsed.error()); };
  const auto good = peer_with("password_file = \"good\"\n");
  ASSERT_TRUE(good.ok()) << errors_text(good.error());
  EXPECT_EQ(good->peers[0].password, "secret");
  EXPECT_NE(error_of(peer_with("password_file = \"/dev/zero\"\n")).find("\"/dev/zero\": not a regular file"),
            std::string::npos);
  EXPECT_NE(error_of(peer_with("password_file = \"fifo\"\n")).find("not a regular file"), std::string::npos);
  EXPECT_NE(error_of(peer_with("password_file = \"long\"\n")).find("holds more than 4096 octets"),
            std::string::npos);
  EXPECT_NE(error_of(peer_with("password_file = \".\"\n")).find("is a directory"), std::string::npos);
  const auto slurm = parse_config(reload_config("import = \"all\"\nexport = \"all\"\n", "[rpki]\nslurm = [\"fifo\"]\n"),
                                  source);
  EXPECT_NE(error_of(slurm).find("rpki.slurm[0]: cannot read \"" + fifo.string() + "\": not a regular file"),
            std::string::npos)
      << error_of(slurm);
  fs::remove_all(dir);
}

TEST(Reload, NothingChangedIsAnEmptyPlan) {
  Config c = parsed(reload_config("import = \"all\"\nexport = \"half\"\n"));
  EXPECT_TRUE(plan_reload(c, c).empty());
}

TEST(Reload, ExportFilterChangedByNameOrByContent) {
  Config c = parsed(reload_config("import = \"all\"\nexport = \"all\"\n"));
  Config by_name = parsed(reload_config("import = \"all\"\nexport = \"half\"\n"));
  ReloadPlan p = plan_reload(c, by_name);
  ASSERT_EQ(p.peers.size(), 1u);
  EXPECT_EQ(p.peers[0].running, 0u);
  EXPECT_TRUE(p.peers[0].export_changed);
  EXPECT_FALSE(p.peers[0].import_changed);
  EXPECT_TRUE(p.peers[0].reset_keys.empty());
  EXPECT_TRUE(p.restart_keys.empty());
  // The filter a peer names changes: that peer's policy changed, b's not.
  Config by_content = parsed(reload_config("import = \"all\"\nexport = \"half\"\n", "[[filter.rule]]\naction = \"reject\"\n"));
  p = plan_reload(by_name, by_content);
  ASSERT_EQ(p.peers.size(), 1u);
  EXPECT_TRUE(p.peers[0].export_changed);
  // A filter renamed (and the peer following it) is no change at all,
  // and the applied configuration finds it under its new name.
  std::string renamed = reload_config("import = \"all\"\nexport = \"half2\"\n");
  renamed.replace(renamed.find("name = \"half\""), 13, "name = \"half2\"");
  Config r = parsed(renamed);
  EXPECT_TRUE(plan_reload(by_name, r).empty());
  Config applied = applied_config(by_name, r);
  EXPECT_EQ(export_policy(applied, applied.peers[0]), export_policy(by_name, by_name.peers[0]));
  EXPECT_EQ(applied.peers[0].export_filter.value_or(std::vector<std::string>{}), std::vector<std::string>{"half2"});
}

TEST(Reload, ImportChangesWithAllowOwnAsAndRfc8212) {
  Config c = parsed(reload_config(""));  // RFC 8212: a takes and gives nothing
  EXPECT_TRUE(import_policy(c, c.peers[0]).none);
  EXPECT_TRUE(import_policy(c, c.peers[0]).rfc8212);
  Config off = parsed(reload_config("", "", "rfc8212 = false\n"));
  ReloadPlan p = plan_reload(c, off);
  ASSERT_EQ(p.peers.size(), 1u);
  EXPECT_TRUE(p.peers[0].import_changed && p.peers[0].export_changed);
  EXPECT_TRUE(p.restart_keys.empty());  // rfc8212 applies live
  // "none" said explicitly is the same policy as RFC 8212's.
  Config none = parsed(reload_config("import = \"none\"\nexport = \"none\"\n"));
  EXPECT_TRUE(plan_reload(c, none).empty());
  Config own = parsed(reload_config("import = \"none\"\nexport = \"none\"\nallow_own_as = 1\n"));
  p = plan_reload(none, own);
  ASSERT_EQ(p.peers.size(), 1u);
  EXPECT_TRUE(p.peers[0].import_changed);
  EXPECT_FALSE(p.peers[0].export_changed);
  EXPECT_EQ(applied_config(none, own).peers[0].allow_own_as, 1);
}

TEST(Reload, PeersAddedRemovedAndResetAreListed) {
  Config c = parsed(reload_config("import = \"all\"\nexport = \"all\"\n"));
  std::string text = reload_config("import = \"all\"\nexport = \"half\"\nhold_time = 30\n", "",
                                   "port = 1179\n");
  text.replace(text.find("198.18.0.3"), 10, "198.18.0.4");  // b replaced by another peer
  Config n = parsed(text);
  ReloadPlan p = plan_reload(c, n);
  ASSERT_EQ(p.peers.size(), 1u);
  EXPECT_TRUE(p.peers[0].export_changed);
  EXPECT_FALSE(p.peers[0].updated);
  EXPECT_EQ(p.peers[0].reset_keys, (std::vector<std::string>{"peer[0].hold_time", "peer[0].keepalive"}));
  EXPECT_EQ(p.added, (std::vector<size_t>{1}));
  EXPECT_EQ(p.removed, (std::vector<size_t>{1}));
  EXPECT_EQ(p.restart_keys, (std::vector<std::string>{"router.port"}));
  // [router] keys stay as they were; every peer key is the new one's.
  Config applied = applied_config(c, n);
  EXPECT_EQ(applied.router.port, 179);
  EXPECT_EQ(applied.peers, n.peers);
}

// [[bmp]] waits for a restart: the client's stations are fixed at start.
TEST(Reload, BmpStationsWaitForARestart) {
  Config c = parsed(reload_config("import = \"all\"\n"));
  Config n = parsed(reload_config("import = \"all\"\n") + "[[bmp]]\naddress = \"192.0.2.10\"\nport = 1790\n");
  ASSERT_EQ(n.bmp.size(), 1u);
  ReloadPlan p = plan_reload(c, n);
  EXPECT_EQ(p.restart_keys, (std::vector<std::string>{"bmp"}));
  EXPECT_TRUE(applied_config(c, n).bmp.empty());
}

// [mrt] waits for a restart: the dump timer and the UPDATE log's writer
// are set up at start.
TEST(Reload, MrtWaitsForARestart) {
  Config c = parsed(reload_config("import = \"all\"\n"));
  Config n = parsed(reload_config("import = \"all\"\n") + "[mrt]\ndump_interval = 60\n");
  ASSERT_EQ(n.mrt.dump_interval, 60u);
  ReloadPlan p = plan_reload(c, n);
  EXPECT_EQ(p.restart_keys, (std::vector<std::string>{"mrt"}));
  EXPECT_EQ(applied_config(c, n).mrt.dump_interval, 0u);
}

// Keys and TTLs are set on sockets when they are made: a new session.
TEST(Reload, TransportSecurityNeedsANewSession) {
  Config c = parsed(reload_config("import = \"all\"\nexport = \"all\"\n"));
  Config n = parsed(reload_config(
      "import = \"all\"\nexport = \"all\"\npassword = \"x\"\nttl_security = true\nmultihop = 2\n"));
  EXPECT_EQ(c.peers[0].multihop, 1);  // external: one hop unless set
  ReloadPlan p = plan_reload(c, n);
  ASSERT_EQ(p.peers.size(), 1u);
  EXPECT_EQ(p.peers[0].reset_keys,
            (std::vector<std::string>{"peer[0].password", "peer[0].ttl_security", "peer[0].multihop"}));
  EXPECT_TRUE(p.restart_keys.empty());
}

// description, shutdown_message and max_prefixes apply to the running
// session; nothing else is listed.
TEST(Reload, DescriptionAndLimitsNeedNoNewSession) {
  Config c = parsed(reload_config("import = \"all\"\nexport = \"all\"\n"));
  Config n = parsed(reload_config("import = \"all\"\nexport = \"all\"\ndescription = \"transit\"\n"
                                  "shutdown_message = \"bye\"\nmax_prefixes = { ipv4-unicast = 10 }\n"));
  ReloadPlan p = plan_reload(c, n);
  ASSERT_EQ(p.peers.size(), 1u);
  EXPECT_TRUE(p.peers[0].updated);
  EXPECT_TRUE(p.peers[0].reset_keys.empty());
  EXPECT_FALSE(p.peers[0].import_changed || p.peers[0].export_changed);
  EXPECT_TRUE(p.added.empty() && p.removed.empty() && p.restart_keys.empty());
  // A peer renamed is another session (the API and the logs know it by
  // its name).
  std::string renamed = reload_config("import = \"all\"\nexport = \"all\"\n");
  renamed.replace(renamed.find("name = \"a\""), 10, "name = \"z\"");
  p = plan_reload(c, parsed(renamed));
  ASSERT_EQ(p.peers.size(), 1u);
  EXPECT_EQ(p.peers[0].reset_keys, (std::vector<std::string>{"peer[0].name"}));
}

TEST(Config, InternalPeersDefaultTo255Hops) {
  auto cfg = parse_config(
      "[router]\nasn = 65001\nrouter_id = \"198.18.0.1\"\n"
      "[[peer]]\nname = \"i\"\naddress = \"198.18.0.2\"\nasn = 65001\n"
      "[[peer]]\nname = \"e\"\naddress = \"198.18.0.3\"\nasn = 65002\n",
      "t.toml");
  ASSERT_TRUE(cfg.ok()) << errors_text(cfg.error());
  EXPECT_EQ(cfg->peers[0].multihop, 255);
  EXPECT_EQ(cfg->peers[1].multihop, 1);
}

// The table's withdrawal threads are set when it is built: a restart.
TEST(Reload, WithdrawThreadsNeedARestart) {
  Config c = parsed(reload_config("import = \"all\"\nexport = \"all\"\n"));
  Config n = parsed(reload_config("import = \"all\"\nexport = \"all\"\n", "", "withdraw_threads = 1\n"));
  EXPECT_EQ(c.router.withdraw_threads, 0u);
  EXPECT_EQ(n.router.withdraw_threads, 1u);
  EXPECT_EQ(plan_reload(c, n).restart_keys, (std::vector<std::string>{"router.withdraw_threads"}));
  EXPECT_EQ(applied_config(c, n).router.withdraw_threads, 0u);
}

// The table's maps are sized when it is built: a restart.
TEST(Reload, ExpectedPrefixesNeedARestart) {
  Config c = parsed(reload_config("import = \"all\"\nexport = \"all\"\n"));
  Config n = parsed(reload_config("import = \"all\"\nexport = \"all\"\n", "",
                                  "expected_ipv4_prefixes = 1000000\nexpected_ipv6_prefixes = 250000\n"));
  EXPECT_EQ(n.router.expected_ipv4_prefixes, 1000000u);
  EXPECT_EQ(n.router.expected_ipv6_prefixes, 250000u);
  EXPECT_EQ(plan_reload(c, n).restart_keys,
            (std::vector<std::string>{"router.expected_ipv4_prefixes", "router.expected_ipv6_prefixes"}));
  EXPECT_EQ(applied_config(c, n).router.expected_ipv4_prefixes, 0u);
}

// [kernel], [rpki], [http] and [log] change live (Server::apply_sections):
// listed as sections, not as restart keys, and in the applied configuration.
TEST(Reload, SectionsChangeLive) {
  const std::string kA = "import = \"all\"\nexport = \"all\"\n";
  Config c = parsed(reload_config(kA, "[kernel]\nenabled = true\n"));
  Config n = parsed(reload_config(kA,
                                  "[kernel]\nenabled = true\ntable = 200\nmetric = 50\nmultipath = true\n"
                                  "[http]\nlisten = \"127.0.0.1:8180\"\nmax_connections = 8\n"
                                  "[log]\nlevel = \"debug\"\nformat = \"json\"\n"
                                  "[rpki]\nreject_invalid = true\n[[rpki.cache]]\naddress = \"127.0.0.1\"\nport = 3323\n"));
  ReloadPlan p = plan_reload(c, n);
  EXPECT_TRUE(p.restart_keys.empty()) << p.restart_keys.front();
  EXPECT_EQ(p.sections, (std::vector<std::string>{"http", "log", "kernel", "rpki"}));
  EXPECT_FALSE(p.empty());
  Config applied = applied_config(c, n);
  EXPECT_EQ(applied.kernel, n.kernel);
  EXPECT_EQ(applied.rpki, n.rpki);
  EXPECT_EQ(applied.http, n.http);
  EXPECT_EQ(applied.log, n.log);
  // [control] is still a restart.
  Config ctl = parsed(reload_config(kA, "[kernel]\nenabled = true\n[control]\nsocket = \"/tmp/x.sock\"\n"));
  p = plan_reload(c, ctl);
  EXPECT_EQ(p.restart_keys, (std::vector<std::string>{"control"}));
  EXPECT_TRUE(p.sections.empty());
  EXPECT_EQ(applied_config(c, ctl).control, c.control);
}

TEST(Reload, OriginateAnnouncesNewAndChangedAndWithdrawsGone) {
  const std::string kA = "import = \"all\"\nexport = \"all\"\n";
  Config c = parsed(reload_config(kA, "[[originate]]\nprefix = \"192.0.2.0/24\"\n"
                                      "[[originate]]\nprefix = \"198.51.100.0/24\"\n"
                                      "[[originate]]\nprefix = \"2001:db8::/48\"\n"));
  Config n = parsed(reload_config(kA, "[[originate]]\nprefix = \"192.0.2.0/24\"\n"
                                      "[[originate]]\nprefix = \"2001:db8::/48\"\nmed = 7\n"
                                      "[[originate]]\nprefix = \"203.0.113.0/24\"\n"));
  ReloadPlan p = plan_reload(c, n);
  ASSERT_EQ(p.withdraw.size(), 1u);
  EXPECT_EQ(p.withdraw[0].prefix.to_string(), "198.51.100.0/24");
  ASSERT_EQ(p.announce.size(), 2u);
  EXPECT_EQ(p.announce[0].prefix.to_string(), "2001:db8::/48");
  EXPECT_EQ(p.announce[0].med.value_or(0), 7u);
  EXPECT_EQ(p.announce[1].prefix.to_string(), "203.0.113.0/24");
  EXPECT_TRUE(p.peers.empty());
  EXPECT_EQ(applied_config(c, n).originate, n.originate);
}

// RFC 7947: a route-server client's enforce_first_as is off unless set,
// and turning the mode on or off needs a new session (both keys change).
TEST(Reload, RouteServerClientTurnsEnforceFirstAsOffAndNeedsANewSession) {
  const std::string kA = "import = \"all\"\nexport = \"all\"\n";
  Config c = parsed(reload_config(kA));
  Config rs = parsed(reload_config(kA + "route_server_client = true\n"));
  Config rs_enforced = parsed(reload_config(kA + "route_server_client = true\nenforce_first_as = true\n"));
  ASSERT_EQ(rs.peers.size(), 2u);
  EXPECT_TRUE(c.peers[0].enforce_first_as);
  EXPECT_TRUE(rs.peers[0].route_server_client);
  EXPECT_FALSE(rs.peers[0].enforce_first_as);
  EXPECT_TRUE(rs.peers[1].enforce_first_as);  // not a client
  EXPECT_TRUE(rs_enforced.peers[0].enforce_first_as);
  ReloadPlan p = plan_reload(c, rs);
  ASSERT_EQ(p.peers.size(), 1u);
  EXPECT_EQ(p.peers[0].reset_keys,
            (std::vector<std::string>{"peer[0].route_server_client", "peer[0].enforce_first_as"}));
  EXPECT_TRUE(applied_config(c, rs).peers[0].route_server_client);
}

}  // namespace
}  // namespace petrel::daemon
