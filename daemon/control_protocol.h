// The control channel's protocol (docs/operations.md, "The control
// channel"): one JSON object per line in each direction. A request line
// becomes a ControlRequest or an error text; an answer is a JSON object
// on one line. Pure: no sockets, no clock, so tests and the fuzzer take
// it without the daemon.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "daemon/config.h"
#include "crates/net/ip.h"

namespace petrel::daemon::control {

// The longest request line taken; a longer one ends the connection.
inline constexpr size_t kMaxLineBytes = 16 * 1024;
// Communities per injected route, each kind.
inline constexpr size_t kMaxCommunities = 256;

struct Reload {};

enum class PeerAction : uint8_t { kDisable, kEnable, kReset, kSoftIn, kSoftOut, kShutdown };

struct PeerCommand {
  std::string peer;
  PeerAction action = PeerAction::kReset;
  std::string message;  // kShutdown, kDisable: RFC 9003 text (at most 255 bytes)
};

// An injected route: an [[originate]] entry made at run time.
struct Announce {
  OriginateConfig route;
};

struct Withdraw {
  net::Prefix prefix;
};

struct ListRoutes {};

// An MRT table dump (docs/operations.md, "MRT table dumps") to `file`, an
// absolute path; empty: the daemon's default (daemon/mrt_dump.h).
struct Dump {
  std::string file;
};
// The longest file name a dump request takes.
inline constexpr size_t kMaxDumpPathBytes = 4096;

using ControlRequest = std::variant<Reload, PeerCommand, Announce, Withdraw, ListRoutes, Dump>;

struct ParseResult {
  std::optional<ControlRequest> request;
  std::string error;  // when there is no request
};

// One request line (without its newline). Every byte is untrusted.
ParseResult parse_request(std::string_view line);

// Answers, each one JSON object without a newline.
std::string answer_ok(std::string_view text = {});  // text: what was done, for the operator
std::string answer_error(std::string_view error, const std::vector<std::string>& details = {});
// The injected routes, as "routes": [{"prefix": ..., ...}].
std::string answer_routes(const std::vector<OriginateConfig>& routes);
// A dump written: where, and what it holds.
struct DumpSummary {
  std::string file;
  uint64_t prefixes = 0;
  uint64_t routes = 0;
  uint64_t peers = 0;
  uint64_t bytes = 0;
  uint64_t routes_left_out = 0;  // too large for an MRT record, or malformed
};
std::string answer_dump(const DumpSummary& d);
// The announce request line that injects `route` (parse_request gives it
// back): the lines of control.injected_routes_file.
std::string announce_request(const OriginateConfig& route);

const char* peer_action_name(PeerAction a);

// The `petrel reload | peer | route | dump` command line (after the socket
// option) as one request line, or a usage error. Only the words are
// checked here; the daemon checks the values (parse_request).
struct ArgsResult {
  std::string line;   // the request, without its newline
  std::string error;  // a usage error, when line is empty
};
ArgsResult request_from_args(const std::vector<std::string_view>& args);

}  // namespace petrel::daemon::control
