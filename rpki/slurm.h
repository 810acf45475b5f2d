// SLURM, Simplified Local Internet Number Resource Management with the
// RPKI (RFC 8416): an operator's local exceptions to the caches' data.
//
// parse_slurm() reads one SLURM file (JSON, RFC 8416 section 3) into
// checked values, or says which member is wrong and what was expected
// (a syntax error: its line and column). Bounded against hostile input:
// kMaxBytes of text, kMaxDepth of nesting, kMaxEntries entries.
// find_overlap() is the check of RFC 8416 section 4.2 across several
// files. SlurmFilter applies them to a cache's VRPs (section 4.1): every
// VRP that a prefix filter matches is removed, then every prefix
// assertion is added.
//
// BGPsec filters and assertions are read, checked and counted, but change
// nothing: Petrel does no BGPsec path validation and publishes no router
// keys.
//
// ASPA (draft-ietf-sidrops-aspa-slurm): a file of "slurmVersion" 2 has
// "aspaFilters" ({customerAsn, comment}) and "aspaAssertions"
// ({customerAsn, providerAsns, comment}) beside RFC 8416's lists; version
// 1 files may not have them. apply_aspas() removes every ASPA whose
// customer a filter names, then adds the assertions: an assertion is not
// a filter (the draft), so for a customer the cache still has an ASPA for,
// the providers are the union of both.
//
// Pure: text in, values out; the daemon reads the files.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "crates/net/ip.h"
#include "crates/result/result.h"
#include "rpki/pdu.h"
#include "rpki/vrp.h"

namespace petrel::rpki {

// RFC 8416 section 3.3.1: at least one of prefix and asn.
struct PrefixFilter {
  std::optional<net::Prefix> prefix;
  std::optional<uint32_t> asn;
  std::string comment;
  friend bool operator==(const PrefixFilter&, const PrefixFilter&) = default;
};

// Section 3.3.2: at least one of asn and SKI.
struct BgpsecFilter {
  std::optional<uint32_t> asn;
  std::vector<uint8_t> ski;  // empty: none given
  std::string comment;
  friend bool operator==(const BgpsecFilter&, const BgpsecFilter&) = default;
};

// Section 3.4.1: the VRP (prefix, max_len, asn) added; without
// maxPrefixLength the maximum length is the prefix's own.
struct PrefixAssertion {
  net::Prefix prefix;
  uint8_t max_len = 0;
  uint32_t asn = 0;
  std::string comment;
  friend bool operator==(const PrefixAssertion&, const PrefixAssertion&) = default;
  [[nodiscard]] Vrp vrp() const { return Vrp{prefix, max_len, asn}; }
};

// Section 3.4.2.
struct BgpsecAssertion {
  uint32_t asn = 0;
  std::vector<uint8_t> ski;
  std::vector<uint8_t> router_public_key;
  std::string comment;
  friend bool operator==(const BgpsecAssertion&, const BgpsecAssertion&) = default;
};

// draft-ietf-sidrops-aspa-slurm section 3.1: every ASPA of this customer
// is removed.
struct AspaFilter {
  uint32_t customer = 0;
  std::string comment;
  friend bool operator==(const AspaFilter&, const AspaFilter&) = default;
};

// Section 3.2: providers ascending, distinct, without the customer, at
// least one (the ASPA profile's SIZE(1..MAX)); the customer is not AS 0
// (the profile's CAS is 1..4294967295).
struct AspaAssertion {
  uint32_t customer = 0;
  std::vector<uint32_t> providers;
  std::string comment;
  friend bool operator==(const AspaAssertion&, const AspaAssertion&) = default;
};

struct Slurm {
  uint32_t version = 1;  // "slurmVersion": 1 (RFC 8416) or 2 (with ASPA)
  std::vector<PrefixFilter> prefix_filters;
  std::vector<BgpsecFilter> bgpsec_filters;
  std::vector<AspaFilter> aspa_filters;
  std::vector<PrefixAssertion> prefix_assertions;
  std::vector<BgpsecAssertion> bgpsec_assertions;
  std::vector<AspaAssertion> aspa_assertions;
  friend bool operator==(const Slurm&, const Slurm&) = default;
  [[nodiscard]] size_t entries() const {
    return prefix_filters.size() + bgpsec_filters.size() + aspa_filters.size() + prefix_assertions.size() +
           bgpsec_assertions.size() + aspa_assertions.size();
  }
};

struct SlurmError {
  // A syntax error's place (1-based), else 0.
  size_t line = 0, column = 0;
  // The member at fault as a JSON pointer ("/locallyAddedAssertions/
  // prefixAssertions/2/maxPrefixLength"); empty for the file as a whole.
  std::string member;
  std::string message;
  // "3:14: syntax error: ..." or "/slurmVersion: expected 1, got 2".
  [[nodiscard]] std::string to_string() const;
};

inline constexpr size_t kMaxSlurmBytes = size_t{8} << 20;  // 8 MiB
inline constexpr size_t kMaxSlurmDepth = 16;                // RFC 8416 needs 4
inline constexpr size_t kMaxSlurmEntries = 100'000;         // the six lists and every provider together

Result<Slurm, SlurmError> parse_slurm(std::string_view text);

// RFC 8416 section 4.2: with several files, no prefix of a prefix filter
// or assertion of one file may equal, cover or be covered by one of
// another file's, and no router SKI of one file's BGPsec filters or
// assertions may be another file's; otherwise none of the files is used.
struct SlurmOverlap {
  size_t file_a = 0, file_b = 0;  // indexes into the span, a < b
  std::string what;               // "prefix 192.0.2.0/24 and 192.0.2.128/25"
};
std::optional<SlurmOverlap> find_overlap(std::span<const Slurm> files);

// The filters and assertions of one or more files (already checked by
// find_overlap), ready to apply to a cache's VRPs.
class SlurmFilter {
 public:
  SlurmFilter() = default;
  explicit SlurmFilter(std::span<const Slurm> files);

  struct Applied {
    std::vector<Vrp> vrps;  // sorted, distinct
    size_t removed = 0;     // VRPs of the input that a filter removed
    size_t added = 0;       // assertions' VRPs that were not in what remained
  };
  // RFC 8416 section 4.1 on `vrps` (any order; repeats are kept once).
  // One walk over the VRPs and the prefix filters in prefix order: per VRP,
  // a binary search among the filters without a prefix and one among each
  // prefix's filters that covers it.
  [[nodiscard]] Applied apply(std::span<const Vrp> vrps) const;

  struct AppliedAspas {
    std::vector<Aspa> aspas;  // sorted by customer, one each
    size_t removed = 0;       // ASPAs of the input that a filter removed
    size_t added = 0;         // customers an assertion added or gave more providers
  };
  // draft-ietf-sidrops-aspa-slurm on `aspas` (one per customer, providers
  // sorted, as rpki::Client::aspas() gives them; any order).
  [[nodiscard]] AppliedAspas apply_aspas(std::span<const Aspa> aspas) const;

  // Whether a prefix filter matches `v` (section 3.3.1): the filter's
  // prefix, when it has one, covers or equals v's; its AS, when it has
  // one, is v's. For one VRP: a search per prefix length that filters use.
  [[nodiscard]] bool removes(const Vrp& v) const;

  [[nodiscard]] bool empty() const { return asns_.empty() && prefixes_.empty() && assertions_.empty(); }
  [[nodiscard]] bool aspa_empty() const { return aspa_filters_.empty() && aspa_assertions_.empty(); }

 private:
  // A filter with a prefix; by prefix, then AS, one without an AS first.
  struct Keyed {
    net::Prefix prefix;
    std::optional<uint32_t> asn;
    friend bool operator==(const Keyed&, const Keyed&) = default;
    friend bool operator<(const Keyed& a, const Keyed& b) {
      if (a.prefix != b.prefix) return a.prefix < b.prefix;
      return a.asn < b.asn;
    }
  };
  // Whether one prefix's filters, [first, last) from its first, match
  // `asn`: its first filter has no AS if one of them has none (it matches
  // every AS); else one has the AS or none matches.
  static bool prefix_matches(std::vector<Keyed>::const_iterator first, std::vector<Keyed>::const_iterator last,
                             uint32_t asn);

  std::vector<uint32_t> asns_;   // filters with an AS and no prefix, sorted
  // Filters with a prefix, sorted (Keyed's order) and distinct: one
  // prefix's are found by a binary search for it (removes) or the walk
  // (apply), and one for the AS, not by a scan of them all (a file may hold
  // 100,000 of one prefix).
  std::vector<Keyed> prefixes_;
  std::vector<uint8_t> lens_[2];  // their distinct prefix lengths (v4, v6)
  std::vector<Vrp> assertions_;  // sorted, distinct
  std::vector<uint32_t> aspa_filters_;  // customers, sorted, distinct
  std::vector<Aspa> aspa_assertions_;   // sorted by customer, one each (files' providers merged)
};

// Base64url without padding (RFC 4648 section 5, as RFC 8416 asks for
// SKIs and keys); nothing for any other character or a stray length.
std::optional<std::vector<uint8_t>> decode_base64url(std::string_view text);

}  // namespace petrel::rpki
