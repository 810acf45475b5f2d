// The looking glass (daemon/looking_glass.h): the search, then the page.
//
// Community and AS path searches are one-term policies (table/policy.h:
// match community = [PATTERN] or as_path = "REGEX", then accept), so they
// read exactly as the same condition in a [[policy]] does, and are tried on
// every route of the table as a dry run tries a policy.
#include "daemon/looking_glass.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

#include "daemon/server.h"
#include "table/policy.h"

namespace petrel::daemon {

namespace {

std::atomic<bool> walking{false};  // one table walk at a time

constexpr size_t kRefusedPerPeer = 10;

struct Found {
  std::vector<api::PrefixSnapshot> prefixes;
  bool truncated = false;  // more than kLookingGlassPrefixes matched
  std::string error;       // a query that does not parse
  // For a prefix search, the routes to it import refused and kept
  // (peer.keep_refused), with the peer's name.
  std::vector<std::pair<std::string, table::RefusedRoutes::Entry>> refused;
};

Found failed(std::string why) {
  Found f;
  f.error = std::move(why);
  return f;
}

// The kept refused routes to `p`, from every peer.
void add_refused(const Server& server, const net::Prefix& p, Found& f) {
  for (const auto& peer : server.peers())
    for (auto& e : peer->refused().find(p, kRefusedPerPeer)) f.refused.emplace_back(peer->config().name, std::move(e));
}

// A search's results are held bounded during the walk: the smallest
// kLookingGlassPrefixes + 1 prefixes found so far (the one past the page
// says there were more), not every match of the table (".*" matches a
// full table: a map of every prefix was hundreds of MB, per search).
// True when p is among them (then kept), false when it falls past them.
template <typename Map>
bool keep_first(Map& out, const net::Prefix& p) {
  if (out.size() > kLookingGlassPrefixes && !(p < std::prev(out.end())->first)) return false;
  out.try_emplace(p);
  if (out.size() > kLookingGlassPrefixes + 1) out.erase(std::prev(out.end()));
  return true;
}

// Every prefix of the table within `p` (p itself too), the first
// kLookingGlassPrefixes in prefix order.
std::vector<net::Prefix> more_specifics(const table::Table& t, const net::Prefix& p, bool& truncated) {
  std::map<net::Prefix, bool> first;
  t.walk([&](const table::Change& c, const std::optional<table::RouteView>&, const auto&) {
    if (c.prefix.family() == p.family() && c.prefix.len() >= p.len() &&
        net::Prefix::make(c.prefix.addr(), p.len()) == p)
      keep_first(first, c.prefix);
  });
  truncated = first.size() > kLookingGlassPrefixes;
  std::vector<net::Prefix> out;
  for (const auto& [m, unused] : first)
    if (out.size() < kLookingGlassPrefixes) out.push_back(m);
  return out;
}

// The routes the one-term policy accepts: by prefix, the (peer, path id)
// of each. Its condition reads the attributes alone, so each interned
// attribute set is tried once per shard (a full table has several routes
// per set). Only per shard: the walk holds one shard's lock at a time, so
// a set another shard's writer frees meanwhile could come back at the same
// address with other contents, but none that a route of the locked shard
// holds.
using Matches = std::map<net::Prefix, std::set<std::pair<std::string, uint32_t>>>;
Matches matching(const table::Table& t, const table::PolicyChain& chain, bool& truncated) {
  Matches out;
  table::PolicyChain::Prepared scratch;
  std::unordered_map<const table::Attrs*, bool> tried;
  size_t shard = SIZE_MAX;
  t.walk([&](const table::Change& c, const std::optional<table::RouteView>&, const auto& routes) {
    if (const size_t now = t.shard_of(c.prefix); now != shard) {
      shard = now;
      tried.clear();
    }
    for (const table::Route& r : routes) {
      if (r.attrs == nullptr) continue;
      auto [it, fresh] = tried.try_emplace(r.attrs, false);
      if (fresh) {
        table::RouteFacts facts;
        facts.prefix = &c.prefix;
        chain.prepare(r.attrs->decode(), facts, scratch);
        it->second = chain.decide(facts, scratch).accept;
      }
      if (it->second && keep_first(out, c.prefix)) out[c.prefix].emplace(t.peer(r.peer).name, r.path_id);
    }
  });
  truncated = out.size() > kLookingGlassPrefixes;
  if (truncated) out.erase(std::prev(out.end()));
  return out;
}

Found search(const Server& server, std::string_view by, const std::string& q, const api::RouteLookup& lookup) {
  Found f;
  const bool longest = by == "longest";
  if (by == "exact" || longest || by == "more") {
    auto p = api::parse_query_prefix(q, longest);
    if (!p) {
      f.error = fmt::format("not a prefix: \"{}\" (192.0.2.0/24, 2001:db8::/32; a longest match also takes an address)",
                            q);
      return f;
    }
    api::PrefixSnapshot snap;
    if (by != "more") {
      // Why a prefix is missing or has fewer routes than expected: the
      // routes to it that import refused, beside those in the table.
      if (api::find_prefix(*p, longest, lookup, snap)) {
        const auto found = net::Prefix::parse(snap.prefix);
        if (found && *found != *p) add_refused(server, *found, f);
        f.prefixes.push_back(std::move(snap));
      }
      add_refused(server, *p, f);
      return f;
    }
    for (const net::Prefix& m : more_specifics(server.table(), *p, f.truncated))
      if (lookup(m, snap)) f.prefixes.push_back(snap);
    return f;
  }
  table::PolicyTerm term;
  term.name = "search";
  term.then = table::PolicyThen::kAccept;
  if (by == "community") {
    std::string why;
    auto pattern = table::CommunityPattern::parse(q, &why);
    if (!pattern) {
      f.error = fmt::format("not a community: \"{}\" ({}; 65000:100, 65000:*, 65000:1:2, rt:65000:1)", q, why);
      return f;
    }
    term.match.community.push_back(*pattern);
  } else {
    term.match.as_path = q;
  }
  std::string why;
  auto chain = table::PolicyChain::compile({table::PolicyDef{"looking-glass", {term}, table::PolicyThen::kReject}},
                                           &why);
  if (!chain) {
    f.error = fmt::format("not an AS path expression: \"{}\" ({})", q, why);
    return f;
  }
  for (const auto& entry : matching(server.table(), *chain, f.truncated)) {
    const auto& routes = entry.second;  // a structured binding: not capturable by clang's lambdas
    api::PrefixSnapshot snap;
    if (!lookup(entry.first, snap)) continue;  // gone since the walk
    std::erase_if(snap.routes, [&](const api::RouteSnapshot& r) { return !routes.contains({r.peer, r.path_id}); });
    if (!snap.routes.empty()) f.prefixes.push_back(std::move(snap));
  }
  return f;
}

std::string communities_text(const codec::PathAttributes& a) {
  std::string out;
  for (uint32_t c : a.communities) out += fmt::format("{}{}:{}", out.empty() ? "" : " ", c >> 16, c & 0xffff);
  for (const auto& c : a.large_communities)
    out += fmt::format("{}{}:{}:{}", out.empty() ? "" : " ", c.global, c.local1, c.local2);
  return out;
}

std::string route_row(const api::PrefixSnapshot& p, const api::RouteSnapshot& r) {
  const codec::PathAttributes& a = r.attributes;
  std::string path;
  if (a.as_path) table::as_path_text(*a.as_path, path);
  std::string next_hop;
  if (auto nh = api::route_next_hop(a, p.family)) {
    next_hop = nh->global.to_string();
    if (nh->link_local) next_hop += " (" + nh->link_local->to_string() + ")";
  }
  auto number = [](const std::optional<uint32_t>& v) { return v ? std::to_string(*v) : std::string(); };
  return fmt::format(
      "<tr{}><td><a href=\"/api/routes/{}/explain\">{}</a></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
      "<td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
      r.best ? " class=\"best\"" : "", api::html_escape(p.prefix), api::html_escape(p.prefix),
      r.best ? "best" : (r.stale ? "stale" : ""), api::html_escape(r.peer), api::html_escape(next_hop),
      api::html_escape(path), api::html_escape(communities_text(a)), number(a.local_pref), number(a.med),
      r.rpki, r.aspa, api::html_escape(r.lost_by));
}

std::string page(std::string_view by, const std::string& q, const Found& f) {
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>petrel looking glass</title>"
      "<style>body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse}"
      "td,th{padding:.25em .8em;border-bottom:1px solid #ccc;text-align:left}td.n{text-align:right}"
      "tr.best td{font-weight:bold}.error{color:#b00}</style></head><body>\n"
      "<h1>Looking glass</h1>\n<p><a href=\"/\">Status page</a></p>\n";
  out += api::looking_glass_form(by, q);
  if (!f.error.empty()) {
    out += fmt::format("<p class=\"error\" id=\"lg-error\">{}</p>\n", api::html_escape(f.error));
  } else if (!q.empty()) {
    size_t routes = 0;
    for (const auto& p : f.prefixes) routes += p.routes.size();
    out += fmt::format("<p id=\"lg-summary\">{} prefixes, {} routes{}.</p>\n", f.prefixes.size(), routes,
                       f.truncated ? fmt::format(" (the first {} prefixes only)", kLookingGlassPrefixes) : "");
    if (!f.prefixes.empty()) {
      out += "<table id=\"lg-routes\"><tr><th>prefix</th><th></th><th>peer</th><th>next hop</th><th>AS path</th>"
             "<th>communities</th><th>local pref</th><th>MED</th><th>RPKI</th><th>ASPA</th>"
             "<th>not best: decided by</th></tr>\n";
      for (const auto& p : f.prefixes)
        for (const auto& r : p.routes) out += route_row(p, r);
      out += "</table>\n";
    }
    if (!f.refused.empty()) {
      out += "<h2>Refused by import policy</h2>\n<table id=\"lg-refused\"><tr><th>prefix</th><th>peer</th>"
             "<th>path id</th><th>refused by</th><th>AS path</th><th>communities</th></tr>\n";
      for (const auto& [peer, e] : f.refused) {
        std::string path, communities;
        if (e.attrs) {
          const codec::PathAttributes a = e.attrs->decode();
          if (a.as_path) table::as_path_text(*a.as_path, path);
          communities = communities_text(a);
        }
        out += fmt::format("<tr><td>{}</td><td>{}</td><td class=\"n\">{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                           api::html_escape(e.prefix.to_string()), api::html_escape(peer), e.path_id,
                           api::html_escape(e.reason), api::html_escape(path), api::html_escape(communities));
      }
      out += "</table>\n";
    }
  }
  out += "</body></html>\n";
  return out;
}

api::Response html(unsigned status, std::string body) {
  api::Response r;
  r.status = status;
  r.content_type = api::kHtmlType;
  r.body = std::move(body);
  return r;
}

}  // namespace

api::Response looking_glass(const Server& server, std::string_view method, const api::QueryArgs& args,
                            const api::RouteLookup& lookup) {
  api::Response r;
  if (api::refuse_method(method, r)) return r;
  std::string by = "longest", q;
  for (const auto& [k, v] : args) {
    if (k == "by") {
      by = v;
    } else if (k == "q") {
      q = v;
    } else {
      return html(400, page(by, q, failed(fmt::format("unknown parameter \"{}\" (by, q)", k))));
    }
  }
  if (by != "exact" && by != "longest" && by != "more" && by != "community" && by != "as-path")
    return html(400, page("longest", q,
                          failed(fmt::format("by is exact, longest, more, community or as-path, not \"{}\"", by))));
  if (q.empty()) return html(200, page(by, q, Found{}));
  const bool walks = by == "more" || by == "community" || by == "as-path";
  bool expected = false;
  if (walks && !walking.compare_exchange_strong(expected, true))
    return html(503, page(by, q, failed("another search is walking the table; try again")));
  struct Done {
    bool walks;
    ~Done() {
      if (walks) walking.store(false);
    }
  } done{walks};
  Found f = search(server, by, q, lookup);
  return html(f.error.empty() ? 200 : 400, page(by, q, f));
}

}  // namespace petrel::daemon
