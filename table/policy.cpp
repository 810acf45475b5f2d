// Routing policy (policy.h, docs/policy.md).
#include "table/policy.h"

#include <re2/re2.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <cstring>

#include "table/export.h"

namespace petrel::table {

namespace {

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t i = 0;
  for (;;) {
    size_t j = s.find(sep, i);
    out.push_back(s.substr(i, j == std::string_view::npos ? std::string_view::npos : j - i));
    if (j == std::string_view::npos) return out;
    i = j + 1;
  }
}

bool any_range(const std::vector<NumberRange>& rs, uint32_t v) {
  for (const auto& r : rs)
    if (r.contains(v)) return true;
  return false;
}

// RFC 4360 section 3.1 and 3.2: the 2-octet AS, IPv4 address and 4-octet
// AS (RFC 5668) specific types, transitive; sub-type 0x02 route target,
// 0x03 route origin.
constexpr uint8_t kExtAs2 = 0x00, kExtIpv4 = 0x01, kExtAs4 = 0x02;

bool in_prefixes(const std::vector<net::Prefix>& ps, const net::IpAddress& a) {
  for (const auto& p : ps)
    if (p.contains(a)) return true;
  return false;
}

template <typename A>  // codec::PathAttributes or ChangedValues
bool carries(const A& a, const CommunityPattern& p) {
  switch (p.kind) {
    case CommunityPattern::Kind::kStandard:
      for (uint32_t c : a.communities)
        if (p.matches(c)) return true;
      return false;
    case CommunityPattern::Kind::kLarge:
      for (const auto& c : a.large_communities)
        if (p.matches(c)) return true;
      return false;
    case CommunityPattern::Kind::kExtended:
      for (auto c : a.ext_communities)
        if (p.matches(c)) return true;
      return false;
  }
  return false;
}

uint64_t ext_value(const CommunityPattern& p) { return uint64_t{p.v[0]} << 32 | p.v[1]; }

uint32_t be32(const std::byte* b) {
  return uint32_t{std::to_integer<uint8_t>(b[0])} << 24 | uint32_t{std::to_integer<uint8_t>(b[1])} << 16 |
         uint32_t{std::to_integer<uint8_t>(b[2])} << 8 | uint32_t{std::to_integer<uint8_t>(b[3])};
}

// The community attributes of a canonical set, read in place.
struct CommunityViews {
  bytes::Span standard, extended, large;
};

CommunityViews communities_of(const codec::AttributeSet& a) {
  CommunityViews v;
  v.standard = a.communities();
  for (const auto& attr : a.attributes()) {
    if (attr.type == codec::attr_type::kExtendedCommunities) v.extended = attr.value;
    else if (attr.type == codec::attr_type::kLargeCommunity) v.large = attr.value;
    if (attr.type > codec::attr_type::kLargeCommunity) break;  // canonical: sorted by type
  }
  return v;
}

bool carries(const CommunityViews& v, const CommunityPattern& p) {
  switch (p.kind) {
    case CommunityPattern::Kind::kStandard:
      for (size_t i = 0; i + 4 <= v.standard.size(); i += 4)
        if (p.matches(be32(v.standard.data() + i))) return true;
      return false;
    case CommunityPattern::Kind::kLarge:
      for (size_t i = 0; i + 12 <= v.large.size(); i += 12) {
        const std::byte* b = v.large.data() + i;
        if (p.matches(codec::LargeCommunity{be32(b), be32(b + 4), be32(b + 8)})) return true;
      }
      return false;
    case CommunityPattern::Kind::kExtended:
      for (size_t i = 0; i + 8 <= v.extended.size(); i += 8) {
        const std::byte* b = v.extended.data() + i;
        if (p.matches(codec::ExtCommunity{uint64_t{be32(b)} << 32 | be32(b + 4)})) return true;
      }
      return false;
  }
  return false;
}

// The path's segments in their common form, for the text and the tests of
// the AS numbers in it: fn(is_set, count, at).
template <typename Fn>
void for_each_segment(const codec::AsPath& p, Fn&& fn) {
  for (const auto& seg : p.segments)
    fn(seg.type == codec::SegmentType::kAsSet || seg.type == codec::SegmentType::kConfedSet, seg.asns.size(),
       [&](size_t i) { return seg.asns[i]; });
}
template <typename Fn>
void for_each_segment(codec::AsSegmentRange p, Fn&& fn) {
  for (const auto& seg : p)
    fn(seg.type == codec::SegmentType::kAsSet || seg.type == codec::SegmentType::kConfedSet, size_t{seg.count},
       [&](size_t i) { return seg.at(i); });
}

template <typename Path>
void path_text(const Path& p, std::string& out) {
  out.clear();
  char buf[16];
  for_each_segment(p, [&](bool set, size_t count, auto at) {
    if (!out.empty()) out += ' ';
    if (set) out += '{';
    for (size_t i = 0; i < count; ++i) {
      if (i) out += set ? ',' : ' ';
      auto [end, ec] = std::to_chars(buf, buf + sizeof buf, at(i));
      out.append(buf, end);
    }
    if (set) out += '}';
  });
}

}  // namespace

// ---- NumberRange

std::optional<NumberRange> NumberRange::parse(std::string_view text, uint32_t max, std::string* why) {
  auto fail = [&](std::string reason) -> std::optional<NumberRange> {
    if (why) *why = std::move(reason);
    return std::nullopt;
  };
  const size_t dash = text.find('-');
  auto lo = parse_u32(text.substr(0, dash));
  auto hi = dash == std::string_view::npos ? lo : parse_u32(text.substr(dash + 1));
  if (!lo || !hi) return fail("expected \"N\" or \"N-M\"");
  if (*lo > max || *hi > max) return fail("a number above " + std::to_string(max));
  if (*hi < *lo) return fail(std::to_string(*hi) + " is less than " + std::to_string(*lo));
  return NumberRange{*lo, *hi};
}

std::string NumberRange::to_string() const {
  return lo == hi ? std::to_string(lo) : std::to_string(lo) + "-" + std::to_string(hi);
}

// ---- CommunityPattern

bool CommunityPattern::matches(uint32_t c) const {
  if (kind != Kind::kStandard) return false;
  return ((any & 1) || (c >> 16) == v[0]) && ((any & 2) || (c & 0xFFFF) == v[1]);
}

bool CommunityPattern::matches(const codec::LargeCommunity& c) const {
  if (kind != Kind::kLarge) return false;
  return ((any & 1) || c.global == v[0]) && ((any & 2) || c.local1 == v[1]) && ((any & 4) || c.local2 == v[2]);
}

bool CommunityPattern::matches(codec::ExtCommunity c) const {
  if (kind != Kind::kExtended) return false;
  const uint64_t want = ext_value(*this);
  if (!(any & 4)) return c.value == want;
  // "*" in the local administrator: type, sub-type and global compared.
  const uint8_t type = static_cast<uint8_t>(want >> 56);
  const uint64_t mask = type == kExtAs2 ? 0xFFFFFFFF00000000ull : 0xFFFFFFFFFFFF0000ull;
  return (c.value & mask) == (want & mask);
}

std::optional<CommunityPattern> CommunityPattern::parse(std::string_view text, std::string* why) {
  auto fail = [&](std::string reason) -> std::optional<CommunityPattern> {
    if (why) *why = std::move(reason);
    return std::nullopt;
  };
  CommunityPattern p;
  if (auto c = parse_community(text)) {
    p.v = {*c >> 16, *c & 0xFFFF, 0};
    return p;
  }
  if (text.starts_with("rt:") || text.starts_with("soo:")) {
    const uint8_t sub = text.starts_with("rt:") ? 0x02 : 0x03;
    auto f = split(text.substr(text.find(':') + 1), ':');
    // An IPv4 global administrator has no ':' of its own.
    if (f.size() != 2) return fail("expected \"rt:GLOBAL:LOCAL\" or \"soo:GLOBAL:LOCAL\"");
    p.kind = Kind::kExtended;
    uint32_t local = 0;
    if (f[1] == "*") {
      p.any = 4;
    } else if (auto l = parse_u32(f[1])) {
      local = *l;
    } else {
      return fail("\"" + std::string(f[1]) + "\" is not a number or \"*\"");
    }
    uint64_t value = 0;
    if (auto ip = net::IpAddress::parse(f[0]); ip && ip->is_v4()) {
      if (local > 0xFFFF) return fail("the local administrator of an IPv4-specific community is 0..65535");
      value = uint64_t{kExtIpv4} << 56 | uint64_t{sub} << 48 | uint64_t{ip->v4_value()} << 16 | local;
    } else if (auto as = parse_u32(f[0])) {
      if (*as <= 0xFFFF) {
        value = uint64_t{kExtAs2} << 56 | uint64_t{sub} << 48 | uint64_t{*as} << 32 | local;
      } else {
        if (local > 0xFFFF) return fail("the local administrator of a 4-octet AS community is 0..65535");
        value = uint64_t{kExtAs4} << 56 | uint64_t{sub} << 48 | uint64_t{*as} << 16 | local;
      }
    } else {
      return fail("\"" + std::string(f[0]) + "\" is neither an AS number nor an IPv4 address");
    }
    p.v = {static_cast<uint32_t>(value >> 32), static_cast<uint32_t>(value), 0};
    return p;
  }
  auto f = split(text, ':');
  if (f.size() != 2 && f.size() != 3)
    return fail("expected a community \"A:B\" (or a well-known name), a large community \"A:B:C\", or \"rt:A:B\" / "
                "\"soo:A:B\"; \"*\" stands for any value");
  p.kind = f.size() == 2 ? Kind::kStandard : Kind::kLarge;
  const uint32_t max = f.size() == 2 ? 0xFFFF : UINT32_MAX;
  for (size_t i = 0; i < f.size(); ++i) {
    if (f[i] == "*") {
      p.any = static_cast<uint8_t>(p.any | 1u << i);
      continue;
    }
    auto n = parse_u32(f[i]);
    if (!n || *n > max) return fail("\"" + std::string(f[i]) + "\" is not a number 0.." + std::to_string(max) + " or \"*\"");
    p.v[i] = *n;
  }
  return p;
}

std::string CommunityPattern::to_string() const {
  auto field = [&](size_t i) { return (any >> i & 1) ? std::string("*") : std::to_string(v[i]); };
  switch (kind) {
    case Kind::kStandard:
      if (!any) return community_text(v[0] << 16 | v[1]);
      return field(0) + ":" + field(1);
    case Kind::kLarge: return field(0) + ":" + field(1) + ":" + field(2);
    case Kind::kExtended: {
      const uint64_t value = ext_value(*this);
      const auto type = static_cast<uint8_t>(value >> 56);
      std::string s = (value >> 48 & 0xFF) == 0x02 ? "rt:" : "soo:";
      std::string local = (any & 4) ? "*" : std::to_string(type == kExtAs2 ? value & 0xFFFFFFFF : value & 0xFFFF);
      if (type == kExtAs2) return s + std::to_string(value >> 32 & 0xFFFF) + ":" + local;
      if (type == kExtIpv4) return s + net::IpAddress::v4(static_cast<uint32_t>(value >> 16)).to_string() + ":" + local;
      return s + std::to_string(value >> 16 & 0xFFFFFFFF) + ":" + local;
    }
  }
  return "?";
}

std::string_view peer_type_name(PeerType t) {
  switch (t) {
    case PeerType::kExternal: return "external";
    case PeerType::kInternal: return "internal";
    case PeerType::kLocal: return "local";
  }
  return "?";
}

std::string_view policy_then_name(PolicyThen t) {
  switch (t) {
    case PolicyThen::kNext: return "next";
    case PolicyThen::kAccept: return "accept";
    case PolicyThen::kReject: return "reject";
  }
  return "?";
}

PolicyDef policy_of_filter(const Filter& f) {
  PolicyDef d;
  d.name = f.name;
  size_t i = 0;
  for (const FilterRule& r : f.rules) {
    PolicyTerm t;
    t.name = "rule" + std::to_string(i++);
    t.match.prefix = r.prefixes;
    for (uint32_t c : r.communities) t.match.community.push_back(CommunityPattern{CommunityPattern::Kind::kStandard, {c >> 16, c & 0xFFFF, 0}, 0});
    for (const auto& c : r.large_communities)
      t.match.community.push_back(CommunityPattern{CommunityPattern::Kind::kLarge, {c.global, c.local1, c.local2}, 0});
    t.set.local_pref = r.set_local_pref;
    if (r.set_med) {
      t.set.med_op = MedOp::kSet;
      t.set.med = *r.set_med;
    }
    t.then = r.action == FilterAction::kAccept ? PolicyThen::kAccept : PolicyThen::kReject;
    d.terms.push_back(std::move(t));
  }
  d.default_then = f.default_action == FilterAction::kAccept ? PolicyThen::kAccept : PolicyThen::kReject;
  return d;
}

// ---- built-in policies

namespace {

constexpr std::string_view kBogons[] = {
    "0.0.0.0/8 le 32",     "10.0.0.0/8 le 32",     "100.64.0.0/10 le 32", "127.0.0.0/8 le 32",
    "169.254.0.0/16 le 32", "172.16.0.0/12 le 32", "192.0.0.0/24 le 32",  "192.0.2.0/24 le 32",
    "192.168.0.0/16 le 32", "198.18.0.0/15 le 32", "198.51.100.0/24 le 32", "203.0.113.0/24 le 32",
    "224.0.0.0/4 le 32",   "240.0.0.0/4 le 32",    "0.0.0.0/0",           "0.0.0.0/0 ge 25",
    "::/8 le 128",         "100::/64 le 128",      "2001:2::/48 le 128",  "2001:10::/28 le 128",
    "2001:db8::/32 le 128", "2002::/16 le 128",    "3ffe::/16 le 128",    "fc00::/7 le 128",
    "fe80::/10 le 128",    "fec0::/10 le 128",     "ff00::/8 le 128",     "::/0",
    "::/0 ge 49",
};

PolicyTerm rejecting(std::string name, PolicyMatch m) { return PolicyTerm{std::move(name), std::move(m), {}, PolicyThen::kReject, {}}; }

}  // namespace

std::vector<std::string_view> builtin_policy_names() {
  return {"builtin:graceful-shutdown", "builtin:no-blackhole", "builtin:bogons", "builtin:no-as-set"};
}

std::optional<PolicyDef> builtin_policy(std::string_view name) {
  PolicyDef d;
  d.name = std::string(name);
  if (name == "builtin:graceful-shutdown") {
    PolicyTerm t;
    t.name = "graceful-shutdown";
    t.match.community = {*CommunityPattern::parse("graceful-shutdown")};
    t.set.local_pref = 0;
    d.terms.push_back(std::move(t));
  } else if (name == "builtin:no-blackhole") {
    PolicyMatch m;
    m.community = {*CommunityPattern::parse("blackhole")};
    d.terms.push_back(rejecting("blackhole", std::move(m)));
  } else if (name == "builtin:bogons") {
    PolicyMatch m;
    for (std::string_view r : kBogons) m.prefix.push_back(*PrefixRange::parse(r));
    d.terms.push_back(rejecting("bogon", std::move(m)));
  } else if (name == "builtin:no-as-set") {
    PolicyMatch m;
    m.as_set = true;
    d.terms.push_back(rejecting("as-set", std::move(m)));
  } else {
    return std::nullopt;
  }
  return d;
}

// ---- the AS path as text

void as_path_text(const codec::AsPath& p, std::string& out) { path_text(p, out); }

std::string as_path_regex(std::string_view text) {
  std::string out;
  bool in_class = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\\' && i + 1 < text.size()) {
      out += c;
      out += text[++i];
      continue;
    }
    if (c == '[') in_class = true;
    if (c == ']') in_class = false;
    if (c == '_' && !in_class) {
      out += "(?:^|$|[ {},])";
      continue;
    }
    out += c;
  }
  return out;
}

// ---- AsPathTokens

namespace {

// The digit strings of X (AsPathTokens' grammar), each at most 10 digits,
// into `out`; false when X is outside the grammar or has more than `most`.
//   alt  := seq ('|' seq)*     (only inside parentheses)
//   seq  := item+
//   item := digit | '[' (digit | digit '-' digit)+ ']' | '(' alt ')'
class DigitLanguage {
 public:
  DigitLanguage(std::string_view text, size_t most) : text_(text), most_(most) {}
  bool parse(std::vector<std::string>& out) { return seq(out) && at_ == text_.size(); }

 private:
  bool seq(std::vector<std::string>& out) {
    out = {""};
    bool any = false;
    while (at_ < text_.size() && text_[at_] != '|' && text_[at_] != ')') {
      std::vector<std::string> part;
      if (!item(part)) return false;
      std::vector<std::string> joined;
      if (out.size() * part.size() > most_) return false;
      for (const auto& a : out)
        for (const auto& b : part) {
          if (a.size() + b.size() > 10) continue;  // longer than any AS number
          joined.push_back(a + b);
        }
      out = std::move(joined);
      any = true;
    }
    return any;
  }
  bool item(std::vector<std::string>& out) {
    const char c = text_[at_];
    if (c >= '0' && c <= '9') {
      out = {std::string(1, c)};
      ++at_;
      return true;
    }
    if (c == '[') {
      ++at_;
      std::bitset<10> digits;
      while (at_ < text_.size() && text_[at_] != ']') {
        const char lo = text_[at_];
        if (lo < '0' || lo > '9') return false;
        char hi = lo;
        if (at_ + 2 < text_.size() && text_[at_ + 1] == '-' && text_[at_ + 2] != ']') {
          hi = text_[at_ + 2];
          if (hi < lo || hi > '9') return false;
          at_ += 2;
        }
        for (char d = lo; d <= hi; ++d) digits.set(static_cast<size_t>(d - '0'));
        ++at_;
      }
      if (at_ == text_.size() || digits.none()) return false;
      ++at_;  // ']'
      for (size_t d = 0; d < 10; ++d)
        if (digits.test(d)) out.emplace_back(1, static_cast<char>('0' + d));
      return true;
    }
    if (c == '(') {
      if (++depth_ > kMostDepth) return false;  // left to RE2 (which bounds its own)
      ++at_;
      for (;;) {
        std::vector<std::string> one;
        if (!seq(one)) return false;
        if (out.size() + one.size() > most_) return false;
        out.insert(out.end(), one.begin(), one.end());
        if (at_ < text_.size() && text_[at_] == '|') {
          ++at_;
          continue;
        }
        break;
      }
      if (at_ == text_.size() || text_[at_] != ')') return false;
      ++at_;
      --depth_;
      return true;
    }
    return false;
  }

  static constexpr size_t kMostDepth = 16;  // parentheses within parentheses
  std::string_view text_;
  size_t most_;
  size_t at_ = 0;
  size_t depth_ = 0;
};

}  // namespace

std::optional<AsPathTokens> AsPathTokens::of(std::string_view e) {
  if (e.size() < 3) return std::nullopt;
  AsPathTokens t;
  const char first = e.front(), last = e.back();
  if (first == '_' && last == '_') t.where_ = Where::kAny;
  else if (first == '^' && last == '_') t.where_ = Where::kFirst;
  else if (first == '_' && last == '$') t.where_ = Where::kLast;
  else if (first == '^' && last == '$') t.where_ = Where::kOnly;
  else return std::nullopt;
  std::vector<std::string> strings;
  if (!DigitLanguage(e.substr(1, e.size() - 2), kMostNumbers).parse(strings)) return std::nullopt;
  for (const std::string& d : strings) {
    // Only a number's own decimal form is ever in the text: no leading 0.
    if (d.empty() || (d.size() > 1 && d[0] == '0')) continue;
    uint64_t v = 0;
    for (const char c : d) v = v * 10 + static_cast<uint64_t>(c - '0');
    if (v <= UINT32_MAX) t.asns_.push_back(static_cast<uint32_t>(v));
  }
  std::sort(t.asns_.begin(), t.asns_.end());
  t.asns_.erase(std::unique(t.asns_.begin(), t.asns_.end()), t.asns_.end());
  return t;
}

bool AsPathTokens::has(uint32_t asn) const {
  if (asns_.size() <= 8) return std::find(asns_.begin(), asns_.end(), asn) != asns_.end();
  return std::binary_search(asns_.begin(), asns_.end(), asn);
}

bool AsPathTokens::matches(codec::AsSegmentRange path) const {
  // Follows what path_text() writes: a number is the text's first token
  // when nothing was written before it, its last when nothing after it.
  bool written = false, ends_in_number = false, first_at_start = false, any = false;
  uint32_t first = 0, last = 0;
  size_t tokens = 0;
  for_each_segment(path, [&](bool set, size_t count, auto at) {
    // ' ' between segments, '{' and '}' around a set.
    if (written || set) ends_in_number = false;
    written |= set;
    for (size_t i = 0; i < count; ++i) {
      const uint32_t asn = at(i);
      if (tokens++ == 0) {
        first = asn;
        first_at_start = !written;
      }
      if (where_ == Where::kAny && !any) any = has(asn);
      last = asn;
      written = ends_in_number = true;
    }
    if (set) ends_in_number = false;
  });
  switch (where_) {
    case Where::kAny: return any;
    case Where::kFirst: return first_at_start && has(first);
    case Where::kLast: return ends_in_number && has(last);
    case Where::kOnly: return tokens == 1 && first_at_start && ends_in_number && has(first);
  }
  return false;
}

// ---- PolicyChain

size_t PolicyChain::PrefixKeyHash::operator()(const net::Prefix& p) const {
  const auto& b = p.addr().bytes();
  uint64_t x = 0, y = 0;
  std::memcpy(&x, b.data(), 8);
  std::memcpy(&y, b.data() + 8, 8);
  uint64_t h = (x * 0x9E3779B97F4A7C15ull) ^ (y + 0x632BE59BD9B4E019ull + p.len());
  h ^= h >> 29;
  return static_cast<size_t>(h * 0xBF58476D1CE4E5B9ull);
}

namespace {

// An address as two big-endian 64-bit words (IPv4 in the high bits of hi).
std::pair<uint64_t, uint64_t> words_of(const net::IpAddress& a) {
  uint64_t w[2] = {0, 0};
  std::memcpy(w, a.bytes().data(), 16);
  if constexpr (std::endian::native == std::endian::little) {
    w[0] = __builtin_bswap64(w[0]);
    w[1] = __builtin_bswap64(w[1]);
  }
  return {w[0], w[1]};
}

}  // namespace

bool PolicyChain::PrefixLookup::contains(const net::Prefix& p) const {
  if (by_base.empty()) {
    const bool v6 = p.family() == net::IpFamily::V6;
    const auto [hi, lo] = words_of(p.addr());
    const unsigned plen = p.len();
    for (const Scan& r : scan)
      if (r.v6 == v6 && plen >= r.ge && plen <= r.le && (hi & r.mhi) == r.hi && (lo & r.mlo) == r.lo) return true;
    return false;
  }
  const auto& lengths = p.family() == net::IpFamily::V4 ? lengths_v4 : lengths_v6;
  for (unsigned l = 0; l <= p.len(); ++l) {
    if (!lengths[l]) continue;
    auto base = net::Prefix::make(p.addr(), l);
    auto it = by_base.find(*base);
    if (it == by_base.end()) continue;
    for (auto [ge, le] : it->second)
      if (p.len() >= ge && p.len() <= le) return true;
  }
  return false;
}

PolicyChain::~PolicyChain() = default;

bool PolicyChain::compile_conditions(const PolicyMatch& m, std::string_view key, std::unique_ptr<re2::RE2>& as_path,
                                     std::optional<AsPathTokens>& as_path_tokens,
                                     std::unique_ptr<PrefixLookup>& prefixes, std::string* why) {
  if (!m.as_path.empty()) {
    RE2::Options o;
    o.set_log_errors(false);
    o.set_max_mem(1 << 20);
    as_path = std::make_unique<RE2>(as_path_regex(m.as_path), o);
    if (!as_path->ok()) {
      if (why) *why = std::string(key) + " " + m.as_path + ": " + as_path->error();
      return false;
    }
    as_path_tokens = AsPathTokens::of(m.as_path);
  }
  if (!m.prefix.empty()) {
    prefixes = std::make_unique<PrefixLookup>();
    const bool small = m.prefix.size() <= PrefixLookup::kScanAtMost;
    for (const PrefixRange& r : m.prefix) {
      if (small) {
        const auto [hi, lo] = words_of(r.prefix.addr());
        const unsigned l = r.prefix.len();
        const uint64_t mhi = l >= 64 ? ~0ull : l == 0 ? 0 : ~0ull << (64 - l);
        const uint64_t mlo = l <= 64 ? 0 : l >= 128 ? ~0ull : ~0ull << (128 - l);
        prefixes->scan.push_back({hi, lo, r.prefix.len(), r.ge, r.le, r.prefix.family() == net::IpFamily::V6, mhi, mlo});
        continue;
      }
      prefixes->by_base[r.prefix].emplace_back(r.ge, r.le);
      (r.prefix.family() == net::IpFamily::V4 ? prefixes->lengths_v4 : prefixes->lengths_v6).set(r.prefix.len());
    }
  }
  return true;
}

std::shared_ptr<const PolicyChain> PolicyChain::compile(std::vector<PolicyDef> defs, std::string* why) {
  std::shared_ptr<PolicyChain> c(new PolicyChain());
  c->defs_ = std::move(defs);
  size_t n = 0;
  for (const auto& d : c->defs_) n += d.terms.size();
  if (n > kMaxPolicyTerms) {
    if (why) *why = "a chain of " + std::to_string(n) + " terms; at most " + std::to_string(kMaxPolicyTerms);
    return nullptr;
  }
  c->terms_.reserve(n);
  for (size_t pi = 0; pi < c->defs_.size(); ++pi) {
    for (const PolicyTerm& t : c->defs_[pi].terms) {
      Compiled k;
      k.def = &t;
      k.policy = pi;
      if (!compile_conditions(t.match, "as_path", k.as_path, k.as_path_tokens, k.prefixes, why)) return nullptr;
      k.has_unless = t.unless != PolicyMatch{};
      if (!compile_conditions(t.unless, "unless.as_path", k.unless_as_path, k.unless_as_path_tokens, k.unless_prefixes,
                              why))
        return nullptr;
      k.attr_ops = attr_ops_of(t.match, k.as_path != nullptr);
      k.unless_attr_ops = attr_ops_of(t.unless, k.unless_as_path != nullptr);
      k.asks_route = !t.match.prefix.empty() || t.match.prefix_length || t.match.family || t.match.rpki || t.match.aspa;
      if (t.match.rpki || t.match.aspa || t.unless.rpki || t.unless.aspa) c->uses_validation_ = true;
      c->terms_.push_back(std::move(k));
    }
    c->ends_.push_back(PolicyEnd{c->terms_.size(), c->defs_[pi].default_then});
  }
  return c;
}

bool operator==(const PolicyChain& a, const PolicyChain& b) {
  if (a.terms_.size() != b.terms_.size() || a.ends_.size() != b.ends_.size()) return false;
  for (size_t i = 0; i < a.ends_.size(); ++i)
    if (a.ends_[i].end != b.ends_[i].end || a.ends_[i].default_then != b.ends_[i].default_then) return false;
  for (size_t i = 0; i < a.terms_.size(); ++i) {
    const PolicyTerm& x = *a.terms_[i].def;
    const PolicyTerm& y = *b.terms_[i].def;
    if (x.match != y.match || x.unless != y.unless || x.set != y.set || x.then != y.then) return false;
  }
  return true;
}

std::string PolicyChain::name() const {
  std::string s;
  for (const auto& d : defs_) s += (s.empty() ? "" : ", ") + d.name;
  return s;
}

std::string PolicyChain::term_label(size_t i) const {
  const Compiled& c = terms_[i];
  const PolicyDef& d = defs_[c.policy];
  const size_t k = static_cast<size_t>(c.def - d.terms.data());
  return d.name + "." + (c.def->name.empty() ? "term[" + std::to_string(k) + "]" : c.def->name);
}

std::string PolicyChain::decided_label(const PolicyVerdict& v) const {
  if (v.decided_by >= 0) return term_label(static_cast<size_t>(v.decided_by));
  if (v.default_of >= 0) return defs_[static_cast<size_t>(v.default_of)].name + " (default)";
  return "end of chain";
}

std::vector<PolicyChain::AttrOp> PolicyChain::attr_ops_of(const PolicyMatch& m, bool regex) {
  std::vector<AttrOp> ops;
  if (m.empty_lists) return {AttrOp::kNever};
  if (!m.peer.empty()) ops.push_back(AttrOp::kPeer);
  if (!m.peer_as.empty()) ops.push_back(AttrOp::kPeerAs);
  if (!m.peer_role.empty()) ops.push_back(AttrOp::kPeerRole);
  if (!m.peer_type.empty()) ops.push_back(AttrOp::kPeerType);
  if (m.origin) ops.push_back(AttrOp::kOrigin);
  if (m.med) ops.push_back(AttrOp::kMed);
  if (m.local_pref) ops.push_back(AttrOp::kLocalPref);
  if (m.otc) ops.push_back(AttrOp::kOtc);
  if (!m.next_hop.empty()) ops.push_back(AttrOp::kNextHop);
  if (!m.community.empty() || !m.community_all.empty()) ops.push_back(AttrOp::kCommunities);
  if (m.as_path_length) ops.push_back(AttrOp::kPathLength);
  if (!m.first_as.empty()) ops.push_back(AttrOp::kFirstAs);
  if (!m.origin_as.empty()) ops.push_back(AttrOp::kOriginAs);
  if (m.as_set || !m.as_path_contains.empty()) ops.push_back(AttrOp::kPathScan);
  if (regex) ops.push_back(AttrOp::kRegex);
  return ops;
}

bool PolicyChain::attributes_hold(const Compiled& c, const codec::AttributeSet& a, const RouteFacts& f,
                                  std::string& path_text_out, bool& path_rendered, Part part) const {
  const PolicyMatch& m = part == Part::kMatch ? c.def->match : c.def->unless;
  // Only the conditions the term has, in the order attr_ops_of gives
  // (cheap ones first): the loop's one branch a condition is predicted
  // better than a test of every kind for every term.
  for (const AttrOp op : part == Part::kMatch ? c.attr_ops : c.unless_attr_ops) {
    switch (op) {
      case AttrOp::kPeer:
        if (std::find(m.peer.begin(), m.peer.end(), f.peer_name) == m.peer.end()) return false;
        break;
      case AttrOp::kPeerAs:
        if (!any_range(m.peer_as, f.peer_as)) return false;
        break;
      case AttrOp::kPeerRole: {
        if (!f.local_role) return false;
        // The peer's role is the counterpart of ours (RFC 9234 section 4.2).
        codec::Role theirs = *f.local_role;
        switch (*f.local_role) {
          case codec::Role::kProvider: theirs = codec::Role::kCustomer; break;
          case codec::Role::kCustomer: theirs = codec::Role::kProvider; break;
          case codec::Role::kRouteServer: theirs = codec::Role::kRsClient; break;
          case codec::Role::kRsClient: theirs = codec::Role::kRouteServer; break;
          case codec::Role::kPeer: break;
        }
        if (std::find(m.peer_role.begin(), m.peer_role.end(), theirs) == m.peer_role.end()) return false;
        break;
      }
      case AttrOp::kPeerType:
        if (std::find(m.peer_type.begin(), m.peer_type.end(), f.peer_type) == m.peer_type.end()) return false;
        break;
      case AttrOp::kOrigin:
        if (!a.origin() || !(m.origin >> static_cast<unsigned>(*a.origin()) & 1)) return false;
        break;
      case AttrOp::kMed:
        if (!a.med() || !m.med->contains(*a.med())) return false;
        break;
      case AttrOp::kLocalPref:
        if (!a.local_pref() || !m.local_pref->contains(*a.local_pref())) return false;
        break;
      case AttrOp::kOtc:
        if (*m.otc != a.otc().has_value()) return false;
        break;
      case AttrOp::kNextHop: {
        std::optional<net::IpAddress> nh = a.next_hop();
        if (!nh && a.mp_next_hop()) nh = a.mp_next_hop()->global;
        if (!nh || !in_prefixes(m.next_hop, *nh)) return false;
        break;
      }
      case AttrOp::kCommunities: {
        const CommunityViews v = communities_of(a);
        for (const auto& p : m.community_all)
          if (!carries(v, p)) return false;
        if (!m.community.empty() && std::none_of(m.community.begin(), m.community.end(),
                                                 [&](const CommunityPattern& p) { return carries(v, p); }))
          return false;
        break;
      }
      case AttrOp::kPathLength:
        if (!m.as_path_length->contains(a.as_path_length())) return false;
        break;
      case AttrOp::kFirstAs:
        if (!any_range(m.first_as, a.first_as())) return false;
        break;
      case AttrOp::kOriginAs:
        if (!any_range(m.origin_as, a.origin_as())) return false;
        break;
      case AttrOp::kPathScan: {
        bool has_set = false, found = false;
        for_each_segment(a.as_path_segments(), [&](bool set, size_t count, auto at) {
          has_set |= set;
          for (size_t i = 0; i < count && !found && !m.as_path_contains.empty(); ++i)
            found = any_range(m.as_path_contains, at(i));
        });
        if (m.as_set && has_set != *m.as_set) return false;
        if (!m.as_path_contains.empty() && !found) return false;
        break;
      }
      case AttrOp::kNever:
        return false;
      case AttrOp::kRegex: {
        if (const auto& tokens = part == Part::kMatch ? c.as_path_tokens : c.unless_as_path_tokens) {
          if (!tokens->matches(a.as_path_segments())) return false;
          break;
        }
        if (!path_rendered) {
          path_text(a.as_path_segments(), path_text_out);
          path_rendered = true;
        }
        const re2::RE2* re = part == Part::kMatch ? c.as_path.get() : c.unless_as_path.get();
        if (!RE2::PartialMatch(path_text_out, *re)) return false;
        break;
      }
    }
  }
  return true;
}

bool PolicyChain::route_holds(const Compiled& c, const RouteFacts& f, Part part) {
  const PolicyMatch& m = part == Part::kMatch ? c.def->match : c.def->unless;
  const PrefixLookup* prefixes = part == Part::kMatch ? c.prefixes.get() : c.unless_prefixes.get();
  if (m.family && (!f.prefix || f.prefix->family() != *m.family)) return false;
  if (m.prefix_length && (!f.prefix || !m.prefix_length->contains(f.prefix->len()))) return false;
  if (prefixes && (!f.prefix || !prefixes->contains(*f.prefix))) return false;
  if (m.rpki && !(m.rpki >> static_cast<unsigned>(f.rpki) & 1)) return false;
  if (m.aspa && !(m.aspa >> static_cast<unsigned>(f.aspa) & 1)) return false;
  return true;
}

void PolicyChain::prepare(const codec::AttributeSet& attrs, const RouteFacts& facts, Prepared& out) const {
  out.pass.resize(terms_.size());
  out.unless_pass.resize(terms_.size());
  bool rendered = false;
  for (size_t i = 0; i < terms_.size(); ++i) {
    out.pass[i] = terms_[i].attr_ops.empty() || attributes_hold(terms_[i], attrs, facts, out.path_text, rendered) ? 1 : 0;
    // `unless` is asked only of terms whose own attribute conditions hold.
    out.unless_pass[i] = out.pass[i] && terms_[i].has_unless &&
                                 attributes_hold(terms_[i], attrs, facts, out.path_text, rendered, Part::kUnless)
                             ? 1
                             : 0;
  }
}

PolicyVerdict PolicyChain::decide(const RouteFacts& facts, const Prepared& prepared) const {
  PolicyVerdict v;
  size_t i = 0;
  for (const PolicyEnd& end : ends_) {
    for (; i < end.end; ++i) {
      const Compiled& c = terms_[i];
      if (!prepared.pass[i] || (c.asks_route && !route_holds(c, facts))) continue;
      if (prepared.unless_pass[i] && route_holds(c, facts, Part::kUnless)) continue;  // the exception holds
      if (c.def->then == PolicyThen::kReject) {
        v.accept = false;
        v.fired_count = 0;
        v.decided_by = static_cast<int32_t>(i);
        return v;
      }
      if (c.def->set.any()) {
        if (v.fired_count == kMaxFired) {
          // More changing terms than a verdict holds: refused, rather than
          // some of the changes silently skipped (docs/policy.md).
          v.accept = false;
          v.fired_count = 0;
          v.decided_by = static_cast<int32_t>(i);
          return v;
        }
        v.fired[v.fired_count++] = static_cast<uint16_t>(i);
      }
      if (c.def->then == PolicyThen::kAccept) {
        v.accept = true;
        v.decided_by = static_cast<int32_t>(i);
        return v;
      }
    }
    if (end.default_then != PolicyThen::kNext) {
      v.accept = end.default_then == PolicyThen::kAccept;
      v.default_of = static_cast<int32_t>(&end - ends_.data());
      if (!v.accept) v.fired_count = 0;
      return v;
    }
  }
  v.accept = false;  // the chain ran out
  v.fired_count = 0;
  return v;
}

namespace {

// The changes of one term but the next hop, made to `a`: a PathAttributes,
// or ChangedValues below (the same members), in the order docs/policy.md
// gives.
template <typename A>
void change_values(const PolicyActions& s, A& a, uint32_t local_as) {
  using Kind = CommunityPattern::Kind;
  auto strips = [&](Kind kind) { return (s.strip >> static_cast<unsigned>(kind) & 1) != 0; };
  if (strips(Kind::kStandard)) a.communities.clear();
  if (strips(Kind::kLarge)) a.large_communities.clear();
  if (strips(Kind::kExtended)) a.ext_communities.clear();
  for (const auto& p : s.community_remove) {
    std::erase_if(a.communities, [&](uint32_t c) { return p.matches(c); });
    std::erase_if(a.large_communities, [&](const codec::LargeCommunity& c) { return p.matches(c); });
    std::erase_if(a.ext_communities, [&](codec::ExtCommunity c) { return p.matches(c); });
  }
  for (const auto& p : s.community_add) {
    if (carries(a, p)) continue;
    switch (p.kind) {
      case Kind::kStandard: a.communities.push_back(p.v[0] << 16 | p.v[1]); break;
      case Kind::kLarge: a.large_communities.push_back({p.v[0], p.v[1], p.v[2]}); break;
      case Kind::kExtended: a.ext_communities.push_back({ext_value(p)}); break;
    }
  }
  if (s.local_pref) a.local_pref = s.local_pref;
  switch (s.med_op) {
    case MedOp::kNone: break;
    case MedOp::kSet: a.med = s.med; break;
    case MedOp::kAdd: a.med = static_cast<uint32_t>(std::min<uint64_t>(uint64_t{a.med.value_or(0)} + s.med, UINT32_MAX)); break;
    case MedOp::kSubtract: a.med = a.med.value_or(0) > s.med ? a.med.value_or(0) - s.med : 0; break;
  }
  if (s.origin) a.origin = s.origin;
  if (s.prepend) {
    if (!a.as_path) a.as_path = codec::AsPath{};
    for (unsigned n = 0; n < s.prepend; ++n) prepend_as(*a.as_path, s.prepend_as ? s.prepend_as : local_as);
  }
}

// What apply_canonical() changes of a set, read out of its canonical
// bytes into scratch space reused from set to set.
struct ChangedValues {
  std::optional<codec::Origin> origin;
  std::optional<uint32_t> med, local_pref;
  std::vector<uint32_t> communities;
  std::vector<codec::LargeCommunity> large_communities;
  std::vector<codec::ExtCommunity> ext_communities;
  std::optional<codec::AsPath> as_path;  // read only when a term prepends
};

}  // namespace

bool PolicyChain::apply(const PolicyVerdict& v, codec::PathAttributes& a, const ApplyContext& ctx) const {
  for (size_t k = 0; k < v.fired_count; ++k) {
    const PolicyActions& s = terms_[v.fired[k]].def->set;
    const bool v4 = ctx.family.afi == static_cast<uint16_t>(codec::Afi::kIpv4);
    switch (s.next_hop_op) {
      case NextHopOp::kNone: break;
      case NextHopOp::kAddress:
        a.next_hop.reset();
        a.mp_next_hop.reset();
        a.mp_family.reset();
        if (v4 && s.next_hop->is_v4()) {
          a.next_hop = s.next_hop;
        } else {
          a.mp_family = ctx.family;
          a.mp_next_hop = codec::NextHop{*s.next_hop, std::nullopt};
        }
        break;
      case NextHopOp::kSelf:
        if (!ctx.self_v4 && !ctx.self_v6) break;  // import: the session sets it
        a.next_hop.reset();
        a.mp_next_hop.reset();
        a.mp_family.reset();
        if (v4 && ctx.self_v4) {
          a.next_hop = ctx.self_v4;
        } else if (ctx.self_v6 && (!v4 || ctx.extended_next_hop_v4)) {
          a.mp_family = ctx.family;
          a.mp_next_hop = ctx.self_v6;
        } else {
          return false;
        }
        break;
      case NextHopOp::kUnchanged:
        if (!ctx.original) break;
        a.next_hop = ctx.original->next_hop;
        a.mp_next_hop = ctx.original->mp_next_hop;
        a.mp_family = ctx.original->mp_family ? std::optional<codec::Family>(ctx.family) : std::nullopt;
        if (!a.next_hop && !a.mp_next_hop) return false;
        break;
    }
    // The next hop first, then the rest: they touch different attributes.
    change_values(s, a, ctx.local_as);
  }
  return true;
}

bool PolicyChain::apply_canonical(const PolicyVerdict& v, const codec::AttributeSet& src, const ApplyContext& ctx,
                                  std::vector<std::byte>& out) const {
  bool prepends = false;
  for (size_t k = 0; k < v.fired_count; ++k) {
    const PolicyActions& s = terms_[v.fired[k]].def->set;
    if (s.next_hop_op != NextHopOp::kNone) return false;
    prepends |= s.prepend != 0;
  }
  thread_local ChangedValues c;
  c.origin = src.origin();
  c.med = src.med();
  c.local_pref = src.local_pref();
  c.communities.clear();
  c.large_communities.clear();
  c.ext_communities.clear();
  c.as_path.reset();
  // Flags of the attributes rewritten (the Partial bit of an optional
  // transitive one is kept, as decode() and from() keep it).
  uint8_t flags_communities = 0, flags_large = 0, flags_ext = 0;
  for (const auto& a : src.attributes()) {
    const std::byte* b = a.value.data();
    switch (a.type) {
      case codec::attr_type::kAsPath:
        if (prepends) {
          auto path = codec::decode_as_path(a.value, {codec::AsWidth::k4, true});
          if (!path) return false;
          c.as_path = std::move(*path);
        }
        break;
      case codec::attr_type::kCommunities:
        flags_communities = a.flags;
        for (size_t i = 0; i + 4 <= a.value.size(); i += 4) c.communities.push_back(be32(b + i));
        break;
      case codec::attr_type::kExtendedCommunities:
        flags_ext = a.flags;
        for (size_t i = 0; i + 8 <= a.value.size(); i += 8)
          c.ext_communities.push_back({uint64_t{be32(b + i)} << 32 | be32(b + i + 4)});
        break;
      case codec::attr_type::kLargeCommunity:
        flags_large = a.flags;
        for (size_t i = 0; i + 12 <= a.value.size(); i += 12)
          c.large_communities.push_back({be32(b + i), be32(b + i + 4), be32(b + i + 8)});
        break;
      default: break;
    }
  }
  for (size_t k = 0; k < v.fired_count; ++k) change_values(terms_[v.fired[k]].def->set, c, ctx.local_as);

  // The set again in type order: the attributes changed written from the
  // values, the others copied as they are.
  out.clear();
  bytes::Writer w(out);
  auto partial = [&](size_t at, uint8_t flags) {
    if (flags & codec::attr_flag::kPartial) out[at] |= std::byte{codec::attr_flag::kPartial};
  };
  auto write = [&](uint8_t type) {
    const size_t at = out.size();
    switch (type) {
      case codec::attr_type::kOrigin:
        if (c.origin) codec::encode_origin(w, *c.origin);
        break;
      case codec::attr_type::kAsPath:
        if (c.as_path) codec::encode_as_path(w, *c.as_path, codec::AsWidth::k4);
        break;
      case codec::attr_type::kMultiExitDisc:
        if (c.med) codec::encode_med(w, *c.med);
        break;
      case codec::attr_type::kLocalPref:
        if (c.local_pref) codec::encode_local_pref(w, *c.local_pref);
        break;
      case codec::attr_type::kCommunities:
        codec::encode_communities(w, c.communities);
        if (out.size() > at) partial(at, flags_communities);
        break;
      case codec::attr_type::kExtendedCommunities:
        codec::encode_ext_communities(w, c.ext_communities);
        if (out.size() > at) partial(at, flags_ext);
        break;
      case codec::attr_type::kLargeCommunity:
        codec::encode_large_communities(w, c.large_communities);
        if (out.size() > at) partial(at, flags_large);
        break;
      default: break;
    }
  };
  static constexpr std::array<uint8_t, 7> kWritten = {
      codec::attr_type::kOrigin,         codec::attr_type::kAsPath,
      codec::attr_type::kMultiExitDisc,  codec::attr_type::kLocalPref,
      codec::attr_type::kCommunities,    codec::attr_type::kExtendedCommunities,
      codec::attr_type::kLargeCommunity};
  auto written = [&](uint8_t type) {
    if (type == codec::attr_type::kAsPath && !prepends) return false;  // copied as it is
    return std::find(kWritten.begin(), kWritten.end(), type) != kWritten.end();
  };
  size_t next = 0;  // the first of kWritten not written yet
  for (const auto& a : src.attributes()) {
    for (; next < kWritten.size() && kWritten[next] <= a.type; ++next)
      if (written(kWritten[next])) write(kWritten[next]);
    if (!written(a.type)) w.bytes(a.whole);
  }
  for (; next < kWritten.size(); ++next)
    if (written(kWritten[next])) write(kWritten[next]);
  return true;
}

}  // namespace petrel::table
