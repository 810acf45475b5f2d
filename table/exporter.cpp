// One peer's exporter (exporter.h).
#include "table/exporter.h"

#include <algorithm>

#include "codec/route_refresh.h"

namespace petrel::table {

namespace {

constexpr uint16_t kStaleOut = 4;  // not confirmed by a resynchronisation yet

codec::Family family_at(FamilyIndex f) { return codec::kKnownFamilyList[f]; }

// The fields of a PeerInfo the rules read (not the name: no allocation).
PeerInfo rules_view(const PeerInfo& p) {
  PeerInfo v;
  v.address = p.address;
  v.router_id = p.router_id;
  v.asn = p.asn;
  v.internal = p.internal;
  v.rr_client = p.rr_client;
  v.local = p.local;
  return v;
}

}  // namespace

Exporter::Exporter(Table& table, Interner& out_sets, ExporterSetup setup)
    : table_(table),
      out_sets_(out_sets),
      setup_(std::move(setup)),
      builder_(setup_.params),
      follower_(table.follow()),
      resyncing_(table.shard_count(), 0) {
  for (auto& pf : fam_) {
    pf.v4 = std::make_unique<PrefixMap<Key4>>();
    pf.v6 = std::make_unique<PrefixMap<Key6>>();
  }
}

Exporter::~Exporter() {
  for (Seen& s : seen_)
    if (s.attrs) table_.interner().release(s.attrs);
  clear_cache();
  for (auto& pf : fam_) {
    for (Group& g : pf.groups) out_sets_.release(g.attrs);
    auto drop = [&](auto& m) {
      m.for_each([&](auto& e) {
        for (Route& r : e.routes())
          if (r.attrs) out_sets_.release(r.attrs);
      });
    };
    drop(*pf.v4);
    drop(*pf.v6);
  }
}

void Exporter::clear_cache() {
  for (auto& [k, v] : cache_) {
    table_.interner().release(const_cast<Attrs*>(k.src));
    if (v) out_sets_.release(v);
  }
  cache_.clear();
}

size_t Exporter::pending() const {
  size_t n = 0;
  for (const auto& pf : fam_) {
    n += pf.withdrawals.size();
    for (const Group& g : pf.groups) n += g.prefixes.size();
  }
  return n;
}

template <typename K>
Route* Exporter::find(PerFamily& pf, const net::Prefix& p) {
  auto& m = [&]() -> PrefixMap<K>& {
    if constexpr (std::is_same_v<K, Key4>) return *pf.v4;
    else return *pf.v6;
  }();
  Entry<K>* e = m.find(K::of(p));
  return e && !e->empty() ? &e->routes()[0] : nullptr;
}

void Exporter::take(const FollowEvent& ev) {
  if (ev.resync) {
    resyncing_[ev.shard] = 1;
    counters_.resyncs.fetch_add(1, std::memory_order_relaxed);
  }
  if (ev.change.family >= kFamilies) return;  // an empty shard's resync marker
  if (!setup_.families.has(family_at(ev.change.family))) return;
  Seen s{ev.change.prefix, ev.change.family, nullptr, {}, 0};
  if (ev.best) {
    s.attrs = const_cast<Attrs*>(ev.best->attrs);
    Interner::acquire(s.attrs);
    s.source = rules_view(*ev.best->peer);
    s.slot = ev.best->slot;
  }
  seen_.push_back(std::move(s));
}

bool Exporter::pump(std::vector<std::byte>& out, size_t budget, size_t max_events) {
  if (setup_.send_nothing) {
    if (!initial_sent_) {
      for (size_t f = 0; f < kFamilies; ++f)
        if (setup_.families.has(family_at(static_cast<FamilyIndex>(f))))
          codec::UpdateBuilder::end_of_rib(family_at(static_cast<FamilyIndex>(f)), out);
      initial_sent_ = true;
    }
    return false;
  }
  // Reads only when the queue is empty: what is read is settled into the
  // queue at once, so a busy socket leaves changes in the journal, where
  // they collapse (each event is read with the prefix's best route as it
  // is then), rather than in a growing queue here.
  const size_t start = out.size();
  bool journal_drained = false;
  for (int round = 0; round < 64 && out.size() - start < budget; ++round) {
    journal_drained = false;
    if (pending() == 0 || !primed_) {
      size_t handed = table_.read(follower_, max_events, [&](const FollowEvent& ev) { take(ev); });
      journal_drained = handed < max_events;
      settle(seen_);
      primed_ = true;
    }
    if (pending() == 0 && journal_drained) break;
    write(out, budget - (out.size() - start));
  }
  if (!initial_sent_ && pending() == 0) {
    for (size_t f = 0; f < kFamilies; ++f)
      if (setup_.families.has(family_at(static_cast<FamilyIndex>(f))))
        codec::UpdateBuilder::end_of_rib(family_at(static_cast<FamilyIndex>(f)), out);
    initial_sent_ = true;
  }
  return !journal_drained || pending() > 0;
}

void Exporter::forget_shard(size_t shard) {
  // Marks every entry of the shard; set() clears the mark of those the
  // resynchronisation confirms, settle() withdraws the rest.
  for (auto& pf : fam_) {
    auto mark = [&](auto& m) {
      m.for_each([&](auto& e) {
        if (table_.shard_of(e.key.prefix()) == shard)
          for (Route& r : e.routes()) r.flags |= kStaleOut;
      });
    };
    mark(*pf.v4);
    mark(*pf.v6);
  }
}

void Exporter::settle(std::vector<Seen>& seen) {
  bool any_resync = false;
  for (size_t i = 0; i < resyncing_.size(); ++i)
    if (resyncing_[i]) {
      forget_shard(i);
      any_resync = true;
    }
  for (Seen& s : seen) {
    Attrs* want = nullptr;
    if (s.attrs) {
      want = outgoing(s);
      table_.interner().release(s.attrs);
      s.attrs = nullptr;
    }
    set(s.family, s.prefix, want);
  }
  seen.clear();
  if (!any_resync) return;
  for (size_t f = 0; f < kFamilies; ++f) {
    std::vector<net::Prefix> gone;
    auto collect = [&](auto& m) {
      m.for_each([&](auto& e) {
        for (Route& r : e.routes())
          if (r.flags & kStaleOut) gone.push_back(e.key.prefix());
      });
    };
    collect(*fam_[f].v4);
    collect(*fam_[f].v6);
    for (const auto& p : gone) set(static_cast<FamilyIndex>(f), p, nullptr);
  }
  std::fill(resyncing_.begin(), resyncing_.end(), 0);
}

Attrs* Exporter::outgoing(const Seen& s) {
  if (setup_.filter) {
    codec::AttributeSet src = s.attrs->decode();
    if (!evaluate(*setup_.filter, s.prefix, src).accept) {
      counters_.filtered.fetch_add(1, std::memory_order_relaxed);
      return nullptr;
    }
  }
  CacheKey key{s.attrs, s.source.router_id, s.slot, s.family,
               static_cast<uint8_t>(s.source.internal | s.source.rr_client << 1 | s.source.local << 2)};
  if (auto it = cache_.find(key); it != cache_.end()) {
    if (it->second) Interner::acquire(it->second);
    return it->second;
  }
  if (cache_.size() > 2 * table_.interner().size() + 4096) clear_cache();
  Exported e = export_route(setup_.target, ExportSource{&s.source, s.slot}, family_at(s.family), s.attrs->decode());
  Attrs* out = e.verdict == ExportVerdict::kSend ? out_sets_.intern(e.attrs) : nullptr;
  Interner::acquire(s.attrs);  // the key's reference
  cache_.emplace(key, out);    // the value's reference
  if (out) Interner::acquire(out);  // the caller's
  return out;
}

void Exporter::set(FamilyIndex f, const net::Prefix& p, Attrs* want) {
  PerFamily& pf = fam_[f];
  auto apply = [&](auto& m, auto key) {
    auto* e = m.find(key);
    if (!e || e->empty()) {
      if (!want) return;
      auto& ne = m.find_or_insert(key);
      ne.push(Route{want, 0, 0, kQueued});
      queue(pf, f, p, ne.routes()[0]);
      return;
    }
    Route& r = e->routes()[0];
    r.flags &= static_cast<uint16_t>(~kStaleOut);
    if (r.attrs == want) {
      if (want) out_sets_.release(want);
      return;
    }
    if (r.attrs) out_sets_.release(r.attrs);
    r.attrs = want;
    if (!want && !(r.flags & kAdvertised)) {  // never written: nothing to take back
      e->remove(0);
      m.erase(e);
      return;
    }
    queue(pf, f, p, r);
  };
  if (is_v6_family(f)) apply(*pf.v6, Key6::of(p));
  else apply(*pf.v4, Key4::of(p));
}

void Exporter::queue(PerFamily& pf, FamilyIndex, const net::Prefix& p, Route& r) {
  r.flags |= kQueued;
  if (!r.attrs) {
    pf.withdrawals.push_back(p);
    return;
  }
  auto [it, fresh] = pf.group_of.try_emplace(r.attrs, pf.groups.size());
  if (fresh) {
    Interner::acquire(r.attrs);
    pf.groups.push_back(Group{r.attrs, {}});
  }
  pf.groups[it->second].prefixes.push_back(p);
}

void Exporter::refresh(codec::Family fam, std::vector<std::byte>& out) {
  int fi = codec::known_index(fam);
  if (fi < 0 || !setup_.families.has(fam) || setup_.send_nothing) return;
  PerFamily& pf = fam_[static_cast<size_t>(fi)];
  if (setup_.enhanced_route_refresh) {
    codec::encode_route_refresh(codec::RouteRefresh{fam, codec::RefreshSubtype::kBeginOfRefresh, {}}, out);
    pf.refreshing = true;
  }
  auto requeue = [&](auto& m) {
    m.for_each([&](auto& e) {
      for (Route& r : e.routes())
        if (r.attrs && (r.flags & kAdvertised)) queue(pf, static_cast<FamilyIndex>(fi), e.key.prefix(), r);
    });
  };
  requeue(*pf.v4);
  requeue(*pf.v6);
}

size_t Exporter::write(std::vector<std::byte>& out, size_t budget) {
  const size_t start = out.size();
  std::vector<codec::NlriPrefix> nlri;
  for (size_t fi = 0; fi < kFamilies; ++fi) {
    PerFamily& pf = fam_[fi];
    const codec::Family fam = family_at(static_cast<FamilyIndex>(fi));
    const uint32_t path_id = setup_.params.add_path_send.has(fam) ? 1 : 0;
    const bool v6 = is_v6_family(static_cast<FamilyIndex>(fi));
    auto route_of = [&](const net::Prefix& p) { return v6 ? find<Key6>(pf, p) : find<Key4>(pf, p); };
    auto erase = [&](const net::Prefix& p) {
      if (v6) {
        auto* e = pf.v6->find(Key6::of(p));
        e->remove(0);
        pf.v6->erase(e);
      } else {
        auto* e = pf.v4->find(Key4::of(p));
        e->remove(0);
        pf.v4->erase(e);
      }
    };
    if (!pf.withdrawals.empty()) {
      nlri.clear();
      for (const auto& p : pf.withdrawals) {
        Route* r = route_of(p);
        if (!r || r->attrs || !(r->flags & kQueued)) continue;  // announced again since, or done
        if (r->flags & kAdvertised) {
          nlri.push_back({p, path_id});
          counters_.advertised[fi].fetch_sub(1, std::memory_order_relaxed);
        }
        erase(p);
      }
      pf.withdrawals.clear();
      if (!nlri.empty()) {
        auto n = builder_.withdraw(fam, nlri, out);
        if (n) counters_.updates.fetch_add(*n, std::memory_order_relaxed);
        counters_.withdrawn.fetch_add(nlri.size(), std::memory_order_relaxed);
      }
    }
    while (!pf.groups.empty() && out.size() - start < budget) {
      Group g = std::move(pf.groups.back());
      pf.groups.pop_back();
      pf.group_of.erase(g.attrs);
      nlri.clear();
      for (const auto& p : g.prefixes) {
        Route* r = route_of(p);
        if (!r || r->attrs != g.attrs || !(r->flags & kQueued)) continue;
        if (!(r->flags & kAdvertised)) counters_.advertised[fi].fetch_add(1, std::memory_order_relaxed);
        r->flags = static_cast<uint16_t>((r->flags & ~kQueued) | kAdvertised);
        nlri.push_back({p, path_id});
      }
      if (!nlri.empty()) {
        size_t before = out.size();
        auto n = builder_.announce(fam, g.attrs->decode(), nlri, out);
        if (n) {
          counters_.updates.fetch_add(*n, std::memory_order_relaxed);
          counters_.announced.fetch_add(nlri.size(), std::memory_order_relaxed);
        } else {
          out.resize(before);  // a set too large for one message: not sent
        }
      }
      out_sets_.release(g.attrs);
    }
    if (pf.refreshing && pf.groups.empty() && pf.withdrawals.empty()) {
      codec::encode_route_refresh(codec::RouteRefresh{fam, codec::RefreshSubtype::kEndOfRefresh, {}}, out);
      pf.refreshing = false;
    }
  }
  return out.size() - start;
}

}  // namespace petrel::table
