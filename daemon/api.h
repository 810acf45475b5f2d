// The HTTP API's bodies: JSON for /api/... and the Prometheus text format
// (0.0.4) for /metrics, built from a plain snapshot of the daemon's state.
//
// Pure formatting: no sockets, no clocks, no threads. daemon/http.cpp fills
// a Snapshot from the peers' atomics and status snapshots and hands the
// request's method and path to respond(); tests feed a Snapshot directly.
// docs/http-api.md and docs/metrics.md describe every field and metric.
//
// The per-family prefix counts are counters of UPDATE contents (NLRI and
// withdrawn prefixes as they arrived), not a view of a routing table: a
// prefix announced twice counts twice.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "codec/attribute_set.h"
#include "codec/types.h"
#include "crates/net/ip.h"
#include "daemon/history.h"
#include "daemon/memory.h"
#include "fsm/state.h"

namespace petrel::daemon::api {

// Message types 1..5 (OPEN .. ROUTE-REFRESH) by their code; index 0 unused.
inline constexpr size_t kMessageTypes = 6;

struct PeerSnapshot {
  std::string name;
  std::string address;  // "192.0.2.1", "fe80::2%eth0"
  uint32_t remote_asn = 0;
  bool passive = false;
  bool enabled = true;
  bool admin_down = false;  // an operator disabled the session (petrel peer NAME disable)
  uint16_t hold_time = 0;   // configured
  std::string description;
  codec::FamilySet families;  // configured
  fsm::State state = fsm::State::kIdle;
  std::optional<int64_t> uptime_seconds;  // set only while Established
  std::string last_error;                 // empty: none
  std::array<uint64_t, codec::kKnownFamilies> announced{};
  std::array<uint64_t, codec::kKnownFamilies> withdrawn{};
  std::array<uint64_t, codec::kKnownFamilies> routes{};  // in the table now
  std::array<uint64_t, codec::kKnownFamilies> refused{};     // by import policy, since start
  std::array<uint64_t, codec::kKnownFamilies> advertised{};  // paths the peer holds from us now
  std::array<uint64_t, codec::kKnownFamilies> best{};        // prefixes whose best route is the peer's
  uint64_t unknown_family_updates = 0;
  uint64_t paths_refused = 0;  // ADD-PATH paths over peer.max_paths_per_prefix, this session
  uint64_t refused_kept = 0, refused_not_kept = 0;  // peer.keep_refused's store (GET /api/refused)
  uint64_t duplicate_announcements = 0;  // routes announced again exactly as held
  std::array<uint64_t, kMessageTypes> messages_in{};
  std::array<uint64_t, kMessageTypes> messages_out{};
  uint64_t treat_as_withdraw = 0;  // RFC 7606 section 2
  uint64_t attribute_discard = 0;
  // UPDATEs whose routes were refused as loops (RFC 4271 section 9.1.2:
  // our AS in the AS_PATH more often than peer.allow_own_as; RFC 4456
  // section 8: our ORIGINATOR_ID or cluster id on a reflected route).
  uint64_t own_as_loops = 0;
  uint64_t reflection_loops = 0;
  // Import guards (docs/export.md): UPDATEs with NLRI of a family the
  // session did not negotiate; external peers' UPDATEs refused for an
  // empty AS_PATH or a foreign first AS.
  uint64_t unnegotiated_family = 0;
  uint64_t empty_as_path = 0;
  uint64_t first_as = 0;
  bool enforce_first_as = true;
  // RFC 9234: our role on the session ("" none) and the UPDATEs refused as
  // route leaks (OTC).
  std::string local_role;
  std::string peer_role;  // what its OPEN announced ("" none, or not established)
  uint64_t route_leaks = 0;
  // max_prefixes: the limits (0: none), the action, and what happened.
  std::array<uint32_t, codec::kKnownFamilies> max_prefixes{};
  bool max_prefixes_warn_only = false;
  uint32_t max_prefixes_restart = 0;
  uint8_t max_prefixes_warn = 90;
  uint64_t max_prefixes_warnings = 0;
  uint64_t max_prefixes_exceeded = 0;
  bool held_down = false;  // closed by max_prefixes, not started again yet
  // peer.damp_oscillations: short sessions in a row, and how long the next
  // one is still held back (ms).
  bool damp_oscillations = true;
  uint32_t short_sessions = 0;
  int64_t damped_ms = 0;
  uint64_t established_total = 0;  // transitions into Established
  uint64_t connections_refused = 0;
  // Routes not sent to the peer: their attributes do not fit in one UPDATE
  // for it (4096 octets without extended messages).
  uint64_t oversized = 0;
  // Graceful restart (docs/graceful-restart.md): what we offer, what the
  // last session negotiated, and the helper's state.
  struct Graceful {
    bool enabled = false;
    uint32_t restart_time = 0;       // offered
    uint32_t stale_routes_time = 0;  // our bound on keeping the peer's stale routes
    bool negotiated = false;
    bool notification = false;       // RFC 8538, both sides
    uint32_t peer_restart_time = 0;
    std::vector<std::pair<codec::Family, bool>> peer_families;  // with the Forwarding State bit
    // RFC 9494: our long_lived_stale_time (0: not offered), whether the
    // last session negotiated LLGR, and the peer's families with their
    // Long-lived Stale Time.
    uint32_t long_lived_stale_time = 0;
    bool long_lived_negotiated = false;
    std::vector<std::pair<codec::Family, uint32_t>> peer_long_lived_families;
    std::string_view phase = "none";  // "none", "restarting", "long-lived", "recovering"
    int64_t stale_until_ms = 0;       // system clock; 0: none
    uint64_t restarts = 0;
    uint64_t expired = 0;
    uint64_t long_lived = 0;  // restart times that ran out with routes kept long-lived stale
  } graceful;
  std::array<uint64_t, codec::kKnownFamilies> stale{};  // the peer's stale routes in the table now
};

struct Snapshot {
  std::string version;
  uint32_t asn = 0;
  std::string router_id;
  int64_t uptime_seconds = 0;
  uint64_t connections_refused = 0;  // from addresses that are not peers
  std::vector<PeerSnapshot> peers;   // in configuration order
  struct TableStats {
    std::array<uint64_t, codec::kKnownFamilies> prefixes{};
    uint64_t routes = 0;
    uint64_t attr_sets = 0;
    uint64_t attr_bytes = 0;
    uint64_t map_bytes = 0;
    uint64_t journal_bytes = 0;
    // Next-hop tracking (table/nexthop.h), 0 when it is off.
    uint64_t routes_ineligible = 0;  // excluded for an unresolved next hop
    uint64_t nexthops_resolved = 0, nexthops_unresolved = 0;
  } table;
  // Update groups (table/export_group.h).
  struct ExportStats {
    uint64_t groups = 0;
    uint64_t members = 0;
    uint64_t updates_encoded = 0;  // by the groups, once for all their members
    uint64_t stream_bytes = 0;     // encoded UPDATEs kept for members that have not read them
  } exports;
  MemoryStats memory;  // jemalloc's figures (daemon/memory.h)
  // Parts shown on the status page only when configured (the kernel
  // installer, RPKI): a title, name/value rows and the JSON with the rest.
  struct Section {
    std::string title;
    std::string json_path;
    std::vector<std::pair<std::string, std::string>> rows;
  };
  std::vector<Section> sections;
  // The last hour's samples (daemon/history.h), filled for the status
  // page's charts only.
  HistoryView history;
  // Routes refused by import policy and kept (peer.keep_refused), for the
  // status page only: the first kStatusRefused of them (GET /api/refused
  // has all), and how many are kept in all.
  struct RefusedLine {
    std::string peer, prefix, reason;
  };
  std::vector<RefusedLine> refused;
  uint64_t refused_kept = 0;
};
inline constexpr size_t kStatusRefused = 20;

// What best-path selection read of one route (GET .../explain).
struct BestPathInputs {
  uint32_t local_pref = 0;         // the degree of preference (step 1)
  uint32_t as_path_length = 0;
  uint8_t origin = 3;              // 0 IGP, 1 EGP, 2 INCOMPLETE, 3 absent
  std::optional<uint32_t> med;
  uint32_t neighbour_as = 0;
  bool external = true;            // from an eBGP peer
  std::string router_id;           // ORIGINATOR_ID when present, else the peer's BGP identifier
  uint32_t cluster_list_length = 0;
};

// One prefix's routes in the table (GET /api/routes/{prefix}).
struct RouteSnapshot {
  std::string peer;      // the peer's configured name
  std::string peer_address;
  uint32_t path_id = 0;
  bool best = false;
  bool stale = false;
  // Its next hop resolves (table/nexthop.h; else it takes no part in best
  // path), and the interior cost to it (best-path step e).
  bool eligible = true;
  uint32_t igp_cost = 0;
  std::string_view rpki;  // validation state (daemon/rpki_api.h); empty: RPKI off
  std::string_view aspa;  // ASPA verification state (daemon/rpki_api.h); empty: not verified
  // For a route that is not the best: the best-path step that decided
  // between it and the best (table::decision_name).
  std::string lost_by;
  int lost_at = -1;  // lost_by as an index into PrefixSnapshot::steps
  codec::PathAttributes attributes;
  BestPathInputs inputs;
};
struct PrefixSnapshot {
  std::string prefix;
  std::string family;
  std::vector<RouteSnapshot> routes;  // the best first
  // The best-path steps in the order they apply (table::decision_name of
  // each), for the explanation.
  std::vector<std::string> steps;
};
std::string prefix_routes_json(const PrefixSnapshot& p);
// The next hop a route of `family` ("ipv4-unicast", ...) names, as the
// kernel installer reads it: NEXT_HOP for an IPv4 prefix, else MP_REACH_NLRI's
// (IPv6, and IPv4 over an IPv6 next hop, RFC 8950), with RFC 2545's
// link-local second address when the peer sent one. Nothing when the
// route has none (a route of our own [[originate]] without next_hop).
std::optional<codec::NextHop> route_next_hop(const codec::PathAttributes& a, std::string_view family);
// Every route, what best-path selection read of it, and step by step
// which routes that step put out (each compared with the best alone).
// GET .../explain?peer=NAME: the export gate to one peer for the prefix's
// best route, as the peer's exporter walks it (table/exporter.h): the
// export policy's verdict and the term that decided, the rules of BGP
// (table/export.h), and the attributes the route would go with.
struct ExportExplanation {
  std::string peer;
  std::string policy;             // "all", "none", "none (RFC 8212)" or the policies' names
  bool established = false;       // the rules and the attributes need the session
  std::string route_peer;         // the best route's source
  uint32_t route_path_id = 0;
  std::string policy_verdict;     // "accept", "reject", or empty (no policy)
  std::string decided_by;         // the term, a policy's default, or the chain's end
  std::vector<std::string> changes;  // the terms whose changes apply, in order
  std::string rules;              // table::export_verdict_name ("send" when they allow it)
  bool family_negotiated = true;
  bool sent = false;
  std::optional<codec::PathAttributes> attributes;  // when sent
};
std::string explain_json(const PrefixSnapshot& p, const ExportExplanation* to = nullptr);

// The state as JSON writes it: "idle", ..., "openconfirm", "established".
std::string_view state_json_name(fsm::State s);
// RFC 4271 / BGP4-MIB numbering: Idle 1 .. Established 6.
int state_number(fsm::State s);

// Bodies. Each JSON body is one object followed by '\n'.
std::string status_json(const Snapshot& s);
std::string peers_json(const Snapshot& s);
std::string peer_json(const PeerSnapshot& p);
std::string error_json(std::string_view message);
std::string metrics_text(const Snapshot& s);

inline constexpr std::string_view kJsonType = "application/json";
inline constexpr std::string_view kMetricsType = "text/plain; version=0.0.4; charset=utf-8";
inline constexpr std::string_view kHtmlType = "text/html; charset=utf-8";

// GET /: the status page for people, one HTML page with no scripts: the
// router, each peer's session and routes with a chart of its last hour
// (prefixes, UPDATEs per second in and out), the table's size and memory
// over the last hour (s.history).
std::string status_page_html(const Snapshot& s);

// Text for an HTML element or attribute value.
std::string html_escape(std::string_view in);
// The looking glass's form (GET /lg), with `by` selected and `q` filled in.
std::string looking_glass_form(std::string_view by, std::string_view q);

struct Response {
  unsigned status = 200;
  std::string_view content_type = kJsonType;
  std::string body;
  std::string_view allow;  // set for 405: the Allow header
};
// Every endpoint is read-only: anything but GET and HEAD is a 405 (r
// filled, true).
bool refuse_method(std::string_view method, Response& r);
// A read-only endpoint's answer: the body body() makes, or the 405.
template <typename F>
Response respond_get(std::string_view method, F&& body) {
  Response r;
  if (!refuse_method(method, r)) r.body = body();
  return r;
}

// GET /api/routes/{prefix} ("192.0.2.0/24", "2001:db8::/32"; unicast):
// `lookup` fills the snapshot of the prefix from the table and returns
// false when the table has no route to it (404). A prefix that does not
// parse is a 400.
using RouteLookup = std::function<bool(const net::Prefix&, PrefixSnapshot&)>;
inline constexpr std::string_view kRoutesPath = "/api/routes/";
// GET /api/routes/{prefix}/explain is answered here too; `explain_to`,
// when set, adds the export gate to a peer (nothing and an error text: a
// 404 with it).
using ExportExplain = std::function<std::optional<ExportExplanation>(const net::Prefix&, std::string* error)>;
Response respond_routes(std::string_view method, std::string_view path, const RouteLookup& lookup,
                        const ExportExplain& explain_to = nullptr);

// A prefix as a query gives it: "192.0.2.0/24", or, for a longest match,
// an address alone ("192.0.2.1" is 192.0.2.1/32, host bits cleared).
std::optional<net::Prefix> parse_query_prefix(std::string_view text, bool longest);
// The routes of p (longest: else of the longest prefix covering it) into
// out; false when the table has none.
bool find_prefix(const net::Prefix& p, bool longest, const RouteLookup& lookup, PrefixSnapshot& out);

// GET /api/routes?prefix=P&match=exact|longest&peer=NAME&best=true|false
// &limit=N&cursor=C (docs/http-api.md). Without prefix, every unicast
// prefix in the table, in prefix order, `limit` (default 100, at most
// 1000) per page; the answer's "next_cursor" asks for the next page.
// `list` returns up to `limit` prefixes after `after` (none: from the
// first) in prefix order, only those with a route from `peer` when it is
// not empty.
using QueryArgs = std::vector<std::pair<std::string, std::string>>;
using RouteList = std::function<std::vector<net::Prefix>(const std::optional<net::Prefix>& after, size_t limit,
                                                         std::string_view peer)>;
inline constexpr std::string_view kRouteQueryPath = "/api/routes";
inline constexpr size_t kDefaultPageSize = 100;
inline constexpr size_t kMaxPageSize = 1000;
Response respond_route_query(std::string_view method, const QueryArgs& args, const RouteLookup& lookup,
                             const RouteList& list);

// GET /api/refused?peer=NAME&prefix=P&limit=N (docs/http-api.md): the
// routes import refused and kept (peer.keep_refused), each with why.
// `peers` gives, per peer (only NAME when asked), its store.
struct RefusedEntry {
  net::Prefix prefix;
  uint32_t path_id = 0;
  std::string reason;
  std::optional<codec::PathAttributes> attributes;
};
struct RefusedPeer {
  std::string name;
  uint64_t kept = 0, not_kept = 0, keep_at_most = 0;
  // Up to `limit` of its entries, of `prefix` alone when given.
  std::function<std::vector<RefusedEntry>(const std::optional<net::Prefix>& prefix, size_t limit)> find;
};
inline constexpr std::string_view kRefusedPath = "/api/refused";
Response respond_refused(std::string_view method, const QueryArgs& args, const std::vector<RefusedPeer>& peers);

// GET /api/history?peer=NAME (docs/http-api.md): the last hour's samples
// of the table and of every peer (only NAME's when given: a 404 when no
// peer has that name). `read` copies them (History::view).
using HistoryRead = std::function<HistoryView(std::string_view peer)>;
inline constexpr std::string_view kHistoryPath = "/api/history";
Response respond_history(std::string_view method, const QueryArgs& args, const HistoryRead& read);

// The listing's pages without a walk of the table per page. The first page
// (no cursor) collects the listed prefixes once (`collect`: every unicast
// prefix, of `peer` when not empty, in any order: one walk, each shard
// under its lock only to copy its prefixes) and sorts them outside the
// locks; the pages after it are cut from that sorted copy by binary search
// on the cursor, O(log n + page), and only the page's prefixes are then
// looked up under their shards' locks. The cursor stays the last prefix of
// the page, so it means the same with any copy: a copy is kept per peer
// filter, replaced by each first page (so a listing's pages come from a
// copy no older than its first page: no prefix present throughout is
// skipped or repeated; one added since the first page may be missed), and
// dropped after ttl_ms unused; at most max_listings are kept (the least
// recently used goes), each 18 bytes a prefix. A cursor page with no copy
// (expired, or another daemon) collects one. Thread-safe.
class PrefixListings {
 public:
  using Collect = std::function<std::vector<net::Prefix>(std::string_view peer)>;
  explicit PrefixListings(Collect collect, int64_t ttl_ms = 60'000, size_t max_listings = 4);

  // Up to `limit` prefixes after `after` (none: from the first), in prefix
  // order; now_ms is a monotonic time.
  std::vector<net::Prefix> page(const std::optional<net::Prefix>& after, size_t limit, std::string_view peer,
                                int64_t now_ms);
  // Times `collect` ran (tests), listings kept.
  [[nodiscard]] uint64_t collections() const;
  [[nodiscard]] size_t kept() const;

 private:
  struct Listing {
    std::string peer;
    std::shared_ptr<const std::vector<net::Prefix>> prefixes;  // sorted, distinct
    int64_t used_ms = 0;
  };
  Collect collect_;
  int64_t ttl_ms_;
  size_t max_listings_;
  mutable std::mutex mu_;
  std::mutex collect_mu_;  // one collection at a time: a later first page always stores a newer copy
  std::vector<Listing> listings_;
  uint64_t collections_ = 0;
};

// Routes a request. method as sent ("GET"); path without the query string,
// already percent-decoded. HEAD is answered like GET (the server leaves
// out the body).
Response respond(std::string_view method, std::string_view path, const Snapshot& s);

}  // namespace petrel::daemon::api
