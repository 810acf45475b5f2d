// The policy language's compiled evaluator (table/policy.h): each
// condition and change on hand-built routes, a term's exception (unless),
// and a property that the compiled chain (two phases, hashed prefix sets,
// RE2) agrees with a plain interpreter of the same terms, with and without
// unless, on random routes and policies.
#include "table/policy.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <re2/re2.h>

#include <regex>

// Terms are written with designated initializers, naming only what they use.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

#include "table/export.h"
#include "tests/table/attrs_gen.h"

namespace petrel::table {
namespace {

net::Prefix pfx(std::string_view s) { return *net::Prefix::parse(s); }

codec::PathAttributes route(std::vector<uint32_t> path, std::vector<uint32_t> communities = {}) {
  codec::PathAttributes a;
  a.origin = codec::Origin::kIgp;
  a.as_path = codec::AsPath{{codec::AsSegment{codec::SegmentType::kAsSequence, std::move(path)}}};
  a.next_hop = net::IpAddress::parse("192.0.2.1");
  a.communities = std::move(communities);
  return a;
}

std::shared_ptr<const PolicyChain> one(std::vector<PolicyTerm> terms, PolicyThen fallthrough = PolicyThen::kReject) {
  auto c = PolicyChain::compile({PolicyDef{"p", std::move(terms), fallthrough}});
  EXPECT_TRUE(c);
  return c;
}

PolicyVerdict run(const PolicyChain& c, const codec::PathAttributes& a, const net::Prefix& p, RouteFacts f = {}) {
  PolicyChain::Prepared scratch;
  f.prefix = &p;
  return c.evaluate(codec::AttributeSet::from(a), f, scratch);
}

TEST(Policy, CommunityPatterns) {
  auto p = CommunityPattern::parse("65000:*");
  ASSERT_TRUE(p);
  EXPECT_TRUE(p->matches(65000u << 16 | 7));
  EXPECT_FALSE(p->matches(65001u << 16 | 7));
  EXPECT_EQ(p->to_string(), "65000:*");
  auto l = CommunityPattern::parse("65000:*:3");
  ASSERT_TRUE(l);
  EXPECT_TRUE(l->matches(codec::LargeCommunity{65000, 9, 3}));
  EXPECT_FALSE(l->matches(codec::LargeCommunity{65000, 9, 4}));
  auto rt = CommunityPattern::parse("rt:65000:100");
  ASSERT_TRUE(rt);
  // RFC 4360 section 3.1: type 0x00, sub-type 0x02, AS 65000, local 100.
  EXPECT_TRUE(rt->matches(codec::ExtCommunity{0x0002FDE800000064ull}));
  EXPECT_EQ(rt->to_string(), "rt:65000:100");
  EXPECT_EQ(CommunityPattern::parse("soo:192.0.2.1:*")->to_string(), "soo:192.0.2.1:*");
  EXPECT_EQ(CommunityPattern::parse("rt:4200000000:1")->to_string(), "rt:4200000000:1");
  EXPECT_EQ(CommunityPattern::parse("no-export")->to_string(), "no-export");
  std::string why;
  EXPECT_FALSE(CommunityPattern::parse("65000:70000", &why));
  EXPECT_FALSE(CommunityPattern::parse("rt:4200000000:70000", &why));
  EXPECT_FALSE(CommunityPattern::parse("1:2:3:4", &why));
}

TEST(Policy, AsPathRegexSeesTheCiscoBoundary) {
  std::string text;
  as_path_text(codec::AsPath{{codec::AsSegment{codec::SegmentType::kAsSequence, {64500, 64510}},
                              codec::AsSegment{codec::SegmentType::kAsSet, {1, 2}}}},
               text);
  EXPECT_EQ(text, "64500 64510 {1,2}");
  auto chain = one({PolicyTerm{"t", {.as_path = "_64510_"}, {}, PolicyThen::kAccept}});
  EXPECT_TRUE(run(*chain, route({64500, 64510}), pfx("192.0.2.0/24")).accept);
  EXPECT_TRUE(run(*chain, route({64510}), pfx("192.0.2.0/24")).accept);
  EXPECT_FALSE(run(*chain, route({645100}), pfx("192.0.2.0/24")).accept);  // not a substring match
  EXPECT_FALSE(run(*chain, route({164510, 1}), pfx("192.0.2.0/24")).accept);
  auto origin = one({PolicyTerm{"t", {.as_path = "_1$"}, {}, PolicyThen::kAccept}});
  EXPECT_TRUE(run(*origin, route({5, 1}), pfx("192.0.2.0/24")).accept);
  EXPECT_FALSE(run(*origin, route({1, 5}), pfx("192.0.2.0/24")).accept);
}

// The usual shapes of AS-path expression are tested on the AS numbers
// (AsPathTokens) and hold exactly where RE2 on the path's text does: random
// expressions of those shapes (digits, classes, alternations), and near
// misses that must be left to RE2, on random paths of every segment type,
// empty segments too.
RC_GTEST_PROP(Policy, AsPathTokensAgreeWithTheExpressionOnTheText, ()) {
  // X: a few items, from a small alphabet so that paths meet them.
  auto gen_x = [] {
    std::string x;
    for (int n = *rc::gen::inRange(1, 4); n > 0; --n) {
      switch (*rc::gen::inRange(0, 4)) {
        case 0: x += *rc::gen::element<std::string>("1", "2", "0", "12", "65"); break;
        case 1: x += *rc::gen::element<std::string>("[12]", "[0-2]", "[1-3]", "[0-9]"); break;
        case 2: x += *rc::gen::element<std::string>("(1|2)", "(12|3)", "(0|10)", "(1|[23])", "(2|(1|3))"); break;
        default: x += *rc::gen::element<std::string>("1", "3"); break;
      }
    }
    return x;
  };
  const std::string x = gen_x();
  std::string e = *rc::gen::element<std::string>("_", "^") + x + *rc::gen::element<std::string>("_", "$");
  const bool in_grammar = *rc::gen::inRange(0, 5) != 0;
  if (!in_grammar) {  // outside the grammar: RE2 alone
    e = *rc::gen::element<std::string>(e + "*", "_" + x + "+_", "_" + x + "|3_", "_" + x + "_" + x + "_", x + "_",
                                       "_" + x, "_.*" + x + "_", "_[^1]_");
  }
  const auto tokens = AsPathTokens::of(e);
  if (in_grammar) RC_ASSERT(tokens.has_value());
  RE2 re(as_path_regex(e));
  RC_ASSERT(re.ok());
  auto chain = one({PolicyTerm{"t", {.as_path = e}, {}, PolicyThen::kAccept}});
  for (int r = 0; r < 20; ++r) {
    codec::AsPath path;
    for (int n = *rc::gen::inRange(0, 4); n > 0; --n) {
      codec::AsSegment seg{static_cast<codec::SegmentType>(*rc::gen::inRange(1, 5)), {}};
      for (int k = *rc::gen::inRange(0, 4); k > 0; --k)
        seg.asns.push_back(*rc::gen::element<uint32_t>(0u, 1u, 2u, 3u, 10u, 12u, 13u, 65u, 112u, 1212u, 6512u, 12312u,
                                                       4294967295u));
      path.segments.push_back(std::move(seg));
    }
    std::vector<std::byte> wire;
    bytes::Writer w(wire);
    codec::encode_as_path_value(w, path, codec::AsWidth::k4);
    std::string text;  // of the path as the wire has it
    as_path_text(codec::to_as_path(wire, codec::AsWidth::k4), text);
    const bool want = RE2::PartialMatch(text, re);
    if (tokens) RC_ASSERT(tokens->matches(codec::AsSegmentRange(wire, codec::AsWidth::k4)) == want);
    // Through a policy too (the chain uses the tokens when it has them).
    codec::PathAttributes a = route({});
    a.as_path = path;
    const codec::AttributeSet set = codec::AttributeSet::from(a);
    if (!codec::AttributeSet::from_canonical(set.wire()).ok()) continue;
    std::string set_text;
    as_path_text(codec::to_as_path(set.as_path(), codec::AsWidth::k4), set_text);
    PolicyChain::Prepared scratch;
    RouteFacts f;
    const net::Prefix p = pfx("192.0.2.0/24");
    f.prefix = &p;
    RC_ASSERT(chain->evaluate(set, f, scratch).accept == RE2::PartialMatch(set_text, re));
  }
  RC_TAG(tokens ? "tokens" : "re2");
}

// What AsPathTokens takes and what it leaves to RE2, at its bounds.
TEST(Policy, AsPathTokensBounds) {
  EXPECT_TRUE(AsPathTokens::of("_(6449[6-9]|645[0-0][0-9]|6451[01])_"));
  EXPECT_TRUE(AsPathTokens::of("^[0-9][0-9][0-9]_"));              // 1,000 strings, 900 numbers
  EXPECT_FALSE(AsPathTokens::of("_[0-9][0-9][0-9][0-9][0-9]_"));   // 100,000: too many
  EXPECT_FALSE(AsPathTokens::of("_[0-9]+_"));                      // repetition
  EXPECT_FALSE(AsPathTokens::of("_174|3356_"));                    // "|" outside parentheses
  EXPECT_FALSE(AsPathTokens::of("_()_"));
  EXPECT_FALSE(AsPathTokens::of("_[]_"));
  EXPECT_FALSE(AsPathTokens::of("_[^1]_"));
  std::string deep = "_" + std::string(17, '(') + "1" + std::string(17, ')') + "_";
  EXPECT_FALSE(AsPathTokens::of(deep));  // deeper than 16: RE2's
  deep = "_" + std::string(16, '(') + "1" + std::string(16, ')') + "_";
  ASSERT_TRUE(AsPathTokens::of(deep));
  std::vector<std::byte> wire;
  bytes::Writer w(wire);
  codec::encode_as_path_value(w, codec::AsPath{{codec::AsSegment{codec::SegmentType::kAsSequence, {2, 1}}}},
                              codec::AsWidth::k4);
  EXPECT_TRUE(AsPathTokens::of(deep)->matches(codec::AsSegmentRange(wire, codec::AsWidth::k4)));
  // Numbers of 11 digits and more, or with a leading 0, are in no path.
  const auto none = AsPathTokens::of("_(0[1-9]|42949672960)_");
  ASSERT_TRUE(none);
  EXPECT_FALSE(none->matches(codec::AsSegmentRange(wire, codec::AsWidth::k4)));
}

// The longest path a peer can send (an extended message: 63 AS_SEQUENCE
// and AS_SET segments of 255 four-octet numbers, 16,065 numbers), every
// number distinct: the walk over the numbers finds the first, the last,
// a number at each segment boundary and one that is absent exactly where
// RE2 on the path's text does.
TEST(Policy, AsPathTokensOnTheLongestPath) {
  codec::AsPath path;
  uint32_t next = 100000;
  for (int s = 0; s < 63; ++s) {
    codec::AsSegment seg{s % 7 == 6 ? codec::SegmentType::kAsSet : codec::SegmentType::kAsSequence, {}};
    for (int k = 0; k < 255; ++k) seg.asns.push_back(next++);
    path.segments.push_back(std::move(seg));
  }
  std::vector<std::byte> wire;
  bytes::Writer w(wire);
  codec::encode_as_path_value(w, path, codec::AsWidth::k4);
  ASSERT_GT(wire.size(), size_t{64000});
  std::string text;
  as_path_text(codec::to_as_path(wire, codec::AsWidth::k4), text);
  const std::string first = "100000", last = std::to_string(next - 1);
  const std::vector<std::string> expressions = {
      "^" + first + "_",  "_" + first + "_",  "_" + last + "$", "^" + last + "_", "_" + last + "_",
      "_100254_",         "_100255_",         "_101785_",       "_101786_",       "_(99999|116065)_",
      "_1000(0[0-9])_",  "^10000[0-9]$",     "_(116064|7)$",   "_11606[0-4]$",   "^(100000|5)_"};
  size_t held = 0;
  for (const std::string& e : expressions) {
    const auto tokens = AsPathTokens::of(e);
    ASSERT_TRUE(tokens) << e;
    RE2 re(as_path_regex(e));
    ASSERT_TRUE(re.ok()) << e;
    const bool want = RE2::PartialMatch(text, re);
    EXPECT_EQ(tokens->matches(codec::AsSegmentRange(wire, codec::AsWidth::k4)), want) << e;
    held += want;
  }
  // Both answers are asked: the first, the last and the boundary numbers
  // hold, "^last_", "^1000x$" and the absent ones do not.
  EXPECT_GT(held, size_t{5});
  EXPECT_LT(held, expressions.size() - 2);
}

TEST(Policy, AHostilePathCostsLinearTime) {
  // A path of 10,000 ASes (what a peer could send across AS_SEQUENCE
  // segments) against a pattern that backtracks exponentially in
  // backtracking engines: RE2 answers in linear time.
  std::vector<uint32_t> path(10000, 1);
  auto chain = one({PolicyTerm{"t", {.as_path = "^(1_?)*(1_?)*2$"}, {}, PolicyThen::kAccept}});
  EXPECT_FALSE(run(*chain, route(path), pfx("192.0.2.0/24")).accept);
}

TEST(Policy, PrefixSetsRangesAndFamilies) {
  PolicyMatch m;
  m.prefix = {*PrefixRange::parse("10.0.0.0/8 le 24"), *PrefixRange::parse("2001:db8::/32 ge 48 le 48")};
  auto chain = one({PolicyTerm{"t", m, {}, PolicyThen::kAccept}});
  auto a = route({1});
  EXPECT_TRUE(run(*chain, a, pfx("10.1.0.0/16")).accept);
  EXPECT_FALSE(run(*chain, a, pfx("10.1.1.128/25")).accept);
  EXPECT_FALSE(run(*chain, a, pfx("11.0.0.0/8")).accept);
  EXPECT_TRUE(run(*chain, a, pfx("2001:db8:1::/48")).accept);
  EXPECT_FALSE(run(*chain, a, pfx("2001:db8::/32")).accept);
  auto v6 = one({PolicyTerm{"t", {.family = net::IpFamily::V6}, {}, PolicyThen::kAccept}});
  EXPECT_FALSE(run(*v6, a, pfx("10.0.0.0/8")).accept);
  EXPECT_TRUE(run(*v6, a, pfx("2001:db8::/32")).accept);
}

TEST(Policy, StructuredPathTestsAndPeers) {
  auto a = route({64500, 64501, 64502});
  auto p = pfx("192.0.2.0/24");
  auto holds = [&](PolicyMatch m, RouteFacts f = {}) {
    return run(*one({PolicyTerm{"t", std::move(m), {}, PolicyThen::kAccept}}), a, p, f).accept;
  };
  EXPECT_TRUE(holds({.origin_as = {{64502, 64502}}}));
  EXPECT_FALSE(holds({.origin_as = {{64500, 64500}}}));
  EXPECT_TRUE(holds({.first_as = {{64500, 64500}}}));
  EXPECT_TRUE(holds({.as_path_contains = {{64501, 64501}}}));
  EXPECT_TRUE(holds({.as_path_length = NumberRange{3, 3}}));
  EXPECT_FALSE(holds({.as_path_length = NumberRange{0, 2}}));
  EXPECT_TRUE(holds({.as_set = false}));
  RouteFacts from_customer;
  from_customer.local_role = codec::Role::kProvider;  // ours: provider, so theirs: customer
  from_customer.peer_name = "c1";
  from_customer.peer_as = 64500;
  EXPECT_TRUE(holds({.peer_role = {codec::Role::kCustomer}}, from_customer));
  EXPECT_FALSE(holds({.peer_role = {codec::Role::kProvider}}, from_customer));
  EXPECT_FALSE(holds({.peer_role = {codec::Role::kCustomer}}));  // no role on the session
  EXPECT_TRUE(holds({.peer = {"c1"}, .peer_as = {{64500, 64500}}}, from_customer));
  EXPECT_FALSE(holds({.peer = {"c2"}}, from_customer));
  RouteFacts invalid;
  invalid.rpki = Validation::kInvalid;
  EXPECT_TRUE(holds({.rpki = 1 << static_cast<int>(Validation::kInvalid)}, invalid));
  EXPECT_FALSE(holds({.rpki = 1 << static_cast<int>(Validation::kValid)}, invalid));
}

TEST(Policy, ChangesApplyInOrderAndNextGoesOn) {
  PolicyActions tag;
  tag.community_add = {*CommunityPattern::parse("65000:1")};
  tag.local_pref = 200;
  PolicyActions clean;
  clean.community_remove = {*CommunityPattern::parse("64500:*")};
  clean.med_op = MedOp::kAdd;
  clean.med = 10;
  PolicyActions prepend;
  prepend.prepend = 2;
  auto chain = one({PolicyTerm{"clean", {}, clean, PolicyThen::kNext}, PolicyTerm{"tag", {}, tag, PolicyThen::kNext},
                    PolicyTerm{"prepend", {.first_as = {{64500, 64500}}}, prepend, PolicyThen::kAccept}},
                   PolicyThen::kAccept);
  auto a = route({64500}, {64500u << 16 | 1, 64501u << 16 | 1});
  a.med = UINT32_MAX - 3;
  auto v = run(*chain, a, pfx("192.0.2.0/24"));
  ASSERT_TRUE(v.accept);
  ASSERT_EQ(v.fired_count, 3);
  ApplyContext ctx;
  ctx.local_as = 65000;
  ctx.family = codec::kIpv4Unicast;
  ASSERT_TRUE(chain->apply(v, a, ctx));
  EXPECT_EQ(a.communities, (std::vector<uint32_t>{64501u << 16 | 1, 65000u << 16 | 1}));
  EXPECT_EQ(a.local_pref, 200u);
  EXPECT_EQ(a.med, UINT32_MAX);  // saturates
  EXPECT_EQ(a.as_path->segments[0].asns, (std::vector<uint32_t>{65000, 65000, 64500}));
  EXPECT_EQ(chain->term_label(2), "p.prepend");
}

TEST(Policy, ChainsFallThroughPoliciesAndEndInRejection) {
  auto tagging = PolicyDef{"tag", {PolicyTerm{"t", {}, {.local_pref = 7}, PolicyThen::kNext}}, PolicyThen::kNext};
  auto accepting = PolicyDef{"ok", {}, PolicyThen::kAccept};
  auto chain = PolicyChain::compile({tagging, accepting});
  auto v = run(*chain, route({1}), pfx("192.0.2.0/24"));
  EXPECT_TRUE(v.accept);
  EXPECT_EQ(v.fired_count, 1);
  auto alone = PolicyChain::compile({tagging});
  EXPECT_FALSE(run(*alone, route({1}), pfx("192.0.2.0/24")).accept);  // the chain ran out
  // The same terms under other names behave the same (update groups).
  auto renamed = tagging;
  renamed.name = "other";
  renamed.terms[0].name = "x";
  EXPECT_TRUE(*PolicyChain::compile({renamed, accepting}) == *chain);
  EXPECT_FALSE(*alone == *chain);
}

TEST(Policy, AFilterBecomesAPolicyOfTheSameBehaviour) {
  Filter f;
  f.name = "f";
  FilterRule r;
  r.prefixes = {*PrefixRange::parse("10.0.0.0/8 le 16")};
  r.set_local_pref = 50;
  FilterRule bad;
  bad.communities = {0xFDE80002};
  bad.action = FilterAction::kReject;
  f.rules = {bad, r};
  f.default_action = FilterAction::kReject;
  auto chain = PolicyChain::compile({policy_of_filter(f)});
  for (auto [prefix, comms] : std::vector<std::pair<std::string, std::vector<uint32_t>>>{
           {"10.0.0.0/16", {}}, {"10.0.0.0/24", {}}, {"10.0.0.0/16", {0xFDE80002}}, {"11.0.0.0/8", {}}}) {
    auto a = route({1}, comms);
    const FilterVerdict want = evaluate(f, pfx(prefix), codec::AttributeSet::from(a));
    const PolicyVerdict got = run(*chain, a, pfx(prefix));
    EXPECT_EQ(got.accept, want.accept) << prefix;
    if (got.accept) {
      ASSERT_TRUE(chain->apply(got, a, {}));
      EXPECT_EQ(a.local_pref, want.local_pref) << prefix;
    }
  }
}

TEST(Policy, BuiltInPolicies) {
  for (std::string_view name : builtin_policy_names()) ASSERT_TRUE(builtin_policy(name)) << name;
  EXPECT_FALSE(builtin_policy("graceful-shutdown"));  // the prefix is part of the name
  auto chain = PolicyChain::compile({*builtin_policy("builtin:bogons"), *builtin_policy("builtin:no-as-set"),
                                     *builtin_policy("builtin:no-blackhole"),
                                     *builtin_policy("builtin:graceful-shutdown"), PolicyDef{"ok", {}, PolicyThen::kAccept}});
  ASSERT_TRUE(chain);
  auto a = route({64500, 15169});
  for (const char* bogon : {"10.1.0.0/16", "192.168.1.0/24", "0.0.0.0/0", "8.8.8.0/25", "2001:db8::/48", "::/0",
                            "2a00:1::/49", "2002:c000::/24"})
    EXPECT_FALSE(run(*chain, a, pfx(bogon)).accept) << bogon;
  EXPECT_TRUE(run(*chain, a, pfx("8.8.8.0/24")).accept);
  EXPECT_TRUE(run(*chain, a, pfx("2a00:1450::/32")).accept);
  auto with_set = a;
  with_set.as_path->segments.push_back(codec::AsSegment{codec::SegmentType::kAsSet, {1, 2}});
  EXPECT_FALSE(run(*chain, with_set, pfx("8.8.8.0/24")).accept);
  EXPECT_FALSE(run(*chain, route({64500}, {codec::community::kBlackhole}), pfx("8.8.8.0/24")).accept);
  auto shut = route({64500}, {codec::community::kGracefulShutdown});
  auto v = run(*chain, shut, pfx("8.8.8.0/24"));
  ASSERT_TRUE(v.accept);
  ASSERT_TRUE(chain->apply(v, shut, {}));
  EXPECT_EQ(shut.local_pref, 0u);
}

// ---- unless: a term's exception

// A term that rejects what `match` holds for, unless `unless` holds too;
// the policy accepts the rest.
std::shared_ptr<const PolicyChain> rejecting_unless(PolicyMatch match, PolicyMatch unless) {
  PolicyTerm t{"t", std::move(match), {}, PolicyThen::kReject};
  t.unless = std::move(unless);
  return one({t}, PolicyThen::kAccept);
}

TEST(PolicyUnless, OnAttributesAndThePeer) {
  // Routes tagged 1:1 are refused, unless they came from AS 2 (first AS)
  // through the peer named "c".
  auto chain = rejecting_unless({.community = {*CommunityPattern::parse("1:1")}},
                                {.first_as = {{2, 2}}, .peer = {"c"}});
  const auto p = pfx("192.0.2.0/24");
  RouteFacts from_c;
  from_c.peer_name = "c";
  EXPECT_FALSE(run(*chain, route({3}, {1u << 16 | 1}), p, from_c).accept);  // match holds, unless's first_as does not
  EXPECT_TRUE(run(*chain, route({2}, {1u << 16 | 1}), p, from_c).accept);   // match and unless hold: excepted
  EXPECT_FALSE(run(*chain, route({2}, {1u << 16 | 1}), p).accept);          // unless needs every condition: not "c"
  EXPECT_TRUE(run(*chain, route({3}), p, from_c).accept);                   // match does not hold
  const auto v = run(*chain, route({3}, {1u << 16 | 1}), p, from_c);
  EXPECT_EQ(v.decided_by, 0);
  EXPECT_EQ(chain->decided_label(v), "p.t");
}

TEST(PolicyUnless, OnTheRouteAlone) {
  // Everything in 10/8 is refused, unless it is a /24 inside 10.1/16 that
  // is RPKI-valid.
  auto chain = rejecting_unless({.prefix = {*PrefixRange::parse("10.0.0.0/8 le 32")}},
                                {.prefix = {*PrefixRange::parse("10.1.0.0/16 le 32")},
                                 .prefix_length = NumberRange{24, 24},
                                 .rpki = 1 << static_cast<int>(Validation::kValid)});
  EXPECT_TRUE(chain->uses_validation());  // rpki in unless alone
  const auto a = route({1});
  RouteFacts valid;
  valid.rpki = Validation::kValid;
  EXPECT_TRUE(run(*chain, a, pfx("10.1.2.0/24"), valid).accept);
  EXPECT_FALSE(run(*chain, a, pfx("10.1.2.0/24")).accept);           // unchecked
  EXPECT_FALSE(run(*chain, a, pfx("10.1.2.0/25"), valid).accept);    // length
  EXPECT_FALSE(run(*chain, a, pfx("10.2.2.0/24"), valid).accept);    // outside the unless set
  EXPECT_TRUE(run(*chain, a, pfx("11.1.2.0/24")).accept);            // outside the match
  // One prepare() for an UPDATE's attributes, then decide() per prefix.
  PolicyChain::Prepared scratch;
  RouteFacts f;
  f.rpki = Validation::kValid;
  chain->prepare(codec::AttributeSet::from(a), f, scratch);
  const net::Prefix in = pfx("10.1.9.0/24"), out = pfx("10.9.9.0/24");
  f.prefix = &in;
  EXPECT_TRUE(chain->decide(f, scratch).accept);
  f.prefix = &out;
  EXPECT_FALSE(chain->decide(f, scratch).accept);
}

TEST(PolicyUnless, MixedAndWithoutMatch) {
  // No match: every route, unless its prefix is in the set and its origin
  // AS 5 (a customer cone).
  PolicyTerm cone{"outside-cone", {}, {}, PolicyThen::kReject};
  cone.unless = {.prefix = {*PrefixRange::parse("198.51.100.0/24 le 24")}, .origin_as = {{5, 5}}};
  PolicyTerm tag{"tag", {}, {.local_pref = 300}, PolicyThen::kAccept};
  auto chain = one({cone, tag});
  EXPECT_FALSE(chain->uses_validation());
  const auto in = pfx("198.51.100.0/24"), out = pfx("203.0.113.0/24");
  auto v = run(*chain, route({1, 5}), in);
  ASSERT_TRUE(v.accept);
  EXPECT_EQ(chain->decided_label(v), "p.tag");
  EXPECT_FALSE(run(*chain, route({1, 6}), in).accept);   // origin AS
  EXPECT_FALSE(run(*chain, route({1, 5}), out).accept);  // prefix
  EXPECT_FALSE(run(*chain, route({1, 6}), out).accept);
  // An AS-path expression in unless, beside match's own.
  PolicyTerm re{"re", {.as_path = "^1_"}, {}, PolicyThen::kReject};
  re.unless = {.as_path = "_7$"};
  auto by_regex = one({re}, PolicyThen::kAccept);
  EXPECT_FALSE(run(*by_regex, route({1, 6}), in).accept);
  EXPECT_TRUE(run(*by_regex, route({1, 7}), in).accept);
  EXPECT_TRUE(run(*by_regex, route({2, 6}), in).accept);
}

TEST(PolicyUnless, EmptyIsNoExceptionAndItIsPartOfTheTermsBehaviour) {
  // A term's unless left empty: no exception (the checker refuses an
  // empty `unless` table in a file; in code it means none).
  auto plain = one({PolicyTerm{"t", {.first_as = {{1, 1}}}, {}, PolicyThen::kReject}}, PolicyThen::kAccept);
  EXPECT_FALSE(run(*plain, route({1}), pfx("192.0.2.0/24")).accept);
  auto excepted = rejecting_unless({.first_as = {{1, 1}}}, {.as_path_length = NumberRange{1, 1}});
  EXPECT_TRUE(run(*excepted, route({1}), pfx("192.0.2.0/24")).accept);
  // Reloads and update groups compare behaviour: a changed unless is a change.
  EXPECT_FALSE(*plain == *excepted);
  auto again = rejecting_unless({.first_as = {{1, 1}}}, {.as_path_length = NumberRange{1, 1}});
  EXPECT_TRUE(*again == *excepted);
  auto other = rejecting_unless({.first_as = {{1, 1}}}, {.as_path_length = NumberRange{2, 2}});
  EXPECT_FALSE(*other == *excepted);
  // aspa in unless asks for validation too.
  EXPECT_TRUE(rejecting_unless({}, {.aspa = 1 << static_cast<int>(AspaState::kInvalid)})->uses_validation());
  EXPECT_FALSE(excepted->uses_validation());
}

TEST(PolicyUnless, ABadExpressionInUnlessIsNamed) {
  PolicyTerm t{"t", {}, {}, PolicyThen::kReject};
  t.unless.as_path = "^(1";
  std::string why;
  EXPECT_FALSE(PolicyChain::compile({PolicyDef{"p", {t}, PolicyThen::kAccept}}, &why));
  EXPECT_TRUE(why.starts_with("unless.as_path ^(1: ")) << why;
}

// ---- the property: compiled chain against a plain interpreter

// The plain interpreter: every condition checked directly on the route
// (prefix ranges one by one, the AS path with std::regex), terms in order.
struct Plain {
  bool accept = false;
  codec::PathAttributes attrs;
};

// The conditions of `m` on the route as it came, checked one by one.
bool holds(const PolicyMatch& m, const codec::PathAttributes& in, const net::Prefix& p, Validation rpki) {
  bool ok = true;
  if (!m.prefix.empty())
    ok = ok && std::any_of(m.prefix.begin(), m.prefix.end(), [&](const PrefixRange& r) { return r.contains(p); });
  if (m.prefix_length) ok = ok && m.prefix_length->contains(p.len());
  if (!m.as_path.empty()) {
    std::string text;
    as_path_text(*in.as_path, text);
    ok = ok && std::regex_search(text, std::regex(as_path_regex(m.as_path)));
  }
  if (!m.community.empty())
    ok = ok && std::any_of(m.community.begin(), m.community.end(), [&](const CommunityPattern& c) {
           return std::any_of(in.communities.begin(), in.communities.end(), [&](uint32_t x) { return c.matches(x); });
         });
  const auto& path = in.as_path->segments[0].asns;
  if (!m.first_as.empty()) ok = ok && m.first_as[0].contains(path.front());
  if (m.as_path_length) ok = ok && m.as_path_length->contains(static_cast<uint32_t>(path.size()));
  if (m.rpki) ok = ok && (m.rpki >> static_cast<unsigned>(rpki) & 1);
  return ok;
}

// Conditions see the route as it came (policy.h): `in`, while the
// changes go to `a`. A term applies when its match holds and its unless,
// if it has one, does not.
Plain interpret(const std::vector<PolicyDef>& defs, const codec::PathAttributes& in, const net::Prefix& p,
                uint32_t local_as, Validation rpki) {
  codec::PathAttributes a = in;
  for (const PolicyDef& d : defs) {
    for (const PolicyTerm& t : d.terms) {
      if (!holds(t.match, in, p, rpki)) continue;
      if (t.unless != PolicyMatch{} && holds(t.unless, in, p, rpki)) continue;
      if (t.then == PolicyThen::kReject) return {false, {}};
      if (t.set.local_pref) a.local_pref = t.set.local_pref;
      for (const auto& c : t.set.community_add) {
        const uint32_t v = c.v[0] << 16 | c.v[1];
        if (std::find(a.communities.begin(), a.communities.end(), v) == a.communities.end()) a.communities.push_back(v);
      }
      for (unsigned i = 0; i < t.set.prepend; ++i)
        a.as_path->segments[0].asns.insert(a.as_path->segments[0].asns.begin(), local_as);
      if (t.then == PolicyThen::kAccept) return {true, a};
    }
    if (d.default_then == PolicyThen::kAccept) return {true, a};
    if (d.default_then == PolicyThen::kReject) return {false, {}};
  }
  return {false, {}};
}

RC_GTEST_PROP(Policy, CompiledAgreesWithAPlainInterpreter, ()) {
  const std::vector<std::string> regexes = {"_2_", "^1_", "_3$", "^1_2_", "^[12]+$", "_(2|3)_", "(_1)+$"};
  auto gen_then = [] { return static_cast<PolicyThen>(*rc::gen::inRange(0, 3)); };
  // Random conditions, each present or not: on the prefix, the path, the
  // communities and the RPKI state.
  auto gen_match = [&](PolicyMatch& m) {
    if (*rc::gen::inRange(0, 3) == 0) {
      const auto len = static_cast<uint8_t>(*rc::gen::inRange(8, 25));
      auto base = *net::Prefix::make(net::IpAddress::v4(0x0A000000u | *rc::gen::inRange(0u, 4u) << 16), len);
      const auto le = static_cast<uint8_t>(*rc::gen::inRange<int>(len, 33));
      m.prefix.push_back(PrefixRange{base, len, le});
    }
    if (*rc::gen::inRange(0, 5) == 0) {
      const auto lo = static_cast<uint32_t>(*rc::gen::inRange(8, 33));
      m.prefix_length = NumberRange{lo, std::min<uint32_t>(32, lo + *rc::gen::inRange(0u, 8u))};
    }
    if (*rc::gen::inRange(0, 3) == 0) m.as_path = *rc::gen::elementOf(regexes);
    if (*rc::gen::inRange(0, 3) == 0)
      m.community.push_back(*CommunityPattern::parse(*rc::gen::element<std::string>("1:*", "1:1", "*:2")));
    if (*rc::gen::inRange(0, 4) == 0) {
      const uint32_t asn = *rc::gen::inRange(1u, 4u);
      m.first_as.push_back({asn, asn});
    }
    if (*rc::gen::inRange(0, 4) == 0) {
      const uint32_t lo = *rc::gen::inRange(1u, 4u);
      m.as_path_length = NumberRange{lo, lo + *rc::gen::inRange(0u, 3u)};
    }
    if (*rc::gen::inRange(0, 5) == 0) m.rpki = static_cast<uint8_t>(*rc::gen::inRange(1, 16));
  };
  std::vector<PolicyDef> defs(static_cast<size_t>(*rc::gen::inRange(1, 4)));
  for (size_t i = 0; i < defs.size(); ++i) {
    defs[i].name = "p" + std::to_string(i);
    defs[i].default_then = gen_then();
    const int n = *rc::gen::inRange(0, 6);
    for (int k = 0; k < n; ++k) {
      PolicyTerm t;
      gen_match(t.match);
      if (*rc::gen::inRange(0, 2) == 0) gen_match(t.unless);  // may stay empty: no exception
      t.then = gen_then();
      if (t.then != PolicyThen::kReject) {
        if (*rc::gen::arbitrary<bool>()) t.set.local_pref = *rc::gen::inRange(0u, 300u);
        if (*rc::gen::arbitrary<bool>()) t.set.community_add.push_back(*CommunityPattern::parse("9:9"));
        if (*rc::gen::inRange(0, 4) == 0) t.set.prepend = static_cast<uint8_t>(*rc::gen::inRange(1, 3));
      }
      defs[i].terms.push_back(std::move(t));
    }
  }
  auto chain = PolicyChain::compile(defs);
  RC_ASSERT(chain != nullptr);
  PolicyChain::Prepared scratch;
  for (int r = 0; r < 20; ++r) {
    std::vector<uint32_t> path(static_cast<size_t>(*rc::gen::inRange(1, 5)));
    for (auto& x : path) x = *rc::gen::inRange(1u, 4u);
    std::vector<uint32_t> comms;
    for (int c = *rc::gen::inRange(0, 3); c > 0; --c) comms.push_back(*rc::gen::inRange(1u, 3u) << 16 | *rc::gen::inRange(1u, 3u));
    auto a = route(path, comms);
    const auto len = static_cast<uint8_t>(*rc::gen::inRange(8, 33));
    const auto p = *net::Prefix::make(net::IpAddress::v4(0x0A000000u | *rc::gen::inRange(0u, 6u) << 16 | *rc::gen::inRange(0u, 1u << 16)), len);
    const auto rpki = static_cast<Validation>(*rc::gen::inRange(0, 4));
    const Plain want = interpret(defs, a, p, 65000, rpki);
    RouteFacts f;
    f.prefix = &p;
    f.rpki = rpki;
    chain->prepare(codec::AttributeSet::from(a), f, scratch);
    const PolicyVerdict got = chain->decide(f, scratch);
    RC_ASSERT(got.accept == want.accept);
    if (!got.accept) continue;
    ApplyContext ctx;
    ctx.local_as = 65000;
    ctx.family = codec::kIpv4Unicast;
    RC_ASSERT(chain->apply(got, a, ctx));
    RC_ASSERT(a == want.attrs);
  }
}


// A condition given with nothing in it (an empty list, or a set whose file
// is empty today) holds for no route: the term applies to none, and an
// `unless` with one excepts none; it is never dropped as if not given.
TEST(Policy, AnEmptyListHoldsForNoRoute) {
  const auto p = pfx("192.0.2.0/24");
  PolicyTerm reject_listed{.name = "listed", .then = PolicyThen::kReject};
  reject_listed.match.empty_lists = 1;  // prefix = [] (kListKeys[0])
  auto chain = one({reject_listed}, PolicyThen::kAccept);
  EXPECT_TRUE(run(*chain, route({65001}), p).accept);

  PolicyTerm reject_unless{.name = "outside", .then = PolicyThen::kReject};
  reject_unless.unless.empty_lists = 1 << 4;  // community = []
  auto chain2 = one({reject_unless}, PolicyThen::kAccept);
  EXPECT_FALSE(run(*chain2, route({65001}, {1u << 16 | 1}), p).accept);

  // Without the bit the same empty list is no condition at all.
  PolicyTerm reject_all{.name = "all", .then = PolicyThen::kReject};
  EXPECT_FALSE(run(*one({reject_all}, PolicyThen::kAccept), route({65001}), p).accept);
  EXPECT_NE(reject_listed, reject_all);  // a reload sees the difference
}

// apply_canonical writes the bytes that decoding the set, apply() and
// AttributeSet::from give, for every change but the next hop (which it
// declines), on random sets: communities of every kind present or not, with
// the Partial bit or not, unknown attributes sorting before and after.
RC_GTEST_PROP(Policy, ChangesWrittenInPlaceAreWhatApplyEncodes, ()) {
  codec::PathAttributes a = *testing::gen_attrs();
  if (*rc::gen::arbitrary<bool>()) a.partial |= uint64_t{1} << codec::attr_type::kCommunities;
  if (*rc::gen::arbitrary<bool>()) a.partial |= uint64_t{1} << codec::attr_type::kLargeCommunity;
  if (*rc::gen::arbitrary<bool>()) a.partial |= uint64_t{1} << codec::attr_type::kExtendedCommunities;
  const codec::AttributeSet src = codec::AttributeSet::from(a);
  RC_PRE(codec::AttributeSet::from_canonical(src.wire()).ok());  // a set the table could hold
  std::vector<PolicyTerm> terms(static_cast<size_t>(*rc::gen::inRange(1, 5)));
  const char* patterns[] = {"1:*", "*:2", "65000:100", "1:2:*", "65000:1:1", "rt:65000:*", "soo:192.0.2.1:7", "7:7"};
  for (auto& t : terms) {
    PolicyActions& s = t.set;
    s.strip = static_cast<uint8_t>(*rc::gen::inRange(0, 8) & *rc::gen::inRange(0, 8));
    for (int n = *rc::gen::inRange(0, 3); n > 0; --n)
      s.community_remove.push_back(*CommunityPattern::parse(*rc::gen::elementOf(std::vector<std::string>(patterns, patterns + 8))));
    for (int n = *rc::gen::inRange(0, 3); n > 0; --n)
      s.community_add.push_back(*CommunityPattern::parse(
          *rc::gen::element<std::string>("1:1", "65000:100", "2:2:2", "rt:65000:5", "soo:192.0.2.1:7", "7:7")));
    if (*rc::gen::inRange(0, 3) == 0) s.local_pref = *rc::gen::inRange(0u, 300u);
    if (*rc::gen::inRange(0, 3) == 0) {
      s.med_op = static_cast<MedOp>(*rc::gen::inRange(1, 4));
      s.med = *rc::gen::element<uint32_t>(0u, 5u, 100u, UINT32_MAX);
    }
    if (*rc::gen::inRange(0, 4) == 0) s.origin = static_cast<codec::Origin>(*rc::gen::inRange(0, 3));
    if (*rc::gen::inRange(0, 4) == 0) {
      s.prepend = static_cast<uint8_t>(*rc::gen::inRange(1, 4));
      s.prepend_as = *rc::gen::element<uint32_t>(0u, 64999u, 4200000000u);
    }
  }
  auto chain = PolicyChain::compile({PolicyDef{"p", terms, PolicyThen::kAccept}});
  RC_ASSERT(chain);
  PolicyVerdict v;
  v.accept = true;
  for (size_t i = 0; i < terms.size(); ++i)
    if (terms[i].set.any()) v.fired[v.fired_count++] = static_cast<uint16_t>(i);
  ApplyContext ctx;
  ctx.local_as = 65000;
  ctx.family = codec::kIpv4Unicast;
  codec::PathAttributes changed = src.decode();
  RC_ASSERT(chain->apply(v, changed, ctx));
  std::vector<std::byte> out;
  RC_ASSERT(chain->apply_canonical(v, src, ctx, out));
  const codec::AttributeSet want = codec::AttributeSet::from(changed);
  RC_ASSERT(std::vector<std::byte>(want.wire().begin(), want.wire().end()) == out);
  RC_ASSERT(codec::AttributeSet::from_canonical(out).ok());

  // A next hop is apply()'s alone.
  terms[0].set.next_hop_op = NextHopOp::kAddress;
  terms[0].set.next_hop = net::IpAddress::parse("192.0.2.9");
  auto with_nh = PolicyChain::compile({PolicyDef{"p", terms, PolicyThen::kAccept}});
  v.fired_count = 1;
  v.fired[0] = 0;
  RC_ASSERT(!with_nh->apply_canonical(v, src, ctx, out));
}

}  // namespace
}  // namespace petrel::table
