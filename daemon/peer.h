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
#include "daemon/sockets.h"
#include "fsm/collision.h"
#include "fsm/fsm.h"
#include "table/exporter.h"
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
  std::atomic<uint64_t> attribute_discard{0};
  std::atomic<uint64_t> established{0};
  std::atomic<uint64_t> connections_refused{0};
  // Import policy: prefixes refused (own AS too often, a reflection loop,
  // the import filter, import "none"), per family.
  std::array<std::atomic<uint64_t>, codec::kKnownFamilies> refused{};
  std::atomic<uint64_t> own_as_loops{0};
  std::atomic<uint64_t> reflection_loops{0};
  // Routes not sent to the peer because their attributes do not fit in
  // one UPDATE for it (table::ExporterCounters::oversized, every session).
  std::atomic<uint64_t> oversized{0};
};

// A snapshot for logs and, later, the API.
struct PeerStatus {
  fsm::State state = fsm::State::kIdle;
  std::string last_error;
  int64_t established_since_ms = 0;  // steady clock; 0 when not established
};

class Peer {
 public:
  // out_sets: the interner of outgoing attribute sets that every peer's
  // exporter shares.
  Peer(const Config& config, const PeerConfig& peer, Worker& worker, table::Table& table, table::Interner& out_sets,
       uint64_t seed);
  ~Peer();
  Peer(const Peer&) = delete;
  Peer& operator=(const Peer&) = delete;

  // All of these run on the worker's thread (post them there).
  void start();
  // A connection the listener accepted from this peer's address.
  void incoming(int fd, const SocketAddress& remote);
  // Administrative shutdown: Cease with the RFC 9003 message to an open
  // session, then done() once every connection is closed.
  void shutdown(std::string message, std::function<void()> done);
  // A configuration reload changed this peer's policies (docs/export.md,
  // "Reload"). Export: the exporter sends only the difference. Import:
  // the peer is asked for a ROUTE-REFRESH of every family, so its routes
  // go through the new policy (or, when it did not negotiate route
  // refresh, the policy applies to its next UPDATEs); "none" withdraws its
  // routes at once. Logs one line saying what changed.
  void reload(Policy import, Policy export_policy, uint8_t allow_own_as, bool import_changed,
              bool export_changed);

  [[nodiscard]] const PeerConfig& config() const { return peer_; }
  [[nodiscard]] Worker& worker() const { return worker_; }
  [[nodiscard]] const PeerCounters& counters() const { return counters_; }
  [[nodiscard]] PeerStatus status() const;
  // Routes the peer has in the table now (0 while its session is down).
  // Any thread.
  [[nodiscard]] uint64_t table_routes(size_t family_index) const;
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
  void resolve_collision(Connection& accepted);
  void send_bytes(Connection& c, std::vector<std::byte>&& bytes, codec::MessageType type);
  void flush(Connection& c);
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
  void flush_batch();
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
  // Import policy for one UPDATE: into batch_, counting what it refused.
  void import_update(const codec::UpdateView& u, bool treat_as_withdraw);
  static void on_export_timer(struct ev_loop*, ev_timer* w, int);

  static void on_read(struct ev_loop*, ev_io* w, int);
  static void on_write(struct ev_loop*, ev_io* w, int);
  static void on_timer(struct ev_loop*, ev_timer* w, int);
  static void on_dial_timer(struct ev_loop*, ev_timer* w, int);
  void handle_read(Connection& c);
  void handle_write(Connection& c);

  const Config& config_;
  PeerConfig peer_;
  fsm::PeerConfig fsm_config_;
  Worker& worker_;
  table::Table& table_;
  table::Interner& out_sets_;
  std::atomic<int32_t> table_slot_{-1};
  // Import and export policy, from the configuration (a reload changes
  // them, on this thread).
  Policy import_;
  Policy export_;
  uint8_t allow_own_as_ = 0;
  uint32_t cluster_id_ = 0;
  std::unique_ptr<table::Exporter> exporter_;  // while a session is up
  mutable std::mutex exporter_mu_;  // its lifetime, for advertised() on other threads
  ev_timer export_timer_;
  // The UPDATEs of one socket read, applied together (flush_batch) when
  // the read's messages are done, before an End-of-RIB is reported, and
  // dropped when the session goes down.
  table::Batch batch_;
  Backoff backoff_;
  ev_timer dial_timer_;
  std::array<std::unique_ptr<Connection>, 2> conns_;  // by fsm::Direction
  std::vector<std::unique_ptr<Connection>> dead_;
  bool shutting_down_ = false;
  std::string shutdown_message_;
  std::function<void()> shutdown_done_;
  int lingering_ = 0;  // sockets closed by us, waiting for the peer to read the last bytes
  PeerCounters counters_;
  bool oversized_logged_ = false;
  mutable std::mutex status_mu_;
  PeerStatus status_;
  std::vector<std::byte> read_buf_;
};

// The FSM's view of a configured peer.
fsm::PeerConfig make_fsm_config(const Config& config, const PeerConfig& peer);

}  // namespace petrel::daemon
