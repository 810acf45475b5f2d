// The status page's looking glass (GET /lg, docs/http-api.md): one search
// of the table answered as an HTML page, no script. By prefix (exact,
// longest match, more-specifics), by community, by AS path regular
// expression; each route with its next hop, path, communities, RPKI and
// ASPA states, and for one that is not best the best-path step that
// decided against it.
#pragma once

#include <string_view>

#include "daemon/api.h"

namespace petrel::daemon {

class Server;

inline constexpr std::string_view kLookingGlassPath = "/lg";
// The prefixes one answer lists at most.
inline constexpr size_t kLookingGlassPrefixes = 100;

// `lookup` is the table's one-prefix lookup (GET /api/routes/{prefix}'s).
// More-specifics, community and AS path searches walk the whole table (one
// at a time: a second is a 503 until the first is done).
api::Response looking_glass(const Server& server, std::string_view method, const api::QueryArgs& args,
                            const api::RouteLookup& lookup);

}  // namespace petrel::daemon
