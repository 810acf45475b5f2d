// One configured neighbour on its worker: the dialer with back-off, up to
// two TCP connections (ours and the peer's, until collision resolution
// picks one), each driven by its own fsm::Fsm, and the per-peer counters.
//
// Everything here runs on the peer's worker thread. A failure inside one
// session's processing (an exception, a broken invariant reported as one)
// ends that session with a NOTIFICATION Cease and a log line; other peers
// go on.
#pragma once

#include <ev.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "codec/framer.h"
#include "codec/types.h"
#include "daemon/backoff.h"
#include "daemon/config.h"
#include "daemon/control_protocol.h"
#include "daemon/sockets.h"
#include "mrt/writer.h"
#include "fsm/collision.h"
#include "fsm/fsm.h"
#include "table/export_group.h"
#include "table/exporter.h"
#include "table/import.h"
#include "table/table.h"

namespace petrel::daemon {

class Worker;

// Counters per peer. Written on the worker, read by anyone (relaxed).
struct PeerCounters {
  std::array<std::atomic<uint64_t>, 6> messages_in{};   // by message type 1..5
  std::array<std::atomic<uint64_t>, 6> messages_out{};
  std::array<std::atomic<uint64_t>, codec::kKnownFamilies> announced{};
  std::array<std::atomic<uint64_t>, codec::kKnownFamilies> withdrawn{};
  std::atomic<uint64_t> unknown_family_updates{0};
  std::atomic<uint64_t> treat_as_withdraw{0};
  // Announcements of a route exactly as the table held it (RFC 7854
  // statistic type 1; a stale route confirmed is not one).
  std::atomic<uint64_t> duplicate_announcements{0};
  std::atomic<uint64_t> attribute_discard{0};
  std::atomic<uint64_t> established{0};
  std::atomic<uint64_t> connections_refused{0};
  // Import policy: prefixes refused (own AS too often, a reflection loop,
  // the import filter, import "none"), per family.
  std::array<std::atomic<uint64_t>, codec::kKnownFamilies> refused{};
  std::atomic<uint64_t> own_as_loops{0};
  std::atomic<uint64_t> reflection_loops{0};
  // UPDATEs refused as route leaks by OTC (RFC 9234 section 5).
  std::atomic<uint64_t> route_leaks{0};
  // Import guards (table/import.h): UPDATEs with NLRI of a family the
  // session did not negotiate (ignored); UPDATEs of an external peer
  // refused for an empty AS_PATH or a leftmost AS not the peer's;
  // max_prefixes warnings and limits crossed.
  std::atomic<uint64_t> unnegotiated_family{0};
  std::atomic<uint64_t> empty_as_path{0};
  std::atomic<uint64_t> first_as{0};
  std::atomic<uint64_t> max_prefixes_warnings{0};
  std::atomic<uint64_t> max_prefixes_exceeded{0};
  // Routes not sent to the peer because their attributes do not fit in
  // one UPDATE for it (table::ExporterCounters::oversized, every session).
  std::atomic<uint64_t> oversized{0};
};

// Graceful restart with this peer (docs/graceful-restart.md), as the
// helper that keeps its routes while it restarts.
struct GracefulStatus {
  enum class Phase : uint8_t {
    kNone,        // no stale routes of the peer
    kRestarting,  // its session is down; its routes are kept, stale
    kLongLived,   // down past its restart time: routes kept long-lived stale (RFC 9494)
    kRecovering,  // up again; stale routes wait for its End-of-RIB
  };
  Phase phase = Phase::kNone;
  // Of the last session that came up: both sides sent the capability,
  // both set the N bit (RFC 8538), and what the peer offered.
  bool negotiated = false;
  bool notification = false;
  uint16_t peer_restart_time = 0;
  std::vector<codec::GracefulRestart::PerFamily> peer_families;
  // RFC 9494: both sides sent the LLGR capability (with graceful restart),
  // and the peer's families with their Long-lived Stale Time.
  bool long_lived_negotiated = false;
  std::vector<codec::LongLivedGracefulRestart::PerFamily> peer_long_lived_families;
  int64_t stale_until_ms = 0;  // system clock, ms since the epoch; 0: no stale timer
  uint64_t restarts = 0;       // sessions that went down with their routes kept
  uint64_t expired = 0;        // stale timers that ran out (routes removed)
  uint64_t long_lived = 0;     // restart times that ran out with routes kept long-lived stale
};
std::string_view graceful_phase_name(GracefulStatus::Phase p);

// A snapshot for logs and, later, the API.
struct PeerStatus {
  fsm::State state = fsm::State::kIdle;
  std::string last_error;
  int64_t established_since_ms = 0;  // steady clock; 0 when not established
  GracefulStatus graceful;
  // RFC 9234: the role the peer's OPEN announced, while established.
  std::optional<codec::Role> peer_role;
};

// What an operator's command did (Peer::admin): ok false when it could
// not be done, the text saying why or what happened.
struct AdminResult {
  bool ok = true;
  std::string text;
};

class Peer {
 public:
  // groups: the update groups every peer's export joins (export_group.h).
  // policies: the configuration whose filters the peer's import and
  // export name (a reload's; null: config).
  Peer(const Config& config, const PeerConfig& peer, Worker& worker, table::Table& table,
       table::ExportGroups& groups, uint64_t seed, const Config* policies = nullptr);
  ~Peer();
  Peer(const Peer&) = delete;
  Peer& operator=(const Peer&) = delete;

  // All of these run on the worker's thread (post them there).
  void start();
  // A connection the listener accepted from this peer's address.
  void incoming(int fd, const SocketAddress& remote);
  // Administrative shutdown: Cease with the RFC 9003 message to an open
  // session, then done() once every connection is closed. kRestart
  // (Petrel stops to restart, docs/graceful-restart.md): an Established
  // session that negotiated graceful restart is closed without a
  // NOTIFICATION, so that the peer keeps Petrel's routes as its helper
  // (RFC 4724 section 4.2: the TCP session was reset); others as kWithdraw.
  // cease_subcode: what the Cease says (a peer removed by a reload:
  // Peer De-configured; one whose configuration changed: Other
  // Configuration Change); the message goes only with Administrative
  // Shutdown and Reset (RFC 9003).
  enum class Stop : uint8_t { kWithdraw, kRestart };
  void shutdown(std::string message, std::function<void()> done, Stop how = Stop::kWithdraw,
                uint8_t cease_subcode = codec::cease::kAdministrativeShutdown);
  // Stops every watcher, closes the sockets and takes the peer's routes
  // out of the table: after it the object does nothing more and may be
  // destroyed on any thread (a reload removed the peer; HTTP requests may
  // still hold it). On the worker's thread; the destructor calls it too.
  void retire();
  // Whether retire() ran. Any thread.
  [[nodiscard]] bool retired() const { return retired_.load(std::memory_order_acquire); }
  // A reload changed keys of this peer that need no new session
  // (description, shutdown_message, max_prefixes and its companions):
  // they apply now; a lowered max_prefixes is checked at once.
  void update(const PeerConfig& next);
  // A configuration reload changed this peer's policies (docs/export.md,
  // "Reload"). Export: the exporter sends only the difference. Import:
  // the peer is asked for a ROUTE-REFRESH of every family, so its routes
  // go through the new policy (or, when it did not negotiate route
  // refresh, the policy applies to its next UPDATEs); "none" withdraws its
  // routes at once. Logs one line saying what changed.
  void reload(Policy import, Policy export_policy, uint8_t allow_own_as, bool import_changed,
              bool export_changed);

  // The interface the session runs over went down or lost carrier
  // (peer.link_down_ends_session, docs/kernel.md "Link down"): the session
  // ends at once, without a NOTIFICATION (it could not leave), as a TCP
  // failure. link_up(): the link is back, the peer is dialed at once.
  void link_down(const std::string& interface);
  void link_up();

  // A session that max_prefixes closed and holds down (for
  // max_prefixes_restart seconds, or until this is called: a reload)
  // starts again.
  void resume_after_limit();

  // An operator's command from the control socket (docs/operations.md):
  // disable and shutdown close the session with Cease / Administrative
  // Shutdown (the message as RFC 9003 text) and keep it down until
  // enable; reset closes it with Cease / Administrative Reset and dials
  // again; soft-in asks the peer for a ROUTE-REFRESH of every family
  // (when negotiated); soft-out sends our Adj-RIB-Out again. The text
  // says what was done, for the operator.
  AdminResult admin(control::PeerAction action, const std::string& message);
  // Whether an operator disabled the session. Any thread.
  [[nodiscard]] bool admin_down() const { return admin_down_.load(std::memory_order_relaxed); }

  // The peer's configuration. Its identity (name, address, interface,
  // AS), transport and session keys never change while the object lives
  // (a reload that changes them replaces the Peer); update() changes the
  // others on the worker's thread, so other threads read those from
  // shown().
  [[nodiscard]] const PeerConfig& config() const { return peer_; }
  // The configuration as update() last left it. Any thread.
  [[nodiscard]] std::shared_ptr<const PeerConfig> shown() const;
  // Whether max_prefixes holds the session down now. Any thread.
  [[nodiscard]] bool held_down() const { return held_down_.load(std::memory_order_relaxed); }
  // Oscillation damping (peer.damp_oscillations): sessions in a row that
  // went down less than a minute after they came up, and how long the
  // next one is still held back (ms; 0: not held). Any thread.
  [[nodiscard]] uint32_t quick_downs() const { return quick_downs_shown_.load(std::memory_order_relaxed); }
  [[nodiscard]] int64_t damped_for_ms() const;
  // The socket options of the peer's connections (any thread: constant).
  [[nodiscard]] const TransportOptions& transport() const { return transport_; }
  [[nodiscard]] Worker& worker() const { return worker_; }
  [[nodiscard]] const PeerCounters& counters() const { return counters_; }
  [[nodiscard]] PeerStatus status() const;
  // Routes the peer has in the table now (0 while its session is down).
  // Any thread.
  [[nodiscard]] uint64_t table_routes(size_t family_index) const;
  // The peer's export gate as its exporter has it (GET
  // /api/routes/{prefix}/explain?peer=): the export policy, and the
  // session's target while established. Any thread.
  struct ExportView {
    Policy policy;
    std::optional<table::ExportTarget> target;  // none: no session
    std::optional<codec::FamilySet> families;   // negotiated
  };
  [[nodiscard]] ExportView export_view() const;
  // The VRPs or ASPAs changed: a peer whose import policy asks the RPKI or
  // ASPA state is asked for its routes again (ROUTE-REFRESH, at most once
  // a minute), so that they go through the policy with the new data.
  // The worker's thread.
  void rpki_changed();
  // A BMP station monitors pre-policy and connected: ROUTE-REFRESH of
  // every family (docs/bmp.md). The worker's thread.
  void bmp_refresh();
  // The ASPA procedure for the peer's routes, by its RFC 9234 role
  // (constant while the peer lives). Any thread.
  [[nodiscard]] table::AspaCheck aspa_check() const;
  // The routes import refused, kept with why (peer.keep_refused). Any
  // thread.
  [[nodiscard]] const table::RefusedRoutes& refused() const { return refused_; }
  // The peer's table slot while its session is up, else -1. Any thread.
  [[nodiscard]] int32_t table_slot() const { return table_slot_.load(std::memory_order_acquire); }
  // ADD-PATH paths refused over peer.max_paths_per_prefix, this session.
  [[nodiscard]] uint64_t paths_refused() const;
  // The peer's routes kept stale (graceful restart, route refresh) and not
  // announced again yet. Any thread.
  [[nodiscard]] uint64_t stale_routes(size_t family_index) const;
  // Prefixes whose best route is the peer's (0 while its session is down).
  [[nodiscard]] uint64_t best_routes(size_t family_index) const;
  // Prefixes the peer holds from us now (0 while its session is down).
  // Any thread.
  [[nodiscard]] uint64_t advertised(size_t family_index) const;

 private:
  struct Connection;

  void dial_later(double seconds);
  void new_connection(fsm::Direction dir, int fd);
  // Steps c's FSM and performs the actions; c may be gone afterwards.
  void step(Connection& c, const fsm::Event& e);
  void perform(Connection& c, fsm::Actions& actions);
  void deliver_update(Connection& c, bytes::Span body);
  // The session as the MRT UPDATE log's records name it (mrt_log.h).
  mrt::Bgp4mpPeer mrt_session(Connection& c);
  void resolve_collision(Connection& accepted);
  // Whether c is an Established session that negotiated graceful restart,
  // whose routes a TCP failure would leave stale (RFC 4724 section 4.2).
  bool graceful_session(Connection& c);
  void send_bytes(Connection& c, std::vector<std::byte>&& bytes, codec::MessageType type);
  void flush(Connection& c);
  // Empties c's send buffer, all of it sent (and frees a large one).
  void release_sent(Connection& c);
  void close_socket(Connection& c);
  void arm_timer(Connection& c);
  void reap();
  void session_failed(Connection& c, const char* what);
  // A lingering socket of this peer was closed (see Linger in peer.cpp).
  void linger_finished();
  void set_status(fsm::State s, std::string_view error);
  Connection* other(const Connection& c);
  // The table slot: taken when a session comes up, its routes withdrawn
  // and the slot freed when it goes down.
  bool enter_table(Connection& c);
  void leave_table();
  // The session's exporter and unapplied UPDATEs go (leave_table, and a
  // session whose routes a graceful restart keeps).
  void end_session_routing();

  // Graceful restart helper (daemon/peer_graceful.cpp). An Established
  // session went down: keeps the peer's routes stale (true) when `down`
  // allows it and a family the peer listed has routes.
  bool keep_for_restart(const fsm::SessionDown& down);
  // The session is up again (before enter_table): the peer keeps its slot
  // unless it came back as another speaker; families whose new capability
  // lacks the Forwarding State bit lose their stale routes now.
  void graceful_up(const fsm::Negotiated& n);
  // The peer's End-of-RIB for a family: its stale routes go.
  void graceful_end_of_rib(codec::Family f);
  // No stale routes are kept any longer (leave_table).
  void graceful_clear();
  void arm_graceful_timer(double seconds);
  // RFC 9494 section 4.2: family f's routes become long-lived stale until
  // now + its stale time (the NO_LLGR ones go).
  void begin_long_lived(uint16_t slot, codec::Family f, double now, uint64_t& kept, uint64_t& dropped);
  // The restart time ran out (or a family's long-lived stale time): moves
  // on what is due and arms the timer for what is next; false when no
  // stale route is left.
  bool graceful_deadlines(double now);
  void publish_graceful();
  static void on_graceful_timer(struct ev_loop*, ev_timer* w, int);
  void flush_batch();
  // Tell the BMP client (daemon/bmp.h), if there is one.
  void bmp_session_up(Connection& c);
  void bmp_received(bytes::Span body);  // pre-policy monitoring
  void bmp_session_down(const Connection& c, const fsm::SessionDown& down);
  // Export: the exporter is made when the session comes up and goes with
  // it; pump_export() writes what it has while the socket keeps up.
  void start_export(Connection& c);
  void pump_export(Connection& c);
  // Runs the exporter again as soon as the loop comes round.
  void again_soon();
  // Adds the exporter's oversized routes since `before` to the peer's
  // counter; the first ever is logged (once per peer).
  void note_oversized(uint64_t before);
  Connection* established();
  // Import (table/import.h) of one UPDATE into batch_: counters and the
  // first log line of each kind of refusal in a session.
  void import_update(const Connection& c, const codec::UpdateView& u, bool treat_as_withdraw);
  // max_prefixes after a batch: warnings logged; past the limit, a Cease
  // is due (limit_cease_), sent by cease_for_limit() from a safe point.
  void check_limits(uint16_t slot);
  void cease_for_limit();
  // Whether max_prefixes holds the session down (false again once
  // max_prefixes_restart has passed).
  bool held();
  // After an Established session went down: counts it when it was short,
  // and holds the next session back once such downs keep coming.
  void damp_after(const fsm::SessionDown& down);
  // Whether damping holds the next session back now.
  bool damped();
  static void on_limit_timer(struct ev_loop*, ev_timer* w, int);
  static void on_export_timer(struct ev_loop*, ev_timer* w, int);
  static void on_selection_timer(struct ev_loop*, ev_timer* w, int);
  // The table changed (export_woken_): the exporter's turn, soon.
  static void on_export_wake(struct ev_loop*, ev_async* w, int);

  static void on_read(struct ev_loop*, ev_io* w, int);
  static void on_write(struct ev_loop*, ev_io* w, int);
  static void on_timer(struct ev_loop*, ev_timer* w, int);
  static void on_dial_timer(struct ev_loop*, ev_timer* w, int);
  void handle_read(Connection& c);
  void handle_write(Connection& c);

  const Config& config_;
  PeerConfig peer_;
  fsm::PeerConfig fsm_config_;
  TransportOptions transport_;
  Worker& worker_;
  table::Table& table_;
  table::ExportGroups& export_groups_;
  std::atomic<int32_t> table_slot_{-1};
  // Import and export policy, from the configuration (a reload changes
  // them, on this thread).
  Policy import_;
  Policy export_;
  uint8_t allow_own_as_ = 0;
  uint32_t cluster_id_ = 0;
  table::PrefixLimitWatch limits_;
  std::vector<std::byte> limit_cease_;  // the NOTIFICATION data of a Cease due, or empty
  ev_timer limit_timer_;
  double held_until_ = 0;  // ev_now() until which the session stays down; infinity: until a reload
  std::atomic<bool> held_down_{false};
  // Damping: ev_now() of the last session up, the short sessions in a row,
  // and the ev_now() before which no session starts (0: none). The
  // atomics are the API's copies (damped_until_ms_: the steady clock).
  double up_at_ = 0;
  uint32_t quick_downs_ = 0;
  double damped_until_ = 0;
  std::atomic<uint32_t> quick_downs_shown_{0};
  std::atomic<int64_t> damped_until_ms_{0};
  std::array<bool, 4> reported_{};  // per session: first refusal of each kind logged
  std::unique_ptr<table::GroupMember> exporter_;  // while a session is up: its place in an update group
  mutable std::mutex exporter_mu_;  // its lifetime, for advertised() on other threads
  // Under exporter_mu_: export_view()'s copies.
  table::RefusedRoutes refused_;
  // ROUTE-REFRESH of every negotiated family; false: not negotiated.
  bool ask_refresh(Connection& c);
  static void on_rpki_refresh_timer(struct ev_loop* loop, ev_timer* w, int revents);
  static constexpr double kRpkiRefreshGap = 60;
  ev_timer rpki_refresh_timer_{};
  double last_rpki_refresh_ = -kRpkiRefreshGap;
  Policy shown_export_;
  std::optional<table::ExportTarget> shown_target_;
  std::optional<codec::FamilySet> shown_families_;
  ev_timer export_timer_;
  // Petrel's own restart (RFC 4724 section 4.1): while its route selection
  // is deferred (daemon/restart.h), an Established session's exporter
  // waits, and this looks every kSelectionPoll whether it may start.
  ev_timer selection_timer_;
  // While the exporter is: the table's writers wake it (any thread) through
  // export_wake_, on this worker's loop.
  ev_async export_wake_;
  table::Subscription export_woken_;
  double export_turn_at_ = 0;  // ev_now() of the exporter's last turn
  // The UPDATEs of one socket read, applied together (flush_batch) when
  // the read's messages are done, before an End-of-RIB is reported, and
  // dropped when the session goes down.
  table::Batch batch_;
  Backoff backoff_;
  ev_timer dial_timer_;
  std::array<std::unique_ptr<Connection>, 2> conns_;  // by fsm::Direction
  std::vector<std::unique_ptr<Connection>> dead_;
  bool shutting_down_ = false;
  std::atomic<bool> retired_{false};
  std::atomic<bool> admin_down_{false};  // an operator disabled the session (admin())
  std::string shutdown_message_;
  std::function<void()> shutdown_done_;
  int lingering_ = 0;  // sockets closed by us, waiting for the peer to read the last bytes
  PeerCounters counters_;
  bool oversized_logged_ = false;
  // Graceful restart helper: the peer's capability from its last session,
  // the families whose stale routes wait, whether the session is down with
  // its routes kept, and the stale timer (restart time, then
  // stale_routes_time).
  std::optional<codec::GracefulRestart> graceful_peer_;
  std::optional<codec::LongLivedGracefulRestart> long_lived_peer_;  // RFC 9494
  bool graceful_notification_ = false;
  codec::FamilySet stale_families_;
  bool restarting_ = false;
  // Of stale_families_, those kept long-lived stale, and until when
  // (ev_now(); by codec::known_index); restart_until_: when the restart
  // time of the others runs out.
  codec::FamilySet long_lived_families_;
  std::array<double, codec::kKnownFamilies> long_lived_until_{};
  double restart_until_ = 0;
  double down_at_ = 0;         // ev_now() when the session went down with its routes kept
  double stale_deadline_ = 0;  // ev_now() at which the stale routes go
  ev_timer graceful_timer_;
  mutable std::mutex status_mu_;
  PeerStatus status_;
  std::shared_ptr<const PeerConfig> shown_;  // under status_mu_
};

// The FSM's view of a configured peer.
fsm::PeerConfig make_fsm_config(const Config& config, const PeerConfig& peer);
// The graceful restart capability Petrel offers the peer (RFC 4724 section
// 3, RFC 8538 section 2): the one place that decides the Restart State and
// Forwarding State bits.
codec::GracefulRestart offered_graceful_restart(const PeerConfig& peer);
// The long-lived graceful restart capability Petrel offers (RFC 9494
// section 3.1), when long_lived_stale_time is not 0 and graceful restart
// is on (section 4.1: one goes with the other).
std::optional<codec::LongLivedGracefulRestart> offered_long_lived_graceful_restart(const PeerConfig& peer);
// The socket options of a configured peer's connections: its TCP MD5 or
// TCP-AO key, and its TTLs (multihop; GTSM sends 255 and accepts
// 255 - (multihop - 1) and above, RFC 5082 section 3).
TransportOptions transport_options(const PeerConfig& peer);

}  // namespace petrel::daemon
