// Tests of rpki/slurm.h: reading SLURM files (RFC 8416 section 3) with
// their errors, the overlap check across files (section 4.2), and the
// filters and assertions applied to VRPs (sections 3.3.1, 3.4.1, 4.1),
// checked against the RFC's definition done naively on random VRP sets.
#include "rpki/slurm.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <array>
#include <span>
#include <string>
#include <vector>

namespace petrel::rpki {
namespace {

net::Prefix P(const char* s) { return *net::Prefix::parse(s); }

// RFC 8416 section 3.5's example, with valid SKIs.
constexpr const char* kExample = R"({
  "slurmVersion": 1,
  "validationOutputFilters": {
    "prefixFilters": [
      { "prefix": "192.0.2.0/24", "comment": "All VRPs encompassed by prefix" },
      { "asn": 64496, "comment": "All VRPs matching ASN" },
      { "prefix": "198.51.100.0/24", "asn": 64497, "comment": "All VRPs encompassed by prefix, matching ASN" }
    ],
    "bgpsecFilters": [
      { "asn": 64496, "comment": "All keys for ASN" },
      { "SKI": "AAECAwQFBgcICQoLDA0ODxAREhM", "comment": "Key matching Router SKI" }
    ]
  },
  "locallyAddedAssertions": {
    "prefixAssertions": [
      { "asn": 64496, "prefix": "198.51.100.0/24", "comment": "My other important route" },
      { "asn": 64496, "prefix": "2001:DB8::/32", "maxPrefixLength": 48 }
    ],
    "bgpsecAssertions": [
      { "asn": 64496, "SKI": "AAECAwQFBgcICQoLDA0ODxAREhM", "routerPublicKey": "MFkwEwYH" }
    ]
  }
})";

std::string error_of(std::string_view text) {
  auto r = parse_slurm(text);
  if (r) return "parsed";
  return r.error().to_string();
}

std::string with(std::string_view filters, std::string_view assertions) {
  return std::string(R"({"slurmVersion": 1, "validationOutputFilters": {"prefixFilters": [)") + std::string(filters) +
         R"(], "bgpsecFilters": []}, "locallyAddedAssertions": {"prefixAssertions": [)" + std::string(assertions) +
         R"(], "bgpsecAssertions": []}})";
}

TEST(Slurm, ReadsTheRfcExample) {
  auto r = parse_slurm(kExample);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  const Slurm& s = *r;
  ASSERT_EQ(s.prefix_filters.size(), 3u);
  EXPECT_EQ(s.prefix_filters[0].prefix, P("192.0.2.0/24"));
  EXPECT_FALSE(s.prefix_filters[0].asn);
  EXPECT_EQ(s.prefix_filters[0].comment, "All VRPs encompassed by prefix");
  EXPECT_FALSE(s.prefix_filters[1].prefix);
  EXPECT_EQ(s.prefix_filters[1].asn, 64496u);
  EXPECT_EQ(s.prefix_filters[2].asn, 64497u);
  ASSERT_EQ(s.bgpsec_filters.size(), 2u);
  EXPECT_EQ(s.bgpsec_filters[1].ski.size(), 20u);
  EXPECT_EQ(s.bgpsec_filters[1].ski[19], 0x13);
  ASSERT_EQ(s.prefix_assertions.size(), 2u);
  EXPECT_EQ(s.prefix_assertions[0].vrp(), (Vrp{P("198.51.100.0/24"), 24, 64496}));
  EXPECT_EQ(s.prefix_assertions[1].vrp(), (Vrp{P("2001:db8::/32"), 48, 64496}));
  ASSERT_EQ(s.bgpsec_assertions.size(), 1u);
  EXPECT_EQ(s.bgpsec_assertions[0].router_public_key.size(), 6u);
  EXPECT_EQ(s.entries(), 8u);
}

TEST(Slurm, EmptyListsAreFine) {
  auto r = parse_slurm(with("", ""));
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->entries(), 0u);
}

TEST(Slurm, SyntaxErrorsSayWhere) {
  EXPECT_EQ(error_of("{\n  \"slurmVersion\": 1,\n  oops\n}"),
            "3:3: syntax error while parsing object key - invalid literal; last read: '1,<U+000A>  o'; expected string literal");
  EXPECT_NE(error_of("").find("1:1: syntax error"), std::string::npos) << error_of("");
  EXPECT_EQ(error_of("[1]"), "expected a JSON object (RFC 8416 section 3.2), got an array");
}

TEST(Slurm, BoundsHostileInput) {
  std::string deep(40, '[');
  deep += std::string(40, ']');
  EXPECT_EQ(error_of(deep), "nested more than 16 levels deep");
  std::string big(kMaxSlurmBytes + 1, ' ');
  EXPECT_NE(error_of(big).find("more than the 8388608 allowed"), std::string::npos);
  std::string many;
  for (size_t i = 0; i <= kMaxSlurmEntries; ++i) many += std::string(i ? "," : "") + R"({"asn":1})";
  EXPECT_EQ(error_of(with(many, "")),
            "the file has 100001 filters, assertions and providers, more than the 100000 allowed");
  EXPECT_EQ(error_of(R"({"slurmVersion": 1, "slurmVersion": 1})"),
            "member \"slurmVersion\" appears twice in one object");
}

TEST(Slurm, TopLevelRules) {
  EXPECT_EQ(error_of(R"({"validationOutputFilters": {}, "locallyAddedAssertions": {}})"),
            "/slurmVersion: missing (RFC 8416 section 3.2)");
  EXPECT_EQ(error_of(R"({"slurmVersion": 3})"),
            "/slurmVersion: expected 1 (RFC 8416 section 3.2) or 2 (with ASPA, draft-ietf-sidrops-aspa-slurm section "
            "2), got the number 3");
  EXPECT_EQ(error_of(R"({"slurmVersion": 1, "locallyAddedAssertions": {}})"),
            "/validationOutputFilters: missing (RFC 8416 section 3.2: every member is required)");
  EXPECT_EQ(error_of(R"({"slurmVersion": 1, "validationOutputFilters": {"prefixFilters": []},
                          "locallyAddedAssertions": {}})"),
            "/validationOutputFilters/bgpsecFilters: missing (RFC 8416 section 3.2: every member is required, [] "
            "for none)");
  EXPECT_EQ(error_of(R"({"slurmVersion": 1, "extra": 1})"),
            "/extra: unknown member \"extra\" (expected one of: slurmVersion, validationOutputFilters, "
            "locallyAddedAssertions)");
  std::string aspa = with("", "");
  aspa.replace(aspa.find("\"bgpsecAssertions\""), 0, R"("aspaAssertions": [], )");
  EXPECT_EQ(error_of(aspa),
            "/locallyAddedAssertions/aspaAssertions: \"aspaAssertions\" needs \"slurmVersion\": 2 "
            "(draft-ietf-sidrops-aspa-slurm section 2; version 1 is RFC 8416's, without ASPA)");
}

// draft-ietf-sidrops-aspa-slurm section 4's example.
constexpr const char* kAspaExample = R"({
  "slurmVersion": 2,
  "validationOutputFilters": {
    "prefixFilters": [ { "prefix": "192.0.2.0/24", "comment": "All VRPs encompassed by prefix" } ],
    "bgpsecFilters": [],
    "aspaFilters": [ { "customerAsn": 64496, "comment": "ASPAs matching Customer ASN 64496" } ]
  },
  "locallyAddedAssertions": {
    "prefixAssertions": [],
    "bgpsecAssertions": [],
    "aspaAssertions": [
      { "customerAsn": 64496, "providerAsns": [64497, 64498],
        "comment": "Locally assert 64497 and 64498 are providers for 64496" }
    ]
  }
})";

std::string with_aspa(std::string_view filters, std::string_view assertions) {
  return std::string(R"({"slurmVersion": 2, "validationOutputFilters": {"prefixFilters": [], "bgpsecFilters": [],)"
                     R"( "aspaFilters": [)") +
         std::string(filters) +
         R"(]}, "locallyAddedAssertions": {"prefixAssertions": [], "bgpsecAssertions": [], "aspaAssertions": [)" +
         std::string(assertions) + "]}}";
}

TEST(Slurm, ReadsTheAspaDraftsExample) {
  auto r = parse_slurm(kAspaExample);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->version, 2u);
  EXPECT_EQ(r->prefix_filters.size(), 1u);
  ASSERT_EQ(r->aspa_filters.size(), 1u);
  EXPECT_EQ(r->aspa_filters[0].customer, 64496u);
  EXPECT_EQ(r->aspa_filters[0].comment, "ASPAs matching Customer ASN 64496");
  ASSERT_EQ(r->aspa_assertions.size(), 1u);
  EXPECT_EQ(r->aspa_assertions[0].customer, 64496u);
  EXPECT_EQ(r->aspa_assertions[0].providers, (std::vector<uint32_t>{64497, 64498}));
  EXPECT_EQ(r->entries(), 3u);
  auto empty = parse_slurm(with_aspa("", ""));
  ASSERT_TRUE(empty.ok()) << empty.error().to_string();
  EXPECT_EQ(empty->entries(), 0u);
}

TEST(Slurm, AspaRules) {
  // Version 2 needs all three members of each object (the draft's section 2).
  std::string no_filters = with_aspa("", "");
  const std::string member = R"(, "aspaFilters": [])";
  no_filters.erase(no_filters.find(member), member.size());
  EXPECT_EQ(error_of(no_filters),
            "/validationOutputFilters/aspaFilters: missing (RFC 8416 section 3.2: every member is required, [] for "
            "none)");
  EXPECT_EQ(error_of(with_aspa(R"({"comment": "x"})", "")),
            "/validationOutputFilters/aspaFilters/0/customerAsn: missing (draft-ietf-sidrops-aspa-slurm section 3.1)");
  EXPECT_EQ(error_of(with_aspa(R"({"customerAsn": "AS1"})", "")),
            "/validationOutputFilters/aspaFilters/0/customerAsn: expected an AS number 0..4294967295, got a string");
  EXPECT_EQ(error_of(with_aspa(R"({"customerAsn": 1, "providerAsns": [2]})", "")),
            "/validationOutputFilters/aspaFilters/0/providerAsns: unknown member \"providerAsns\" (expected one of: "
            "customerAsn, comment)");
  const std::string a = "/locallyAddedAssertions/aspaAssertions/0";
  EXPECT_EQ(error_of(with_aspa("", R"({"providerAsns": [2]})")),
            a + "/customerAsn: missing (draft-ietf-sidrops-aspa-slurm section 3.2)");
  EXPECT_EQ(error_of(with_aspa("", R"({"customerAsn": 1})")),
            a + "/providerAsns: missing (draft-ietf-sidrops-aspa-slurm section 3.2)");
  EXPECT_EQ(error_of(with_aspa("", R"({"customerAsn": 0, "providerAsns": [2]})")),
            a + "/customerAsn: AS 0 cannot be a customer (the ASPA profile's customerASID is 1..4294967295)");
  EXPECT_EQ(error_of(with_aspa("", R"({"customerAsn": 1, "providerAsns": []})")),
            a + "/providerAsns: expected at least one provider AS (the ASPA profile's SIZE(1..MAX))");
  EXPECT_EQ(error_of(with_aspa("", R"({"customerAsn": 1, "providerAsns": 2})")),
            a + "/providerAsns: expected an array of AS numbers, got the number 2");
  EXPECT_EQ(error_of(with_aspa("", R"({"customerAsn": 1, "providerAsns": [2, 4294967296]})")),
            a + "/providerAsns/1: expected an AS number 0..4294967295, got the number 4294967296");
  EXPECT_EQ(error_of(with_aspa("", R"({"customerAsn": 1, "providerAsns": [2, 1]})")),
            a + "/providerAsns/1: the customer AS 1 cannot be its own provider (draft-ietf-sidrops-aspa-slurm "
                "section 3.2)");
  EXPECT_EQ(error_of(with_aspa("", R"({"customerAsn": 1, "providerAsns": [3, 2]})")),
            a + "/providerAsns/1: AS 2 after AS 3: providers must be in ascending order, each once "
                "(draft-ietf-sidrops-aspa-slurm section 3.2)");
  EXPECT_NE(error_of(with_aspa("", R"({"customerAsn": 1, "providerAsns": [2, 2]})")).find("AS 2 after AS 2"),
            std::string::npos);
  // Providers count towards the bound.
  std::string many;
  for (size_t i = 0; i < kMaxSlurmEntries; ++i) many += std::string(i ? "," : "") + std::to_string(i + 2);
  EXPECT_EQ(error_of(with_aspa("", R"({"customerAsn": 1, "providerAsns": [)" + many + "]}")),
            "the file has 100001 filters, assertions and providers, more than the 100000 allowed");
}

// What draft-ietf-sidrops-aspa-slurm says, done plainly: every ASPA whose
// customer a filter names goes; then each assertion's customer gets the
// assertion's providers added to what remains of its ASPA (an assertion
// is not an implicit filter), or an ASPA of them when it had none.
std::vector<Aspa> apply_aspas_by_definition(const std::vector<Slurm>& files, const std::vector<Aspa>& aspas) {
  std::vector<Aspa> out;
  for (const Aspa& a : aspas) {
    bool filtered = false;
    for (const Slurm& s : files)
      for (const AspaFilter& f : s.aspa_filters) filtered = filtered || f.customer == a.customer;
    if (!filtered) out.push_back(a);
  }
  for (const Slurm& s : files) {
    for (const AspaAssertion& as : s.aspa_assertions) {
      auto it = std::find_if(out.begin(), out.end(), [&](const Aspa& a) { return a.customer == as.customer; });
      if (it == out.end()) {
        out.push_back(Aspa{as.customer, {}});
        it = out.end() - 1;
      }
      for (uint32_t p : as.providers)
        if (std::find(it->providers.begin(), it->providers.end(), p) == it->providers.end()) it->providers.push_back(p);
      std::sort(it->providers.begin(), it->providers.end());
    }
  }
  std::sort(out.begin(), out.end(), [](const Aspa& a, const Aspa& b) { return a.customer < b.customer; });
  return out;
}

TEST(Slurm, AppliesAspaFiltersThenAssertions) {
  auto r = parse_slurm(with_aspa(R"({"customerAsn": 64496}, {"customerAsn": 64999})",
                                 R"({"customerAsn": 64496, "providerAsns": [64510]},
                                    {"customerAsn": 64500, "providerAsns": [64502, 64503]},
                                    {"customerAsn": 64600, "providerAsns": [64601]})"));
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  SlurmFilter f(std::span<const Slurm>(&*r, 1));
  EXPECT_FALSE(f.aspa_empty());
  const std::vector<Aspa> cache{{64496, {64497, 64498}}, {64500, {64501, 64502}}, {64700, {64701}}};
  auto out = f.apply_aspas(cache);
  // 64496: filtered, then asserted anew; 64500: the cache's providers and
  // the assertion's; 64600: asserted; 64700: untouched.
  EXPECT_EQ(out.aspas, (std::vector<Aspa>{{64496, {64510}}, {64500, {64501, 64502, 64503}}, {64600, {64601}},
                                          {64700, {64701}}}));
  EXPECT_EQ(out.removed, 1u);
  EXPECT_EQ(out.added, 3u);
  // An assertion that adds nothing to the cache's ASPA changes nothing.
  auto same = parse_slurm(with_aspa("", R"({"customerAsn": 64700, "providerAsns": [64701]})"));
  ASSERT_TRUE(same.ok());
  auto kept = SlurmFilter(std::span<const Slurm>(&*same, 1)).apply_aspas(cache);
  EXPECT_EQ(kept.aspas, cache);
  EXPECT_EQ(kept.added, 0u);
  EXPECT_EQ(kept.removed, 0u);
  // No ASPA exceptions: the cache's ASPAs as they are.
  SlurmFilter none;
  EXPECT_TRUE(none.aspa_empty());
  EXPECT_EQ(none.apply_aspas(cache).aspas, cache);
}

rc::Gen<std::vector<uint32_t>> gen_providers() {
  return rc::gen::map(rc::gen::container<std::vector<uint32_t>>(rc::gen::inRange<uint32_t>(0, 12)),
                      [](std::vector<uint32_t> v) {
                        std::sort(v.begin(), v.end());
                        v.erase(std::unique(v.begin(), v.end()), v.end());
                        if (v.empty()) v.push_back(0);
                        return v;
                      });
}

RC_GTEST_PROP(Slurm, ApplyAspasAgreesWithTheDraft, ()) {
  // The cache's: one ASPA per customer, providers sorted.
  std::vector<Aspa> aspas;
  for (uint32_t c : *rc::gen::container<std::vector<uint32_t>>(rc::gen::inRange<uint32_t>(1, 12))) {
    if (std::any_of(aspas.begin(), aspas.end(), [&](const Aspa& a) { return a.customer == c; })) continue;
    aspas.push_back(Aspa{c, *gen_providers()});
  }
  std::vector<Slurm> files(*rc::gen::inRange<size_t>(1, 4));
  for (Slurm& s : files) {
    s.version = 2;
    for (uint32_t c : *rc::gen::resize(4, rc::gen::container<std::vector<uint32_t>>(rc::gen::inRange<uint32_t>(1, 12))))
      s.aspa_filters.push_back(AspaFilter{c, ""});
    for (uint32_t c : *rc::gen::resize(4, rc::gen::container<std::vector<uint32_t>>(rc::gen::inRange<uint32_t>(1, 12))))
      s.aspa_assertions.push_back(AspaAssertion{c, *gen_providers(), ""});
  }
  const auto want = apply_aspas_by_definition(files, aspas);
  auto out = SlurmFilter(files).apply_aspas(aspas);
  RC_ASSERT(out.aspas == want);
  size_t removed = 0;
  for (const Aspa& a : aspas)
    for (const Slurm& s : files)
      if (std::any_of(s.aspa_filters.begin(), s.aspa_filters.end(),
                      [&](const AspaFilter& f) { return f.customer == a.customer; })) {
        ++removed;
        break;
      }
  RC_ASSERT(out.removed == removed);
}

TEST(Slurm, PrefixFilterRules) {
  EXPECT_EQ(error_of(with(R"({"comment": "nothing"})", "")),
            "/validationOutputFilters/prefixFilters/0: a prefix filter needs \"prefix\", \"asn\" or both (RFC 8416 "
            "section 3.3.1)");
  EXPECT_EQ(error_of(with(R"({"asn": 1}, {"prefix": "192.0.2.1/24"})", "")),
            "/validationOutputFilters/prefixFilters/1/prefix: \"192.0.2.1/24\" has bits set past its length (did "
            "you mean 192.0.2.0/24?)");
  EXPECT_EQ(error_of(with(R"({"prefix": "192.0.2.0/33"})", "")),
            "/validationOutputFilters/prefixFilters/0/prefix: expected an IPv4 or IPv6 prefix such as "
            "\"192.0.2.0/24\", got \"192.0.2.0/33\"");
  EXPECT_EQ(error_of(with(R"({"asn": 4294967296})", "")),
            "/validationOutputFilters/prefixFilters/0/asn: expected an AS number 0..4294967295, got the number "
            "4294967296");
  EXPECT_EQ(error_of(with(R"({"asn": -1})", "")),
            "/validationOutputFilters/prefixFilters/0/asn: expected an AS number 0..4294967295, got the number -1");
  EXPECT_EQ(error_of(with(R"({"asn": "AS1"})", "")),
            "/validationOutputFilters/prefixFilters/0/asn: expected an AS number 0..4294967295, got a string");
  EXPECT_EQ(error_of(with(R"({"asn": 1, "maxPrefixLength": 24})", "")),
            "/validationOutputFilters/prefixFilters/0/maxPrefixLength: unknown member \"maxPrefixLength\" "
            "(expected one of: prefix, asn, comment)");
  EXPECT_EQ(error_of(with("1", "")), "/validationOutputFilters/prefixFilters/0: expected an object, got the number 1");
}

TEST(Slurm, PrefixAssertionRules) {
  const std::string p = "/locallyAddedAssertions/prefixAssertions/0";
  EXPECT_EQ(error_of(with("", R"({"prefix": "192.0.2.0/24"})")),
            p + "/asn: missing (RFC 8416 section 3.4.1: a prefix assertion needs one)");
  EXPECT_EQ(error_of(with("", R"({"asn": 1})")),
            p + "/prefix: missing (RFC 8416 section 3.4.1: a prefix assertion needs one)");
  EXPECT_EQ(error_of(with("", R"({"asn": 1, "prefix": "192.0.2.0/24", "maxPrefixLength": 23})")),
            p + "/maxPrefixLength: expected a length 24..32 (the prefix's length to the family's), got the number 23");
  EXPECT_EQ(error_of(with("", R"({"asn": 1, "prefix": "2001:db8::/32", "maxPrefixLength": 129})")),
            p + "/maxPrefixLength: expected a length 32..128 (the prefix's length to the family's), got the number 129");
  EXPECT_EQ(error_of(with("", R"({"asn": 1, "prefix": "192.0.2.0/24", "maxPrefixLength": 24.5})")),
            p + "/maxPrefixLength: expected a length 24..32 (the prefix's length to the family's), got the number 24.5");
  auto ok = parse_slurm(with("", R"({"asn": 0, "prefix": "0.0.0.0/0", "maxPrefixLength": 32})"));
  ASSERT_TRUE(ok.ok()) << ok.error().to_string();
  EXPECT_EQ(ok->prefix_assertions[0].vrp(), (Vrp{P("0.0.0.0/0"), 32, 0}));
}

TEST(Slurm, BgpsecRules) {
  auto text = [](std::string_view filters, std::string_view assertions) {
    return std::string(R"({"slurmVersion": 1, "validationOutputFilters": {"prefixFilters": [], "bgpsecFilters": [)") +
           std::string(filters) + R"(]}, "locallyAddedAssertions": {"prefixAssertions": [], "bgpsecAssertions": [)" +
           std::string(assertions) + "]}}";
  };
  EXPECT_EQ(error_of(text(R"({"comment": "x"})", "")),
            "/validationOutputFilters/bgpsecFilters/0: a BGPsec filter needs \"asn\", \"SKI\" or both (RFC 8416 "
            "section 3.3.2)");
  EXPECT_EQ(error_of(text(R"({"SKI": "Zm9v"})", "")),
            "/validationOutputFilters/bgpsecFilters/0/SKI: expected a 20-octet key identifier, got 3 octets");
  EXPECT_EQ(error_of(text(R"({"SKI": "Zm9v+"})", "")),
            "/validationOutputFilters/bgpsecFilters/0/SKI: expected base64url text without '=' padding (RFC 4648 "
            "section 5, RFC 8416 section 3.3.2)");
  EXPECT_EQ(error_of(text("", R"({"asn": 1, "SKI": "AAECAwQFBgcICQoLDA0ODxAREhM"})")),
            "/locallyAddedAssertions/bgpsecAssertions/0/routerPublicKey: missing (RFC 8416 section 3.4.2)");
}

TEST(Slurm, Base64url) {
  EXPECT_EQ(decode_base64url("Zm9vYg"), (std::vector<uint8_t>{'f', 'o', 'o', 'b'}));
  EXPECT_EQ(decode_base64url("-_8"), (std::vector<uint8_t>{0xfb, 0xff}));
  EXPECT_FALSE(decode_base64url("Zm9vYg=="));
  EXPECT_FALSE(decode_base64url("Zm9vY"));
  EXPECT_FALSE(decode_base64url("Zh"));  // leftover bits set
  EXPECT_EQ(decode_base64url(""), std::vector<uint8_t>{});
}

Slurm parsed(const std::string& text) {
  auto r = parse_slurm(text);
  EXPECT_TRUE(r.ok()) << r.error().to_string();
  return r ? *r : Slurm{};
}

// find_overlap's answer as one line: the two files and what overlaps, or
// "none".
std::string overlap_of(std::span<const Slurm> files) {
  const auto o = find_overlap(files);
  if (!o) return "none";
  return "files " + std::to_string(o->file_a) + " and " + std::to_string(o->file_b) + ": " + o->what;
}

TEST(Slurm, OverlapAcrossFiles) {
  std::vector<Slurm> files{parsed(with(R"({"prefix": "192.0.2.0/24"})", "")),
                           parsed(with("", R"({"prefix": "198.51.100.0/24", "asn": 1})")),
                           parsed(with(R"({"asn": 64496})", ""))};
  EXPECT_FALSE(find_overlap(files));
  files.push_back(parsed(with("", R"({"prefix": "192.0.2.128/25", "asn": 2})")));
  auto o = find_overlap(files);
  ASSERT_TRUE(o);
  EXPECT_EQ(o->file_a, 0u);
  EXPECT_EQ(o->file_b, 3u);
  EXPECT_EQ(o->what, "prefix 192.0.2.0/24 covers 192.0.2.128/25");
  files.back() = parsed(with(R"({"prefix": "198.51.100.0/24", "asn": 7})", ""));
  o = find_overlap(files);
  ASSERT_TRUE(o);
  EXPECT_EQ(o->file_a, 1u);
  EXPECT_EQ(o->what, "prefix 198.51.100.0/24 is in both");
  // Within one file, overlaps are the operator's business (section 4.2 is
  // about several files).
  EXPECT_FALSE(find_overlap(std::vector<Slurm>{parsed(with(R"({"prefix": "10.0.0.0/8"})",
                                                            R"({"prefix": "10.1.0.0/16", "asn": 1})"))}));
  // Different families never overlap.
  EXPECT_FALSE(find_overlap(std::vector<Slurm>{parsed(with(R"({"prefix": "0.0.0.0/0"})", "")),
                                               parsed(with(R"({"prefix": "::/0"})", ""))}));
}

TEST(Slurm, AppliesFiltersThenAssertions) {
  Slurm s = parsed(kExample);
  SlurmFilter f(std::span<const Slurm>(&s, 1));
  std::vector<Vrp> in{
      {P("192.0.2.0/24"), 24, 1},       // under the first filter's prefix: removed
      {P("192.0.2.128/25"), 25, 2},     // more specific: removed
      {P("192.0.0.0/16"), 24, 3},       // covers the filter's prefix, not covered: kept
      {P("203.0.113.0/24"), 24, 64496}, // AS filter: removed
      {P("198.51.100.0/25"), 25, 64497},  // prefix and AS: removed
      {P("198.51.100.0/25"), 25, 64498},  // prefix, other AS: kept
      {P("198.51.100.0/24"), 24, 64496},  // removed by the AS filter, then asserted again
  };
  auto out = f.apply(in);
  EXPECT_EQ(out.removed, 5u);
  EXPECT_EQ(out.added, 2u);
  std::vector<Vrp> want{{P("192.0.0.0/16"), 24, 3},
                        {P("198.51.100.0/24"), 24, 64496},
                        {P("198.51.100.0/25"), 25, 64498},
                        {P("2001:db8::/32"), 48, 64496}};
  std::sort(want.begin(), want.end());
  EXPECT_EQ(out.vrps, want);
  EXPECT_TRUE(SlurmFilter().apply(in).vrps.size() == in.size());
}

// A file may hold 100,000 filters of one prefix (as many entries as a
// file may have): 0.0.0.0/0 with every odd AS from 1 to 199,999. Applied
// to 150,000 VRPs, each VRP is looked for among them by two binary
// searches (a scan of them all was about 1.2e10 steps here), and the
// overlap check keeps one entry of the prefix for each file (it rescanned
// every one before it: 5e9 steps for the file alone). Before, this test
// took about a minute in a build without optimisation; now about one
// second.
TEST(Slurm, ManyFiltersOnOnePrefix) {
  std::string filters;
  for (uint32_t k = 0; k < kMaxSlurmEntries; ++k)
    filters += (k ? "," : "") + std::string(R"({"prefix":"0.0.0.0/0","asn":)") + std::to_string(2 * k + 1) + "}";
  const Slurm s = parsed(with(filters, ""));
  ASSERT_EQ(s.prefix_filters.size(), kMaxSlurmEntries);
  std::vector<Vrp> vrps;
  std::vector<Vrp> kept;
  const auto v4 = [](uint32_t at) { return *net::Prefix::make(net::IpAddress::v4(at), 24); };
  for (uint32_t k = 0; k < 100000; ++k) kept.push_back({v4(0x20000000u | (k << 8)), 24, 2 * k});  // even ASes
  kept.push_back({v4(0x30000000u), 24, 200001});  // odd, past the last listed
  for (uint32_t k = 0; k < 1000; ++k) {  // listed ASes, but IPv6
    std::array<uint8_t, 16> b{0x20, 0x01, 0x0d, 0xb8, static_cast<uint8_t>(k >> 8), static_cast<uint8_t>(k)};
    kept.push_back({*net::Prefix::make(net::IpAddress::from_bytes(net::IpFamily::V6, b.data()), 48), 48, 2 * k + 1});
  }
  vrps = kept;
  for (uint32_t k = 0; k < 50000; ++k) vrps.push_back({v4(0x40000000u | (k << 8)), 24, 4 * k + 1});  // listed
  std::sort(kept.begin(), kept.end());
  const SlurmFilter f(std::span<const Slurm>(&s, 1));
  auto out = f.apply(vrps);
  EXPECT_EQ(out.removed, 50000u);
  EXPECT_EQ(out.added, 0u);
  EXPECT_EQ(out.vrps, kept);
  EXPECT_TRUE(f.removes({v4(0x40000000u), 32, 199999}));
  EXPECT_FALSE(f.removes({v4(0x40000000u), 32, 200000}));
  // One more filter of the prefix, without an AS: it matches every AS, and
  // only the IPv6 VRPs stay.
  Slurm every = s;
  every.prefix_filters.push_back(PrefixFilter{P("0.0.0.0/0"), std::nullopt, ""});
  out = SlurmFilter(std::span<const Slurm>(&every, 1)).apply(vrps);
  EXPECT_EQ(out.removed, 150001u);
  EXPECT_EQ(out.vrps, std::vector<Vrp>(kept.end() - 1000, kept.end()));
  // The overlap check: alone, and beside an IPv6 file, none; beside a
  // file with a prefix under it, or with the same filters, one.
  std::vector<Slurm> files{s, parsed(with(R"({"prefix": "::/0"})", ""))};
  EXPECT_EQ(overlap_of(std::span<const Slurm>(&s, 1)), "none");
  EXPECT_EQ(overlap_of(files), "none");
  files.push_back(parsed(with("", R"({"prefix": "10.0.0.0/8", "asn": 1})")));
  EXPECT_EQ(overlap_of(files), "files 0 and 2: prefix 0.0.0.0/0 covers 10.0.0.0/8");
  files = {s, every};
  EXPECT_EQ(overlap_of(files), "files 0 and 1: prefix 0.0.0.0/0 is in both");
}

// apply() walks the VRPs and the filters' prefixes together, holding the
// prefixes that cover its place as a chain: here chains as deep as they go
// (a filter at every length of one IPv4 address and one IPv6 address) with
// siblings that come and go beside them, against the plain definition.
TEST(Slurm, FiltersNestedAtEveryLength) {
  Slurm s;
  const net::IpAddress a4 = net::IpAddress::v4(0x0a0b0c0du);
  std::array<uint8_t, 16> b6{0x20, 0x01, 0x0d, 0xb8, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc};
  const net::IpAddress a6 = net::IpAddress::from_bytes(net::IpFamily::V6, b6.data());
  for (const net::IpAddress& a : {a4, a6}) {
    for (unsigned len = 0; len <= net::IpAddress::max_len(a.family()); ++len) {
      // One AS per length, and at every tenth length a filter of any AS.
      s.prefix_filters.push_back(PrefixFilter{net::Prefix::make(a, len), 100 + len, ""});
      if (len % 10 == 9) s.prefix_filters.push_back(PrefixFilter{net::Prefix::make(a, len), std::nullopt, ""});
    }
  }
  // Siblings 10.k.0.0/16 (beside 10.11.0.0/16 of the chain), AS 1 and 2 in
  // turn: a sibling the walk has passed must not remove what the next holds.
  for (uint32_t k = 0; k < 256; ++k)
    if (k != 11) s.prefix_filters.push_back(PrefixFilter{net::Prefix::make(net::IpAddress::v4(0x0a000000u | (k << 16)), 16), 1 + k % 2, ""});
  std::vector<Vrp> vrps;
  for (const net::IpAddress& a : {a4, a6}) {
    const unsigned top = net::IpAddress::max_len(a.family());
    for (unsigned len = 0; len <= top; ++len)
      for (uint32_t asn : {1u, 100 + len, 100 + len + 1, 99 + len, 500u}) {
        vrps.push_back(Vrp{*net::Prefix::make(a, len), static_cast<uint8_t>(top), asn});
        // beside the chain: the same length, the address's last bit of it flipped
        if (len > 0) {
          auto bytes = a.bytes();
          bytes[(len - 1) / 8] ^= static_cast<uint8_t>(0x80u >> ((len - 1) % 8));
          vrps.push_back(Vrp{*net::Prefix::make(net::IpAddress::from_bytes(a.family(), bytes.data()), len),
                             static_cast<uint8_t>(top), asn});
        }
      }
  }
  for (uint32_t k = 0; k < 256; ++k)
    for (uint32_t asn : {1u, 2u}) vrps.push_back(Vrp{*net::Prefix::make(net::IpAddress::v4(0x0a000000u | (k << 16) | 0x100u), 24), 24, asn});
  const SlurmFilter f(std::span<const Slurm>(&s, 1));
  const auto out = f.apply(vrps);
  std::vector<Vrp> want;
  size_t removed = 0;
  for (const Vrp& v : vrps) {
    const bool gone = std::any_of(s.prefix_filters.begin(), s.prefix_filters.end(), [&](const PrefixFilter& pf) {
      return pf.prefix->contains(v.prefix) && (!pf.asn || *pf.asn == v.asn);
    });
    EXPECT_EQ(f.removes(v), gone) << to_string(v);
    if (gone) ++removed;
    else want.push_back(v);
  }
  std::sort(want.begin(), want.end());
  want.erase(std::unique(want.begin(), want.end()), want.end());
  EXPECT_EQ(out.vrps, want);
  EXPECT_EQ(out.removed, removed);
  EXPECT_GT(removed, 300u);  // the chains remove, not only the siblings
  EXPECT_GT(want.size(), 200u);  // and keep some
}

// ---- The RFC's definition, done plainly, against SlurmFilter.

bool matches_by_definition(const PrefixFilter& f, const Vrp& v) {
  if (f.prefix && !f.prefix->contains(v.prefix)) return false;
  if (f.asn && *f.asn != v.asn) return false;
  return true;
}

std::vector<Vrp> apply_by_definition(const std::vector<Slurm>& files, const std::vector<Vrp>& vrps) {
  std::vector<Vrp> out;
  for (const Vrp& v : vrps) {
    bool gone = false;
    for (const Slurm& s : files)
      for (const PrefixFilter& f : s.prefix_filters) gone = gone || matches_by_definition(f, v);
    if (!gone && std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  }
  for (const Slurm& s : files)
    for (const PrefixAssertion& a : s.prefix_assertions)
      if (std::find(out.begin(), out.end(), a.vrp()) == out.end()) out.push_back(a.vrp());
  std::sort(out.begin(), out.end());
  return out;
}

// Prefixes in a small space so that filters, assertions and VRPs nest.
rc::Gen<net::Prefix> gen_small_prefix() {
  return rc::gen::apply(
      [](bool v6, uint8_t byte, unsigned len) {
        std::array<uint8_t, 16> b{};
        b[0] = v6 ? 0x20 : 10;
        b[1] = byte;
        const unsigned max = v6 ? 20u : 16u;
        return *net::Prefix::make(net::IpAddress::from_bytes(v6 ? net::IpFamily::V6 : net::IpFamily::V4, b.data()),
                                  4 + len % (max - 3));
      },
      rc::gen::arbitrary<bool>(), rc::gen::arbitrary<uint8_t>(), rc::gen::arbitrary<unsigned>());
}

rc::Gen<Vrp> gen_small_vrp() {
  return rc::gen::apply(
      [](net::Prefix p, unsigned extra, uint32_t asn) {
        return Vrp{p, static_cast<uint8_t>(p.len() + extra % 4), asn % 4};
      },
      gen_small_prefix(), rc::gen::arbitrary<unsigned>(), rc::gen::arbitrary<uint32_t>());
}

rc::Gen<PrefixFilter> gen_filter() {
  return rc::gen::apply(
      [](int which, net::Prefix p, uint32_t asn) {
        PrefixFilter f;
        if (which != 1) f.prefix = p;
        if (which != 0) f.asn = asn % 4;
        return f;
      },
      rc::gen::inRange(0, 3), gen_small_prefix(), rc::gen::arbitrary<uint32_t>());
}

rc::Gen<PrefixAssertion> gen_assertion() {
  return rc::gen::map(gen_small_vrp(), [](Vrp v) {
    PrefixAssertion a;
    a.prefix = v.prefix;
    a.max_len = v.max_len;
    a.asn = v.asn;
    return a;
  });
}

// Up to 30 filters of one prefix, their ASes from a few (so that some
// repeat), one in five without an AS.
std::vector<PrefixFilter> gen_filters_of_one_prefix() {
  const net::Prefix p = *gen_small_prefix();
  std::vector<PrefixFilter> out(*rc::gen::inRange<size_t>(1, 31));
  for (PrefixFilter& f : out) {
    f.prefix = p;
    if (*rc::gen::inRange(0, 5) != 0) f.asn = *rc::gen::inRange<uint32_t>(0, 6);
  }
  return out;
}

RC_GTEST_PROP(Slurm, ApplyAgreesWithTheRfcDefinition, ()) {
  const auto vrps = *rc::gen::container<std::vector<Vrp>>(gen_small_vrp());
  std::vector<Slurm> files(*rc::gen::inRange<size_t>(1, 4));
  for (Slurm& s : files) {
    s.prefix_filters = *rc::gen::resize(8, rc::gen::container<std::vector<PrefixFilter>>(gen_filter()));
    s.prefix_assertions = *rc::gen::resize(8, rc::gen::container<std::vector<PrefixAssertion>>(gen_assertion()));
    if (*rc::gen::arbitrary<bool>()) {
      const auto more = gen_filters_of_one_prefix();
      s.prefix_filters.insert(s.prefix_filters.end(), more.begin(), more.end());
    }
  }
  SlurmFilter f(files);
  auto out = f.apply(vrps);
  const auto want = apply_by_definition(files, vrps);
  RC_ASSERT(out.vrps == want);
  size_t removed = 0;
  for (const Vrp& v : vrps) {
    bool gone = false;
    for (const Slurm& s : files)
      for (const PrefixFilter& pf : s.prefix_filters) gone = gone || matches_by_definition(pf, v);
    removed += gone ? 1 : 0;
    RC_ASSERT(f.removes(v) == gone);
  }
  RC_ASSERT(out.removed == removed);
}

// find_overlap against a plain pairwise scan.
RC_GTEST_PROP(Slurm, OverlapAgreesWithAPairwiseScan, ()) {
  std::vector<Slurm> files(*rc::gen::inRange<size_t>(1, 4));
  for (Slurm& s : files) {
    s.prefix_filters = *rc::gen::resize(4, rc::gen::container<std::vector<PrefixFilter>>(gen_filter()));
    s.prefix_assertions = *rc::gen::resize(4, rc::gen::container<std::vector<PrefixAssertion>>(gen_assertion()));
  }
  auto prefixes = [](const Slurm& s) {
    std::vector<net::Prefix> out;
    for (const auto& f : s.prefix_filters)
      if (f.prefix) out.push_back(*f.prefix);
    for (const auto& a : s.prefix_assertions) out.push_back(a.prefix);
    return out;
  };
  bool any = false;
  for (size_t a = 0; a < files.size(); ++a)
    for (size_t b = a + 1; b < files.size(); ++b)
      for (const auto& x : prefixes(files[a]))
        for (const auto& y : prefixes(files[b])) any = any || x.contains(y) || y.contains(x);
  const std::string o = overlap_of(files);
  RC_ASSERT((o != "none") == any);
  // The same files with each prefix entry there several times: the same
  // answer, word for word.
  auto repeated = files;
  for (Slurm& s : repeated) {
    const size_t filters = s.prefix_filters.size();
    const size_t assertions = s.prefix_assertions.size();
    for (int copy = *rc::gen::inRange(1, 4); copy > 0; --copy) {
      for (size_t i = 0; i < filters; ++i) s.prefix_filters.push_back(s.prefix_filters[i]);
      for (size_t i = 0; i < assertions; ++i) s.prefix_assertions.push_back(s.prefix_assertions[i]);
    }
  }
  RC_ASSERT(overlap_of(repeated) == o);
}

}  // namespace
}  // namespace petrel::rpki
