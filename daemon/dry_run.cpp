// Policy dry runs (dry_run.h).
#include "daemon/dry_run.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <tuple>

#include "crates/json/json.h"
#include "codec/to_json.h"
#include "daemon/server.h"
#include "table/exporter.h"

namespace petrel::daemon {

namespace {

api::Response error(unsigned status, std::string message) {
  api::Response r;
  r.status = status;
  r.body = api::error_json(message);
  return r;
}

// What a chain does to one route, for comparing two chains.
struct Outcome {
  bool sent = false;
  std::string decided_by;
  std::optional<codec::AttributeSet> attrs;  // when sent (export: on the wire; import: into the table)
};

struct Tally {
  uint64_t examined = 0, newly_accepted = 0, newly_refused = 0, changed = 0, unchanged_accepted = 0,
           unchanged_refused = 0;
};

struct Example {
  std::string prefix;
  uint32_t path_id = 0;
  std::string change;  // "newly-accepted", "newly-refused", "changed"
  std::string before, after;  // what decided, current and candidate
  std::optional<codec::AttributeSet> attrs_before, attrs_after;
};

void note(Tally& t, std::vector<Example>& examples, size_t limit, const net::Prefix& p, uint32_t path_id,
          Outcome before, Outcome after) {
  ++t.examined;
  std::string change;
  if (before.sent && !after.sent) {
    ++t.newly_refused;
    change = "newly-refused";
  } else if (!before.sent && after.sent) {
    ++t.newly_accepted;
    change = "newly-accepted";
  } else if (before.sent && before.attrs != after.attrs) {
    ++t.changed;
    change = "changed";
  } else if (before.sent) {
    ++t.unchanged_accepted;
  } else {
    ++t.unchanged_refused;
  }
  if (change.empty() || examples.size() >= limit) return;
  examples.push_back({p.to_string(), path_id, std::move(change), std::move(before.decided_by),
                      std::move(after.decided_by), std::move(before.attrs), std::move(after.attrs)});
}

std::string decided(const table::PolicyChain* chain, const table::PolicyVerdict& v, std::string_view none) {
  return chain ? chain->decided_label(v) : std::string(none);
}

std::atomic<bool> running{false};

}  // namespace

api::Response policy_test(const Server& server, std::string_view method, const api::QueryArgs& args) {
  if (method != "GET" && method != "HEAD") {
    api::Response r = error(405, fmt::format("method {} is not allowed; use GET", method));
    r.allow = "GET, HEAD";
    return r;
  }
  std::string peer_name, direction, names;
  size_t limit = 20;
  for (const auto& [k, v] : args) {
    if (k == "peer") peer_name = v;
    else if (k == "direction") direction = v;
    else if (k == "policy") names = v;
    else if (k == "limit") {
      char* end = nullptr;
      const unsigned long n = std::strtoul(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || n > 1000) return error(400, fmt::format("limit is 0..1000, not \"{}\"", v));
      limit = n;
    } else {
      return error(400, fmt::format("unknown parameter \"{}\" (peer, direction, policy, limit)", k));
    }
  }
  if (peer_name.empty() || names.empty() || (direction != "import" && direction != "export"))
    return error(400, "peer=NAME, direction=import|export and policy=NAME[,NAME...] are required");
  const bool import = direction == "import";
  std::shared_ptr<Peer> peer;
  for (const auto& p : server.peers())
    if (p->config().name == peer_name) peer = p;
  if (!peer) return error(404, fmt::format("no peer is named \"{}\"", peer_name));

  // The candidate chain, from the running configuration's policies.
  std::shared_ptr<const table::PolicyChain> candidate;
  bool none = false;
  if (names == "none") {
    none = true;
  } else if (names != "all") {
    const auto known = server.named_policies();
    std::vector<table::PolicyDef> chain;
    for (size_t at = 0; at <= names.size();) {
      const size_t comma = std::min(names.find(',', at), names.size());
      const std::string name = names.substr(at, comma - at);
      at = comma + 1;
      auto it = std::find_if(known->begin(), known->end(), [&](const table::PolicyDef& d) { return d.name == name; });
      if (it == known->end())
        return error(404, fmt::format("no [[policy]] or [[filter]] is named \"{}\" in the running configuration "
                                      "(add it, reload, then try it)",
                                      name));
      chain.push_back(*it);
    }
    std::string why;
    candidate = table::PolicyChain::compile(std::move(chain), &why);
    if (!candidate) return error(400, why);
  }

  bool expected = false;
  if (!running.compare_exchange_strong(expected, true)) return error(503, "another dry run is under way; try again");
  struct Done {
    ~Done() { running.store(false); }
  } done;

  Tally tally;
  std::vector<Example> examples;
  table::PolicyChain::Prepared scratch_a, scratch_b;
  const table::Table& t = server.table();
  const PeerConfig& pc = peer->config();
  std::string current_name;
  if (!import) {
    const Peer::ExportView view = peer->export_view();
    const table::PolicyChain* current = view.policy.filter.get();
    current_name = view.policy.none ? "none" : current ? current->name() : "all";
    auto gate = [&](const table::PolicyChain* chain, bool refuse_all, const codec::AttributeSet& src,
                    const table::RouteView& rv, const net::Prefix& p, codec::Family fam,
                    table::PolicyChain::Prepared& scratch) {
      Outcome o;
      table::PolicyVerdict v;
      v.accept = !refuse_all;
      if (chain) v = chain->evaluate(src, table::export_facts(p, *rv.peer, rv.validation, rv.aspa), scratch);
      o.decided_by = refuse_all ? "none" : decided(chain, v, "all");
      if (!v.accept) return o;
      if (!view.target) {
        o.sent = true;  // the session is down: the policy's verdict alone
        return o;
      }
      table::Exported e = table::export_with_changes(*view.target, table::ExportSource{rv.peer, rv.slot}, fam, src, chain, v);
      if (e.verdict != table::ExportVerdict::kSend) {
        o.decided_by += fmt::format(" (then the rules: {})", table::export_verdict_name(e.verdict));
        return o;
      }
      o.sent = true;
      o.attrs = std::move(e.attrs);
      return o;
    };
    t.walk([&](const table::Change& c, const std::optional<table::RouteView>& best, auto) {
      if (!best) return;
      const codec::Family fam = codec::kKnownFamilyList[c.family];
      if (view.families && !view.families->has(fam)) return;
      const codec::AttributeSet src = best->attrs->decode();
      note(tally, examples, limit, c.prefix, best->path_id,
           gate(current, view.policy.none, src, *best, c.prefix, fam, scratch_a),
           gate(candidate.get(), none, src, *best, c.prefix, fam, scratch_b));
    });
  } else {
    current_name = "(as the table holds the routes)";
    const int32_t slot = peer->table_slot();
    table::RouteFacts facts;
    facts.peer_name = pc.name;
    facts.peer_as = pc.asn;
    facts.local_role = pc.local_role;
    facts.peer_type = pc.asn == server.asn() ? table::PeerType::kInternal : table::PeerType::kExternal;
    const table::Validator* validator = t.validator();
    const table::AspaCheck aspa = peer->aspa_check();
    auto through = [&](const codec::AttributeSet& src, const net::Prefix& p, codec::Family fam) {
      Outcome o;
      table::PolicyVerdict v;
      v.accept = !none;
      if (candidate) {
        candidate->prepare(src, facts, scratch_b);
        table::RouteFacts at;
        at.prefix = &p;
        if (validator && candidate->uses_validation()) {
          at.rpki = validator->validate_set(p, src);
          at.aspa = aspa == table::AspaCheck::kNone ? table::AspaState::kUnchecked : validator->verify_set(src, aspa);
        }
        v = candidate->decide(at, scratch_b);
      }
      o.decided_by = none ? "none" : decided(candidate.get(), v, "all");
      if (!v.accept) return o;
      o.sent = true;
      if (!v.changes()) {
        o.attrs = src;
        return o;
      }
      codec::PathAttributes pa = src.decode();
      table::ApplyContext ctx;
      ctx.local_as = server.asn();
      ctx.family = fam;
      candidate->apply(v, pa, ctx);
      o.attrs = codec::AttributeSet::from(pa);
      return o;
    };
    if (slot >= 0) {
      t.walk([&](const table::Change& c, const std::optional<table::RouteView>&, auto routes) {
        for (const table::Route& r : routes) {
          if (r.peer != slot || !r.attrs) continue;
          const codec::AttributeSet src = r.attrs->decode();
          Outcome before{true, "(in the table)", src};
          note(tally, examples, limit, c.prefix, r.path_id, std::move(before),
               through(src, c.prefix, codec::kKnownFamilyList[c.family]));
        }
      });
    }
    for (const auto& e : peer->refused().find(std::nullopt, SIZE_MAX)) {
      if (!e.attrs) continue;
      const codec::Family fam = e.prefix.family() == net::IpFamily::V6 ? codec::kIpv6Unicast : codec::kIpv4Unicast;
      note(tally, examples, limit, e.prefix, e.path_id, Outcome{false, e.reason, std::nullopt},
           through(*e.attrs, e.prefix, fam));
    }
  }

  api::Response r;
  json::Writer w(r.body);
  w.begin_object();
  w.member("peer", pc.name);
  w.member("direction", direction);
  w.member("policy", names);
  w.member("current", current_name);
  w.member("examined", tally.examined);
  w.member("newly_accepted", tally.newly_accepted);
  w.member("newly_refused", tally.newly_refused);
  w.member("changed", tally.changed);
  w.member("unchanged_accepted", tally.unchanged_accepted);
  w.member("unchanged_refused", tally.unchanged_refused);
  w.key_raw("examples").begin_array();
  for (const Example& e : examples) {
    w.begin_object();
    w.member("prefix", e.prefix);
    w.member("path_id", e.path_id);
    w.member("change", e.change);
    for (const auto& [key, why, attrs] : {std::tuple{"before", &e.before, &e.attrs_before},
                                          std::tuple{"after", &e.after, &e.attrs_after}}) {
      w.key_raw(key).begin_object();
      w.member("decided_by", *why);
      if (*attrs) codec::attributes_to_json((*attrs)->decode(), w);
      else w.key_raw("attributes").null();
      w.end_object();
    }
    w.end_object();
  }
  w.end_array();
  w.end_object().line_end();
  return r;
}

}  // namespace petrel::daemon
