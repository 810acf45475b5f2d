// The BMP stations' status as the HTTP API shows it: GET /api/bmp (JSON)
// and the petrel_bmp_* metrics (Prometheus text). Pure formatting.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "daemon/api.h"
#include "daemon/bmp.h"

namespace petrel::daemon {

inline constexpr std::string_view kBmpPath = "/api/bmp";

// The body of GET /api/bmp (docs/http-api.md).
std::string bmp_json(const std::vector<BmpStationStatus>& stations);
// The petrel_bmp_* metric families (docs/metrics.md); nothing without stations.
std::string bmp_metrics(const std::vector<BmpStationStatus>& stations);
api::Response bmp_response(std::string_view method, const std::vector<BmpStationStatus>& stations);

}  // namespace petrel::daemon
