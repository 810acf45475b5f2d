// The BMP client (RFC 7854, RFC 9069; docs/bmp.md): feeds each [[bmp]]
// station Initiation, a Peer Up for every established session (and for
// the Loc-RIB instance), the routes of the table, then every change, and
// Statistics Reports; Termination when Petrel stops.
//
// One thread ("petrel-bmp") with its own libev loop serves every station.
// It follows the table like the other followers (Table::subscribe, a
// journal cursor per station) and reads the journal only while the
// station's queue is short, so a slow or stopped station never makes
// routing wait: when the station falls so far behind that the journal
// overruns its cursor, or its queue passes bmp.max_queue, the connection
// is dropped (counted) and the station gets the whole table again when it
// reconnects (with back-off).
//
// Sessions tell it when they come up and go down (BmpSessionUp and
// BmpSessionDown, posted from the workers through bmp_feed()). What each
// station was sent is kept per prefix as (peer slot, path id, hash of the
// attributes), so that a change of one route of a prefix sends that route
// and no other.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bmp/bmp.h"
#include "codec/types.h"
#include "daemon/config.h"
#include "table/table.h"

namespace petrel::daemon {

// A session that came up: what its Peer Up says. From the worker.
struct BmpSessionUp {
  std::string name;  // the peer's configured name
  uint16_t slot = 0;  // its table slot
  net::IpAddress address;
  uint32_t as = 0;
  uint32_t bgp_id = 0;  // host order
  net::IpAddress local_address;
  uint16_t local_port = 0;
  uint16_t remote_port = 0;
  std::vector<std::byte> sent_open;      // whole messages
  std::vector<std::byte> received_open;
  // As negotiated: how its UPDATEs were written (AS width, ADD-PATH
  // receive as the collector reads it: the peer's send).
  codec::SessionParams params;
  int64_t since_ms = 0;  // system clock
};

// A session that went down (from Established).
struct BmpSessionDown {
  std::string name;
  uint16_t slot = 0;
  bmp::DownReason reason = bmp::DownReason::kRemoteNoNotification;
  std::vector<std::byte> data;  // the NOTIFICATION whole, or the FSM event code
  int64_t since_ms = 0;
};

// The counters of a session that the Statistics Reports carry (read on
// the BMP thread through the server's callback).
struct BmpPeerCounters {
  uint64_t rejected = 0;           // prefixes refused by the import policy
  uint64_t as_path_loops = 0;
  uint64_t reflection_loops = 0;   // CLUSTER_LIST and ORIGINATOR_ID
  uint64_t treat_as_withdraw = 0;  // UPDATEs
  uint64_t duplicate_prefixes = 0;  // announcements of a route as held
};

// An UPDATE as a session received it (pre-policy monitoring): the whole
// message. From the worker.
struct BmpUpdate {
  std::string name;
  uint16_t slot = 0;
  std::vector<std::byte> message;
  int64_t ms = 0;  // system clock
};

// One station as the API and the metrics show it.
struct BmpStationStatus {
  std::string name;  // "ADDRESS:PORT"
  std::string state;  // "connecting", "up", "waiting" (to reconnect)
  uint64_t messages = 0;  // sent (queued on an open connection)
  uint64_t bytes = 0;
  uint64_t connects = 0;  // connections that opened
  uint64_t drops = 0;     // connections dropped for falling behind
  uint64_t dropped_bytes = 0;  // queued and never sent (connections that ended)
  uint64_t queued_bytes = 0;
  std::string last_error;
};

class BmpClient {
 public:
  // counters(name): the session's counters now (nullopt: not known).
  // refresh_peers(): ask every established peer for its routes again
  // (ROUTE-REFRESH), for a pre-policy station that connected or lost
  // UPDATEs; called on the BMP thread.
  BmpClient(const Config& config, const table::Table& table,
            std::function<std::optional<BmpPeerCounters>(const std::string&)> counters,
            std::function<void()> refresh_peers = nullptr);
  ~BmpClient();
  BmpClient(const BmpClient&) = delete;
  BmpClient& operator=(const BmpClient&) = delete;

  void start();
  // Sends Termination to every connected station (what fits in a short
  // wait) and joins the thread.
  void stop();

  // Any thread.
  void session_up(BmpSessionUp up);
  void session_down(BmpSessionDown down);
  // Whether a station monitors pre-policy (then sessions call received()).
  [[nodiscard]] bool wants_pre_policy() const { return pre_policy_; }
  // An UPDATE as received. Bounded: past kMaxPendingPreBytes waiting for
  // the BMP thread, it is dropped (counted) and the peers are asked for
  // their routes again once the thread catches up.
  void received(BmpUpdate update);
  static constexpr size_t kMaxPendingPreBytes = 64u << 20;
  [[nodiscard]] std::vector<BmpStationStatus> status() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  bool pre_policy_ = false;
};

// The client the sessions tell (null: no [[bmp]] station). Set by the
// server for its lifetime.
BmpClient* bmp_feed();
void set_bmp_feed(BmpClient* client);

}  // namespace petrel::daemon
