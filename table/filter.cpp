// Import and export filters (filter.h).
#include "table/filter.h"

#include <charconv>

#include "codec/attributes.h"

namespace petrel::table {

namespace {

// Splits on runs of spaces.
std::vector<std::string_view> words(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && s[i] == ' ') ++i;
    size_t j = i;
    while (j < s.size() && s[j] != ' ') ++j;
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

bool has_large_community(const codec::AttributeSet& attrs, const codec::LargeCommunity& want) {
  for (const auto& a : attrs.attributes()) {
    if (a.type != codec::attr_type::kLargeCommunity) continue;
    auto list = codec::decode_large_communities(a.value);
    if (!list) return false;
    for (const auto& c : *list)
      if (c == want) return true;
  }
  return false;
}

}  // namespace

std::optional<uint32_t> parse_u32(std::string_view s) {
  uint32_t v = 0;
  if (s.empty()) return std::nullopt;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

bool PrefixRange::contains(const net::Prefix& p) const {
  return prefix.contains(p) && p.len() >= ge && p.len() <= le;
}

std::optional<PrefixRange> PrefixRange::parse(std::string_view text, std::string* why) {
  auto fail = [&](std::string reason) -> std::optional<PrefixRange> {
    if (why) *why = std::move(reason);
    return std::nullopt;
  };
  auto w = words(text);
  if (w.empty()) return fail("an empty prefix range");
  auto p = net::Prefix::parse(w[0], net::Prefix::HostBits::kReject);
  if (!p) return fail("\"" + std::string(w[0]) + "\" is not a prefix (ADDRESS/LENGTH with no host bits set)");
  const unsigned max = net::IpAddress::max_len(p->family());
  PrefixRange r{*p, p->len(), p->len()};
  bool have_ge = false, have_le = false;
  for (size_t i = 1; i < w.size(); i += 2) {
    if (i + 1 >= w.size()) return fail("\"" + std::string(w[i]) + "\" needs a length after it");
    auto n = parse_u32(w[i + 1]);
    if (!n || *n > max) return fail("\"" + std::string(w[i + 1]) + "\" is not a prefix length 0.." + std::to_string(max));
    if (w[i] == "ge" && !have_ge && !have_le) {
      have_ge = true;
      r.ge = static_cast<uint8_t>(*n);
      r.le = static_cast<uint8_t>(max);
    } else if (w[i] == "le" && !have_le) {
      have_le = true;
      r.le = static_cast<uint8_t>(*n);
    } else {
      return fail("expected \"PREFIX\", \"PREFIX le N\", \"PREFIX ge N\" or \"PREFIX ge N le M\"");
    }
  }
  if (r.ge < p->len()) return fail("ge " + std::to_string(r.ge) + " is shorter than the prefix itself");
  if (r.le < r.ge) return fail("le " + std::to_string(r.le) + " is less than " + std::to_string(r.ge));
  return r;
}

std::string PrefixRange::to_string() const {
  std::string s = prefix.to_string();
  const unsigned max = net::IpAddress::max_len(prefix.family());
  if (ge == prefix.len() && le == prefix.len()) return s;
  if (ge != prefix.len()) s += " ge " + std::to_string(ge);
  if (ge == prefix.len() || le != max) s += " le " + std::to_string(le);
  return s;
}

bool communities_match(const FilterRule& rule, const codec::AttributeSet& attrs) {
  if (rule.communities.empty() && rule.large_communities.empty()) return true;
  for (uint32_t c : rule.communities)
    if (attrs.has_community(c)) return true;
  for (const auto& c : rule.large_communities)
    if (has_large_community(attrs, c)) return true;
  return false;
}

FilterVerdict evaluate(const Filter& f, const net::Prefix& p, const codec::AttributeSet& attrs) {
  for (const FilterRule& r : f.rules) {
    if (!r.prefixes.empty()) {
      bool in = false;
      for (const auto& range : r.prefixes)
        if (range.contains(p)) {
          in = true;
          break;
        }
      if (!in) continue;
    }
    if (!communities_match(r, attrs)) continue;
    FilterVerdict v;
    v.accept = r.action == FilterAction::kAccept;
    if (v.accept) {
      v.local_pref = r.set_local_pref;
      v.med = r.set_med;
    }
    return v;
  }
  return FilterVerdict{f.default_action == FilterAction::kAccept, std::nullopt, std::nullopt};
}

codec::AttributeSet apply_verdict(const codec::AttributeSet& attrs, const FilterVerdict& v) {
  if (!v.changes_attributes()) return attrs;
  codec::PathAttributes pa = attrs.decode();
  if (v.local_pref) pa.local_pref = v.local_pref;
  if (v.med) pa.med = v.med;
  return codec::AttributeSet::from(pa);
}

std::optional<uint32_t> parse_community(std::string_view text) {
  if (text == "no-export") return codec::community::kNoExport;
  if (text == "no-advertise") return codec::community::kNoAdvertise;
  if (text == "no-export-subconfed") return codec::community::kNoExportSubconfed;
  if (text == "blackhole") return codec::community::kBlackhole;
  if (text == "graceful-shutdown") return codec::community::kGracefulShutdown;
  size_t colon = text.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  auto hi = parse_u32(text.substr(0, colon));
  auto lo = parse_u32(text.substr(colon + 1));
  if (!hi || !lo || *hi > 0xFFFF || *lo > 0xFFFF) return std::nullopt;
  return *hi << 16 | *lo;
}

std::optional<codec::LargeCommunity> parse_large_community(std::string_view text) {
  size_t a = text.find(':');
  if (a == std::string_view::npos) return std::nullopt;
  size_t b = text.find(':', a + 1);
  if (b == std::string_view::npos) return std::nullopt;
  auto g = parse_u32(text.substr(0, a));
  auto l1 = parse_u32(text.substr(a + 1, b - a - 1));
  auto l2 = parse_u32(text.substr(b + 1));
  if (!g || !l1 || !l2) return std::nullopt;
  return codec::LargeCommunity{*g, *l1, *l2};
}

std::string community_text(uint32_t c) {
  switch (c) {
    case codec::community::kNoExport: return "no-export";
    case codec::community::kNoAdvertise: return "no-advertise";
    case codec::community::kNoExportSubconfed: return "no-export-subconfed";
    case codec::community::kBlackhole: return "blackhole";
    case codec::community::kGracefulShutdown: return "graceful-shutdown";
    default: return std::to_string(c >> 16) + ":" + std::to_string(c & 0xFFFF);
  }
}

}  // namespace petrel::table
