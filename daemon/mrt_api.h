// The MRT writers' status as the HTTP API shows it: GET /api/mrt (JSON)
// and the petrel_mrt_* metrics (Prometheus text). Pure formatting.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "daemon/mrt_dump.h"
#include "daemon/mrt_log.h"

namespace petrel::daemon {

inline constexpr std::string_view kMrtPath = "/api/mrt";

struct MrtStatus {
  uint32_t dump_interval = 0;  // 0: no periodic dumps
  MrtDumpStatus dumps;
  std::optional<MrtLogStatus> updates;  // none: no UPDATE log
};

// The body of GET /api/mrt (docs/http-api.md).
std::string mrt_json(const MrtStatus& s);
// The petrel_mrt_* metric families (docs/metrics.md).
std::string mrt_metrics(const MrtStatus& s);

}  // namespace petrel::daemon
