// Import of one UPDATE (import.h): family, AS_PATH and loop checks, the
// import filter, and the prefix limit watch.
#include "table/import.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "codec/as_path.h"
#include "codec/attributes.h"
#include "codec/simple_attributes.h"
#include "table/export.h"

namespace petrel::table {

namespace {

// The known family index of a range the session negotiated, or -1.
int taken(const codec::NlriRange& range, const ImportRules& rules) {
  const int fi = codec::known_index(range.family());
  return fi >= 0 && rules.families.has(range.family()) ? fi : -1;
}

uint32_t count_prefixes(const codec::NlriRange& range) {
  uint32_t n = 0;
  for (const auto& p : range) {
    (void)p;
    ++n;
  }
  return n;
}

// Prefixes of the ranges per family, of the negotiated families only.
std::array<uint32_t, kFamilies> counts_of(const codec::UpdateView::Ranges& ranges, const ImportRules& rules) {
  std::array<uint32_t, kFamilies> n{};
  for (const auto& range : ranges)
    if (int fi = taken(range, rules); fi >= 0) n[static_cast<size_t>(fi)] += count_prefixes(range);
  return n;
}

// Step 3 and 4 on the set or on the view (which answer alike:
// tests/table/loop_check_test.cpp, tests/table/import_test.cpp).
template <typename Attrs>
ImportRefusal loop_of(const Attrs& attrs, const ImportRules& rules) {
  if (count_as(attrs, rules.local_as) > rules.allow_own_as) return ImportRefusal::kOwnAs;
  if (rules.internal && reflection_loop(attrs, rules.router_id, rules.cluster_id)) return ImportRefusal::kReflection;
  return ImportRefusal::kNone;
}

// The refused store (refused.h) told of an UPDATE: forget every prefix it
// withdraws or announces (the announced ones were accepted).
// fn(prefix) for every prefix of `ranges` in a family the session takes.
template <typename Fn>
void each_taken(const codec::UpdateView::Ranges& ranges, const ImportRules& rules, Fn&& fn) {
  for (const auto& range : ranges)
    if (taken(range, rules) >= 0)
      for (const auto& p : range) fn(p);
}

void forget_all(const codec::UpdateView& u, const ImportRules& rules) {
  if (!rules.refused || rules.refused->empty()) return;
  auto forget = [&](const codec::NlriPrefix& p) { rules.refused->forget(p); };
  each_taken(u.withdrawals(), rules, forget);
  each_taken(u.announced(), rules, forget);
}

// ... or keep every prefix it announces as refused, for `reason`.
void keep_all(const codec::UpdateView& u, const ImportRules& rules, std::string_view reason,
              const codec::AttributeSet* set) {
  if (!rules.refused || rules.refused->max() == 0) return;
  auto attrs = std::make_shared<const codec::AttributeSet>(set ? *set : u.attribute_set());
  each_taken(u.withdrawals(), rules, [&](const codec::NlriPrefix& p) { rules.refused->forget(p); });
  each_taken(u.announced(), rules, [&](const codec::NlriPrefix& p) { rules.refused->refuse(p, reason, attrs); });
}

// The import policy's scratch space: prepare()d once per UPDATE's set,
// with the facts it was prepared with.
PolicyChain::Prepared& policy_scratch() {
  thread_local PolicyChain::Prepared scratch;
  return scratch;
}
RouteFacts& policy_facts() {
  thread_local RouteFacts facts;
  return facts;
}

// The facts the import policy's prepare() asks, and the route facts of
// decide() but the prefix (the RPKI state is asked per prefix).
RouteFacts import_facts(const ImportRules& rules, const codec::AttributeSet& set) {
  RouteFacts facts;
  facts.peer_name = rules.peer_name;
  facts.peer_as = rules.peer_as;
  facts.local_role = rules.local_role;
  facts.peer_type = rules.internal ? PeerType::kInternal : PeerType::kExternal;
  if (rules.filter->uses_validation() && rules.validator && rules.aspa != AspaCheck::kNone)
    facts.aspa = rules.validator->verify_set(set, rules.aspa);
  return facts;
}

RouteFacts route_facts(const ImportRules& rules, const RouteFacts& once, const net::Prefix& p,
                       const codec::AttributeSet& set) {
  RouteFacts at;
  at.prefix = &p;
  at.aspa = once.aspa;
  if (rules.validator && rules.filter->uses_validation()) at.rpki = rules.validator->validate_set(p, set);
  return at;
}

// The canonical bytes of `set` with the import policy's changes of `v`
// written in (PolicyChain::apply_canonical), in a buffer reused from
// UPDATE to UPDATE; nullptr for what only apply() does (a next hop).
const std::vector<std::byte>* changed_set(const ImportRules& rules, const PolicyVerdict& v,
                                          const codec::AttributeSet& set) {
  thread_local std::vector<std::byte> bytes;
  ApplyContext ctx;
  ctx.local_as = rules.local_as;
  return rules.filter->apply_canonical(v, set, ctx, bytes) ? &bytes : nullptr;
}

// The slow way, prefix by prefix: with an import filter, or when some of
// the UPDATE's NLRI is of a family the session did not negotiate (which a
// Batch::add of the whole view would take). `set`: the UPDATE's set, when
// it announces. withdraw_all: every announced prefix is withdrawn instead
// (counted as refused announcements when `refused`, else as withdrawals).
// `verdicts`: the import policy's, already decided by decide_all() for
// the announced prefixes of the families taken, in order.
void add_by_prefix(const codec::UpdateView& u, const ImportRules& rules, const codec::AttributeSet* set,
                   bool withdraw_all, bool refused, Batch& batch, ImportOutcome& out,
                   const PolicyVerdict* verdicts = nullptr) {
  // The set decoded, for every family's announcements of the UPDATE, only
  // when a verdict changes the route in a way apply_canonical() leaves
  // to apply().
  PolicyChain::Prepared& scratch = policy_scratch();
  std::optional<codec::PathAttributes> decoded;
  const bool forget = rules.refused && !rules.refused->empty();
  for (const auto& range : u.withdrawals()) {
    const int fi = taken(range, rules);
    if (fi < 0 || range.empty()) continue;
    std::vector<codec::NlriPrefix> w(range.begin(), range.end());
    batch.add(static_cast<FamilyIndex>(fi), nullptr, {}, w);
    out.withdrawn[static_cast<size_t>(fi)] += static_cast<uint32_t>(w.size());
    if (forget)
      for (const auto& p : w) rules.refused->forget(p);
  }
  for (const auto& range : u.announced()) {
    const int fi = taken(range, rules);
    if (fi < 0 || range.empty()) continue;
    const auto f = static_cast<FamilyIndex>(fi);
    const auto i = static_cast<size_t>(fi);
    if (withdraw_all || !set) {
      std::vector<codec::NlriPrefix> w(range.begin(), range.end());
      batch.add(f, nullptr, {}, w);
      const auto n = static_cast<uint32_t>(w.size());
      if (refused) {
        out.announced[i] += n;
        out.refused[i] += n;
      } else {
        out.withdrawn[i] += n;
      }
      continue;
    }
    // The policy decides prefix by prefix (its attribute conditions once
    // for the UPDATE); accepted routes whose attributes it changes go in
    // as a set of their own per verdict.
    thread_local std::vector<codec::NlriPrefix> plain, refuse;
    thread_local std::vector<PolicyVerdict> why;  // of each refused prefix
    thread_local std::vector<std::pair<PolicyVerdict, std::vector<codec::NlriPrefix>>> changed;
    plain.clear();
    refuse.clear();
    why.clear();
    changed.clear();
    uint32_t n = 0;
    if (rules.filter && !verdicts) {
      policy_facts() = import_facts(rules, *set);
      rules.filter->prepare(*set, policy_facts(), scratch);
    }
    for (const auto& p : range) {
      ++n;
      PolicyVerdict v;
      v.accept = true;
      if (verdicts) v = *verdicts++;
      else if (rules.filter) v = rules.filter->decide(route_facts(rules, policy_facts(), p.prefix, *set), scratch);
      if (!v.accept) {
        refuse.push_back(p);
        why.push_back(v);
      } else if (!v.changes()) {
        plain.push_back(p);
      } else {
        auto it = std::find_if(changed.begin(), changed.end(), [&](const auto& g) { return g.first == v; });
        if (it == changed.end()) it = changed.insert(changed.end(), {v, {}});
        it->second.push_back(p);
      }
    }
    batch.add(f, set, plain, refuse);
    if (rules.refused && !refuse.empty() && rules.refused->max() > 0) {
      auto attrs = std::make_shared<const codec::AttributeSet>(*set);
      for (size_t k = 0; k < refuse.size(); ++k)
        rules.refused->refuse(refuse[k], rules.filter->decided_label(why[k]), attrs);
    }
    if (forget) {
      for (const auto& p : plain) rules.refused->forget(p);
      for (const auto& [v, ps] : changed)
        for (const auto& p : ps) rules.refused->forget(p);
    }
    for (const auto& [v, ps] : changed) {
      // The changes written into the set's bytes as they are copied;
      // what only apply() does (a next hop) the slow way.
      if (const auto* bytes = changed_set(rules, v, *set)) {
        batch.add(f, *bytes, ps, {});
        continue;
      }
      ApplyContext ctx;
      ctx.local_as = rules.local_as;
      ctx.family = codec::kKnownFamilyList[f];
      if (!decoded) decoded = set->decode();
      codec::PathAttributes pa = *decoded;
      rules.filter->apply(v, pa, ctx);
      const codec::AttributeSet m = codec::AttributeSet::from(pa);
      batch.add(f, &m, ps, {});
    }
    out.announced[i] += n;
    out.refused[i] += static_cast<uint32_t>(refuse.size());
  }
}

// What the import policy decided for an UPDATE's announced prefixes.
enum class Decided : uint8_t {
  kMixed,    // prefix by prefix (add_by_prefix, with the verdicts)
  kPlain,    // every one accepted as it came
  kUniform,  // every one accepted with the same changes
};

// The import policy's verdict on every announced prefix of `u` of the
// families taken, in order, into `verdicts`. In the common cases (a
// policy that only checks, or one that changes every route alike, such as
// a tag) the UPDATE then goes in whole, as without a policy, instead of
// prefix by prefix (which takes the verdicts, not deciding again).
Decided decide_all(const codec::UpdateView& u, const ImportRules& rules, const codec::AttributeSet& set,
                   std::vector<PolicyVerdict>& verdicts) {
  PolicyChain::Prepared& scratch = policy_scratch();
  const RouteFacts facts = import_facts(rules, set);
  rules.filter->prepare(set, facts, scratch);
  policy_facts() = facts;
  verdicts.clear();
  bool whole = true;  // every range taken, every prefix accepted alike
  for (const auto& range : u.announced()) {
    if (taken(range, rules) < 0) {
      whole = false;
      continue;
    }
    for (const auto& p : range) {
      verdicts.push_back(rules.filter->decide(route_facts(rules, facts, p.prefix, set), scratch));
      whole &= verdicts.back().accept && verdicts.back() == verdicts.front();
    }
  }
  if (!whole || verdicts.empty()) return Decided::kMixed;
  return verdicts.front().changes() ? Decided::kUniform : Decided::kPlain;
}

void take_counts(const Batch::Gathered& got, ImportOutcome& out) {
  out.announced = got.announced;
  out.withdrawn = got.withdrawn;
}

}  // namespace

std::string_view import_refusal_name(ImportRefusal r) {
  switch (r) {
    case ImportRefusal::kNone: return "none";
    case ImportRefusal::kEmptyAsPath: return "empty-as-path";
    case ImportRefusal::kFirstAs: return "first-as";
    case ImportRefusal::kOwnAs: return "own-as";
    case ImportRefusal::kReflection: return "reflection";
    case ImportRefusal::kRouteLeak: return "route-leak";
  }
  return "?";
}

ImportRefusal check_as_path(codec::AsSegmentRange path, const ImportRules& rules, uint32_t* first_as) {
  if (rules.internal) return ImportRefusal::kNone;
  auto it = path.begin();
  if (it == path.end()) return ImportRefusal::kEmptyAsPath;
  if (!rules.enforce_first_as) return ImportRefusal::kNone;
  // The leftmost AS must be the peer's, at the head of an AS_SEQUENCE: a
  // peer prepends its AS as a sequence (RFC 4271 section 5.1.2).
  const uint32_t first = it->count ? it->at(0) : 0;
  if (first_as) *first_as = first;
  if (it->type != codec::SegmentType::kAsSequence || first != rules.peer_as) return ImportRefusal::kFirstAs;
  return ImportRefusal::kNone;
}

ImportOutcome import_update(const codec::UpdateView& u, bool treat_as_withdraw, const ImportRules& rules,
                            Batch& batch) {
  ImportOutcome out;
  // An UPDATE that decoded as treat-as-withdraw or worse announces nothing,
  // whichever way it goes in (Batch::add(view) holds the same rule).
  if (u.action() >= codec::ErrorAction::kTreatAsWithdraw) treat_as_withdraw = true;
  // 1. Families the session did not negotiate: ignored (never reach the
  // batch), noted once per UPDATE.
  bool clean = true;
  bool announces = false;
  auto note = [&](const codec::UpdateView::Ranges& ranges, bool announced) {
    for (const auto& range : ranges) {
      if (codec::known_index(range.family()) < 0 || range.empty()) continue;
      if (rules.families.has(range.family())) {
        if (announced) announces = true;
        continue;
      }
      if (!out.unnegotiated) out.unnegotiated_family = range.family();
      out.unnegotiated = true;
      out.unnegotiated_prefixes += count_prefixes(range);
      clean = false;
    }
  };
  note(u.withdrawals(), false);
  note(u.announced(), true);

  // 2. import "none": nothing enters the table; the prefixes count as any
  // peer's do (announced, withdrawn, and the announced ones as refused;
  // under treat-as-withdraw, every one as withdrawn).
  if (rules.none) {
    out.withdrawn = counts_of(u.withdrawals(), rules);
    const auto a = counts_of(u.announced(), rules);
    for (size_t i = 0; i < kFamilies; ++i) {
      if (treat_as_withdraw) {
        out.withdrawn[i] += a[i];
      } else {
        out.announced[i] = a[i];
        out.refused[i] = a[i];
      }
    }
    return out;
  }

  if (!announces || treat_as_withdraw) {
    forget_all(u, rules);
    if (clean) take_counts(batch.add(u, treat_as_withdraw), out);
    else add_by_prefix(u, rules, nullptr, true, false, batch, out);
    return out;
  }

  // 3 and 4, on the UPDATE as received: without an import filter, on a
  // 4-octet AS session, no AttributeSet is built (the table interns the
  // canonical bytes written straight from the message, as table-bench
  // measures it). With a filter, on a 2-octet session (whose AS_PATH needs
  // the set for the AS4_PATH merge) or for the slow way, the set is built
  // once and answers the checks too.
  // (One set's storage reused from UPDATE to UPDATE.)
  thread_local codec::AttributeSet set_storage;
  codec::AttributeSet* set = nullptr;
  if (rules.filter || !u.params().four_octet_as || !clean) {
    u.attribute_set(set_storage);
    set = &set_storage;
  }
  if (set) {
    out.refusal = check_as_path(set->as_path_segments(), rules, &out.first_as);
  } else {
    const auto path = u.attribute(codec::attr_type::kAsPath);
    out.refusal = check_as_path(codec::AsSegmentRange(path ? path->value : bytes::Span(), codec::AsWidth::k4), rules,
                                &out.first_as);
  }
  if (out.refusal != ImportRefusal::kFirstAs) out.first_as = 0;
  if (out.refusal == ImportRefusal::kNone) out.refusal = set ? loop_of(*set, rules) : loop_of(u, rules);
  // 5. RFC 9234 OTC ingress.
  if (out.refusal == ImportRefusal::kNone && rules.local_role && !rules.internal) {
    std::optional<uint32_t> otc;
    if (set) {
      otc = set->otc();
    } else if (const auto a = u.attribute(codec::attr_type::kOtc)) {
      if (auto v = codec::decode_otc(a->value)) otc = *v;
    }
    switch (otc_ingress(*rules.local_role, otc, rules.peer_as)) {
      case OtcIngress::kLeak:
        out.refusal = ImportRefusal::kRouteLeak;
        break;
      case OtcIngress::kAdd: {
        codec::PathAttributes pa = (set ? *set : u.attribute_set()).decode();
        pa.otc = rules.peer_as;
        set_storage = codec::AttributeSet::from(pa);
        set = &set_storage;
        break;
      }
      case OtcIngress::kKeep:
        break;
    }
  }

  if (out.refusal != ImportRefusal::kNone) {
    keep_all(u, rules, import_refusal_name(out.refusal), set);
    if (!clean) {
      add_by_prefix(u, rules, nullptr, true, true, batch, out);
      return out;
    }
    // Counted as received announcements (and refused), not withdrawals.
    const auto n = counts_of(u.announced(), rules);
    take_counts(batch.add(u, true), out);
    for (size_t i = 0; i < kFamilies; ++i) {
      out.withdrawn[i] -= n[i];
      out.announced[i] += n[i];
      out.refused[i] += n[i];
    }
    return out;
  }
  thread_local std::vector<PolicyVerdict> verdicts;
  const bool decided = rules.filter && clean;
  const Decided d = decided ? decide_all(u, rules, *set, verdicts) : Decided::kMixed;
  if (clean && (!rules.filter || d == Decided::kPlain)) {
    forget_all(u, rules);
    take_counts(batch.add(u, false, set), out);
    return out;
  }
  if (d == Decided::kUniform) {
    // One set for every prefix: the changes written into its bytes, the
    // UPDATE in whole (what apply_canonical leaves to apply(), prefix by
    // prefix below).
    if (const auto* bytes = changed_set(rules, verdicts.front(), *set)) {
      forget_all(u, rules);
      take_counts(batch.add(u, *bytes), out);
      return out;
    }
  }
  add_by_prefix(u, rules, set, false, false, batch, out, decided ? verdicts.data() : nullptr);
  return out;
}

std::vector<LimitEvent> PrefixLimitWatch::check(const std::array<uint64_t, kFamilies>& routes) {
  std::vector<LimitEvent> events;
  for (size_t i = 0; i < kFamilies; ++i) {
    const uint32_t limit = limits_.max[i];
    if (limit == 0) continue;
    const uint64_t n = routes[i];
    const auto f = static_cast<FamilyIndex>(i);
    // n >= limit * percent / 100, without rounding.
    const bool warn = n * 100 >= uint64_t{limit} * limits_.warn_percent;
    if (warn && !warned_[i]) events.push_back({LimitEvent::Kind::kWarn, f, n, limit});
    warned_[i] = warn;
    const bool over = n > limit;
    if (over && !exceeded_[i]) events.push_back({LimitEvent::Kind::kExceeded, f, n, limit});
    exceeded_[i] = over;
  }
  return events;
}

std::vector<std::byte> max_prefixes_data(FamilyIndex f, uint32_t limit) {
  const codec::Family fam = codec::kKnownFamilyList[f];
  return {std::byte(fam.afi >> 8),    std::byte(fam.afi & 0xff), std::byte(fam.safi),
          std::byte(limit >> 24),     std::byte((limit >> 16) & 0xff), std::byte((limit >> 8) & 0xff),
          std::byte(limit & 0xff)};
}

}  // namespace petrel::table
