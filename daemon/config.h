// The daemon's configuration: one TOML file parsed into a validated,
// normalised Config value with every default filled in.
//
// The reference for every key is docs/configuration.md; each key there has
// a golden test under tests/golden/config/. Parsing reports every error it
// finds (not just the first), each naming the file, line, column and key
// and saying what was expected, so `petrel check` can list them all.
//
// Only config.cpp includes toml++ (header-only, slow to compile); the rest
// of the daemon sees plain values. Configuration is read once at start and
// on reload, never on a hot path, so errors here are ordinary strings.
//
// RFC 4271 section 4.2 (hold time 0 or >= 3), RFC 6793 (AS_TRANS is not a
// configurable AS), RFC 7911 (ADD-PATH), RFC 8950 (IPv4 NLRI with IPv6
// next hops), RFC 9687 (send hold timer), RFC 9003 (shutdown message).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "codec/capabilities.h"
#include "codec/types.h"
#include "crates/net/ip.h"
#include "crates/result/result.h"
#include "daemon/log.h"
#include "rpki/slurm.h"
#include "table/export.h"
#include "table/filter.h"
#include "table/policy.h"

namespace petrel::daemon {

// Graceful restart (docs/graceful-restart.md): [router] holds the
// defaults, a [[peer]] may set its own.
struct GracefulConfig {
  // Offer the capability (RFC 4724, with RFC 8538's N bit) and keep a
  // restarting peer's routes as its helper.
  bool enabled = true;
  uint16_t restart_time = 120;       // seconds we advertise, 0..4095 (12 bits)
  uint32_t stale_routes_time = 360;  // seconds we keep a peer's stale routes at most
  // RFC 9494: the Long-lived Stale Time Petrel advertises per family in
  // the LLGR capability and the longest it keeps a peer's long-lived
  // stale routes (the smaller of this and the peer's). 0: LLGR is off (not
  // offered; a peer's routes go when its restart time is over).
  uint32_t long_lived_stale_time = 0;

  friend bool operator==(const GracefulConfig&, const GracefulConfig&) = default;
};

// [router]
struct RouterConfig {
  uint32_t asn = 0;
  net::IpAddress router_id;                // always IPv4, never 0.0.0.0
  std::vector<net::IpAddress> listen;      // empty: no listener (active sessions only)
  uint16_t port = 179;
  bool rfc8212 = true;
  // RFC 4456 cluster id (IPv4 form) when this router reflects routes;
  // nothing: the router id.
  std::optional<net::IpAddress> cluster_id;
  // Threads that share a peer's withdrawal when its session goes down
  // (table::TableOptions::sweep_threads); 0: min(2, the hardware's).
  uint32_t withdraw_threads = 0;
  // Prefixes expected in IPv4 and IPv6 unicast: the table's maps are made
  // that big at start (table::TableOptions::expected_ipv4_prefixes); 0:
  // they grow as routes come.
  uint32_t expected_ipv4_prefixes = 0;
  uint32_t expected_ipv6_prefixes = 0;
  GracefulConfig graceful;  // every peer's default
  // Petrel's own restart (RFC 4724 section 4.1, the restarting speaker):
  // after a start that found routes of ours in the kernel, kernel changes
  // wait for every graceful restart peer's End-of-RIB, at most this long.
  uint32_t selection_deferral_time = 360;
  // The user petrel run becomes once its ports are bound (keeping
  // CAP_NET_ADMIN and CAP_NET_BIND_SERVICE); "root": stay root; "": none
  // (refused when started as root with every capability).
  std::string user;

  friend bool operator==(const RouterConfig&, const RouterConfig&) = default;
};

// An address and port to listen on: "127.0.0.1:8179", "[::1]:8179".
struct Endpoint {
  net::IpAddress address;
  uint16_t port = 0;

  [[nodiscard]] std::string to_string() const;  // the form it is written in
  friend bool operator==(const Endpoint&, const Endpoint&) = default;
};
// Parses "ADDRESS:PORT" ("[IPv6]:PORT"), port 1..65535, as http.listen
// and `petrel show --http` take it: nothing, or what is wrong.
std::optional<std::string> parse_endpoint(std::string_view text, Endpoint& out);

// [http]
struct HttpConfig {
  std::optional<Endpoint> listen;  // nothing: the HTTP server is disabled
  // Bounds so that a few slow clients cannot take every connection.
  uint32_t max_connections = 64;              // at once, event streams included
  uint32_t max_connections_per_address = 8;   // at once from one client address
  uint32_t idle_timeout = 10;                 // seconds a connection may stay silent

  friend bool operator==(const HttpConfig&, const HttpConfig&) = default;
};

// [control]: the operators' Unix socket (docs/operations.md).
inline constexpr std::string_view kDefaultControlSocket = "/run/petrel/petrel.sock";
struct ControlConfig {
  std::string socket{kDefaultControlSocket};  // empty: no control socket
  std::string group;                          // empty: the daemon's own group
  uint32_t max_connections = 16;              // at once
  uint32_t max_injected_routes = 100'000;     // petrel route announce: routes held at once
  std::string injected_routes_file;           // where injected routes are kept across restarts; "": nowhere

  friend bool operator==(const ControlConfig&, const ControlConfig&) = default;
};

// [log]
struct LogConfig {
  LogFormat format = LogFormat::kText;
  LogLevel level = LogLevel::kInfo;

  friend bool operator==(const LogConfig&, const LogConfig&) = default;
};

// [kernel]: used by the kernel installer (a later feature).
struct KernelConfig {
  bool enabled = false;
  uint32_t table = 254;  // RT_TABLE_MAIN
  uint32_t metric = 32;
  bool multipath = false;
  bool nexthop_objects = true;  // routes refer to kernel nexthop objects, when supported
  // [[static]] routes' metric: below `metric`, so the kernel prefers a
  // static route to a BGP one of the same prefix (docs/kernel.md).
  uint32_t static_metric = 31;
  // A best route with BLACKHOLE (RFC 7999, 65535:666) is installed as a
  // blackhole route (RTN_BLACKHOLE) instead of through its next hop.
  bool blackhole_community = false;
  uint32_t resolve_table = 254;  // the table next hops resolve through (docs/kernel.md)
  bool resolve_via_default = false;  // the default route resolves next hops too
  uint64_t max_resolve_routes = 1'000'000;  // foreign routes of resolve_table mirrored at most

  friend bool operator==(const KernelConfig&, const KernelConfig&) = default;
};

// How the RTR PDUs travel to a cache (RFC 6810 section 7, RFC 8210
// section 9): plain TCP, TLS over it, or an SSH channel's "rpki-rtr"
// subsystem (daemon/rtr_transport.h).
enum class RtrTransport : uint8_t { kTcp, kTls, kSsh };
std::string_view transport_name(RtrTransport t);

// [[rpki.cache]]: one RTR cache (daemon/rpki.h).
struct RpkiCacheConfig {
  net::IpAddress address;
  std::string interface;  // only for a link-local address
  // IANA "rpki-rtr" (323) over TCP, "rpki-rtr-tls" (324) over TLS, 22
  // over SSH (RFC 6810 section 7), unless set.
  uint16_t port = 323;
  uint8_t preference = 100;  // lower is preferred
  RtrTransport transport = RtrTransport::kTcp;
  // TLS: the CA certificates (PEM) the cache's certificate must chain to
  // (empty: the system's trust store), as used (a relative path taken
  // from the configuration's folder); the name it must carry (empty: the
  // address, as an IP address).
  std::string tls_ca_file;
  std::string tls_server_name;
  // SSH: the user; the known_hosts file that pins the cache's host key;
  // a private key file or a password (read from ssh_password_file), one
  // of the two. Paths as used.
  std::string ssh_user;
  std::string ssh_known_hosts;
  std::string ssh_key_file;
  std::string ssh_password_file;
  std::string ssh_password;

  friend bool operator==(const RpkiCacheConfig&, const RpkiCacheConfig&) = default;
};

// [rpki] slurm: one SLURM file (RFC 8416), read and checked with the
// configuration, so that a reload that finds a bad one changes nothing.
struct SlurmFileConfig {
  std::string path;  // as used: a relative one taken from the configuration's folder
  rpki::Slurm data;

  friend bool operator==(const SlurmFileConfig&, const SlurmFileConfig&) = default;
};

struct RpkiConfig {
  std::vector<RpkiCacheConfig> caches;
  // Local exceptions applied to every cache's VRPs before they are
  // published (daemon/rpki.h); checked for overlaps (RFC 8416 section 4.2).
  std::vector<SlurmFileConfig> slurm;
  // RPKI-invalid routes are kept (revalidation may bring them back) but
  // take no part in best path and export (RFC 6811 section 5 leaves it to
  // policy; off by default).
  bool reject_invalid = false;
  // The same for ASPA-invalid routes (draft-ietf-sidrops-aspa-verification;
  // only routes from peers with a local_role are verified).
  bool reject_aspa_invalid = false;
  // Bounds on what one cache can make us hold and wait for (rpki/client.h).
  uint32_t max_vrps = 4'000'000;  // VRPs, router keys and ASPAs
  uint32_t answer_timeout = 60;   // seconds from a query to its End of Data
  uint32_t notify_gap = 5;        // seconds from an End of Data to a query a Serial Notify asks for
  // The RTR version the first query of each connection is sent in (2:
  // draft-ietf-sidrops-8210bis, with ASPA; 1: RFC 8210; 0: RFC 6810); a
  // cache that speaks only a lower one makes the client fall back.
  uint8_t max_version = 2;

  friend bool operator==(const RpkiConfig&, const RpkiConfig&) = default;
};

// ADD-PATH per family (RFC 7911): which directions we advertise.
enum class AddPathMode : uint8_t { kReceive = 1, kSend = 2, kBoth = 3 };

// A peer's TCP-AO master key tuple (RFC 5925): `tcp_ao = { ... }`.
struct TcpAoConfig {
  uint8_t key_id = 0;        // SendID: the KeyID of the segments we send
  uint8_t rnext_key_id = 0;  // RecvID: the KeyID the peer sends with (default key_id)
  std::string algorithm = "hmac-sha1";  // or "cmac-aes128" (RFC 5926)
  std::string password;       // the secret, inline or read from password_file
  std::string password_file;  // where it was read from; empty when inline

  friend bool operator==(const TcpAoConfig&, const TcpAoConfig&) = default;
};

// [[peer]]. A peer is identified by (address, interface); the interface is
// set exactly when the address is link-local (fe80::/10).
struct PeerConfig {
  std::string name;
  net::IpAddress address;
  std::string interface;
  uint32_t asn = 0;
  uint16_t port = 179;
  bool passive = false;
  uint16_t hold_time = 90;          // 0 or 3..65535
  uint16_t keepalive = 30;          // 0 exactly when hold_time is 0
  uint32_t connect_retry = 30;      // seconds, initial back-off
  codec::FamilySet families;        // never empty
  codec::FamilySet add_path_receive;
  codec::FamilySet add_path_send;
  codec::FamilySet extended_next_hop;  // RFC 8950; IPv4 families only
  std::optional<net::IpAddress> local_address;
  std::string description;
  uint32_t delay_open = 0;          // seconds, 0 = off
  // RFC 9687. Nothing: the RFC's default, max(480 s, 2 x negotiated hold
  // time), which depends on the session; 0: disabled.
  std::optional<uint32_t> send_hold_time;
  std::string shutdown_message;     // RFC 9003; at most 255 octets of UTF-8
  bool enabled = true;
  // "all", "none", or the names of [[policy]]s and [[filter]]s chained in
  // order; nothing when not configured (RFC 8212: then an external peer
  // gets nothing and gives nothing).
  std::optional<std::vector<std::string>> import_filter;
  std::optional<std::vector<std::string>> export_filter;
  bool route_reflector_client = false;  // RFC 4456
  // RFC 7947: an external peer that Petrel serves as a route server (no AS
  // of ours prepended, next hop and MED unchanged, per-client best path).
  bool route_server_client = false;
  // What export does to next hops beyond RFC 4271's default
  // (table/export.h): "self" for internal peers, "unchanged" for external.
  table::NextHopMode next_hop = table::NextHopMode::kDefault;
  // RFC 9234: our role on the session (external peers): the Role
  // capability offered, and OTC on import and export (table/export.h).
  // strict_role: a peer that sends no Role capability is refused (Role
  // Mismatch).
  std::optional<codec::Role> local_role;
  bool strict_role = false;
  uint8_t allow_own_as = 0;  // routes with our AS more often than this are refused
  uint8_t add_path_send_max = 0;  // ADD-PATH send: paths per prefix, 0 = all
  // External peers: the AS_PATH must start with the peer's AS (RFC 4271
  // section 6.3); false for route servers, which do not prepend theirs.
  // Defaults to false for a route_server_client.
  bool enforce_first_as = true;
  // Routes accepted from the peer per family (codec::kKnownFamilyList
  // order; 0: no limit), what happens past it, seconds before the session
  // is started again after a Cease (0: only when an operator acts), and
  // the percentage of the limit that logs a warning (docs/configuration.md).
  std::array<uint32_t, codec::kKnownFamilies> max_prefixes{};
  bool max_prefixes_warn_only = false;  // max_prefixes_action = "warn"
  uint32_t max_prefixes_restart = 0;
  uint8_t max_prefixes_warn = 90;
  // Transport security (docs/configuration.md). TCP MD5 (RFC 2385): the
  // key, inline or read from password_file (kept as its path, relative
  // ones resolved from the configuration file's folder).
  std::string password;
  std::string password_file;
  std::optional<TcpAoConfig> tcp_ao;  // RFC 5925; never with a TCP MD5 password
  bool ttl_security = false;          // GTSM, RFC 5082
  uint8_t multihop = 1;               // hops to the peer; default_multihop() unless set
  // ADD-PATH receive: paths per prefix the table keeps from the peer
  // (table::PeerInfo::max_paths_per_prefix); further ones are refused.
  uint32_t max_paths_per_prefix = 64;
  // Routes import refused that are kept, with why, for the API
  // (table/refused.h); 0: none kept.
  uint32_t keep_refused = 1000;
  GracefulConfig graceful;  // [router]'s unless the peer sets its own
  // The session ends at once when the interface the peer is reached
  // through goes down or loses carrier (docs/kernel.md); by default for
  // single-hop external peers.
  bool link_down_ends_session = false;
  // A session that keeps going down soon after it came up is held down
  // for a while before the next one (RFC 4271 section 8.1.1,
  // DampPeerOscillations; docs/configuration.md, peer.damp_oscillations).
  bool damp_oscillations = true;

  // "198.18.0.2", "fe80::2%veth0": how logs and the API name the peer.
  [[nodiscard]] std::string address_text() const;
  [[nodiscard]] bool is_ebgp(uint32_t local_asn) const { return asn != local_asn; }

  friend bool operator==(const PeerConfig&, const PeerConfig&) = default;
};

// Hops to a peer when `multihop` is not set: 1 for an external peer (our
// packets go out with TTL 1, as other BGP daemons do), 255 for an internal
// one.
uint8_t default_multihop(const PeerConfig& peer, uint32_t local_asn);

// The send hold time in seconds for a session with this negotiated hold
// time: the configured one, or RFC 9687's default. 0 means disabled.
uint32_t effective_send_hold_time(const PeerConfig& peer, uint16_t negotiated_hold_time);

// [[originate]]: a route this router announces itself.
struct OriginateConfig {
  net::Prefix prefix;
  std::optional<net::IpAddress> next_hop;  // nothing: our address on each session
  codec::Origin origin = codec::Origin::kIgp;
  std::vector<uint32_t> communities;
  std::vector<codec::LargeCommunity> large_communities;
  std::optional<uint32_t> med;
  std::optional<uint32_t> local_pref;  // sent to internal peers; also its degree of preference

  friend bool operator==(const OriginateConfig&, const OriginateConfig&) = default;
};

// [[originate]] with from_kernel = true: the kernel's routes of these
// protocols in this table whose prefixes are in `prefixes` are announced
// while the kernel holds them (daemon/kernel_origin.h).
struct KernelOriginConfig {
  std::vector<uint8_t> protocols;            // RTPROT_* numbers; never 186 (RTPROT_BGP, ours)
  uint32_t table = 254;                      // RT_TABLE_MAIN
  std::vector<table::PrefixRange> prefixes;  // "@name" references written out
  uint32_t max_prefixes = 10000;             // prefixes this entry originates at most
  // The attributes each prefix gets (prefix itself unused).
  OriginateConfig attributes;

  friend bool operator==(const KernelOriginConfig&, const KernelOriginConfig&) = default;
};

// [[static]]: a route Petrel installs in the kernel itself (with the
// metric kernel.static_metric), and announces when `announce`.
struct StaticRouteConfig {
  enum class Kind : uint8_t { kNextHop, kBlackhole, kUnreachable };
  net::Prefix prefix;
  Kind kind = Kind::kNextHop;
  std::optional<net::IpAddress> next_hop;  // kNextHop
  std::string interface;                   // kNextHop, optional
  bool announce = false;

  friend bool operator==(const StaticRouteConfig&, const StaticRouteConfig&) = default;
};

// [[bmp]]: one BMP monitoring station (RFC 7854, RFC 9069; docs/bmp.md).
// Petrel keeps no pre-policy Adj-RIB-In (a route the import policy refuses
// never enters the table), so it offers post-policy and Loc-RIB only.
struct BmpStationConfig {
  net::IpAddress address;
  uint16_t port = 0;
  bool pre_policy = false;  // monitoring "pre-policy": each peer's UPDATEs as received
  bool post_policy = true;  // monitoring "post-policy": each peer's routes, L flag
  bool loc_rib = true;      // monitoring "loc-rib": the best routes (RFC 9069)
  uint32_t statistics_interval = 60;  // seconds between Statistics Reports; 0: none
  uint32_t max_queue = 64;            // MiB queued for the station before the connection is dropped

  [[nodiscard]] std::string name() const;  // "ADDRESS:PORT" ("[IPv6]:PORT")
  friend bool operator==(const BmpStationConfig&, const BmpStationConfig&) = default;
};

// [mrt]: periodic MRT table dumps and the UPDATE log (RFC 6396, RFC 8050;
// docs/operations.md, "MRT"). Both off by default.
inline constexpr std::string_view kDefaultMrtDumpFile = "/var/lib/petrel/rib.%Y%m%d.%H%M.mrt";
struct MrtConfig {
  uint32_t dump_interval = 0;                  // seconds between table dumps; 0: none
  std::string dump_file{kDefaultMrtDumpFile};  // strftime pattern, UTC
  bool dump_gzip = false;
  uint32_t dump_keep = 0;         // the newest dumps kept; 0: all
  std::string updates_file;       // strftime pattern, UTC; "": no UPDATE log
  uint32_t updates_interval = 900;  // seconds of UPDATEs per file
  bool updates_gzip = false;
  uint32_t updates_keep = 0;        // the newest UPDATE log files kept; 0: all
  uint32_t updates_queue = 100'000;  // records waiting for the writer; more are dropped

  friend bool operator==(const MrtConfig&, const MrtConfig&) = default;
};

struct Config {
  RouterConfig router;
  HttpConfig http;
  ControlConfig control;
  LogConfig log;
  KernelConfig kernel;
  RpkiConfig rpki;
  std::vector<PeerConfig> peers;  // in file order
  std::vector<table::Filter> filters;  // [[filter]], in file order
  // [[policy]], in file order, with the sets they name ([[prefix_set]],
  // [[as_set]], [[community_set]]) written out in place.
  std::vector<table::PolicyDef> policies;
  std::vector<OriginateConfig> originate;
  std::vector<KernelOriginConfig> kernel_origins;  // [[originate]] with from_kernel, in file order
  std::vector<StaticRouteConfig> statics;          // [[static]], in file order
  std::vector<BmpStationConfig> bmp;  // [[bmp]], in file order
  MrtConfig mrt;

  // The filter a peer's import or export names: nullptr for "all" (and
  // for "none", which `none` reports); the filter otherwise.
  [[nodiscard]] const table::Filter* find_filter(std::string_view name) const;
  // The [[policy]] or [[filter]] (as a policy) of that name.
  [[nodiscard]] std::optional<table::PolicyDef> find_policy(std::string_view name) const;

  friend bool operator==(const Config&, const Config&) = default;
};

// One problem found in a configuration file. line and column start at 1
// (0 when there is no position, as for a file that cannot be read). key is
// the dotted path of the key, "peer[0].hold_time" (peers count from 0).
struct ConfigError {
  std::string file;
  uint32_t line = 0;
  uint32_t column = 0;
  std::string key;
  std::string message;

  // "FILE:LINE:COL: KEY: MESSAGE", parts without a value left out.
  [[nodiscard]] std::string to_string() const;
  friend bool operator==(const ConfigError&, const ConfigError&) = default;
};

using ConfigErrors = std::vector<ConfigError>;  // sorted by position; never empty

// Parses TOML text. source_name stands for the file in error messages.
Result<Config, ConfigErrors> parse_config(std::string_view text, std::string_view source_name);
// Reads and parses the file at path; errors name it as given.
Result<Config, ConfigErrors> load_config(const std::string& path);

// Secret files (password_file) that group or others may read: one line
// each, "peer[0].password_file: FILE is readable by ...". `petrel check`
// prints them and `petrel run` logs them.
std::vector<std::string> secret_file_warnings(const Config& config);
// External peers without import or export, which RFC 8212 (router.rfc8212)
// leaves without routes that way: one line each, "peer[0] "x" (...): ...
// add import = "all" ...". `petrel check` prints them.
std::vector<std::string> rfc8212_warnings(const Config& config);

// The effective configuration as canonical TOML: every key, in the order
// of docs/configuration.md, defaults written out, a key that is not set
// as a comment line ("# local_address not set: the kernel chooses"),
// addresses in canonical form. Parsing the dump gives the same Config
// back, but for secrets: an inline TCP MD5 or TCP-AO password is written
// as kDumpSecretPlaceholder (a password_file as its path). Used by golden
// tests and `petrel check --dump`.
std::string dump(const Config& config);
// What the dump writes in place of a secret: itself a valid password (1
// to 80 octets), so that the dump loads and dumps the same again.
inline constexpr std::string_view kDumpSecretPlaceholder = "(not shown)";

// A peer's import or export policy as it applies (config_dump.cpp): the
// chain of policies it names, compiled, so that it outlives a reloaded
// Config, or none (nullptr) for "all"; `none` for "none" and, under RFC 8212
// (router.rfc8212), for an external peer with no policy configured.
struct Policy {
  std::shared_ptr<const table::PolicyChain> filter;
  bool none = false;
  bool rfc8212 = false;  // none because no policy is configured (not compared)
  friend bool operator==(const Policy& a, const Policy& b) {
    return a.none == b.none && (a.filter == b.filter || (a.filter && b.filter && *a.filter == *b.filter));
  }
};
Policy import_policy(const Config& config, const PeerConfig& peer);
Policy export_policy(const Config& config, const PeerConfig& peer);

// What a configuration reload changes (docs/operations.md, "Reload").
// Peers are matched by address and interface. Everything about peers
// applies live: a peer added starts, a peer removed is closed (Cease /
// Peer De-configured), a peer whose session keys changed gets a new
// session with them (Cease / Other Configuration Change), and policies
// (import, export, allow_own_as, the [[filter]]s they name,
// router.rfc8212), description, shutdown_message and max_prefixes apply
// to the running session. [[originate]] and the sections [kernel], [rpki],
// [http] and [log] (Server::apply_sections) apply live too. Other keys
// that cannot change live are listed: they take effect at the next
// restart.
struct PeerReload {
  size_t running = 0;  // index in the running configuration's peers
  size_t next = 0;     // index in the new one
  bool import_changed = false;  // import policy or allow_own_as
  bool export_changed = false;
  bool updated = false;         // description, shutdown_message, max_prefixes...: no new session
  std::vector<std::string> reset_keys;  // "peer[1].hold_time", ...: a new session
};
struct ReloadPlan {
  std::vector<PeerReload> peers;  // matched peers with something changed
  std::vector<size_t> added;      // indexes in the new configuration's peers
  std::vector<size_t> removed;    // indexes in the running one
  std::vector<std::string> restart_keys;  // [router] and other sections' keys that wait for a restart
  std::vector<OriginateConfig> withdraw;  // [[originate]] entries gone or changed (old form)
  std::vector<OriginateConfig> announce;  // new or changed (new form)
  std::vector<std::string> sections;      // "kernel", "rpki", "http", "log": changed, applied live
  [[nodiscard]] bool empty() const {
    return peers.empty() && added.empty() && removed.empty() && restart_keys.empty() && withdraw.empty() &&
           announce.empty() && sections.empty();
  }
};
ReloadPlan plan_reload(const Config& running, const Config& next);
// The keys of b a running peer a takes without a new session, assigned
// one by one (the others, its identity among them, are not written):
// description, shutdown_message, max_prefixes and its companions, the
// policies' names, allow_own_as.
void take_live_keys(PeerConfig& a, const PeerConfig& b);
// `running` with what plan_reload applies live taken from `next`: the
// configuration in effect after the reload.
Config applied_config(const Config& running, const Config& next);

// Names used by the parser and the dump.
std::string_view log_format_name(LogFormat f);
std::string_view log_level_name(LogLevel l);
std::string_view add_path_mode_name(AddPathMode m);

}  // namespace petrel::daemon
