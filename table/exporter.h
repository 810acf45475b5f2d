// One peer's exporter: it follows the table's journals, works out what
// the peer should hold for each changed prefix (the best route through the
// export rules of export.h and the peer's export filter), keeps the
// Adj-RIB-Out (what the peer was sent or is about to be sent) and writes
// the UPDATE messages that bring the peer there (docs/export.md). No I/O:
// the session driver hands the bytes to the socket.
//
// - Only changes go out: a prefix whose outcome is what the peer already
//   holds sends nothing.
// - Changes collapse: while the socket is busy, the exporter does not
//   write, and a prefix that changes several times goes out once, in its
//   latest state.
// - Prefixes with the same outgoing attribute set are packed into one
//   UPDATE up to the session's message size (codec::UpdateBuilder).
// - After the initial table (the follower's first resynchronisation of
//   every shard), End-of-RIB for each family (RFC 4724).
// - ROUTE-REFRESH (RFC 2918): everything held is sent again, between a
//   BoRR and an EoRR when enhanced route refresh was negotiated
//   (RFC 7313). A request only marks the family; the Adj-RIB-Out is walked
//   in slices as the socket takes the bytes, so a refresh costs the same
//   memory whatever the number of requests: those that come before the
//   walk starts join it, those that come during it ask for one more walk
//   after it (what went out before the request may have been read under
//   the peer's old policy), however many they are.
// - A route whose attributes do not fit in one UPDATE for this peer
//   (4096 octets without RFC 8654 extended messages) is not announced,
//   and an earlier version the peer holds is withdrawn; it is counted
//   (`oversized`) and the first one is kept for the daemon to report.
// - ADD-PATH send (RFC 7911): for a family where it was negotiated, the
//   best n paths of each prefix in best-path order, each path identified
//   by its source (the source's table slot and path identifier), so an
//   identifier is stable while its path exists.
// - A route-server client (RFC 7947 section 2.3) without ADD-PATH: when
//   the best route may not go to it, the best of the paths that may.
//
// Outgoing attribute sets are interned in an interner shared by every
// exporter, so peers with the same outcome share one copy. An exporter
// lives on its session's worker thread; only the counters are read from
// other threads.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "codec/types.h"
#include "codec/update_builder.h"
#include "table/export.h"
#include "table/policy.h"
#include "table/flat_map.h"
#include "table/prefix_map.h"
#include "table/table.h"

namespace petrel::table {

// The export gate's last part for one route, shared by the exporter and
// GET /api/routes/{prefix}/explain?peer=: the rules of BGP (export.h),
// then the export policy's changes of `verdict` (an accepted one).
Exported export_with_changes(const ExportTarget& to, const ExportSource& from, codec::Family f,
                             const codec::AttributeSet& src, const PolicyChain* policy, const PolicyVerdict& verdict);
// The facts an export policy asks of a route besides its attributes.
RouteFacts export_facts(const net::Prefix& p, const PeerInfo& source, Validation v, AspaState aspa);

struct ExporterSetup {
  ExportTarget target;
  const PolicyChain* filter = nullptr;  // nullptr: everything the rules allow
  bool send_nothing = false;       // export "none" or RFC 8212: only End-of-RIB
  codec::SessionParams params;     // of the session (4-octet AS, ADD-PATH, message size)
  codec::FamilySet families;       // negotiated families to send
  bool enhanced_route_refresh = false;
  // ADD-PATH send (RFC 7911), for the families in params.add_path_send:
  // the best `add_path_max` paths of each prefix (0: every path), each
  // with a path identifier that stays the same while the path exists.
  uint32_t add_path_max = 0;
  // Route refresh: routes a walk of the Adj-RIB-Out queues at a time.
  size_t refresh_slice = 4096;
  // Routes of shards read whole (the initial table, a resynchronisation)
  // put in the write queue at a time, about (exporter.cpp, "bulk").
  size_t bulk_part = 131072;
  // An update group's exporter (export_group.h): it works for every member
  // at once, so the export rules run without a member's split horizon
  // (target.slot is not used), each UPDATE carries the routes of one
  // source (the table slot they came from) and every message written is
  // described by a StreamMark, for the members to choose what is theirs.
  bool shared = false;
};

// A table slot no route comes from.
inline constexpr uint16_t kNoSource = 0xFFFF;
// In a shared exporter for route-server clients, the path identifier of
// the Adj-RIB-Out route that holds, for the member whose own route is the
// best (its Route::peer), the best path that is not its own (RFC 7947
// section 2.3: its own route hides no other).
inline constexpr uint32_t kOtherPathId = 0xFFFFFFFF;

// A run of whole messages a shared exporter wrote, ending at `end` (an
// offset in the buffer pump() was given).
struct StreamMark {
  enum class Kind : uint8_t {
    kAnnounce,  // routes of `source`: for every member but that one
    kWithdraw,  // for every member
    kOnly,      // withdrawals for member `source` alone: its own route became
                // the best, so what it was sent of the prefix goes (or the
                // other path it was sent in place of its own went)
    kOnlyAnnounce,  // route-server clients: for member `source` alone, the
                    // best path that is not its own where the best is
    kEndOfRib,  // End-of-RIB of every family, once
  };
  uint32_t end = 0;
  uint16_t source = kNoSource;
  Kind kind = Kind::kAnnounce;
  FamilyIndex family = 0;
  uint32_t prefixes = 0;
  uint32_t messages = 0;
};

// A member's walk of a shared exporter's Adj-RIB-Out (Exporter::walk).
struct MemberWalk {
  codec::FamilySet families;  // left to walk
  size_t cursor = 0;
  size_t capacity = 0;  // of the map the cursor counts in
  bool started = false;
};

struct ExporterCounters {
  std::array<std::atomic<uint64_t>, kFamilies> advertised{};  // paths the peer holds from us
  std::atomic<uint64_t> updates{0};        // UPDATE messages written
  std::atomic<uint64_t> announced{0};      // prefixes announced (each time)
  std::atomic<uint64_t> withdrawn{0};      // prefixes withdrawn
  std::atomic<uint64_t> filtered{0};       // routes the export filter refused
  std::atomic<uint64_t> resyncs{0};        // times the follower fell behind a journal
  // Routes not announced because their attributes cannot go in one UPDATE
  // for this peer (each time one is refused; an earlier version the peer
  // held is withdrawn).
  std::atomic<uint64_t> oversized{0};
  std::atomic<uint64_t> refresh_requests{0};  // ROUTE-REFRESH requests of negotiated families
  std::atomic<uint64_t> refreshes{0};         // walks of the Adj-RIB-Out they led to
};

// What became of a ROUTE-REFRESH request.
enum class RefreshOutcome : uint8_t {
  kIgnored,    // a family not negotiated, or export "none"
  kQueued,     // a walk of the Adj-RIB-Out will follow
  kCoalesced,  // joined a walk already owed
};

// The first route refused for its size, for the daemon's log line.
struct OversizedRoute {
  net::Prefix prefix;
  codec::Family family;
  size_t attribute_bytes = 0;  // its attributes as this session encodes them
  size_t max_message = 0;      // the session's message size
  std::string_view reason;     // the encoder's
};

class Exporter {
 public:
  Exporter(Table& table, Interner& out_sets, ExporterSetup setup);
  ~Exporter();
  Exporter(const Exporter&) = delete;
  Exporter& operator=(const Exporter&) = delete;

  // Reads what the journals have (up to max_events per shard), then writes
  // UPDATEs into `out` until it holds `budget` more octets or nothing is
  // left to send, in at most 8 rounds of reading and writing (so one call
  // stays short). True when work remains (call again once `out` drained).
  bool pump(std::vector<std::byte>& out, size_t budget, size_t max_events = 1024);

  // A ROUTE-REFRESH for family f: every prefix the peer holds from us goes
  // again, from pump(), once End-of-RIB is out (RFC 7313 section 4: no
  // BoRR before it), in slices of setup.refresh_slice routes: BoRR first when
  // enhanced route refresh is on, the EoRR after the last of them. Requests
  // while one is owed coalesce (RefreshOutcome). Ignored for a family not
  // negotiated (RFC 2918 section 4).
  RefreshOutcome refresh(codec::Family f);

  // A new export filter (a configuration reload). Every prefix is looked
  // at again through it, as in a resynchronisation of every shard, so only
  // the difference goes out: withdrawals for what it now refuses,
  // announcements for what it now lets through. send_nothing: export
  // "none" (what the peer holds is withdrawn). `filter` must stay valid
  // while the exporter uses it.
  void set_filter(const PolicyChain* filter, bool send_nothing);

  // True once End-of-RIB went out for every family.
  [[nodiscard]] bool initial_done() const { return initial_sent_; }
  [[nodiscard]] const ExporterCounters& counters() const { return counters_; }
  // The first route refused for its size, if any (on the exporter's thread).
  [[nodiscard]] const std::optional<OversizedRoute>& first_oversized() const { return first_oversized_; }
  // Prefixes queued and not yet written.
  [[nodiscard]] size_t pending() const;

  // ---- a shared exporter (setup.shared), under its group's lock
  // Where write() describes what it wrote (nullptr: nowhere).
  void set_marks(std::vector<StreamMark>* marks) { marks_ = marks; }
  // Routes of family f from `source` that went out and did not change
  // since: what a member that is `source` was not sent of what the group
  // advertises.
  [[nodiscard]] uint64_t advertised_from(uint16_t source, FamilyIndex f) const {
    return source < by_source_.size() ? by_source_[source][f] : 0;
  }
  // Routes of family f that went out for member `member` alone
  // (kOtherPathId) and did not change since (counters().advertised
  // leaves them out).
  [[nodiscard]] uint64_t advertised_for(uint16_t member, FamilyIndex f) const {
    return member < other_for_.size() ? other_for_[member][f] : 0;
  }
  // A member's walk of the Adj-RIB-Out: announces, with the member's own
  // builder, every route it should hold (all but those from `exclude`), in
  // slices, until `out` grew by `budget`. While any walk is open
  // (begin_walk .. end_walk) emptied entries are kept, so no entry moves
  // under a cursor. True when the walk is done. `announced` counts the
  // prefixes, `messages` the UPDATEs.
  void begin_walk() { ++walkers_; }
  void end_walk();
  bool walk(MemberWalk& w, uint16_t exclude, codec::UpdateBuilder& builder, std::vector<std::byte>& out,
            size_t budget, uint64_t& announced, uint64_t& messages);
  // Takes `from`'s Adj-RIB-Out (a group's, the member `exclude` being
  // caught up with its stream) as what this exporter's peer holds: a
  // member leaving its group for an exporter of its own keeps sending
  // only differences. Routes from `exclude` are left out (the member was
  // never sent them); routes with a change not written yet are held as
  // "some version": whatever is wanted next goes out.
  // initial_sent: End-of-RIB went out already (else it follows the
  // first reading of the table, as for a new exporter).
  void adopt(const Exporter& from, uint16_t exclude, bool initial_sent);

 private:
  // The Adj-RIB-Out entry's route: attrs = the set the peer should hold
  // (nullptr: nothing), flags below.
  static constexpr uint16_t kQueued = 1;      // a change not written yet
  static constexpr uint16_t kAdvertised = 2;  // the peer holds some version
  // Queued in bulk (kQueued too): marked in its entry, not in a Group yet
  // (PerFamily::bulk).
  static constexpr uint16_t kBulk = 8;
  struct Group {
    Attrs* attrs = nullptr;  // one reference held
    uint16_t source = 0;     // shared: the slot the routes come from
    bool other = false;      // kOtherPathId routes, for member `source` alone
    // With our path identifier (0 without ADD-PATH), packed: an IPv4
    // prefix in 3 words (address, length, identifier), an IPv6 one in 6,
    // where a NlriPrefix takes 24 octets for either (the initial table is
    // queued whole, to pack prefixes of one set into one UPDATE across
    // shards: 1M of them were 24 MB).
    std::vector<uint32_t> prefixes;
  };
  // One path the peer should hold: our identifier and the outgoing set
  // (one reference).
  struct Want {
    uint32_t id;
    Attrs* attrs;
    uint16_t source = 0;  // shared: the table slot of the route (Route::peer)
  };
  struct QueueKey {
    Attrs* attrs = nullptr;
    uint16_t source = 0;
    bool other = false;  // kOtherPathId routes: `source` is the member they are for
    friend bool operator==(const QueueKey&, const QueueKey&) = default;
  };
  struct QueueKeyTraits {
    static QueueKey empty() { return {}; }
    static uint64_t hash(const QueueKey& k) {
      return (reinterpret_cast<uintptr_t>(k.attrs) >> 4) ^ (uint64_t{k.source} << 40) ^ (uint64_t{k.other} << 60);
    }
  };
  struct PerFamily {
    std::unique_ptr<PrefixMap<Key4>> v4;
    std::unique_ptr<PrefixMap<Key6>> v6;
    FlatMap<QueueKey, uint32_t, QueueKeyTraits> group_of;  // (attrs, source) -> index in groups
    std::vector<Group> groups;
    std::vector<codec::NlriPrefix> withdrawals;
    // Shared: a prefix whose route moved to another source after some
    // version went out; that source's member holds a version from
    // someone else, and is not sent the new one (its own): a withdrawal
    // for it alone (StreamMark::Kind::kOnly).
    struct Only {
      codec::NlriPrefix prefix;
      uint16_t source;
    };
    std::vector<Only> only;
    // Bulk: the routes of shards read whole (the initial table, a
    // resynchronisation) are only marked kBulk in the Adj-RIB-Out when
    // settled, not put in groups: a queue of the whole table was about 25
    // MB beside the Adj-RIB-Out that holds the same prefixes and sets.
    // write() turns them into groups a part at a time (parts by the hash
    // of the group's key, so every prefix of one outgoing set is in one
    // part and still packs into as few UPDATEs as from one queue): a scan
    // of the map per part, a part's worth of groups held at once.
    size_t bulk = 0;        // routes marked kBulk
    uint32_t bulk_part = 0;   // the next part to turn into groups
    uint32_t bulk_parts = 1;  // parts of this round (set when part 0 starts)
    // Route refresh: kPending until pump() starts the walk, kWalking from
    // the BoRR to the EoRR. The cursor is a slot of the family's map: while
    // it walks, emptied entries stay (erase would move entries behind it)
    // and a grown map starts it over.
    enum class Refresh : uint8_t { kNone, kPending, kWalking };
    Refresh refresh = Refresh::kNone;
    bool refresh_again = false;  // a request during the walk: another one after it
    bool walk_done = false;      // every slot seen; the EoRR follows the queue
    bool empties = false;        // entries emptied during the walk, not erased yet
    size_t cursor = 0;
    size_t walk_capacity = 0;    // the map's capacity the cursor counts in
  };
  // What the export rules read of a route's source (PeerInfo without the
  // name and address: a full table's worth of these is held at once).
  struct Source {
    uint32_t router_id = 0;
    bool internal = false, rr_client = false, local = false;
    [[nodiscard]] PeerInfo info() const;
    static Source of(const PeerInfo& p) { return {p.router_id, p.internal, p.rr_client, p.local}; }
  };
  // A route the follower handed over, copied out of the shard's lock.
  struct Seen {
    net::Prefix prefix;
    FamilyIndex family;
    Attrs* attrs;  // one reference held; nullptr: no best route
    Source source;
    uint32_t slot;
    uint16_t shard;  // the table's shard of the prefix
    Validation validation = Validation::kUnchecked;  // the route's, for the export policy
    AspaState aspa = AspaState::kUnchecked;
  };

  // Nothing queued (cheaper than pending() == 0: pump asks every round).
  [[nodiscard]] bool queue_empty() const;
  // End-of-RIB for every family sent (RFC 4724), once.
  void end_of_rib(std::vector<std::byte>& out);
  void take(const FollowEvent& ev);
  void settle(std::vector<Seen>& seen);
  // Entries of family f's Adj-RIB-Out map; room for n of them.
  [[nodiscard]] size_t adj_out_size(FamilyIndex f) const;
  void reserve(FamilyIndex f, size_t n);
  void forget_shard(size_t shard);
  // The set `src` from `from` goes out with to this peer, interned (one
  // reference for the caller), or nullptr.
  Attrs* outgoing(const Seen& s);
  // The best `max_paths` (0: all) of s's prefix's paths that may go to the
  // peer, in best-path order, with ADD-PATH identifiers; `refused`: a path
  // already found not to (not asked again), or nullptr.
  // (Paths from table slot `not_from` are left out.)
  void ranked(const Seen& s, std::vector<Want>& wants, size_t max_paths, const Seen* refused,
              uint32_t not_from = UINT32_MAX);
  // Makes the Adj-RIB-Out entry of p hold exactly `wants` (adopting their
  // references), queueing what changed.
  void set(FamilyIndex f, const net::Prefix& p, std::vector<Want>& wants);
  void queue(PerFamily& pf, const net::Prefix& p, Route& r);
  // Puts route r (queued, with a set) in its group.
  void enqueue(PerFamily& pf, const net::Prefix& p, const Route& r);
  // A route leaves the bulk (written into a group, changed or removed).
  static void unbulk(PerFamily& pf, Route& r);
  // Turns the next part of family f's bulk into groups (write()).
  void bulk_to_groups(FamilyIndex f);
  template <typename K>
  Route* find(PerFamily& pf, const net::Prefix& p, uint32_t id);
  size_t write(std::vector<std::byte>& out, size_t budget);
  // Route refresh: starts owed walks (the BoRR) and queues the next slice
  // of each (always in a pump's first round, later only while the queue is
  // short); the EoRR once a walk is done and its routes written.
  void feed_refreshes(std::vector<std::byte>& out, bool first_round);
  void end_refresh_if_done(PerFamily& pf, codec::Family fam, std::vector<std::byte>& out);
  [[nodiscard]] bool refresh_owed() const;
  // Erases an entry left without routes, or keeps it until the family's
  // refresh walk is done.
  template <typename M, typename E>
  void erase_entry(PerFamily& pf, M& m, E* e);
  // Announcements that did not fit: not announced, withdrawn if an earlier
  // version was, counted.
  void refuse_oversized(FamilyIndex f, const Attrs& attrs, std::span<Route* const> routes,
                        std::span<const codec::NlriPrefix> nlri, std::string_view reason,
                        std::vector<std::byte>& out);
  void clear_cache();
  // Frees what the queue and the memo grew to in a burst, once drained.
  void release_scratch();
  // Shared: a route that went out and did not change since is about to
  // change (by_source_ counts those per source).
  void unsettle(const Route& r, FamilyIndex f);
  void mark(StreamMark::Kind kind, uint16_t source, FamilyIndex f, size_t prefixes, size_t messages,
            const std::vector<std::byte>& out);
  // Erases the entries kept empty for a walk, once no walk is open.
  void sweep_empties();

  Table& table_;
  Interner& out_sets_;
  ExporterSetup setup_;
  codec::UpdateBuilder builder_;
  Follower follower_;
  std::array<PerFamily, kFamilies> fam_;
  std::vector<Seen> seen_;
  std::vector<Want> wants_;  // scratch
  std::vector<Route*> written_;  // scratch of write(): the routes of the UPDATE being built
  std::optional<OversizedRoute> first_oversized_;
  std::vector<uint8_t> resyncing_;  // per shard: adj-out entries not confirmed yet
  std::vector<uint8_t> ever_held_;  // per shard: the Adj-RIB-Out may hold some of its prefixes
  std::vector<uint8_t> ever_read_;  // per shard: read whole once
  // Everything export_route reads besides the target.
  struct CacheKey {
    const Attrs* src = nullptr;  // nullptr: a free slot
    uint32_t router_id = 0;
    uint32_t slot = 0;
    FamilyIndex family = 0;
    uint8_t kind = 0;  // internal, reflection client, local: one bit each
    uint16_t verdict = 0;  // the export policy's changes: verdicts_[verdict - 1]; 0: none
    friend bool operator==(const CacheKey&, const CacheKey&) = default;
  };
  struct CacheTraits {
    static CacheKey empty() { return {}; }
    static uint64_t hash(const CacheKey& k) {
      return reinterpret_cast<uintptr_t>(k.src) ^ (uint64_t{k.router_id} << 32 | k.slot << 8 | k.kind) ^
             (uint64_t{k.family} << 56) ^ (uint64_t{k.verdict} << 40);
    }
  };
  static CacheKey cache_key(const Seen& s) {
    return {s.attrs, s.source.router_id, s.slot, s.family,
            static_cast<uint8_t>(s.source.internal | s.source.rr_client << 1 | s.source.local << 2)};
  }
  // Outgoing set per source set and source: both references held, so an
  // address is never reused while it is a key.
  FlatMap<CacheKey, Attrs*, CacheTraits> cache_;
  // The export policy's verdicts with changes seen, numbered for the cache
  // key (bounded: past kMaxVerdicts, such routes bypass the cache).
  static constexpr size_t kMaxVerdicts = 4096;
  // The memo is emptied at this many entries, before its slot array
  // doubles past 2^18 slots (8 MiB; FlatMap grows at seven eighths full).
  static constexpr size_t kMaxCache = (size_t{1} << 18) * 7 / 8 - 1;
  // The memo's size against the table's sets is checked at this size.
  static constexpr size_t kCacheSlack = 1024;
  size_t cache_check_at_ = 0;
  std::vector<PolicyVerdict> verdicts_;
  PolicyChain::Prepared policy_scratch_;
  std::vector<StreamMark>* marks_ = nullptr;
  std::vector<std::array<uint64_t, kFamilies>> by_source_;  // shared: settled routes per source slot
  std::vector<std::array<uint64_t, kFamilies>> other_for_;  // shared: settled kOtherPathId routes per member
  uint32_t walkers_ = 0;       // members' walks open
  bool bulk_ = false;          // settle() is settling shards read whole: queue() marks (PerFamily::bulk)
  bool primed_ = false;        // the first read (the whole table) is done
  bool initial_sent_ = false;  // End-of-RIB written
  ExporterCounters counters_;
};

}  // namespace petrel::table
