// Parses the TOML configuration into a Config and checks it, collecting
// every error with its position and key. The only file that includes
// toml++: header-only, with exceptions off so a syntax error comes back as
// a value (toml::parse_result), never as a throw.
//
// The keys, defaults and rules are those of docs/configuration.md; keep
// the two in step. RFC 4271 section 4.2 (hold time), RFC 6793 (AS_TRANS),
// RFC 7911 (ADD-PATH), RFC 8950, RFC 9687 (send hold timer), RFC 9003.
#include "daemon/config.h"

#define TOML_HEADER_ONLY 1
#define TOML_EXCEPTIONS 0
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <libssh/libssh.h>
#include <toml++/toml.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <map>
#include <sstream>
#include <tuple>
#include <utility>

#include <re2/re2.h>

#include "daemon/kernel_origin.h"
#include "table/export.h"
#include "table/policy.h"

namespace petrel::daemon {

namespace {

constexpr int64_t kMaxU16 = 65535;
constexpr int64_t kMaxU32 = 4294967295;
constexpr int64_t kMaxRestart = 7 * 24 * 3600;  // max_prefixes_restart: a week
constexpr int64_t kMaxRestartTime = 4095;       // RFC 4724 section 3: 12 bits
constexpr int64_t kMaxStaleRoutesTime = 24 * 3600;
constexpr int64_t kMaxLongLivedStaleTime = (int64_t{1} << 24) - 1;  // the capability's 24 bits
constexpr int64_t kMaxSelectionDeferralTime = 3600;
// router.expected_ipv*_prefixes: twenty times a full IPv4 table today.
constexpr int64_t kMaxExpectedPrefixes = 20000000;
constexpr size_t kMaxNameLen = 64;
constexpr size_t kMaxInterfaceLen = 15;  // IFNAMSIZ - 1
constexpr size_t kMaxShutdownMessage = 255;  // RFC 9003 section 2
constexpr uint32_t kRtTableLocal = 255;

std::string_view type_name(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::none: return "nothing";
    case toml::node_type::table: return "a table";
    case toml::node_type::array: return "an array";
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a float";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::date: return "a date";
    case toml::node_type::time: return "a time";
    case toml::node_type::date_time: return "a date-time";
  }
  return "a value";
}

std::string join(std::string_view path, std::string_view key) {
  if (path.empty()) return std::string(key);
  return fmt::format("{}.{}", path, key);
}

std::string in_quotes(std::string_view s) { return fmt::format("\"{}\"", s); }

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0u : 1u)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string family_text(codec::Family f) {
  char buf[32];
  return std::string(codec::family_name(f, buf));
}

std::string known_families_text() {
  std::string s;
  for (codec::Family f : codec::kKnownFamilyList) {
    if (!s.empty()) s += ", ";
    s += family_text(f);
  }
  return s;
}

// An address with an optional "%interface", as peers and caches take it.
struct ScopedAddress {
  net::IpAddress address;
  std::string interface;
};

bool valid_interface_name(std::string_view s) {
  if (s.empty() || s.size() > kMaxInterfaceLen || s == "." || s == "..") return false;
  for (char c : s)
    if (c == '/' || c == ':' || c == '%' || static_cast<unsigned char>(c) <= ' ' || c == 0x7f) return false;
  return true;
}

// The error message, or nothing when text is a usable unicast address.
std::optional<std::string> parse_scoped_address(std::string_view text, ScopedAddress& out) {
  std::string_view addr_text = text;
  std::string_view iface;
  bool has_iface = false;
  if (size_t pct = text.find('%'); pct != std::string_view::npos) {
    addr_text = text.substr(0, pct);
    iface = text.substr(pct + 1);
    has_iface = true;
  }
  auto addr = net::IpAddress::parse(addr_text);
  if (!addr) return fmt::format("expected an IPv4 or IPv6 address, got {}", in_quotes(text));
  if (addr->is_unspecified() || addr->is_multicast())
    return fmt::format("expected a unicast address, got {}", in_quotes(text));
  if (has_iface && !addr->is_link_local())
    return fmt::format("an interface (%{}) is only allowed with a link-local (fe80::/10) address, got {}", iface,
                       in_quotes(text));
  if (addr->is_link_local() && !has_iface)
    return fmt::format("a link-local address needs its interface, as in \"{}%eth0\"", addr_text);
  if (has_iface && !valid_interface_name(iface))
    return fmt::format("expected an interface name of 1 to {} characters after %, got {}", kMaxInterfaceLen,
                       in_quotes(iface));
  out.address = *addr;
  out.interface = std::string(iface);
  return std::nullopt;
}

}  // namespace

std::optional<std::string> parse_endpoint(std::string_view text, Endpoint& out) {
  std::string_view host, port_text;
  if (!text.empty() && text[0] == '[') {
    size_t close = text.find("]:");
    if (close == std::string_view::npos)
      return fmt::format("expected \"[IPv6]:PORT\", got {}", in_quotes(text));
    host = text.substr(1, close - 1);
    port_text = text.substr(close + 2);
    auto a = net::IpAddress::parse(host);
    if (!a || !a->is_v6()) return fmt::format("expected an IPv6 address inside [], got {}", in_quotes(text));
    out.address = *a;
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string_view::npos)
      return fmt::format("expected \"ADDRESS:PORT\" (\"[IPv6]:PORT\" for IPv6) or \"\", got {}", in_quotes(text));
    host = text.substr(0, colon);
    port_text = text.substr(colon + 1);
    if (host.find(':') != std::string_view::npos)
      return fmt::format("write an IPv6 address in brackets, as in \"[::1]:8179\", got {}", in_quotes(text));
    auto a = net::IpAddress::parse(host);
    if (!a) return fmt::format("expected an IPv4 address before the port, got {}", in_quotes(text));
    out.address = *a;
  }
  if (out.address.is_multicast())
    return fmt::format("expected a unicast or unspecified address, got {}", in_quotes(text));
  uint32_t port = 0;
  if (port_text.empty() || port_text.size() > 5) return fmt::format("expected a port 1..65535, got {}", in_quotes(text));
  for (char c : port_text) {
    if (c < '0' || c > '9') return fmt::format("expected a port 1..65535, got {}", in_quotes(text));
    port = port * 10 + static_cast<uint32_t>(c - '0');
  }
  if (port == 0 || port > kMaxU16) return fmt::format("expected a port 1..65535, got {}", in_quotes(text));
  out.port = static_cast<uint16_t>(port);
  return std::nullopt;
}

namespace {

// Collects errors while walking the document.
class Checker {
 public:
  explicit Checker(std::string_view file) : file_(file) {}

  void error(const toml::source_region& where, std::string_view key, std::string message) {
    errors_.push_back(ConfigError{file_, where.begin.line, where.begin.column, std::string(key), std::move(message)});
  }
  void error(const toml::node& where, std::string_view key, std::string message) {
    error(where.source(), key, std::move(message));
  }

  ConfigErrors take() {
    std::stable_sort(errors_.begin(), errors_.end(), [](const ConfigError& a, const ConfigError& b) {
      return std::pair(a.line, a.column) < std::pair(b.line, b.column);
    });
    return std::move(errors_);
  }
  [[nodiscard]] bool ok() const { return errors_.empty(); }
  [[nodiscard]] const std::string& file() const { return file_; }
  [[nodiscard]] size_t count() const { return errors_.size(); }

  // Every key of t must be one of allowed.
  void only_keys(const toml::table& t, std::string_view path, std::initializer_list<std::string_view> allowed) {
    for (auto&& [k, v] : t) {
      std::string_view name = k.str();
      if (std::find(allowed.begin(), allowed.end(), name) != allowed.end()) continue;
      std::string msg = "unknown key";
      std::string_view best;
      size_t best_d = 3;
      for (std::string_view a : allowed) {
        size_t d = edit_distance(name, a);
        if (d < best_d) {
          best_d = d;
          best = a;
        }
      }
      if (!best.empty()) msg += fmt::format(" (did you mean {}?)", in_quotes(best));
      else msg += fmt::format("; expected one of: {}", fmt::join(allowed, ", "));
      error(k.source(), join(path, name), std::move(msg));
    }
  }

  const toml::table* table(const toml::table& t, std::string_view path, std::string_view key) {
    const toml::node* n = t.get(key);
    if (!n) return nullptr;
    if (!n->is_table()) {
      error(*n, join(path, key), fmt::format("expected a table, got {}", type_name(*n)));
      return nullptr;
    }
    return n->as_table();
  }

  const toml::array* array(const toml::table& t, std::string_view path, std::string_view key,
                           std::string_view what) {
    const toml::node* n = t.get(key);
    if (!n) return nullptr;
    if (!n->is_array()) {
      error(*n, join(path, key), fmt::format("expected {}, got {}", what, type_name(*n)));
      return nullptr;
    }
    return n->as_array();
  }

  // Reports a missing key at the position of the table that lacks it.
  void missing(const toml::table& t, std::string_view path, std::string_view key, std::string_view what) {
    error(t, join(path, key), fmt::format("missing required key ({})", what));
  }

  // Absent: nothing, no error. Wrong type: nothing and an error.
  std::optional<bool> boolean(const toml::table& t, std::string_view path, std::string_view key) {
    const toml::node* n = t.get(key);
    if (!n) return std::nullopt;
    if (auto v = n->value_exact<bool>()) return v;
    error(*n, join(path, key), fmt::format("expected true or false, got {}", type_name(*n)));
    return std::nullopt;
  }

  std::optional<std::string_view> string(const toml::table& t, std::string_view path, std::string_view key,
                                         std::string_view what) {
    const toml::node* n = t.get(key);
    if (!n) return std::nullopt;
    return string_node(*n, join(path, key), what);
  }

  std::optional<std::string_view> string_node(const toml::node& n, std::string_view key, std::string_view what) {
    if (const auto* s = n.as_string()) return std::string_view(s->get());
    error(n, key, fmt::format("expected {}, got {}", what, type_name(n)));
    return std::nullopt;
  }

  // An integer in lo..hi; what says what was expected, as "a port 1..65535".
  std::optional<int64_t> integer(const toml::table& t, std::string_view path, std::string_view key, int64_t lo,
                                 int64_t hi, std::string_view what) {
    const toml::node* n = t.get(key);
    if (!n) return std::nullopt;
    const auto* i = n->as_integer();
    if (!i) {
      error(*n, join(path, key), fmt::format("expected {}, got {}", what, type_name(*n)));
      return std::nullopt;
    }
    int64_t v = i->get();
    if (v < lo || v > hi) {
      error(*n, join(path, key), fmt::format("expected {}, got {}", what, v));
      return std::nullopt;
    }
    return v;
  }

  // An AS number: 1..4294967295 and not AS_TRANS.
  std::optional<uint32_t> asn(const toml::table& t, std::string_view path, std::string_view key) {
    auto v = integer(t, path, key, 1, kMaxU32, "an AS number 1..4294967295");
    if (!v) return std::nullopt;
    if (*v == codec::kAsTrans) {
      error(*t.get(key), join(path, key), "AS 23456 is AS_TRANS (RFC 6793), not an AS a router can have");
      return std::nullopt;
    }
    return static_cast<uint32_t>(*v);
  }

  std::optional<uint16_t> port(const toml::table& t, std::string_view path, std::string_view key) {
    auto v = integer(t, path, key, 1, kMaxU16, "a port 1..65535");
    if (!v) return std::nullopt;
    return static_cast<uint16_t>(*v);
  }

  // A known family name; adds it to out unless it is there already.
  std::optional<codec::Family> family(const toml::node& n, std::string_view key) {
    auto s = string_node(n, key, "a family name");
    if (!s) return std::nullopt;
    codec::Family f;
    if (!codec::parse_family(*s, f) || codec::known_index(f) < 0) {
      error(n, key, fmt::format("expected one of {}, got {}", known_families_text(), in_quotes(*s)));
      return std::nullopt;
    }
    return f;
  }

  // A table keyed by known family names (add_path, max_prefixes):
  // fn(family, "path.key.family", the key's position, the value) for each
  // entry whose key is one; `what` says what the table holds.
  template <typename F>
  void family_table(const toml::table& t, std::string_view path, std::string_view key, std::string_view what, F&& fn) {
    const toml::node* n = t.get(key);
    if (!n) return;
    const std::string tkey = join(path, key);
    const toml::table* ft = n->as_table();
    if (!ft) {
      error(*n, tkey, fmt::format("expected a table of {}, got {}", what, type_name(*n)));
      return;
    }
    for (auto&& [k, v] : *ft) {
      std::string fkey = fmt::format("{}.{}", tkey, k.str());
      codec::Family f;
      if (!codec::parse_family(k.str(), f) || codec::known_index(f) < 0) {
        error(k.source(), fkey, fmt::format("expected one of {}, got {}", known_families_text(), in_quotes(k.str())));
        continue;
      }
      fn(f, fkey, k.source(), v);
    }
  }

  // A list of distinct known families. Nothing when absent or wrong.
  std::optional<codec::FamilySet> family_list(const toml::table& t, std::string_view path, std::string_view key) {
    const toml::array* arr = array(t, path, key, "an array of family names");
    if (!arr) return std::nullopt;
    codec::FamilySet set;
    bool good = true;
    size_t idx = 0;
    for (const toml::node& el : *arr) {
      std::string el_key = fmt::format("{}[{}]", join(path, key), idx++);
      auto f = family(el, el_key);
      if (!f) {
        good = false;
        continue;
      }
      if (set.has(*f)) {
        error(el, el_key, fmt::format("family {} is listed twice", family_text(*f)));
        good = false;
        continue;
      }
      set.add(*f);
    }
    if (!good) return std::nullopt;
    return set;
  }

 private:
  std::string file_;
  ConfigErrors errors_;
};

bool valid_peer_name(std::string_view s) {
  if (s.empty() || s.size() > kMaxNameLen) return false;
  for (char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
              c == '-';
    if (!ok) return false;
  }
  return true;
}

// graceful_restart, graceful_restart_time, stale_routes_time,
// long_lived_stale_time of [router] or of a [[peer]] (which starts from
// [router]'s).
void parse_graceful(Checker& ck, const toml::table& t, std::string_view p, GracefulConfig& out) {
  if (auto v = ck.boolean(t, p, "graceful_restart")) out.enabled = *v;
  if (auto v = ck.integer(t, p, "graceful_restart_time", 0, kMaxRestartTime,
                          "0..4095 seconds (the capability's 12 bits)"))
    out.restart_time = static_cast<uint16_t>(*v);
  if (auto v = ck.integer(t, p, "stale_routes_time", 1, kMaxStaleRoutesTime, "1..86400 seconds"))
    out.stale_routes_time = static_cast<uint32_t>(*v);
  if (auto v = ck.integer(t, p, "long_lived_stale_time", 0, kMaxLongLivedStaleTime,
                          "0..16777215 seconds (the capability's 24 bits; 0: off)"))
    out.long_lived_stale_time = static_cast<uint32_t>(*v);
}

// A user or group name at table.key: POSIX portable names (what adduser
// takes by default); an error naming `what` otherwise.
std::optional<std::string> account_name(Checker& ck, const toml::table& t, std::string_view table, const char* key,
                                        std::string_view what) {
  auto s = ck.string(t, table, key, what);
  if (!s) return std::nullopt;
  const bool ok = !s->empty() && s->size() <= 32 && s->front() != '-' &&
                  std::all_of(s->begin(), s->end(), [](char c) {
                    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                           c == '-' || c == '.';
                  });
  if (ok) return std::string(*s);
  ck.error(*t.get(key), fmt::format("{}.{}", table, key),
           fmt::format("expected {} (letters, digits, \"_\", \"-\", \".\"; at most 32), got {}", what,
                       in_quotes(*s)));
  return std::nullopt;
}

void parse_router(Checker& ck, const toml::table& root, RouterConfig& out) {
  out.listen = {*net::IpAddress::parse("0.0.0.0"), *net::IpAddress::parse("::")};
  const toml::table* t = ck.table(root, "", "router");
  if (!t) {
    if (!root.get("router"))
      ck.error(toml::source_region{{1, 1}, {1, 1}, {}}, "router",
               "missing required table [router] (with asn and router_id)");
    return;
  }
  constexpr std::string_view p = "router";
  ck.only_keys(*t, p, {"asn", "router_id", "listen", "port", "rfc8212", "cluster_id", "withdraw_threads",
                          "expected_ipv4_prefixes", "expected_ipv6_prefixes", "graceful_restart",
                          "graceful_restart_time", "stale_routes_time", "long_lived_stale_time",
                          "selection_deferral_time", "user"});

  if (!t->get("asn")) ck.missing(*t, p, "asn", "this router's AS number");
  if (auto v = ck.asn(*t, p, "asn")) out.asn = *v;

  if (!t->get("router_id")) ck.missing(*t, p, "router_id", "an IPv4 address in dotted-quad form");
  if (auto s = ck.string(*t, p, "router_id", "an IPv4 address in dotted-quad form")) {
    auto a = net::IpAddress::parse(*s);
    if (!a || !a->is_v4())
      ck.error(*t->get("router_id"), "router.router_id",
               fmt::format("expected an IPv4 address in dotted-quad form, got {}", in_quotes(*s)));
    else if (a->is_unspecified())
      ck.error(*t->get("router_id"), "router.router_id", "expected a non-zero router id, got \"0.0.0.0\"");
    else
      out.router_id = *a;
  }

  if (const toml::array* arr = ck.array(*t, p, "listen", "an array of addresses")) {
    out.listen.clear();
    size_t idx = 0;
    for (const toml::node& el : *arr) {
      std::string key = fmt::format("router.listen[{}]", idx++);
      auto s = ck.string_node(el, key, "an IP address");
      if (!s) continue;
      auto a = net::IpAddress::parse(*s);
      if (!a || a->is_multicast()) {
        ck.error(el, key, fmt::format("expected an IPv4 or IPv6 address (\"0.0.0.0\", \"::\" for all), got {}",
                                      in_quotes(*s)));
        continue;
      }
      if (std::find(out.listen.begin(), out.listen.end(), *a) != out.listen.end()) {
        ck.error(el, key, fmt::format("address {} is listed twice", a->to_string()));
        continue;
      }
      out.listen.push_back(*a);
    }
  }
  if (auto v = ck.port(*t, p, "port")) out.port = *v;
  if (auto v = ck.boolean(*t, p, "rfc8212")) out.rfc8212 = *v;
  if (auto s = ck.string(*t, p, "cluster_id", "an IPv4 address in dotted-quad form")) {
    auto a = net::IpAddress::parse(*s);
    if (!a || !a->is_v4() || a->is_unspecified())
      ck.error(*t->get("cluster_id"), "router.cluster_id",
               fmt::format("expected a non-zero IPv4 address in dotted-quad form, got {}", in_quotes(*s)));
    else
      out.cluster_id = *a;
  }
  if (auto v = ck.integer(*t, p, "withdraw_threads", 1, 64, "a thread count 1..64"))
    out.withdraw_threads = static_cast<uint32_t>(*v);
  for (auto [key, field] : {std::pair{"expected_ipv4_prefixes", &out.expected_ipv4_prefixes},
                            std::pair{"expected_ipv6_prefixes", &out.expected_ipv6_prefixes}}) {
    if (auto v = ck.integer(*t, p, key, 0, kMaxExpectedPrefixes, "a prefix count 0..20000000"))
      *field = static_cast<uint32_t>(*v);
  }
  parse_graceful(ck, *t, p, out.graceful);
  if (auto v = ck.integer(*t, p, "selection_deferral_time", 1, kMaxSelectionDeferralTime, "1..3600 seconds"))
    out.selection_deferral_time = static_cast<uint32_t>(*v);
  // "" is the default written out (petrel check --dump): no user.
  if (const toml::node* n = t->get("user"); n && n->as_string() && n->as_string()->get().empty()) out.user.clear();
  else if (auto s = account_name(ck, *t, p, "user", "a user name")) out.user = *s;
}

void parse_http(Checker& ck, const toml::table& root, HttpConfig& out) {
  out.listen = Endpoint{*net::IpAddress::parse("127.0.0.1"), 8179};
  const toml::table* t = ck.table(root, "", "http");
  if (!t) return;
  ck.only_keys(*t, "http", {"listen", "max_connections", "max_connections_per_address", "idle_timeout"});
  constexpr std::string_view kWhat = "\"ADDRESS:PORT\" (\"[IPv6]:PORT\" for IPv6) or \"\"";
  if (auto s = ck.string(*t, "http", "listen", kWhat)) {
    if (s->empty()) {
      out.listen.reset();
    } else {
      Endpoint e;
      if (auto err = parse_endpoint(*s, e)) ck.error(*t->get("listen"), "http.listen", std::move(*err));
      else out.listen = e;
    }
  }
  if (auto v = ck.integer(*t, "http", "max_connections", 1, 1024, "a connection count 1..1024"))
    out.max_connections = static_cast<uint32_t>(*v);
  if (auto v = ck.integer(*t, "http", "max_connections_per_address", 1, 1024, "a connection count 1..1024"))
    out.max_connections_per_address = static_cast<uint32_t>(*v);
  if (auto v = ck.integer(*t, "http", "idle_timeout", 1, 3600, "1..3600 seconds"))
    out.idle_timeout = static_cast<uint32_t>(*v);
  if (out.max_connections_per_address > out.max_connections && t->get("max_connections_per_address"))
    ck.error(*t->get("max_connections_per_address"), "http.max_connections_per_address",
             fmt::format("expected at most max_connections ({}), got {}", out.max_connections,
                         out.max_connections_per_address));
}

void parse_control(Checker& ck, const toml::table& root, ControlConfig& out) {
  const toml::table* t = ck.table(root, "", "control");
  if (!t) return;
  ck.only_keys(*t, "control", {"socket", "group", "max_connections", "max_injected_routes", "injected_routes_file"});
  if (auto s = ck.string(*t, "control", "socket", "an absolute path or \"\"")) {
    // sun_path holds 108 bytes with the terminating zero.
    if (!s->empty() && (s->front() != '/' || s->size() > 107 || s->back() == '/' ||
                        s->find('\0') != std::string::npos))
      ck.error(*t->get("socket"), "control.socket",
               fmt::format("expected an absolute file path of at most 107 bytes or \"\", got {}", in_quotes(*s)));
    else
      out.socket = *s;
  }
  if (auto s = account_name(ck, *t, "control", "group", "a group name")) out.group = *s;
  if (auto v = ck.integer(*t, "control", "max_connections", 1, 256, "a connection count 1..256"))
    out.max_connections = static_cast<uint32_t>(*v);
  if (auto v = ck.integer(*t, "control", "max_injected_routes", 0, 10'000'000, "a route count 0..10000000"))
    out.max_injected_routes = static_cast<uint32_t>(*v);
  if (auto s = ck.string(*t, "control", "injected_routes_file", "an absolute path or \"\"")) {
    if (!s->empty() && (s->front() != '/' || s->back() == '/' || s->size() > 4000 ||
                        s->find('\0') != std::string::npos))
      ck.error(*t->get("injected_routes_file"), "control.injected_routes_file",
               fmt::format("expected an absolute file path or \"\", got {}", in_quotes(*s)));
    else
      out.injected_routes_file = *s;
  }
}

void parse_log(Checker& ck, const toml::table& root, LogConfig& out) {
  const toml::table* t = ck.table(root, "", "log");
  if (!t) return;
  ck.only_keys(*t, "log", {"format", "level"});
  if (auto s = ck.string(*t, "log", "format", "\"text\" or \"json\"")) {
    if (*s == "text") out.format = LogFormat::kText;
    else if (*s == "json") out.format = LogFormat::kJson;
    else ck.error(*t->get("format"), "log.format", fmt::format("expected \"text\" or \"json\", got {}", in_quotes(*s)));
  }
  constexpr std::string_view kLevels = "one of \"debug\", \"info\", \"warn\", \"error\"";
  if (auto s = ck.string(*t, "log", "level", kLevels)) {
    bool found = false;
    for (LogLevel l : {LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarn, LogLevel::kError}) {
      if (*s == log_level_name(l)) {
        out.level = l;
        found = true;
      }
    }
    if (!found) ck.error(*t->get("level"), "log.level", fmt::format("expected {}, got {}", kLevels, in_quotes(*s)));
  }
}

void parse_kernel(Checker& ck, const toml::table& root, KernelConfig& out) {
  const toml::table* t = ck.table(root, "", "kernel");
  if (!t) return;
  constexpr std::string_view p = "kernel";
  ck.only_keys(*t, p, {"enabled", "table", "metric", "multipath", "nexthop_objects", "static_metric",
                       "blackhole_community", "resolve_table", "resolve_via_default", "max_resolve_routes"});
  if (auto v = ck.boolean(*t, p, "enabled")) out.enabled = *v;
  if (auto v = ck.integer(*t, p, "table", 1, kMaxU32, "a routing table id 1..4294967295 other than 255")) {
    if (*v == kRtTableLocal)
      ck.error(*t->get("table"), "kernel.table", "table 255 is the kernel's local table; expected another id");
    else
      out.table = static_cast<uint32_t>(*v);
  }
  if (auto v = ck.integer(*t, p, "metric", 0, kMaxU32, "a metric 0..4294967295")) out.metric = static_cast<uint32_t>(*v);
  if (auto v = ck.boolean(*t, p, "multipath")) out.multipath = *v;
  if (auto v = ck.boolean(*t, p, "nexthop_objects")) out.nexthop_objects = *v;
  if (auto v = ck.integer(*t, p, "static_metric", 0, kMaxU32, "a metric 0..4294967295 other than kernel.metric")) {
    if (static_cast<uint32_t>(*v) == out.metric)
      ck.error(*t->get("static_metric"), "kernel.static_metric",
               "equal to kernel.metric: [[static]] routes need a metric of their own");
    else
      out.static_metric = static_cast<uint32_t>(*v);
  } else {
    out.static_metric = out.metric == 0 ? 1 : out.metric - 1;  // one below (preferred), unless metric is 0
  }
  if (auto v = ck.boolean(*t, p, "blackhole_community")) out.blackhole_community = *v;
  if (auto v = ck.integer(*t, p, "resolve_table", 1, kMaxU32, "a routing table id 1..4294967295"))
    out.resolve_table = static_cast<uint32_t>(*v);
  if (auto v = ck.boolean(*t, p, "resolve_via_default")) out.resolve_via_default = *v;
  if (auto v = ck.integer(*t, p, "max_resolve_routes", 1, 100'000'000, "a count 1..100000000"))
    out.max_resolve_routes = static_cast<uint64_t>(*v);
}

// [mrt] (docs/configuration.md): a file pattern is an absolute path whose
// file name, when files are rotated, begins with a fixed part (rotation
// removes the files of the folder that begin with it).
void parse_mrt(Checker& ck, const toml::table& root, MrtConfig& out) {
  const toml::table* t = ck.table(root, "", "mrt");
  if (!t) return;
  constexpr std::string_view p = "mrt";
  ck.only_keys(*t, p, {"dump_interval", "dump_file", "dump_gzip", "dump_keep", "updates_file", "updates_interval",
                       "updates_gzip", "updates_keep", "updates_queue"});
  auto pattern = [&](std::string_view key, bool may_be_empty, std::string& into) {
    const std::string_view what = may_be_empty ? "an absolute file path (strftime pattern) or \"\""
                                               : "an absolute file path (strftime pattern)";
    auto s = ck.string(*t, p, key, what);
    if (!s) return;
    if (s->empty() && may_be_empty) {
      into.clear();
      return;
    }
    if (s->empty() || s->front() != '/' || s->back() == '/' || s->size() > 4000 || s->find('\0') != std::string::npos)
      ck.error(*t->get(key), fmt::format("mrt.{}", key), fmt::format("expected {}, got {}", what, in_quotes(*s)));
    else
      into = *s;
  };
  if (auto v = ck.integer(*t, p, "dump_interval", 0, 604'800, "0 (no dumps) or 1..604800 seconds"))
    out.dump_interval = static_cast<uint32_t>(*v);
  pattern("dump_file", false, out.dump_file);
  if (auto v = ck.boolean(*t, p, "dump_gzip")) out.dump_gzip = *v;
  if (auto v = ck.integer(*t, p, "dump_keep", 0, 1'000'000, "a file count 0..1000000 (0: all)"))
    out.dump_keep = static_cast<uint32_t>(*v);
  pattern("updates_file", true, out.updates_file);
  if (auto v = ck.integer(*t, p, "updates_interval", 1, 604'800, "1..604800 seconds"))
    out.updates_interval = static_cast<uint32_t>(*v);
  if (auto v = ck.boolean(*t, p, "updates_gzip")) out.updates_gzip = *v;
  if (auto v = ck.integer(*t, p, "updates_keep", 0, 1'000'000, "a file count 0..1000000 (0: all)"))
    out.updates_keep = static_cast<uint32_t>(*v);
  if (auto v = ck.integer(*t, p, "updates_queue", 1, 10'000'000, "a record count 1..10000000"))
    out.updates_queue = static_cast<uint32_t>(*v);
  // Rotation by a prefix: one that is empty would take every file of the
  // folder, and the two kinds must not take each other's.
  auto fixed = [](const std::string& pat) {
    std::filesystem::path f(pat);
    std::string name = f.filename().string();
    return std::pair{f.parent_path().string(), name.substr(0, name.find('%'))};
  };
  auto check_keep = [&](std::string_view key, uint32_t keep, const std::string& pat, std::string_view file_key) {
    if (keep != 0 && !pat.empty() && fixed(pat).second.empty() && t->get(key))
      ck.error(*t->get(key), fmt::format("mrt.{}", key),
               fmt::format("rotation needs mrt.{}'s file name to begin with a fixed part (\"rib.%Y...\"), got {}",
                           file_key, in_quotes(pat)));
  };
  check_keep("dump_keep", out.dump_keep, out.dump_file, "dump_file");
  check_keep("updates_keep", out.updates_keep, out.updates_file, "updates_file");
  if (!out.updates_file.empty() && (out.dump_keep != 0 || out.updates_keep != 0) && t->get("updates_file")) {
    auto [ddir, dfix] = fixed(out.dump_file);
    auto [udir, ufix] = fixed(out.updates_file);
    if (ddir == udir && (dfix.starts_with(ufix) || ufix.starts_with(dfix)))
      ck.error(*t->get("updates_file"), "mrt.updates_file",
               fmt::format("expected a folder or file name beginning other than mrt.dump_file's ({}): rotation "
                           "would remove one kind's files as the other's, got {}",
                           in_quotes(out.dump_file), in_quotes(out.updates_file)));
  }
}

// A path named in the configuration, as used: a relative one is taken
// from the configuration file's folder.
std::string path_from(const std::string& path, std::string_view config_file) {
  std::filesystem::path p(path);
  if (!p.is_relative()) return path;
  std::filesystem::path dir = std::filesystem::path(config_file).parent_path();
  return dir.empty() ? path : (dir / p).string();
}

// A file the configuration names, read: at most `max` octets of it into
// `text` (max + 1 when it is longer, for the caller to refuse). Opened
// without waiting and taken only when it is a regular file, so that a FIFO
// (whose open waits for a writer) or a device such as /dev/zero (which
// never ends) named by mistake cannot hang a reload on the main loop or
// fill the memory. Nothing, or why not. max 0: only opened and checked.
std::optional<std::string> read_regular(const std::string& path, size_t max, std::string& text) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return fmt::format("cannot read {}: {}", in_quotes(path), std::strerror(errno));
  struct stat st {};
  std::optional<std::string> why;
  if (::fstat(fd, &st) != 0) {
    why = fmt::format("cannot read {}: {}", in_quotes(path), std::strerror(errno));
  } else if (S_ISDIR(st.st_mode)) {
    why = fmt::format("cannot read {}: is a directory", in_quotes(path));
  } else if (!S_ISREG(st.st_mode)) {
    why = fmt::format("cannot read {}: not a regular file", in_quotes(path));
  }
  text.clear();
  if (!why && max > 0) {
    text.resize(std::min<size_t>(max + 1, static_cast<size_t>(std::max<off_t>(st.st_size, 0)) + 1));
    size_t got = 0;
    while (got < text.size()) {  // ends at end of file, an error, or max + 1 octets
      const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        why = fmt::format("cannot read {}: {}", in_quotes(path), std::strerror(errno));
        break;
      }
      if (n == 0) break;
      got += static_cast<size_t>(n);
      // The file grew since fstat: room for the rest, up to max + 1.
      if (got == text.size() && got <= max) text.resize(std::min(max + 1, got * 2));
    }
    text.resize(got);
  }
  ::close(fd);
  return why;
}

// rpki.cache.tls_ca_file: it must hold at least one PEM certificate, so
// that a wrong file is found by `petrel check` rather than at the first
// handshake. Nothing when it does, else why not.
std::optional<std::string> check_ca_file(const std::string& path) {
  BIO* bio = BIO_new_file(path.c_str(), "r");
  if (!bio) return fmt::format("cannot read {}: {}", in_quotes(path), std::strerror(errno));
  size_t certs = 0;
  while (X509* x = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
    X509_free(x);
    ++certs;
  }
  BIO_free(bio);
  ERR_clear_error();  // the end of the file reads as an error
  if (certs == 0) return fmt::format("{} holds no PEM certificate (\"-----BEGIN CERTIFICATE-----\")", in_quotes(path));
  return std::nullopt;
}

// A name a TLS certificate can carry: letters, digits, '-' and '.'
// (RFC 1123), or an IP address.
bool valid_server_name(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  if (net::IpAddress::parse(s)) return true;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.';
  });
}

// A file the configuration names that must be readable (its folder
// taken for a relative path) and pass `check` (when given: why it cannot
// be used, or nothing): the path used, or nothing after an error at key
// `key` of table t.
std::optional<std::string> usable_file(Checker& ck, const toml::table& t, const std::string& p, std::string_view key,
                                       std::string_view what,
                                       std::optional<std::string> (*check)(const std::string&) = nullptr) {
  auto s = ck.string(t, p, key, what);
  if (!s) return std::nullopt;
  if (s->empty()) {
    ck.error(*t.get(key), join(p, key), fmt::format("expected {}, got \"\"", what));
    return std::nullopt;
  }
  std::string path = path_from(std::string(*s), ck.file());
  std::string unused;
  if (auto why = read_regular(path, 0, unused)) {
    ck.error(*t.get(key), join(p, key), std::move(*why));
    return std::nullopt;
  }
  if (auto why = check ? check(path) : std::nullopt) {
    ck.error(*t.get(key), join(p, key), std::move(*why));
    return std::nullopt;
  }
  return path;
}

std::optional<std::string> read_secret(std::string& path, std::string_view config_file, std::string& why);

// rpki.cache.ssh_key_file: a private key libssh can use (not encrypted:
// nothing would be there to ask for the passphrase).
std::optional<std::string> check_ssh_key(const std::string& path) {
  ssh_key key = nullptr;
  if (ssh_pki_import_privkey_file(path.c_str(), nullptr, nullptr, nullptr, &key) != SSH_OK)
    return fmt::format("{} is not a private key libssh can read (OpenSSH or PEM format, without a passphrase)",
                       in_quotes(path));
  ssh_key_free(key);
  return std::nullopt;
}

// The keys of [[rpki.cache]] p that choose and set up its transport.
void parse_cache_transport(Checker& ck, const toml::table& c, const std::string& p, RpkiCacheConfig& cache) {
  constexpr std::string_view kTransports = "\"tcp\", \"tls\" or \"ssh\"";
  if (auto s = ck.string(c, p, "transport", kTransports)) {
    if (*s == "tls") {
      cache.transport = RtrTransport::kTls;
      if (!c.get("port")) cache.port = 324;  // rpki-rtr-tls (RFC 6810 section 7)
    } else if (*s == "ssh") {
      cache.transport = RtrTransport::kSsh;
      if (!c.get("port")) cache.port = 22;  // RFC 6810 section 7
    } else if (*s != "tcp") {
      ck.error(*c.get("transport"), join(p, "transport"), fmt::format("expected {}, got {}", kTransports, in_quotes(*s)));
    }
  }
  constexpr std::pair<std::string_view, RtrTransport> kKeys[] = {
      {"tls_ca_file", RtrTransport::kTls},  {"tls_server_name", RtrTransport::kTls},
      {"ssh_user", RtrTransport::kSsh},     {"ssh_known_hosts", RtrTransport::kSsh},
      {"ssh_key_file", RtrTransport::kSsh}, {"ssh_password_file", RtrTransport::kSsh},
  };
  for (const auto& [key, transport] : kKeys) {
    if (c.get(key) && cache.transport != transport)
      ck.error(*c.get(key), join(p, key), fmt::format("only for transport = \"{}\"", transport_name(transport)));
  }
  if (cache.transport == RtrTransport::kTls) {
    if (auto path = usable_file(ck, c, p, "tls_ca_file", "the path of a file of PEM CA certificates", check_ca_file))
      cache.tls_ca_file = std::move(*path);
    if (auto s = ck.string(c, p, "tls_server_name", "a host name or IP address")) {
      if (valid_server_name(*s))
        cache.tls_server_name = *s;
      else
        ck.error(*c.get("tls_server_name"), join(p, "tls_server_name"),
                 fmt::format("expected a host name or IP address, got {}", in_quotes(*s)));
    }
  }
  if (cache.transport != RtrTransport::kSsh) return;
  if (!c.get("ssh_user")) ck.missing(c, p, "ssh_user", "the user to log in to the cache as");
  if (auto s = ck.string(c, p, "ssh_user", "a user name")) {
    if (s->empty())
      ck.error(*c.get("ssh_user"), join(p, "ssh_user"), "expected a user name, got \"\"");
    else
      cache.ssh_user = *s;
  }
  if (!c.get("ssh_known_hosts"))
    ck.missing(c, p, "ssh_known_hosts", "the path of a known_hosts file that holds the cache's host key");
  if (auto path = usable_file(ck, c, p, "ssh_known_hosts", "the path of a known_hosts file"))
    cache.ssh_known_hosts = std::move(*path);
  if (c.get("ssh_key_file") && c.get("ssh_password_file")) {
    ck.error(*c.get("ssh_password_file"), join(p, "ssh_password_file"), "set ssh_key_file or ssh_password_file, not both");
    return;
  }
  if (!c.get("ssh_key_file") && !c.get("ssh_password_file")) {
    ck.missing(c, p, "ssh_key_file", "the path of a private key, or ssh_password_file with that of a password");
    return;
  }
  if (auto path = usable_file(ck, c, p, "ssh_key_file", "the path of a private key file", check_ssh_key))
    cache.ssh_key_file = std::move(*path);
  if (auto s = ck.string(c, p, "ssh_password_file", "the path of a file that holds the password")) {
    std::string path(*s), why;
    auto secret = s->empty() ? std::nullopt : read_secret(path, ck.file(), why);
    if (!secret || secret->empty()) {
      ck.error(*c.get("ssh_password_file"), join(p, "ssh_password_file"),
               s->empty() ? std::string("expected the path of a file that holds the password, got \"\"")
                          : (secret ? fmt::format("{} is empty", in_quotes(path)) : why));
    } else {
      cache.ssh_password_file = std::move(path);
      cache.ssh_password = std::move(*secret);
    }
  }
}

// One SLURM file (RFC 8416): read (bounded) and parsed, or why not. A
// relative path is taken from the configuration file's folder; `path`
// becomes the path used.
std::optional<rpki::Slurm> read_slurm(std::string& path, std::string_view config_file, std::string& why) {
  path = path_from(path, config_file);
  // One byte past the limit is enough for parse_slurm to refuse the file.
  std::string text;
  if (auto e = read_regular(path, rpki::kMaxSlurmBytes, text)) {
    why = std::move(*e);
    return std::nullopt;
  }
  auto parsed = rpki::parse_slurm(text);
  if (!parsed) {
    const rpki::SlurmError& e = parsed.error();
    why = e.line != 0 ? fmt::format("{}:{}:{}: {}", path, e.line, e.column, e.message)
                      : fmt::format("{}: {}", path, e.to_string());
    return std::nullopt;
  }
  return std::move(*parsed);
}

// [rpki] slurm: the files, each read and checked, then the overlap rule
// of RFC 8416 section 4.2 across them.
void parse_slurm_files(Checker& ck, const toml::table& t, RpkiConfig& out) {
  const toml::array* arr = ck.array(t, "rpki", "slurm", "an array of SLURM file paths");
  if (!arr) return;
  std::vector<std::pair<const toml::node*, size_t>> nodes;  // of out.slurm's files: element, index
  size_t idx = 0;
  for (const toml::node& el : *arr) {
    std::string key = fmt::format("rpki.slurm[{}]", idx++);
    auto s = el.value_exact<std::string>();
    if (!s || s->empty()) {
      ck.error(el, key, fmt::format("expected the path of a SLURM file (RFC 8416), got {}",
                                    s ? std::string("\"\"") : std::string(type_name(el))));
      continue;
    }
    std::string path = *s;
    std::string why;
    auto data = read_slurm(path, ck.file(), why);
    if (!data) {
      ck.error(el, key, std::move(why));
      continue;
    }
    auto same = std::find_if(out.slurm.begin(), out.slurm.end(), [&](const SlurmFileConfig& f) { return f.path == path; });
    if (same != out.slurm.end()) {
      ck.error(el, key, fmt::format("{} is listed twice", in_quotes(path)));
      continue;
    }
    out.slurm.push_back(SlurmFileConfig{std::move(path), std::move(*data)});
    nodes.emplace_back(&el, idx - 1);
  }
  std::vector<rpki::Slurm> files;
  for (const SlurmFileConfig& f : out.slurm) files.push_back(f.data);
  if (auto o = rpki::find_overlap(files)) {
    ck.error(*nodes[o->file_b].first, fmt::format("rpki.slurm[{}]", nodes[o->file_b].second),
             fmt::format("{} overlaps {}: {} (RFC 8416 section 4.2: no prefix or router SKI of one SLURM file may "
                         "overlap another's)",
                         in_quotes(out.slurm[o->file_b].path), in_quotes(out.slurm[o->file_a].path), o->what));
  }
}

void parse_rpki(Checker& ck, const toml::table& root, RpkiConfig& out) {
  const toml::table* t = ck.table(root, "", "rpki");
  if (!t) return;
  ck.only_keys(*t, "rpki",
               {"cache", "reject_invalid", "reject_aspa_invalid", "max_vrps", "answer_timeout", "notify_gap",
                "max_version", "slurm"});
  parse_slurm_files(ck, *t, out);
  if (auto v = ck.boolean(*t, "rpki", "reject_invalid")) out.reject_invalid = *v;
  if (auto v = ck.boolean(*t, "rpki", "reject_aspa_invalid")) out.reject_aspa_invalid = *v;
  if (auto v = ck.integer(*t, "rpki", "max_vrps", 1, 100'000'000, "a VRP count 1..100000000"))
    out.max_vrps = static_cast<uint32_t>(*v);
  if (auto v = ck.integer(*t, "rpki", "answer_timeout", 1, 3600, "1..3600 seconds"))
    out.answer_timeout = static_cast<uint32_t>(*v);
  if (auto v = ck.integer(*t, "rpki", "notify_gap", 0, 3600, "0..3600 seconds"))
    out.notify_gap = static_cast<uint32_t>(*v);
  if (auto v = ck.integer(*t, "rpki", "max_version", 0, 2, "an RTR version 0..2"))
    out.max_version = static_cast<uint8_t>(*v);
  const toml::array* arr = ck.array(*t, "rpki", "cache", "an array of tables ([[rpki.cache]])");
  if (!arr) return;
  size_t idx = 0;
  for (const toml::node& el : *arr) {
    std::string p = fmt::format("rpki.cache[{}]", idx++);
    const toml::table* c = el.as_table();
    if (!c) {
      ck.error(el, p, fmt::format("expected a table ([[rpki.cache]]), got {}", type_name(el)));
      continue;
    }
    ck.only_keys(*c, p, {"address", "port", "preference", "transport", "tls_ca_file", "tls_server_name", "ssh_user",
                         "ssh_known_hosts", "ssh_key_file", "ssh_password_file"});
    RpkiCacheConfig cache;
    bool good = true;
    if (!c->get("address")) {
      ck.missing(*c, p, "address", "the cache's IP address");
      good = false;
    }
    if (auto s = ck.string(*c, p, "address", "an IP address")) {
      ScopedAddress sa;
      if (auto err = parse_scoped_address(*s, sa)) {
        ck.error(*c->get("address"), join(p, "address"), std::move(*err));
        good = false;
      } else {
        cache.address = sa.address;
        cache.interface = sa.interface;
      }
    } else {
      good = false;
    }
    if (auto v = ck.port(*c, p, "port")) cache.port = *v;
    if (auto v = ck.integer(*c, p, "preference", 0, 255, "a preference 0..255 (lower is preferred)"))
      cache.preference = static_cast<uint8_t>(*v);
    parse_cache_transport(ck, *c, p, cache);
    if (!good) continue;
    for (const RpkiCacheConfig& o : out.caches) {
      if (o.address == cache.address && o.interface == cache.interface && o.port == cache.port) {
        ck.error(*c->get("address"), join(p, "address"),
                 fmt::format("cache {} port {} is listed twice", cache.address.to_string(), cache.port));
        good = false;
      }
    }
    if (good) out.caches.push_back(std::move(cache));
  }
}

// enforce_first_as and the max_prefixes keys of a peer (import guards,
// docs/export.md). families_ok: peer.families is the peer's. A
// route-server client's enforce_first_as is off unless set.
void parse_peer_limits(Checker& ck, const toml::table& t, const std::string& p, bool families_ok, PeerConfig& peer) {
  if (peer.route_server_client) peer.enforce_first_as = false;
  if (auto v = ck.boolean(t, p, "enforce_first_as")) peer.enforce_first_as = *v;
  ck.family_table(t, p, "max_prefixes", "family = number of routes",
                  [&](codec::Family f, const std::string& fkey, const toml::source_region& at, const toml::node& v) {
                    if (families_ok && !peer.families.has(f)) {
                      ck.error(at, fkey,
                               fmt::format("a limit for {}, which is not in this peer's families", family_text(f)));
                      return;
                    }
                    const auto* i = v.as_integer();
                    if (!i || i->get() < 1 || i->get() > kMaxU32) {
                      ck.error(v, fkey,
                               fmt::format("expected a number of routes 1..4294967295, got {}",
                                           i ? std::to_string(i->get()) : std::string(type_name(v))));
                      return;
                    }
                    peer.max_prefixes[static_cast<size_t>(codec::known_index(f))] = static_cast<uint32_t>(i->get());
                  });
  if (auto s = ck.string(t, p, "max_prefixes_action", "\"cease\" or \"warn\"")) {
    if (*s == "warn") peer.max_prefixes_warn_only = true;
    else if (*s != "cease")
      ck.error(*t.get("max_prefixes_action"), join(p, "max_prefixes_action"),
               fmt::format("expected \"cease\" or \"warn\", got {}", in_quotes(*s)));
  }
  if (auto v = ck.integer(t, p, "max_prefixes_restart", 0, kMaxRestart,
                          "0..604800 seconds (0: the session stays down until a reload)"))
    peer.max_prefixes_restart = static_cast<uint32_t>(*v);
  if (auto v = ck.integer(t, p, "max_prefixes_warn", 1, 100, "a percentage 1..100 of max_prefixes"))
    peer.max_prefixes_warn = static_cast<uint8_t>(*v);
}

// Where each peer's name and address were first seen, for duplicates.
struct PeerSeen {
  std::map<std::string, uint32_t, std::less<>> names;
  std::map<std::pair<net::IpAddress, std::string>, std::pair<std::string, uint32_t>> addresses;
  // Link-local peers by address alone: the kernel keys TCP MD5 and TCP-AO
  // by address (interfaces only for VRFs), so one address on two links
  // must have one key. The peer's name, its MD5 and AO secrets.
  std::map<net::IpAddress, std::tuple<std::string, std::string, std::string>> link_local_keys;
};

// Longer than any password a file given as one holds (TCP MD5 and TCP-AO
// keys are at most 80 octets; an SSH password has no set bound).
constexpr size_t kMaxSecretFileBytes = 4096;

// The secret in a password file: its contents less one trailing newline.
// A relative path is taken from the configuration file's folder; `path`
// becomes the path used. Nothing (with why) when it cannot be used.
std::optional<std::string> read_secret(std::string& path, std::string_view config_file, std::string& why) {
  path = path_from(path, config_file);
  std::string text;
  if (auto e = read_regular(path, kMaxSecretFileBytes, text)) {
    why = std::move(*e);
    return std::nullopt;
  }
  if (text.size() > kMaxSecretFileBytes) {
    why = fmt::format("{} holds more than {} octets: not a password", in_quotes(path), kMaxSecretFileBytes);
    return std::nullopt;
  }
  if (!text.empty() && text.back() == '\n') text.pop_back();
  if (!text.empty() && text.back() == '\r') text.pop_back();
  return text;
}

constexpr size_t kMaxKeyLen = 80;  // TCP_MD5SIG_MAXKEYLEN, TCP_AO_MAXKEYLEN

// `password` or `password_file` of table t (a peer, or its tcp_ao): the
// secret into `secret`, the file's path into `file`. Both set is an error.
void parse_secret(Checker& ck, const toml::table& t, std::string_view p, std::string& secret, std::string& file) {
  constexpr std::string_view kWhat = "a password of 1 to 80 octets";
  auto inline_secret = ck.string(t, p, "password", kWhat);
  auto path = ck.string(t, p, "password_file", "the path of a file that holds the password");
  if (t.get("password") && t.get("password_file")) {
    ck.error(*t.get("password_file"), join(p, "password_file"), "set password or password_file, not both");
    return;
  }
  const toml::node* n = t.get("password") ? t.get("password") : t.get("password_file");
  std::string key = join(p, t.get("password") ? "password" : "password_file");
  std::optional<std::string> value;
  if (inline_secret) value = std::string(*inline_secret);
  if (path) {
    std::string where(*path);
    std::string why;
    if (where.empty()) {
      ck.error(*n, key, "expected the path of a file that holds the password, got \"\"");
      return;
    }
    value = read_secret(where, ck.file(), why);
    if (!value) {
      ck.error(*n, key, std::move(why));
      return;
    }
    file = where;
  }
  if (!value) return;
  if (value->empty() || value->size() > kMaxKeyLen) {
    ck.error(*n, key, fmt::format("expected {}{}, got {} octets", kWhat, path ? " in the file" : "", value->size()));
    return;
  }
  secret = std::move(*value);
}

// Transport security: TCP MD5 (RFC 2385), TCP-AO (RFC 5925), GTSM (RFC
// 5082) and the hops to the peer.
void parse_transport(Checker& ck, const toml::table& t, const std::string& p, uint32_t router_asn,
                     PeerConfig& peer) {
  parse_secret(ck, t, p, peer.password, peer.password_file);
  if (const toml::node* n = t.get("tcp_ao")) {
    std::string ap = join(p, "tcp_ao");
    const toml::table* ao = n->as_table();
    if (!ao) {
      ck.error(*n, ap, fmt::format("expected a table {{ key_id = N, password = \"...\" }}, got {}", type_name(*n)));
    } else {
      ck.only_keys(*ao, ap, {"key_id", "rnext_key_id", "password", "password_file", "algorithm"});
      TcpAoConfig c;
      if (!ao->get("key_id")) ck.missing(*ao, ap, "key_id", "the KeyID 0..255 of the segments we send");
      if (auto v = ck.integer(*ao, ap, "key_id", 0, 255, "a KeyID 0..255")) c.key_id = static_cast<uint8_t>(*v);
      c.rnext_key_id = c.key_id;
      if (auto v = ck.integer(*ao, ap, "rnext_key_id", 0, 255, "a KeyID 0..255"))
        c.rnext_key_id = static_cast<uint8_t>(*v);
      if (auto s = ck.string(*ao, ap, "algorithm", "\"hmac-sha1\" or \"cmac-aes128\"")) {
        if (*s != "hmac-sha1" && *s != "cmac-aes128")
          ck.error(*ao->get("algorithm"), join(ap, "algorithm"),
                   fmt::format("expected \"hmac-sha1\" or \"cmac-aes128\" (RFC 5926), got {}", in_quotes(*s)));
        else
          c.algorithm = std::string(*s);
      }
      if (!ao->get("password") && !ao->get("password_file"))
        ck.missing(*ao, ap, "password", "the master key, or password_file with the path of a file that holds it");
      parse_secret(ck, *ao, ap, c.password, c.password_file);
      if (t.get("password") || t.get("password_file"))
        ck.error(*n, ap, "TCP-AO and TCP MD5 (password) cannot both protect a session (RFC 5925 section 2.2)");
      peer.tcp_ao = std::move(c);
    }
  }
  if (auto v = ck.boolean(t, p, "ttl_security")) peer.ttl_security = *v;
  peer.multihop = default_multihop(peer, router_asn);
  if (auto v = ck.integer(t, p, "multihop", 1, 255, "a hop count 1..255 (1: directly connected)"))
    peer.multihop = static_cast<uint8_t>(*v);
  peer.link_down_ends_session = peer.is_ebgp(router_asn) && peer.multihop == 1;
  if (auto v = ck.boolean(t, p, "link_down_ends_session")) peer.link_down_ends_session = *v;
  if (auto v = ck.boolean(t, p, "damp_oscillations")) peer.damp_oscillations = *v;
}

// One link-local address on several links has one key (see PeerSeen).
void check_link_local_keys(Checker& ck, const toml::table& t, std::string_view p, const PeerConfig& peer,
                           PeerSeen& seen) {
  if (!peer.address.is_link_local()) return;
  std::string ao = peer.tcp_ao ? peer.tcp_ao->password : std::string();
  auto [it, fresh] = seen.link_local_keys.try_emplace(peer.address, peer.name, peer.password, ao);
  if (fresh) return;
  const auto& [other, md5, other_ao] = it->second;
  if (md5 != peer.password || other_ao != ao)
    ck.error(*t.get("address"), join(p, "address"),
             fmt::format("peer {} has the same link-local address with another key: the kernel keys TCP MD5 and "
                         "TCP-AO by address (an interface only for a VRF), so give both the same password",
                         in_quotes(other)));
}

// no_listener: router.listen is written as [] (not merely left empty by
// its own errors, which are reported already).
void parse_peer(Checker& ck, const toml::table& t, const std::string& p, bool no_listener, PeerSeen& seen,
                const RouterConfig& router, std::vector<PeerConfig>& peers) {
  const uint32_t router_asn = router.asn;
  ck.only_keys(t, p,
               {"name", "address", "asn", "port", "passive", "hold_time", "keepalive", "connect_retry", "families",
                "add_path", "extended_next_hop", "local_address", "description", "delay_open", "send_hold_time",
                "shutdown_message", "enabled", "import", "export", "route_reflector_client", "route_server_client", "next_hop",
                "local_role", "strict_role", "allow_own_as", "add_path_send_max", "enforce_first_as", "max_prefixes",
                "max_prefixes_action",
                "max_prefixes_restart", "max_prefixes_warn", "password", "password_file", "tcp_ao", "ttl_security",
                "multihop", "link_down_ends_session", "damp_oscillations", "max_paths_per_prefix", "keep_refused", "graceful_restart", "graceful_restart_time",
                "stale_routes_time", "long_lived_stale_time"});
  size_t errors_before = ck.count();
  PeerConfig peer;

  if (!t.get("name")) ck.missing(t, p, "name", "a unique name of letters, digits, '_', '.', '-'");
  if (auto s = ck.string(t, p, "name", "a name of letters, digits, '_', '.', '-'")) {
    const toml::node& n = *t.get("name");
    if (!valid_peer_name(*s)) {
      ck.error(n, join(p, "name"),
               fmt::format("expected 1 to {} letters, digits, '_', '.', '-', got {}", kMaxNameLen, in_quotes(*s)));
    } else if (auto it = seen.names.find(*s); it != seen.names.end()) {
      ck.error(n, join(p, "name"), fmt::format("peer name {} is already used at line {}", in_quotes(*s), it->second));
    } else {
      seen.names.emplace(std::string(*s), n.source().begin.line);
      peer.name = std::string(*s);
    }
  }

  bool have_address = false;
  if (!t.get("address")) ck.missing(t, p, "address", "the peer's IP address");
  if (auto s = ck.string(t, p, "address", "an IP address")) {
    const toml::node& n = *t.get("address");
    ScopedAddress sa;
    if (auto err = parse_scoped_address(*s, sa)) {
      ck.error(n, join(p, "address"), std::move(*err));
    } else {
      peer.address = sa.address;
      peer.interface = sa.interface;
      auto key = std::pair(sa.address, sa.interface);
      if (auto it = seen.addresses.find(key); it != seen.addresses.end()) {
        ck.error(n, join(p, "address"),
                 fmt::format("address {} is already used by peer {} at line {}", peer.address_text(),
                             in_quotes(it->second.first), it->second.second));
      } else {
        seen.addresses.emplace(key, std::pair(peer.name, n.source().begin.line));
        have_address = true;
      }
    }
  }

  if (!t.get("asn")) ck.missing(t, p, "asn", "the peer's AS number");
  if (auto v = ck.asn(t, p, "asn")) peer.asn = *v;
  if (auto v = ck.port(t, p, "port")) peer.port = *v;
  if (auto v = ck.boolean(t, p, "passive")) {
    peer.passive = *v;
    if (*v && no_listener)
      ck.error(*t.get("passive"), join(p, "passive"),
               "a passive peer needs a listener, but router.listen is []; nothing would ever connect");
  }

  constexpr std::string_view kHoldWhat = "0 or 3..65535 seconds (RFC 4271 section 4.2)";
  bool hold_ok = true;
  if (const toml::node* n = t.get("hold_time")) {
    auto v = ck.integer(t, p, "hold_time", 0, kMaxU16, kHoldWhat);
    if (v && (*v == 1 || *v == 2)) {
      ck.error(*n, join(p, "hold_time"), fmt::format("expected {}, got {}", kHoldWhat, *v));
      v.reset();
    }
    if (v) peer.hold_time = static_cast<uint16_t>(*v);
    else hold_ok = false;
  }
  peer.keepalive = static_cast<uint16_t>(peer.hold_time / 3);
  if (const toml::node* n = t.get("keepalive")) {
    auto v = ck.integer(t, p, "keepalive", 0, kMaxU16, "0..65535 seconds, less than hold_time");
    if (v && hold_ok) {
      if (peer.hold_time == 0 && *v != 0) {
        ck.error(*n, join(p, "keepalive"), fmt::format("expected 0 when hold_time is 0, got {}", *v));
      } else if (peer.hold_time != 0 && (*v == 0 || *v >= peer.hold_time)) {
        ck.error(*n, join(p, "keepalive"),
                 fmt::format("expected 1..{} seconds (less than hold_time {}), got {}", peer.hold_time - 1,
                             peer.hold_time, *v));
      } else {
        peer.keepalive = static_cast<uint16_t>(*v);
      }
    }
  }
  if (auto v = ck.integer(t, p, "connect_retry", 1, kMaxU16, "1..65535 seconds"))
    peer.connect_retry = static_cast<uint32_t>(*v);
  if (auto v = ck.integer(t, p, "delay_open", 0, kMaxU16, "0..65535 seconds (0 = off)"))
    peer.delay_open = static_cast<uint32_t>(*v);

  constexpr std::string_view kSendHoldWhat = "0..65535 seconds (0 = off) or \"auto\"";
  if (const toml::node* n = t.get("send_hold_time")) {
    if (const auto* s = n->as_string()) {
      if (s->get() != "auto")
        ck.error(*n, join(p, "send_hold_time"), fmt::format("expected {}, got {}", kSendHoldWhat, in_quotes(s->get())));
    } else if (auto v = ck.integer(t, p, "send_hold_time", 0, kMaxU16, kSendHoldWhat)) {
      peer.send_hold_time = static_cast<uint32_t>(*v);
    }
  }

  // Families: by default the unicast family of the session's address.
  bool families_ok = true;
  if (t.get("families")) {
    if (auto set = ck.family_list(t, p, "families")) {
      if (set->empty()) {
        ck.error(*t.get("families"), join(p, "families"), "expected at least one family");
        families_ok = false;
      } else {
        peer.families = *set;
      }
    } else {
      families_ok = false;
    }
  } else if (have_address) {
    peer.families.add(peer.address.is_v4() ? codec::kIpv4Unicast : codec::kIpv6Unicast);
  } else {
    families_ok = false;
  }

  ck.family_table(t, p, "add_path", "family = \"receive\"|\"send\"|\"both\"",
                  [&](codec::Family f, const std::string& fkey, const toml::source_region& at, const toml::node& v) {
                    auto mode = ck.string_node(v, fkey, "\"receive\", \"send\" or \"both\"");
                    if (!mode) return;
                    AddPathMode m;
                    if (*mode == "receive") m = AddPathMode::kReceive;
                    else if (*mode == "send") m = AddPathMode::kSend;
                    else if (*mode == "both") m = AddPathMode::kBoth;
                    else {
                      ck.error(v, fkey,
                               fmt::format("expected \"receive\", \"send\" or \"both\", got {}", in_quotes(*mode)));
                      return;
                    }
                    if (families_ok && !peer.families.has(f)) {
                      ck.error(at, fkey,
                               fmt::format("ADD-PATH for {}, which is not in this peer's families", family_text(f)));
                      return;
                    }
                    const auto bits = static_cast<uint8_t>(m);
                    if (bits & static_cast<uint8_t>(AddPathMode::kReceive)) peer.add_path_receive.add(f);
                    if (bits & static_cast<uint8_t>(AddPathMode::kSend)) peer.add_path_send.add(f);
                  });

  if (auto set = ck.family_list(t, p, "extended_next_hop")) {
    for (codec::Family f : codec::kKnownFamilyList) {
      if (!set->has(f)) continue;
      if (f.afi != static_cast<uint16_t>(codec::Afi::kIpv4)) {
        ck.error(*t.get("extended_next_hop"), join(p, "extended_next_hop"),
                 fmt::format("expected IPv4 families only (RFC 8950: IPv4 routes with IPv6 next hops), got {}",
                             family_text(f)));
      } else if (families_ok && !peer.families.has(f)) {
        ck.error(*t.get("extended_next_hop"), join(p, "extended_next_hop"),
                 fmt::format("extended next hop for {}, which is not in this peer's families", family_text(f)));
      } else {
        peer.extended_next_hop.add(f);
      }
    }
  }

  if (auto s = ck.string(t, p, "local_address", "an IP address")) {
    const toml::node& n = *t.get("local_address");
    auto a = net::IpAddress::parse(*s);
    if (s->find('%') != std::string_view::npos) {
      ck.error(n, join(p, "local_address"),
               "expected an address without %interface (the interface comes from the peer's address)");
    } else if (!a || a->is_unspecified() || a->is_multicast()) {
      ck.error(n, join(p, "local_address"),
               fmt::format("expected a unicast IPv4 or IPv6 address (leave the key out to let the kernel choose), "
                           "got {}",
                           in_quotes(*s)));
    } else if (have_address && a->family() != peer.address.family()) {
      ck.error(n, join(p, "local_address"),
               fmt::format("expected an {} address like the peer's address, got {}",
                           peer.address.is_v4() ? "IPv4" : "IPv6", in_quotes(*s)));
    } else {
      peer.local_address = *a;
    }
  }
  if (auto s = ck.string(t, p, "description", "a string")) peer.description = std::string(*s);
  if (auto s = ck.string(t, p, "shutdown_message", "a string of at most 255 octets")) {
    if (s->size() > kMaxShutdownMessage)
      ck.error(*t.get("shutdown_message"), join(p, "shutdown_message"),
               fmt::format("expected at most {} octets of UTF-8 (RFC 9003), got {}", kMaxShutdownMessage, s->size()));
    else
      peer.shutdown_message = std::string(*s);
  }
  if (auto v = ck.boolean(t, p, "enabled")) peer.enabled = *v;
  constexpr std::string_view kPolicyWhat =
      "\"all\", \"none\", or the name of a [[policy]] or [[filter]] (or an array of them, applied in order)";
  for (std::string_view key : {"import", "export"}) {
    const toml::node* n = t.get(key);
    if (!n) continue;
    std::vector<std::string> names;
    if (const auto* s = n->as_string()) {
      names.push_back(s->get());
    } else if (const toml::array* a = n->as_array(); a && !a->empty()) {
      size_t i = 0;
      for (const toml::node& el : *a)
        if (auto name = ck.string_node(el, fmt::format("{}[{}]", join(p, key), i++), "a policy name"))
          names.emplace_back(*name);
    } else {
      ck.error(*n, join(p, key), fmt::format("expected {}, got {}", kPolicyWhat, type_name(*n)));
      continue;
    }
    (key == "import" ? peer.import_filter : peer.export_filter) = std::move(names);
  }
  if (auto v = ck.boolean(t, p, "route_reflector_client")) {
    if (*v && peer.asn != 0 && peer.asn != router_asn)
      ck.error(*t.get("route_reflector_client"), join(p, "route_reflector_client"),
               "only an internal peer (asn equal to router.asn) can be a route reflector client");
    else
      peer.route_reflector_client = *v;
  }
  if (auto v = ck.boolean(t, p, "route_server_client")) {
    const toml::node& n = *t.get("route_server_client");
    if (*v && t["route_reflector_client"].value_or(false))
      ck.error(n, join(p, "route_server_client"),
               "a peer is a route server client or a route reflector client, not both");
    else if (*v && peer.asn != 0 && peer.asn == router_asn)
      ck.error(n, join(p, "route_server_client"),
               "only an external peer (asn other than router.asn) can be a route server client (RFC 7947)");
    else
      peer.route_server_client = *v;
  }
  if (auto s = ck.string(t, p, "next_hop", "\"self\" or \"unchanged\"")) {
    const toml::node& n = *t.get("next_hop");
    const bool internal = peer.asn != 0 && peer.asn == router_asn;
    if (*s == "self" && (internal || peer.asn == 0))
      peer.next_hop = table::NextHopMode::kSelf;
    else if (*s == "unchanged" && !internal && !peer.route_server_client)
      peer.next_hop = table::NextHopMode::kUnchanged;
    else if (*s == "self")
      ck.error(n, join(p, "next_hop"), "\"self\" is for internal peers (asn equal to router.asn): external peers "
                                        "always get our address unless next_hop is \"unchanged\"");
    else if (*s == "unchanged" && peer.route_server_client)
      ck.error(n, join(p, "next_hop"), "a route_server_client gets next hops unchanged already (RFC 7947)");
    else if (*s == "unchanged")
      ck.error(n, join(p, "next_hop"), "\"unchanged\" is for external peers: internal peers get the next hop "
                                        "unchanged already (RFC 4271 section 5.1.3)");
    else
      ck.error(n, join(p, "next_hop"), fmt::format("expected \"self\" or \"unchanged\", got {}", in_quotes(*s)));
  }
  constexpr const char* kRoleWhat = "\"provider\", \"customer\", \"peer\", \"rs\" or \"rs-client\" (RFC 9234)";
  if (auto s = ck.string(t, p, "local_role", kRoleWhat)) {
    const toml::node& n = *t.get("local_role");
    if (auto r = table::parse_role(*s); !r)
      ck.error(n, join(p, "local_role"), std::string("expected ") + kRoleWhat + ", got \"" + std::string(*s) + "\"");
    else if (peer.asn != 0 && peer.asn == router_asn)
      ck.error(n, join(p, "local_role"), "only an external peer (asn other than router.asn) has a role (RFC 9234)");
    else
      peer.local_role = r;
  }
  if (auto v = ck.boolean(t, p, "strict_role")) {
    if (*v && !t.get("local_role"))
      ck.error(*t.get("strict_role"), join(p, "strict_role"), "strict_role needs a local_role");
    else
      peer.strict_role = *v;
  }
  if (auto v = ck.integer(t, p, "allow_own_as", 0, 255, "0..255 (how often our AS may appear in a path)"))
    peer.allow_own_as = static_cast<uint8_t>(*v);
  if (auto v = ck.integer(t, p, "add_path_send_max", 0, 255, "0..255 paths per prefix (0: all)"))
    peer.add_path_send_max = static_cast<uint8_t>(*v);
  parse_peer_limits(ck, t, p, families_ok, peer);
  if (auto v = ck.integer(t, p, "max_paths_per_prefix", 1, 1000000, "1..1000000 paths per prefix from the peer"))
    peer.max_paths_per_prefix = static_cast<uint32_t>(*v);
  if (auto v = ck.integer(t, p, "keep_refused", 0, 1000000, "0..1000000 refused routes kept for people (0: none)"))
    peer.keep_refused = static_cast<uint32_t>(*v);

  peer.graceful = router.graceful;
  parse_graceful(ck, t, p, peer.graceful);
  parse_transport(ck, t, p, router_asn, peer);
  if (ck.count() == errors_before && have_address) check_link_local_keys(ck, t, p, peer, seen);
  if (ck.count() == errors_before) peers.push_back(std::move(peer));
}

// A list of strings, each turned into a T by parse (nothing: an error
// with the reason parse gave).
template <typename T, typename Parse>
std::vector<T> parse_list(Checker& ck, const toml::table& t, std::string_view path, std::string_view key,
                          std::string_view what, Parse&& parse) {
  std::vector<T> out;
  const toml::array* arr = ck.array(t, path, key, fmt::format("an array of {}", what));
  if (!arr) return out;
  size_t idx = 0;
  for (const toml::node& el : *arr) {
    std::string el_key = fmt::format("{}[{}]", join(path, key), idx++);
    auto s = ck.string_node(el, el_key, what);
    if (!s) continue;
    std::string why;
    if (auto v = parse(*s, why)) out.push_back(std::move(*v));
    else ck.error(el, el_key, why.empty() ? fmt::format("expected {}, got {}", what, in_quotes(*s)) : why);
  }
  return out;
}

constexpr std::string_view kCommunityWhat =
    "communities \"ASN:VALUE\" (16 bits each) or \"no-export\", \"no-advertise\", \"no-export-subconfed\", "
    "\"blackhole\", \"graceful-shutdown\"";
constexpr std::string_view kLargeWhat = "large communities \"GLOBAL:LOCAL1:LOCAL2\" (32 bits each)";

std::vector<uint32_t> parse_communities(Checker& ck, const toml::table& t, std::string_view path) {
  return parse_list<uint32_t>(ck, t, path, "communities", kCommunityWhat,
                              [](std::string_view s, std::string&) { return table::parse_community(s); });
}
std::vector<codec::LargeCommunity> parse_large(Checker& ck, const toml::table& t, std::string_view path) {
  return parse_list<codec::LargeCommunity>(ck, t, path, "large_communities", kLargeWhat,
                                           [](std::string_view s, std::string&) { return table::parse_large_community(s); });
}

std::optional<table::FilterAction> parse_action(Checker& ck, const toml::table& t, std::string_view path,
                                                 std::string_view key) {
  auto s = ck.string(t, path, key, "\"accept\" or \"reject\"");
  if (!s) return std::nullopt;
  if (*s == "accept") return table::FilterAction::kAccept;
  if (*s == "reject") return table::FilterAction::kReject;
  ck.error(*t.get(key), join(path, key), fmt::format("expected \"accept\" or \"reject\", got {}", in_quotes(*s)));
  return std::nullopt;
}

// A [[filter]], [[policy]] or set's required `name`: checked, and noted in
// `seen` (name -> line). `reserved`: "all" and "none" are not allowed.
// `elsewhere`: what else already has the name, if anything. Empty when
// missing or wrong.
std::string unique_name(Checker& ck, const toml::table& t, std::string_view p, std::string_view kind,
                        std::map<std::string, uint32_t>& seen, bool reserved,
                        const std::function<std::optional<std::string>(std::string_view)>& elsewhere = {}) {
  if (!t.get("name")) ck.missing(t, p, "name", "a unique name of letters, digits, '_', '.', '-'");
  auto s = ck.string(t, p, "name", "a name of letters, digits, '_', '.', '-'");
  if (!s) return {};
  const toml::node& n = *t.get("name");
  if (!valid_peer_name(*s) || (reserved && (*s == "all" || *s == "none"))) {
    ck.error(n, join(p, "name"),
             fmt::format("expected 1..{} letters, digits, '_', '.', '-'{}, got {}", kMaxNameLen,
                         reserved ? " other than \"all\" and \"none\"" : "", in_quotes(*s)));
  } else if (auto it = seen.find(std::string(*s)); it != seen.end()) {
    ck.error(n, join(p, "name"), fmt::format("{} name {} is already used at line {}", kind, in_quotes(*s), it->second));
  } else if (auto other = elsewhere ? elsewhere(*s) : std::nullopt) {
    ck.error(n, join(p, "name"), fmt::format("{} is already the name of a {}", in_quotes(*s), *other));
  } else {
    seen.emplace(std::string(*s), n.source().begin.line);
  }
  return std::string(*s);
}

void parse_filters(Checker& ck, const toml::table& root, std::vector<table::Filter>& out) {
  const toml::array* arr = ck.array(root, "", "filter", "an array of tables ([[filter]])");
  if (!arr) return;
  std::map<std::string, uint32_t> seen;  // name -> line
  size_t idx = 0;
  for (const toml::node& el : *arr) {
    std::string p = fmt::format("filter[{}]", idx++);
    const toml::table* t = el.as_table();
    if (!t) {
      ck.error(el, p, fmt::format("expected a table ([[filter]]), got {}", type_name(el)));
      continue;
    }
    ck.only_keys(*t, p, {"name", "default", "rule"});
    const size_t errors_before = ck.count();
    table::Filter f;
    f.name = unique_name(ck, *t, p, "filter", seen, true);
    if (auto a = parse_action(ck, *t, p, "default")) f.default_action = *a;
    if (const toml::array* rules = ck.array(*t, p, "rule", "an array of tables ([[filter.rule]])")) {
      size_t ridx = 0;
      for (const toml::node& rn : *rules) {
        std::string rp = fmt::format("{}.rule[{}]", p, ridx++);
        const toml::table* r = rn.as_table();
        if (!r) {
          ck.error(rn, rp, fmt::format("expected a table ([[filter.rule]]), got {}", type_name(rn)));
          continue;
        }
        ck.only_keys(*r, rp,
                     {"prefixes", "communities", "large_communities", "action", "set_local_pref", "set_med"});
        table::FilterRule rule;
        rule.prefixes = parse_list<table::PrefixRange>(
            ck, *r, rp, "prefixes", "prefix ranges \"PREFIX\", \"PREFIX le N\", \"PREFIX ge N le M\"",
            [](std::string_view s, std::string& why) { return table::PrefixRange::parse(s, &why); });
        rule.communities = parse_communities(ck, *r, rp);
        rule.large_communities = parse_large(ck, *r, rp);
        if (!r->get("action")) ck.missing(*r, rp, "action", "\"accept\" or \"reject\"");
        if (auto a = parse_action(ck, *r, rp, "action")) rule.action = *a;
        if (auto v = ck.integer(*r, rp, "set_local_pref", 0, kMaxU32, "a LOCAL_PREF 0..4294967295"))
          rule.set_local_pref = static_cast<uint32_t>(*v);
        if (auto v = ck.integer(*r, rp, "set_med", 0, kMaxU32, "a MED 0..4294967295"))
          rule.set_med = static_cast<uint32_t>(*v);
        if ((rule.set_local_pref || rule.set_med) && rule.action == table::FilterAction::kReject)
          ck.error(*r, rp, "a rule that rejects cannot set attributes");
        f.rules.push_back(std::move(rule));
      }
    }
    if (ck.count() == errors_before) out.push_back(std::move(f));
  }
}

// ---- [[prefix_set]], [[as_set]], [[community_set]] and [[policy]]
// (docs/policy.md)

// Named sets by kind: their entries as text, with where each came from
// (a TOML array element or a line of the set's file) for error messages.
struct SetEntries {
  std::map<std::string, std::vector<std::string>> prefix, as, community;
};

constexpr std::string_view kRangeWhat = "prefix ranges \"PREFIX\", \"PREFIX le N\", \"PREFIX ge N le M\"";
constexpr std::string_view kPatternWhat =
    "communities \"A:B\" (or a well-known name), large communities \"A:B:C\" or \"rt:A:B\" / \"soo:A:B\", with \"*\" "
    "for any value";
constexpr std::string_view kAsWhat = "AS numbers N or ranges \"N-M\"";
constexpr size_t kMaxSetFileBytes = 64 << 20;
constexpr size_t kMaxSetEntries = 1 << 21;

// The lines of a set's file (one entry per line; '#' starts a comment;
// blank lines skipped), or an error at the `file` key.
std::optional<std::vector<std::pair<std::string, uint32_t>>> read_set_file(Checker& ck, const toml::node& key_node,
                                                                          std::string_view key, std::string_view file) {
  namespace fs = std::filesystem;
  fs::path path(file);
  if (path.is_relative()) path = fs::path(ck.file()).parent_path() / path;
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (ec) {
    ck.error(key_node, key, fmt::format("cannot read {}: {}", in_quotes(path.string()), ec.message()));
    return std::nullopt;
  }
  if (size > kMaxSetFileBytes) {
    ck.error(key_node, key, fmt::format("{} is {} bytes; at most {}", in_quotes(path.string()), size, kMaxSetFileBytes));
    return std::nullopt;
  }
  std::ifstream in(path);
  if (!in) {
    ck.error(key_node, key, fmt::format("cannot open {}: {}", in_quotes(path.string()), std::strerror(errno)));
    return std::nullopt;
  }
  std::vector<std::pair<std::string, uint32_t>> out;
  std::string line;
  uint32_t no = 0;
  while (std::getline(in, line) && out.size() <= kMaxSetEntries) {
    ++no;
    if (size_t h = line.find('#'); h != std::string::npos) line.erase(h);
    size_t b = line.find_first_not_of(" \t\r");
    if (b == std::string::npos) continue;
    size_t e = line.find_last_not_of(" \t\r");
    out.emplace_back(line.substr(b, e - b + 1), no);
  }
  return out;
}

// One [[prefix_set]] / [[as_set]] / [[community_set]] array: each entry
// checked by `check` (nothing: fine; else why not), from `list_key` and
// `file`.
template <typename Check>
void parse_sets(Checker& ck, const toml::table& root, std::string_view section, std::string_view list_key,
                std::string_view what, Check&& check, std::map<std::string, std::vector<std::string>>& out,
                std::map<std::string, uint32_t>& names) {
  const toml::array* arr = ck.array(root, "", section, fmt::format("an array of tables ([[{}]])", section));
  if (!arr) return;
  size_t idx = 0;
  for (const toml::node& el : *arr) {
    std::string p = fmt::format("{}[{}]", section, idx++);
    const toml::table* t = el.as_table();
    if (!t) {
      ck.error(el, p, fmt::format("expected a table ([[{}]]), got {}", section, type_name(el)));
      continue;
    }
    ck.only_keys(*t, p, {"name", list_key, "file"});
    std::string name = unique_name(ck, *t, p, "set", names, false);
    std::vector<std::string> entries;
    if (const toml::array* list = ck.array(*t, p, list_key, fmt::format("an array of {}", what))) {
      size_t i = 0;
      for (const toml::node& n : *list) {
        std::string k = fmt::format("{}.{}[{}]", p, list_key, i++);
        std::string text;
        if (const auto* v = n.as_integer()) text = std::to_string(v->get());
        else if (const auto* s = n.as_string()) text = s->get();
        else {
          ck.error(n, k, fmt::format("expected {}, got {}", what, type_name(n)));
          continue;
        }
        if (auto why = check(text)) ck.error(n, k, *why);
        else entries.push_back(std::move(text));
      }
    }
    if (auto file = ck.string(*t, p, "file", "a file name (relative to this file's directory)")) {
      const toml::node& n = *t->get("file");
      if (auto lines = read_set_file(ck, n, join(p, "file"), *file)) {
        if (lines->size() > kMaxSetEntries)
          ck.error(n, join(p, "file"), fmt::format("more than {} entries", kMaxSetEntries));
        for (auto& [text, line] : *lines) {
          if (auto why = check(text)) {
            ck.error(n, join(p, "file"), fmt::format("{} line {}: {}", *file, line, *why));
            break;  // one error per file: the rest is likely the same
          }
          entries.push_back(std::move(text));
        }
      }
    }
    if (!name.empty()) out[name] = std::move(entries);
  }
}

std::optional<std::string> check_range_text(const std::string& s) {
  std::string why;
  if (table::PrefixRange::parse(s, &why)) return std::nullopt;
  return why;
}
std::optional<std::string> check_as_text(const std::string& s) {
  std::string why;
  if (table::NumberRange::parse(s, kMaxU32, &why)) return std::nullopt;
  return fmt::format("expected an AS number N or a range \"N-M\", got {}: {}", in_quotes(s), why);
}
std::optional<std::string> check_pattern_text(const std::string& s) {
  std::string why;
  if (table::CommunityPattern::parse(s, &why)) return std::nullopt;
  return why;
}

// The entries of a match list: literals and "@NAME" references to a set of
// the kind, in order, each parsed by `parse`.
template <typename T, typename Parse>
std::vector<T> parse_refs(Checker& ck, const toml::table& t, std::string_view path, std::string_view key,
                          std::string_view what, const std::map<std::string, std::vector<std::string>>& sets,
                          std::string_view set_kind, Parse&& parse) {
  std::vector<T> out;
  const toml::node* node = t.get(key);
  if (!node) return out;
  std::vector<const toml::node*> items;
  if (const toml::array* arr = node->as_array()) {
    for (const toml::node& n : *arr) items.push_back(&n);
  } else {
    items.push_back(node);
  }
  size_t idx = 0;
  for (const toml::node* n : items) {
    std::string k = node->is_array() ? fmt::format("{}[{}]", join(path, key), idx++) : join(path, key);
    std::string text;
    if (const auto* v = n->as_integer()) text = std::to_string(v->get());
    else if (const auto* s = n->as_string()) text = s->get();
    else {
      ck.error(*n, k, fmt::format("expected {} or \"@NAME\" of a [[{}]], got {}", what, set_kind, type_name(*n)));
      continue;
    }
    if (text.starts_with("@")) {
      auto it = sets.find(text.substr(1));
      if (it == sets.end()) {
        ck.error(*n, k, fmt::format("no [[{}]] is named {}", set_kind, in_quotes(text.substr(1))));
        continue;
      }
      for (const std::string& e : it->second) {
        std::string why;
        if (auto v = parse(e, why)) out.push_back(std::move(*v));
      }
      continue;
    }
    std::string why;
    if (auto v = parse(text, why)) out.push_back(std::move(*v));
    else ck.error(*n, k, why.empty() ? fmt::format("expected {}, got {}", what, in_quotes(text)) : why);
  }
  return out;
}

// An integer N, or a string "N" / "N-M".
std::optional<table::NumberRange> parse_number_range(Checker& ck, const toml::table& t, std::string_view path,
                                                     std::string_view key, uint32_t max) {
  const toml::node* n = t.get(key);
  if (!n) return std::nullopt;
  std::string text;
  if (const auto* v = n->as_integer()) text = std::to_string(v->get());
  else if (const auto* s = n->as_string()) text = s->get();
  std::string why = "expected a number N or a range \"N-M\"";
  if (!text.empty())
    if (auto r = table::NumberRange::parse(text, max, &why)) return r;
  ck.error(*n, join(path, key), fmt::format("{} (0..{}), got {}", why, max, n->is_string() ? in_quotes(text) : std::string(type_name(*n))));
  return std::nullopt;
}

// A list of words from `names` into a bit mask (bit = the word's value).
template <typename E>
uint8_t parse_word_mask(Checker& ck, const toml::table& t, std::string_view path, std::string_view key,
                        std::initializer_list<std::pair<std::string_view, E>> names) {
  std::vector<std::string_view> words;
  for (const auto& [w, v] : names) words.push_back(w);
  const std::string what = fmt::format("one or more of \"{}\"", fmt::join(words, "\", \""));
  auto list = parse_list<E>(ck, t, path, key, what, [&](std::string_view s, std::string&) -> std::optional<E> {
    for (const auto& [w, v] : names)
      if (w == s) return v;
    return std::nullopt;
  });
  uint8_t mask = 0;
  for (E v : list) mask = static_cast<uint8_t>(mask | 1u << static_cast<unsigned>(v));
  return mask;
}

std::optional<table::PolicyThen> parse_then(Checker& ck, const toml::table& t, std::string_view path,
                                            std::string_view key) {
  auto s = ck.string(t, path, key, "\"accept\", \"reject\" or \"next\"");
  if (!s) return std::nullopt;
  for (auto v : {table::PolicyThen::kAccept, table::PolicyThen::kReject, table::PolicyThen::kNext})
    if (table::policy_then_name(v) == *s) return v;
  ck.error(*t.get(key), join(path, key), fmt::format("expected \"accept\", \"reject\" or \"next\", got {}", in_quotes(*s)));
  return std::nullopt;
}

void parse_match(Checker& ck, const toml::table& m, std::string_view p, const SetEntries& sets,
                 table::PolicyMatch& out) {
  ck.only_keys(m, p,
               {"prefix", "prefix_length", "family", "as_path", "origin_as", "first_as", "as_path_contains",
                "as_path_length", "as_set", "community", "community_all", "next_hop", "peer", "peer_as", "peer_role",
                "peer_type", "rpki", "aspa", "origin", "med", "local_pref", "otc"});
  auto range_parse = [](std::string_view s, std::string& why) { return table::PrefixRange::parse(s, &why); };
  auto as_parse = [](std::string_view s, std::string& why) {
    auto r = table::NumberRange::parse(s, static_cast<uint32_t>(kMaxU32), &why);
    if (!r) why = fmt::format("expected an AS number N or a range \"N-M\", got {}", in_quotes(s));
    return r;
  };
  auto pattern_parse = [](std::string_view s, std::string& why) { return table::CommunityPattern::parse(s, &why); };
  out.prefix = parse_refs<table::PrefixRange>(ck, m, p, "prefix", kRangeWhat, sets.prefix, "prefix_set", range_parse);
  out.prefix_length = parse_number_range(ck, m, p, "prefix_length", 128);
  if (auto s = ck.string(m, p, "family", "\"ipv4\" or \"ipv6\"")) {
    if (*s == "ipv4") out.family = net::IpFamily::V4;
    else if (*s == "ipv6") out.family = net::IpFamily::V6;
    else ck.error(*m.get("family"), join(p, "family"), fmt::format("expected \"ipv4\" or \"ipv6\", got {}", in_quotes(*s)));
  }
  if (auto s = ck.string(m, p, "as_path", "a regular expression over the AS path (docs/policy.md)")) {
    RE2::Options o;
    o.set_log_errors(false);
    RE2 re(table::as_path_regex(*s), o);
    if (!re.ok())
      ck.error(*m.get("as_path"), join(p, "as_path"), fmt::format("{} is not a regular expression: {}", in_quotes(*s), re.error()));
    else
      out.as_path = std::string(*s);
  }
  out.origin_as = parse_refs<table::NumberRange>(ck, m, p, "origin_as", kAsWhat, sets.as, "as_set", as_parse);
  out.first_as = parse_refs<table::NumberRange>(ck, m, p, "first_as", kAsWhat, sets.as, "as_set", as_parse);
  out.as_path_contains = parse_refs<table::NumberRange>(ck, m, p, "as_path_contains", kAsWhat, sets.as, "as_set", as_parse);
  out.as_path_length = parse_number_range(ck, m, p, "as_path_length", 65535);
  out.as_set = ck.boolean(m, p, "as_set");
  out.community = parse_refs<table::CommunityPattern>(ck, m, p, "community", kPatternWhat, sets.community,
                                                      "community_set", pattern_parse);
  out.community_all = parse_refs<table::CommunityPattern>(ck, m, p, "community_all", kPatternWhat, sets.community,
                                                          "community_set", pattern_parse);
  out.next_hop = parse_list<net::Prefix>(ck, m, p, "next_hop", "addresses or prefixes",
                                         [](std::string_view s, std::string&) -> std::optional<net::Prefix> {
                                           if (auto a = net::IpAddress::parse(s))
                                             return net::Prefix::make(*a, net::IpAddress::max_len(a->family()));
                                           return net::Prefix::parse(s, net::Prefix::HostBits::kReject);
                                         });
  out.peer = parse_list<std::string>(ck, m, p, "peer", "peer names", [](std::string_view s, std::string&) {
    return std::optional<std::string>(std::string(s));
  });
  out.peer_as = parse_refs<table::NumberRange>(ck, m, p, "peer_as", kAsWhat, sets.as, "as_set", as_parse);
  out.peer_role = parse_list<codec::Role>(ck, m, p, "peer_role",
                                          "roles \"provider\", \"customer\", \"peer\", \"rs\", \"rs-client\"",
                                          [](std::string_view s, std::string&) { return table::parse_role(s); });
  out.peer_type = parse_list<table::PeerType>(ck, m, p, "peer_type", "\"external\", \"internal\" or \"local\"",
                                              [](std::string_view s, std::string&) -> std::optional<table::PeerType> {
                                                for (auto v : {table::PeerType::kExternal, table::PeerType::kInternal,
                                                               table::PeerType::kLocal})
                                                  if (table::peer_type_name(v) == s) return v;
                                                return std::nullopt;
                                              });
  out.rpki = parse_word_mask<table::Validation>(
      ck, m, p, "rpki",
      {{"valid", table::Validation::kValid}, {"invalid", table::Validation::kInvalid},
       {"not-found", table::Validation::kNotFound}, {"unchecked", table::Validation::kUnchecked}});
  out.aspa = parse_word_mask<table::AspaState>(
      ck, m, p, "aspa",
      {{"valid", table::AspaState::kValid}, {"invalid", table::AspaState::kInvalid},
       {"unknown", table::AspaState::kUnknown}, {"unchecked", table::AspaState::kUnchecked}});
  out.origin = parse_word_mask<codec::Origin>(
      ck, m, p, "origin",
      {{"igp", codec::Origin::kIgp}, {"egp", codec::Origin::kEgp}, {"incomplete", codec::Origin::kIncomplete}});
  out.med = parse_number_range(ck, m, p, "med", static_cast<uint32_t>(kMaxU32));
  out.local_pref = parse_number_range(ck, m, p, "local_pref", static_cast<uint32_t>(kMaxU32));
  out.otc = ck.boolean(m, p, "otc");
  // A list given with nothing in it holds for no route (policy.h).
  const bool empty[] = {out.prefix.empty(),    out.origin_as.empty(), out.first_as.empty(),
                        out.as_path_contains.empty(), out.community.empty(), out.next_hop.empty(),
                        out.peer.empty(),      out.peer_as.empty(),   out.peer_role.empty(),
                        out.peer_type.empty(), out.rpki == 0,         out.aspa == 0,
                        out.origin == 0};
  static_assert(std::size(empty) == table::PolicyMatch::kListKeys.size());
  for (size_t i = 0; i < std::size(empty); ++i)
    if (empty[i] && m.get(table::PolicyMatch::kListKeys[i]))
      out.empty_lists = static_cast<uint16_t>(out.empty_lists | 1u << i);
}

void parse_actions(Checker& ck, const toml::table& s, std::string_view p, const SetEntries& sets,
                   table::PolicyActions& out) {
  ck.only_keys(s, p,
               {"community_strip", "community_remove", "community_add", "local_pref", "med", "origin", "next_hop",
                "prepend", "prepend_as"});
  out.strip = parse_word_mask<table::CommunityPattern::Kind>(
      ck, s, p, "community_strip",
      {{"standard", table::CommunityPattern::Kind::kStandard}, {"large", table::CommunityPattern::Kind::kLarge},
       {"extended", table::CommunityPattern::Kind::kExtended}});
  auto pattern_parse = [](std::string_view x, std::string& why) { return table::CommunityPattern::parse(x, &why); };
  out.community_remove = parse_refs<table::CommunityPattern>(ck, s, p, "community_remove", kPatternWhat,
                                                             sets.community, "community_set", pattern_parse);
  out.community_add = parse_refs<table::CommunityPattern>(
      ck, s, p, "community_add", "communities (no \"*\")", sets.community, "community_set",
      [](std::string_view x, std::string& why) -> std::optional<table::CommunityPattern> {
        auto c = table::CommunityPattern::parse(x, &why);
        if (c && !c->exact()) {
          why = fmt::format("{} has a \"*\": only exact communities can be added", in_quotes(x));
          return std::nullopt;
        }
        return c;
      });
  if (auto v = ck.integer(s, p, "local_pref", 0, kMaxU32, "a LOCAL_PREF 0..4294967295"))
    out.local_pref = static_cast<uint32_t>(*v);
  if (const toml::node* n = s.get("med")) {
    constexpr std::string_view kMedWhat = "a MED 0..4294967295, or \"+N\" / \"-N\" to add or subtract";
    if (const auto* i = n->as_integer(); i && i->get() >= 0 && i->get() <= kMaxU32) {
      out.med_op = table::MedOp::kSet;
      out.med = static_cast<uint32_t>(i->get());
    } else if (const auto* str = n->as_string();
               str && str->get().size() > 1 && (str->get()[0] == '+' || str->get()[0] == '-')) {
      auto r = table::NumberRange::parse(std::string_view(str->get()).substr(1), static_cast<uint32_t>(kMaxU32));
      if (r && r->lo == r->hi) {
        out.med_op = str->get()[0] == '+' ? table::MedOp::kAdd : table::MedOp::kSubtract;
        out.med = r->lo;
      } else {
        ck.error(*n, join(p, "med"), fmt::format("expected {}, got {}", kMedWhat, in_quotes(str->get())));
      }
    } else {
      ck.error(*n, join(p, "med"), fmt::format("expected {}, got {}", kMedWhat, n->is_string() ? in_quotes(n->as_string()->get()) : std::string(type_name(*n))));
    }
  }
  if (auto o = ck.string(s, p, "origin", "\"igp\", \"egp\" or \"incomplete\"")) {
    if (*o == "igp") out.origin = codec::Origin::kIgp;
    else if (*o == "egp") out.origin = codec::Origin::kEgp;
    else if (*o == "incomplete") out.origin = codec::Origin::kIncomplete;
    else ck.error(*s.get("origin"), join(p, "origin"), fmt::format("expected \"igp\", \"egp\" or \"incomplete\", got {}", in_quotes(*o)));
  }
  if (auto nh = ck.string(s, p, "next_hop", "\"self\", \"unchanged\" or an IP address")) {
    if (*nh == "self") {
      out.next_hop_op = table::NextHopOp::kSelf;
    } else if (*nh == "unchanged") {
      out.next_hop_op = table::NextHopOp::kUnchanged;
    } else if (auto a = net::IpAddress::parse(*nh); a && !a->is_multicast() && !a->is_unspecified()) {
      out.next_hop_op = table::NextHopOp::kAddress;
      out.next_hop = *a;
    } else {
      ck.error(*s.get("next_hop"), join(p, "next_hop"),
               fmt::format("expected \"self\", \"unchanged\" or a unicast IP address, got {}", in_quotes(*nh)));
    }
  }
  if (auto v = ck.integer(s, p, "prepend", 1, 32, "a count 1..32")) out.prepend = static_cast<uint8_t>(*v);
  if (auto v = ck.asn(s, p, "prepend_as")) {
    out.prepend_as = *v;
    if (!out.prepend) ck.error(*s.get("prepend_as"), join(p, "prepend_as"), "prepend_as needs prepend (how many times)");
  }
}

void parse_policies(Checker& ck, const toml::table& root, std::vector<table::PolicyDef>& out,
                    const std::vector<table::Filter>& filters, SetEntries& sets) {
  std::map<std::string, uint32_t> set_names;
  parse_sets(ck, root, "prefix_set", "prefixes", kRangeWhat, check_range_text, sets.prefix, set_names);
  parse_sets(ck, root, "as_set", "asns", kAsWhat, check_as_text, sets.as, set_names);
  parse_sets(ck, root, "community_set", "communities", kPatternWhat, check_pattern_text, sets.community, set_names);
  const toml::array* arr = ck.array(root, "", "policy", "an array of tables ([[policy]])");
  if (!arr) return;
  std::map<std::string, uint32_t> seen;
  size_t idx = 0;
  for (const toml::node& el : *arr) {
    std::string p = fmt::format("policy[{}]", idx++);
    const toml::table* t = el.as_table();
    if (!t) {
      ck.error(el, p, fmt::format("expected a table ([[policy]]), got {}", type_name(el)));
      continue;
    }
    ck.only_keys(*t, p, {"name", "default", "term"});
    table::PolicyDef d;
    d.name = unique_name(ck, *t, p, "policy", seen, true, [&](std::string_view name) {
      return std::any_of(filters.begin(), filters.end(), [&](const table::Filter& f) { return f.name == name; })
                 ? std::optional<std::string>("[[filter]]")
                 : std::nullopt;
    });
    if (auto v = parse_then(ck, *t, p, "default")) d.default_then = *v;
    if (const toml::array* terms = ck.array(*t, p, "term", "an array of tables ([[policy.term]])")) {
      size_t tidx = 0;
      for (const toml::node& tn : *terms) {
        std::string tp = fmt::format("{}.term[{}]", p, tidx++);
        const toml::table* tt = tn.as_table();
        if (!tt) {
          ck.error(tn, tp, fmt::format("expected a table ([[policy.term]]), got {}", type_name(tn)));
          continue;
        }
        ck.only_keys(*tt, tp, {"name", "match", "unless", "set", "then"});
        table::PolicyTerm term;
        if (auto s = ck.string(*tt, tp, "name", "a name for logs and the API")) term.name = std::string(*s);
        if (const toml::table* m = ck.table(*tt, tp, "match")) parse_match(ck, *m, join(tp, "match"), sets, term.match);
        if (const toml::table* u = ck.table(*tt, tp, "unless")) {
          const size_t errors_before = ck.count();
          parse_match(ck, *u, join(tp, "unless"), sets, term.unless);
          // An `unless` without conditions would hold for every route and
          // make the term apply to none.
          if (ck.count() == errors_before && term.unless == table::PolicyMatch{})
            ck.error(*u, join(tp, "unless"),
                     fmt::format("expected at least one condition (the keys of match){}: an unless without one "
                                 "would except every route, and the term would never apply",
                                 u->empty() ? "" : ", got only empty lists or empty sets"));
        }
        if (const toml::table* s = ck.table(*tt, tp, "set")) parse_actions(ck, *s, join(tp, "set"), sets, term.set);
        if (auto v = parse_then(ck, *tt, tp, "then")) term.then = *v;
        if (term.then == table::PolicyThen::kReject && term.set.any())
          ck.error(*tt, tp, "a term that rejects cannot set attributes");
        d.terms.push_back(std::move(term));
      }
    }
    // Kept with errors too (the file is refused anyway), so that peers
    // naming it are not also told it does not exist.
    if (!d.name.empty()) out.push_back(std::move(d));
  }
}

// [[bmp]] stations (docs/bmp.md).
void parse_bmp(Checker& ck, const toml::table& root, std::vector<BmpStationConfig>& out) {
  const toml::array* arr = ck.array(root, "", "bmp", "an array of tables ([[bmp]])");
  if (!arr) return;
  size_t idx = 0;
  for (const toml::node& el : *arr) {
    std::string p = fmt::format("bmp[{}]", idx++);
    const toml::table* t = el.as_table();
    if (!t) {
      ck.error(el, p, fmt::format("expected a table ([[bmp]]), got {}", type_name(el)));
      continue;
    }
    ck.only_keys(*t, p, {"address", "port", "monitoring", "statistics_interval", "max_queue"});
    size_t errors_before = ck.count();
    BmpStationConfig b;
    if (!t->get("address")) ck.missing(*t, p, "address", "the station's IP address");
    if (auto s = ck.string(*t, p, "address", "an IP address")) {
      auto a = net::IpAddress::parse(*s);
      if (!a || a->is_multicast() || a->is_unspecified())
        ck.error(*t->get("address"), join(p, "address"), fmt::format("expected a unicast IP address, got {}", in_quotes(*s)));
      else
        b.address = *a;
    }
    if (!t->get("port")) ck.missing(*t, p, "port", "the station's TCP port");
    if (auto v = ck.port(*t, p, "port")) b.port = *v;
    constexpr std::string_view kMonitoring = "\"pre-policy\", \"post-policy\" or \"loc-rib\"";
    if (const toml::array* m = ck.array(*t, p, "monitoring", fmt::format("an array of {}", kMonitoring))) {
      b.post_policy = b.loc_rib = false;
      const std::string key = join(p, "monitoring");
      for (const toml::node& n : *m) {
        auto s = ck.string_node(n, key, kMonitoring);
        if (!s) continue;
        if (*s == "pre-policy") {
          b.pre_policy = true;
        } else if (*s == "post-policy") {
          b.post_policy = true;
        } else if (*s == "loc-rib") {
          b.loc_rib = true;
        } else {
          ck.error(n, key, fmt::format("expected {}, got {}", kMonitoring, in_quotes(*s)));
        }
      }
      if (!b.pre_policy && !b.post_policy && !b.loc_rib && ck.count() == errors_before)
        ck.error(*t->get("monitoring"), key, fmt::format("expected at least one of {}", kMonitoring));
    }
    if (auto v = ck.integer(*t, p, "statistics_interval", 0, 86400, "0 (none) or 1..86400 seconds"))
      b.statistics_interval = static_cast<uint32_t>(*v);
    if (auto v = ck.integer(*t, p, "max_queue", 1, 4096, "1..4096 MiB")) b.max_queue = static_cast<uint32_t>(*v);
    if (ck.count() != errors_before) continue;
    if (std::any_of(out.begin(), out.end(),
                    [&](const BmpStationConfig& o) { return o.address == b.address && o.port == b.port; })) {
      ck.error(*t->get("address"), join(p, "address"), fmt::format("station {} is listed twice", b.name()));
      continue;
    }
    out.push_back(std::move(b));
  }
}

// The required `prefix` of an [[originate]] or [[static]] entry: no host
// bits, and not that of an entry before it in `out` (then: "prefix P " +
// twice).
template <typename Entry>
std::optional<net::Prefix> parse_entry_prefix(Checker& ck, const toml::table& t, std::string_view p,
                                              std::string_view missing, const std::vector<Entry>& out,
                                              std::string_view twice) {
  if (!t.get("prefix")) ck.missing(t, p, "prefix", missing);
  auto s = ck.string(t, p, "prefix", "a prefix ADDRESS/LENGTH");
  if (!s) return std::nullopt;
  auto pr = net::Prefix::parse(*s, net::Prefix::HostBits::kReject);
  if (!pr)
    ck.error(*t.get("prefix"), join(p, "prefix"),
             fmt::format("expected a prefix ADDRESS/LENGTH with no host bits set, got {}", in_quotes(*s)));
  else if (std::any_of(out.begin(), out.end(), [&](const Entry& x) { return x.prefix == *pr; }))
    ck.error(*t.get("prefix"), join(p, "prefix"), fmt::format("prefix {} {}", pr->to_string(), twice));
  else
    return pr;
  return std::nullopt;
}

// The attributes of an [[originate]] entry (all but prefix). family: the
// prefix's, when known (a kernel source has prefixes of both).
void parse_origin_attributes(Checker& ck, const toml::table& t, std::string_view p,
                             std::optional<net::IpFamily> family, OriginateConfig& o) {
  if (auto s = ck.string(t, p, "next_hop", "an IP address")) {
    auto a = net::IpAddress::parse(*s);
    if (!a || a->is_multicast() || a->is_unspecified())
      ck.error(*t.get("next_hop"), join(p, "next_hop"), fmt::format("expected a unicast IP address, got {}", in_quotes(*s)));
    else if (family == net::IpFamily::V6 && a->family() != net::IpFamily::V6)
      ck.error(*t.get("next_hop"), join(p, "next_hop"), "an IPv6 prefix needs an IPv6 next hop");
    else
      o.next_hop = *a;
  }
  if (auto s = ck.string(t, p, "origin", "\"igp\", \"egp\" or \"incomplete\"")) {
    if (*s == "igp") o.origin = codec::Origin::kIgp;
    else if (*s == "egp") o.origin = codec::Origin::kEgp;
    else if (*s == "incomplete") o.origin = codec::Origin::kIncomplete;
    else ck.error(*t.get("origin"), join(p, "origin"), fmt::format("expected \"igp\", \"egp\" or \"incomplete\", got {}", in_quotes(*s)));
  }
  o.communities = parse_communities(ck, t, p);
  o.large_communities = parse_large(ck, t, p);
  if (auto v = ck.integer(t, p, "med", 0, kMaxU32, "a MED 0..4294967295")) o.med = static_cast<uint32_t>(*v);
  if (auto v = ck.integer(t, p, "local_pref", 0, kMaxU32, "a LOCAL_PREF 0..4294967295"))
    o.local_pref = static_cast<uint32_t>(*v);
}

constexpr std::string_view kProtocolWhat =
    "route protocols by name (\"kernel\", \"boot\", \"static\", \"dhcp\", \"bird\", ..., or a name of "
    "/etc/iproute2/rt_protos) or number 0..255";

// [[originate]] with from_kernel = true (daemon/kernel_origin.h).
void parse_kernel_origin(Checker& ck, const toml::table& t, std::string_view p, const SetEntries& sets,
                         std::vector<KernelOriginConfig>& out) {
  ck.only_keys(t, p, {"from_kernel", "protocols", "table", "prefixes", "max_prefixes", "next_hop", "origin",
                      "communities", "large_communities", "med", "local_pref"});
  const size_t errors_before = ck.count();
  KernelOriginConfig k;
  if (!t.get("protocols"))
    ck.missing(t, p, "protocols", "the kernel route protocols to announce, as [\"static\", \"kernel\"]");
  k.protocols = parse_list<uint8_t>(ck, t, p, "protocols", kProtocolWhat, [](std::string_view s, std::string& why) {
    auto n = rt_protocol_number(s);
    if (n && *n == kRtProtBgp)
      why = "protocol 186 (bgp) is Petrel's own routes in the kernel: never announced again";
    return n && *n != kRtProtBgp ? n : std::nullopt;
  });
  if (auto v = ck.integer(t, p, "table", 1, kMaxU32, "a routing table id 1..4294967295")) k.table = static_cast<uint32_t>(*v);
  if (!t.get("prefixes"))
    ck.missing(t, p, "prefixes", "the prefixes that may be announced: ranges or \"@NAME\" of a [[prefix_set]]");
  auto range_parse = [](std::string_view s, std::string& why) { return table::PrefixRange::parse(s, &why); };
  k.prefixes = parse_refs<table::PrefixRange>(ck, t, p, "prefixes", kRangeWhat, sets.prefix, "prefix_set", range_parse);
  if (auto v = ck.integer(t, p, "max_prefixes", 1, 1'000'000, "a count 1..1000000")) k.max_prefixes = static_cast<uint32_t>(*v);
  parse_origin_attributes(ck, t, p, std::nullopt, k.attributes);
  if (ck.count() == errors_before) out.push_back(std::move(k));
}

void parse_originate(Checker& ck, const toml::table& root, const SetEntries& sets, std::vector<OriginateConfig>& out,
                     std::vector<KernelOriginConfig>& kernel) {
  const toml::array* arr = ck.array(root, "", "originate", "an array of tables ([[originate]])");
  if (!arr) return;
  size_t idx = 0;
  for (const toml::node& el : *arr) {
    std::string p = fmt::format("originate[{}]", idx++);
    const toml::table* t = el.as_table();
    if (!t) {
      ck.error(el, p, fmt::format("expected a table ([[originate]]), got {}", type_name(el)));
      continue;
    }
    if (auto v = ck.boolean(*t, p, "from_kernel"); v && *v) {
      parse_kernel_origin(ck, *t, p, sets, kernel);
      continue;
    }
    ck.only_keys(*t, p, {"prefix", "next_hop", "origin", "communities", "large_communities", "med", "local_pref",
                         "from_kernel"});
    size_t errors_before = ck.count();
    OriginateConfig o;
    if (auto pr = parse_entry_prefix(ck, *t, p, "the prefix to announce, as \"192.0.2.0/24\"", out, "is originated twice"))
      o.prefix = *pr;
    parse_origin_attributes(ck, *t, p, o.prefix.family(), o);
    if (ck.count() == errors_before) out.push_back(std::move(o));
  }
}

// [[static]]: prefix and one of next_hop (with interface), blackhole,
// unreachable; announce.
void parse_statics(Checker& ck, const toml::table& root, std::vector<StaticRouteConfig>& out) {
  const toml::array* arr = ck.array(root, "", "static", "an array of tables ([[static]])");
  if (!arr) return;
  size_t idx = 0;
  for (const toml::node& el : *arr) {
    std::string p = fmt::format("static[{}]", idx++);
    const toml::table* t = el.as_table();
    if (!t) {
      ck.error(el, p, fmt::format("expected a table ([[static]]), got {}", type_name(el)));
      continue;
    }
    ck.only_keys(*t, p, {"prefix", "next_hop", "interface", "blackhole", "unreachable", "announce"});
    const size_t errors_before = ck.count();
    StaticRouteConfig r;
    if (auto pr = parse_entry_prefix(ck, *t, p, "the prefix of the route, as \"192.0.2.0/24\"", out,
                                     "has two [[static]] routes"))
      r.prefix = *pr;
    const bool blackhole = ck.boolean(*t, p, "blackhole").value_or(false);
    const bool unreachable = ck.boolean(*t, p, "unreachable").value_or(false);
    const int kinds = int{t->get("next_hop") != nullptr} + int{blackhole} + int{unreachable};
    if (kinds != 1 && ck.count() == errors_before) {
      const toml::node& at = t->get("next_hop") ? *t->get("next_hop") : el;
      ck.error(at, p, "expected exactly one of next_hop = \"ADDRESS\", blackhole = true, unreachable = true");
    }
    if (blackhole) r.kind = StaticRouteConfig::Kind::kBlackhole;
    if (unreachable) r.kind = StaticRouteConfig::Kind::kUnreachable;
    if (auto s = ck.string(*t, p, "next_hop", "an IP address")) {
      auto a = net::IpAddress::parse(*s);
      if (!a || a->is_multicast() || a->is_unspecified())
        ck.error(*t->get("next_hop"), join(p, "next_hop"), fmt::format("expected a unicast IP address, got {}", in_quotes(*s)));
      else if (a->family() != r.prefix.family())
        ck.error(*t->get("next_hop"), join(p, "next_hop"), "the next hop must be of the prefix's family");
      else
        r.next_hop = *a;
    }
    if (auto s = ck.string(*t, p, "interface", "an interface name")) {
      if (!t->get("next_hop"))
        ck.error(*t->get("interface"), join(p, "interface"), "interface goes with next_hop");
      else if (s->empty() || s->size() > 15)
        ck.error(*t->get("interface"), join(p, "interface"), "expected an interface name of 1..15 characters");
      else
        r.interface = std::string(*s);
    }
    if (r.next_hop && r.next_hop->is_link_local() && r.interface.empty() && ck.count() == errors_before)
      ck.error(*t->get("next_hop"), join(p, "next_hop"), "a link-local next hop needs interface");
    if (auto v = ck.boolean(*t, p, "announce")) r.announce = *v;
    if (ck.count() == errors_before) out.push_back(std::move(r));
  }
}

// A peer's import and export must name "all", "none" or [[policy]]s and
// [[filter]]s; a chain must compile, and use only what its direction has:
// on import, no "self" or "unchanged" next hop; on export, no peer conditions (an
// export policy belongs to the peer it exports to; tag routes on import
// with communities and match those).
void check_peer_filters(Checker& ck, const toml::table& root, const Config& cfg) {
  const toml::array* arr = root["peer"].as_array();
  if (!arr) return;
  for (size_t i = 0; i < arr->size(); ++i) {
    const toml::table* t = (*arr)[i].as_table();
    if (!t) continue;
    for (std::string_view key : {"import", "export"}) {
      const toml::node* n = t->get(key);
      if (!n) continue;
      std::vector<const toml::node*> items;
      if (n->is_string()) items.push_back(n);
      else if (const toml::array* a = n->as_array())
        for (const toml::node& el : *a) items.push_back(&el);
      std::vector<table::PolicyDef> chain;
      bool special = false;
      for (size_t k = 0; k < items.size(); ++k) {
        const auto* s = items[k]->as_string();
        if (!s) continue;
        const std::string k_path = n->is_array() ? fmt::format("peer[{}].{}[{}]", i, key, k) : fmt::format("peer[{}].{}", i, key);
        std::string_view name = s->get();
        if (name == "all" || name == "none") {
          if (items.size() > 1)
            ck.error(*items[k], k_path, fmt::format("{} stands alone: it cannot be chained with policies", in_quotes(name)));
          special = true;
          continue;
        }
        if (auto d = cfg.find_policy(name)) {
          const bool import = key == "import";
          for (size_t ti = 0; ti < d->terms.size(); ++ti) {
            const table::PolicyTerm& term = d->terms[ti];
            std::string where = fmt::format("policy {} term {}", in_quotes(d->name),
                                            term.name.empty() ? fmt::format("[{}]", ti) : in_quotes(term.name));
            if (import && (term.set.next_hop_op == table::NextHopOp::kSelf ||
                           term.set.next_hop_op == table::NextHopOp::kUnchanged))
              ck.error(*items[k], k_path, fmt::format("{} sets next_hop \"self\" or \"unchanged\", which apply on export", where));
            if (!import && (term.match.about_peer() || term.unless.about_peer()))
              ck.error(*items[k], k_path,
                       fmt::format("{} {} peer, peer_as or peer_role, which apply in import policies (tag routes "
                                   "with a community on import and match it on export)",
                                   where, term.match.about_peer() ? "matches" : "has an unless on"));
          }
          chain.push_back(std::move(*d));
          continue;
        }
        std::string known;
        for (const auto& f : cfg.policies) known += fmt::format(", \"{}\"", f.name);
        for (const auto& f : cfg.filters) known += fmt::format(", \"{}\"", f.name);
        for (std::string_view b : table::builtin_policy_names()) known += fmt::format(", \"{}\"", b);
        ck.error(*items[k], k_path,
                 fmt::format("no [[policy]] or [[filter]] is named {}; expected \"all\", \"none\"{}", in_quotes(name), known));
      }
      std::string why;
      if (!special && !chain.empty() && !table::PolicyChain::compile(std::move(chain), &why))
        ck.error(*n, fmt::format("peer[{}].{}", i, key), why);
    }
  }
}

void parse_peers(Checker& ck, const toml::table& root, const RouterConfig& router, std::vector<PeerConfig>& out) {
  const toml::array* arr = ck.array(root, "", "peer", "an array of tables ([[peer]])");
  if (!arr) return;
  const toml::array* listen = root["router"]["listen"].as_array();
  bool no_listener = listen && listen->empty();
  PeerSeen seen;
  size_t idx = 0;
  for (const toml::node& el : *arr) {
    std::string p = fmt::format("peer[{}]", idx++);
    if (const toml::table* t = el.as_table()) parse_peer(ck, *t, p, no_listener, seen, router, out);
    else ck.error(el, p, fmt::format("expected a table ([[peer]]), got {}", type_name(el)));
  }
}

}  // namespace

Result<Config, ConfigErrors> parse_config(std::string_view text, std::string_view source_name) {
  Checker ck(source_name);
  toml::parse_result parsed = toml::parse(text, source_name);
  if (!parsed) {
    const toml::parse_error& e = parsed.error();
    ck.error(e.source(), "", fmt::format("syntax error: {}", e.description()));
    return fail(ck.take());
  }
  const toml::table& root = parsed.table();
  ck.only_keys(root, "", {"router", "http", "control", "log", "kernel", "rpki", "peer", "filter", "prefix_set",
                          "as_set", "community_set", "policy", "originate", "static", "bmp", "mrt"});
  Config cfg;
  parse_router(ck, root, cfg.router);
  parse_http(ck, root, cfg.http);
  parse_control(ck, root, cfg.control);
  parse_log(ck, root, cfg.log);
  parse_kernel(ck, root, cfg.kernel);
  parse_rpki(ck, root, cfg.rpki);
  parse_peers(ck, root, cfg.router, cfg.peers);
  parse_filters(ck, root, cfg.filters);
  SetEntries sets;
  parse_policies(ck, root, cfg.policies, cfg.filters, sets);
  parse_originate(ck, root, sets, cfg.originate, cfg.kernel_origins);
  parse_statics(ck, root, cfg.statics);
  parse_bmp(ck, root, cfg.bmp);
  parse_mrt(ck, root, cfg.mrt);
  check_peer_filters(ck, root, cfg);
  if (!ck.ok()) return fail(ck.take());
  return cfg;
}

std::string BmpStationConfig::name() const { return Endpoint{address, port}.to_string(); }

const table::Filter* Config::find_filter(std::string_view name) const {
  for (const auto& f : filters)
    if (f.name == name) return &f;
  return nullptr;
}

std::optional<table::PolicyDef> Config::find_policy(std::string_view name) const {
  for (const auto& p : policies)
    if (p.name == name) return p;
  if (const table::Filter* f = find_filter(name)) return table::policy_of_filter(*f);
  return table::builtin_policy(name);
}

uint8_t default_multihop(const PeerConfig& peer, uint32_t local_asn) { return peer.is_ebgp(local_asn) ? 1 : 255; }

std::vector<std::string> secret_file_warnings(const Config& config) {
  std::vector<std::string> out;
  auto check = [&out](size_t i, std::string_view key, const std::string& path) {
    if (path.empty()) return;
    std::error_code ec;
    using std::filesystem::perms;
    const perms mode = std::filesystem::status(path, ec).permissions();
    if (ec || (mode & (perms::group_read | perms::others_read)) == perms::none) return;
    out.push_back(fmt::format("peer[{}].{}: {} is readable by {} (chmod 600 it: it holds a secret)", i, key,
                              in_quotes(path), (mode & perms::others_read) != perms::none ? "others" : "its group"));
  };
  for (size_t i = 0; i < config.peers.size(); ++i) {
    check(i, "password_file", config.peers[i].password_file);
    if (config.peers[i].tcp_ao) check(i, "tcp_ao.password_file", config.peers[i].tcp_ao->password_file);
  }
  return out;
}

std::vector<std::string> rfc8212_warnings(const Config& config) {
  std::vector<std::string> out;
  for (size_t i = 0; i < config.peers.size(); ++i) {
    const PeerConfig& p = config.peers[i];
    const bool no_in = import_policy(config, p).rfc8212, no_out = export_policy(config, p).rfc8212;
    if (!no_in && !no_out) continue;
    const bool both = no_in && no_out;
    out.push_back(fmt::format(
        "peer[{}] {} ({}, AS {}): an external peer without {}: under RFC 8212 (router.rfc8212) Petrel {}; add {} "
        "(or a [[filter]]'s name) to its [[peer]]",
        i, in_quotes(p.name), p.address_text(), p.asn, both ? "import or export" : no_in ? "import" : "export",
        both    ? "accepts no route from it and announces none to it"
        : no_in ? "accepts no route from it"
                : "announces no route to it",
        both ? "import = \"all\" and export = \"all\"" : no_in ? "import = \"all\"" : "export = \"all\""));
  }
  return out;
}

Result<Config, ConfigErrors> load_config(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return fail(ConfigErrors{ConfigError{path, 0, 0, "", "cannot read: is a directory"}});
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    int err = errno;
    return fail(ConfigErrors{ConfigError{path, 0, 0, "", fmt::format("cannot read: {}", std::strerror(err))}});
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) {
    return fail(ConfigErrors{ConfigError{path, 0, 0, "", "cannot read: I/O error"}});
  }
  return parse_config(ss.str(), path);
}

std::string_view transport_name(RtrTransport t) {
  switch (t) {
    case RtrTransport::kTcp: return "tcp";
    case RtrTransport::kTls: return "tls";
    case RtrTransport::kSsh: return "ssh";
  }
  return "tcp";
}

}  // namespace petrel::daemon
