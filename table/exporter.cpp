// One peer's exporter (exporter.h).
#include "table/exporter.h"

#include <algorithm>
#include <cassert>
#include <cstring>

#include "codec/route_refresh.h"

namespace petrel::table {

namespace {

constexpr uint16_t kStaleOut = 4;  // not confirmed by a resynchronisation yet

codec::Family family_at(FamilyIndex f) { return codec::kKnownFamilyList[f]; }

// A queue group's prefixes (Exporter::Group::prefixes): words a prefix.
size_t words_per_prefix(bool v6) { return v6 ? 6 : 3; }

void pack(std::vector<uint32_t>& w, const codec::NlriPrefix& p, bool v6) {
  if (v6) {
    uint32_t a[4];
    std::memcpy(a, p.prefix.addr().data(), 16);
    w.insert(w.end(), {a[0], a[1], a[2], a[3], p.prefix.len(), p.path_id});
  } else {
    w.insert(w.end(), {p.prefix.addr().v4_value(), p.prefix.len(), p.path_id});
  }
}

template <typename F>
void unpack_each(const std::vector<uint32_t>& w, bool v6, F&& f) {
  const size_t step = words_per_prefix(v6);
  for (size_t i = 0; i + step <= w.size(); i += step) {
    net::IpAddress a;
    if (v6) {
      uint8_t b[16];
      std::memcpy(b, &w[i], 16);
      a = net::IpAddress::from_bytes(net::IpFamily::V6, b);
    } else {
      a = net::IpAddress::v4(w[i]);
    }
    f(codec::NlriPrefix{*net::Prefix::make(a, w[i + step - 2]), w[i + step - 1]});
  }
}

}  // namespace

PeerInfo Exporter::Source::info() const {
  PeerInfo v;
  v.router_id = router_id;
  v.internal = internal;
  v.rr_client = rr_client;
  v.local = local;
  return v;
}


Exporter::Exporter(Table& table, Interner& out_sets, ExporterSetup setup)
    : table_(table),
      out_sets_(out_sets),
      setup_(std::move(setup)),
      builder_(setup_.params),
      follower_(table.follow()),
      resyncing_(table.shard_count(), 0),
      ever_held_(table.shard_count(), 0),
      ever_read_(table.shard_count(), 0) {
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
  cache_.for_each([&](const CacheKey& k, Attrs* v) {
    table_.interner().release(const_cast<Attrs*>(k.src));
    if (v) out_sets_.release(v);
  });
  cache_.clear();
  cache_check_at_ = 0;
}

bool Exporter::queue_empty() const {
  for (const auto& pf : fam_)
    if (!pf.withdrawals.empty() || !pf.groups.empty() || !pf.only.empty() || pf.bulk > 0) return false;
  return true;
}

void Exporter::end_of_rib(std::vector<std::byte>& out) {
  size_t messages = 0;
  for (size_t f = 0; f < kFamilies; ++f)
    if (setup_.families.has(family_at(static_cast<FamilyIndex>(f)))) {
      codec::UpdateBuilder::end_of_rib(family_at(static_cast<FamilyIndex>(f)), out);
      ++messages;
    }
  mark(StreamMark::Kind::kEndOfRib, kNoSource, 0, 0, messages, out);
  initial_sent_ = true;
}

size_t Exporter::pending() const {
  size_t n = 0;
  for (size_t f = 0; f < kFamilies; ++f) {
    const PerFamily& pf = fam_[f];
    n += pf.withdrawals.size() + pf.only.size() + pf.bulk;
    for (const Group& g : pf.groups)
      n += g.prefixes.size() / words_per_prefix(is_v6_family(static_cast<FamilyIndex>(f)));
  }
  return n;
}

template <typename K>
Route* Exporter::find(PerFamily& pf, const net::Prefix& p, uint32_t id) {
  auto& m = [&]() -> PrefixMap<K>& {
    if constexpr (std::is_same_v<K, Key4>) return *pf.v4;
    else return *pf.v6;
  }();
  Entry<K>* e = m.find(K::of(p));
  if (!e) return nullptr;
  for (Route& r : e->routes())
    if (r.path_id == id) return &r;
  return nullptr;
}

void Exporter::take(const FollowEvent& ev) {
  if (ev.resync) {
    resyncing_[ev.shard] = 1;
    counters_.resyncs.fetch_add(1, std::memory_order_relaxed);
  }
  if (ev.change.family >= kFamilies) return;  // an empty shard's resync marker
  if (!setup_.families.has(family_at(ev.change.family))) return;
  Seen s{ev.change.prefix, ev.change.family, nullptr, {}, 0, static_cast<uint16_t>(ev.shard)};
  if (ev.best) {
    s.attrs = const_cast<Attrs*>(ev.best->attrs);
    Interner::acquire(s.attrs);
    s.source = Source::of(*ev.best->peer);
    s.slot = ev.best->slot;
    s.validation = ev.best->validation;
    s.aspa = ev.best->aspa;
  }
  seen_.push_back(std::move(s));
}

bool Exporter::pump(std::vector<std::byte>& out, size_t budget, size_t max_events) {
  if (setup_.send_nothing) {
    if (!initial_sent_) end_of_rib(out);
    return false;
  }
  // Reads only when the queue is empty: what is read is settled into the
  // queue at once, so a busy socket leaves changes in the journal, where
  // they collapse (each event is read with the prefix's best route as it
  // is then), rather than in a growing queue here.
  const size_t start = out.size();
  bool journal_drained = false;
  for (int round = 0; round < 8 && out.size() - start < budget; ++round) {
    journal_drained = false;
    bool resynced = false;
    if (queue_empty() || !follower_.primed() || follower_.resync_waiting()) {
      const uint64_t resyncs_before = follower_.resyncs();
      // Shards to be read whole (never read, or overrun while the peer was
      // slow) are copied out one per read and settled before the next (a
      // whole 1M table copied at once was 48 MB of Seen).
      size_t handed = table_.read(follower_, max_events, [&](const FollowEvent& ev) { take(ev); }, 1);
      journal_drained = handed < max_events && follower_.primed() && !follower_.resync_waiting();
      resynced = follower_.resyncs() != resyncs_before;
      settle(seen_);
      primed_ = true;
    }
    // The initial table is queued whole before any of it is written, so
    // prefixes of one set pack into one UPDATE across shards; one shard a
    // turn (an eighth of a full table), so that the worker's other
    // sessions are served between. So are shards read whole again after
    // their journals overran (a peer slower than a full feed): written a
    // shard at a time, a 1M table went out in 409k UPDATEs, not 237k.
    if (!follower_.primed() || follower_.resync_waiting()) break;
    feed_refreshes(out, round == 0);
    if (queue_empty() && journal_drained && !refresh_owed()) break;
    const size_t used = out.size() - start;  // a BoRR may have passed the budget
    write(out, used < budget ? budget - used : 0);
    if (resynced) break;  // a resynchronisation is a whole shard's work: one per turn
  }
  if (!initial_sent_ && queue_empty() && follower_.primed()) end_of_rib(out);
  if (journal_drained && queue_empty()) release_scratch();
  return !journal_drained || !queue_empty() || refresh_owed();
}

void Exporter::release_scratch() {
  // The queue's containers keep what they grew to in a burst (a whole
  // table: a group per outgoing set), and the memo of outgoing sets an
  // entry per source set seen: a third of an exporter's memory after a
  // 1M-route table (table-bench, export-2nd: 83.9 -> 50.5 bytes a route).
  // Small ones are kept: steady churn reuses them.
  constexpr size_t kKeep = 4096;
  for (PerFamily& pf : fam_) {
    if (pf.groups.capacity() > kKeep) {
      std::vector<Group>().swap(pf.groups);
      pf.group_of.clear();
    }
    if (pf.withdrawals.capacity() > kKeep) std::vector<codec::NlriPrefix>().swap(pf.withdrawals);
  }
  if (seen_.capacity() > kKeep) std::vector<Seen>().swap(seen_);
  if (cache_.size() > kKeep) clear_cache();
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

size_t Exporter::adj_out_size(FamilyIndex f) const {
  return is_v6_family(f) ? fam_[f].v6->size() : fam_[f].v4->size();
}

void Exporter::reserve(FamilyIndex f, size_t n) {
  if (is_v6_family(f)) fam_[f].v6->reserve(n);
  else fam_[f].v4->reserve(n);
}

void Exporter::settle(std::vector<Seen>& seen) {
  // A shard read whole that the peer was never sent anything of brings
  // new prefixes in the table's map order, i.e. in hash order: room for
  // them first (growing while they come costs a probe run as long as the
  // map; a 1M table took 45 % of the daemon's time in set()).
  // A peer that holds an eighth of the table the router expects
  // (router.expected_*_prefixes) gets room for all of it at once: a map
  // that doubles holds its old and new slot arrays together at each step
  // (a 1M-route table arriving while the peer was up: 25 + 50 MB at the
  // last step, and 50 MB for good, half empty, where 32 MB at three
  // quarters full does). A peer its filter gives less keeps growing.
  std::array<size_t, kFamilies> fresh{}, before{};
  for (const Seen& s : seen)
    if (s.attrs && resyncing_[s.shard] && !ever_held_[s.shard]) ++fresh[s.family];
  for (size_t f = 0; f < kFamilies; ++f) {
    before[f] = adj_out_size(static_cast<FamilyIndex>(f));
    size_t want = before[f] + fresh[f];
    if (const size_t expected = table_.expected_prefixes(static_cast<FamilyIndex>(f));
        expected > 0 && before[f] * 8 >= expected)
      want = std::max(want, expected);
    if (want > before[f]) reserve(static_cast<FamilyIndex>(f), want);
  }
  size_t first_reads = 0;
  for (size_t i = 0; i < resyncing_.size(); ++i)
    if (resyncing_[i] && !ever_read_[i]) {
      ever_read_[i] = 1;
      ++first_reads;
    }
  // A shard the peer was never sent anything of has nothing to forget
  // (the initial table: no walk of the Adj-RIB-Out per shard read).
  bool any_resync = false;
  // Shards read whole: what changes is marked, not queued (PerFamily::bulk).
  bulk_ = std::find(resyncing_.begin(), resyncing_.end(), 1) != resyncing_.end();
  for (size_t i = 0; i < resyncing_.size(); ++i) {
    if (resyncing_[i] && ever_held_[i]) {
      forget_shard(i);
      any_resync = true;
    }
    resyncing_[i] = 0;
  }
  // Looks ahead: the cache slot and the Adj-RIB-Out slot of a prefix a
  // few places on are asked for while this one is worked out (each is a
  // likely cache miss in a full table).
  constexpr size_t kAhead = 8;
  auto ask = [&](const Seen& s) {
    if (s.attrs) cache_.prefetch(cache_key(s));
    PerFamily& pf = fam_[s.family];
    if (is_v6_family(s.family)) pf.v6->prefetch(Key6::of(s.prefix));
    else pf.v4->prefetch(Key4::of(s.prefix));
  };
  for (size_t i = 0; i < std::min(kAhead, seen.size()); ++i) ask(seen[i]);
  for (size_t i = 0; i < seen.size(); ++i) {
    Seen& s = seen[i];
    if (i + kAhead < seen.size()) ask(seen[i + kAhead]);
    wants_.clear();
    if (setup_.params.add_path_send.has(family_at(s.family))) {
      ranked(s, wants_, setup_.add_path_max, nullptr);
    } else if (s.attrs) {
      if (Attrs* want = outgoing(s)) {
        wants_.push_back({0, want, setup_.shared ? static_cast<uint16_t>(s.slot) : uint16_t{0}});
      } else if (setup_.target.route_server_client) {
        // RFC 7947 section 2.3: the best path not for this client (its
        // own, its filter, NO_EXPORT...) hides no other: the best of those
        // that can go to it, under the one identifier of a session without
        // ADD-PATH. (In an update group the group's filter decides here;
        // a member's own best route is skipped by the member.)
        ranked(s, wants_, 1, &s);
        for (Want& w : wants_) w.id = 0;
      }
      if (setup_.shared && setup_.target.route_server_client && !wants_.empty()) {
        // The member whose route this is skips it: the best path that is
        // not its own goes to it alone (its own route hides no other).
        const uint16_t member = wants_[0].source;
        const size_t main = wants_.size();
        ranked(s, wants_, 1, nullptr, member);
        for (size_t k = main; k < wants_.size(); ++k) {
          wants_[k].id = kOtherPathId;
          wants_[k].source = member;
        }
      }
    }
    if (s.attrs) {
      table_.interner().release(s.attrs);
      s.attrs = nullptr;
    }
    if (!wants_.empty()) ever_held_[s.shard] = 1;
    set(s.family, s.prefix, wants_);
  }
  // The initial table: the shards are alike in size (prefixes go to them
  // by hash), so what the first read shards brought says what those not
  // read yet will: room for all of it at once, rather than a map that
  // grows (moving every entry) as each shard comes. A peer whose filter
  // refuses everything made none, and reserves none.
  if (const size_t unread = static_cast<size_t>(std::count(ever_read_.begin(), ever_read_.end(), 0));
      first_reads > 0 && unread > 0)
    for (size_t f = 0; f < kFamilies; ++f) {
      const size_t now = adj_out_size(static_cast<FamilyIndex>(f));
      if (now > before[f]) reserve(static_cast<FamilyIndex>(f), now + (now - before[f]) * unread / first_reads);
    }
  seen.clear();
  if (seen.capacity() > 65536) std::vector<Seen>().swap(seen);  // a resync's worth is not kept
  bulk_ = false;
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
    for (const auto& p : gone) {
      wants_.clear();
      set(static_cast<FamilyIndex>(f), p, wants_);
    }
  }
}

RouteFacts export_facts(const net::Prefix& p, const PeerInfo& source, Validation v, AspaState aspa) {
  RouteFacts facts;
  facts.prefix = &p;
  facts.rpki = v;
  facts.aspa = aspa;
  facts.peer_type = source.local ? PeerType::kLocal : source.internal ? PeerType::kInternal : PeerType::kExternal;
  return facts;
}

Exported export_with_changes(const ExportTarget& to, const ExportSource& from, codec::Family f,
                             const codec::AttributeSet& src, const PolicyChain* policy, const PolicyVerdict& verdict) {
  Exported e = export_route(to, from, f, src);
  if (e.verdict != ExportVerdict::kSend || !policy || !verdict.changes()) return e;
  codec::PathAttributes pa = e.attrs.decode();
  const codec::PathAttributes original = src.decode();
  ApplyContext ctx;
  ctx.local_as = to.local_as;
  ctx.family = f;
  ctx.original = &original;
  ctx.self_v4 = to.next_hop_v4;
  ctx.self_v6 = to.next_hop_v6;
  ctx.extended_next_hop_v4 = to.extended_next_hop_v4;
  if (policy->apply(verdict, pa, ctx)) e.attrs = codec::AttributeSet::from(pa);
  else e.verdict = ExportVerdict::kNoNextHop;
  return e;
}

Attrs* Exporter::outgoing(const Seen& s) {
  CacheKey key = cache_key(s);
  PolicyVerdict verdict;
  std::optional<codec::AttributeSet> src;  // the source's set, when the policy read it
  if (setup_.filter) {
    src = s.attrs->decode();
    const RouteFacts facts = export_facts(s.prefix, s.source.info(), s.validation, s.aspa);
    verdict = setup_.filter->evaluate(*src, facts, policy_scratch_);
    if (!verdict.accept) {
      counters_.filtered.fetch_add(1, std::memory_order_relaxed);
      return nullptr;
    }
    if (verdict.changes()) {
      auto it = std::find(verdicts_.begin(), verdicts_.end(), verdict);
      if (it == verdicts_.end() && verdicts_.size() < kMaxVerdicts) it = verdicts_.insert(verdicts_.end(), verdict);
      // Past the bound: no number, so no cache (0 would be "no changes").
      key.verdict = it == verdicts_.end() ? 0 : static_cast<uint16_t>(it - verdicts_.begin() + 1);
    }
  }
  const bool cached = !verdict.changes() || key.verdict != 0;
  if (Attrs** hit = cached ? cache_.find(key) : nullptr) {
    if (*hit) Interner::acquire(*hit);
    return *hit;
  }
  if (cache_.size() >= kMaxCache) clear_cache();
  if (cache_.size() >= cache_check_at_) {
    // The table's set count costs a lock of each of its interner's
    // stripes: asked once per kCacheSlack new entries, not per entry (it
    // was 7 % of a 1M-route run's CPU). The memo stays within
    // 2 x sets + 4096 + kCacheSlack.
    if (cache_.size() > 2 * table_.interner().size() + 4096) clear_cache();
    cache_check_at_ = cache_.size() + kCacheSlack;
  }
  const PeerInfo from = s.source.info();
  const codec::Family family = family_at(s.family);
  Exported e = export_with_changes(setup_.target, ExportSource{&from, s.slot}, family,
                                   src ? *src : s.attrs->decode(), setup_.filter, verdict);
  Attrs* out = e.verdict == ExportVerdict::kSend ? out_sets_.intern(e.attrs) : nullptr;
  if (!cached) return out;  // the caller's reference
  if (e.verdict == ExportVerdict::kOversized) {
    // Counted once per source set while the cache holds the answer.
    counters_.oversized.fetch_add(1, std::memory_order_relaxed);
    if (!first_oversized_)
      first_oversized_ = OversizedRoute{s.prefix, family_at(s.family), s.attrs->wire().size(),
                                        setup_.params.max_message_len(),
                                        "AS_PATH or CLUSTER_LIST too long for its length field once ours is added"};
  }
  Interner::acquire(s.attrs);  // the key's reference
  cache_.try_emplace(key, out);  // the value's reference
  if (out) Interner::acquire(out);  // the caller's
  return out;
}

void Exporter::ranked(const Seen& s, std::vector<Want>& wants, size_t max_paths, const Seen* refused,
                      uint32_t not_from) {
  // Every path of the prefix, copied out of the shard's lock.
  struct Path {
    Attrs* attrs;
    PeerInfo source;
    uint32_t slot, path_id;
    bool eligible;
    Validation validation;
    AspaState aspa;
    uint32_t igp_cost;
  };
  std::vector<Path> paths;
  table_.lookup_all(s.family, s.prefix, [&](std::span<const RouteView> routes, int) {
    for (const RouteView& r : routes) {
      Interner::acquire(const_cast<Attrs*>(r.attrs));
      PeerInfo v;  // what best-path selection reads; not the name
      v.address = r.peer->address;
      v.router_id = r.peer->router_id;
      v.asn = r.peer->asn;
      v.internal = r.peer->internal;
      v.rr_client = r.peer->rr_client;
      v.local = r.peer->local;
      paths.push_back(
          {const_cast<Attrs*>(r.attrs), std::move(v), r.slot, r.path_id, table_.eligible(r), r.validation, r.aspa,
           r.igp_cost});
    }
  });
  // Best-path order: the best, then the best of the rest, and so on.
  std::vector<Candidate> cands;
  for (const Path& x : paths) cands.push_back(Candidate{x.attrs, &x.source, x.path_id, x.slot, x.eligible, x.igp_cost});
  std::vector<size_t> index(paths.size());
  for (size_t i = 0; i < index.size(); ++i) index[i] = i;
  const size_t max = max_paths ? max_paths : paths.size();
  size_t taken = 0;
  while (!cands.empty() && taken < max) {
    int b = select_best(cands, table_.best_path_options());
    if (b < 0) break;
    const Path& x = paths[index[static_cast<size_t>(b)]];
    cands.erase(cands.begin() + b);
    index.erase(index.begin() + b);
    if (refused && x.attrs == refused->attrs && x.slot == refused->slot) continue;  // asked already
    if (x.slot == not_from) continue;
    Seen one{s.prefix, s.family, x.attrs, Source::of(x.source), x.slot, s.shard, x.validation, x.aspa};
    Attrs* out = outgoing(one);
    if (!out) continue;  // not for this peer (its own, NO_EXPORT, a filter): the next one may be
    // Stable: the source's slot and path identifier, never 0.
    const uint32_t id = (x.slot + 1) | (x.path_id << 12);
    if (std::any_of(wants.begin(), wants.end(), [&](const Want& w) { return w.id == id; })) {
      out_sets_.release(out);
      continue;
    }
    wants.push_back({id, out, setup_.shared ? static_cast<uint16_t>(x.slot) : uint16_t{0}});
    ++taken;
  }
  for (const Path& x : paths) table_.interner().release(x.attrs);
}

template <typename M, typename E>
void Exporter::erase_entry(PerFamily& pf, M& m, E* e) {
  if ((pf.refresh == PerFamily::Refresh::kWalking && !pf.walk_done) || walkers_ > 0) {
    pf.empties = true;
    return;
  }
  m.erase(e);
}

void Exporter::set(FamilyIndex f, const net::Prefix& p, std::vector<Want>& wants) {
  PerFamily& pf = fam_[f];
  auto apply = [&](auto& m, auto key) {
    auto* e = m.find(key);
    if (!e) {
      if (wants.empty()) return;
      e = &m.find_or_insert(key);
    }
    // The paths held: kept, changed or withdrawn.
    for (uint32_t i = 0; i < e->size();) {
      Route& r = e->routes()[i];
      r.flags &= static_cast<uint16_t>(~kStaleOut);
      auto w = std::find_if(wants.begin(), wants.end(), [&](const Want& x) { return x.id == r.path_id; });
      if (w != wants.end()) {
        if (r.attrs == w->attrs && r.peer == w->source) {
          out_sets_.release(w->attrs);
        } else {
          unsettle(r, f);
          // Another source's route, after some version went out: that
          // source's member holds the version and will not be sent this one.
          if (setup_.shared && (r.flags & kAdvertised) && w->source != r.peer) {
            // The other path for a member moves to another member: the
            // first loses it.
            if (r.path_id == kOtherPathId) pf.only.push_back({{p, kOtherPathId}, r.peer});
            else pf.only.push_back({{p, r.path_id}, w->source});
          }
          if (r.attrs) out_sets_.release(r.attrs);
          r.attrs = w->attrs;
          r.peer = w->source;
          queue(pf, p, r);
        }
        wants.erase(w);
        ++i;
        continue;
      }
      if (!r.attrs && (r.flags & kQueued)) {  // a withdrawal already queued
        ++i;
        continue;
      }
      unsettle(r, f);
      if (r.attrs) out_sets_.release(r.attrs);
      r.attrs = nullptr;
      if (!(r.flags & kAdvertised)) {  // never written: nothing to take back
        unbulk(pf, r);
        e->remove(i);
        continue;
      }
      queue(pf, p, r);
      ++i;
    }
    // New paths.
    for (const Want& w : wants) {
      e->push(Route{w.attrs, w.id, w.source, 0});
      queue(pf, p, e->routes()[e->size() - 1]);
    }
    wants.clear();
    if (e->empty()) erase_entry(pf, m, e);
  };
  if (is_v6_family(f)) apply(*pf.v6, Key6::of(p));
  else apply(*pf.v4, Key4::of(p));
}

void Exporter::queue(PerFamily& pf, const net::Prefix& p, Route& r) {
  r.flags |= kQueued;
  if (!r.attrs) {
    unbulk(pf, r);
    pf.withdrawals.push_back({p, r.path_id});
    return;
  }
  if (bulk_) {
    if (!(r.flags & kBulk)) {
      r.flags |= kBulk;
      ++pf.bulk;
    }
    pf.bulk_part = 0;  // parts already turned into groups are scanned again for it
    return;
  }
  unbulk(pf, r);
  enqueue(pf, p, r);
}

void Exporter::unbulk(PerFamily& pf, Route& r) {
  if (!(r.flags & kBulk)) return;
  r.flags = static_cast<uint16_t>(r.flags & ~kBulk);
  assert(pf.bulk > 0);
  --pf.bulk;
}

void Exporter::bulk_to_groups(FamilyIndex f) {
  PerFamily& pf = fam_[f];
  if (pf.bulk_part == 0) {
    pf.bulk_parts = static_cast<uint32_t>(std::min<size_t>(64, pf.bulk / std::max<size_t>(1, setup_.bulk_part) + 1));
    // The memo served the settling; the write needs none (release_scratch
    // would drop it once the queue is written).
    if (cache_.size() > 4096) clear_cache();
  }
  const uint32_t part = pf.bulk_part++;
  const uint64_t parts = pf.bulk_parts;
  auto take = [&](auto& m) {
    m.for_each([&](auto& e) {
      for (Route& r : e.routes()) {
        if (!(r.flags & kBulk)) continue;
        const QueueKey k{r.attrs, r.peer, r.path_id == kOtherPathId};
        if (((QueueKeyTraits::hash(k) * 0x9E3779B97F4A7C15ull) >> 32) * parts >> 32 != part) continue;
        unbulk(pf, r);
        enqueue(pf, e.key.prefix(), r);
      }
    });
  };
  if (is_v6_family(f)) take(*pf.v6);
  else take(*pf.v4);
  if (pf.bulk_part >= pf.bulk_parts) {
    // Every marked route has a set, so it was in one of the parts.
    assert(pf.bulk == 0);
    pf.bulk_part = 0;
  }
}

void Exporter::enqueue(PerFamily& pf, const net::Prefix& p, const Route& r) {
  const bool other = r.path_id == kOtherPathId;
  auto [index, fresh] =
      pf.group_of.try_emplace(QueueKey{r.attrs, r.peer, other}, static_cast<uint32_t>(pf.groups.size()));
  if (fresh) {
    Interner::acquire(r.attrs);
    pf.groups.push_back(Group{r.attrs, r.peer, other, {}});
  }
  pack(pf.groups[*index].prefixes, {p, r.path_id}, p.family() == net::IpFamily::V6);
}

RefreshOutcome Exporter::refresh(codec::Family fam) {
  int fi = codec::known_index(fam);
  if (fi < 0 || !setup_.families.has(fam) || setup_.send_nothing) return RefreshOutcome::kIgnored;
  counters_.refresh_requests.fetch_add(1, std::memory_order_relaxed);
  PerFamily& pf = fam_[static_cast<size_t>(fi)];
  switch (pf.refresh) {
    case PerFamily::Refresh::kNone:
      pf.refresh = PerFamily::Refresh::kPending;
      return RefreshOutcome::kQueued;
    case PerFamily::Refresh::kPending: return RefreshOutcome::kCoalesced;
    case PerFamily::Refresh::kWalking:
      if (pf.refresh_again) return RefreshOutcome::kCoalesced;
      pf.refresh_again = true;
      return RefreshOutcome::kQueued;
  }
  return RefreshOutcome::kIgnored;
}

bool Exporter::refresh_owed() const {
  return std::any_of(fam_.begin(), fam_.end(),
                     [](const PerFamily& pf) { return pf.refresh != PerFamily::Refresh::kNone; });
}

void Exporter::feed_refreshes(std::vector<std::byte>& out, bool first_round) {
  // RFC 7313 section 4: no BoRR before End-of-RIB (and until then the
  // initial table is sending the whole Adj-RIB-Out anyway).
  if (!initial_sent_) return;
  for (size_t fi = 0; fi < kFamilies; ++fi) {
    PerFamily& pf = fam_[fi];
    const codec::Family fam = family_at(static_cast<FamilyIndex>(fi));
    const bool v6 = is_v6_family(static_cast<FamilyIndex>(fi));
    const size_t capacity = v6 ? pf.v6->capacity() : pf.v4->capacity();
    if (pf.refresh == PerFamily::Refresh::kPending) {
      if (setup_.enhanced_route_refresh)
        codec::encode_route_refresh(codec::RouteRefresh{fam, codec::RefreshSubtype::kBeginOfRefresh, {}}, out);
      pf.refresh = PerFamily::Refresh::kWalking;
      pf.walk_done = false;
      pf.cursor = 0;
      pf.walk_capacity = capacity;
      counters_.refreshes.fetch_add(1, std::memory_order_relaxed);
    }
    if (pf.refresh != PerFamily::Refresh::kWalking) continue;
    if (!pf.walk_done) {
      // A slice at a time: the next once the queue has gone out, and one a
      // pump() call whatever the queue holds, so that steady changes do
      // not hold a refresh back for ever.
      size_t queued = pf.withdrawals.size() + pf.bulk;
      for (const Group& g : pf.groups) queued += g.prefixes.size() / words_per_prefix(v6);
      if (queued >= setup_.refresh_slice && !first_round) continue;
      // A rehash moved every entry: from the start again (what went out
      // goes again; nothing is missed).
      if (capacity != pf.walk_capacity) {
        pf.cursor = 0;
        pf.walk_capacity = capacity;
      }
      auto walk = [&](auto& m) {
        pf.cursor = m.visit_from(pf.cursor, std::max<size_t>(1, setup_.refresh_slice), [&](auto& e) {
          // What is queued goes anyway; what the peer was never sent (too
          // large) is not its to hold.
          for (Route& r : e.routes())
            if (r.attrs && (r.flags & kAdvertised) && !(r.flags & kQueued)) queue(pf, e.key.prefix(), r);
        });
        if (pf.cursor < m.capacity()) return;
        pf.walk_done = true;
        if (pf.empties && walkers_ == 0) {
          m.sweep([](const auto& e) { return !e.empty(); });
          pf.empties = false;
        }
      };
      if (v6) walk(*pf.v6);
      else walk(*pf.v4);
    }
    end_refresh_if_done(pf, fam, out);
  }
}

void Exporter::end_refresh_if_done(PerFamily& pf, codec::Family fam, std::vector<std::byte>& out) {
  if (pf.refresh != PerFamily::Refresh::kWalking || !pf.walk_done || !pf.groups.empty() || !pf.withdrawals.empty() ||
      pf.bulk > 0)
    return;
  if (setup_.enhanced_route_refresh)
    codec::encode_route_refresh(codec::RouteRefresh{fam, codec::RefreshSubtype::kEndOfRefresh, {}}, out);
  pf.refresh = pf.refresh_again ? PerFamily::Refresh::kPending : PerFamily::Refresh::kNone;
  pf.refresh_again = false;
}

void Exporter::set_filter(const PolicyChain* filter, bool send_nothing) {
  // "none" once routes went out: a filter that refuses everything, so what
  // the peer holds is withdrawn (send_nothing alone would stop reading).
  static const auto kNothing = PolicyChain::compile({PolicyDef{"none", {}, PolicyThen::kReject}});
  setup_.filter = send_nothing && primed_ ? kNothing.get() : filter;
  clear_cache();  // its answers were the old policy's
  verdicts_.clear();
  setup_.send_nothing = send_nothing && !primed_;
  follower_ = table_.follow();  // the whole table again, compared with the Adj-RIB-Out
}

size_t Exporter::write(std::vector<std::byte>& out, size_t budget) {
  const size_t start = out.size();
  std::vector<codec::NlriPrefix> nlri;
  for (size_t fi = 0; fi < kFamilies; ++fi) {
    PerFamily& pf = fam_[fi];
    const codec::Family fam = family_at(static_cast<FamilyIndex>(fi));
    const bool v6 = is_v6_family(static_cast<FamilyIndex>(fi));
    auto route_of = [&](const codec::NlriPrefix& p) {
      return v6 ? find<Key6>(pf, p.prefix, p.path_id) : find<Key4>(pf, p.prefix, p.path_id);
    };
    auto erase = [&](const codec::NlriPrefix& p) {
      auto drop = [&](auto& m, auto key) {
        auto* e = m.find(key);
        for (uint32_t k = 0; k < e->size(); ++k)
          if (e->routes()[k].path_id == p.path_id) {
            e->remove(k);
            break;
          }
        if (e->empty()) erase_entry(pf, m, e);
      };
      if (v6) drop(*pf.v6, Key6::of(p.prefix));
      else drop(*pf.v4, Key4::of(p.prefix));
    };
    nlri.clear();  // the withdrawals for every member, sent after those for one
    if (!pf.withdrawals.empty()) {
      for (const auto& p : pf.withdrawals) {
        Route* r = route_of(p);
        if (!r || r->attrs || !(r->flags & kQueued)) continue;  // announced again since, or done
        if (r->path_id == kOtherPathId) {  // its member's alone
          if (r->flags & kAdvertised) pf.only.push_back({p, r->peer});
          erase(p);
          continue;
        }
        if (r->flags & kAdvertised) {
          nlri.push_back(p);
          counters_.advertised[fi].fetch_sub(1, std::memory_order_relaxed);
        }
        erase(p);
      }
      pf.withdrawals.clear();
    }
    if (!pf.only.empty()) {
      std::vector<codec::NlriPrefix> only_nlri;
      // Still that source's route (or its withdrawal): its member alone.
      std::sort(pf.only.begin(), pf.only.end(), [](const PerFamily::Only& x, const PerFamily::Only& y) {
        return x.source < y.source;
      });
      for (size_t i = 0; i < pf.only.size();) {
        const uint16_t src = pf.only[i].source;
        only_nlri.clear();
        for (; i < pf.only.size() && pf.only[i].source == src; ++i) {
          const codec::NlriPrefix& np = pf.only[i].prefix;
          if (np.path_id == kOtherPathId) {  // the other path it held went to another member
            only_nlri.push_back(np);
            continue;
          }
          Route* r = route_of(np);
          if (r && r->peer == src) only_nlri.push_back(np);
        }
        if (only_nlri.empty()) continue;
        auto n = builder_.withdraw(fam, only_nlri, out);
        mark(StreamMark::Kind::kOnly, src, static_cast<FamilyIndex>(fi), only_nlri.size(), n ? *n : 0, out);
      }
      pf.only.clear();
    }
    if (!nlri.empty()) {
      auto n = builder_.withdraw(fam, nlri, out);
      if (n) counters_.updates.fetch_add(*n, std::memory_order_relaxed);
      counters_.withdrawn.fetch_add(nlri.size(), std::memory_order_relaxed);
      mark(StreamMark::Kind::kWithdraw, kNoSource, static_cast<FamilyIndex>(fi), nlri.size(), n ? *n : 0, out);
    }
    // A bulk goes into groups a part at a time, the next part once the
    // groups of the last are written.
    while (out.size() - start < budget) {
      for (uint32_t parts = 0; pf.groups.empty() && pf.bulk > 0 && parts <= pf.bulk_parts; ++parts)
        bulk_to_groups(static_cast<FamilyIndex>(fi));
      if (pf.groups.empty()) break;
      Group g = std::move(pf.groups.back());
      pf.groups.pop_back();
      pf.group_of.erase(QueueKey{g.attrs, g.source, g.other});
      nlri.clear();
      written_.clear();
      unpack_each(g.prefixes, v6, [&](const codec::NlriPrefix& p) {
        Route* r = route_of(p);
        if (!r || r->attrs != g.attrs || r->peer != g.source || !(r->flags & kQueued)) return;
        unbulk(pf, *r);  // marked again with the set it had: this is its write
        nlri.push_back(p);
        written_.push_back(r);
      });
      if (!nlri.empty()) {
        size_t before = out.size();
        auto n = builder_.announce(fam, g.attrs->decode(), nlri, out);
        if (n) {
          for (Route* r : written_) {
            if (!(r->flags & kAdvertised) && !g.other) counters_.advertised[fi].fetch_add(1, std::memory_order_relaxed);
            r->flags = static_cast<uint16_t>((r->flags & ~kQueued) | kAdvertised);
          }
          if (setup_.shared) {
            auto& counts = g.other ? other_for_ : by_source_;
            if (counts.size() <= g.source) counts.resize(size_t{g.source} + 1);
            counts[g.source][fi] += written_.size();
          }
          counters_.updates.fetch_add(*n, std::memory_order_relaxed);
          counters_.announced.fetch_add(nlri.size(), std::memory_order_relaxed);
          mark(g.other ? StreamMark::Kind::kOnlyAnnounce : StreamMark::Kind::kAnnounce,
               setup_.shared ? g.source : kNoSource, static_cast<FamilyIndex>(fi), nlri.size(), *n, out);
        } else {
          out.resize(before);
          refuse_oversized(static_cast<FamilyIndex>(fi), *g.attrs, written_, nlri, n.error(), out);
        }
      }
      out_sets_.release(g.attrs);
    }
    end_refresh_if_done(pf, fam, out);
  }
  return out.size() - start;
}

void Exporter::refuse_oversized(FamilyIndex f, const Attrs& attrs, std::span<Route* const> routes,
                                std::span<const codec::NlriPrefix> nlri, std::string_view reason,
                                std::vector<std::byte>& out) {
  // The set stays the entry's (what the peer should hold, were it not for
  // its size): the same set again changes nothing, another one is tried.
  std::vector<codec::NlriPrefix> gone;
  // Other paths (kOtherPathId) were for one member: so is their withdrawal.
  const bool other = !routes.empty() && routes[0]->path_id == kOtherPathId;
  for (size_t i = 0; i < routes.size(); ++i) {
    Route* r = routes[i];
    if (r->flags & kAdvertised) {
      gone.push_back(nlri[i]);
      if (!other) counters_.advertised[f].fetch_sub(1, std::memory_order_relaxed);
    }
    r->flags = static_cast<uint16_t>(r->flags & ~(kQueued | kAdvertised));
  }
  counters_.oversized.fetch_add(routes.size(), std::memory_order_relaxed);
  const codec::Family fam = family_at(f);
  if (!gone.empty()) {
    auto n = builder_.withdraw(fam, gone, out);
    if (n) counters_.updates.fetch_add(*n, std::memory_order_relaxed);
    counters_.withdrawn.fetch_add(gone.size(), std::memory_order_relaxed);
    mark(other ? StreamMark::Kind::kOnly : StreamMark::Kind::kWithdraw, other ? routes[0]->peer : kNoSource, f,
         gone.size(), n ? *n : 0, out);
  }
  if (first_oversized_ || nlri.empty()) return;
  const codec::AttributeSet set = attrs.decode();
  std::vector<std::byte> block;
  builder_.encode_attributes(set, fam == codec::kIpv4Unicast && set.next_hop().has_value(), block);
  first_oversized_ = OversizedRoute{nlri.front().prefix, fam, block.size(), setup_.params.max_message_len(), reason};
}

void Exporter::unsettle(const Route& r, FamilyIndex f) {
  if (!setup_.shared || !(r.flags & kAdvertised) || (r.flags & kQueued)) return;
  auto& counts = r.path_id == kOtherPathId ? other_for_ : by_source_;
  if (r.peer < counts.size()) --counts[r.peer][f];
}

void Exporter::mark(StreamMark::Kind kind, uint16_t source, FamilyIndex f, size_t prefixes, size_t messages,
                    const std::vector<std::byte>& out) {
  if (!marks_) return;
  marks_->push_back(StreamMark{static_cast<uint32_t>(out.size()), source, kind, f, static_cast<uint32_t>(prefixes),
                               static_cast<uint32_t>(messages)});
}

void Exporter::sweep_empties() {
  for (PerFamily& pf : fam_) {
    if (!pf.empties || (pf.refresh == PerFamily::Refresh::kWalking && !pf.walk_done)) continue;
    pf.v4->sweep([](const auto& e) { return !e.empty(); });
    pf.v6->sweep([](const auto& e) { return !e.empty(); });
    pf.empties = false;
  }
}

void Exporter::end_walk() {
  if (walkers_ > 0 && --walkers_ == 0) sweep_empties();
}

bool Exporter::walk(MemberWalk& w, uint16_t exclude, codec::UpdateBuilder& builder, std::vector<std::byte>& out,
                    size_t budget, uint64_t& announced, uint64_t& messages) {
  const size_t start = out.size();
  std::vector<std::pair<Attrs*, codec::NlriPrefix>> found;
  std::vector<codec::NlriPrefix> nlri;
  for (size_t fi = 0; fi < kFamilies && out.size() - start < budget; ++fi) {
    const codec::Family fam = family_at(static_cast<FamilyIndex>(fi));
    if (!w.families.has(fam)) continue;
    PerFamily& pf = fam_[fi];
    const bool v6 = is_v6_family(static_cast<FamilyIndex>(fi));
    const size_t capacity = v6 ? pf.v6->capacity() : pf.v4->capacity();
    if (!w.started || capacity != w.capacity) {  // a rehash moved every entry: from the start again
      w.cursor = 0;
      w.capacity = capacity;
      w.started = true;
    }
    while (out.size() - start < budget) {
      found.clear();
      auto visit = [&](auto& m) {
        w.cursor = m.visit_from(w.cursor, 1024, [&](auto& e) {
          // Only what went out: a route never written comes to the member
          // from the stream (it joined before the write), and one dropped
          // before its write would never be withdrawn from it.
          // A member gets every path but its own, and the other path kept
          // for it alone where its own is the best (kOtherPathId).
          for (Route& r : e.routes())
            if (r.attrs && (r.flags & kAdvertised) && (r.path_id == kOtherPathId) == (r.peer == exclude))
              found.emplace_back(r.attrs,
                                 codec::NlriPrefix{e.key.prefix(), r.path_id == kOtherPathId ? 0 : r.path_id});
        });
        return w.cursor >= m.capacity();
      };
      const bool done = v6 ? visit(*pf.v6) : visit(*pf.v4);
      // Prefixes of one set together, in the order the walk met the sets.
      std::stable_sort(found.begin(), found.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
      for (size_t i = 0; i < found.size();) {
        Attrs* a = found[i].first;
        nlri.clear();
        for (; i < found.size() && found[i].first == a; ++i) nlri.push_back(found[i].second);
        const size_t before = out.size();
        auto n = builder.announce(fam, a->decode(), nlri, out);
        if (!n) {
          out.resize(before);  // too large for this session: the group counts it when it writes
          continue;
        }
        announced += nlri.size();
        messages += *n;
      }
      if (done) {
        w.families.remove(fam);
        w.started = false;
        break;
      }
    }
  }
  return w.families.empty();
}

void Exporter::adopt(const Exporter& from, uint16_t exclude, bool initial_sent) {
  for (size_t f = 0; f < kFamilies; ++f) {
    auto copy = [&](const auto& src, auto& dst) {
      dst.reserve(src.size());
      // Unchanged since it went out: the member holds exactly it; changed
      // (queued): some version, which whatever is wanted now replaces.
      auto hold = [&](const auto& e, const Route& r, uint32_t id) {
        const bool settled = r.attrs && !(r.flags & kQueued);
        Attrs* a = settled ? r.attrs : nullptr;
        if (a) Interner::acquire(a);
        dst.find_or_insert(e.key).push(Route{a, id, 0, kAdvertised});
        counters_.advertised[f].fetch_add(1, std::memory_order_relaxed);
      };
      src.for_each([&](const auto& e) {
        if (exclude == kNoSource) {  // an exporter of one peer: what it holds, path by path
          for (const Route& r : e.routes())
            if (r.flags & kAdvertised) hold(e, r, r.path_id);
          return;
        }
        // A group's: the member holds the other path kept for it, or the
        // best if it is not the member's own, or (its own, changed since)
        // perhaps what it had before.
        const Route* best = nullptr;
        const Route* other = nullptr;
        for (const Route& r : e.routes()) {
          if (r.path_id == kOtherPathId && r.peer == exclude) other = &r;
          else if (r.path_id == 0) best = &r;
        }
        if (other && (other->flags & kAdvertised)) hold(e, *other, 0);
        else if (best && (best->flags & kAdvertised) && (best->peer != exclude || (best->flags & kQueued)))
          hold(e, best->peer == exclude ? Route{nullptr, 0, 0, kQueued} : *best, 0);
      });
    };
    copy(*from.fam_[f].v4, *fam_[f].v4);
    copy(*from.fam_[f].v6, *fam_[f].v6);
  }
  std::fill(ever_held_.begin(), ever_held_.end(), 1);
  primed_ = true;
  initial_sent_ = initial_sent;
}

}  // namespace petrel::table
