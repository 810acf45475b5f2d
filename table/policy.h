// Routing policy (docs/policy.md): named policies of ordered terms, each a
// set of conditions on a route (its prefix, attributes, the peer it came
// from, its RPKI and ASPA states) with an optional exception (`unless`, a
// second set of conditions), attribute changes, and what happens next:
// accept, reject, or go on to the next term. A peer's import or export is
// a chain of policies evaluated in order; the first accept or reject
// decides; a chain that runs out rejects (a policy ends with its
// `default`, which is "next" unless it says otherwise).
//
// The definitions (PolicyDef) are plain values, compared to decide whether
// a reload changes a peer's policy and whether two peers share an update
// group. PolicyChain compiles a chain of them once: prefix sets into a
// hash lookup per prefix length, AS-path regular expressions into RE2
// automata (linear time whatever path a peer sends, and bounded memory).
// Evaluating allocates nothing per route once its scratch space is warm.
//
// Evaluation has two phases so that an UPDATE's prefixes, which share
// their attributes, pay for attribute conditions once: prepare() decides
// every term's conditions on the attributes and the peer (of `match` and of
// `unless`); decide() then adds the per-route conditions (prefix, family,
// RPKI and ASPA states) and walks the terms. The Verdict names the terms
// whose changes apply, in order: the same attributes with the same Verdict
// always give the same result, which is what the exporter's cache relies
// on.
#pragma once

#include <array>
#include <bitset>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "codec/attribute_set.h"
#include "codec/capabilities.h"
#include "codec/communities.h"
#include "codec/mp_nlri.h"
#include "codec/types.h"
#include "crates/net/ip.h"
#include "table/filter.h"
#include "table/table.h"

namespace re2 {
class RE2;
}

namespace petrel::table {

// lo..hi inclusive: "N" or "N-M".
struct NumberRange {
  uint32_t lo = 0, hi = UINT32_MAX;
  [[nodiscard]] bool contains(uint32_t v) const { return v >= lo && v <= hi; }
  static std::optional<NumberRange> parse(std::string_view text, uint32_t max, std::string* why = nullptr);
  [[nodiscard]] std::string to_string() const;
  friend bool operator==(const NumberRange&, const NumberRange&) = default;
};

// A community, or a pattern of them: standard "A:B" (and the well-known
// names of parse_community), large "A:B:C", extended "rt:A:B" / "soo:A:B"
// (A an ASN or an IPv4 address; RFC 4360 route target and route origin).
// "*" stands for any value of a field (standard and large: any field;
// extended: the last).
struct CommunityPattern {
  enum class Kind : uint8_t { kStandard, kLarge, kExtended };
  Kind kind = Kind::kStandard;
  std::array<uint32_t, 3> v{};  // standard: A, B; large: A, B, C; extended: the 8 octets in v[0] (high), v[1]
  uint8_t any = 0;              // bit i: field i is "*"
  [[nodiscard]] bool exact() const { return any == 0; }
  [[nodiscard]] bool matches(uint32_t c) const;
  [[nodiscard]] bool matches(const codec::LargeCommunity& c) const;
  [[nodiscard]] bool matches(codec::ExtCommunity c) const;
  static std::optional<CommunityPattern> parse(std::string_view text, std::string* why = nullptr);
  [[nodiscard]] std::string to_string() const;
  friend bool operator==(const CommunityPattern&, const CommunityPattern&) = default;
};

enum class PeerType : uint8_t { kExternal, kInternal, kLocal };  // local: this router's own routes
std::string_view peer_type_name(PeerType t);

// A term's conditions; every one that is set must hold (an empty list is
// no condition). Lists hold when any member matches, except community_all.
struct PolicyMatch {
  std::vector<PrefixRange> prefix;            // the route's prefix in one of these ranges
  std::optional<NumberRange> prefix_length;
  std::optional<net::IpFamily> family;
  std::string as_path;                        // regular expression over the path as text (docs/policy.md)
  std::vector<NumberRange> origin_as;         // rightmost AS of a trailing AS_SEQUENCE
  std::vector<NumberRange> first_as;          // leftmost AS (the neighbour AS)
  std::vector<NumberRange> as_path_contains;  // any AS of the path
  std::optional<NumberRange> as_path_length;  // RFC 4271 9.1.2.2 (a) length
  std::optional<bool> as_set;                 // the path holds an AS_SET
  std::vector<CommunityPattern> community;      // carries any of these
  std::vector<CommunityPattern> community_all;  // carries every one of these
  std::vector<net::Prefix> next_hop;            // the next hop in one of these
  std::vector<std::string> peer;                // the peer's name (import)
  std::vector<NumberRange> peer_as;             // (import)
  std::vector<codec::Role> peer_role;           // the peer's RFC 9234 role, the counterpart of local_role (import)
  std::vector<PeerType> peer_type;              // where the route came from
  uint8_t rpki = 0;  // bit per Validation value; 0: no condition
  uint8_t aspa = 0;  // bit per AspaState value
  uint8_t origin = 0;  // bit per codec::Origin value
  std::optional<NumberRange> med, local_pref;  // absent attribute: no match
  std::optional<bool> otc;                     // carries ONLY_TO_CUSTOMER
  // Conditions given with nothing in them (`prefix = []`, or only sets
  // with no entries, as a generated file can be on some day): a list that
  // holds nothing holds for no route, so a term whose match has one
  // applies to no route, and an `unless` with one excepts none (rather
  // than the condition silently dropped, which would widen the term to
  // every route). Bit i: kListKeys[i]. (community_all of nothing is
  // carried by every route: not one of them.)
  static constexpr std::array<std::string_view, 13> kListKeys = {
      "prefix", "origin_as", "first_as",  "as_path_contains", "community", "next_hop", "peer",
      "peer_as", "peer_role", "peer_type", "rpki",             "aspa",      "origin"};
  uint16_t empty_lists = 0;
  friend bool operator==(const PolicyMatch&, const PolicyMatch&) = default;
  [[nodiscard]] bool about_peer() const { return !peer.empty() || !peer_as.empty() || !peer_role.empty(); }
};

enum class MedOp : uint8_t { kNone, kSet, kAdd, kSubtract };
enum class NextHopOp : uint8_t { kNone, kSelf, kUnchanged, kAddress };

// A term's changes, applied in this order: strip, remove, add; then
// LOCAL_PREF, MED, ORIGIN, next hop; then the prepend.
struct PolicyActions {
  uint8_t strip = 0;  // bit per CommunityPattern::Kind: remove every community of that kind
  std::vector<CommunityPattern> community_remove;  // remove those matching
  std::vector<CommunityPattern> community_add;     // exact values
  std::optional<uint32_t> local_pref;
  MedOp med_op = MedOp::kNone;
  uint32_t med = 0;
  std::optional<codec::Origin> origin;
  NextHopOp next_hop_op = NextHopOp::kNone;
  std::optional<net::IpAddress> next_hop;  // kAddress
  uint8_t prepend = 0;                     // times
  uint32_t prepend_as = 0;                 // 0: our own AS
  [[nodiscard]] bool any() const {
    return strip || !community_remove.empty() || !community_add.empty() || local_pref || med_op != MedOp::kNone ||
           origin || next_hop_op != NextHopOp::kNone || prepend;
  }
  friend bool operator==(const PolicyActions&, const PolicyActions&) = default;
};

enum class PolicyThen : uint8_t { kNext, kAccept, kReject };
std::string_view policy_then_name(PolicyThen t);

// A term applies when every condition of `match` holds, unless every
// condition of `unless` holds (an empty `unless`: no exception). `unless`
// is last so that terms written {name, match, set, then} stay valid.
struct PolicyTerm {
  std::string name;
  PolicyMatch match;
  PolicyActions set;
  PolicyThen then = PolicyThen::kNext;
  PolicyMatch unless;
  friend bool operator==(const PolicyTerm&, const PolicyTerm&) = default;
};

struct PolicyDef {
  std::string name;
  std::vector<PolicyTerm> terms;
  PolicyThen default_then = PolicyThen::kNext;  // when no term decided
  friend bool operator==(const PolicyDef&, const PolicyDef&) = default;
};

// A [[filter]] (filter.h) as a policy of the same behaviour.
PolicyDef policy_of_filter(const Filter& f);

// Policies every configuration has, for chains (docs/policy.md,
// "Built-in policies"); their names have a ':' that a [[policy]] name
// cannot have:
//   builtin:graceful-shutdown  RFC 8326: GRACEFUL_SHUTDOWN routes get
//                              LOCAL_PREF 0; then next
//   builtin:no-blackhole       RFC 7999: routes carrying BLACKHOLE are
//                              refused (from a transit, say)
//   builtin:bogons             RFC 6890 space, 6to4, the 6bone, default
//                              routes, longer than /24 or /48: refused
//   builtin:no-as-set          paths with an AS_SET (RFC 9774): refused
std::optional<PolicyDef> builtin_policy(std::string_view name);
std::vector<std::string_view> builtin_policy_names();

inline constexpr size_t kMaxPolicyTerms = 4096;  // per chain
inline constexpr size_t kMaxFired = 16;          // terms with changes that apply to one route

// What evaluation decided for one route: accept or reject, and the terms
// (indices in the chain) whose changes apply, in order. `reason`: the
// term that decided (or -1: a policy's default / the chain's end).
struct PolicyVerdict {
  bool accept = false;
  uint8_t fired_count = 0;
  std::array<uint16_t, kMaxFired> fired{};
  int32_t decided_by = -1;
  int32_t default_of = -1;  // with decided_by -1: the policy (index in the chain) whose default decided
  [[nodiscard]] bool changes() const { return fired_count > 0; }
  friend bool operator==(const PolicyVerdict& a, const PolicyVerdict& b) {
    if (a.accept != b.accept || a.fired_count != b.fired_count) return false;
    for (size_t i = 0; i < a.fired_count; ++i)
      if (a.fired[i] != b.fired[i]) return false;
    return true;
  }
};

// What a policy can ask about a route besides its attributes.
struct RouteFacts {
  const net::Prefix* prefix = nullptr;       // decide()
  Validation rpki = Validation::kUnchecked;  // decide()
  AspaState aspa = AspaState::kUnchecked;    // decide()
  // prepare():
  std::string_view peer_name;
  uint32_t peer_as = 0;
  std::optional<codec::Role> local_role;  // ours towards the peer
  PeerType peer_type = PeerType::kExternal;
};

// Where apply() takes values the terms do not name.
struct ApplyContext {
  uint32_t local_as = 0;
  codec::Family family{};  // of the route
  // Export: our next hop on the session ("self") and the route's own
  // before the export rules changed it ("unchanged"). Import: neither.
  const codec::PathAttributes* original = nullptr;
  std::optional<net::IpAddress> self_v4;
  std::optional<codec::NextHop> self_v6;
  bool extended_next_hop_v4 = false;
};

// An AS-path expression of one of the usual shapes, tested on the AS
// numbers themselves (no text, no regular expression engine): "_X_" (some
// AS of the path, AS_SET members too), "^X_" (the first), "_X$" (the
// last), "^X$" (the only one), where X is digits, classes of digits
// ("[0-9]", "[1-3]") and alternations in parentheses, without repetition:
// a finite set of numbers. It holds exactly where the expression does on
// the path's text (as_path_text; tests/table/policy_test.cpp checks it
// against RE2); any other expression is left to RE2.
class AsPathTokens {
 public:
  // The expression's shape and numbers; nothing when it has another shape
  // or more than kMostNumbers numbers.
  static std::optional<AsPathTokens> of(std::string_view expression);
  [[nodiscard]] bool matches(codec::AsSegmentRange path) const;

  static constexpr size_t kMostNumbers = 4096;

 private:
  enum class Where : uint8_t { kAny, kFirst, kLast, kOnly };
  [[nodiscard]] bool has(uint32_t asn) const;
  Where where_ = Where::kAny;
  std::vector<uint32_t> asns_;  // sorted, no repeats
};

class PolicyChain {
 public:
  // Scratch space of prepare() and decide(), reused from route to route.
  struct Prepared {
    std::vector<uint8_t> pass;         // per term: its attribute and peer conditions hold
    std::vector<uint8_t> unless_pass;  // per term: it has an `unless` whose attribute and peer conditions hold
    std::string path_text;
  };

  // Compiles a chain; nothing (and why) when a regular expression does not
  // compile or the chain is too long.
  static std::shared_ptr<const PolicyChain> compile(std::vector<PolicyDef> defs, std::string* why = nullptr);
  ~PolicyChain();
  PolicyChain(const PolicyChain&) = delete;
  PolicyChain& operator=(const PolicyChain&) = delete;

  [[nodiscard]] const std::vector<PolicyDef>& defs() const { return defs_; }
  [[nodiscard]] std::string name() const;  // the policies' names, joined by ", "
  [[nodiscard]] size_t terms() const { return terms_.size(); }
  // The term at chain index i, and "policy.term" (or "policy.term[k]") for people.
  [[nodiscard]] const PolicyTerm& term(size_t i) const { return *terms_[i].def; }
  [[nodiscard]] std::string term_label(size_t i) const;
  // What decided `v`, for people: "policy.term", "policy (default)" or
  // "end of chain".
  [[nodiscard]] std::string decided_label(const PolicyVerdict& v) const;
  [[nodiscard]] bool uses_validation() const { return uses_validation_; }

  // The attribute conditions are read from the canonical set in place
  // (nothing decoded).
  void prepare(const codec::AttributeSet& attrs, const RouteFacts& facts, Prepared& out) const;
  [[nodiscard]] PolicyVerdict decide(const RouteFacts& facts, const Prepared& prepared) const;
  [[nodiscard]] PolicyVerdict evaluate(const codec::AttributeSet& attrs, const RouteFacts& facts,
                                       Prepared& scratch) const {
    prepare(attrs, facts, scratch);
    return decide(facts, scratch);
  }
  // The verdict's changes made to `attrs`. False: a next hop could not be
  // set (no address of ours of the family): the route does not go.
  bool apply(const PolicyVerdict& v, codec::PathAttributes& attrs, const ApplyContext& ctx) const;
  // The same changes written straight into canonical bytes (`out`, cleared
  // first): `src`'s attributes, those the terms change rewritten, the rest
  // copied, nothing decoded that the terms do not touch; the bytes are
  // those AttributeSet::from gives for apply()'s result. False (and `out`
  // undefined) for what only apply() does: a next hop.
  bool apply_canonical(const PolicyVerdict& v, const codec::AttributeSet& src, const ApplyContext& ctx,
                       std::vector<std::byte>& out) const;

  // The same behaviour: the same terms in the same order (the names of
  // policies and terms aside, as for update groups).
  friend bool operator==(const PolicyChain& a, const PolicyChain& b);

 private:
  PolicyChain() = default;
  // A prefix set compiled: the ranges by their base prefix, and which base
  // lengths occur (so that a lookup tries only those).
  struct PrefixKeyHash {
    size_t operator()(const net::Prefix& p) const;
  };
  // Small sets (kScanAtMost ranges) are scanned: a mask and a compare per
  // range beat a hash lookup per length present.
  struct PrefixLookup {
    static constexpr size_t kScanAtMost = 48;
    struct Scan {
      uint64_t hi = 0, lo = 0;  // the base address, as two big-endian words
      uint8_t len = 0, ge = 0, le = 0;
      bool v6 = false;
      uint64_t mhi = 0, mlo = 0;  // the masks of its length
    };
    std::vector<Scan> scan;  // used when by_base is empty
    std::unordered_map<net::Prefix, std::vector<std::pair<uint8_t, uint8_t>>, PrefixKeyHash> by_base;
    std::bitset<129> lengths_v4, lengths_v6;
    [[nodiscard]] bool contains(const net::Prefix& p) const;
  };
  // The attribute and peer conditions a term's table has, each a case of
  // attributes_hold().
  enum class AttrOp : uint8_t {
    kPeer, kPeerAs, kPeerRole, kPeerType, kOrigin, kMed, kLocalPref, kOtc, kNextHop, kCommunities,
    kPathLength, kFirstAs, kOriginAs, kPathScan, kRegex,
    kNever,  // a condition given empty (PolicyMatch::empty_lists)
  };
  static std::vector<AttrOp> attr_ops_of(const PolicyMatch& m, bool regex);
  struct Compiled {
    const PolicyTerm* def = nullptr;
    std::vector<AttrOp> attr_ops, unless_attr_ops;
    size_t policy = 0;  // index in defs_
    std::unique_ptr<re2::RE2> as_path;
    std::unique_ptr<PrefixLookup> prefixes;
    bool has_unless = false;  // def->unless has a condition
    // def->match asks something of the route alone (decide): a term that
    // does not is not asked it (nor, with attr_ops empty, in prepare).
    bool asks_route = true;
    std::unique_ptr<re2::RE2> unless_as_path;
    std::unique_ptr<PrefixLookup> unless_prefixes;
    // The AS-path expressions as tests of AS numbers, when they have one
    // of AsPathTokens' shapes (then RE2 is not asked).
    std::optional<AsPathTokens> as_path_tokens, unless_as_path_tokens;
  };
  // Which of a term's tables of conditions is asked.
  enum class Part : uint8_t { kMatch, kUnless };
  struct PolicyEnd {
    size_t end = 0;  // one past its last term in terms_
    PolicyThen default_then = PolicyThen::kNext;
  };
  [[nodiscard]] bool attributes_hold(const Compiled& c, const codec::AttributeSet& a, const RouteFacts& f,
                                     std::string& path_text, bool& path_rendered, Part part = Part::kMatch) const;
  [[nodiscard]] static bool route_holds(const Compiled& c, const RouteFacts& f, Part part = Part::kMatch);
  // The AS-path expression and the prefix set of `m`, compiled; false (and
  // why, naming `key`) when the expression does not compile.
  static bool compile_conditions(const PolicyMatch& m, std::string_view key, std::unique_ptr<re2::RE2>& as_path,
                                 std::optional<AsPathTokens>& as_path_tokens,
                                 std::unique_ptr<PrefixLookup>& prefixes, std::string* why);

  std::vector<PolicyDef> defs_;
  std::vector<Compiled> terms_;
  std::vector<PolicyEnd> ends_;
  bool uses_validation_ = false;
};

// The AS path as the as_path regular expressions see it: ASNs separated by
// single spaces, an AS_SET as "{A,B}" (docs/policy.md).
void as_path_text(const codec::AsPath& p, std::string& out);
// An AS-path expression as people write it for BIRD, FRR or Cisco ("_"
// for a boundary: start, end, a space, a brace or a comma) in RE2 syntax.
std::string as_path_regex(std::string_view text);

}  // namespace petrel::table
