// RPKI as the HTTP API shows it: GET /api/rpki (JSON), its part of
// /metrics (Prometheus text), and the name of a route's validation state
// in GET /api/routes/{prefix} ("rpki"). Formatting only; the counts of
// routes per state come from one walk of the table, kept for a few seconds
// so that frequent scrapes of a full table stay cheap.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/api.h"
#include "daemon/rpki.h"
#include "daemon/server.h"
#include "table/table.h"

namespace petrel::daemon {

inline constexpr std::string_view kRpkiPath = "/api/rpki";

// Routes in the table per validation state (table::Validation order).
using ValidationCounts = std::array<uint64_t, 4>;
struct PeerValidationCounts {
  std::string peer;  // the peer's configured name
  ValidationCounts routes{};
};
// Routes per ASPA state (table::AspaState order).
using AspaCounts = std::array<uint64_t, 4>;
struct TableValidationCounts {
  ValidationCounts routes{};
  AspaCounts aspa{};
  std::vector<PeerValidationCounts> peers;  // by name
};

struct RpkiView {
  bool enabled = false;  // caches configured
  bool reject_invalid = false;
  bool reject_aspa_invalid = false;
  std::shared_ptr<const VrpSnapshot> vrps;  // never null when enabled
  std::vector<RpkiCacheStatus> caches;
  SlurmStatus slurm;                         // [rpki] slurm
  ValidationCounts routes{};                 // the whole table's
  AspaCounts aspa_routes{};                  // the whole table's, by ASPA state
  std::vector<PeerValidationCounts> peers;  // each peer's, by name
};

// "valid", "invalid", "not-found"; "unchecked" when RPKI is off.
std::string_view validation_name(table::Validation v);
// "unknown", "valid", "invalid"; "unchecked" for routes not verified.
std::string_view aspa_name(table::AspaState s);
// One walk of the table under each shard's lock: the whole table's routes
// and each peer's by state.
TableValidationCounts count_validation(const table::Table& t);

std::string rpki_json(const RpkiView& v);
// petrel_rpki_vrps{family}, petrel_rpki_slurm_entries{kind},
// petrel_rpki_slurm_vrps{change}, petrel_rpki_cache_state{cache,state},
// petrel_routes_by_validation{state} (docs/metrics.md); empty when off.
std::string rpki_metrics(const RpkiView& v);
api::Response rpki_response(std::string_view method, const RpkiView& v);
// The server's state now (route counts at most kCountsMaxAgeSeconds old).
inline constexpr double kCountsMaxAgeSeconds = 5;
RpkiView rpki_view(const Server& s);

}  // namespace petrel::daemon
