// The kernel syncer's status as the HTTP API shows it: GET /api/kernel
// (JSON) and its part of /metrics (Prometheus text). Pure formatting.
#pragma once

#include <string>
#include <string_view>

#include "daemon/api.h"
#include "daemon/kernel.h"

namespace petrel::daemon {

inline constexpr std::string_view kKernelPath = "/api/kernel";

// The body of GET /api/kernel (docs/http-api.md).
std::string kernel_json(const KernelStatus& s);
// The petrel_kernel_* metric families (docs/metrics.md).
std::string kernel_metrics(const KernelStatus& s);
// GET /api/kernel: the syncer's status (nullopt when [kernel] is off: then
// "enabled" is false).
api::Response kernel_response(std::string_view method, const std::optional<KernelStatus>& status);

}  // namespace petrel::daemon
