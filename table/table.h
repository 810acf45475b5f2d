// The routing table: every peer's Adj-RIB-In and the Loc-RIB in one
// sharded structure. A prefix lives in one shard (by hash); its entry holds
// every route to it (per peer and path identifier) and which one is best.
//
// Writers are the session workers: a batch (one UPDATE) takes each shard's
// lock once, for all of its prefixes in that shard. Each shard appends what
// changed to its journal (the prefix, whether its best route changed);
// followers (exporters, the kernel installer, the event stream) read the
// journals at their own pace with their own cursors, and a follower that
// falls behind a journal's retention is resynchronised from the shard.
// Followers do not poll: each subscribes (Table::subscribe) and is woken
// after a write appended to a journal.
//
// Attribute sets are interned (table/attrs.h); a route is 16 octets.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <span>
#include <vector>

#include "codec/nlri.h"
#include "codec/types.h"
#include "crates/journal/journal.h"
#include "crates/net/ip.h"
#include "table/attrs.h"
#include "table/best_path.h"
#include "table/nexthop.h"
#include "table/prefix_map.h"

namespace petrel::codec {
class UpdateView;
}

namespace petrel::table {

// RPKI origin validation state of a route (RFC 6811 section 2), kept in
// Route::flags. kUnchecked: no validator (RPKI not configured).
enum class Validation : uint8_t { kUnchecked = 0, kNotFound = 1, kValid = 2, kInvalid = 3 };

inline Validation validation_of(const Route& r) {
  return static_cast<Validation>((r.flags & Route::kValidationMask) >> Route::kValidationShift);
}

// ASPA verification state of a route (draft-ietf-sidrops-aspa-verification),
// kept in Route::flags. kUnchecked: no check for this route (no validator,
// or its peer is internal or has no role: PeerInfo::aspa).
enum class AspaState : uint8_t { kUnchecked = 0, kUnknown = 1, kValid = 2, kInvalid = 3 };

inline AspaState aspa_of(const Route& r) {
  return static_cast<AspaState>((r.flags & Route::kAspaMask) >> Route::kAspaShift);
}

// The table asks it the validation state of each route it stores, under
// the shard's lock (so it must be quick and take no lock of its own).
class Validator {
 public:
  virtual ~Validator() = default;
  [[nodiscard]] virtual Validation validate(const net::Prefix& p, const Attrs& a) const = 0;
  // The same for several routes, out[i] for routes[i]: Table::apply asks
  // for a shard's announcements of a batch at once, so that a validator
  // can overlap their lookups. The default asks validate() for each.
  struct Query {
    const net::Prefix* prefix;
    const Attrs* attrs;
  };
  virtual void validate_batch(std::span<const Query> routes, std::span<Validation> out) const {
    for (size_t i = 0; i < routes.size(); ++i) out[i] = validate(*routes[i].prefix, *routes[i].attrs);
  }
  // The ASPA state of a route with these attributes by procedure `check`
  // (never kNone). The default: no ASPA data, unchecked.
  [[nodiscard]] virtual AspaState verify_path(const Attrs& /*a*/, AspaCheck /*check*/) const {
    return AspaState::kUnchecked;
  }
  // The same two of an attribute set not interned (yet): for import
  // policies that ask a route's states before it enters the table.
  [[nodiscard]] virtual Validation validate_set(const net::Prefix& /*p*/, const codec::AttributeSet& /*a*/) const {
    return Validation::kUnchecked;
  }
  [[nodiscard]] virtual AspaState verify_set(const codec::AttributeSet& /*a*/, AspaCheck /*check*/) const {
    return AspaState::kUnchecked;
  }
};

struct TableOptions {
  size_t shards = 8;
  size_t journal_retention = 32768;  // changes kept per shard (a full feed overran 8192 20-50 times)
  BestPathOptions best;
  const Validator* validator = nullptr;  // outlives the table
  // Resolves next hops (table/nexthop.h); nullptr: every next hop is
  // resolved at cost 0. Outlives the table.
  const NexthopResolver* nexthops = nullptr;
  bool reject_invalid = false;           // invalid routes take no part in best path
  bool reject_aspa_invalid = false;      // ASPA-invalid routes take no part in best path
  // Threads that share a peer's withdrawal (remove_peer, sweep_stale):
  // the caller and sweep_threads - 1 helpers the table starts on first
  // use, each sweeping whole shards (one thread per shard at a time, so
  // each journal keeps its order). 0: min(2, the hardware's threads).
  size_t sweep_threads = 0;
  // Withdrawals of fewer routes than this are swept by the caller alone
  // (waking a helper costs more than a small sweep).
  uint64_t parallel_sweep_from = 65536;
  // Prefixes expected in IPv4 and IPv6 unicast: the shards' maps are made
  // this big at once (their memory taken and touched in the constructor)
  // instead of doubling while the first full table comes in; each
  // doubling moves every entry and fills a new array. 0: grow as routes
  // come. A hint only: the maps grow past it as they would.
  size_t expected_ipv4_prefixes = 0;
  size_t expected_ipv6_prefixes = 0;
  // The key of the hashes of what peers choose (the interner's hash of
  // attribute sets, the index of a prefix's many paths): nullopt, the
  // process's random key (HashKey::process); tests fix one.
  std::optional<HashKey> hash_key = std::nullopt;
};

// A family the table holds: codec::kKnownFamilyList's index.
using FamilyIndex = uint8_t;
inline constexpr size_t kFamilies = codec::kKnownFamilies;

inline bool is_v6_family(FamilyIndex f) {
  return codec::kKnownFamilyList[f].afi == static_cast<uint16_t>(codec::Afi::kIpv6);
}

// A prefix as the key of the map it goes in (Key4 or Key6).
template <typename K>
K key_of(const PrefixMap<K>&, const net::Prefix& p) {
  return K::of(p);
}

// One change as a journal records it.
struct Change {
  net::Prefix prefix;
  FamilyIndex family = 0;
  bool best_changed = false;
};

// What a batch did, for the session's counters.
struct BatchResult {
  uint32_t announced = 0;   // routes added or replaced
  uint32_t withdrawn = 0;   // routes removed
  uint32_t not_found = 0;   // withdrawals of routes the table did not hold
  uint32_t duplicates = 0;  // announcements of a route as the table held it (not stale)
  uint32_t best_changes = 0;
  // Announcements of a further path for a prefix that already had the
  // peer's max_paths_per_prefix paths: not taken (PeerInfo).
  uint32_t paths_refused = 0;
};

class Table;
struct BestId;  // table.cpp: which route is best
class SweepPool;
class NexthopRegistry;

// One peer's UPDATEs gathered to be applied together: a session collects
// what one read of its socket brought. Each UPDATE's attribute set is
// interned when it is added; Table::apply then takes each shard's lock once
// for the whole batch, in the order the messages came within each prefix.
class Batch {
 public:
  explicit Batch(Table& t) : table_(&t) {}
  ~Batch() { clear(); }
  Batch(const Batch&) = delete;
  Batch& operator=(const Batch&) = delete;

  // Prefixes one add() gathered, per family (codec::kKnownFamilyList
  // order): the session's counters.
  struct Gathered {
    std::array<uint32_t, kFamilies> announced{}, withdrawn{};
  };
  // One UPDATE: its withdrawals, then its announcements (as withdrawals
  // when treat_as_withdraw or when u.action() is treat-as-withdraw or
  // stronger, RFC 7606). Families the table does not hold
  // are skipped.
  // `set`, when given, is u.attribute_set() already made by the caller.
  Gathered add(const codec::UpdateView& u, bool treat_as_withdraw = false, const codec::AttributeSet* set = nullptr);
  // The same with the announcements' set given by its canonical bytes
  // (valid ones, copied): an import policy's changes written into them.
  Gathered add(const codec::UpdateView& u, bytes::Span canonical) { return add_view(u, false, &canonical); }
  // The same with the parts given separately (tests, benchmarks, tools):
  // `attrs` is needed when `announce` is not empty.
  void add(FamilyIndex f, const codec::AttributeSet* attrs, std::span<const codec::NlriPrefix> announce,
           std::span<const codec::NlriPrefix> withdraw);
  // The same with the announcements' set given by its canonical bytes
  // (valid ones: AttributeSet::from_canonical would take them), which are
  // copied.
  void add(FamilyIndex f, bytes::Span canonical, std::span<const codec::NlriPrefix> announce,
           std::span<const codec::NlriPrefix> withdraw);
  [[nodiscard]] size_t size() const { return ops_.size(); }
  [[nodiscard]] bool empty() const { return ops_.empty(); }
  // Drops what was gathered (and the sets' references) without applying.
  void clear();
  // An empty batch gives back its storage where it grew past `keep_ops`
  // operations: a session that went quiet after a burst (a route server's
  // member, its few hundred routes sent) does not hold it.
  void release_storage(size_t keep_ops);
  // Operations the batch has room for without growing.
  [[nodiscard]] size_t capacity() const { return ops_.capacity(); }

 private:
  friend class Table;
  struct Op {
    net::Prefix prefix;
    uint32_t path_id;
    uint16_t shard;
    FamilyIndex family;
    Attrs* attrs;  // null: a withdrawal
    Validation validation = Validation::kUnchecked;  // set by Table::validate_ops
    AspaState aspa = AspaState::kUnchecked;           // set by Table::validate_ops
  };
  void push(const codec::NlriPrefix& p, FamilyIndex f, Attrs* attrs);
  // add(UpdateView): `canonical`, when given, the announcements' set.
  Gathered add_view(const codec::UpdateView& u, bool treat_as_withdraw, const bytes::Span* canonical);

  // An UPDATE's interned set and the references the batch holds to it:
  // one for each of its announced prefixes (handed to the routes they
  // make, so a route costs no atomic operation of its own), plus one
  // held until the batch is applied.
  struct Held {
    Attrs* attrs;
    uint32_t refs;
  };
  void hold(Attrs* a, uint32_t announced);

  // An added UPDATE's set is interned kInternBehind UPDATEs later
  // (software pipelining): its index slot, asked of the CPU when the
  // UPDATE was added, has come into the cache by then (asked for only
  // while its prefixes were gathered, it had not: the slot's load was
  // most of the interner's time). Its canonical bytes wait in
  // pending_bytes_; its announcements' ops get the set when it is
  // interned, at the latest when the batch is applied.
  struct Pending {
    uint32_t hash;
    uint32_t at, len;       // the bytes in pending_bytes_
    uint32_t first, count;  // the announcements' ops
  };
  static constexpr size_t kInternBehind = 4;
  // The announcements ops_[first...] get the set of these canonical bytes
  // (hash: Interner::hash_of) kInternBehind UPDATEs later.
  void defer(bytes::Span canonical, uint32_t hash, size_t first);
  // Interns the pending sets until at most `left` wait.
  void intern_pending(size_t left);

  Table* table_;
  std::vector<Op> ops_, sorted_;
  std::vector<Held> held_;
  std::vector<Pending> pending_;
  size_t pending_head_ = 0;
  std::vector<std::byte> pending_bytes_;
};

// A route handed to a follower or a reader; valid during the callback.
struct RouteView {
  const Attrs* attrs;
  const PeerInfo* peer;
  uint16_t slot;
  uint32_t path_id;
  bool stale;
  Validation validation = Validation::kUnchecked;
  AspaState aspa = AspaState::kUnchecked;
  // Its next hop (table/nexthop.h): false when it does not resolve (the
  // route takes no part in best path); the interior cost to it (step e).
  bool nexthop_resolved = true;
  uint32_t igp_cost = 0;
};

// One next hop the table's routes use (Table::nexthop_report).
struct NexthopInfo {
  net::IpAddress address;
  // The routes' MP_REACH_NLRI carries an RFC 2545 link-local next hop
  // beside this global one: they count as resolved (cost 0) even when the
  // global address does not resolve (the session's link).
  bool link_local = false;
  NexthopState state;  // as the routes get it (the link-local rule applied)
  uint64_t routes = 0;
};
struct NexthopReport {
  std::vector<NexthopInfo> nexthops;
  uint64_t ineligible_routes = 0;  // routes excluded for an unresolved next hop
};

// A follower's view of one change: the prefix and its best route now
// (none: the prefix has no eligible route left).
struct FollowEvent {
  size_t shard = 0;
  // True for the first event of a resynchronisation of `shard`: the
  // follower forgets what it held of that shard; the shard's whole
  // content follows as events.
  bool resync = false;
  Change change;
  // Its igp_cost is not filled (0): a follower hands the best route on, it
  // does not choose among routes (Table::lookup_all's views carry it).
  std::optional<RouteView> best;
};

class Follower {
 public:
  [[nodiscard]] uint64_t resyncs() const { return resyncs_; }
  // Every shard was handed whole once (the first read is complete).
  [[nodiscard]] bool primed() const {
    for (uint8_t p : primed_)
      if (!p) return false;
    return true;
  }
  // The last read left a shard that must be handed whole (never read, or
  // its journal overran) for a later one: there is more to read even if
  // the journals are quiet.
  [[nodiscard]] bool resync_waiting() const { return resync_waiting_; }

 private:
  friend class Table;
  std::vector<uint64_t> next_;
  std::vector<uint8_t> primed_;
  uint64_t resyncs_ = 0;
  bool resync_waiting_ = false;
};

// A follower's wake-up call, from Table::subscribe. The table calls its
// `wake` after a write (a batch, a sweep's shard, a revalidated shard)
// appended to a journal, outside the shards' locks, on the writer's thread;
// then not again until the follower calls take(), so however many writes
// come before the follower reads, they cost one wake. Moving it keeps the
// subscription; destroying it (or reset()) ends it. The table must outlive
// it.
class Subscription {
 public:
  Subscription() = default;
  ~Subscription() { reset(); }
  Subscription(Subscription&& o) noexcept;
  Subscription& operator=(Subscription&& o) noexcept;
  Subscription(const Subscription&) = delete;
  Subscription& operator=(const Subscription&) = delete;

  // Call before reading the journals: a write that appends after it wakes
  // the follower again (one that appended before it is in what the read
  // finds). True when a wake was owed (woken, or about to be).
  bool take();
  // Ends the subscription: once it returns, `wake` is not running and is
  // not called again.
  void reset();
  [[nodiscard]] explicit operator bool() const { return state_ != nullptr; }

 private:
  friend class Table;
  struct State {
    std::function<void()> wake;
    std::atomic<bool> pending{false};  // woken and not taken yet
  };
  const Table* table_ = nullptr;
  std::unique_ptr<State> state_;
};

class Table {
 public:
  static constexpr size_t kMaxPeers = 4096;

  explicit Table(TableOptions o = {});
  ~Table();
  Table(const Table&) = delete;
  Table& operator=(const Table&) = delete;

  // ---- peers: a slot per established session
  // Fails (nullopt) when all kMaxPeers slots are taken.
  std::optional<uint16_t> add_peer(const PeerInfo& info);
  // Withdraws every route of the peer (all families), frees its slot, and
  // returns how many routes went.
  uint64_t remove_peer(uint16_t slot);
  [[nodiscard]] const PeerInfo& peer(uint16_t slot) const { return peers_[slot].info; }
  // Routes the peer has in the table now, per family.
  [[nodiscard]] uint64_t peer_routes(uint16_t slot, FamilyIndex f) const {
    return peers_[slot].routes[f].load(std::memory_order_relaxed);
  }
  // Prefixes of family f whose best route is the peer's, now.
  [[nodiscard]] uint64_t peer_best(uint16_t slot, FamilyIndex f) const {
    return peers_[slot].best[f].load(std::memory_order_relaxed);
  }
  // Paths refused since the peer's slot was taken (BatchResult::
  // paths_refused summed).
  [[nodiscard]] uint64_t peer_paths_refused(uint16_t slot) const {
    return peers_[slot].paths_refused.load(std::memory_order_relaxed);
  }

  // ---- writes
  // Applies a batch of the peer in `slot` and empties it.
  BatchResult apply(uint16_t slot, Batch& b);
  // One UPDATE at once (a batch of one; see Batch::add).
  BatchResult apply(uint16_t slot, const codec::UpdateView& u, bool treat_as_withdraw = false);
  BatchResult apply(uint16_t slot, FamilyIndex f, const codec::AttributeSet* attrs,
                    std::span<const codec::NlriPrefix> announce,
                    std::span<const codec::NlriPrefix> withdraw);

  // Route refresh and graceful restart: marks the peer's routes of a
  // family stale; an announcement of the route clears the mark (one with
  // the attributes it had changes nothing else: no journal entry, so
  // followers such as exporters and the kernel are not told); the sweep
  // withdraws those still stale. Both return routes affected.
  uint64_t mark_stale(uint16_t slot, FamilyIndex f);
  uint64_t sweep_stale(uint16_t slot, FamilyIndex f);
  // RFC 9494 section 4.2: the peer's routes of family f (its session is
  // down, so all of them stale) become long-lived stale routes: each gets
  // the LLGR_STALE community, which makes it least preferred (best_path.h)
  // and keeps it from peers without LLGR (export.h); it stays stale, so
  // the sweeps above still apply. A route with NO_LLGR is withdrawn
  // instead. One that already carries LLGR_STALE is left as it is.
  struct LongLivedStale {
    uint64_t kept = 0;
    uint64_t dropped = 0;  // NO_LLGR
  };
  LongLivedStale mark_long_lived_stale(uint16_t slot, FamilyIndex f);
  // The peer's routes of family f marked stale and not announced again
  // (nor withdrawn, nor swept) since.
  [[nodiscard]] uint64_t peer_stale(uint16_t slot, FamilyIndex f) const {
    return peers_[slot].stale[f].load(std::memory_order_relaxed);
  }

  // The VRPs changed: asks the validator again about every route whose
  // prefix covered(prefix) says a changed VRP covers, shard by shard, and
  // journals each prefix where a route's state changed (with best path
  // chosen again when reject_invalid). Returns the routes whose state
  // changed.
  uint64_t revalidate(const std::function<bool(const net::Prefix&)>& covered);
  // TableOptions::reject_invalid changed (a reload): best path is chosen
  // again for every prefix with an RPKI-invalid route, shard by shard,
  // and each prefix whose best changed is journalled. Returns how many.
  uint64_t set_reject_invalid(bool on);
  [[nodiscard]] bool reject_invalid() const { return reject_invalid_.load(std::memory_order_relaxed); }
  // The ASPAs changed: asks the validator again about the ASPA state of
  // every checked route whose attributes affected(attrs) says a changed
  // ASPA can concern (an AS of its path is a changed customer), and
  // journals each prefix where a route's state changed (with best path
  // chosen again when reject_aspa_invalid). Returns the routes whose state
  // changed.
  uint64_t reverify_paths(const std::function<bool(const Attrs&)>& affected);
  // These next hops' states changed (the kernel's routes or links did):
  // every route using one of them is made eligible or not and given its
  // interior cost, and best path is chosen again for its prefix, in bulk
  // per next hop, shard by shard; each prefix whose best changed is
  // journalled. Any thread. Returns the routes whose eligibility changed
  // (a cost alone changing counts none, but may move bests). The resolver
  // must give the new states already (a next hop first met meanwhile is
  // asked of it). Next hops no route uses are ignored.
  uint64_t nexthops_changed(std::span<const NexthopUpdate> changed);
  // As set_reject_invalid, for ASPA-invalid routes.
  uint64_t set_reject_aspa_invalid(bool on);
  [[nodiscard]] bool reject_aspa_invalid() const { return reject_aspa_invalid_.load(std::memory_order_relaxed); }

  // ---- reads
  [[nodiscard]] size_t shard_count() const { return shards_.size(); }
  [[nodiscard]] size_t shard_of(const net::Prefix& p) const;
  // TableOptions::expected_ipv4_prefixes / expected_ipv6_prefixes for
  // family f's unicast (0 for any other family).
  [[nodiscard]] size_t expected_prefixes(FamilyIndex f) const {
    if (f == codec::known_index(codec::kIpv4Unicast)) return options_.expected_ipv4_prefixes;
    if (f == codec::known_index(codec::kIpv6Unicast)) return options_.expected_ipv6_prefixes;
    return 0;
  }
  // Every route to a prefix, and the best. f(route, is_best) under the
  // shard's lock. False when the table has no route to the prefix.
  template <typename F>
  bool lookup(FamilyIndex f, const net::Prefix& p, F&& fn) const;
  // The same, all at once: fn(std::span<const RouteView> routes, int best)
  // (best: an index into routes, or -1), under the shard's lock.
  template <typename F>
  bool lookup_all(FamilyIndex f, const net::Prefix& p, F&& fn) const {
    std::vector<RouteView> views;
    int best = -1;
    const Shard& s = *shards_[shard_of(p)];
    std::lock_guard lock(s.mu);
    return s.on_map(f, [&](const auto& m) {
      const auto* e = m.find(key_of(m, p));
      if (!e) return false;
      uint32_t b = e->best();
      auto r = e->routes();
      for (uint32_t i = 0; i < r.size(); ++i) {
        if (i == b) best = static_cast<int>(i);
        views.push_back(view(r[i]));
      }
      fn(std::span<const RouteView>(views), best);
      return true;
    });
  }
  // Every prefix with at least one route: fn(Change-like prefix/family,
  // best or nullopt, all routes). Shard by shard, each under its lock.
  template <typename F>
  void walk(F&& fn) const;
  [[nodiscard]] uint64_t prefixes(FamilyIndex f) const;
  [[nodiscard]] uint64_t routes() const;
  // The next hops the table's routes use, with their states and how many
  // routes use each, and the routes excluded for an unresolved next hop:
  // a walk of the table (each shard under its lock). Empty without a
  // resolver (TableOptions::nexthops).
  [[nodiscard]] NexthopReport nexthop_report() const;
  [[nodiscard]] bool tracks_nexthops() const { return nexthops_ != nullptr; }

  // ---- followers
  // A follower at the journals' current end that first receives the
  // table's whole content (as a resynchronisation of every shard).
  [[nodiscard]] Follower follow() const;
  // Moves the follower to the journals' current end without handing it
  // anything (the table as it is now is its starting point): for a
  // follower with nobody to tell, one lock per shard instead of reading
  // every change, or the whole table after an overrun.
  void skip(Follower& fo) const;
  // Hands the follower up to `max` events per shard (under each shard's
  // lock); returns how many it handed. Of the shards to be handed whole
  // (never handed yet, or whose journal overran the follower's cursor), at
  // most `max_first` are in this call (the others wait for the next, and
  // Follower::resync_waiting() says so): a follower that copies what it is
  // handed need not hold the whole table at once (a slow exporter during a
  // full feed overran all eight journals and copied 1M routes, 48 MB).
  template <typename F>
  size_t read(Follower& fo, size_t max, F&& fn, size_t max_first = SIZE_MAX) const;
  // Calls `wake` after writes append to the journals (see Subscription),
  // on the writers' threads: it must be quick (post to a loop, write an
  // eventfd, notify a condition variable) and must not call the table.
  [[nodiscard]] Subscription subscribe(std::function<void()> wake) const;

  // ---- memory, for metrics and benchmarks
  struct Memory {
    size_t map_bytes = 0;      // slots and route arrays
    size_t journal_bytes = 0;
    size_t attr_bytes = 0;
    size_t attr_sets = 0;
  };
  // Counted as the table changes (cheap: a scrape of a full table's
  // metrics reads a few numbers per shard); with walk, the route arrays
  // are summed entry by entry instead (tests compare the two).
  [[nodiscard]] Memory memory(bool walk = false) const;
  [[nodiscard]] Interner& interner() { return interner_; }
  [[nodiscard]] const BestPathOptions& best_path_options() const { return options_.best; }
  [[nodiscard]] const Validator* validator() const { return options_.validator; }
  // Whether a route a reader was handed may be chosen (and passed on):
  // its next hop resolves, and it is not an RPKI-invalid one under
  // reject_invalid.
  // A reader's route as best-path selection sees it (for ADD-PATH's best
  // N, multipath, "explain").
  [[nodiscard]] Candidate candidate_of(const RouteView& v) const {
    return Candidate{v.attrs, v.peer, v.path_id, v.slot, eligible(v), v.igp_cost};
  }
  [[nodiscard]] bool eligible(const RouteView& v) const {
    return v.nexthop_resolved && !(reject_invalid() && v.validation == Validation::kInvalid) &&
           !(reject_aspa_invalid() && v.aspa == AspaState::kInvalid);
  }

 private:
  struct Shard {
    mutable std::mutex mu;
    std::array<PrefixMap<Key4>, kFamilies> v4;  // by family index; only IPv4 ones used
    std::array<PrefixMap<Key6>, kFamilies> v6;
    journal::Journal<Change> journal;
    size_t route_bytes = 0;  // the entries' heap arrays (Entry::heap_bytes)
    explicit Shard(size_t retention) : journal(retention) {}
    // fn(the family's map): a PrefixMap<Key4> or a PrefixMap<Key6>.
    template <typename F>
    decltype(auto) on_map(FamilyIndex f, F&& fn) {
      if (is_v6_family(f)) return fn(v6[f]);
      return fn(v4[f]);
    }
    template <typename F>
    decltype(auto) on_map(FamilyIndex f, F&& fn) const {
      if (is_v6_family(f)) return fn(v6[f]);
      return fn(v4[f]);
    }
  };
  struct PeerSlot {
    PeerInfo info;
    bool used = false;
    std::array<std::atomic<uint64_t>, kFamilies> routes{};
    std::array<std::atomic<uint64_t>, kFamilies> best{};  // prefixes where its route is best
    std::array<std::atomic<uint64_t>, kFamilies> stale{};  // routes marked stale, not announced again yet
    std::atomic<uint64_t> paths_refused{0};
  };
  // Moves of prefixes' best routes between peers, gathered and added to
  // the peers' counters (atomics) once per batch or sweep, not twice per
  // prefix. Holds a few (peer, family) sums; more are added at once.
  class BestMoves {
   public:
    explicit BestMoves(const Table& t) : t_(t) {}
    ~BestMoves() { flush(); }
    BestMoves(const BestMoves&) = delete;
    BestMoves& operator=(const BestMoves&) = delete;
    // A prefix's best moved from slot `from` to slot `to` (-1: none).
    void move(int32_t from, int32_t to, FamilyIndex f) {
      if (from == to) return;
      add(from, f, -1);
      add(to, f, 1);
    }
    void flush();

   private:
    void add(int32_t slot, FamilyIndex f, int64_t d);
    static constexpr size_t kWays = 8;
    const Table& t_;
    std::array<uint32_t, kWays> key_{};  // slot * kFamilies + family
    std::array<int64_t, kWays> sum_{};
    size_t used_ = 0;
  };
  friend class Batch;
  using Op = Batch::Op;
  template <typename K>
  void apply_one(Shard& s, PrefixMap<K>& m, uint16_t slot, const Op& op, BatchResult& res,
                 std::array<int64_t, kFamilies>& delta, BestMoves& moves);
  void prefetch(const Op& op) const;
  template <typename K>
  void choose_best(Entry<K>& e) const;
  // `lowest`, when given, gets the lowest rank of the eligible routes when
  // every one is known, else 0.
  template <typename K>
  uint32_t best_by_rank(const Entry<K>& e, int32_t skip = -1, uint16_t* lowest = nullptr) const;
  // choose_best's candidates among many routes: one for each class of
  // routes alike (the lowest path identifier), those of rank `low` when
  // it is not 0; their indices in r in `at`. Returns how many.
  size_t alike_classes(std::span<const Route> r, uint16_t low, Candidate* c, uint32_t* at) const;
  // The route's Route::rank from its set and peer.
  void set_rank(Route& r) const;
  // reaches_med_step for two routes, from their ranks when both are known.
  [[nodiscard]] bool reaches_med_step_of(const Route& x, const Route& best) const;
  [[nodiscard]] bool eligible(const Route& r) const {
    return !(r.flags & Route::kIneligible) && !(reject_invalid() && validation_of(r) == Validation::kInvalid) &&
           !(reject_aspa_invalid() && aspa_of(r) == AspaState::kInvalid);
  }
  [[nodiscard]] Candidate candidate(const Route& r) const {
    return Candidate{r.attrs, &peers_[r.peer].info, r.path_id, r.peer, eligible(r), igp_cost(r)};
  }
  // The interior cost to the route's next hop (0 without a resolver, and
  // for this router's own routes).
  [[nodiscard]] uint32_t igp_cost(const Route& r) const {
    return nexthops_ ? nexthop_state(r).cost : 0;
  }
  // The route's next hop's state (with a resolver only): a route of this
  // router's own has none, and is always resolved.
  [[nodiscard]] NexthopState nexthop_state(const Route& r) const;
  // Sets or clears Route::kIneligible from its next hop's state, the set's
  // next hop bound first if the table meets it for the first time. Nothing
  // without a resolver.
  void set_nexthop(Route& r) const {
    if (nexthops_) set_nexthop_slow(r);
  }
  void set_nexthop_slow(Route& r) const;
  // Best path chosen again for entry e (prefix p, family f, in shard s);
  // the prefix is journalled when its best changed, and true returned.
  template <typename E>
  bool choose_again(Shard& s, FamilyIndex f, E& e);
  // fn(family, entry) for every entry of every map, each shard under its
  // lock (walk()'s and nexthop_report()'s loop).
  template <typename F>
  void for_each_entry(F&& fn) const;
  // fn(shard, family, map) for every map, each shard under its lock; the
  // followers are woken after a shard whose journal grew (table.cpp only).
  template <typename F>
  void sweep_maps(F&& fn);
  // `known`: the state validate_ops found, else the validator is asked.
  // The ASPA state too: `known_aspa`, else the validator is asked.
  void set_validation(Route& r, const net::Prefix& p, Validation known = Validation::kUnchecked,
                      AspaState known_aspa = AspaState::kUnchecked) const;
  // For a batch of one peer's routes (slot).
  void validate_ops(std::span<Op> ops, uint16_t slot) const;
  // set_reject_invalid's and set_reject_aspa_invalid's walk: best path
  // chosen again at every prefix with a route that has(route).
  uint64_t choose_again_where(const std::function<bool(const Route&)>& has);
  // After routes of entry e (prefix p, family f, in shard s) changed
  // state: best path chosen again when `choose`, a move of the best
  // counted, the prefix journalled. `before`: the best before the change.
  template <typename E>
  void settle(Shard& s, FamilyIndex f, E& e, const net::Prefix& p, bool choose, const BestId& before);
  // A prefix's best moved from slot `from` to slot `to` (-1: none).
  void count_best(int32_t from, int32_t to, FamilyIndex f) const;
  // The departing routes' sets, gathered over a sweep and released after
  // it (release_all): 4 octets a route where the set lies within 16 GiB of
  // the first one gathered (its distance in 8-octet units, biased so that
  // the order of the numbers is the addresses'), else its address.
  struct Departed {
    uintptr_t base = 0;
    bool based = false;
    std::vector<uint32_t> near;
    std::vector<Attrs*> far;
    void add(Attrs* a) {
      const auto p = reinterpret_cast<uintptr_t>(a);
      if (!based) {
        base = p;
        based = true;
      }
      const auto d = static_cast<int64_t>(p - base);  // two's complement: negative below base
      if ((d & 7) == 0 && d / 8 >= INT32_MIN && d / 8 <= INT32_MAX)
        near.push_back(static_cast<uint32_t>(static_cast<int32_t>(d / 8)) ^ 0x80000000u);
      else
        far.push_back(a);
    }
    [[nodiscard]] Attrs* at(uint32_t v) const {
      const int64_t d = static_cast<int64_t>(static_cast<int32_t>(v ^ 0x80000000u)) * 8;
      return reinterpret_cast<Attrs*>(base + static_cast<uintptr_t>(d));
    }
  };
  // Removes the peer's routes (the stale ones only, if asked) from one
  // map; their references are added to `released` (see release_all).
  template <typename K>
  uint64_t remove_routes_of(Shard& s, PrefixMap<K>& m, uint16_t slot, FamilyIndex f, bool only_stale,
                            Departed& released);
  void release_all(Departed& sets);
  // remove_peer (family < 0: every family) and sweep_stale: the shards
  // split among the sweep's threads (TableOptions::sweep_threads), each
  // thread releasing the sets of the routes it removed.
  uint64_t sweep_peer(uint16_t slot, int family, bool only_stale);
  [[nodiscard]] uint64_t peer_route_count(uint16_t slot) const;
  // Wakes each subscriber whose wake is not owed already. Called outside
  // the shards' locks, after the appends.
  void wake_followers() const;
  friend class Subscription;
  void unsubscribe(Subscription::State* s) const;
  [[nodiscard]] RouteView view(const Route& r) const {
    RouteView v = follow_view(r);
    v.igp_cost = igp_cost(r);
    return v;
  }
  // A follower's best route (FollowEvent::best): view() without the
  // interior cost, which is a look-up in the next hop registry per route.
  [[nodiscard]] RouteView follow_view(const Route& r) const {
    return {r.attrs,         &peers_[r.peer].info, r.peer,         r.path_id, (r.flags & Route::kStale) != 0,
            validation_of(r), aspa_of(r),          !(r.flags & Route::kIneligible)};
  }

  TableOptions options_;
  // With TableOptions::nexthops only. Destroyed after the interner, whose
  // freed hook calls it.
  std::unique_ptr<NexthopRegistry> nexthops_;
  // options_.reject_invalid as it is now (set_reject_invalid), read without
  // a lock by readers of any shard.
  std::atomic<bool> reject_invalid_;
  std::atomic<bool> reject_aspa_invalid_;
  mutable Interner interner_;
  uint64_t path_salt_;  // ManyRoutes' index key, from the hash key
  std::vector<std::unique_ptr<Shard>> shards_;
  std::unique_ptr<PeerSlot[]> peers_;
  mutable std::mutex peers_mu_;
  std::unique_ptr<SweepPool> sweep_pool_;  // started on the first parallel sweep
  std::mutex sweep_pool_mu_;               // guards its start
  // Subscribers: shared by the writers that wake them, exclusive to
  // subscribe and unsubscribe (so that none is woken once it is gone).
  mutable std::shared_mutex subscribers_mu_;
  mutable std::vector<Subscription::State*> subscribers_;
};

// ---- templates

template <typename F>
bool Table::lookup(FamilyIndex f, const net::Prefix& p, F&& fn) const {
  return lookup_all(f, p, [&](std::span<const RouteView> routes, int best) {
    for (size_t i = 0; i < routes.size(); ++i) fn(routes[i], static_cast<int>(i) == best);
  });
}

template <typename F>
void Table::for_each_entry(F&& fn) const {
  for (const auto& sp : shards_) {
    const Shard& s = *sp;
    std::lock_guard lock(s.mu);
    for (size_t f = 0; f < kFamilies; ++f)
      s.on_map(static_cast<FamilyIndex>(f),
               [&](const auto& m) { m.for_each([&](const auto& e) { fn(static_cast<FamilyIndex>(f), e); }); });
  }
}

template <typename F>
void Table::walk(F&& fn) const {
  for_each_entry([&](FamilyIndex f, const auto& e) {
    const Route* b = e.best_route();
    std::optional<RouteView> bv;
    if (b) bv = view(*b);
    fn(Change{e.key.prefix(), f, false}, bv, e.routes());
  });
}

template <typename F>
size_t Table::read(Follower& fo, size_t max, F&& fn, size_t max_first) const {
  size_t handed = 0;
  fo.resync_waiting_ = false;
  for (size_t i = 0; i < shards_.size(); ++i) {
    if (!fo.primed_[i] && max_first == 0) {
      fo.resync_waiting_ = true;
      continue;
    }
    const Shard& s = *shards_[i];
    std::lock_guard lock(s.mu);
    auto resync = [&] {
      bool first = true;
      for (size_t f = 0; f < kFamilies; ++f) {
        s.on_map(static_cast<FamilyIndex>(f), [&](const auto& m) {
          m.for_each([&](const auto& e) {
            FollowEvent ev;
            ev.shard = i;
            ev.resync = first;
            first = false;
            ev.change = Change{e.key.prefix(), static_cast<FamilyIndex>(f), true};
            if (const Route* b = e.best_route()) ev.best = follow_view(*b);
            fn(ev);
          });
        });
      }
      if (first) {  // an empty shard: the follower still forgets it
        FollowEvent ev;
        ev.shard = i;
        ev.resync = true;
        ev.change.family = UINT8_MAX;  // no prefix
        fn(ev);
      }
      fo.next_[i] = s.journal.end();
      fo.primed_[i] = 1;
      ++handed;
    };
    if (!fo.primed_[i]) {
      resync();
      --max_first;
      continue;
    }
    auto next = s.journal.read(fo.next_[i], max, [&](uint64_t, const Change& c) {
      FollowEvent ev;
      ev.shard = i;
      ev.change = c;
      s.on_map(c.family, [&](const auto& m) {
        if (const auto* e = m.find(key_of(m, c.prefix)))
          if (const Route* b = e->best_route()) ev.best = follow_view(*b);
      });
      fn(ev);
      ++handed;
    });
    if (!next && max_first == 0) {
      fo.resync_waiting_ = true;  // stays overrun: handed whole by a later read
    } else if (!next) {
      ++fo.resyncs_;
      resync();
      --max_first;
    } else {
      fo.next_[i] = *next;
    }
  }
  return handed;
}

}  // namespace petrel::table
