// The kernel syncer's status as the HTTP API shows it: GET /api/kernel
// (JSON) and its part of /metrics (Prometheus text). Pure formatting.
#pragma once

#include <string>
#include <string_view>

#include "daemon/api.h"
#include "daemon/kernel.h"
#include "daemon/nexthops.h"

namespace petrel::daemon {

inline constexpr std::string_view kKernelPath = "/api/kernel";
inline constexpr std::string_view kNexthopsPath = "/api/nexthops";

// The body of GET /api/kernel (docs/http-api.md).
std::string kernel_json(const KernelStatus& s);
// The petrel_kernel_* metric families (docs/metrics.md).
std::string kernel_metrics(const KernelStatus& s);
// GET /api/kernel: the syncer's status (nullopt when [kernel] is off: then
// "enabled" is false).
api::Response kernel_response(std::string_view method, const std::optional<KernelStatus>& status);
// The body of GET /api/nexthops (docs/http-api.md): at most kMaxNexthopsShown
// next hops, then "truncated": true.
inline constexpr size_t kMaxNexthopsShown = 10000;
std::string nexthops_json(const NexthopsStatus& s);
api::Response nexthops_response(std::string_view method, const NexthopsStatus& status);

}  // namespace petrel::daemon
