// Per-peer import and export filters: the day-one policy an operator
// needs before a policy language exists (docs/filters.md). A filter is an
// ordered list of rules; the first rule whose conditions all hold decides
// (accept or reject, and on import it may set LOCAL_PREF and MED); when no
// rule matches, the filter's default decides.
//
// Conditions: the prefix is in one of a list of prefix ranges ("P",
// "P le N", "P ge N le M", as in most routers' prefix lists), and the
// route carries at least one of a list of communities (RFC 1997) or large
// communities (RFC 8092). An absent condition always holds.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "codec/attribute_set.h"
#include "codec/communities.h"
#include "crates/net/ip.h"

namespace petrel::table {

// A prefix range: prefixes inside `prefix` whose length is in ge..le.
struct PrefixRange {
  net::Prefix prefix;
  uint8_t ge = 0;  // with le, inclusive bounds on the length
  uint8_t le = 0;
  [[nodiscard]] bool contains(const net::Prefix& p) const;
  // "P", "P le N", "P ge N", "P ge N le M": ge and le default to the
  // prefix's length (exact match) and to the family's maximum once ge is
  // given. Nothing (with a reason) when the text is not one of these.
  static std::optional<PrefixRange> parse(std::string_view text, std::string* why = nullptr);
  [[nodiscard]] std::string to_string() const;  // the canonical text parse() reads back
  friend bool operator==(const PrefixRange&, const PrefixRange&) = default;
};

enum class FilterAction : uint8_t { kAccept, kReject };

struct FilterRule {
  std::vector<PrefixRange> prefixes;                     // empty: any prefix
  std::vector<uint32_t> communities;                     // empty: no condition
  std::vector<codec::LargeCommunity> large_communities;  // empty: no condition
  FilterAction action = FilterAction::kAccept;
  std::optional<uint32_t> set_local_pref;  // import only
  std::optional<uint32_t> set_med;         // import only
  friend bool operator==(const FilterRule&, const FilterRule&) = default;
};

struct Filter {
  std::string name;
  std::vector<FilterRule> rules;
  FilterAction default_action = FilterAction::kReject;
  friend bool operator==(const Filter&, const Filter&) = default;
};

struct FilterVerdict {
  bool accept = false;
  std::optional<uint32_t> local_pref;  // to set (accepted routes only)
  std::optional<uint32_t> med;
  [[nodiscard]] bool changes_attributes() const { return local_pref || med; }
};

// Whether `rule`'s community conditions hold for `attrs` (prefix aside).
bool communities_match(const FilterRule& rule, const codec::AttributeSet& attrs);
FilterVerdict evaluate(const Filter& f, const net::Prefix& p, const codec::AttributeSet& attrs);

// `attrs` with the verdict's LOCAL_PREF and MED set.
codec::AttributeSet apply_verdict(const codec::AttributeSet& attrs, const FilterVerdict& v);

// Communities by number or name: "65000:100", "no-export", "no-advertise",
// "no-export-subconfed", "blackhole", "graceful-shutdown"; and large
// communities "A:B:C". Nothing when the text is neither.
std::optional<uint32_t> parse_community(std::string_view text);
std::optional<codec::LargeCommunity> parse_large_community(std::string_view text);
std::string community_text(uint32_t c);
// A decimal number 0..4294967295 and nothing else.
std::optional<uint32_t> parse_u32(std::string_view s);

}  // namespace petrel::table
