// SLURM (RFC 8416): reading a file (section 3), the overlap check across
// files (section 4.2) and applying filters and assertions to VRPs
// (sections 3.3.1, 3.4.1, 4.1). See slurm.h.
//
// The JSON is read by nlohmann-json's SAX parser into a document (no
// exception leaves this file: the parser's error comes back through the
// handler, with its byte offset, turned into a line and column here);
// the handler also bounds the nesting and refuses a member named twice in
// one object, which the document would otherwise keep only once.
#include "rpki/slurm.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <set>
#include <utility>

namespace petrel::rpki {
namespace {

using Json = nlohmann::json;

// The document builder, bounded, with the position of a syntax error.
class Handler : public nlohmann::json_sax<Json> {
 public:
  explicit Handler(Json& out) : dom_(out, false) {}

  bool null() override { return dom_.null(); }
  bool boolean(bool v) override { return dom_.boolean(v); }
  bool number_integer(number_integer_t v) override { return dom_.number_integer(v); }
  bool number_unsigned(number_unsigned_t v) override { return dom_.number_unsigned(v); }
  bool number_float(number_float_t v, const string_t& s) override { return dom_.number_float(v, s); }
  bool string(string_t& v) override { return dom_.string(v); }
  bool binary(binary_t& v) override { return dom_.binary(v); }
  bool start_object(std::size_t n) override {
    if (!deeper()) return false;
    keys_.emplace_back();
    return dom_.start_object(n);
  }
  bool key(string_t& k) override {
    if (!keys_.back().insert(k).second) {
      error_ = "member \"" + k + "\" appears twice in one object";
      return false;
    }
    return dom_.key(k);
  }
  bool end_object() override {
    keys_.pop_back();
    --depth_;
    return dom_.end_object();
  }
  bool start_array(std::size_t n) override { return deeper() && dom_.start_array(n); }
  bool end_array() override {
    --depth_;
    return dom_.end_array();
  }
  bool parse_error(std::size_t position, const std::string& last_token,
                   const nlohmann::detail::exception& ex) override {
    position_ = position;
    error_ = "syntax error: " + std::string(ex.what());
    // nlohmann's text repeats the position; keep what follows it.
    if (auto at = error_.find(": syntax error "); at != std::string::npos) error_ = "syntax error " + error_.substr(at + 15);
    (void)last_token;
    return false;
  }

  std::size_t position_ = 0;  // 1-based byte of a syntax error, else 0
  std::string error_;

 private:
  bool deeper() {
    if (++depth_ > kMaxSlurmDepth) {
      error_ = "nested more than " + std::to_string(kMaxSlurmDepth) + " levels deep";
      return false;
    }
    return true;
  }
  nlohmann::detail::json_sax_dom_parser<Json> dom_;
  std::vector<std::set<std::string>> keys_;
  size_t depth_ = 0;
};

SlurmError at(std::string member, std::string message) {
  SlurmError e;
  e.member = std::move(member);
  e.message = std::move(message);
  return e;
}

std::string kind(const Json& j) {
  switch (j.type()) {
    case Json::value_t::null: return "null";
    case Json::value_t::object: return "an object";
    case Json::value_t::array: return "an array";
    case Json::value_t::string: return "a string";
    case Json::value_t::boolean: return "a boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned: return "the number " + j.dump();
    case Json::value_t::number_float: return "the number " + j.dump();
    case Json::value_t::binary:
    case Json::value_t::discarded: break;
  }
  return "a value";
}

// A member name in a JSON pointer (RFC 6901 section 3).
std::string escaped(std::string_view name) {
  std::string out;
  for (char c : name) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

// Members of `obj` (at `path`) outside `allowed`: the first one, as an error.
std::optional<SlurmError> unknown_member(const Json& obj, const std::string& path,
                                         std::initializer_list<std::string_view> allowed) {
  for (const auto& [name, value] : obj.items()) {
    if (std::find(allowed.begin(), allowed.end(), name) != allowed.end()) continue;
    std::string list;
    for (std::string_view a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
    std::string msg = "unknown member \"" + name + "\" (expected one of: " + list + ")";
    if (name == "aspaFilters" || name == "aspaAssertions")
      msg = "\"" + name + "\" needs \"slurmVersion\": 2 (draft-ietf-sidrops-aspa-slurm section 2; version 1 is RFC " +
            "8416's, without ASPA)";
    return at(path + "/" + escaped(name), std::move(msg));
  }
  return std::nullopt;
}

bool is_asn(const Json& j) { return j.is_number_unsigned() && j.get<uint64_t>() <= 0xffffffffu; }

std::optional<SlurmError> asn_at(const Json& obj, const std::string& path, std::optional<uint32_t>& out,
                                 std::string_view name = "asn") {
  auto it = obj.find(name);
  if (it == obj.end()) return std::nullopt;
  if (!is_asn(*it))
    return at(path + "/" + std::string(name), "expected an AS number 0..4294967295, got " + kind(*it));
  out = static_cast<uint32_t>(it->get<uint64_t>());
  return std::nullopt;
}

std::optional<SlurmError> prefix_at(const Json& obj, const std::string& path, std::optional<net::Prefix>& out) {
  auto it = obj.find("prefix");
  if (it == obj.end()) return std::nullopt;
  if (!it->is_string()) return at(path + "/prefix", "expected an IPv4 or IPv6 prefix, got " + kind(*it));
  const std::string& s = it->get_ref<const std::string&>();
  auto p = net::Prefix::parse(s, net::Prefix::HostBits::kReject);
  if (!p) {
    if (auto loose = net::Prefix::parse(s))
      return at(path + "/prefix", "\"" + s + "\" has bits set past its length (did you mean " + loose->to_string() + "?)");
    return at(path + "/prefix", "expected an IPv4 or IPv6 prefix such as \"192.0.2.0/24\", got \"" + s + "\"");
  }
  out = *p;
  return std::nullopt;
}

std::optional<SlurmError> comment_at(const Json& obj, const std::string& path, std::string& out) {
  auto it = obj.find("comment");
  if (it == obj.end()) return std::nullopt;
  if (!it->is_string()) return at(path + "/comment", "expected a string, got " + kind(*it));
  out = it->get<std::string>();
  return std::nullopt;
}

// A base64url member (SKI, routerPublicKey); `size` 0: any length but 0.
std::optional<SlurmError> bytes_at(const Json& obj, const std::string& path, std::string_view name, size_t size,
                                   std::vector<uint8_t>& out) {
  auto it = obj.find(name);
  if (it == obj.end()) return std::nullopt;
  const std::string where = path + "/" + std::string(name);
  if (!it->is_string()) return at(where, "expected base64url text (RFC 4648 section 5), got " + kind(*it));
  auto bytes = decode_base64url(it->get_ref<const std::string&>());
  if (!bytes || bytes->empty())
    return at(where, "expected base64url text without '=' padding (RFC 4648 section 5, RFC 8416 section 3.3.2)");
  if (size != 0 && bytes->size() != size)
    return at(where, "expected a " + std::to_string(size) + "-octet key identifier, got " +
                         std::to_string(bytes->size()) + " octets");
  out = std::move(*bytes);
  return std::nullopt;
}

// An array member of `obj` that must be there, each element an object.
std::optional<SlurmError> list_at(const Json& obj, const std::string& path, std::string_view name,
                                  const Json*& out) {
  auto it = obj.find(name);
  const std::string where = path + "/" + std::string(name);
  if (it == obj.end()) return at(where, "missing (RFC 8416 section 3.2: every member is required, [] for none)");
  if (!it->is_array()) return at(where, "expected an array, got " + kind(*it));
  for (size_t i = 0; i < it->size(); ++i)
    if (!(*it)[i].is_object()) return at(where + "/" + std::to_string(i), "expected an object, got " + kind((*it)[i]));
  out = &*it;
  return std::nullopt;
}

std::optional<SlurmError> object_at(const Json& obj, const std::string& path, std::string_view name, const Json*& out) {
  auto it = obj.find(name);
  const std::string where = path + "/" + std::string(name);
  if (it == obj.end()) return at(where, "missing (RFC 8416 section 3.2: every member is required)");
  if (!it->is_object()) return at(where, "expected an object, got " + kind(*it));
  out = &*it;
  return std::nullopt;
}

#define SLURM_TRY(expr)               \
  do {                                \
    if (auto e_ = (expr)) return *e_; \
  } while (0)

std::optional<SlurmError> read_prefix_filters(const Json& list, const std::string& path, Slurm& s) {
  for (size_t i = 0; i < list.size(); ++i) {
    const Json& o = list[i];
    const std::string p = path + "/" + std::to_string(i);
    SLURM_TRY(unknown_member(o, p, {"prefix", "asn", "comment"}));
    PrefixFilter f;
    SLURM_TRY(prefix_at(o, p, f.prefix));
    SLURM_TRY(asn_at(o, p, f.asn));
    SLURM_TRY(comment_at(o, p, f.comment));
    if (!f.prefix && !f.asn) return at(p, "a prefix filter needs \"prefix\", \"asn\" or both (RFC 8416 section 3.3.1)");
    s.prefix_filters.push_back(std::move(f));
  }
  return std::nullopt;
}

std::optional<SlurmError> read_bgpsec_filters(const Json& list, const std::string& path, Slurm& s) {
  for (size_t i = 0; i < list.size(); ++i) {
    const Json& o = list[i];
    const std::string p = path + "/" + std::to_string(i);
    SLURM_TRY(unknown_member(o, p, {"asn", "SKI", "comment"}));
    BgpsecFilter f;
    SLURM_TRY(asn_at(o, p, f.asn));
    SLURM_TRY(bytes_at(o, p, "SKI", 20, f.ski));
    SLURM_TRY(comment_at(o, p, f.comment));
    if (!f.asn && f.ski.empty()) return at(p, "a BGPsec filter needs \"asn\", \"SKI\" or both (RFC 8416 section 3.3.2)");
    s.bgpsec_filters.push_back(std::move(f));
  }
  return std::nullopt;
}

std::optional<SlurmError> read_prefix_assertions(const Json& list, const std::string& path, Slurm& s) {
  for (size_t i = 0; i < list.size(); ++i) {
    const Json& o = list[i];
    const std::string p = path + "/" + std::to_string(i);
    SLURM_TRY(unknown_member(o, p, {"prefix", "asn", "maxPrefixLength", "comment"}));
    std::optional<net::Prefix> prefix;
    std::optional<uint32_t> asn;
    PrefixAssertion a;
    SLURM_TRY(prefix_at(o, p, prefix));
    SLURM_TRY(asn_at(o, p, asn));
    SLURM_TRY(comment_at(o, p, a.comment));
    if (!prefix) return at(p + "/prefix", "missing (RFC 8416 section 3.4.1: a prefix assertion needs one)");
    if (!asn) return at(p + "/asn", "missing (RFC 8416 section 3.4.1: a prefix assertion needs one)");
    a.prefix = *prefix;
    a.asn = *asn;
    a.max_len = prefix->len();
    if (auto it = o.find("maxPrefixLength"); it != o.end()) {
      const unsigned top = net::IpAddress::max_len(prefix->family());
      if (!it->is_number_unsigned() || it->get<uint64_t>() < prefix->len() || it->get<uint64_t>() > top)
        return at(p + "/maxPrefixLength", "expected a length " + std::to_string(prefix->len()) + ".." +
                                              std::to_string(top) + " (the prefix's length to the family's), got " +
                                              kind(*it));
      a.max_len = static_cast<uint8_t>(it->get<uint64_t>());
    }
    s.prefix_assertions.push_back(std::move(a));
  }
  return std::nullopt;
}

std::optional<SlurmError> read_bgpsec_assertions(const Json& list, const std::string& path, Slurm& s) {
  for (size_t i = 0; i < list.size(); ++i) {
    const Json& o = list[i];
    const std::string p = path + "/" + std::to_string(i);
    SLURM_TRY(unknown_member(o, p, {"asn", "SKI", "routerPublicKey", "comment"}));
    std::optional<uint32_t> asn;
    BgpsecAssertion a;
    SLURM_TRY(asn_at(o, p, asn));
    SLURM_TRY(bytes_at(o, p, "SKI", 20, a.ski));
    SLURM_TRY(bytes_at(o, p, "routerPublicKey", 0, a.router_public_key));
    SLURM_TRY(comment_at(o, p, a.comment));
    if (!asn) return at(p + "/asn", "missing (RFC 8416 section 3.4.2)");
    if (a.ski.empty()) return at(p + "/SKI", "missing (RFC 8416 section 3.4.2)");
    if (a.router_public_key.empty()) return at(p + "/routerPublicKey", "missing (RFC 8416 section 3.4.2)");
    a.asn = *asn;
    s.bgpsec_assertions.push_back(std::move(a));
  }
  return std::nullopt;
}

// draft-ietf-sidrops-aspa-slurm section 3.1.
std::optional<SlurmError> read_aspa_filters(const Json& list, const std::string& path, Slurm& s) {
  for (size_t i = 0; i < list.size(); ++i) {
    const Json& o = list[i];
    const std::string p = path + "/" + std::to_string(i);
    SLURM_TRY(unknown_member(o, p, {"customerAsn", "comment"}));
    std::optional<uint32_t> customer;
    AspaFilter f;
    SLURM_TRY(asn_at(o, p, customer, "customerAsn"));
    SLURM_TRY(comment_at(o, p, f.comment));
    if (!customer) return at(p + "/customerAsn", "missing (draft-ietf-sidrops-aspa-slurm section 3.1)");
    f.customer = *customer;
    s.aspa_filters.push_back(std::move(f));
  }
  return std::nullopt;
}

// Section 3.2, with the ASPA profile's bounds on the customer and the
// provider set.
std::optional<SlurmError> read_aspa_assertions(const Json& list, const std::string& path, Slurm& s) {
  for (size_t i = 0; i < list.size(); ++i) {
    const Json& o = list[i];
    const std::string p = path + "/" + std::to_string(i);
    SLURM_TRY(unknown_member(o, p, {"customerAsn", "providerAsns", "comment"}));
    std::optional<uint32_t> customer;
    AspaAssertion a;
    SLURM_TRY(asn_at(o, p, customer, "customerAsn"));
    SLURM_TRY(comment_at(o, p, a.comment));
    if (!customer) return at(p + "/customerAsn", "missing (draft-ietf-sidrops-aspa-slurm section 3.2)");
    if (*customer == 0)
      return at(p + "/customerAsn", "AS 0 cannot be a customer (the ASPA profile's customerASID is 1..4294967295)");
    a.customer = *customer;
    auto it = o.find("providerAsns");
    const std::string pp = p + "/providerAsns";
    if (it == o.end()) return at(pp, "missing (draft-ietf-sidrops-aspa-slurm section 3.2)");
    if (!it->is_array()) return at(pp, "expected an array of AS numbers, got " + kind(*it));
    if (it->empty()) return at(pp, "expected at least one provider AS (the ASPA profile's SIZE(1..MAX))");
    for (size_t k = 0; k < it->size(); ++k) {
      const Json& e = (*it)[k];
      const std::string ep = pp + "/" + std::to_string(k);
      if (!is_asn(e)) return at(ep, "expected an AS number 0..4294967295, got " + kind(e));
      const auto asn = static_cast<uint32_t>(e.get<uint64_t>());
      if (asn == a.customer)
        return at(ep, "the customer AS " + std::to_string(asn) +
                          " cannot be its own provider (draft-ietf-sidrops-aspa-slurm section 3.2)");
      if (!a.providers.empty() && asn <= a.providers.back())
        return at(ep, "AS " + std::to_string(asn) + " after AS " + std::to_string(a.providers.back()) +
                          ": providers must be in ascending order, each once (draft-ietf-sidrops-aspa-slurm section 3.2)");
      a.providers.push_back(asn);
    }
    s.aspa_assertions.push_back(std::move(a));
  }
  return std::nullopt;
}

// Line and column (1-based, in bytes) of the byte at `offset` (0-based).
std::pair<size_t, size_t> line_column(std::string_view text, size_t offset) {
  offset = std::min(offset, text.size());
  size_t line = 1, col = 1;
  for (size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return {line, col};
}

}  // namespace

std::string SlurmError::to_string() const {
  if (line != 0) return std::to_string(line) + ":" + std::to_string(column) + ": " + message;
  if (member.empty()) return message;
  return member + ": " + message;
}

std::optional<std::vector<uint8_t>> decode_base64url(std::string_view text) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '-') return 62;
    if (c == '_') return 63;
    return -1;
  };
  if (text.size() % 4 == 1) return std::nullopt;
  std::vector<uint8_t> out;
  out.reserve(text.size() * 3 / 4);
  uint32_t acc = 0;
  int bits = 0;
  for (char c : text) {
    int v = value(c);
    if (v < 0) return std::nullopt;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<uint8_t>(acc >> bits));
      acc &= (1u << bits) - 1;
    }
  }
  if (acc != 0) return std::nullopt;  // leftover bits must be zero (RFC 4648 section 3.5)
  return out;
}

Result<Slurm, SlurmError> parse_slurm(std::string_view text) {
  if (text.size() > kMaxSlurmBytes)
    return fail(at("", "the file is " + std::to_string(text.size()) + " bytes, more than the " +
                           std::to_string(kMaxSlurmBytes) + " allowed"));
  Json doc;
  Handler h(doc);
  const bool parsed = Json::sax_parse(text.begin(), text.end(), &h);
  if (!parsed || !h.error_.empty()) {
    SlurmError e;
    e.message = h.error_.empty() ? "not a JSON document" : h.error_;
    // The parser's position is that of the byte it stopped at, counted from 1.
    auto [line, col] = line_column(text, h.position_ > 0 ? h.position_ - 1 : 0);
    if (h.position_ > 0) {
      e.line = line;
      e.column = col;
    }
    return fail(std::move(e));
  }
  if (!doc.is_object()) return fail(at("", "expected a JSON object (RFC 8416 section 3.2), got " + kind(doc)));
  if (auto e = unknown_member(doc, "", {"slurmVersion", "validationOutputFilters", "locallyAddedAssertions"}))
    return fail(*e);
  auto v = doc.find("slurmVersion");
  if (v == doc.end()) return fail(at("/slurmVersion", "missing (RFC 8416 section 3.2)"));
  if (!v->is_number_unsigned() || (v->get<uint64_t>() != 1 && v->get<uint64_t>() != 2))
    return fail(at("/slurmVersion", "expected 1 (RFC 8416 section 3.2) or 2 (with ASPA, draft-ietf-sidrops-aspa-slurm "
                                    "section 2), got " + kind(*v)));
  Slurm s;
  s.version = static_cast<uint32_t>(v->get<uint64_t>());
  const bool aspa = s.version == 2;
  const Json* filters = nullptr;
  const Json* assertions = nullptr;
  if (auto e = object_at(doc, "", "validationOutputFilters", filters)) return fail(*e);
  if (auto e = object_at(doc, "", "locallyAddedAssertions", assertions)) return fail(*e);
  const std::string fp = "/validationOutputFilters", ap = "/locallyAddedAssertions";
  if (auto e = aspa ? unknown_member(*filters, fp, {"prefixFilters", "bgpsecFilters", "aspaFilters"})
                    : unknown_member(*filters, fp, {"prefixFilters", "bgpsecFilters"}))
    return fail(*e);
  if (auto e = aspa ? unknown_member(*assertions, ap, {"prefixAssertions", "bgpsecAssertions", "aspaAssertions"})
                    : unknown_member(*assertions, ap, {"prefixAssertions", "bgpsecAssertions"}))
    return fail(*e);
  const Json *pf = nullptr, *bf = nullptr, *pa = nullptr, *ba = nullptr;
  const Json empty = Json::array();
  const Json *af = &empty, *aa = &empty;
  if (auto e = list_at(*filters, fp, "prefixFilters", pf)) return fail(*e);
  if (auto e = list_at(*filters, fp, "bgpsecFilters", bf)) return fail(*e);
  if (aspa)
    if (auto e = list_at(*filters, fp, "aspaFilters", af)) return fail(*e);
  if (auto e = list_at(*assertions, ap, "prefixAssertions", pa)) return fail(*e);
  if (auto e = list_at(*assertions, ap, "bgpsecAssertions", ba)) return fail(*e);
  if (aspa)
    if (auto e = list_at(*assertions, ap, "aspaAssertions", aa)) return fail(*e);
  size_t n = pf->size() + bf->size() + af->size() + pa->size() + ba->size() + aa->size();
  for (const Json& o : *aa)
    if (auto it = o.find("providerAsns"); it != o.end() && it->is_array()) n += it->size();
  if (n > kMaxSlurmEntries)
    return fail(at("", "the file has " + std::to_string(n) + " filters, assertions and providers, more than the " +
                           std::to_string(kMaxSlurmEntries) + " allowed"));
  if (auto e = read_prefix_filters(*pf, fp + "/prefixFilters", s)) return fail(*e);
  if (auto e = read_bgpsec_filters(*bf, fp + "/bgpsecFilters", s)) return fail(*e);
  if (auto e = read_aspa_filters(*af, fp + "/aspaFilters", s)) return fail(*e);
  if (auto e = read_prefix_assertions(*pa, ap + "/prefixAssertions", s)) return fail(*e);
  if (auto e = read_bgpsec_assertions(*ba, ap + "/bgpsecAssertions", s)) return fail(*e);
  if (auto e = read_aspa_assertions(*aa, ap + "/aspaAssertions", s)) return fail(*e);
  return s;
}

std::optional<SlurmOverlap> find_overlap(std::span<const Slurm> files) {
  struct Entry {
    net::Prefix prefix;
    size_t file;
  };
  std::vector<Entry> all;
  for (size_t f = 0; f < files.size(); ++f) {
    for (const PrefixFilter& p : files[f].prefix_filters)
      if (p.prefix) all.push_back({*p.prefix, f});
    for (const PrefixAssertion& p : files[f].prefix_assertions) all.push_back({p.prefix, f});
  }
  // In address order, shorter first at one address, a prefix comes after
  // every prefix that covers it: a stack of the prefixes that cover the
  // current one (a chain) finds every overlap.
  std::sort(all.begin(), all.end(), [](const Entry& a, const Entry& b) {
    if (a.prefix != b.prefix) return a.prefix < b.prefix;
    return a.file < b.file;
  });
  std::vector<const Entry*> chain;
  for (size_t i = 0; i < all.size(); ++i) {
    const Entry& e = all[i];
    // An entry of the prefix and file of the one before it would find
    // what that one found, and only lengthen the chain: skipped, so that
    // the chain holds distinct nested prefixes (at most 129 for IPv6)
    // however many filters a file has for one prefix.
    if (i > 0 && all[i - 1].prefix == e.prefix && all[i - 1].file == e.file) continue;
    while (!chain.empty() && !chain.back()->prefix.contains(e.prefix)) chain.pop_back();
    for (const Entry* c : chain) {
      if (c->file == e.file) continue;
      SlurmOverlap o;
      o.file_a = std::min(c->file, e.file);
      o.file_b = std::max(c->file, e.file);
      o.what = "prefix " + c->prefix.to_string() + (c->prefix == e.prefix ? " is in both" : " covers " + e.prefix.to_string());
      return o;
    }
    chain.push_back(&e);
  }
  std::vector<std::pair<std::vector<uint8_t>, size_t>> skis;
  for (size_t f = 0; f < files.size(); ++f) {
    for (const BgpsecFilter& b : files[f].bgpsec_filters)
      if (!b.ski.empty()) skis.emplace_back(b.ski, f);
    for (const BgpsecAssertion& b : files[f].bgpsec_assertions) skis.emplace_back(b.ski, f);
  }
  std::sort(skis.begin(), skis.end());
  for (size_t i = 1; i < skis.size(); ++i) {
    if (skis[i].first == skis[i - 1].first && skis[i].second != skis[i - 1].second)
      return SlurmOverlap{skis[i - 1].second, skis[i].second, "a router SKI is in both"};
  }
  return std::nullopt;
}

SlurmFilter::SlurmFilter(std::span<const Slurm> files) {
  for (const Slurm& s : files) {
    for (const PrefixFilter& f : s.prefix_filters) {
      if (f.prefix) prefixes_.push_back({*f.prefix, f.asn});
      else asns_.push_back(*f.asn);
    }
    for (const PrefixAssertion& a : s.prefix_assertions) assertions_.push_back(a.vrp());
    for (const AspaFilter& f : s.aspa_filters) aspa_filters_.push_back(f.customer);
    for (const AspaAssertion& a : s.aspa_assertions) aspa_assertions_.push_back(Aspa{a.customer, a.providers});
  }
  std::sort(aspa_filters_.begin(), aspa_filters_.end());
  aspa_filters_.erase(std::unique(aspa_filters_.begin(), aspa_filters_.end()), aspa_filters_.end());
  // Several assertions for one customer (in one file or several) assert
  // every provider any of them names.
  std::stable_sort(aspa_assertions_.begin(), aspa_assertions_.end(),
                   [](const Aspa& a, const Aspa& b) { return a.customer < b.customer; });
  std::vector<Aspa> merged;
  for (Aspa& a : aspa_assertions_) {
    if (!merged.empty() && merged.back().customer == a.customer) {
      std::vector<uint32_t> both;
      std::set_union(merged.back().providers.begin(), merged.back().providers.end(), a.providers.begin(),
                     a.providers.end(), std::back_inserter(both));
      merged.back().providers = std::move(both);
    } else {
      merged.push_back(std::move(a));
    }
  }
  aspa_assertions_ = std::move(merged);
  std::sort(asns_.begin(), asns_.end());
  asns_.erase(std::unique(asns_.begin(), asns_.end()), asns_.end());
  std::sort(prefixes_.begin(), prefixes_.end());
  prefixes_.erase(std::unique(prefixes_.begin(), prefixes_.end()), prefixes_.end());
  for (const Keyed& k : prefixes_) {
    auto& lens = lens_[k.prefix.family() == net::IpFamily::V4 ? 0 : 1];
    if (std::find(lens.begin(), lens.end(), k.prefix.len()) == lens.end()) lens.push_back(k.prefix.len());
  }
  std::sort(assertions_.begin(), assertions_.end());
  assertions_.erase(std::unique(assertions_.begin(), assertions_.end()), assertions_.end());
}

bool SlurmFilter::removes(const Vrp& v) const {
  if (std::binary_search(asns_.begin(), asns_.end(), v.asn)) return true;
  const auto& lens = lens_[v.prefix.family() == net::IpFamily::V4 ? 0 : 1];
  for (uint8_t len : lens) {
    if (len > v.prefix.len()) continue;
    // The filters of this length whose prefix covers v's: those of the one
    // prefix of that length that holds v's address.
    const net::Prefix p = *net::Prefix::make(v.prefix.addr(), len);
    const auto first = std::lower_bound(prefixes_.begin(), prefixes_.end(), Keyed{p, std::nullopt});
    if (first == prefixes_.end() || first->prefix != p) continue;
    if (prefix_matches(first, prefixes_.end(), v.asn)) return true;
  }
  return false;
}

bool SlurmFilter::prefix_matches(std::vector<Keyed>::const_iterator first, std::vector<Keyed>::const_iterator last,
                                 uint32_t asn) {
  return !first->asn || std::binary_search(first, last, Keyed{first->prefix, asn});
}

SlurmFilter::Applied SlurmFilter::apply(std::span<const Vrp> vrps) const {
  Applied out;
  // A client's VRPs come sorted (rpki::Client::vrps()): no copy then.
  std::vector<Vrp> sorted;
  if (!std::is_sorted(vrps.begin(), vrps.end())) {
    sorted.assign(vrps.begin(), vrps.end());
    std::sort(sorted.begin(), sorted.end());
    vrps = sorted;
  }
  out.vrps.reserve(vrps.size() + assertions_.size());
  // One walk over the VRPs and the prefix filters together, both in prefix
  // order, instead of a search per filter length for each VRP (100,000
  // filters over all 33 IPv4 lengths were 3.4 s per 600,000 VRPs). Two
  // prefixes are nested or apart, and one comes before every prefix it
  // covers: the filters' prefixes that cover the walk's place are a chain,
  // held on a stack, outermost first, one entry per prefix.
  struct Group {
    size_t first, end;  // its filters in prefixes_
  };
  std::vector<Group> chain;
  size_t next = 0;  // the first filter the walk has not reached
  auto covered = [&](const Vrp& v) {
    while (next < prefixes_.size() && !(v.prefix < prefixes_[next].prefix)) {
      const net::Prefix& p = prefixes_[next].prefix;
      size_t end = next + 1;
      while (end < prefixes_.size() && prefixes_[end].prefix == p) ++end;
      while (!chain.empty() && !prefixes_[chain.back().first].prefix.contains(p)) chain.pop_back();
      chain.push_back(Group{next, end});
      next = end;
    }
    while (!chain.empty() && !prefixes_[chain.back().first].prefix.contains(v.prefix)) chain.pop_back();
    // Every prefix left covers v's.
    return std::any_of(chain.begin(), chain.end(), [&](const Group& g) {
      return prefix_matches(prefixes_.begin() + static_cast<ptrdiff_t>(g.first),
                            prefixes_.begin() + static_cast<ptrdiff_t>(g.end), v.asn);
    });
  };
  for (const Vrp& v : vrps) {
    if (covered(v) || std::binary_search(asns_.begin(), asns_.end(), v.asn)) {
      ++out.removed;
      continue;
    }
    out.vrps.push_back(v);
  }
  out.vrps.erase(std::unique(out.vrps.begin(), out.vrps.end()), out.vrps.end());
  const size_t kept = out.vrps.size();
  if (assertions_.empty()) return out;
  std::vector<Vrp> merged;
  merged.reserve(kept + assertions_.size());
  std::set_union(out.vrps.begin(), out.vrps.end(), assertions_.begin(), assertions_.end(), std::back_inserter(merged));
  out.added = merged.size() - kept;
  out.vrps = std::move(merged);
  return out;
}

SlurmFilter::AppliedAspas SlurmFilter::apply_aspas(std::span<const Aspa> aspas) const {
  AppliedAspas out;
  out.aspas.reserve(aspas.size() + aspa_assertions_.size());
  for (const Aspa& a : aspas) {
    if (std::binary_search(aspa_filters_.begin(), aspa_filters_.end(), a.customer)) {
      ++out.removed;
      continue;
    }
    out.aspas.push_back(a);
  }
  auto by_customer = [](const Aspa& a, const Aspa& b) { return a.customer < b.customer; };
  if (!std::is_sorted(out.aspas.begin(), out.aspas.end(), by_customer))
    std::sort(out.aspas.begin(), out.aspas.end(), by_customer);
  if (aspa_assertions_.empty()) return out;
  // Merge by customer: an assertion for a customer the cache has adds its
  // providers to the cache's (the draft: not an implicit filter).
  std::vector<Aspa> merged;
  merged.reserve(out.aspas.size() + aspa_assertions_.size());
  size_t i = 0, j = 0;
  while (i < out.aspas.size() || j < aspa_assertions_.size()) {
    if (j == aspa_assertions_.size() ||
        (i < out.aspas.size() && out.aspas[i].customer < aspa_assertions_[j].customer)) {
      merged.push_back(std::move(out.aspas[i++]));
    } else if (i == out.aspas.size() || aspa_assertions_[j].customer < out.aspas[i].customer) {
      merged.push_back(aspa_assertions_[j++]);
      ++out.added;
    } else {
      Aspa a{out.aspas[i].customer, {}};
      std::set_union(out.aspas[i].providers.begin(), out.aspas[i].providers.end(),
                     aspa_assertions_[j].providers.begin(), aspa_assertions_[j].providers.end(),
                     std::back_inserter(a.providers));
      if (a.providers.size() != out.aspas[i].providers.size()) ++out.added;
      merged.push_back(std::move(a));
      ++i;
      ++j;
    }
  }
  out.aspas = std::move(merged);
  return out;
}

}  // namespace petrel::rpki
