// The RTR client (router side of draft-ietf-sidrops-8210bis, version 2,
// falling back to RFC 8210 and RFC 6810) as a sans-I/O machine: step(event, now) appends actions; no sockets, no clock.
//
// The daemon dials the cache, feeds Connected, the bytes that arrive and
// Disconnected, performs the actions in order (send bytes, close, dial
// again, apply an update, drop expired data) and arms one timer at
// next_deadline(), stepping a Tick when it fires.
//
// What it does, by RFC 8210 section:
//  - 8.1: on each connection it sends a Reset Query, or a Serial Query when
//    it holds unexpired data and the session id and serial that go with
//    it. 8.2: a Serial Query on a Serial Notify (when idle, and not
//    sooner than notify_gap after the last answer) and at the refresh
//    interval.
//  - 5.x: an answer (Cache Response ... End of Data) takes effect only when
//    complete and consistent: withdrawing a record it does not hold is
//    Withdrawal of Unknown Record (6), announcing one it holds is Duplicate
//    Announcement Received (7); either sends that Error Report, keeps the
//    old data, closes and starts over with a Reset Query. The update says
//    which VRPs and router keys came and went.
//  - 5.1: a session id that differs from ours is Corrupt Data: an Error
//    Report, the data flushed, the connection closed. An End of Data serial
//    behind ours (RFC 1982 arithmetic) or a Cache Reset leads to a Reset
//    Query.
//  - 6: refresh, retry and expire intervals from End of Data (version 1,
//    brought into the RFC's ranges) or the configured defaults (version 0).
//    After a failed connection it dials again after the retry interval;
//    data not renewed within the expire interval is dropped (DataExpired).
//  - 7: it speaks version 2 first (max_version); an answer in a lower
//    version or an Unsupported Protocol Version report in a lower version
//    makes it fall back to that version, 2 to 1 to 0
//    (reconnecting at once after a report, or after an answer to a Serial
//    Query, whose session id and serial belong to the other version). Once a version is agreed, a PDU
//    of another version is Unexpected Protocol Version (8).
//  - 8210bis 5.12 (ASPA, version 2): an announcement for a customer AS
//    replaces the one held; withdrawing a customer not held is Withdrawal
//    of Unknown Record. The update lists the ASPAs that came or changed
//    (whole provider sets) and the customers whose ASPA went. A record in
//    8210bis-10's layout for IPv6 (StayRTR 0.5 sends each ASPA once per
//    family) is skipped: the current profile has no address family.
//  - 10/11: no Error Report is sent about an Error Report. A received No
//    Data Available is not fatal: the query is repeated after the retry
//    interval; other received reports close the connection.
//
// Bounds on what a cache can make us hold (RFC 8210 sets none):
//  - an answer that would leave more than max_vrps records (VRPs, router
//    keys, ASPAs and each ASPA's providers) is cut off with an Error Report, Internal Error (1): RFC 8210
//    section 12 gives that code to a party that cannot go on for a reason
//    of its own, "ran out of memory" its first example; the data is not
//    corrupt. The previous data stays in force. A router key counts as
//    router_key_records() records, by the length of its SPKI, so that the
//    limit bounds bytes too; an SPKI over kMaxSpkiLen is Corrupt Data (the
//    decoder's);
//  - an answer not complete (End of Data) within answer_timeout of the
//    query closes the connection (kTimedOut), the previous data kept;
//  - what an abandoned answer held is freed, not kept as spare capacity.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "crates/bytes/bytes.h"
#include "crates/timing/timing.h"
#include "rpki/framer.h"
#include "rpki/pdu.h"
#include "rpki/vrp.h"

namespace petrel::rpki {

// A monotonic time in milliseconds, as the daemon hands it in
// (crates/timing).
using Duration = timing::Duration;
using Time = timing::Time;

// Real caches hand out about 800,000 VRPs (2025: some 600,000 IPv4 and
// 200,000 IPv6, growing by about 100,000 a year). Five times that leaves
// years of room and still bounds a hostile cache to some hundreds of MB.
inline constexpr size_t kDefaultMaxVrps = 4'000'000;
inline constexpr Duration kDefaultAnswerTimeout = std::chrono::seconds(60);
// Serial Notify is a hint (RFC 8210 section 4) that the cache may send
// after every change, and each answer, however small, costs the daemon a
// table rebuild and a revalidation on its main loop. A notify less than
// notify_gap after the last complete answer brings the next query forward
// to that moment rather than to now; further notifies until then ask
// nothing more. The refresh timer and the first query on a new connection
// wait at least as long (a cache may set a Refresh Interval of 1 s, or
// close the connection after each answer). 5 s is far below how often real
// caches change (minutes) and bounds such a cache to one query every 5 s.
inline constexpr Duration kDefaultNotifyGap = std::chrono::seconds(5);

// A router key counts against max_vrps as two records and one more for
// each kSpkiOctetsPerRecord octets of its SPKI, so that a record costs
// about what a buffered VRP does (28 bytes): the key without its SPKI
// takes 56 bytes in an answer being received, the SPKI its length and the
// allocator's 16. A 91-octet P-256 key is 5 records, one at kMaxSpkiLen
// 34. Counted as one record whatever its size, 4 million keys of 64 KiB
// each could have been held.
inline constexpr size_t kSpkiOctetsPerRecord = 32;
[[nodiscard]] size_t router_key_records(const RouterKey& k);

struct ClientConfig {
  uint8_t max_version = kMaxVersion;
  Intervals defaults{};  // until a version 1 End of Data says otherwise
  size_t max_vrps = kDefaultMaxVrps;  // records (VRPs, router keys, ASPAs) one cache may leave us holding
  Duration answer_timeout = kDefaultAnswerTimeout;  // from a query to its End of Data
  Duration notify_gap = kDefaultNotifyGap;          // from an End of Data to a query a notify asks for
};

// Events.
struct Connected {};
struct Disconnected {};
struct Received {
  bytes::Span data;
};
struct Tick {};
using ClientEvent = std::variant<Connected, Disconnected, Received, Tick>;

// Actions.
struct SendBytes {
  std::vector<std::byte> bytes;
};
enum class CloseReason : uint8_t {
  kErrorSent,        // we sent a fatal Error Report
  kErrorReceived,    // the cache sent a fatal Error Report
  kVersionFallback,  // reconnect in a lower version
  kResynchronise,    // the cache rejected our session: reconnect at once with a Reset Query
  kTimedOut,         // no complete answer within answer_timeout
};
struct CloseConnection {
  CloseReason reason;
};
struct Reconnect {};  // dial the cache again now
struct ApplyUpdate {
  bool reset = false;  // the answer to a Reset Query
  uint16_t session_id = 0;
  uint32_t serial = 0;
  std::vector<Vrp> announced;  // sorted
  std::vector<Vrp> withdrawn;  // sorted
  std::vector<RouterKey> keys_announced;
  std::vector<RouterKey> keys_withdrawn;
  std::vector<Aspa> aspas_announced;       // new or changed, sorted by customer
  std::vector<uint32_t> aspas_withdrawn;   // customers, sorted
};
struct DataExpired {};  // the daemon stops using the data (it is already gone here)
// Something worth a log line: an Error Report we sent or received, a
// version fallback. Not an instruction.
struct Diagnostic {
  enum class Kind : uint8_t { kErrorSent, kErrorReceived, kVersionFallback, kIgnored, kTimedOut };
  Kind kind;
  ErrorCode code = ErrorCode::kCorruptData;
  std::string text;
};
using ClientAction = std::variant<SendBytes, CloseConnection, Reconnect, ApplyUpdate, DataExpired, Diagnostic>;
using ClientActions = std::vector<ClientAction>;

class Client {
 public:
  enum class State : uint8_t {
    kDisconnected,  // waiting to dial (retry deadline) or for the daemon
    kDialing,       // Reconnect sent; waiting for Connected / Disconnected
    kQuerySent,     // a query is out; waiting for Cache Response
    kReceiving,     // between Cache Response and End of Data
    kIdle,          // in sync; waiting for the refresh deadline or a notify
    kClosing,       // we asked to close; waiting for Disconnected
  };

  explicit Client(ClientConfig config = {});

  void step(const ClientEvent& event, Time now, ClientActions& out);
  [[nodiscard]] ClientActions step(const ClientEvent& event, Time now);
  [[nodiscard]] std::optional<Time> next_deadline() const;

  [[nodiscard]] State state() const { return state_; }
  [[nodiscard]] uint8_t version() const { return version_; }
  [[nodiscard]] const Intervals& intervals() const { return intervals_; }
  [[nodiscard]] std::optional<uint16_t> session_id() const { return session_id_; }
  [[nodiscard]] std::optional<uint32_t> serial() const { return serial_; }
  // The data in force, sorted and distinct: what the VRP table is built from.
  [[nodiscard]] const std::vector<Vrp>& vrps() const { return vrps_; }
  [[nodiscard]] const std::set<RouterKey>& router_keys() const { return keys_; }
  // The ASPAs in force, one per customer, sorted by customer.
  [[nodiscard]] const std::vector<Aspa>& aspas() const { return aspas_; }
  [[nodiscard]] bool has_data() const { return expire_at_.has_value(); }
  // Bytes the client holds: the data in force and what an answer being
  // received has buffered (capacity, not size: what the allocator sees).
  // Kept up to date as the data changes, not counted on each call: the
  // daemon asks twice per read, and a walk of a million ASPAs each time
  // would cost more than the read.
  [[nodiscard]] size_t held_bytes() const;
  // The records held, as max_vrps counts them (kept, as held_bytes()).
  [[nodiscard]] size_t held_records() const;
  // For tests: the same two figures counted by walking everything held,
  // which the kept ones must equal after any sequence of events.
  [[nodiscard]] size_t held_bytes_by_walk() const;
  [[nodiscard]] size_t held_records_by_walk() const;
  // A Serial Query is out on this connection and nothing of its answer has
  // come. A connection lost now is most likely a cache that no longer knows
  // our session (restarted) and closed instead of answering: the next
  // connection asks for everything (Reset Query), at once. StayRTR sends its
  // Corrupt Data report and closes from two threads, so the report is often
  // lost under load.
  [[nodiscard]] bool serial_query_unanswered() const { return state_ == State::kQuerySent && !reset_pending_; }
  // Connected, and the first query waits out notify_gap after the last
  // answer (connected()): the cache has not been asked anything yet, so its
  // silence is no fault.
  [[nodiscard]] bool first_query_deferred() const { return first_query_deferred_; }

 private:
  void connected(Time now, ClientActions& out);
  void disconnected(Time now);
  void received(bytes::Span data, Time now, ClientActions& out);
  void tick(Time now, ClientActions& out);
  void on_pdu(const Message& m, bytes::Span raw, Time now, ClientActions& out);
  void on_error_report(const Message& m, Time now, ClientActions& out);
  void on_end_of_data(const EndOfData& e, Time now, ClientActions& out);

  void send(const Pdu& pdu, ClientActions& out);
  void send_query(Time now, ClientActions& out);
  void send_reset_query(Time now, ClientActions& out);
  // Sends an Error Report quoting `raw` (unless raw is itself a report),
  // closes the connection.
  void fail_with(ErrorCode code, std::string_view text, bytes::Span raw, ClientActions& out);
  void flush(ClientActions& out);
  void expire(ClientActions& out);
  void clear_pending();
  [[nodiscard]] bool over_limit(size_t adding = 1) const;  // `adding` more records would pass max_vrps
  [[nodiscard]] std::string limit_text() const;
  // Closes, and reconnects at once asking for everything (Reset Query).
  void restart_with_reset(CloseReason why, ClientActions& out);

  ClientConfig config_;
  State state_ = State::kDisconnected;
  uint8_t version_;
  bool version_agreed_ = false;  // in this connection
  Intervals intervals_;
  Framer framer_;

  std::optional<uint16_t> session_id_;
  std::optional<uint32_t> serial_;
  bool reset_pending_ = false;  // the query out is a Reset Query
  bool want_reset_ = false;     // the next query must be a Reset Query
  bool first_query_deferred_ = false;  // first_query_deferred()
  bool reconnect_now_ = false;  // dial again at once after this close (version fallback)

  std::optional<Time> reconnect_at_;
  std::optional<Time> query_at_;  // refresh, or retry after No Data Available
  std::optional<Time> expire_at_;
  std::optional<Time> answer_by_;  // the query out must be answered in full by then
  std::optional<Time> answered_at_;  // the last End of Data taken, for notify_gap

  std::vector<Vrp> vrps_;
  std::set<RouterKey> keys_;
  std::vector<Aspa> aspas_;
  // What keys_ and aspas_ hold, kept as they change (commit_keys,
  // commit_aspas, drop_keys_and_aspas) so that the check on each PDU and
  // held_bytes() walk nothing.
  size_t key_records_ = 0;   // router_key_records() over keys_
  size_t key_bytes_ = 0;     // held_key_bytes() over keys_: node, key, SPKI
  size_t aspa_records_ = 0;  // ASPAs and their providers
  size_t aspa_bytes_ = 0;    // the providers' capacity, in bytes

  // The answer being received.
  uint16_t pending_session_ = 0;
  std::vector<std::pair<Vrp, bool>> pending_;  // (record, announce) in arrival order
  std::vector<std::pair<RouterKey, bool>> pending_keys_;
  std::vector<std::pair<Aspa, bool>> pending_aspas_;
  size_t pending_providers_ = 0;  // providers in pending_aspas_, for max_vrps
  size_t pending_provider_bytes_ = 0;  // their capacity, in bytes
  size_t pending_key_records_ = 0;     // router_key_records() over pending_keys_
  size_t pending_key_bytes_ = 0;       // SPKI capacity over pending_keys_
  // What the pending ASPA operations do to the ASPAs in force (to none,
  // for a reset): `changed` new or replaced, sorted by customer; `gone`
  // customers, sorted; `records` what the ASPAs will count. Changes
  // nothing held; false after sending an Error Report.
  bool plan_aspas(bool reset, std::vector<Aspa>& changed, std::vector<uint32_t>& gone, size_t& records,
                  ClientActions& out);
  // Make the planned change and fill the update's key and ASPA parts.
  void commit_keys(bool reset, std::vector<RouterKey> keys_now, ApplyUpdate& up);
  void commit_aspas(bool reset, std::vector<Aspa> changed, std::vector<uint32_t> gone, ApplyUpdate& up);
  void drop_keys_and_aspas();
};

std::string_view state_name(Client::State s);

}  // namespace petrel::rpki
