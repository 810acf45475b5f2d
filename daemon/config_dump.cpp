// The canonical text of a Config (what `petrel check --dump` prints and
// the golden tests compare), and the small helpers of config.h that need
// no TOML parser: the policies a peer's import and export resolve to, and
// what a reload changes (plan_reload, docs/export.md "Reload").
//
// The dump is TOML that parses back to the same Config (secrets aside:
// they are replaced by a placeholder): every key in the order of
// docs/configuration.md, each default written out, a key that is not set
// (and has no value that says so) as a comment line, addresses in their
// canonical form (RFC 5952 for IPv6), families in a fixed order.
#include "daemon/config.h"

#include <fmt/format.h>

#include <algorithm>

#include "crates/json/json.h"
#include "daemon/kernel_origin.h"
#include "table/export.h"

namespace petrel::daemon {

namespace {

// A TOML basic string. TOML's escapes are a superset of JSON's, so the
// JSON escaper serves, plus DEL, which TOML (unlike JSON) must see escaped.
std::string toml_string(std::string_view s) {
  std::string escaped;
  json::append_escaped(escaped, s);
  std::string out = "\"";
  for (char c : escaped) {
    if (c == '\x7f') out += "\\u007F";
    else out += c;
  }
  out += '"';
  return out;
}

std::string_view bool_text(bool b) { return b ? "true" : "false"; }

std::string family_list(codec::FamilySet set) {
  std::string out = "[";
  for (codec::Family f : codec::kKnownFamilyList) {
    if (!set.has(f)) continue;
    char buf[32];
    if (out.size() > 1) out += ", ";
    out += toml_string(codec::family_name(f, buf));
  }
  out += "]";
  return out;
}

std::string add_path_table(const PeerConfig& p) {
  std::string out;
  for (codec::Family f : codec::kKnownFamilyList) {
    bool rx = p.add_path_receive.has(f);
    bool tx = p.add_path_send.has(f);
    if (!rx && !tx) continue;
    AddPathMode m = rx && tx ? AddPathMode::kBoth : rx ? AddPathMode::kReceive : AddPathMode::kSend;
    char buf[32];
    out += out.empty() ? " " : ", ";
    out += fmt::format("{} = {}", toml_string(codec::family_name(f, buf)), toml_string(add_path_mode_name(m)));
  }
  return "{" + out + (out.empty() ? "}" : " }");
}

std::string scoped(const net::IpAddress& a, const std::string& interface) {
  if (interface.empty()) return a.to_string();
  return a.to_string() + "%" + interface;
}

std::string_view action_name(table::FilterAction a) {
  return a == table::FilterAction::kAccept ? "accept" : "reject";
}

std::string large_text(const codec::LargeCommunity& c) {
  return fmt::format("{}:{}:{}", c.global, c.local1, c.local2);
}

// A TOML array of strings, each item's text from text_of.
template <typename T, typename F>
std::string string_list(const std::vector<T>& items, F&& text_of) {
  std::string s = "[";
  for (const T& x : items) {
    if (s.size() > 1) s += ", ";
    s += toml_string(text_of(x));
  }
  return s + "]";
}

}  // namespace

std::string Endpoint::to_string() const {
  if (address.is_v6()) return fmt::format("[{}]:{}", address.to_string(), port);
  return fmt::format("{}:{}", address.to_string(), port);
}

std::string PeerConfig::address_text() const { return scoped(address, interface); }

uint32_t effective_send_hold_time(const PeerConfig& peer, uint16_t negotiated_hold_time) {
  if (peer.send_hold_time) return *peer.send_hold_time;
  constexpr uint32_t kEightMinutes = 480;  // RFC 9687 section 3
  return std::max(kEightMinutes, 2u * negotiated_hold_time);
}

std::string ConfigError::to_string() const {
  std::string out = file;
  if (line != 0) out += fmt::format(":{}:{}", line, column);
  out += ": ";
  if (!key.empty()) out += key + ": ";
  out += message;
  return out;
}

std::string_view log_format_name(LogFormat f) {
  switch (f) {
    case LogFormat::kText: return "text";
    case LogFormat::kJson: return "json";
  }
  return "text";
}

std::string_view log_level_name(LogLevel l) {
  switch (l) {
    case LogLevel::kDebug: return "debug";
    case LogLevel::kInfo: return "info";
    case LogLevel::kWarn: return "warn";
    case LogLevel::kError: return "error";
  }
  return "info";
}

std::string_view add_path_mode_name(AddPathMode m) {
  switch (m) {
    case AddPathMode::kReceive: return "receive";
    case AddPathMode::kSend: return "send";
    case AddPathMode::kBoth: return "both";
  }
  return "receive";
}

std::string dump(const Config& c) {
  std::string o;
  auto line = [&o](std::string_view key, std::string_view value) { o += fmt::format("{} = {}\n", key, value); };
  // A key with no value of its own (TOML has no null): a comment naming
  // it, so that the dump still lists every key and still loads.
  auto unset = [&o](std::string_view key, std::string_view meaning) {
    o += fmt::format("# {} not set{}{}\n", key, meaning.empty() ? "" : ": ", meaning);
  };
  auto number = [](auto v) { return std::to_string(v); };
  // A secret is never printed (docs/configuration.md, "The dump").
  auto hidden = [&o](std::string_view key) {
    o += fmt::format("# {}: a placeholder, not the secret (petrel check --dump never prints one)\n", key);
  };

  o += "[router]\n";
  line("asn", number(c.router.asn));
  line("router_id", toml_string(c.router.router_id.to_string()));
  line("listen", string_list(c.router.listen, [](const net::IpAddress& a) { return a.to_string(); }));
  line("port", number(c.router.port));
  line("rfc8212", bool_text(c.router.rfc8212));
  if (c.router.cluster_id) line("cluster_id", toml_string(c.router.cluster_id->to_string()));
  else unset("cluster_id", fmt::format("the router id, {}", c.router.router_id.to_string()));
  if (c.router.withdraw_threads) line("withdraw_threads", number(c.router.withdraw_threads));
  else unset("withdraw_threads", "2, or 1 on a machine with one hardware thread");
  line("expected_ipv4_prefixes", number(c.router.expected_ipv4_prefixes));
  line("expected_ipv6_prefixes", number(c.router.expected_ipv6_prefixes));
  auto graceful = [&](const GracefulConfig& g) {
    line("graceful_restart", bool_text(g.enabled));
    line("graceful_restart_time", number(g.restart_time));
    line("stale_routes_time", number(g.stale_routes_time));
    line("long_lived_stale_time", number(g.long_lived_stale_time));
  };
  graceful(c.router.graceful);
  line("selection_deferral_time", number(c.router.selection_deferral_time));
  line("user", toml_string(c.router.user));

  o += "\n[http]\n";
  line("listen", toml_string(c.http.listen ? c.http.listen->to_string() : ""));
  line("max_connections", number(c.http.max_connections));
  line("max_connections_per_address", number(c.http.max_connections_per_address));
  line("idle_timeout", number(c.http.idle_timeout));

  o += "\n[control]\n";
  line("socket", toml_string(c.control.socket));
  if (!c.control.group.empty()) line("group", toml_string(c.control.group));
  else unset("group", "the daemon's own group");
  line("max_connections", number(c.control.max_connections));
  line("max_injected_routes", number(c.control.max_injected_routes));
  line("injected_routes_file", toml_string(c.control.injected_routes_file));

  o += "\n[log]\n";
  line("format", toml_string(log_format_name(c.log.format)));
  line("level", toml_string(log_level_name(c.log.level)));

  o += "\n[kernel]\n";
  line("enabled", bool_text(c.kernel.enabled));
  line("table", number(c.kernel.table));
  line("metric", number(c.kernel.metric));
  line("multipath", bool_text(c.kernel.multipath));
  line("nexthop_objects", bool_text(c.kernel.nexthop_objects));
  line("static_metric", number(c.kernel.static_metric));
  line("blackhole_community", bool_text(c.kernel.blackhole_community));
  line("resolve_table", number(c.kernel.resolve_table));
  line("resolve_via_default", bool_text(c.kernel.resolve_via_default));
  line("max_resolve_routes", number(c.kernel.max_resolve_routes));

  o += "\n[rpki]\n";
  line("max_vrps", number(c.rpki.max_vrps));
  line("max_version", number(c.rpki.max_version));
  line("answer_timeout", number(c.rpki.answer_timeout));
  line("notify_gap", number(c.rpki.notify_gap));
  line("reject_invalid", bool_text(c.rpki.reject_invalid));
  line("reject_aspa_invalid", bool_text(c.rpki.reject_aspa_invalid));
  line("slurm", string_list(c.rpki.slurm, [](const SlurmFileConfig& f) { return f.path; }));
  for (const RpkiCacheConfig& r : c.rpki.caches) {
    o += "\n[[rpki.cache]]\n";
    line("address", toml_string(scoped(r.address, r.interface)));
    line("port", number(r.port));
    line("preference", number(r.preference));
    line("transport", toml_string(transport_name(r.transport)));
    // Another transport's keys: said unset, so that the dump lists them.
    const std::string other = fmt::format("not used over {}", transport_name(r.transport));
    const bool tls = r.transport == RtrTransport::kTls;
    if (!r.tls_ca_file.empty()) line("tls_ca_file", toml_string(r.tls_ca_file));
    else unset("tls_ca_file", tls ? "the system's trust store" : other);
    if (!r.tls_server_name.empty()) line("tls_server_name", toml_string(r.tls_server_name));
    else unset("tls_server_name", tls ? "the address" : other);
    const bool ssh = r.transport == RtrTransport::kSsh;
    if (ssh) line("ssh_user", toml_string(r.ssh_user));
    else unset("ssh_user", other);
    if (ssh) line("ssh_known_hosts", toml_string(r.ssh_known_hosts));
    else unset("ssh_known_hosts", other);
    if (!r.ssh_key_file.empty()) line("ssh_key_file", toml_string(r.ssh_key_file));
    else unset("ssh_key_file", ssh ? "a password is used" : other);
    if (!r.ssh_password_file.empty()) line("ssh_password_file", toml_string(r.ssh_password_file));
    else unset("ssh_password_file", ssh ? "a key is used" : other);
  }

  for (const PeerConfig& p : c.peers) {
    o += "\n[[peer]]\n";
    line("name", toml_string(p.name));
    line("address", toml_string(p.address_text()));
    line("asn", number(p.asn));
    line("port", number(p.port));
    line("passive", bool_text(p.passive));
    line("hold_time", number(p.hold_time));
    line("keepalive", number(p.keepalive));
    line("connect_retry", number(p.connect_retry));
    line("families", family_list(p.families));
    line("add_path", add_path_table(p));
    line("add_path_send_max", number(p.add_path_send_max));
    line("max_paths_per_prefix", number(p.max_paths_per_prefix));
    line("keep_refused", number(p.keep_refused));
    line("extended_next_hop", family_list(p.extended_next_hop));
    if (p.local_address) line("local_address", toml_string(p.local_address->to_string()));
    else unset("local_address", "the kernel chooses");
    line("description", toml_string(p.description));
    line("delay_open", number(p.delay_open));
    line("send_hold_time", p.send_hold_time ? number(*p.send_hold_time) : toml_string("auto"));
    line("shutdown_message", toml_string(p.shutdown_message));
    line("enabled", bool_text(p.enabled));
    // An unset policy means "all", or "none" under RFC 8212: said, not
    // written, so that `petrel check` still warns of it.
    const bool refused = p.is_ebgp(c.router.asn) && c.router.rfc8212;
    const std::string_view no_policy = refused         ? "\"none\" (RFC 8212, router.rfc8212)"
                                       : p.is_ebgp(c.router.asn) ? "\"all\" (router.rfc8212 = false)"
                                                                 : "\"all\" (an internal peer)";
    auto names = [](const std::vector<std::string>& v) {
      return v.size() == 1 ? toml_string(v[0]) : string_list(v, [](const std::string& x) { return x; });
    };
    if (p.import_filter) line("import", names(*p.import_filter));
    else unset("import", no_policy);
    if (p.export_filter) line("export", names(*p.export_filter));
    else unset("export", no_policy);
    line("route_reflector_client", bool_text(p.route_reflector_client));
    line("route_server_client", bool_text(p.route_server_client));
    if (p.next_hop == table::NextHopMode::kSelf) line("next_hop", toml_string("self"));
    else if (p.next_hop == table::NextHopMode::kUnchanged) line("next_hop", toml_string("unchanged"));
    else unset("next_hop", "RFC 4271's: ours to external peers, unchanged to internal ones");
    if (p.local_role) line("local_role", toml_string(std::string(table::role_name(*p.local_role))));
    else unset("local_role", "no role (no Role capability, no OTC rules)");
    line("strict_role", bool_text(p.strict_role));
    line("allow_own_as", number(p.allow_own_as));
    line("enforce_first_as", bool_text(p.enforce_first_as));
    std::string limits;
    for (size_t i = 0; i < codec::kKnownFamilies; ++i) {
      if (!p.max_prefixes[i]) continue;
      char buf[32];
      limits += fmt::format("{}{} = {}", limits.empty() ? "{ " : ", ",
                            toml_string(codec::family_name(codec::kKnownFamilyList[i], buf)), p.max_prefixes[i]);
    }
    line("max_prefixes", limits.empty() ? "{}" : limits + " }");
    line("max_prefixes_action", toml_string(p.max_prefixes_warn_only ? "warn" : "cease"));
    line("max_prefixes_restart", number(p.max_prefixes_restart));
    line("max_prefixes_warn", number(p.max_prefixes_warn));
    // Transport security. A file's path is shown, never a secret.
    if (!p.password_file.empty()) {
      unset("password", "the secret is read from password_file");
      line("password_file", toml_string(p.password_file));
    } else if (!p.password.empty()) {
      hidden("password");
      line("password", toml_string(kDumpSecretPlaceholder));
      unset("password_file", "");
    } else {
      unset("password", "no TCP MD5");
      unset("password_file", "");
    }
    if (p.tcp_ao) {
      const TcpAoConfig& a = *p.tcp_ao;
      std::string secret = "password_file = " + toml_string(a.password_file);
      if (a.password_file.empty()) {
        hidden("tcp_ao.password");
        secret = "password = " + toml_string(kDumpSecretPlaceholder);
      }
      line("tcp_ao", fmt::format("{{ key_id = {}, rnext_key_id = {}, algorithm = {}, {} }}", a.key_id, a.rnext_key_id,
                                 toml_string(a.algorithm), secret));
    } else {
      unset("tcp_ao", "no TCP-AO");
    }
    line("ttl_security", bool_text(p.ttl_security));
    line("multihop", number(p.multihop));
    line("link_down_ends_session", bool_text(p.link_down_ends_session));
    line("damp_oscillations", bool_text(p.damp_oscillations));
    graceful(p.graceful);
  }

  for (const table::Filter& f : c.filters) {
    o += "\n[[filter]]\n";
    line("name", toml_string(f.name));
    line("default", toml_string(action_name(f.default_action)));
    for (const table::FilterRule& r : f.rules) {
      o += "\n[[filter.rule]]\n";
      line("prefixes", string_list(r.prefixes, [](const table::PrefixRange& x) { return x.to_string(); }));
      line("communities", string_list(r.communities, table::community_text));
      line("large_communities", string_list(r.large_communities, large_text));
      line("action", toml_string(action_name(r.action)));
      if (r.set_local_pref) line("set_local_pref", number(*r.set_local_pref));
      else unset("set_local_pref", "the route's own");
      if (r.set_med) line("set_med", number(*r.set_med));
      else unset("set_med", "the route's own");
    }
  }

  for (const table::PolicyDef& d : c.policies) {
    o += "\n[[policy]]\n";
    line("name", toml_string(d.name));
    line("default", toml_string(table::policy_then_name(d.default_then)));
    for (const table::PolicyTerm& t : d.terms) {
      o += "\n[[policy.term]]\n";
      line("name", toml_string(t.name));
      auto ranges = [](const std::vector<table::NumberRange>& v) {
        return string_list(v, [](const table::NumberRange& r) { return r.to_string(); });
      };
      auto patterns = [](const std::vector<table::CommunityPattern>& v) {
        return string_list(v, [](const table::CommunityPattern& x) { return x.to_string(); });
      };
      auto words = [](uint8_t mask, auto name_of, std::initializer_list<uint8_t> values) {
        std::vector<std::string> w;
        for (uint8_t v : values)
          if (mask >> v & 1) w.emplace_back(name_of(v));
        return string_list(w, [](const std::string& x) { return x; });
      };
      auto rpki_name = [](uint8_t v) -> std::string_view {
        return v == 0 ? "unchecked" : v == 1 ? "not-found" : v == 2 ? "valid" : "invalid";
      };
      auto aspa_name = [](uint8_t v) -> std::string_view {
        return v == 0 ? "unchecked" : v == 1 ? "unknown" : v == 2 ? "valid" : "invalid";
      };
      auto origin_name = [](uint8_t v) -> std::string_view { return v == 0 ? "igp" : v == 1 ? "egp" : "incomplete"; };
      // `match` and `unless` as inline tables; an empty one is unset.
      auto conditions = [&](std::string_view key, const table::PolicyMatch& m, std::string_view meaning_unset) {
        std::vector<std::string> items;
        auto add = [&](std::string_view k, std::string value) { items.push_back(fmt::format("{} = {}", k, value)); };
        if (!m.prefix.empty()) add("prefix", string_list(m.prefix, [](const table::PrefixRange& r) { return r.to_string(); }));
        if (m.prefix_length) add("prefix_length", toml_string(m.prefix_length->to_string()));
        if (m.family) add("family", toml_string(*m.family == net::IpFamily::V4 ? "ipv4" : "ipv6"));
        if (!m.as_path.empty()) add("as_path", toml_string(m.as_path));
        if (!m.origin_as.empty()) add("origin_as", ranges(m.origin_as));
        if (!m.first_as.empty()) add("first_as", ranges(m.first_as));
        if (!m.as_path_contains.empty()) add("as_path_contains", ranges(m.as_path_contains));
        if (m.as_path_length) add("as_path_length", toml_string(m.as_path_length->to_string()));
        if (m.as_set) add("as_set", std::string(bool_text(*m.as_set)));
        if (!m.community.empty()) add("community", patterns(m.community));
        if (!m.community_all.empty()) add("community_all", patterns(m.community_all));
        if (!m.next_hop.empty()) add("next_hop", string_list(m.next_hop, [](const net::Prefix& x) { return x.to_string(); }));
        if (!m.peer.empty()) add("peer", string_list(m.peer, [](const std::string& x) { return x; }));
        if (!m.peer_as.empty()) add("peer_as", ranges(m.peer_as));
        if (!m.peer_role.empty())
          add("peer_role", string_list(m.peer_role, [](codec::Role r) { return std::string(table::role_name(r)); }));
        if (!m.peer_type.empty())
          add("peer_type", string_list(m.peer_type, [](table::PeerType x) { return std::string(table::peer_type_name(x)); }));
        if (m.rpki) add("rpki", words(m.rpki, rpki_name, {0, 1, 2, 3}));
        if (m.aspa) add("aspa", words(m.aspa, aspa_name, {0, 1, 2, 3}));
        if (m.origin) add("origin", words(m.origin, origin_name, {0, 1, 2}));
        if (m.med) add("med", toml_string(m.med->to_string()));
        if (m.local_pref) add("local_pref", toml_string(m.local_pref->to_string()));
        if (m.otc) add("otc", std::string(bool_text(*m.otc)));
        for (size_t i = 0; i < table::PolicyMatch::kListKeys.size(); ++i)
          if (m.empty_lists >> i & 1) add(table::PolicyMatch::kListKeys[i], "[]");  // holds for no route
        if (items.empty()) unset(key, meaning_unset);
        else line(key, fmt::format("{{ {} }}", fmt::join(items, ", ")));
      };
      conditions("match", t.match, "every route");
      conditions("unless", t.unless, "no exception");
      const table::PolicyActions& a = t.set;
      std::vector<std::string> set;
      auto put = [&](std::string_view key, std::string value) { set.push_back(fmt::format("{} = {}", key, value)); };
      auto kind_name = [](uint8_t v) -> std::string_view { return v == 0 ? "standard" : v == 1 ? "large" : "extended"; };
      if (a.strip) put("community_strip", words(a.strip, kind_name, {0, 1, 2}));
      if (!a.community_remove.empty()) put("community_remove", patterns(a.community_remove));
      if (!a.community_add.empty()) put("community_add", patterns(a.community_add));
      if (a.local_pref) put("local_pref", std::to_string(*a.local_pref));
      switch (a.med_op) {
        case table::MedOp::kNone: break;
        case table::MedOp::kSet: put("med", std::to_string(a.med)); break;
        case table::MedOp::kAdd: put("med", toml_string("+" + std::to_string(a.med))); break;
        case table::MedOp::kSubtract: put("med", toml_string("-" + std::to_string(a.med))); break;
      }
      if (a.origin) put("origin", toml_string(origin_name(static_cast<uint8_t>(*a.origin))));
      switch (a.next_hop_op) {
        case table::NextHopOp::kNone: break;
        case table::NextHopOp::kSelf: put("next_hop", toml_string("self")); break;
        case table::NextHopOp::kUnchanged: put("next_hop", toml_string("unchanged")); break;
        case table::NextHopOp::kAddress: put("next_hop", toml_string(a.next_hop->to_string())); break;
      }
      if (a.prepend) put("prepend", std::to_string(a.prepend));
      if (a.prepend_as) put("prepend_as", std::to_string(a.prepend_as));
      if (set.empty()) unset("set", "no change");
      else line("set", fmt::format("{{ {} }}", fmt::join(set, ", ")));
      line("then", toml_string(table::policy_then_name(t.then)));
    }
  }

  auto origin_attributes = [&](const OriginateConfig& x) {
    if (x.next_hop) line("next_hop", toml_string(x.next_hop->to_string()));
    else unset("next_hop", "our address on each session");
    line("origin", toml_string(x.origin == codec::Origin::kIgp   ? "igp"
                               : x.origin == codec::Origin::kEgp ? "egp"
                                                                 : "incomplete"));
    line("communities", string_list(x.communities, table::community_text));
    line("large_communities", string_list(x.large_communities, large_text));
    if (x.med) line("med", number(*x.med));
    else unset("med", "no MULTI_EXIT_DISC sent");
    if (x.local_pref) line("local_pref", number(*x.local_pref));
    else unset("local_pref", "100");
  };
  for (const OriginateConfig& x : c.originate) {
    o += "\n[[originate]]\n";
    line("prefix", toml_string(x.prefix.to_string()));
    line("from_kernel", "false");
    for (const char* key : {"protocols", "table", "prefixes", "max_prefixes"}) unset(key, "from_kernel only");
    origin_attributes(x);
  }
  for (const KernelOriginConfig& k : c.kernel_origins) {
    o += "\n[[originate]]\n";
    unset("prefix", "the kernel's routes' prefixes");
    line("from_kernel", "true");
    line("protocols", string_list(k.protocols, [](uint8_t n) { return rt_protocol_name(n); }));
    line("table", number(k.table));
    line("prefixes", string_list(k.prefixes, [](const table::PrefixRange& r) { return r.to_string(); }));
    line("max_prefixes", number(k.max_prefixes));
    origin_attributes(k.attributes);
  }

  for (const StaticRouteConfig& r : c.statics) {
    o += "\n[[static]]\n";
    line("prefix", toml_string(r.prefix.to_string()));
    if (r.next_hop) line("next_hop", toml_string(r.next_hop->to_string()));
    else unset("next_hop", r.kind == StaticRouteConfig::Kind::kBlackhole ? "a blackhole route" : "an unreachable route");
    if (!r.interface.empty()) line("interface", toml_string(r.interface));
    else unset("interface", r.next_hop ? "the one the next hop is directly reachable through" : "");
    line("blackhole", bool_text(r.kind == StaticRouteConfig::Kind::kBlackhole));
    line("unreachable", bool_text(r.kind == StaticRouteConfig::Kind::kUnreachable));
    line("announce", bool_text(r.announce));
  }

  for (const BmpStationConfig& b : c.bmp) {
    o += "\n[[bmp]]\n";
    line("address", toml_string(b.address.to_string()));
    line("port", number(b.port));
    std::vector<std::string> monitoring;
    if (b.pre_policy) monitoring.emplace_back("pre-policy");
    if (b.post_policy) monitoring.emplace_back("post-policy");
    if (b.loc_rib) monitoring.emplace_back("loc-rib");
    line("monitoring", string_list(monitoring, [](const std::string& m) { return m; }));
    line("statistics_interval", number(b.statistics_interval));
    line("max_queue", number(b.max_queue));
  }

  o += "\n[mrt]\n";
  line("dump_interval", number(c.mrt.dump_interval));
  line("dump_file", toml_string(c.mrt.dump_file));
  line("dump_gzip", bool_text(c.mrt.dump_gzip));
  line("dump_keep", number(c.mrt.dump_keep));
  line("updates_file", toml_string(c.mrt.updates_file));
  line("updates_interval", number(c.mrt.updates_interval));
  line("updates_gzip", bool_text(c.mrt.updates_gzip));
  line("updates_keep", number(c.mrt.updates_keep));
  line("updates_queue", number(c.mrt.updates_queue));
  return o;
}

namespace {

Policy resolve_policy(const Config& config, const PeerConfig& peer,
                      const std::optional<std::vector<std::string>>& name) {
  Policy p;
  if (!name) {
    p.none = p.rfc8212 = peer.is_ebgp(config.router.asn) && config.router.rfc8212;
  } else if (name->size() == 1 && (*name)[0] == "none") {
    p.none = true;
  } else if (!(name->size() == 1 && (*name)[0] == "all")) {
    std::vector<table::PolicyDef> chain;
    for (const std::string& n : *name)
      if (auto d = config.find_policy(n)) chain.push_back(std::move(*d));
    // parse_config compiled the same chain: it compiles again.
    p.filter = table::PolicyChain::compile(std::move(chain));
  }
  return p;
}

// The peer of `in` that is `p` (same address and interface), if any.
std::optional<size_t> same_peer(const Config& in, const PeerConfig& p) {
  for (size_t i = 0; i < in.peers.size(); ++i)
    if (in.peers[i].address == p.address && in.peers[i].interface == p.interface) return i;
  return std::nullopt;
}

}  // namespace

void take_live_keys(PeerConfig& a, const PeerConfig& b) {
  a.description = b.description;
  a.shutdown_message = b.shutdown_message;
  a.max_prefixes = b.max_prefixes;
  a.max_prefixes_warn_only = b.max_prefixes_warn_only;
  a.max_prefixes_restart = b.max_prefixes_restart;
  a.max_prefixes_warn = b.max_prefixes_warn;
  a.import_filter = b.import_filter;
  a.export_filter = b.export_filter;
  a.allow_own_as = b.allow_own_as;
  a.keep_refused = b.keep_refused;
  a.link_down_ends_session = b.link_down_ends_session;
  a.damp_oscillations = b.damp_oscillations;
}

namespace {

// The keys of a peer whose change needs a new session, by their names in
// docs/configuration.md, where a and b differ.
std::vector<std::string> reset_keys(const PeerConfig& a, const PeerConfig& b, size_t index) {
  std::vector<std::string> keys;
  auto diff = [&](const char* key, bool same) {
    if (!same) keys.push_back(fmt::format("peer[{}].{}", index, key));
  };
  diff("name", a.name == b.name);
  diff("asn", a.asn == b.asn);
  diff("port", a.port == b.port);
  diff("passive", a.passive == b.passive);
  diff("hold_time", a.hold_time == b.hold_time);
  diff("keepalive", a.keepalive == b.keepalive);
  diff("connect_retry", a.connect_retry == b.connect_retry);
  diff("families", a.families == b.families);
  diff("add_path", a.add_path_receive == b.add_path_receive && a.add_path_send == b.add_path_send);
  diff("add_path_send_max", a.add_path_send_max == b.add_path_send_max);
  diff("max_paths_per_prefix", a.max_paths_per_prefix == b.max_paths_per_prefix);
  diff("extended_next_hop", a.extended_next_hop == b.extended_next_hop);
  diff("local_address", a.local_address == b.local_address);
  diff("delay_open", a.delay_open == b.delay_open);
  diff("send_hold_time", a.send_hold_time == b.send_hold_time);
  diff("enabled", a.enabled == b.enabled);
  diff("route_reflector_client", a.route_reflector_client == b.route_reflector_client);
  diff("route_server_client", a.route_server_client == b.route_server_client);
  diff("next_hop", a.next_hop == b.next_hop);
  diff("local_role", a.local_role == b.local_role);
  diff("strict_role", a.strict_role == b.strict_role);
  diff("enforce_first_as", a.enforce_first_as == b.enforce_first_as);
  diff("password", a.password == b.password && a.password_file == b.password_file);
  diff("tcp_ao", a.tcp_ao == b.tcp_ao);
  diff("ttl_security", a.ttl_security == b.ttl_security);
  diff("multihop", a.multihop == b.multihop);
  diff("graceful_restart", a.graceful.enabled == b.graceful.enabled);
  diff("graceful_restart_time", a.graceful.restart_time == b.graceful.restart_time);
  diff("stale_routes_time", a.graceful.stale_routes_time == b.graceful.stale_routes_time);
  diff("long_lived_stale_time", a.graceful.long_lived_stale_time == b.graceful.long_lived_stale_time);
  // A key added to PeerConfig and not named above still resets.
  if (keys.empty() && [&] { PeerConfig x = a; take_live_keys(x, b); return x; }() != b) keys.push_back(fmt::format("peer[{}] (other keys)", index));
  return keys;
}

}  // namespace

Policy import_policy(const Config& config, const PeerConfig& peer) {
  return resolve_policy(config, peer, peer.import_filter);
}

Policy export_policy(const Config& config, const PeerConfig& peer) {
  return resolve_policy(config, peer, peer.export_filter);
}

ReloadPlan plan_reload(const Config& running, const Config& next) {
  ReloadPlan plan;
  auto section = [&](const char* key, bool same) {
    if (!same) plan.restart_keys.emplace_back(key);
  };
  section("router.asn", running.router.asn == next.router.asn);
  section("router.router_id", running.router.router_id == next.router.router_id);
  section("router.listen", running.router.listen == next.router.listen);
  section("router.port", running.router.port == next.router.port);
  section("router.cluster_id", running.router.cluster_id == next.router.cluster_id);
  section("router.withdraw_threads", running.router.withdraw_threads == next.router.withdraw_threads);
  section("router.expected_ipv4_prefixes",
          running.router.expected_ipv4_prefixes == next.router.expected_ipv4_prefixes);
  section("router.expected_ipv6_prefixes",
          running.router.expected_ipv6_prefixes == next.router.expected_ipv6_prefixes);
  section("router.graceful_restart", running.router.graceful == next.router.graceful);
  section("router.user", running.router.user == next.router.user);
  section("router.selection_deferral_time",
          running.router.selection_deferral_time == next.router.selection_deferral_time);
  auto live = [&](const char* key, bool same) {
    if (!same) plan.sections.emplace_back(key);
  };
  live("http", running.http == next.http);
  ControlConfig control = running.control;  // max_injected_routes applies live
  control.max_injected_routes = next.control.max_injected_routes;
  section("control", control == next.control);
  live("log", running.log == next.log);
  live("kernel", running.kernel == next.kernel);
  live("originate.from_kernel", running.kernel_origins == next.kernel_origins);
  live("static", running.statics == next.statics);
  live("rpki", running.rpki == next.rpki);
  section("bmp", running.bmp == next.bmp);
  section("mrt", running.mrt == next.mrt);
  for (size_t i = 0; i < next.peers.size(); ++i) {
    const PeerConfig& b = next.peers[i];
    auto at = same_peer(running, b);
    if (!at) {
      plan.added.push_back(i);
      continue;
    }
    const PeerConfig& a = running.peers[*at];
    PeerReload r;
    r.running = *at;
    r.next = i;
    r.import_changed = import_policy(running, a) != import_policy(next, b) || a.allow_own_as != b.allow_own_as;
    r.export_changed = export_policy(running, a) != export_policy(next, b);
    r.reset_keys = reset_keys(a, b, i);
    r.updated = a.description != b.description || a.shutdown_message != b.shutdown_message ||
                a.max_prefixes != b.max_prefixes || a.max_prefixes_warn_only != b.max_prefixes_warn_only ||
                a.max_prefixes_restart != b.max_prefixes_restart || a.max_prefixes_warn != b.max_prefixes_warn ||
                a.link_down_ends_session != b.link_down_ends_session || a.damp_oscillations != b.damp_oscillations;
    if (r.import_changed || r.export_changed || r.updated || !r.reset_keys.empty()) plan.peers.push_back(std::move(r));
  }
  for (size_t i = 0; i < running.peers.size(); ++i)
    if (!same_peer(next, running.peers[i])) plan.removed.push_back(i);
  // [[originate]]: a prefix no longer listed is withdrawn; a new or changed
  // entry is announced (replacing the old route in one step).
  for (const OriginateConfig& o : running.originate)
    if (std::none_of(next.originate.begin(), next.originate.end(),
                     [&](const OriginateConfig& x) { return x.prefix == o.prefix; }))
      plan.withdraw.push_back(o);
  for (const OriginateConfig& o : next.originate)
    if (std::find(running.originate.begin(), running.originate.end(), o) == running.originate.end())
      plan.announce.push_back(o);
  return plan;
}

Config applied_config(const Config& running, const Config& next) {
  Config c = running;
  c.filters = next.filters;
  c.policies = next.policies;
  c.router.rfc8212 = next.router.rfc8212;
  c.originate = next.originate;
  c.kernel_origins = next.kernel_origins;
  c.statics = next.statics;
  c.peers = next.peers;  // every peer key applies live (plan_reload)
  c.control.max_injected_routes = next.control.max_injected_routes;
  c.http = next.http;
  c.log = next.log;
  c.kernel = next.kernel;
  c.rpki = next.rpki;
  return c;
}

}  // namespace petrel::daemon
