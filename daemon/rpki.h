// RPKI in the daemon: the connections to the RTR caches, the VRP data in
// force published as an immutable snapshot, and the table's validator.
//
// Thread: the caches are served on the main libev loop (docs/DESIGN.md,
// "Threads"). RTR traffic is a few PDUs per refresh interval; what costs
// time is building the VRP table and revalidating the routing table after
// an update, both rare (minutes apart) and bounded, and a thread of its own
// would only add a hand-off for them.
//
// Caches are tried by preference (lower first, then file order). Each has
// its own rpki::Client (RFC 8210), so its own data, serial and expire
// timer. The daemon keeps a connection to the most preferred cache that has
// not failed; one that fails (connect error, closed, fatal Error Report) is
// dialled again after an exponential back-off (daemon/backoff.h) while the
// next one is used meanwhile; when a more preferred cache is in sync again
// the less preferred connections close. The data published comes from the
// most preferred cache in sync, else from the most preferred one that
// still holds unexpired data (kept while no cache answers), else none
// (then every route is not found again, RFC 8210 section 6). A cache that
// accepts the connection but gives no complete answer within 15 s counts
// as failed. Each cache's client is bounded by [rpki] max_vrps,
// answer_timeout and notify_gap (rpki/client.h); when a cache lets go of
// much memory the allocator is asked to return it at once
// (daemon/memory.h).
//
// Readers on any thread take the snapshot without a lock: a thread keeps
// its own reference and compares one atomic version number per call,
// loading the shared pointer again only when a newer snapshot was
// published.
#pragma once

#include <ev.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "daemon/backoff.h"
#include "daemon/config.h"
#include "rpki/aspa_table.h"
#include "rpki/client.h"
#include "rpki/slurm.h"
#include "rpki/vrp.h"
#include "rpki/vrp_table.h"
#include "table/table.h"

namespace petrel::daemon {

// The VRPs in force; immutable once published.
struct VrpSnapshot {
  uint64_t version = 0;         // unique, increasing with each publication
  rpki::VrpTable table;
  std::vector<rpki::Vrp> vrps;  // sorted, distinct
  size_t v4 = 0, v6 = 0;        // VRPs per family
  // The same cache's ASPAs (RTR version 2), for AS_PATH verification
  // (docs/rpki.md, "ASPA"): the table, and the list (sorted by customer)
  // that the next publication is compared with.
  rpki::AspaTable aspa;
  std::vector<rpki::Aspa> aspa_list;
  size_t aspas = 0;
  // SLURM ([rpki] slurm, RFC 8416) applied to the cache's VRPs: those its
  // filters removed, and its assertions' VRPs that were not there.
  size_t slurm_removed = 0, slurm_added = 0;
  // The same for the cache's ASPAs (draft-ietf-sidrops-aspa-slurm): ASPAs
  // removed, customers an assertion added or gave more providers.
  size_t slurm_aspas_removed = 0, slurm_aspas_added = 0;
  std::string source;           // the cache they came from; empty: none
  std::optional<uint32_t> serial;
  int64_t published_unix_ms = 0;
};

// What one publication changed.
struct VrpDelta {
  uint64_t version = 0;
  std::vector<rpki::Vrp> announced, withdrawn;  // sorted
  // Customer ASes whose ASPA came, went or changed (sorted, distinct):
  // the routes whose AS_PATH holds one are verified again.
  std::vector<uint32_t> aspa_customers;
  // In recent_changes() only: the lists were too long to keep
  // (VrpStore::kKeptDeltaVrps) and are left empty.
  bool truncated = false;
};

// The customers whose ASPA differs between two lists sorted by customer
// (came, went, or other providers), sorted.
std::vector<uint32_t> changed_customers(std::span<const rpki::Aspa> before, std::span<const rpki::Aspa> after);

// What SLURM changed in the data of one publication.
struct SlurmChanges {
  size_t vrps_removed = 0, vrps_added = 0, aspas_removed = 0, aspas_added = 0;
};

class VrpStore {
 public:
  VrpStore();

  // The current snapshot (never null; empty before any data).
  [[nodiscard]] std::shared_ptr<const VrpSnapshot> current() const;
  // This thread's reference to the current snapshot: one atomic load when
  // nothing was published since the thread's last call. Valid until the
  // thread's next call.
  [[nodiscard]] const VrpSnapshot& local() const;

  // Builds and publishes a snapshot of `vrps` (sorted, distinct); returns
  // what changed against the previous one.
  // `slurm`: what SLURM changed in them (for the API).
  VrpDelta publish(std::vector<rpki::Vrp> vrps, std::string source, std::optional<uint32_t> serial,
                   int64_t now_unix_ms, std::span<const rpki::Aspa> aspas = {}, SlurmChanges slurm = {});
  // The changes of the last kKeptDeltas publications (oldest first), with
  // at most kKeptDeltaVrps VRPs in all: a larger change (the first full
  // set, a cache reset, a flush) is kept truncated, its lists empty, so
  // that the store never holds copies of whole sets besides the snapshot.
  static constexpr size_t kKeptDeltas = 16;
  static constexpr size_t kKeptDeltaVrps = 65536;
  [[nodiscard]] std::vector<VrpDelta> recent_changes() const;

 private:
  std::atomic<std::shared_ptr<const VrpSnapshot>> current_;
  std::atomic<uint64_t> version_{0};
  mutable std::mutex deltas_mu_;
  std::deque<VrpDelta> deltas_;
  size_t delta_vrps_ = 0;  // VRPs in deltas_
};

// RFC 6811 for the table: the origin AS is the last AS of the AS_PATH's
// final AS_SEQUENCE; a path ending in an AS_SET has none and validates
// as NONE (invalid where a VRP covers it); an empty AS_PATH is our own AS.
//
// The table always has it: switched off (no [[rpki.cache]] configured) it
// answers kUnchecked for every route, as a table without a validator
// would; a reload switches it on or off, then revalidates every route.
class RpkiValidator : public table::Validator {
 public:
  RpkiValidator(const VrpStore& store, uint32_t local_as, bool enabled = true)
      : store_(store), local_as_(local_as), enabled_(enabled) {}
  void set_enabled(bool on) { enabled_.store(on, std::memory_order_relaxed); }
  [[nodiscard]] bool enabled() const { return enabled_.load(std::memory_order_relaxed); }
  [[nodiscard]] table::Validation validate(const net::Prefix& p, const table::Attrs& a) const override;
  // ASPA verification of the AS_PATH (rpki/aspa_table.h) by the peer's
  // procedure; unchecked while switched off.
  [[nodiscard]] table::AspaState verify_path(const table::Attrs& a, table::AspaCheck check) const override;
  [[nodiscard]] table::Validation validate_set(const net::Prefix& p, const codec::AttributeSet& a) const override;
  [[nodiscard]] table::AspaState verify_set(const codec::AttributeSet& a, table::AspaCheck check) const override;
  // One VrpTable::validate_batch call for the routes (their lookups overlap).
  void validate_batch(std::span<const Query> routes, std::span<table::Validation> out) const override;

 private:
  // Of table::Attrs or codec::AttributeSet (the same accessors).
  template <typename A>
  [[nodiscard]] std::optional<uint32_t> origin_of(const A& a) const;
  template <typename A>
  [[nodiscard]] table::Validation validate_any(const net::Prefix& p, const A& a) const;
  template <typename A>
  [[nodiscard]] table::AspaState verify_any(const A& a, table::AspaCheck check) const;

  const VrpStore& store_;
  uint32_t local_as_;
  std::atomic<bool> enabled_;
};

// Whether a route to `p` lies under a VRP prefix that `delta` changed: the
// routes Table::revalidate must look at again. Past kEveryRoute changed
// prefixes (the first full set, a cache reset) every route is: asking the
// VRP table once costs less than a search per changed prefix length.
class DeltaCover {
 public:
  static constexpr size_t kEveryRoute = 4096;
  explicit DeltaCover(const VrpDelta& delta);
  [[nodiscard]] bool covers(const net::Prefix& p) const;
  [[nodiscard]] bool empty() const { return prefixes_.empty(); }

 private:
  bool every_ = false;
  std::vector<net::Prefix> prefixes_;  // sorted, distinct
  std::vector<uint8_t> lens_[2];       // distinct lengths per family (v4, v6)
};

// One cache as the API shows it.
struct RpkiCacheStatus {
  std::string name;  // "192.0.2.1:323"
  uint8_t preference = 0;
  std::string state;       // "down", "connecting", "handshake" (TLS), else the client's state
  bool in_sync = false;    // connected and holding current data
  bool failed = false;     // in back-off
  bool active = false;     // the published data comes from it
  uint8_t version = 0;
  std::optional<uint16_t> session_id;
  std::optional<uint32_t> serial;
  size_t vrps = 0;
  size_t aspas = 0;  // RTR version 2
  uint32_t refresh = 0, retry = 0, expire = 0;
  int64_t last_update_unix_ms = 0;  // 0: never
  uint64_t updates = 0, connects = 0, failures = 0;
  std::string transport;   // "tcp" or "tls"
  std::string last_error;  // why it last failed (a refused TLS handshake, ...); empty: never
};

// The SLURM files in force ([rpki] slurm), as the API shows them.
struct SlurmStatus {
  std::vector<std::string> files;
  size_t prefix_filters = 0, bgpsec_filters = 0, prefix_assertions = 0, bgpsec_assertions = 0;
  size_t aspa_filters = 0, aspa_assertions = 0;
};

class RpkiService {
 public:
  // `changed` runs on the loop's thread after each publication that changed
  // VRPs or ASPAs.
  RpkiService(const RpkiConfig& config, struct ev_loop* loop, VrpStore& store,
              std::function<void(const VrpDelta&)> changed);
  ~RpkiService();
  RpkiService(const RpkiService&) = delete;
  RpkiService& operator=(const RpkiService&) = delete;

  void start();
  void stop();
  // The caches of `config` from now on (a reload, main loop). A cache
  // kept (every key alike but the preference) keeps its connection,
  // session and data, and takes its new preference; a new one is dialled
  // when its preference says; a removed one is closed, and when the data
  // in force came from it, the next cache's data is published, or none
  // (every route not found). A change of max_vrps, answer_timeout,
  // notify_gap or max_version starts every cache again (the data in
  // force stays until one has new data).
  void reconfigure(const RpkiConfig& config);
  // A copy for the HTTP thread.
  [[nodiscard]] std::vector<RpkiCacheStatus> status() const;
  [[nodiscard]] SlurmStatus slurm_status() const;

 private:
  struct Cache;
  // kHandshake: TCP is up, the transport's handshake (TLS) is not done.
  enum class Conn : uint8_t { kDown, kConnecting, kHandshake, kUp };

  static void on_io(struct ev_loop*, ev_io* w, int revents);
  static void on_deadline(struct ev_loop*, ev_timer* w, int);
  static void on_dial(struct ev_loop*, ev_timer* w, int);
  static void on_silent(struct ev_loop*, ev_timer* w, int);

  std::unique_ptr<Cache> make_cache(size_t index, const RpkiCacheConfig& config, uint64_t seed);
  // Closes the connection and stops every timer of c.
  void halt(Cache& c);
  void dial(Cache& c);
  void start_stream(Cache& c);
  void handshake(Cache& c);
  // The socket events c's watcher waits for.
  void watch(Cache& c, int events);
  void connected(Cache& c);
  void readable(Cache& c);
  void flush(Cache& c);
  void fail(Cache& c, std::string_view why);
  void close(Cache& c);
  void step(Cache& c, const rpki::ClientEvent& ev);
  void arm_deadline(Cache& c);
  void reconsider();
  [[nodiscard]] size_t last_wanted() const;
  [[nodiscard]] bool wanted(size_t i) const { return running_ && i <= last_wanted(); }
  void publish_if_changed();
  void released(size_t held_before, size_t held_after);
  void update_status();
  // slurm_ and slurm_status_ from config_.slurm.
  void set_slurm();

  RpkiConfig config_;
  // SLURM (RFC 8416 section 4.1): applied to every cache's VRPs before
  // they are published. Without a cache holding data nothing is
  // published, assertions included (docs/rpki.md, "SLURM").
  rpki::SlurmFilter slurm_;
  struct ev_loop* loop_;
  VrpStore& store_;
  std::function<void(const VrpDelta&)> changed_;
  std::vector<std::unique_ptr<Cache>> caches_;  // by preference
  int published_ = -1;                          // the index the data came from, -1 none
  uint64_t published_data_ = 0;                 // that cache's data generation
  bool running_ = false;
  mutable std::mutex status_mu_;
  std::vector<RpkiCacheStatus> status_;
  SlurmStatus slurm_status_;
};

}  // namespace petrel::daemon
