// Tests of daemon/config.h: the golden files of tests/golden/config (each
// NAME.toml parses to NAME.dump or fails with exactly NAME.err), the
// examples of docs/examples, and that every key documented in
// docs/configuration.md has a golden test.
//
// The folders come from the environment (set by tests/daemon/meson.build).
// PETREL_REGENERATE_GOLDEN=1 rewrites the .dump/.err files from the
// current output; review the diff before committing it.
#include "daemon/config.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

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

// The dump is itself a configuration that gives the same Config back.
TEST(ConfigGolden, DumpParsesBackToTheSameConfig) {
  fs::path dir = env_dir("PETREL_GOLDEN_CONFIG_DIR");
  ASSERT_FALSE(dir.empty());
  for (const fs::path& in : files_with(dir, ".toml")) {
    SCOPED_TRACE(in.filename().string());
    auto cfg = parse_config(read_file(in), in.filename().string());
    if (!cfg) continue;
    std::string text = dump(*cfg);
    auto again = parse_config(text, "dump");
    ASSERT_TRUE(again.ok()) << errors_text(again.error()) << text;
    EXPECT_EQ(*again, *cfg);
    EXPECT_EQ(dump(*again), text);
  }
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

TEST(Config, ErrorText) {
  ConfigError e{"f.toml", 3, 7, "peer[0].asn", "expected an AS number"};
  EXPECT_EQ(e.to_string(), "f.toml:3:7: peer[0].asn: expected an AS number");
  ConfigError s{"f.toml", 1, 2, "", "syntax error: x"};
  EXPECT_EQ(s.to_string(), "f.toml:1:2: syntax error: x");
}

}  // namespace
}  // namespace petrel::daemon
