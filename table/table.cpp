#include "table/table.h"

#include <algorithm>
#include <cassert>
#include <thread>
#include <utility>

#include "codec/communities.h"
#include "codec/update.h"
#include "crates/sort/radix_sort.h"
#include "table/nexthop_registry.h"
#include "table/sweep_pool.h"

namespace petrel::table {

// Which route is best, to tell whether a change moved it.
struct BestId {
  const Attrs* attrs = nullptr;
  uint32_t path_id = 0;
  uint16_t peer = 0;
  friend bool operator==(const BestId&, const BestId&) = default;
};

namespace {

// The slot whose route a BestId names, or -1 for none.
int32_t slot_of(const BestId& b) { return b.attrs ? b.peer : -1; }
template <typename K>
BestId best_id(const Entry<K>& e) {
  const Route* b = e.best_route();
  return b ? BestId{b->attrs, b->path_id, b->peer} : BestId{};
}

}  // namespace

Table::Table(TableOptions o)
    : options_(o),
      reject_invalid_(o.reject_invalid),
      reject_aspa_invalid_(o.reject_aspa_invalid),
      interner_(64, o.hash_key ? *o.hash_key : HashKey::process()),
      path_salt_(interner_.key().k0 * 0x9E3779B97F4A7C15ull ^ interner_.key().k1),
      peers_(std::make_unique<PeerSlot[]>(kMaxPeers)) {
  if (options_.shards == 0) options_.shards = 1;
  if (options_.nexthops) {
    nexthops_ = std::make_unique<NexthopRegistry>(*options_.nexthops);
    interner_.on_freed([](void* r, uint32_t code) { static_cast<NexthopRegistry*>(r)->release(code); },
                       nexthops_.get());
  }
  shards_.reserve(options_.shards);
  for (size_t i = 0; i < options_.shards; ++i)
    shards_.push_back(std::make_unique<Shard>(std::max<size_t>(options_.journal_retention, 1)));
  // A shard's share of the expected prefixes, no more: a map sized for
  // exactly that is the map growing would reach, and a shard that gets a
  // little more than its share (the hash spreads a full table's 125,000 a
  // shard within about 0.3 %) grows only where it would have anyway.
  const auto share = [&](size_t expected) { return (expected + options_.shards - 1) / options_.shards; };
  const size_t v4 = share(options_.expected_ipv4_prefixes), v6 = share(options_.expected_ipv6_prefixes);
  constexpr auto kV4 = static_cast<size_t>(codec::known_index(codec::kIpv4Unicast));
  constexpr auto kV6 = static_cast<size_t>(codec::known_index(codec::kIpv6Unicast));
  for (auto& sp : shards_) {
    if (v4) sp->v4[kV4].reserve(v4);
    if (v6) sp->v6[kV6].reserve(v6);
  }
}

// The routes' references are not released one by one: the interner, a
// member destroyed after this body, frees every set it holds at once (a
// million releases took longer than the rest of a full table's teardown).
Table::~Table() = default;

size_t Table::shard_of(const net::Prefix& p) const {
  uint64_t h = p.family() == net::IpFamily::V6 ? Key6::of(p).hash() : Key4::of(p).hash();
  // The maps place an entry by the top bits of the same hash: the shard
  // takes bits from the middle, which the top ones do not decide. (The low
  // bits of a multiplicative hash depend on the key's low bits only: every
  // /24 would fall in one shard.)
  return static_cast<size_t>((h >> 24) % shards_.size());
}

std::optional<uint16_t> Table::add_peer(const PeerInfo& info) {
  std::lock_guard lock(peers_mu_);
  for (size_t i = 0; i < kMaxPeers; ++i) {
    PeerSlot& p = peers_[i];
    if (p.used) continue;
    p.info = info;
    p.used = true;
    for (auto& c : p.routes) c.store(0, std::memory_order_relaxed);
    for (auto& c : p.best) c.store(0, std::memory_order_relaxed);
    for (auto& c : p.stale) c.store(0, std::memory_order_relaxed);
    p.paths_refused.store(0, std::memory_order_relaxed);
    return static_cast<uint16_t>(i);
  }
  return std::nullopt;
}

// The eligible route whose rank (best_path.h, pre_med_rank) is lower than
// every other eligible route's, routes of peer `skip` left out: the best,
// decided at steps 1, a and b without reading a set. kNone when a rank is
// unknown or the lowest is shared (the sets decide), or when no route is
// eligible. `lowest` (when shared, the routes the sets decide among are
// those of that rank): the lowest rank when every one is known, else 0.
template <typename K>
uint32_t Table::best_by_rank(const Entry<K>& e, int32_t skip, uint16_t* lowest) const {
  uint32_t best = Entry<K>::kNone;
  uint16_t low = UINT16_MAX;
  bool shared = false;
  if (lowest) *lowest = 0;
  auto r = e.routes();
  for (uint32_t i = 0; i < r.size(); ++i) {
    if (r[i].peer == skip || !eligible(r[i])) continue;
    const uint16_t k = r[i].rank();
    if (k == 0) return Entry<K>::kNone;
    if (k < low) {
      low = k;
      best = i;
      shared = false;
    } else if (k == low) {
      shared = true;
    }
  }
  if (lowest && best != Entry<K>::kNone) *lowest = low;
  return shared ? Entry<K>::kNone : best;
}

void Table::set_rank(Route& r) const { r.set_rank(pre_med_rank(candidate(r), options_.best)); }

bool Table::reaches_med_step_of(const Route& x, const Route& best) const {
  if (!eligible(x)) return false;
  if (x.rank() && best.rank()) return x.rank() == best.rank();
  return reaches_med_step(candidate(x), candidate(best), options_.best);
}

// Where the ranks are all known but the lowest is shared, only the routes
// of that rank are compared by their sets: they are exactly the ones
// steps 1, a and b leave (equal ranks tie there, a lower one wins), so the
// others' sets are not read.
template <typename K>
void Table::choose_best(Entry<K>& e) const {
  auto r = e.routes();
  uint32_t best = Entry<K>::kNone;
  uint16_t low = 0;
  if (r.size() == 1) {
    if (eligible(r[0])) best = 0;
  } else if (const uint32_t by_rank = best_by_rank(e, -1, &low); by_rank != Entry<K>::kNone) {
    best = by_rank;
  } else if (!r.empty()) {
    std::array<Candidate, 8> small;
    std::array<uint32_t, 8> small_at;
    std::vector<Candidate> big;
    std::vector<uint32_t> big_at;
    Candidate* c = small.data();
    uint32_t* at = small_at.data();  // each candidate's index in r
    if (r.size() > small.size()) {
      big.resize(r.size());
      big_at.resize(r.size());
      c = big.data();
      at = big_at.data();
    }
    size_t n = 0;
    if (r.size() <= Entry<K>::kIndexFrom) {
      for (uint32_t i = 0; i < r.size(); ++i) {
        if (low && (r[i].rank() != low || !eligible(r[i]))) continue;
        c[n] = candidate(r[i]);
        at[n++] = i;
      }
    } else {
      n = alike_classes(r, low, c, at);
    }
    int b = select_best(std::span<const Candidate>(c, n), options_.best);
    if (b >= 0) best = at[b];
  }
  e.set_best(best);
}

// Routes alike (one peer's, one set, both eligible or both not: a flood's
// paths) tie on every step before the path identifier, and at step c the
// one removes whatever the other does: only the lowest identifier of such
// a class can be the best, and the others change nothing. So for many
// routes, one candidate a class (found with a hash of the class, O(n)),
// and select_best sorts and compares those.
size_t Table::alike_classes(std::span<const Route> r, uint16_t low, Candidate* c, uint32_t* at) const {
  thread_local std::vector<uint32_t> slots;  // a candidate's index + 1; 0: empty
  size_t cap = 16;
  while (cap < 2 * r.size()) cap *= 2;
  slots.assign(cap, 0);
  const unsigned shift = 64 - static_cast<unsigned>(__builtin_ctzll(cap));
  size_t n = 0;
  for (uint32_t i = 0; i < r.size(); ++i) {
    const bool ok = eligible(r[i]);
    if (low && (r[i].rank() != low || !ok)) continue;
    const uint64_t key = reinterpret_cast<uintptr_t>(r[i].attrs) ^ (uint64_t{r[i].peer} << 1 | ok) << 48;
    for (size_t h = static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> shift);; h = (h + 1) & (cap - 1)) {
      if (slots[h] == 0) {
        c[n] = candidate(r[i]);
        at[n++] = i;
        slots[h] = static_cast<uint32_t>(n);
        break;
      }
      Candidate& x = c[slots[h] - 1];
      if (x.attrs == r[i].attrs && x.slot == r[i].peer && x.eligible == ok) {
        if (r[i].path_id < x.path_id) {
          x.path_id = r[i].path_id;
          at[slots[h] - 1] = i;
        }
        break;
      }
    }
  }
  return n;
}

template <typename K>
void Table::apply_one(Shard& s, PrefixMap<K>& m, uint16_t slot, const Op& op, BatchResult& res,
                      std::array<int64_t, kFamilies>& delta, BestMoves& moves) {
  K key = K::of(op.prefix);
  const FamilyIndex f = op.family;
  if (op.attrs) {
    Entry<K>& e = m.find_or_insert(key);
    BestId before = best_id(e);
    const size_t heap_before = e.heap_bytes();
    uint32_t i = e.find(slot, op.path_id);
    Attrs* replaced = nullptr;
    bool chosen = false;  // best path settled without choose_best
    if (i != Entry<K>::kNone) {
      ++res.announced;
      Route& r = e.routes()[i];
      const bool was_stale = r.flags & Route::kStale;
      if (was_stale) {
        r.flags = static_cast<uint16_t>(r.flags & ~Route::kStale);
        peers_[slot].stale[f].fetch_sub(1, std::memory_order_relaxed);
      }
      // The same route again (a stale one confirmed, too): nothing changed,
      // nothing to journal, so no follower (exporter, kernel) hears of it;
      // the op's reference is not needed (the batch holds one more, so
      // this is not the last).
      if (r.attrs == op.attrs) {
        if (!was_stale) ++res.duplicates;  // (a stale one confirmed is asked for)
        interner_.release(op.attrs);
        return;
      }
      const uint32_t b = e.best();
      const Candidate old = candidate(r);  // its set is held until the end
      replaced = r.attrs;
      r.attrs = op.attrs;
      // A prefix's only route goes without a rank (0, unknown): nothing is
      // compared with it until a second route comes, which fills it in.
      if (e.size() > 1) set_rank(r);
      else r.set_rank(0);
      set_validation(r, op.prefix, op.validation, op.aspa);
      set_nexthop(r);
      // Another route than the best changed: as its old version leaving
      // and its new one joining (best_path.h), when both keep to the
      // shortcuts; else chosen again from all.
      if (b != Entry<K>::kNone && b != i) {
        const Candidate best = candidate(e.routes()[b]);
        if (removal_keeps_best(old, best, options_.best)) {
          const Beside d = added_beside_best(candidate(r), best, options_.best);
          if (d == Beside::kAddedIsBest) e.set_best(i);
          chosen = d != Beside::kChooseAgain;
        }
      }
    } else {
      // A further path beyond the peer's bound is refused (treat-as-
      // withdraw for that path: it was not here). The count is read only
      // where the prefix has that many paths in all.
      const uint32_t limit = peers_[slot].info.max_paths_per_prefix;
      if (limit != 0 && e.size() >= limit && e.count_of(slot) >= limit) {
        ++res.paths_refused;
        interner_.release(op.attrs);  // as for the same route again: not the last
        return;
      }
      ++res.announced;
      Route r{op.attrs, op.path_id, slot, 0};
      set_nexthop(r);
      const bool first = e.empty();
      if (!first) set_rank(r);
      set_validation(r, op.prefix, op.validation, op.aspa);
      const uint32_t b = e.best();
      e.push(r, path_salt_);
      // A prefix's first route: the best if eligible, nothing to compare.
      if (first) {
        e.set_best(eligible(e.routes()[0]) ? 0 : Entry<K>::kNone);
        chosen = true;
      }
      ++delta[f];
      s.route_bytes += e.heap_bytes() - heap_before;
      // A route added beside a best: only the two need comparing where
      // best_path.h's added_beside_best says so (always when they differ
      // before the MED step; within the best's MED group too, so that a
      // flood of paths alike is not chosen again from all at each one),
      // not every route's set read again.
      // With both ranks known and different no set is read (the best's is
      // a cache miss).
      if (b != Entry<K>::kNone) {
        const Route& a = e.routes()[e.size() - 1];
        Route& br = e.routes()[b];
        if (br.rank() == 0) set_rank(br);  // reads its set, as the comparison would
        const Candidate added = candidate(a);
        if (added.eligible && a.rank() && br.rank() && a.rank() != br.rank()) {
          if (a.rank() < br.rank()) e.set_best(e.size() - 1);
          chosen = true;
        } else {
          const Beside d = added_beside_best(added, candidate(br), options_.best);
          if (d == Beside::kAddedIsBest) e.set_best(e.size() - 1);
          chosen = d != Beside::kChooseAgain;
        }
      } else if (!first && !eligible(e.routes()[e.size() - 1])) {
        chosen = true;  // none was eligible, and the new one is not either
      }
    }
    // The route takes the op's reference (Batch::Held).
    if (!chosen) choose_best(e);
    bool changed = best_id(e) != before;
    res.best_changes += changed;
    if (changed) moves.move(slot_of(before), slot_of(best_id(e)), f);
    s.journal.append(Change{op.prefix, f, changed});
    if (replaced) interner_.release(replaced);  // after the comparison with `before`
    return;
  }
  Entry<K>* e = m.find(key);
  uint32_t i = e ? e->find(slot, op.path_id) : Entry<K>::kNone;
  if (i == Entry<K>::kNone) {
    ++res.not_found;
    return;
  }
  BestId before = best_id(*e);
  const size_t heap_before = e->heap_bytes();
  // Another route than the best leaving: the best mostly stays
  // (best_path.h, removal_keeps_best), where the last route takes i's place.
  const uint32_t b = e->best(), last = e->size() - 1;
  const bool keeps = b != Entry<K>::kNone && b != i &&
                     removal_keeps_best(candidate(e->routes()[i]), candidate(e->routes()[b]), options_.best);
  Route gone = e->remove(i);
  if (gone.flags & Route::kStale) peers_[slot].stale[f].fetch_sub(1, std::memory_order_relaxed);
  s.route_bytes -= heap_before - e->heap_bytes();
  ++res.withdrawn;
  --delta[f];
  if (keeps) e->set_best(b == last ? i : b);
  else choose_best(*e);
  bool best_changed = best_id(*e) != before;
  res.best_changes += best_changed;
  if (best_changed) moves.move(slot_of(before), slot_of(best_id(*e)), f);
  // The route's reference goes after the comparison: `before` may point
  // at its set.
  interner_.release(gone.attrs);
  s.journal.append(Change{op.prefix, f, best_changed});
  if (e->empty()) m.erase(e);
}

void Table::BestMoves::add(int32_t slot, FamilyIndex f, int64_t d) {
  if (slot < 0) return;
  const auto key = static_cast<uint32_t>(static_cast<size_t>(slot) * kFamilies + f);
  for (size_t i = 0; i < used_; ++i) {
    if (key_[i] == key) {
      sum_[i] += d;
      return;
    }
  }
  if (used_ == kWays) flush();
  key_[used_] = key;
  sum_[used_] = d;
  ++used_;
}

void Table::BestMoves::flush() {
  for (size_t i = 0; i < used_; ++i) {
    if (sum_[i] == 0) continue;
    auto& c = t_.peers_[key_[i] / kFamilies].best[key_[i] % kFamilies];
    c.fetch_add(static_cast<uint64_t>(sum_[i]), std::memory_order_relaxed);  // wraps for a negative sum
  }
  used_ = 0;
}

void Table::count_best(int32_t from, int32_t to, FamilyIndex f) const {
  if (from == to) return;
  if (from >= 0) peers_[from].best[f].fetch_sub(1, std::memory_order_relaxed);
  if (to >= 0) peers_[to].best[f].fetch_add(1, std::memory_order_relaxed);
}

void Table::set_validation(Route& r, const net::Prefix& p, Validation known, AspaState known_aspa) const {
  if (!options_.validator) return;
  auto v = static_cast<uint16_t>(known != Validation::kUnchecked ? known : options_.validator->validate(p, *r.attrs));
  const AspaCheck check = peers_[r.peer].info.aspa;
  AspaState a = AspaState::kUnchecked;
  if (check != AspaCheck::kNone)
    a = known_aspa != AspaState::kUnchecked ? known_aspa : options_.validator->verify_path(*r.attrs, check);
  r.flags = static_cast<uint16_t>((r.flags & ~(Route::kValidationMask | Route::kAspaMask)) |
                                  (v << Route::kValidationShift) |
                                  (static_cast<uint16_t>(a) << Route::kAspaShift));
}

void Table::validate_ops(std::span<Op> ops, uint16_t slot) const {
  if (!options_.validator) return;
  thread_local std::vector<Validator::Query> queries;
  thread_local std::vector<Validation> states;
  queries.clear();
  for (const Op& op : ops)
    if (op.attrs) queries.push_back({&op.prefix, op.attrs});
  states.resize(queries.size());
  options_.validator->validate_batch(queries, states);
  size_t i = 0;
  for (Op& op : ops)
    if (op.attrs) op.validation = states[i++];
  // ASPA: one verification per attribute set in this shard's part of the
  // batch (an UPDATE's prefixes share one, and come together). Not kept
  // across shards: an ASPA publication's reverify_paths may pass between
  // two shards, and each shard's answer is taken under its lock.
  const AspaCheck check = peers_[slot].info.aspa;
  if (check == AspaCheck::kNone) return;
  const Attrs* last = nullptr;
  AspaState state = AspaState::kUnchecked;
  for (Op& op : ops) {
    if (!op.attrs) continue;
    if (op.attrs != last) {
      last = op.attrs;
      state = options_.validator->verify_path(*op.attrs, check);
    }
    op.aspa = state;
  }
}

namespace {
// The entry type of a PrefixMap, for decltype only.
template <typename K>
Entry<K>* entry_type(PrefixMap<K>& /*m*/) {
  return nullptr;
}
}  // namespace

template <typename F>
void Table::sweep_maps(F&& fn) {
  for (auto& sp : shards_) {
    Shard& s = *sp;
    std::unique_lock lock(s.mu);
    const uint64_t end_before = s.journal.end();
    for (size_t fi = 0; fi < kFamilies; ++fi) {
      const auto f = static_cast<FamilyIndex>(fi);
      s.on_map(f, [&](auto& m) { fn(s, f, m); });
    }
    // Shard by shard: followers read one while the next is worked on.
    const bool appended = s.journal.end() != end_before;
    lock.unlock();
    if (appended) wake_followers();
  }
}

template <typename E>
void Table::settle(Shard& s, FamilyIndex f, E& e, const net::Prefix& p, bool choose, const BestId& before) {
  if (choose) choose_best(e);
  const BestId after = best_id(e);
  if (after != before) count_best(slot_of(before), slot_of(after), f);
  s.journal.append(Change{p, f, after != before});
}

uint64_t Table::revalidate(const std::function<bool(const net::Prefix&)>& covered) {
  if (!options_.validator) return 0;
  uint64_t changed = 0;
  // A map's covered routes are asked in one validate_batch (their lookups
  // overlap), then marked entry by entry.
  thread_local std::vector<net::Prefix> prefixes;
  thread_local std::vector<Validator::Query> queries;
  thread_local std::vector<uint32_t> owner;  // each query's prefix, an index in prefixes
  thread_local std::vector<Validation> states;
  sweep_maps([&](Shard& s, FamilyIndex f, auto& m) {
    using E = std::remove_pointer_t<decltype(entry_type(m))>;
    std::vector<E*> entries;  // the covered ones, stable while the lock is held
    prefixes.clear();
    queries.clear();
    owner.clear();
    m.for_each([&](E& e) {
      const net::Prefix p = e.key.prefix();
      if (!covered(p)) return;
      for (const Route& r : e.routes()) {
        queries.push_back({nullptr, r.attrs});
        owner.push_back(static_cast<uint32_t>(prefixes.size()));
      }
      prefixes.push_back(p);
      entries.push_back(&e);
    });
    for (size_t i = 0; i < queries.size(); ++i) queries[i].prefix = &prefixes[owner[i]];
    states.resize(queries.size());
    options_.validator->validate_batch(queries, states);
    size_t qi = 0;
    for (size_t i = 0; i < entries.size(); ++i) {
      E& e = *entries[i];
      const net::Prefix& p = prefixes[i];
      BestId before = best_id(e);
      bool any = false;
      for (Route& r : e.routes()) {
        const uint16_t old = r.flags;
        set_validation(r, p, states[qi++]);
        if (r.flags != old) {
          any = true;
          ++changed;
        }
      }
      if (any) settle(s, f, e, p, reject_invalid(), before);
    }
  });
  return changed;
}

NexthopState Table::nexthop_state(const Route& r) const {
  if (peers_[r.peer].info.local) return {};
  return nexthops_->state(r.attrs->nexthop_code());
}

void Table::set_nexthop_slow(Route& r) const {
  bool ok = true;
  if (!peers_[r.peer].info.local) ok = nexthops_->state(nexthops_->code_of(*r.attrs)).resolved;
  r.flags = static_cast<uint16_t>(ok ? r.flags & ~Route::kIneligible : r.flags | Route::kIneligible);
}

template <typename E>
bool Table::choose_again(Shard& s, FamilyIndex f, E& e) {
  const BestId before = best_id(e);
  choose_best(e);
  const BestId after = best_id(e);
  if (after == before) return false;
  count_best(slot_of(before), slot_of(after), f);
  s.journal.append(Change{e.key.prefix(), f, true});
  return true;
}

// The registry takes the new states first, then each shard is walked once:
// a writer that inserts a route in a shard the walk has not reached yet
// finds the new state already (and the walk finds nothing to change
// there), one that inserted it before is corrected by the walk. A route's
// set is read for its next hop's code once for a run of routes that share
// it.
uint64_t Table::nexthops_changed(std::span<const NexthopUpdate> changed) {
  if (!nexthops_) return 0;
  std::vector<uint8_t> touched;  // by code
  if (!nexthops_->update(changed, touched)) return 0;
  uint64_t flipped = 0;
  sweep_maps([&](Shard& s, FamilyIndex f, auto& m) {
    using E = std::remove_pointer_t<decltype(entry_type(m))>;
    const Attrs* last = nullptr;
    uint32_t code = 0;
    bool hit = false;
    m.for_each([&](E& e) {
      bool any = false;
      for (Route& r : e.routes()) {
        if (r.attrs != last) {
          last = r.attrs;
          code = r.attrs->nexthop_code();
          hit = code < touched.size() && touched[code];
        }
        if (!hit || peers_[r.peer].info.local) continue;
        any = true;
        const bool ineligible = !nexthops_->state(code).resolved;
        if (ineligible == ((r.flags & Route::kIneligible) != 0)) continue;
        r.flags = static_cast<uint16_t>(r.flags ^ Route::kIneligible);
        ++flipped;
      }
      if (any) choose_again(s, f, e);
    });
  });
  return flipped;
}

NexthopReport Table::nexthop_report() const {
  NexthopReport out;
  if (!nexthops_) return out;
  const auto entries = nexthops_->entries();
  uint32_t end = NexthopRegistry::kFirstSlot;
  for (const auto& x : entries) end = std::max(end, x.code + 1);
  std::vector<uint64_t> routes(end, 0);  // by code
  for_each_entry([&](FamilyIndex, const auto& e) {
    for (const Route& r : e.routes()) {
      if (r.flags & Route::kIneligible) ++out.ineligible_routes;
      if (peers_[r.peer].info.local) continue;
      const uint32_t code = r.attrs->nexthop_code();
      if (code < end) ++routes[code];
    }
  });
  for (const auto& x : entries)
    out.nexthops.push_back({x.address, x.link_local, x.state, routes[x.code]});
  std::sort(out.nexthops.begin(), out.nexthops.end(), [](const NexthopInfo& a, const NexthopInfo& b) {
    return a.address != b.address ? a.address < b.address : a.link_local < b.link_local;
  });
  return out;
}

uint64_t Table::reverify_paths(const std::function<bool(const Attrs&)>& affected) {
  if (!options_.validator) return 0;
  uint64_t changed = 0;
  sweep_maps([&](Shard& s, FamilyIndex f, auto& m) {
    using E = std::remove_pointer_t<decltype(entry_type(m))>;
    // The last set's answers (affected, and its state by the procedure)
    // serve the routes that follow with the same set and procedure (the
    // paths of one prefix, a peer's routes that sit side by side).
    const Attrs* last = nullptr;
    AspaCheck last_check = AspaCheck::kNone;
    bool last_affected = false;
    AspaState last_state = AspaState::kUnchecked;
    m.for_each([&](E& e) {
      const BestId before = best_id(e);
      bool any = false;
      for (Route& r : e.routes()) {
        const AspaCheck check = peers_[r.peer].info.aspa;
        if (check == AspaCheck::kNone) continue;
        if (r.attrs != last || check != last_check) {
          last = r.attrs;
          last_check = check;
          last_affected = affected(*r.attrs);
          if (last_affected) last_state = options_.validator->verify_path(*r.attrs, check);
        }
        if (!last_affected || last_state == aspa_of(r)) continue;
        r.flags = static_cast<uint16_t>((r.flags & ~Route::kAspaMask) |
                                        (static_cast<uint16_t>(last_state) << Route::kAspaShift));
        any = true;
        ++changed;
      }
      if (any) settle(s, f, e, e.key.prefix(), reject_aspa_invalid(), before);
    });
  });
  return changed;
}

uint64_t Table::set_reject_invalid(bool on) {
  if (reject_invalid_.exchange(on) == on) return 0;
  return choose_again_where([](const Route& x) { return validation_of(x) == Validation::kInvalid; });
}

uint64_t Table::set_reject_aspa_invalid(bool on) {
  if (reject_aspa_invalid_.exchange(on) == on) return 0;
  return choose_again_where([](const Route& x) { return aspa_of(x) == AspaState::kInvalid; });
}

uint64_t Table::choose_again_where(const std::function<bool(const Route&)>& has) {
  uint64_t changed = 0;
  sweep_maps([&](Shard& s, FamilyIndex f, auto& m) {
    using E = std::remove_pointer_t<decltype(entry_type(m))>;
    m.for_each([&](E& e) {
      auto r = e.routes();
      if (std::none_of(r.begin(), r.end(), has)) return;
      changed += choose_again(s, f, e);
    });
  });
  return changed;
}

void Table::prefetch(const Op& op) const {
  shards_[op.shard]->on_map(op.family, [&](const auto& m) { m.prefetch(key_of(m, op.prefix)); });
}

BatchResult Table::apply(uint16_t slot, Batch& b) {
  assert(b.table_ == this);
  b.intern_pending(0);
  BatchResult res;
  std::array<int64_t, kFamilies> delta{};
  BestMoves moves(*this);
  // Order by shard, keeping the messages' order within each (a counting
  // sort: stable, no comparisons).
  const size_t n = b.ops_.size();
  std::vector<uint32_t> start(shards_.size() + 1, 0);
  for (const Op& op : b.ops_) ++start[op.shard + 1u];
  for (size_t i = 1; i < start.size(); ++i) start[i] += start[i - 1];
  b.sorted_.resize(n);
  {
    std::vector<uint32_t> at(start.begin(), start.end() - 1);
    for (const Op& op : b.ops_) b.sorted_[at[op.shard]++] = op;
  }
  // Every prefix's slot is a cache miss in a full table: the CPU is asked
  // for it kAhead operations early, so that the misses overlap.
  constexpr size_t kAhead = 12;
  for (size_t i = 0; i < std::min(n, kAhead); ++i) prefetch(b.sorted_[i]);
  bool appended = false;
  for (size_t sh = 0; sh < shards_.size(); ++sh) {
    if (start[sh] == start[sh + 1]) continue;
    Shard& s = *shards_[sh];
    std::lock_guard lock(s.mu);
    const uint64_t end_before = s.journal.end();
    // Under the lock, as route by route: a VRP publication's revalidation
    // walk cannot pass between the lookups and the routes' insertion.
    validate_ops(std::span<Op>(b.sorted_).subspan(start[sh], start[sh + 1] - start[sh]), slot);
    for (size_t i = start[sh]; i < start[sh + 1]; ++i) {
      if (i + kAhead < n) prefetch(b.sorted_[i + kAhead]);
      const Op& op = b.sorted_[i];
      s.on_map(op.family, [&](auto& m) { apply_one(s, m, slot, op, res, delta, moves); });
    }
    appended = appended || s.journal.end() != end_before;
  }
  // Once for the batch, every shard's lock released.
  if (appended) wake_followers();
  for (size_t f = 0; f < kFamilies; ++f)
    if (delta[f]) peers_[slot].routes[f].fetch_add(static_cast<uint64_t>(delta[f]), std::memory_order_relaxed);
  moves.flush();
  if (res.paths_refused) peers_[slot].paths_refused.fetch_add(res.paths_refused, std::memory_order_relaxed);
  // The routes took the ops' references; what is left is the batch's own.
  for (Batch::Held& h : b.held_) h.refs = 1;
  b.clear();
  return res;
}

BatchResult Table::apply(uint16_t slot, FamilyIndex f, const codec::AttributeSet* attrs,
                         std::span<const codec::NlriPrefix> announce,
                         std::span<const codec::NlriPrefix> withdraw) {
  Batch b(*this);
  b.add(f, attrs, announce, withdraw);
  return apply(slot, b);
}

BatchResult Table::apply(uint16_t slot, const codec::UpdateView& u, bool treat_as_withdraw) {
  Batch b(*this);
  b.add(u, treat_as_withdraw);
  return apply(slot, b);
}

void Batch::clear() {
  pending_.clear();  // not interned yet: no reference to drop
  pending_head_ = 0;
  pending_bytes_.clear();
  for (const Held& h : held_) table_->interner_.release(h.attrs, h.refs);
  held_.clear();
  ops_.clear();
}

void Batch::release_storage(size_t keep_ops) {
  if (!ops_.empty() || ops_.capacity() + sorted_.capacity() <= keep_ops) return;
  std::vector<Op>().swap(ops_);
  std::vector<Op>().swap(sorted_);
  std::vector<Held>().swap(held_);
  std::vector<Pending>().swap(pending_);
  std::vector<std::byte>().swap(pending_bytes_);
}

void Batch::hold(Attrs* a, uint32_t announced) {
  // One atomic addition for the UPDATE, not one per route.
  if (announced) Interner::acquire(a, announced);
  held_.push_back(Held{a, announced + 1});
}

void Batch::push(const codec::NlriPrefix& p, FamilyIndex f, Attrs* attrs) {
  ops_.push_back(Op{p.prefix, p.path_id, static_cast<uint16_t>(table_->shard_of(p.prefix)), f, attrs});
}

void Batch::add(FamilyIndex f, const codec::AttributeSet* attrs, std::span<const codec::NlriPrefix> announce,
                std::span<const codec::NlriPrefix> withdraw) {
  assert(attrs || announce.empty());
  add(f, attrs ? attrs->wire() : bytes::Span(), attrs ? announce : std::span<const codec::NlriPrefix>(), withdraw);
}

void Batch::add(FamilyIndex f, bytes::Span canonical, std::span<const codec::NlriPrefix> announce,
                std::span<const codec::NlriPrefix> withdraw) {
  for (const auto& p : withdraw) push(p, f, nullptr);
  if (announce.empty()) return;
  // The set's bytes are canonical: interned from them as add(UpdateView)
  // does (the same header fields: tests/table/fast_import_test.cpp).
  const uint32_t hash = table_->interner_.hash_of(canonical);
  table_->interner_.prefetch(hash);
  const size_t first = ops_.size();
  for (const auto& p : announce) push(p, f, nullptr);
  defer(canonical, hash, first);
}

Batch::Gathered Batch::add(const codec::UpdateView& u, bool treat_as_withdraw, const codec::AttributeSet* set) {
  const bytes::Span wire = set ? set->wire() : bytes::Span();
  return add_view(u, treat_as_withdraw, set ? &wire : nullptr);
}

Batch::Gathered Batch::add_view(const codec::UpdateView& u, bool treat_as_withdraw, const bytes::Span* given) {
  Gathered got;
  bool announces = false;
  // The decode's verdict is the floor: whatever the caller says, an
  // UPDATE that decoded as treat-as-withdraw (or worse) announces nothing.
  if (u.action() >= codec::ErrorAction::kTreatAsWithdraw) treat_as_withdraw = true;
  if (!treat_as_withdraw)
    for (const auto& range : u.announced())
      if (!range.empty() && codec::known_index(range.family()) >= 0) announces = true;
  // The set's bytes and hash first, and the interner's index slot asked
  // of the CPU (a cache miss in a full table); the set is interned a few
  // UPDATEs later (defer), and the announcements take it then (a given
  // `set` too, from its canonical bytes). Without `set`, the canonical bytes come
  // straight from the message into a buffer reused across UPDATEs: no
  // AttributeSet (an allocation and a second parse of the bytes), and the
  // header's fields are read only for a set the interner does not hold.
  thread_local std::vector<std::byte> canonical;
  bytes::Span wire;
  uint32_t hash = 0;
  Interner& in = table_->interner_;
  if (announces) {
    if (given) {
      wire = *given;
    } else if (u.write_attribute_set(canonical)) {
      wire = canonical;
    } else {
      announces = false;  // a set that cannot be built: the routes are withdrawn
    }
    if (announces) {
      hash = in.hash_of(wire);
      in.prefetch(hash);
    }
  }
  for (const auto& range : u.withdrawals()) {
    int fi = codec::known_index(range.family());
    if (fi < 0) continue;
    const auto f = static_cast<FamilyIndex>(fi);
    for (const auto& p : range) {
      push(p, f, nullptr);
      ++got.withdrawn[f];
    }
  }
  const size_t first = ops_.size();
  for (const auto& range : u.announced()) {
    int fi = codec::known_index(range.family());
    if (fi < 0 || range.empty()) continue;
    const auto f = static_cast<FamilyIndex>(fi);
    for (const auto& p : range) {
      push(p, f, nullptr);  // announcements get the set below
      ++(announces ? got.announced : got.withdrawn)[f];
    }
  }
  if (announces) defer(wire, hash, first);
  return got;
}

void Batch::defer(bytes::Span canonical, uint32_t hash, size_t first) {
  const auto at = static_cast<uint32_t>(pending_bytes_.size());
  pending_bytes_.insert(pending_bytes_.end(), canonical.begin(), canonical.end());
  pending_.push_back(Pending{hash, at, static_cast<uint32_t>(canonical.size()), static_cast<uint32_t>(first),
                             static_cast<uint32_t>(ops_.size() - first)});
  intern_pending(kInternBehind);
}

void Batch::intern_pending(size_t left) {
  Interner& in = table_->interner_;
  while (pending_.size() - pending_head_ > left) {
    const Pending& p = pending_[pending_head_++];
    Attrs* a = in.intern_hashed(bytes::Span(pending_bytes_).subspan(p.at, p.len), p.hash);
    for (uint32_t i = p.first; i < p.first + p.count; ++i) ops_[i].attrs = a;
    hold(a, p.count);
  }
  if (pending_head_ == pending_.size()) {
    pending_.clear();
    pending_head_ = 0;
    pending_bytes_.clear();
  }
}

template <typename K>
uint64_t Table::remove_routes_of(Shard& s, PrefixMap<K>& m, uint16_t slot, FamilyIndex f, bool only_stale,
                                 Departed& released) {
  uint64_t n = 0, stale = 0;
  BestMoves moves(*this);
  // The removed routes' references go into `released`, dropped by the
  // caller after the sweep (release_all): a set is not touched per route.
  m.sweep([&](Entry<K>& e) {
    BestId before = best_id(e);
    const size_t heap_before = e.heap_bytes();
    const Route* b = e.best_route();
    const Route best_r = b ? *b : Route{};  // removals move the routes
    bool hit = false, recompute = b == nullptr;
    for (uint32_t i = 0; i < e.size();) {
      const Route& x = e.routes()[i];
      if (x.peer == slot && (!only_stale || (x.flags & Route::kStale))) {
        // The choice can move only if the best goes, or a route that
        // reached the MED step beside it (best_path.h): known from the
        // ranks when both are, without reading the sets.
        if (!recompute && ((x.peer == before.peer && x.path_id == before.path_id) || reaches_med_step_of(x, best_r)))
          recompute = true;
        stale += (x.flags & Route::kStale) != 0;
        released.add(e.remove(i).attrs);  // the last route moves into i
        hit = true;
        ++n;
        continue;
      }
      ++i;
    }
    if (!hit) return true;
    s.route_bytes -= heap_before - e.heap_bytes();
    if (recompute) {
      choose_best(e);
    } else {
      e.set_best(e.find(before.peer, before.path_id));
    }
    const BestId after = best_id(e);
    if (after != before) moves.move(slot_of(before), slot_of(after), f);
    s.journal.append(Change{e.key.prefix(), f, after != before});
    return !e.empty();
  }, [&](const Entry<K>& e, size_t distance) {
    // A full table's route arrays and sets are far larger than the caches:
    // the array is asked for kFar entries ahead, the sets the callback
    // reads (the best's and the departing routes') kNear ahead.
    if (e.key.len == K::kEmpty) return;
    if (distance == PrefixMap<K>::kFar) {
      if (e.kind == 2) prefetch_line(e.many.routes);
      else if (e.kind == 3) prefetch_line(e.big);
      return;
    }
    // When the best goes, best path is chosen again among all the rest
    // (from the ranks alone when they decide). A departing route's set is
    // read only when ranks do not settle whether it reached the MED step
    // beside the best (then the best's too), or the rest are compared by
    // their sets (a lone remaining route is not compared with anything).
    const Route* b = e.best_route();
    const bool best_goes = b && b->peer == slot;
    // (Of the rest, only those of the lowest rank where all are known:
    // choose_best compares no other.)
    uint16_t low = 0;
    const bool all_rest = best_goes && e.size() > 2 && best_by_rank(e, slot, &low) == Entry<K>::kNone;
    bool best_read = false;
    for (const Route& x : e.routes()) {
      if (x.peer == slot) {
        if (b && !best_goes && !(x.rank() && b->rank())) {
          prefetch_line(x.attrs);
          best_read = true;
        }
      } else if (all_rest && (low == 0 || x.rank() == low)) {
        prefetch_line(x.attrs);
      }
    }
    if (best_read) prefetch_line(b->attrs);
  });
  peers_[slot].routes[f].fetch_sub(n, std::memory_order_relaxed);
  if (stale) peers_[slot].stale[f].fetch_sub(stale, std::memory_order_relaxed);
  return n;
}

namespace {
// Sorts numbers (a radix sort, least significant digit first, over the
// bits in which they differ: a few passes over a million numbers instead
// of std::sort's twenty comparisons each, which took an eighth of a peer's
// withdrawal). Equal numbers end up next to each other.
void radix_sort(std::vector<uint32_t>& v) {
  if (v.size() < 256) {
    std::sort(v.begin(), v.end());
    return;
  }
  uint32_t lo = UINT32_MAX, hi = 0;
  for (uint32_t x : v) {
    lo = std::min(lo, x);
    hi = std::max(hi, x);
  }
  const unsigned bits = hi == lo ? 0 : 32 - static_cast<unsigned>(__builtin_clz(hi - lo));
  std::vector<uint32_t> tmp;
  sort::radix_sort_by(v, tmp, 0, bits, [lo](uint32_t x) { return uint64_t{x - lo}; });
}
}  // namespace

// Drops one reference for each set gathered (and empties `d`): each
// distinct set is touched once, with its count, in address order. A
// peer's 1M departing routes hold about 250,000 sets: a quarter of the
// touches, each a cache miss otherwise, done outside the shards' locks.
void Table::release_all(Departed& d) {
  radix_sort(d.near);
  std::sort(d.far.begin(), d.far.end());
  // Each distinct set once, with its count.
  std::vector<Attrs*> sets;
  std::vector<uint32_t> counts;
  sets.reserve(d.near.size() / 2 + d.far.size());
  counts.reserve(sets.capacity());
  for (size_t i = 0; i < d.near.size();) {
    size_t j = i + 1;
    while (j < d.near.size() && d.near[j] == d.near[i]) ++j;
    sets.push_back(d.at(d.near[i]));
    counts.push_back(static_cast<uint32_t>(j - i));
    i = j;
  }
  for (size_t i = 0; i < d.far.size();) {
    size_t j = i + 1;
    while (j < d.far.size() && d.far[j] == d.far[i]) ++j;
    sets.push_back(d.far[i]);
    counts.push_back(static_cast<uint32_t>(j - i));
    i = j;
  }
  d = Departed{};
  // The sets are asked for kFar ahead; kNear ahead, where a release will
  // be the set's last, the interner's index slot it will unlink.
  constexpr size_t kFar = 16, kNear = 8;
  const size_t k = sets.size();
  for (size_t i = 0; i < k; ++i) {
    if (i + kFar < k) prefetch_line(sets[i + kFar]);
    if (i + kNear < k) interner_.prefetch_unlink(sets[i + kNear], counts[i + kNear]);
    interner_.release(sets[i], counts[i]);
  }
}

uint64_t Table::remove_peer(uint16_t slot) {
  const uint64_t n = sweep_peer(slot, -1, false);
  std::lock_guard lock(peers_mu_);
  peers_[slot].used = false;
  return n;
}

// The shards are independent: each sweep thread takes the next shard not
// yet taken, sweeps it under its lock (so each shard's journal is written
// by one thread at a time, in the order of its sweep), and after its last
// shard releases the sets of the routes it removed. A set whose routes
// two threads removed is released by both, each with its own count (the
// interner takes concurrent releases; the last one frees the set).
uint64_t Table::sweep_peer(uint16_t slot, int family, bool only_stale) {
  const uint64_t expected = family < 0 ? peer_route_count(slot) : peer_routes(slot, static_cast<FamilyIndex>(family));
  SweepPool* pool = nullptr;
  if (expected >= options_.parallel_sweep_from) {
    std::lock_guard lock(sweep_pool_mu_);
    if (!sweep_pool_) {
      size_t threads = options_.sweep_threads;
      if (threads == 0) threads = std::min<size_t>(2, std::max(1u, std::thread::hardware_concurrency()));
      if (threads > 1) sweep_pool_ = std::make_unique<SweepPool>(threads - 1);
    }
    pool = sweep_pool_.get();
  }
  const size_t threads = pool ? pool->threads() : 1;
  std::atomic<size_t> next{0};
  std::vector<uint64_t> removed(threads, 0);
  const std::function<void(size_t)> work = [&](size_t w) {
    Departed released;
    if (!only_stale) released.near.reserve(threads == 1 ? expected : expected / threads + expected / 8);
    uint64_t n = 0;
    for (size_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < shards_.size();) {
      Shard& s = *shards_[i];
      std::unique_lock lock(s.mu);
      const uint64_t end_before = s.journal.end();
      for (size_t f = 0; f < kFamilies; ++f) {
        if (family >= 0 && static_cast<int>(f) != family) continue;
        const auto fi = static_cast<FamilyIndex>(f);
        n += s.on_map(fi, [&](auto& m) { return remove_routes_of(s, m, slot, fi, only_stale, released); });
      }
      // A shard at a time: a full peer's withdrawal fills a journal's
      // retention, so its followers read each shard while the next is swept.
      const bool appended = s.journal.end() != end_before;
      lock.unlock();
      if (appended) wake_followers();
    }
    release_all(released);
    removed[w] = n;
  };
  if (!pool || !pool->run(work)) work(0);
  uint64_t n = 0;
  for (uint64_t r : removed) n += r;
  return n;
}

uint64_t Table::peer_route_count(uint16_t slot) const {
  uint64_t n = 0;
  for (const auto& c : peers_[slot].routes) n += c.load(std::memory_order_relaxed);
  return n;
}

uint64_t Table::mark_stale(uint16_t slot, FamilyIndex f) {
  uint64_t n = 0;
  for (auto& sp : shards_) {
    std::lock_guard lock(sp->mu);
    sp->on_map(f, [&](auto& m) {
      m.for_each([&](auto& e) {
        for (Route& r : e.routes())
          if (r.peer == slot && !(r.flags & Route::kStale)) {
            r.flags |= Route::kStale;
            ++n;
          }
      });
    });
  }
  peers_[slot].stale[f].fetch_add(n, std::memory_order_relaxed);
  return n;
}

uint64_t Table::sweep_stale(uint16_t slot, FamilyIndex f) { return sweep_peer(slot, f, true); }

Table::LongLivedStale Table::mark_long_lived_stale(uint16_t slot, FamilyIndex f) {
  // The peer's routes first (a reference to each set held, so none goes
  // before it is read), then one batch of the peer: each set's routes
  // again with LLGR_STALE added, or withdrawn for NO_LLGR.
  struct Found {
    Attrs* attrs;
    codec::NlriPrefix nlri;
  };
  std::vector<Found> found;
  for (auto& sp : shards_) {
    std::lock_guard lock(sp->mu);
    sp->on_map(f, [&](auto& m) {
      m.for_each([&](auto& e) {
        for (const Route& r : e.routes())
          if (r.peer == slot) {
            Interner::acquire(r.attrs);
            found.push_back({r.attrs, codec::NlriPrefix{e.key.prefix(), r.path_id}});
          }
      });
    });
  }
  std::sort(found.begin(), found.end(), [](const Found& a, const Found& b) {
    return std::less<const Attrs*>()(a.attrs, b.attrs);
  });
  LongLivedStale out;
  Batch b(*this);
  std::vector<codec::NlriPrefix> group;
  for (size_t i = 0; i < found.size();) {
    size_t j = i;
    group.clear();
    for (; j < found.size() && found[j].attrs == found[i].attrs; ++j) group.push_back(found[j].nlri);
    const Attrs* a = found[i].attrs;
    const codec::AttributeSet set = a->decode();
    if (set.has_community(codec::community::kNoLlgr)) {
      b.add(f, nullptr, {}, group);
      out.dropped += group.size();
    } else {
      out.kept += group.size();
      if (!a->llgr_stale()) {
        codec::PathAttributes pa = set.decode();
        pa.communities.push_back(codec::community::kLlgrStale);
        const codec::AttributeSet marked = codec::AttributeSet::from(pa);
        b.add(f, &marked, group, {});  // (the batch copies the set's bytes)
      }
    }
    i = j;
  }
  apply(slot, b);
  for (const Found& x : found) interner_.release(x.attrs);
  mark_stale(slot, f);  // the routes announced again lost their mark
  return out;
}

uint64_t Table::prefixes(FamilyIndex f) const {
  uint64_t n = 0;
  for (const auto& sp : shards_) {
    std::lock_guard lock(sp->mu);
    n += sp->on_map(f, [](const auto& m) { return m.size(); });
  }
  return n;
}

uint64_t Table::routes() const {
  uint64_t n = 0;
  std::lock_guard lock(peers_mu_);
  for (size_t i = 0; i < kMaxPeers; ++i)
    if (peers_[i].used)
      for (const auto& c : peers_[i].routes) n += c.load(std::memory_order_relaxed);
  return n;
}

Follower Table::follow() const {
  Follower fo;
  fo.next_.assign(shards_.size(), 0);
  fo.primed_.assign(shards_.size(), 0);
  return fo;
}

void Table::skip(Follower& fo) const {
  for (size_t i = 0; i < shards_.size(); ++i) {
    std::lock_guard lock(shards_[i]->mu);
    fo.next_[i] = shards_[i]->journal.end();
    fo.primed_[i] = 1;
  }
}

Subscription Table::subscribe(std::function<void()> wake) const {
  Subscription sub;
  sub.table_ = this;
  sub.state_ = std::make_unique<Subscription::State>();
  sub.state_->wake = std::move(wake);
  std::unique_lock lock(subscribers_mu_);
  subscribers_.push_back(sub.state_.get());
  return sub;
}

void Table::unsubscribe(Subscription::State* s) const {
  std::unique_lock lock(subscribers_mu_);
  std::erase(subscribers_, s);
}

// The flag is cleared by the follower's take() before it reads: a write
// that appends after that read took the shard's lock finds it clear and
// wakes; one whose append the read found may find it clear too (a wake
// for nothing, never one missed). The load first keeps a flag already
// set from being written by every writer of a busy table.
void Table::wake_followers() const {
  std::shared_lock lock(subscribers_mu_);
  for (Subscription::State* s : subscribers_)
    if (!s->pending.load(std::memory_order_acquire) && !s->pending.exchange(true, std::memory_order_acq_rel))
      s->wake();
}

Subscription::Subscription(Subscription&& o) noexcept
    : table_(std::exchange(o.table_, nullptr)), state_(std::move(o.state_)) {}

Subscription& Subscription::operator=(Subscription&& o) noexcept {
  if (this != &o) {
    reset();
    table_ = std::exchange(o.table_, nullptr);
    state_ = std::move(o.state_);
  }
  return *this;
}

bool Subscription::take() { return state_ && state_->pending.exchange(false, std::memory_order_acq_rel); }

void Subscription::reset() {
  if (!state_) return;
  table_->unsubscribe(state_.get());
  state_.reset();
  table_ = nullptr;
}

Table::Memory Table::memory(bool walk) const {
  Memory m;
  for (const auto& sp : shards_) {
    std::lock_guard lock(sp->mu);
    for (size_t f = 0; f < kFamilies; ++f) {
      if (walk) m.map_bytes += sp->v4[f].bytes() + sp->v6[f].bytes();
      else m.map_bytes += sp->v4[f].slot_bytes() + sp->v6[f].slot_bytes();
    }
    if (!walk) m.map_bytes += sp->route_bytes;
    m.journal_bytes += sp->journal.memory_bytes();
  }
  m.attr_bytes = interner_.bytes();
  m.attr_sets = interner_.size();
  return m;
}

}  // namespace petrel::table
