// The control channel's requests and answers (control_protocol.h).
//
// Requests:
//   {"command": "reload"}
//   {"command": "peer", "peer": NAME, "action": "disable"|"enable"|"reset"|"soft-in"|"soft-out"|"shutdown",
//    "message": TEXT}
//   {"command": "announce", "prefix": P, "next_hop": A, "communities": [..], "large_communities": [..],
//    "med": N, "local_pref": N, "origin": "igp"|"egp"|"incomplete"}
//   {"command": "withdraw", "prefix": P}
//   {"command": "routes"}
//   {"command": "dump", "file": ABSOLUTE_PATH}   (file optional)
// Answers: {"ok": true, ...} or {"ok": false, "error": TEXT, "details": [..]}.
#include "daemon/control_protocol.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <limits>

#include "table/filter.h"

namespace petrel::daemon::control {

namespace {

using Json = nlohmann::json;

// Deeper values are dropped while parsing: no request needs them, and a
// hostile line must not cost more than its bytes.
constexpr int kMaxDepth = 3;
// RFC 9003 section 2: the shutdown communication is at most 255 octets.
constexpr size_t kMaxMessageBytes = 255;
constexpr size_t kMaxNameBytes = 256;

ParseResult fail(std::string text) { return ParseResult{std::nullopt, std::move(text)}; }

// The keys a command takes; any other key is an error (a typo must not
// pass silently).
std::optional<std::string> only_keys(const Json& j, std::initializer_list<std::string_view> keys) {
  for (const auto& [k, v] : j.items()) {
    (void)v;
    if (std::find(keys.begin(), keys.end(), k) == keys.end())
      return "unknown key \"" + k.substr(0, 64) + "\"";
  }
  return std::nullopt;
}

std::optional<std::string> string_at(const Json& j, const char* key, size_t max, std::string& out, bool required) {
  auto it = j.find(key);
  if (it == j.end()) {
    if (required) return std::string("missing \"") + key + "\"";
    return std::nullopt;
  }
  if (!it->is_string()) return std::string("\"") + key + "\" must be a string";
  const auto& s = it->get_ref<const std::string&>();
  if (s.size() > max) return std::string("\"") + key + "\" is longer than " + std::to_string(max) + " bytes";
  out = s;
  return std::nullopt;
}

std::optional<std::string> u32_at(const Json& j, const char* key, std::optional<uint32_t>& out) {
  auto it = j.find(key);
  if (it == j.end()) return std::nullopt;
  if (!it->is_number_unsigned() || it->get<uint64_t>() > std::numeric_limits<uint32_t>::max())
    return std::string("\"") + key + "\" must be an integer 0..4294967295";
  out = static_cast<uint32_t>(it->get<uint64_t>());
  return std::nullopt;
}

std::optional<std::string> prefix_at(const Json& j, net::Prefix& out) {
  std::string s;
  if (auto e = string_at(j, "prefix", 64, s, true)) return e;
  auto p = net::Prefix::parse(s, net::Prefix::HostBits::kReject);
  if (!p) return "\"prefix\" must be ADDRESS/LENGTH with no host bits set, got \"" + s + "\"";
  out = *p;
  return std::nullopt;
}

template <typename T, typename Parse>
std::optional<std::string> list_at(const Json& j, const char* key, std::vector<T>& out, Parse parse) {
  auto it = j.find(key);
  if (it == j.end()) return std::nullopt;
  if (!it->is_array()) return std::string("\"") + key + "\" must be an array of strings";
  if (it->size() > kMaxCommunities)
    return std::string("\"") + key + "\" holds more than " + std::to_string(kMaxCommunities) + " values";
  for (const Json& v : *it) {
    if (!v.is_string() || v.get_ref<const std::string&>().size() > 64)
      return std::string("\"") + key + "\" must be an array of strings";
    auto c = parse(v.get_ref<const std::string&>());
    if (!c) return std::string("\"") + key + "\": not a community: \"" + v.get<std::string>() + "\"";
    if (std::find(out.begin(), out.end(), *c) == out.end()) out.push_back(*c);
  }
  return std::nullopt;
}

ParseResult parse_peer(const Json& j) {
  if (auto e = only_keys(j, {"command", "peer", "action", "message"})) return fail(*e);
  PeerCommand c;
  std::string action;
  if (auto e = string_at(j, "peer", kMaxNameBytes, c.peer, true)) return fail(*e);
  if (auto e = string_at(j, "action", 32, action, true)) return fail(*e);
  if (auto e = string_at(j, "message", kMaxMessageBytes, c.message, false)) return fail(*e);
  static constexpr PeerAction kAll[] = {PeerAction::kDisable, PeerAction::kEnable, PeerAction::kReset,
                                        PeerAction::kSoftIn,  PeerAction::kSoftOut, PeerAction::kShutdown};
  auto it = std::find_if(std::begin(kAll), std::end(kAll), [&](PeerAction a) { return action == peer_action_name(a); });
  if (it == std::end(kAll))
    return fail("\"action\" must be one of disable, enable, reset, soft-in, soft-out, shutdown");
  c.action = *it;
  if (!c.message.empty() && c.action != PeerAction::kShutdown && c.action != PeerAction::kDisable)
    return fail("\"message\" goes only with shutdown and disable");
  return ParseResult{ControlRequest{std::move(c)}, {}};
}

ParseResult parse_announce(const Json& j) {
  if (auto e = only_keys(j, {"command", "prefix", "next_hop", "origin", "communities", "large_communities", "med",
                             "local_pref"}))
    return fail(*e);
  OriginateConfig o;
  if (auto e = prefix_at(j, o.prefix)) return fail(*e);
  std::string nh;
  if (auto e = string_at(j, "next_hop", 64, nh, false)) return fail(*e);
  if (!nh.empty()) {
    auto a = net::IpAddress::parse(nh);
    if (!a || a->is_multicast() || a->is_unspecified())
      return fail("\"next_hop\" must be a unicast IP address, got \"" + nh + "\"");
    if (a->family() != o.prefix.family() && o.prefix.family() == net::IpFamily::V6)
      return fail("an IPv6 prefix needs an IPv6 next hop");
    o.next_hop = *a;
  }
  std::string origin;
  if (auto e = string_at(j, "origin", 16, origin, false)) return fail(*e);
  if (origin == "egp") o.origin = codec::Origin::kEgp;
  else if (origin == "incomplete") o.origin = codec::Origin::kIncomplete;
  else if (!origin.empty() && origin != "igp") return fail("\"origin\" must be igp, egp or incomplete");
  if (auto e = list_at(j, "communities", o.communities, [](std::string_view s) { return table::parse_community(s); }))
    return fail(*e);
  if (auto e = list_at(j, "large_communities", o.large_communities,
                       [](std::string_view s) { return table::parse_large_community(s); }))
    return fail(*e);
  if (auto e = u32_at(j, "med", o.med)) return fail(*e);
  if (auto e = u32_at(j, "local_pref", o.local_pref)) return fail(*e);
  return ParseResult{ControlRequest{Announce{std::move(o)}}, {}};
}

}  // namespace

const char* peer_action_name(PeerAction a) {
  switch (a) {
    case PeerAction::kDisable: return "disable";
    case PeerAction::kEnable: return "enable";
    case PeerAction::kReset: return "reset";
    case PeerAction::kSoftIn: return "soft-in";
    case PeerAction::kSoftOut: return "soft-out";
    case PeerAction::kShutdown: return "shutdown";
  }
  return "?";
}

ParseResult parse_request(std::string_view line) {
  if (line.size() > kMaxLineBytes) return fail("the request is longer than " + std::to_string(kMaxLineBytes) + " bytes");
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  Json j = Json::parse(
      line.begin(), line.end(),
      [](int depth, Json::parse_event_t, Json&) { return depth <= kMaxDepth; }, false);
  if (j.is_discarded()) return fail("not a JSON value");
  if (!j.is_object()) return fail("expected a JSON object");
  std::string command;
  if (auto e = string_at(j, "command", 32, command, true)) return fail(*e);
  if (command == "reload" || command == "routes") {
    if (auto e = only_keys(j, {"command"})) return fail(*e);
    if (command == "reload") return ParseResult{ControlRequest{Reload{}}, {}};
    return ParseResult{ControlRequest{ListRoutes{}}, {}};
  }
  if (command == "dump") {
    if (auto e = only_keys(j, {"command", "file"})) return fail(*e);
    Dump d;
    if (auto e = string_at(j, "file", kMaxDumpPathBytes, d.file, false)) return fail(*e);
    if (j.contains("file") && (d.file.empty() || d.file.front() != '/'))
      return fail("\"file\" must be an absolute path");
    if (d.file.find('\0') != std::string::npos) return fail("\"file\" must not hold a NUL byte");
    if (d.file.ends_with("/")) return fail("\"file\" names a directory, not a file");
    return ParseResult{ControlRequest{std::move(d)}, {}};
  }
  if (command == "peer") return parse_peer(j);
  if (command == "announce") return parse_announce(j);
  if (command == "withdraw") {
    if (auto e = only_keys(j, {"command", "prefix"})) return fail(*e);
    Withdraw w;
    if (auto e = prefix_at(j, w.prefix)) return fail(*e);
    return ParseResult{ControlRequest{w}, {}};
  }
  return fail("\"command\" must be one of reload, peer, announce, withdraw, routes, dump");
}

ArgsResult request_from_args(const std::vector<std::string_view>& args) {
  auto usage = [](std::string text) { return ArgsResult{{}, std::move(text)}; };
  auto dump = [](const Json& j) { return ArgsResult{j.dump(-1, ' ', false, Json::error_handler_t::replace), {}}; };
  if (args.empty()) return usage("no command given");
  const std::string_view cmd = args[0];
  if (cmd == "reload") {
    if (args.size() != 1) return usage("reload takes no arguments");
    return dump(Json{{"command", "reload"}});
  }
  if (cmd == "peer") {
    if (args.size() < 3) return usage("expected: peer NAME disable|enable|reset|shutdown");
    Json j{{"command", "peer"}, {"peer", std::string(args[1])}};
    const std::string_view action = args[2];
    if (action == "disable" || action == "enable") {
      if (args.size() != 3) return usage(std::string(action) + " takes no arguments");
      j["action"] = std::string(action);
    } else if (action == "reset") {
      if (args.size() > 4) return usage("reset takes at most one of --soft-in, --soft-out");
      if (args.size() == 3) j["action"] = "reset";
      else if (args[3] == "--soft-in") j["action"] = "soft-in";
      else if (args[3] == "--soft-out") j["action"] = "soft-out";
      else return usage("reset takes --soft-in or --soft-out, not \"" + std::string(args[3]) + "\"");
    } else if (action == "shutdown") {
      j["action"] = "shutdown";
      if (args.size() == 5 && (args[3] == "--message" || args[3] == "-m")) j["message"] = std::string(args[4]);
      else if (args.size() != 3) return usage("expected: peer NAME shutdown [--message TEXT]");
    } else {
      return usage("expected disable, enable, reset or shutdown after the peer's name, got \"" + std::string(action) +
                   "\"");
    }
    return dump(j);
  }
  if (cmd == "route") {
    if (args.size() == 2 && args[1] == "list") return dump(Json{{"command", "routes"}});
    if (args.size() < 3 || (args[1] != "announce" && args[1] != "withdraw"))
      return usage("expected: route announce PREFIX [...] | route withdraw PREFIX | route list");
    Json j{{"command", std::string(args[1])}, {"prefix", std::string(args[2])}};
    if (args[1] == "withdraw") {
      if (args.size() != 3) return usage("route withdraw takes only the prefix");
      return dump(j);
    }
    for (size_t i = 3; i < args.size();) {
      const std::string_view word = args[i++];
      auto value = [&]() -> std::optional<std::string> {
        if (i >= args.size()) return std::nullopt;
        return std::string(args[i++]);
      };
      if (word == "next-hop" || word == "origin") {
        auto v = value();
        if (!v) return usage(std::string(word) + " needs a value");
        j[word == "next-hop" ? "next_hop" : "origin"] = *v;
      } else if (word == "med" || word == "local-pref") {
        auto v = value();
        uint64_t n = 0;
        if (!v || v->empty() || v->size() > 10 ||
            !std::all_of(v->begin(), v->end(), [](char c) { return c >= '0' && c <= '9'; }) ||
            (n = std::stoull(*v)) > std::numeric_limits<uint32_t>::max())
          return usage(std::string(word) + " needs a number 0..4294967295");
        j[word == "med" ? "med" : "local_pref"] = n;
      } else if (word == "communities" || word == "large-communities") {
        Json list = Json::array();
        while (i < args.size() && args[i] != "next-hop" && args[i] != "origin" && args[i] != "med" &&
               args[i] != "local-pref" && args[i] != "communities" && args[i] != "large-communities")
          list.push_back(std::string(args[i++]));
        if (list.empty()) return usage(std::string(word) + " needs at least one value");
        j[word == "communities" ? "communities" : "large_communities"] = list;
      } else {
        return usage("unexpected \"" + std::string(word) +
                     "\"; expected next-hop, communities, large-communities, med, local-pref or origin");
      }
    }
    return dump(j);
  }
  if (cmd == "dump") {
    // The client made FILE absolute (the daemon's directory is not the
    // caller's).
    if (args.size() > 2) return usage("expected: dump [FILE]");
    Json j{{"command", "dump"}};
    if (args.size() == 2) j["file"] = std::string(args[1]);
    return dump(j);
  }
  return usage("unknown command \"" + std::string(cmd) + "\"");
}

std::string answer_ok(std::string_view text) {
  if (text.empty()) return R"({"ok":true})";
  return Json{{"ok", true}, {"result", std::string(text)}}.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string answer_error(std::string_view error, const std::vector<std::string>& details) {
  Json j{{"ok", false}, {"error", std::string(error)}};
  if (!details.empty()) j["details"] = details;
  // Text from the request may hold invalid UTF-8: replaced, not thrown.
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

namespace {

// An injected route's attributes as the announce request names them.
Json route_json(const OriginateConfig& o) {
  Json r{{"prefix", o.prefix.to_string()}};
  if (o.next_hop) r["next_hop"] = o.next_hop->to_string();
  Json cs = Json::array();
  for (uint32_t c : o.communities) cs.push_back(table::community_text(c));
  if (!cs.empty()) r["communities"] = cs;
  Json ls = Json::array();
  for (const auto& l : o.large_communities)
    ls.push_back(std::to_string(l.global) + ":" + std::to_string(l.local1) + ":" + std::to_string(l.local2));
  if (!ls.empty()) r["large_communities"] = ls;
  if (o.med) r["med"] = *o.med;
  if (o.local_pref) r["local_pref"] = *o.local_pref;
  return r;
}

std::string dumped(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

}  // namespace

std::string answer_routes(const std::vector<OriginateConfig>& routes) {
  Json arr = Json::array();
  for (const OriginateConfig& o : routes) {
    Json r = route_json(o);
    r["origin"] = "injected";
    arr.push_back(std::move(r));
  }
  return dumped(Json{{"ok", true}, {"routes", std::move(arr)}});
}

std::string answer_dump(const DumpSummary& d) {
  std::string text = "wrote " + d.file + ": " + std::to_string(d.prefixes) + " prefixes, " +
                     std::to_string(d.routes) + " routes from " + std::to_string(d.peers) + " peers, " +
                     std::to_string(d.bytes) + " bytes";
  if (d.routes_left_out != 0)
    text += "; " + std::to_string(d.routes_left_out) + " routes left out (too large for an MRT record, or malformed)";
  return dumped(Json{{"ok", true},
                     {"result", text},
                     {"file", d.file},
                     {"prefixes", d.prefixes},
                     {"routes", d.routes},
                     {"peers", d.peers},
                     {"bytes", d.bytes},
                     {"routes_left_out", d.routes_left_out}});
}

std::string announce_request(const OriginateConfig& route) {
  Json r = route_json(route);
  r["command"] = "announce";
  if (route.origin == codec::Origin::kEgp) r["origin"] = "egp";
  if (route.origin == codec::Origin::kIncomplete) r["origin"] = "incomplete";
  return dumped(r);
}

}  // namespace petrel::daemon::control
