#include "table/table.h"

#include <algorithm>
#include <cassert>

#include "codec/update.h"

namespace petrel::table {
namespace {

// Which route is best, to tell whether a change moved it.
struct BestId {
  const Attrs* attrs = nullptr;
  uint32_t path_id = 0;
  uint16_t peer = 0;
  friend bool operator==(const BestId&, const BestId&) = default;
};
template <typename K>
BestId best_id(const Entry<K>& e) {
  const Route* b = e.best_route();
  return b ? BestId{b->attrs, b->path_id, b->peer} : BestId{};
}

}  // namespace

Table::Table(TableOptions o) : options_(o), peers_(std::make_unique<PeerSlot[]>(kMaxPeers)) {
  if (options_.shards == 0) options_.shards = 1;
  shards_.reserve(options_.shards);
  for (size_t i = 0; i < options_.shards; ++i)
    shards_.push_back(std::make_unique<Shard>(std::max<size_t>(options_.journal_retention, 1)));
}

Table::~Table() {
  // Release every route's reference before the interner goes.
  for (auto& sp : shards_) {
    for (size_t f = 0; f < kFamilies; ++f) {
      auto drop = [&](auto& m) {
        m.for_each([&](auto& e) {
          for (const Route& r : e.routes()) interner_.release(r.attrs);
        });
      };
      drop(sp->v4[f]);
      drop(sp->v6[f]);
    }
  }
}

size_t Table::shard_of(const net::Prefix& p) const {
  uint64_t h = p.family() == net::IpFamily::V6 ? Key6::of(p).hash() : Key4::of(p).hash();
  // The maps use the top bits of the same hash; the shard takes the low ones.
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
    return static_cast<uint16_t>(i);
  }
  return std::nullopt;
}

template <typename K>
void Table::choose_best(Entry<K>& e) const {
  auto r = e.routes();
  uint32_t best = Entry<K>::kNone;
  if (r.size() == 1) {
    if (!(r[0].flags & Route::kIneligible)) best = 0;
  } else if (!r.empty()) {
    std::array<Candidate, 8> small;
    std::vector<Candidate> big;
    std::span<Candidate> c;
    if (r.size() <= small.size()) {
      c = std::span<Candidate>(small.data(), r.size());
    } else {
      big.resize(r.size());
      c = big;
    }
    for (size_t i = 0; i < r.size(); ++i) c[i] = candidate(r[i]);
    int b = select_best(c, options_.best);
    if (b >= 0) best = static_cast<uint32_t>(b);
  }
  e.set_best(best);
}

template <typename K>
void Table::apply_one(Shard& s, PrefixMap<K>& m, uint16_t slot, FamilyIndex f, Attrs* attrs, const Op& op,
                      BatchResult& res) {
  K key = K::of(op.prefix);
  if (op.announce) {
    Entry<K>& e = m.find_or_insert(key);
    BestId before = best_id(e);
    uint32_t i = e.find(slot, op.path_id);
    Attrs* replaced = nullptr;
    ++res.announced;
    if (i != Entry<K>::kNone) {
      Route& r = e.routes()[i];
      bool was_stale = r.flags & Route::kStale;
      r.flags = static_cast<uint16_t>(r.flags & ~Route::kStale);
      // The same route again: nothing changed, nothing to journal.
      if (r.attrs == attrs && !was_stale) return;
      replaced = r.attrs;
      r.attrs = attrs;
    } else {
      e.push(Route{attrs, op.path_id, slot, 0});
      ++res.added_;
    }
    ++res.refs_;  // taken once for the batch, after it (apply_ops)
    choose_best(e);
    bool changed = best_id(e) != before;
    res.best_changes += changed;
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
  Route gone = e->remove(i);
  ++res.withdrawn;
  choose_best(*e);
  bool best_changed = best_id(*e) != before;
  res.best_changes += best_changed;
  // The route's reference goes after the comparison: `before` may point
  // at its set.
  interner_.release(gone.attrs);
  s.journal.append(Change{op.prefix, f, best_changed});
  if (e->empty()) m.erase(e);
}

BatchResult Table::apply_ops(uint16_t slot, FamilyIndex f, Attrs* attrs, std::vector<Op>& ops) {
  BatchResult res;
  if (ops.empty()) return res;
  // Withdrawals before announcements of the same prefix keep their order
  // in the message; the sort groups by shard and keeps that order inside.
  // (An insertion sort: an UPDATE carries a few prefixes, and
  // std::stable_sort allocates.)
  for (size_t i = 1; i < ops.size(); ++i) {
    Op x = ops[i];
    size_t j = i;
    for (; j > 0 && ops[j - 1].shard > x.shard; --j) ops[j] = ops[j - 1];
    ops[j] = x;
  }
  const bool v6 = is_v6_family(f);
  // Every prefix's slot is a cache miss in a full table: ask for them all
  // first, so that they overlap.
  for (const Op& op : ops) {
    const Shard& s = *shards_[op.shard];
    if (v6) s.v6[f].prefetch(Key6::of(op.prefix));
    else s.v4[f].prefetch(Key4::of(op.prefix));
  }
  for (size_t i = 0; i < ops.size();) {
    Shard& s = *shards_[ops[i].shard];
    std::lock_guard lock(s.mu);
    size_t j = i;
    for (; j < ops.size() && ops[j].shard == ops[i].shard; ++j) {
      if (v6) apply_one(s, s.v6[f], slot, f, attrs, ops[j], res);
      else apply_one(s, s.v4[f], slot, f, attrs, ops[j], res);
    }
    i = j;
  }
  // The routes' references and the peer's count, once per batch: the
  // batch's own reference keeps the set alive until then.
  if (res.refs_) Interner::acquire(attrs, res.refs_);
  auto delta = static_cast<int64_t>(res.added_) - static_cast<int64_t>(res.withdrawn);
  if (delta) peers_[slot].routes[f].fetch_add(static_cast<uint64_t>(delta), std::memory_order_relaxed);
  return res;
}

namespace {
void add(BatchResult& a, const BatchResult& b) {
  a.announced += b.announced;
  a.withdrawn += b.withdrawn;
  a.not_found += b.not_found;
  a.best_changes += b.best_changes;
}
}  // namespace

BatchResult Table::apply(uint16_t slot, FamilyIndex f, const codec::AttributeSet* attrs,
                         std::span<const codec::NlriPrefix> announce,
                         std::span<const codec::NlriPrefix> withdraw) {
  thread_local std::vector<Op> ops;
  ops.clear();
  for (const auto& p : withdraw)
    ops.push_back(Op{p.prefix, p.path_id, static_cast<uint32_t>(shard_of(p.prefix)), false});
  Attrs* a = nullptr;
  if (!announce.empty()) {
    assert(attrs);
    if (!attrs) return {};
    a = interner_.intern(*attrs);  // the batch's own reference, dropped below
    for (const auto& p : announce)
      ops.push_back(Op{p.prefix, p.path_id, static_cast<uint32_t>(shard_of(p.prefix)), true});
  }
  BatchResult r = apply_ops(slot, f, a, ops);
  if (a) interner_.release(a);
  return r;
}

BatchResult Table::apply(uint16_t slot, const codec::UpdateView& u, bool treat_as_withdraw) {
  BatchResult total;
  thread_local std::vector<Op> ops;
  // Withdrawn routes, per family.
  for (const auto& range : u.withdrawals()) {
    int fi = codec::known_index(range.family());
    if (fi < 0) continue;
    ops.clear();
    for (const auto& p : range) ops.push_back(Op{p.prefix, p.path_id, static_cast<uint32_t>(shard_of(p.prefix)), false});
    add(total, apply_ops(slot, static_cast<FamilyIndex>(fi), nullptr, ops));
  }
  Attrs* a = nullptr;
  for (const auto& range : u.announced()) {
    int fi = codec::known_index(range.family());
    if (fi < 0) continue;
    ops.clear();
    for (const auto& p : range)
      ops.push_back(Op{p.prefix, p.path_id, static_cast<uint32_t>(shard_of(p.prefix)), !treat_as_withdraw});
    if (ops.empty()) continue;
    if (!treat_as_withdraw && !a) a = interner_.intern(u.attribute_set());
    add(total, apply_ops(slot, static_cast<FamilyIndex>(fi), a, ops));
  }
  if (a) interner_.release(a);
  return total;
}

template <typename K>
uint64_t Table::remove_routes_of(Shard& s, PrefixMap<K>& m, uint16_t slot, FamilyIndex f, bool only_stale) {
  uint64_t n = 0;
  // The removed routes' references, dropped after the sweep in address
  // order (and held until then: `before` may point at one of the sets).
  std::vector<Attrs*> released;
  released.reserve(m.size());
  m.sweep([&](Entry<K>& e) {
    BestId before = best_id(e);
    const Route* b = e.best_route();
    Candidate best_c = b ? candidate(*b) : Candidate{};
    bool hit = false, recompute = b == nullptr;
    for (uint32_t i = 0; i < e.size();) {
      const Route& x = e.routes()[i];
      if (x.peer == slot && (!only_stale || (x.flags & Route::kStale))) {
        // The choice can move only if the best goes, or a route that
        // reached the MED step beside it (best_path.h).
        if (!recompute && ((x.peer == before.peer && x.path_id == before.path_id) ||
                           reaches_med_step(candidate(x), best_c, options_.best)))
          recompute = true;
        released.push_back(e.remove(i).attrs);  // the last route moves into i
        hit = true;
        ++n;
        continue;
      }
      ++i;
    }
    if (!hit) return true;
    if (recompute) {
      choose_best(e);
    } else {
      e.set_best(e.find(before.peer, before.path_id));
    }
    s.journal.append(Change{e.key.prefix(), f, best_id(e) != before});
    return !e.empty();
  });
  interner_.release_all(released);
  peers_[slot].routes[f].fetch_sub(n, std::memory_order_relaxed);
  return n;
}

uint64_t Table::remove_peer(uint16_t slot) {
  uint64_t n = 0;
  for (auto& sp : shards_) {
    std::lock_guard lock(sp->mu);
    for (size_t f = 0; f < kFamilies; ++f) {
      auto fi = static_cast<FamilyIndex>(f);
      if (is_v6_family(fi)) n += remove_routes_of(*sp, sp->v6[f], slot, fi, false);
      else n += remove_routes_of(*sp, sp->v4[f], slot, fi, false);
    }
  }
  std::lock_guard lock(peers_mu_);
  peers_[slot].used = false;
  return n;
}

uint64_t Table::mark_stale(uint16_t slot, FamilyIndex f) {
  uint64_t n = 0;
  for (auto& sp : shards_) {
    std::lock_guard lock(sp->mu);
    auto mark = [&](auto& m) {
      m.for_each([&](auto& e) {
        for (Route& r : e.routes())
          if (r.peer == slot && !(r.flags & Route::kStale)) {
            r.flags |= Route::kStale;
            ++n;
          }
      });
    };
    if (is_v6_family(f)) mark(sp->v6[f]);
    else mark(sp->v4[f]);
  }
  return n;
}

uint64_t Table::sweep_stale(uint16_t slot, FamilyIndex f) {
  uint64_t n = 0;
  for (auto& sp : shards_) {
    std::lock_guard lock(sp->mu);
    if (is_v6_family(f)) n += remove_routes_of(*sp, sp->v6[f], slot, f, true);
    else n += remove_routes_of(*sp, sp->v4[f], slot, f, true);
  }
  return n;
}

uint64_t Table::prefixes(FamilyIndex f) const {
  uint64_t n = 0;
  for (const auto& sp : shards_) {
    std::lock_guard lock(sp->mu);
    n += is_v6_family(f) ? sp->v6[f].size() : sp->v4[f].size();
  }
  return n;
}

uint64_t Table::routes() const {
  uint64_t n = 0;
  std::lock_guard lock(const_cast<std::mutex&>(peers_mu_));
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

Table::Memory Table::memory() const {
  Memory m;
  for (const auto& sp : shards_) {
    std::lock_guard lock(sp->mu);
    for (size_t f = 0; f < kFamilies; ++f) m.map_bytes += sp->v4[f].bytes() + sp->v6[f].bytes();
    m.journal_bytes += sp->journal.memory_bytes();
  }
  m.attr_bytes = interner_.bytes();
  m.attr_sets = interner_.size();
  return m;
}

}  // namespace petrel::table
