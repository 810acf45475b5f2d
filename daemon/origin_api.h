// Routes from the kernel and [[static]] routes as the HTTP API shows them:
// GET /api/kernel/origin (JSON) and their part of /metrics. Pure
// formatting.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/api.h"
#include "daemon/static_routes.h"

namespace petrel::daemon {

inline constexpr std::string_view kOriginPath = "/api/kernel/origin";

// A prefix announced because the kernel holds it.
struct OriginatedPrefix {
  std::string prefix;
  size_t entry = 0;        // its [[originate]] from_kernel entry (in file order among them)
  std::string protocols;   // the entry's, "static,kernel"
  uint32_t table = 0;
};

struct OriginStatus {
  bool watching = false;            // the kernel's routes are followed
  std::string watch_error;          // why not, when asked for and not running
  uint64_t notifications = 0, resyncs = 0;
  uint64_t refused = 0;             // routes refused by max_prefixes
  std::vector<OriginatedPrefix> originated;
  uint64_t links_down = 0;          // sessions ended by link_down_ends_session
  bool statics = false;             // [[static]] routes configured
  StaticStatus static_status;
  std::vector<std::string> announced_statics;  // [[static]] announce = true, in the table
};

std::string origin_json(const OriginStatus& s);
std::string origin_metrics(const OriginStatus& s);
api::Response origin_response(std::string_view method, const OriginStatus& s);

}  // namespace petrel::daemon
