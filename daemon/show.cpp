// `petrel show`: a command-line client of the daemon's JSON API
// (docs/http-api.md). Aligned tables for people, the API's JSON with
// --json for scripts.
//
// The requests go through daemon/http_client.h (shared with `petrel
// top`), one or a few per command. The JSON is read with nlohmann::json without exceptions (a body that does
// not parse is reported, not thrown).
#include "daemon/show.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/cli.h"
#include "daemon/config.h"
#include "daemon/http_client.h"
#include "daemon/text_table.h"

namespace petrel::daemon {

namespace {

using nlohmann::json;

constexpr std::string_view kUsage =
    "usage: petrel show [--http ADDRESS:PORT | -c FILE] [--json] WHAT\n"
    "\n"
    "WHAT:\n"
    "  status               the router, its memory and its sessions\n"
    "  peers                one line per peer\n"
    "  peer NAME            one peer in full\n"
    "  route PREFIX [--peer P]  the routes to PREFIX (or to the longest prefix covering an\n"
    "                       address); with --peer, whether and how the best one goes to P\n"
    "  routes [--peer P]    every route in the table (from peer P)\n"
    "\n"
    "options:\n"
    "  --http ADDRESS:PORT  the daemon's [http] listen address (default 127.0.0.1:8179,\n"
    "                       [::1]:8179 for IPv6)\n"
    "  -c, --config FILE    take the address from this file's [http] listen\n"
    "  --json               the API's JSON as it comes, for scripts\n";

// Peer names may be 64 characters and next hops with a link-local
// address over 50: a longer cell than this ends its line, and the rest of
// the row follows on the next (TextTable), so the table fits a terminal.
constexpr size_t kNameWidth = 24;
constexpr size_t kNextHopWidth = 40;

constexpr size_t kMaxPages = 100000;  // of 1000 prefixes: far beyond a full table

// A JSON value as text for a cell: strings bare, null as "-".
std::string cell(const json& v) {
  if (v.is_null()) return "-";
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

std::string at(const json& obj, std::string_view key) {
  if (!obj.is_object()) return "-";
  auto it = obj.find(key);
  return it == obj.end() ? "-" : cell(*it);
}

std::string duration(const json& v) { return v.is_number() ? duration_text(v.get<int64_t>()) : "-"; }

std::string as_path(const json& attrs) {
  std::string out;
  if (!attrs.is_object() || !attrs.contains("as_path")) return "-";
  for (const auto& seg : attrs["as_path"]) {
    bool set = seg.value("type", "") == "as_set" || seg.value("type", "") == "AS_SET";
    std::string part;
    for (const auto& asn : seg.value("asns", json::array())) part += (part.empty() ? "" : " ") + cell(asn);
    if (!out.empty()) out += ' ';
    out += set ? "{" + part + "}" : part;
  }
  return out.empty() ? "(empty)" : out;
}

void print_status(const json& j) {
  fmt::print("petrel {}  AS{}  router ID {}  up {}\n", at(j, "version"), at(j, "asn"), at(j, "router_id"),
             duration(j.value("uptime_seconds", json())));
  const json& p = j.contains("peers") ? j["peers"] : json();
  fmt::print("sessions: {} established of {} configured\n", at(p, "established"), at(p, "configured"));
  const json& m = j.contains("memory") ? j["memory"] : json();
  if (m.is_object() && m.value("allocator", json()).is_string()) {
    TextTable t({"memory", "MB"});
    for (const char* k : {"allocated", "active", "metadata", "resident", "mapped", "retained"})
      if (m.contains(k) && m[k].is_number())
        t.add({k, fmt::format("{:.1f}", m[k].get<double>() / 1e6)});
    fmt::print("{}", t.text());
  } else {
    fmt::print("memory: not available (not built with jemalloc)\n");
  }
}

// One of update_prefixes' counts per family: "ipv4-unicast:3 ipv6-unicast:2".
std::string per_family(const json& peer, std::string_view count) {
  std::string out;
  if (!peer.contains("update_prefixes") || !peer["update_prefixes"].is_object()) return "-";
  for (const auto& [fam, v] : peer["update_prefixes"].items()) {
    if (!out.empty()) out += ' ';
    out += fmt::format("{}:{}", fam, at(v, count));
  }
  return out.empty() ? "-" : out;
}

std::string routes_of(const json& peer) { return per_family(peer, "received"); }
// Refused by import policy: an external peer without `import` refuses
// everything (RFC 8212), which is why a session can be up with 0 routes.
std::string refused_of(const json& peer) { return per_family(peer, "refused"); }

void print_peers(const json& j) {
  TextTable t({"NAME", "ADDRESS", "AS", "STATE", "FOR", "ROUTES", "REFUSED", "LAST ERROR"}, {kNameWidth});
  for (const auto& p : j.value("peers", json::array()))
    t.add({at(p, "name"), at(p, "address"), at(p, "remote_asn"), at(p, "state"),
           duration(p.value("uptime_seconds", json())), routes_of(p), refused_of(p), at(p, "last_error")});
  fmt::print("{}", t.text());
}

void print_peer(const json& p) {
  TextTable t({"field", "value"});
  for (const char* k : {"name", "address", "remote_asn", "description", "state", "enabled", "passive",
                        "last_error", "established_total", "connections_refused"})
    t.add({k, at(p, k)});
  t.add({"uptime", duration(p.value("uptime_seconds", json()))});
  t.add({"routes", routes_of(p)});
  t.add({"refused by import", refused_of(p)});
  if (p.contains("messages") && p["messages"].is_object())
    for (const auto& [dir, counts] : p["messages"].items())
      if (counts.is_object())
        for (const auto& [type, n] : counts.items()) t.add({fmt::format("messages {} {}", dir, type), cell(n)});
  fmt::print("{}", t.text());
}

// A route's next hop: the global address, then RFC 2545's link-local one
// in brackets when the peer sent it ("2001:db8::2 (fe80::2)").
std::string next_hop_of(const json& route) {
  std::string global = at(route, "next_hop");
  std::string link_local = at(route, "next_hop_link_local");
  return link_local == "-" ? global : fmt::format("{} ({})", global, link_local);
}

// The routes of a page of /api/routes, one line each.
void add_route_rows(TextTable& t, const json& page) {
  for (const auto& pre : page.value("prefixes", json::array())) {
    for (const auto& r : pre.value("routes", json::array())) {
      const json& a = r.contains("attributes") ? r["attributes"] : json();
      t.add({at(pre, "prefix"), r.value("best", false) ? "*" : "-", at(r, "peer"), next_hop_of(r), as_path(a),
             at(a, "origin"), at(a, "local_pref"), at(a, "med"), at(r, "rpki"), at(r, "aspa"),
             r.value("best", false) ? "" : at(r, "lost_by")});
    }
  }
}

TextTable route_table() {
  return TextTable({"PREFIX", "BEST", "PEER", "NEXT HOP", "AS PATH", "ORIGIN", "LOCPRF", "MED", "RPKI", "ASPA",
                    "LOST BY"},
                   {0, 0, kNameWidth, kNextHopWidth});
}

struct Options : ApiOptions {
  bool json = false;
  std::string peer;
  std::vector<std::string> words;
  // petrel policy test (policy_main): the chain, the direction, examples.
  std::string policy, direction, limit;
};

// GETs path; prints the failure and returns nullopt if there is no JSON
// answer with status 200.
std::optional<json> get_json(const Options& o, const std::string& path) {
  std::string err;
  auto r = http_get(o.http, path, err);
  if (!r) {
    fmt::print(stderr,
               "petrel show: cannot reach the daemon's HTTP API at {}: {}\n"
               "(is `petrel run` running, with [http] listen at that address? --http ADDRESS:PORT names another, "
               "-c FILE takes it from the configuration)\n",
               o.http, err);
    return std::nullopt;
  }
  json j = json::parse(r->body, nullptr, false);
  if (j.is_discarded()) {
    fmt::print(stderr, "petrel show: {} answered {} with a body that is not JSON\n", o.http, r->status);
    return std::nullopt;
  }
  if (r->status != 200) {
    fmt::print(stderr, "petrel show: {}\n", j.is_object() && j.contains("error") ? cell(j["error"])
                                                                               : fmt::format("HTTP {}", r->status));
    return std::nullopt;
  }
  return j;
}

// The export gate to one peer (GET .../explain?peer=), in a few lines.
void print_export(const json& e) {
  const std::string peer = cell(e["peer"]);
  fmt::print("\nTo {}: {}\n", peer, e["sent"].get<bool>() ? "sent" : "not sent");
  fmt::print("  policy      {}", cell(e["policy"]));
  if (e["policy_verdict"].is_string())
    fmt::print(": {} by {}", cell(e["policy_verdict"]), cell(e["decided_by"]));
  fmt::print("\n");
  if (!e["changes"].empty()) {
    std::vector<std::string> terms;
    for (const auto& c : e["changes"]) terms.push_back(cell(c));
    fmt::print("  changes     {}\n", fmt::join(terms, ", "));
  }
  if (!e["established"].get<bool>()) {
    fmt::print("  rules       (the session is down)\n");
    return;
  }
  fmt::print("  rules       {}\n", cell(e["rules"]));
  if (!e["family_negotiated"].get<bool>()) fmt::print("  family      not negotiated with {}\n", peer);
  if (!e["attributes"].is_object()) return;
  const json& a = e["attributes"];
  if (a.contains("as_path")) {
    std::vector<std::string> asns;
    for (const auto& seg : a["as_path"]) {
      std::vector<std::string> in;
      for (const auto& n : seg["asns"]) in.push_back(cell(n));
      const std::string joined = fmt::format("{}", fmt::join(in, seg["type"] == "AS_SET" ? "," : " "));
      asns.push_back(seg["type"] == "AS_SET" ? "{" + joined + "}" : joined);
    }
    fmt::print("  as path     {}\n", fmt::join(asns, " "));
  }
  if (a.contains("next_hop")) fmt::print("  next hop    {}\n", cell(a["next_hop"]));
  for (const char* key : {"communities", "large_communities"}) {
    if (!a.contains(key)) continue;
    std::vector<std::string> cs;
    for (const auto& c : a[key]) cs.push_back(cell(c));
    fmt::print("  {:<11} {}\n", key == std::string_view("communities") ? "communities" : "large", fmt::join(cs, " "));
  }
  if (a.contains("local_pref")) fmt::print("  local pref  {}\n", cell(a["local_pref"]));
  if (a.contains("med")) fmt::print("  med         {}\n", cell(a["med"]));
}

constexpr std::string_view kPolicyUsage =
    "usage: petrel policy test --peer NAME --direction import|export --policy NAME[,NAME...]\n"
    "                          [--limit N] [--http ADDRESS:PORT | -c FILE] [--json]\n"
    "\n"
    "A dry run against the running daemon's table (docs/policy.md): what the\n"
    "peer's import or export would do with the named chain of the running\n"
    "configuration's [[policy]]s and [[filter]]s (or \"all\", \"none\") instead of\n"
    "its own. Nothing changes. Export: every best route through the peer's\n"
    "export gate, now and with the chain. Import: the peer's routes in the\n"
    "table and its kept refused ones through the chain.\n"
    "\n"
    "options:\n"
    "  --limit N            examples to list, 0..1000 (default 20)\n"
    "  --http, -c, --json   as for petrel show\n";

// petrel policy test: GET /api/policy/test, a summary for people.
int run_policy_test(const Options& o) {
  if (o.peer.empty() || o.policy.empty() || (o.direction != "import" && o.direction != "export")) {
    fmt::print(stderr, "petrel policy test: --peer, --direction import|export and --policy are required\n{}",
               kPolicyUsage);
    return kExitUsage;
  }
  std::string path = "/api/policy/test?peer=" + url_encode(o.peer) + "&direction=" + o.direction +
                     "&policy=" + url_encode(o.policy);
  if (!o.limit.empty()) path += "&limit=" + url_encode(o.limit);
  auto j = get_json(o, path);
  if (!j) return kExitFailure;
  if (o.json) {
    fmt::print("{}\n", j->dump());
    return kExitOk;
  }
  fmt::print("{} of {}: {} instead of {}: {} routes examined\n", o.direction, cell((*j)["peer"]), cell((*j)["policy"]),
             cell((*j)["current"]), cell((*j)["examined"]));
  fmt::print("  newly accepted  {}\n  newly refused   {}\n  changed         {}\n  unchanged       {} accepted, {} "
             "refused\n",
             cell((*j)["newly_accepted"]), cell((*j)["newly_refused"]), cell((*j)["changed"]),
             cell((*j)["unchanged_accepted"]), cell((*j)["unchanged_refused"]));
  for (const auto& e : (*j)["examples"])
    fmt::print("  {:<15} {}  {} -> {}\n", cell(e["change"]), cell(e["prefix"]), cell(e["before"]["decided_by"]),
               cell(e["after"]["decided_by"]));
  return kExitOk;
}

int run(const Options& o) {
  const std::string& what = o.words[0];
  auto want_args = [&](size_t n) {
    if (o.words.size() == n + 1) return true;
    fmt::print(stderr, "petrel show {}: {}\n{}", what, n == 0 ? "takes no argument" : "needs one argument", kUsage);
    return false;
  };
  if (what == "policy-test") return run_policy_test(o);
  if (!o.policy.empty() || !o.direction.empty() || !o.limit.empty()) {
    fmt::print(stderr, "petrel show: --policy, --direction and --limit go with petrel policy test\n{}", kUsage);
    return kExitUsage;
  }
  if (what != "routes" && what != "route" && !o.peer.empty()) {
    fmt::print(stderr, "petrel show: --peer goes with route and routes\n{}", kUsage);
    return kExitUsage;
  }
  std::string path;
  if (what == "status") {
    if (!want_args(0)) return kExitUsage;
    path = "/api/status";
  } else if (what == "peers") {
    if (!want_args(0)) return kExitUsage;
    path = "/api/peers";
  } else if (what == "peer") {
    if (!want_args(1)) return kExitUsage;
    path = "/api/peers/" + url_encode(o.words[1]);
  } else if (what == "route") {
    if (!want_args(1)) return kExitUsage;
    // A usage error (2) said in the command's words, not the API's 400.
    const std::string& asked = o.words[1];
    if (!net::IpAddress::parse(asked) && !net::Prefix::parse(asked)) {
      fmt::print(stderr, "petrel show route: expected a prefix (192.0.2.0/24, 2001:db8::/32) or an address, got \"{}\"\n{}",
                 asked, kUsage);
      return kExitUsage;
    }
    path = "/api/routes?match=longest&prefix=" + url_encode(o.words[1]);
  } else if (what == "routes") {
    if (!want_args(0)) return kExitUsage;
    path = "/api/routes?limit=1000";
    if (!o.peer.empty()) path += "&peer=" + url_encode(o.peer);
  } else {
    fmt::print(stderr, "petrel show: unknown \"{}\"\n{}", what, kUsage);
    return kExitUsage;
  }
  // A misspelt --peer would list no route at all, as a peer without any
  // does: ask for the peer first ("local" and "injected" are Petrel's own
  // routes, not peers), so that the answer is "no peer named ...".
  if (!o.peer.empty() && o.peer != "local" && o.peer != "injected" &&
      !get_json(o, "/api/peers/" + url_encode(o.peer)))
    return kExitFailure;
  auto j = get_json(o, path);
  if (!j) return kExitFailure;
  if (what == "routes") {
    // Page after page, the prefixes gathered into one answer.
    json all = json::array();
    TextTable t = route_table();
    for (size_t pages = 0; pages < kMaxPages; ++pages) {
      if (o.json) {
        for (auto& p : (*j)["prefixes"]) all.push_back(std::move(p));
      } else {
        add_route_rows(t, *j);
      }
      if (!j->contains("next_cursor") || !(*j)["next_cursor"].is_string()) break;
      j = get_json(o, path + "&cursor=" + url_encode((*j)["next_cursor"].get<std::string>()));
      if (!j) return kExitFailure;
    }
    if (o.json) {
      fmt::print("{}\n", json{{"prefixes", std::move(all)}}.dump());
    } else {
      fmt::print("{}", t.text());
    }
    return kExitOk;
  }
  if (o.json) {
    fmt::print("{}\n", j->dump());
    return kExitOk;
  }
  if (what == "status") {
    print_status(*j);
  } else if (what == "peers") {
    print_peers(*j);
  } else if (what == "peer") {
    print_peer(*j);
  } else {
    if ((*j)["prefixes"].empty()) {
      fmt::print(stderr, "petrel show: no route to {} in the table\n", o.words[1]);
      return kExitFailure;
    }
    TextTable t = route_table();
    add_route_rows(t, *j);
    fmt::print("{}", t.text());
    if (!o.peer.empty()) {
      const std::string prefix = (*j)["prefixes"][0]["prefix"].get<std::string>();
      auto why = get_json(o, "/api/routes/" + prefix + "/explain?peer=" + url_encode(o.peer));
      if (!why) return kExitFailure;
      print_export((*why)["export"]);
    }
  }
  return kExitOk;
}

}  // namespace

int show_main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    auto value = [&](std::string& out) {
      auto v = option_value(argc, argv, i, "petrel show", kUsage);
      if (v) out = std::move(*v);
      return v.has_value();
    };
    if (ApiOption taken = api_option(argc, argv, i, o, "petrel show", kUsage); taken != ApiOption::kNotOne) {
      if (taken == ApiOption::kUsage) return kExitUsage;
    } else if (a == "-h" || a == "--help") {
      fmt::print("{}", kUsage);
      return kExitOk;
    } else if (a == "--json") {
      o.json = true;
    } else if (a == "--peer") {
      if (!value(o.peer)) return kExitUsage;
    } else if (a == "--policy") {
      if (!value(o.policy)) return kExitUsage;
    } else if (a == "--direction") {
      if (!value(o.direction)) return kExitUsage;
    } else if (a == "--limit") {
      if (!value(o.limit)) return kExitUsage;
    } else if (a.starts_with("--peer=")) {
      o.peer = std::string(a.substr(7));
    } else if (a.starts_with("-") && a.size() > 1) {
      fmt::print(stderr, "petrel show: unknown option \"{}\"\n{}", a, kUsage);
      return kExitUsage;
    } else {
      o.words.emplace_back(a);
    }
  }
  if (o.words.empty()) {
    fmt::print(stderr, "petrel show: what to show?\n{}", kUsage);
    return kExitUsage;
  }
  if (auto status = api_address("petrel show", o, kUsage)) return *status;
  try {
    return run(o);
  } catch (const std::exception& e) {  // a JSON value of an unexpected type
    fmt::print(stderr, "petrel show: unexpected answer: {}\n", e.what());
    return kExitFailure;
  }
}

int policy_main(int argc, char** argv) {
  const std::string_view first = argc > 1 ? argv[1] : "";
  if (first == "-h" || first == "--help") {
    fmt::print("{}", kPolicyUsage);
    return kExitOk;
  }
  if (first != "test") {
    fmt::print(stderr, "petrel policy: expected \"test\"\n{}", kPolicyUsage);
    return kExitUsage;
  }
  // petrel show policy-test, with the same options.
  std::vector<char*> args;
  static char show[] = "show", what[] = "policy-test";
  args.push_back(show);
  args.push_back(what);
  for (int i = 2; i < argc; ++i) {
    if (std::string_view(argv[i]) == "-h" || std::string_view(argv[i]) == "--help") {
      fmt::print("{}", kPolicyUsage);
      return kExitOk;
    }
    args.push_back(argv[i]);
  }
  return show_main(static_cast<int>(args.size()), args.data());
}

}  // namespace petrel::daemon
