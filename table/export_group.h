// Update groups (docs/export.md, "Update groups"): peers whose export
// outcome is the same share one export pass. A group is one shared
// Exporter (exporter.h): it follows the table once, applies the export
// rules and filter once, keeps one Adj-RIB-Out, and encodes each UPDATE
// once into the group's stream, a list of byte chunks. Each member keeps
// only a cursor into the stream and queues the messages that are its own
// (all but the announcements of its own routes, which are for the others)
// for its socket by reference: its send queue shares the chunk's bytes,
// which go when every queue sent them. So a further member of a group
// costs a cursor, not a per-prefix map nor a copy of the stream, and a
// full table is encoded once for the whole group.
//
// - The group key is what decides the routes and the bytes a member gets:
//   the export target (our AS, cluster id, internal / reflector client /
//   route-server client, our next hops on the session), the filter (by
//   what it does, not by name), export "none", the session's encoding
//   (4-octet AS, extended messages, RFC 8950 next hops) and families. A
//   peer with ADD-PATH send is a group of its own.
// - A member that joins a group reads the stream from its start while the
//   group keeps it whole (its first 8 MiB: a route server's table, the
//   members coming up one after another); once the group has written
//   more, a newcomer is sent the group's Adj-RIB-Out by a walk (encoded
//   for it alone), then goes on from the stream's position when it
//   joined.
// - The group writes more only when a member has read everything: a slow
//   member never holds the others back; one that falls kMaxLag behind the
//   stream is told (too_slow()), and the session ends as for a peer that
//   does not read.
// - ROUTE-REFRESH is a walk of the member's own (with BoRR/EoRR); a new
//   export filter moves the member out of its group into an exporter of
//   its own that takes the group's Adj-RIB-Out as what the peer holds, so
//   only the difference is sent.
//
// Thread-safe: members of one group live on any worker; every operation on
// a group takes its lock.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "crates/sendq/send_queue.h"
#include "table/exporter.h"

namespace petrel::table {

class ExportGroup;
class ExportGroups;

class GroupMember {
 public:
  ~GroupMember();
  GroupMember(const GroupMember&) = delete;
  GroupMember& operator=(const GroupMember&) = delete;

  // As Exporter::pump: writes this member's messages into `out` until it
  // holds `budget` more octets or nothing is left; true when work remains.
  bool pump(std::vector<std::byte>& out, size_t budget);
  // The same into a send queue, where the group's stream is not copied:
  // the queue shares the group's encoded bytes (encode once, the same
  // buffer written to every member's socket) and keeps them until sent.
  bool pump(sendq::SendQueue& out, size_t budget);
  // As Exporter::refresh: a walk of the group's Adj-RIB-Out for family f.
  RefreshOutcome refresh(codec::Family f);
  // A new export filter: the member leaves its group (exporter.h's
  // set_filter on an exporter of its own). `filter` is kept alive.
  void set_filter(std::shared_ptr<const PolicyChain> filter, bool send_nothing);

  [[nodiscard]] bool initial_done() const;
  [[nodiscard]] const ExporterCounters& counters() const { return counters_; }
  [[nodiscard]] const std::optional<OversizedRoute>& first_oversized() const { return first_oversized_; }
  // The member fell more than the groups' max_lag behind its group's
  // stream.
  // Any thread: the group marks a member it left behind, whether or not
  // the member asks for more (a peer whose socket is full does not).
  [[nodiscard]] bool too_slow() const { return too_slow_.load(std::memory_order_relaxed); }
  // The members of its group now (1: an exporter of its own).
  [[nodiscard]] size_t group_size() const;

 private:
  friend class ExportGroups;
  friend class ExportGroup;
  GroupMember(ExportGroups& groups, std::shared_ptr<ExportGroup> group, ExporterSetup setup,
              std::shared_ptr<const PolicyChain> filter, uint16_t slot);
  // Where pump writes: the member's own bytes (a walk's, refresh markers)
  // into `bytes`; the group's stream copied there too, or shared into
  // `queue` (whose tail() `bytes` then is).
  struct Out {
    std::vector<std::byte>& bytes;
    sendq::SendQueue* queue;
    [[nodiscard]] size_t size() const { return queue ? queue->unsent() : bytes.size(); }
  };
  bool pump(Out& out, size_t budget);
  // Under the group's lock.
  void copy_stream(Out& out, size_t budget);
  void walk_step(std::vector<std::byte>& out, size_t budget);
  void sync_counters();
  void leave();

  ExportGroups& groups_;
  std::shared_ptr<ExportGroup> group_;
  ExporterSetup setup_;  // the member's (target.slot its own)
  std::shared_ptr<const PolicyChain> filter_;
  uint16_t slot_;
  codec::UpdateBuilder builder_;
  uint64_t pos_ = 0;  // in the group's stream
  // The walk of the Adj-RIB-Out: on joining a group that wrote already,
  // and for ROUTE-REFRESH (one family at a time).
  std::optional<MemberWalk> walk_;
  bool walk_is_refresh_ = false;
  codec::Family refresh_family_{};
  codec::FamilySet refresh_owed_, refresh_again_;
  bool eor_sent_ = false;
  bool eor_owed_ = false;  // after the joining walk, End-of-RIB is the member's to send
  std::atomic<bool> too_slow_{false};  // set under the group's lock; the stream no longer waits for it
  // A new filter waits for the member to have read the whole stream.
  std::optional<std::pair<std::shared_ptr<const PolicyChain>, bool>> switch_to_;
  ExporterCounters counters_;
  std::optional<OversizedRoute> first_oversized_;
  uint64_t oversized_seen_ = 0;  // of the group's counter, when last read
};

// Every group; members join through it. Thread-safe.
class ExportGroups {
 public:
  // max_lag: how far behind its group's stream a member may fall.
  static constexpr uint64_t kMaxLag = uint64_t{64} << 20;
  // history: a group keeps its whole stream from its start while it is
  // no longer than this, so a member that joins meanwhile reads it from
  // the start (copies, no encoding) instead of being walked through the
  // Adj-RIB-Out.
  static constexpr uint64_t kHistory = uint64_t{8} << 20;
  ExportGroups(Table& table, Interner& out_sets, uint64_t max_lag = kMaxLag, uint64_t history = kHistory)
      : table_(table), out_sets_(out_sets), max_lag_(max_lag), history_(history) {}
  ~ExportGroups();
  ExportGroups(const ExportGroups&) = delete;
  ExportGroups& operator=(const ExportGroups&) = delete;

  // A member for the peer in table slot `slot` with `setup` (setup.filter
  // is taken from `filter`, which the group keeps alive).
  std::unique_ptr<GroupMember> join(ExporterSetup setup, std::shared_ptr<const PolicyChain> filter, uint16_t slot);

  struct Stats {
    size_t groups = 0;
    size_t members = 0;
    uint64_t messages = 0;      // UPDATEs encoded by groups (once for all their members)
    uint64_t stream_bytes = 0;  // held in the groups' streams now
  };
  [[nodiscard]] Stats stats() const;
  // Whether two setups (and filters) give the same outcome: one group.
  static bool same_group(const ExporterSetup& a, const PolicyChain* fa, const ExporterSetup& b, const PolicyChain* fb);

 private:
  friend class GroupMember;
  // A group of one (an exporter of its own) for `setup`.
  std::shared_ptr<ExportGroup> make(const ExporterSetup& setup, std::shared_ptr<const PolicyChain> filter,
                                    bool alone);

  Table& table_;
  Interner& out_sets_;
  const uint64_t max_lag_;
  const uint64_t history_;
  mutable std::mutex mu_;
  std::vector<std::weak_ptr<ExportGroup>> groups_;
};

}  // namespace petrel::table
