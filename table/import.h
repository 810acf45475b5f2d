// Import: what one UPDATE from a peer does to the table, before the table
// sees it. A pure function from the UPDATE as decoded (codec::UpdateView,
// which carries the session's negotiated parameters), the session's
// negotiated families and the peer's policy to the table operations it
// adds to a Batch, with the counts and diagnostics the daemon turns into
// counters and log lines (docs/export.md, "Import"). The checks, in order:
//
//   1. NLRI (classic or MP_REACH/MP_UNREACH) of an AFI/SAFI the session did
//      not negotiate is ignored: never in the table (RFC 4760 sections 6
//      and 7: both sides must advertise a family to exchange its routes;
//      the routes of such a family are ignored for the session).
//   2. import "none": every announced route is refused.
//   3. From an external peer (RFC 4271 section 6.3 with RFC 7606 section
//      7.2: treat-as-withdraw): an empty AS_PATH, and, with
//      enforce_first_as, an AS_PATH whose leftmost AS is not the peer's AS
//      (on a 2-octet session, of the path merged with AS4_PATH, RFC 6793
//      section 4.2.3). Petrel has no confederations: the codec refuses
//      confederation segments from an external peer.
//   4. Loops: our AS more than allow_own_as times (RFC 4271 section
//      9.1.2), our ORIGINATOR_ID or cluster id from an internal peer (RFC
//      4456 section 8).
//   5. RFC 9234 section 5 (OTC ingress), from an external peer with a
//      role on the session (export.h, otc_ingress): a route leak is
//      refused; a route from a provider, lateral peer or route server
//      without OTC gets OTC with the peer's AS. Petrel applies it to every
//      family it carries.
//   6. The import policy (policy.h): its conditions on the attributes
//      once per UPDATE, then prefix by prefix.
// The UPDATE's routes refused by 3, 4 or 5 are treated as withdrawn, so that
// an earlier version of them leaves the table.
//
// And the per-peer prefix limit (max_prefixes): PrefixLimitWatch is told
// the peer's routes in the table after each batch (counted after import
// policy) and says when a warning threshold or the limit is crossed.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "codec/capabilities.h"
#include "codec/types.h"
#include "codec/update.h"
#include "table/policy.h"
#include "table/refused.h"
#include "table/table.h"

namespace petrel::table {

// The peer and the policy its UPDATEs go through.
struct ImportRules {
  uint32_t local_as = 0;
  uint32_t router_id = 0;   // ours, host order (RFC 4456 ORIGINATOR_ID check)
  uint32_t cluster_id = 0;  // ours, host order
  uint32_t peer_as = 0;
  bool internal = false;          // peer_as == local_as
  bool enforce_first_as = true;   // external peers only; false for route servers
  uint8_t allow_own_as = 0;
  codec::FamilySet families;      // negotiated for the session
  bool none = false;              // import "none" (or RFC 8212)
  const PolicyChain* filter = nullptr;  // the import policy; nullptr: accept all
  std::string_view peer_name;           // for the policy's peer conditions
  RefusedRoutes* refused = nullptr;     // where refused routes are kept (refused.h); nullptr: nowhere
  // For import policies that ask the RPKI or ASPA state (PolicyChain::
  // uses_validation): the table's validator, and the peer's ASPA procedure.
  const Validator* validator = nullptr;
  AspaCheck aspa = AspaCheck::kNone;
  std::optional<codec::Role> local_role;  // RFC 9234: ours on the session (external peers)
};

// Why an UPDATE's announced routes were refused as a whole.
enum class ImportRefusal : uint8_t {
  kNone,
  kEmptyAsPath,  // from an external peer (RFC 7606 section 7.2)
  kFirstAs,      // leftmost AS is not the peer's (RFC 4271 section 6.3)
  kOwnAs,        // our AS more than allow_own_as times
  kReflection,   // RFC 4456 section 8
  kRouteLeak,    // RFC 9234 section 5: OTC from a customer, RS client or lateral peer
};
std::string_view import_refusal_name(ImportRefusal r);

// What one UPDATE did: counts per family (codec::kKnownFamilyList order)
// and what the daemon reports.
struct ImportOutcome {
  std::array<uint32_t, kFamilies> announced{};  // announced prefixes received (refused ones too)
  std::array<uint32_t, kFamilies> withdrawn{};  // withdrawn (treat-as-withdraw: announced ones too)
  std::array<uint32_t, kFamilies> refused{};    // announced prefixes import refused
  ImportRefusal refusal = ImportRefusal::kNone;
  uint32_t first_as = 0;  // the AS_PATH's leftmost AS, for kFirstAs (0: none)
  // NLRI of a family the session did not negotiate was ignored: the first
  // such family, and the prefixes ignored (announced and withdrawn).
  bool unnegotiated = false;
  codec::Family unnegotiated_family{};
  uint32_t unnegotiated_prefixes = 0;
};

// Adds what `u` does to `batch` (which the caller applies to the table).
// treat_as_withdraw: the codec's RFC 7606 verdict on the UPDATE (its
// announced routes become withdrawals and none is checked).
ImportOutcome import_update(const codec::UpdateView& u, bool treat_as_withdraw, const ImportRules& rules,
                            Batch& batch);

// The AS_PATH checks of step 3 alone, on the path as the table would store
// it (4-octet, merged): kNone, kEmptyAsPath or kFirstAs.
ImportRefusal check_as_path(codec::AsSegmentRange path, const ImportRules& rules, uint32_t* first_as = nullptr);

// ---- max_prefixes

struct PrefixLimits {
  std::array<uint32_t, kFamilies> max{};  // per family; 0: no limit
  bool warn_only = false;                 // "warn": log and count, keep the session
  uint8_t warn_percent = 90;              // 1..100: a warning when crossed
  bool operator==(const PrefixLimits&) const = default;
  [[nodiscard]] bool any() const {
    for (uint32_t m : max)
      if (m) return true;
    return false;
  }
};

struct LimitEvent {
  enum class Kind : uint8_t { kWarn, kExceeded };
  Kind kind = Kind::kWarn;
  FamilyIndex family = 0;
  uint64_t routes = 0;
  uint32_t limit = 0;
};

// Watches a peer's accepted routes per family against its limits. A
// warning when routes reach warn_percent of the limit, the limit exceeded
// when routes are above it; each once per crossing (again only after the
// count has fallen back below).
class PrefixLimitWatch {
 public:
  PrefixLimitWatch() = default;
  explicit PrefixLimitWatch(const PrefixLimits& l) : limits_(l) {}
  // The peer's routes in the table now, per family; the events since the
  // last call, in family order (a family's warning before its limit).
  [[nodiscard]] std::vector<LimitEvent> check(const std::array<uint64_t, kFamilies>& routes);
  // A new session: every threshold armed again.
  void reset() {
    warned_ = {};
    exceeded_ = {};
  }
  [[nodiscard]] const PrefixLimits& limits() const { return limits_; }

 private:
  PrefixLimits limits_;
  std::array<bool, kFamilies> warned_{}, exceeded_{};
};

// RFC 4486 section 4: the data of the Cease / Maximum Number of Prefixes
// Reached NOTIFICATION: AFI (2 octets), SAFI (1), the upper bound (4).
std::vector<std::byte> max_prefixes_data(FamilyIndex f, uint32_t limit);

}  // namespace petrel::table
