// The per-shard map from prefix to its routes: open addressing with linear
// probing and backward-shift deletion (no tombstones), slots holding the
// entries themselves. An IPv4 entry is 24 octets, an IPv6 entry 40; a
// prefix's single route is stored in its entry, several in one array.
// The capacity is any number of slots (a key's home is its hash scaled to
// the capacity, not masked), so a map reserved for n prefixes is sized for
// n, not for the next power of two: a 1M-prefix map took 2^21 slots (48
// MiB, under half full) and takes 1.33M (32 MiB).
#pragma once

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "crates/alloc/huge_pages.h"
#include "crates/net/ip.h"
#include "table/attrs.h"

namespace petrel::table {

// One path to a prefix: 16 octets.
struct Route {
  Attrs* attrs = nullptr;
  uint32_t path_id = 0;   // RFC 7911, 0 without ADD-PATH
  uint16_t peer = 0;      // the peer's slot
  uint16_t flags = 0;
  static constexpr uint16_t kStale = 1;       // kept until swept (route refresh, graceful restart)
  static constexpr uint16_t kIneligible = 2;  // NEXT_HOP unresolvable
  // RFC 6811 validation state in bits 2-3 (table/table.h, Validation).
  static constexpr unsigned kValidationShift = 2;
  static constexpr uint16_t kValidationMask = 3u << kValidationShift;
  // ASPA verification state in bits 4-5 (table/table.h, AspaState).
  static constexpr unsigned kAspaShift = 4;
  static constexpr uint16_t kAspaMask = 3u << kAspaShift;
  // Bits 6-15: the table's pre_med_rank of the route (best_path.h, at
  // most 1023), 0 when unknown.
  static constexpr unsigned kRankShift = 6;
  static constexpr uint16_t kRankMask = 0xFFC0;
  [[nodiscard]] uint16_t rank() const { return static_cast<uint16_t>(flags >> kRankShift); }
  void set_rank(uint16_t r) { flags = static_cast<uint16_t>((flags & ~kRankMask) | ((r & 0x3FFu) << kRankShift)); }
};
static_assert(sizeof(Route) == 16);

// The odd multipliers of the prefix keys' hashes, drawn once per process
// from its HashKey: a peer chooses the prefixes it announces, and with
// fixed, public multipliers it could choose IPv6 prefixes that all share
// one home (the old mix was invertible: 200,000 such /64s made each insert
// walk all the others, under the shard's lock, and every later look-up
// too). A random odd multiplier makes two keys share a home about as
// seldom as random homes would (multiply-shift hashing is universal).
struct PrefixHashKey {
  uint64_t m0 = 0, m1 = 0, m2 = 0;
  static PrefixHashKey of(const HashKey& k) {
    auto odd = [](uint64_t x) {
      x ^= x >> 33;  // a drawn key's bits spread (the interner's key is not shown as is)
      x *= 0xFF51AFD7ED558CCDull;
      x ^= x >> 29;
      return x | 1;
    };
    return {odd(k.k0), odd(k.k1), odd(k.k0 ^ k.k1 ^ 0x9E3779B97F4A7C15ull)};
  }
};
inline const PrefixHashKey kPrefixHash = PrefixHashKey::of(HashKey::process());

// Keys: the prefix of one IP family, packed.
struct [[gnu::packed]] Key4 {
  uint32_t addr = 0;
  uint8_t len = 0xFF;  // 0xFF: an empty slot
  static constexpr uint8_t kEmpty = 0xFF;
  static Key4 of(const net::Prefix& p) { return {p.addr().v4_value(), p.len()}; }
  [[nodiscard]] net::Prefix prefix() const { return *net::Prefix::make(net::IpAddress::v4(addr), len); }
  [[nodiscard]] uint64_t hash() const { return (uint64_t{addr} << 8 | len) * kPrefixHash.m0; }
  friend bool operator==(const Key4&, const Key4&) = default;
};
struct [[gnu::packed]] Key6 {
  uint64_t hi = 0, lo = 0;
  uint8_t len = 0xFF;
  static constexpr uint8_t kEmpty = 0xFF;
  static Key6 of(const net::Prefix& p) {
    Key6 k;
    std::memcpy(&k.hi, p.addr().data(), 8);
    std::memcpy(&k.lo, p.addr().data() + 8, 8);
    k.len = p.len();
    return k;
  }
  [[nodiscard]] net::Prefix prefix() const {
    uint8_t b[16];
    std::memcpy(b, &hi, 8);
    std::memcpy(b + 8, &lo, 8);
    return *net::Prefix::make(net::IpAddress::from_bytes(net::IpFamily::V6, b), len);
  }
  // The halves multiplied apart and added (multiply-add vector hashing),
  // the top bits into the middle ones, which Table::shard_of takes.
  [[nodiscard]] uint64_t hash() const {
    const uint64_t h = hi * kPrefixHash.m1 + (lo + len) * kPrefixHash.m2;
    return h ^ (h >> 31);
  }
  friend bool operator==(const Key6&, const Key6&) = default;
};

// A prefix's routes when they are many (more than kIndexFrom: an ADD-PATH
// peer's paths, a route server's peers): the array, an index from (peer,
// path identifier) to a route's place, and each peer's count of routes,
// so that finding a path and counting a peer's paths take constant and
// logarithmic time, not a scan of the array per UPDATE (which made a
// flood of paths for one prefix quadratic). The index is open addressing
// with linear probing, at most half full; a key's home is a
// multiply-shift hash whose multiplier comes from the table's random key
// (the path identifiers are the peer's choice: with a known multiplier a
// peer could pick identifiers that all share one home).
class ManyRoutes {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;
  ManyRoutes(std::span<const Route> routes, uint32_t best, uint64_t salt)
      : routes_(routes.begin(), routes.end()), best_(best), mul_((salt ^ 0x9E3779B97F4A7C15ull) | 1) {
    for (const Route& r : routes_) add_count(r.peer);
    rebuild(routes_.size() + 1);
  }
  [[nodiscard]] std::span<Route> routes() { return routes_; }
  [[nodiscard]] uint32_t size() const { return static_cast<uint32_t>(routes_.size()); }
  [[nodiscard]] uint32_t best() const { return best_; }
  void set_best(uint32_t i) { best_ = i; }
  [[nodiscard]] uint32_t find(uint16_t peer, uint32_t path_id) const {
    for (size_t i = home(peer, path_id);; i = (i + 1) & mask()) {
      const uint32_t v = slots_[i];
      if (v == 0) return kNone;
      const Route& r = routes_[v - 1];
      if (r.peer == peer && r.path_id == path_id) return v - 1;
    }
  }
  // Routes of `peer` here.
  [[nodiscard]] uint32_t count_of(uint16_t peer) const {
    auto it = std::lower_bound(peers_.begin(), peers_.end(), peer,
                               [](const PeerCount& c, uint16_t p) { return c.peer < p; });
    return it != peers_.end() && it->peer == peer ? it->n : 0;
  }
  void push(const Route& r) {
    routes_.push_back(r);
    add_count(r.peer);
    if (routes_.size() * 2 > slots_.size()) rebuild(routes_.size());
    else link(static_cast<uint32_t>(routes_.size() - 1));
  }
  // As Entry::remove: the last route takes route i's place; the best is
  // unset.
  Route remove(uint32_t i) {
    const Route gone = routes_[i];
    const auto last = static_cast<uint32_t>(routes_.size() - 1);
    unlink(slot_of(i));
    if (i != last) {
      slots_[slot_of(last)] = i + 1;
      routes_[i] = routes_[last];
    }
    routes_.pop_back();
    drop_count(gone.peer);
    best_ = kNone;
    // Memory follows the routes down (a quarter full at most).
    if (routes_.size() * 4 < routes_.capacity()) {
      routes_.shrink_to_fit();
      rebuild(routes_.size());
    } else if (routes_.size() * 8 < slots_.size()) {
      rebuild(routes_.size());
    }
    return gone;
  }
  [[nodiscard]] size_t heap_bytes() const {
    return sizeof(ManyRoutes) + routes_.capacity() * sizeof(Route) + slots_.capacity() * sizeof(uint32_t) +
           peers_.capacity() * sizeof(PeerCount);
  }

 private:
  struct PeerCount {
    uint16_t peer;
    uint32_t n;
  };
  [[nodiscard]] size_t mask() const { return slots_.size() - 1; }
  [[nodiscard]] size_t home(uint16_t peer, uint32_t path_id) const {
    return static_cast<size_t>(((uint64_t{peer} << 32 | path_id) * mul_) >> shift_);
  }
  [[nodiscard]] size_t home_of(uint32_t place) const { return home(routes_[place].peer, routes_[place].path_id); }
  // The index slot that holds route `place`.
  [[nodiscard]] size_t slot_of(uint32_t place) const {
    size_t i = home_of(place);
    while (slots_[i] != place + 1) i = (i + 1) & mask();
    return i;
  }
  void link(uint32_t place) {
    size_t i = home_of(place);
    while (slots_[i] != 0) i = (i + 1) & mask();
    slots_[i] = place + 1;
  }
  // Backward-shift deletion: a later slot of the probe run moves into the
  // hole when its home does not lie cyclically in (i, j].
  void unlink(size_t i) {
    for (size_t j = (i + 1) & mask();; j = (j + 1) & mask()) {
      const uint32_t v = slots_[j];
      if (v == 0) break;
      const size_t h = home_of(v - 1);
      if (((j - h) & mask()) >= ((j - i) & mask())) {
        slots_[i] = v;
        i = j;
      }
    }
    slots_[i] = 0;
  }
  // An index for n routes: the power of two at least 2n (and 16).
  void rebuild(size_t n) {
    size_t cap = 16;
    while (cap < 2 * n) cap *= 2;
    slots_.assign(cap, 0);
    slots_.shrink_to_fit();
    shift_ = 64 - static_cast<unsigned>(__builtin_ctzll(cap));
    for (uint32_t p = 0; p < routes_.size(); ++p) link(p);
  }
  void add_count(uint16_t peer) {
    auto it = std::lower_bound(peers_.begin(), peers_.end(), peer,
                               [](const PeerCount& c, uint16_t p) { return c.peer < p; });
    if (it != peers_.end() && it->peer == peer) ++it->n;
    else peers_.insert(it, PeerCount{peer, 1});
  }
  void drop_count(uint16_t peer) {
    auto it = std::lower_bound(peers_.begin(), peers_.end(), peer,
                               [](const PeerCount& c, uint16_t p) { return c.peer < p; });
    assert(it != peers_.end() && it->peer == peer);
    if (--it->n == 0) peers_.erase(it);
  }

  std::vector<Route> routes_;
  std::vector<uint32_t> slots_;  // a route's place + 1; 0: empty
  std::vector<PeerCount> peers_;  // by peer
  uint32_t best_;
  uint64_t mul_;
  unsigned shift_ = 64;
};

// A prefix and its routes: one inline, or several in an array on the
// heap sized to fit (malloc'd: 16 octets a route, which jemalloc's size
// classes hold exactly up to 8 routes), or more than kIndexFrom in a
// ManyRoutes (back to an array at kIndexFrom / 2). Plain bytes: the map
// moves entries with memcpy and frees the arrays itself. 24 octets for
// IPv4, 40 for IPv6.
template <typename K>
struct Entry {
  static constexpr uint32_t kNone = UINT32_MAX;

  // Beyond this many routes an entry keeps an index (ManyRoutes): up to
  // it a scan of the array (a kilobyte) is as quick, and the index's
  // memory is paid only by the prefixes with the most paths.
  static constexpr uint32_t kIndexFrom = 64;

  K key;
  uint8_t kind = 0;   // 0: no route, 1: `one`, 2: `many`, 3: `big`
  uint8_t best1 = 0;  // kind 1: 1 when `one` is the best route

  struct Many {
    Route* routes;
    uint32_t n;
    uint32_t best;
  };
  union {
    Route one;
    Many many;
    ManyRoutes* big;
  };

  Entry() : one() {}

  [[nodiscard]] uint32_t size() const { return kind == 3 ? big->size() : kind == 2 ? many.n : kind; }
  [[nodiscard]] bool empty() const { return kind == 0; }
  [[nodiscard]] std::span<Route> routes() {
    if (kind == 3) return big->routes();
    return kind == 2 ? std::span<Route>(many.routes, many.n) : std::span<Route>(&one, kind);
  }
  [[nodiscard]] std::span<const Route> routes() const { return const_cast<Entry*>(this)->routes(); }
  [[nodiscard]] uint32_t best() const {
    if (kind == 3) return big->best();
    return kind == 2 ? many.best : (kind == 1 && best1 ? 0 : kNone);
  }
  [[nodiscard]] const Route* best_route() const {
    uint32_t b = best();
    return b == kNone ? nullptr : &routes()[b];
  }
  void set_best(uint32_t i) {
    if (kind == 3) big->set_best(i);
    else if (kind == 2) many.best = i;
    else best1 = i == 0 && kind == 1;
  }
  // The index of the route of (peer, path_id), or kNone.
  [[nodiscard]] uint32_t find(uint16_t peer, uint32_t path_id) const {
    if (kind == 3) return big->find(peer, path_id);
    auto r = routes();
    for (uint32_t i = 0; i < r.size(); ++i)
      if (r[i].peer == peer && r[i].path_id == path_id) return i;
    return kNone;
  }
  // How many routes `peer` has here.
  [[nodiscard]] uint32_t count_of(uint16_t peer) const {
    if (kind == 3) return big->count_of(peer);
    uint32_t n = 0;
    for (const Route& r : routes()) n += r.peer == peer;
    return n;
  }
  // `salt`: the key of the index's hash when the routes become many
  // (ManyRoutes; the table passes a random one).
  void push(const Route& r, uint64_t salt = 0) {
    if (kind == 3) {
      big->push(r);
      return;
    }
    if (kind == 2 && many.n == kIndexFrom) {
      auto* b = new ManyRoutes(std::span<const Route>(many.routes, many.n), many.best, salt);
      std::free(many.routes);
      big = b;
      kind = 3;
      big->push(r);
      return;
    }
    if (kind == 0) {
      one = r;
      kind = 1;
      best1 = 0;
      return;
    }
    if (kind == 1) {
      auto* a = static_cast<Route*>(std::malloc(2 * sizeof(Route)));
      if (!a) throw std::bad_alloc();
      a[0] = one;
      a[1] = r;
      many = Many{a, 2, best1 ? 0 : kNone};
      kind = 2;
      return;
    }
    auto* a = static_cast<Route*>(std::realloc(many.routes, (many.n + 1) * sizeof(Route)));
    if (!a) throw std::bad_alloc();
    a[many.n] = r;
    many.routes = a;
    ++many.n;
  }
  // Removes route i: the last takes its place, the best is unset (the
  // caller chooses again). Returns the removed route.
  Route remove(uint32_t i) {
    if (kind == 3) {
      const Route gone = big->remove(i);
      if (big->size() <= kIndexFrom / 2) {
        const auto r = big->routes();
        auto* a = static_cast<Route*>(std::malloc(r.size() * sizeof(Route)));
        if (!a) throw std::bad_alloc();
        std::memcpy(static_cast<void*>(a), r.data(), r.size() * sizeof(Route));
        const auto n = static_cast<uint32_t>(r.size());
        delete big;
        many = Many{a, n, kNone};
        kind = 2;
      }
      return gone;
    }
    auto r = routes();
    Route gone = r[i];
    r[i] = r[r.size() - 1];
    if (kind == 1) {
      kind = 0;
      best1 = 0;
    } else if (many.n == 2) {
      Route last = many.routes[0];
      std::free(many.routes);
      one = last;
      kind = 1;
      best1 = 0;
    } else {
      --many.n;
      // Shrinking in place within a size class; never fails to keep the
      // old block.
      if (auto* a = static_cast<Route*>(std::realloc(many.routes, many.n * sizeof(Route)))) many.routes = a;
      many.best = kNone;
    }
    return gone;
  }
  // Frees the array, if any (the map's destructor).
  void free_routes() {
    if (kind == 2) std::free(many.routes);
    if (kind == 3) delete big;
    kind = 0;
  }
  [[nodiscard]] size_t heap_bytes() const {
    if (kind == 3) return big->heap_bytes();
    return kind == 2 ? many.n * sizeof(Route) : 0;
  }
};
static_assert(sizeof(Entry<Key4>) == 24 && sizeof(Entry<Key6>) == 40);

template <typename K>
class PrefixMap {
 public:
  PrefixMap() = default;
  PrefixMap(const PrefixMap&) = delete;
  PrefixMap& operator=(const PrefixMap&) = delete;
  ~PrefixMap() { destroy(); }

  // Asks the CPU for the cache line where k's probe starts. Callable
  // without the owner's lock: it reads only two relaxed atomics, and a
  // prefetch of a stale address is harmless.
  void prefetch(const K& k) const {
    uintptr_t base = prefetch_base_.load(std::memory_order_relaxed);
    size_t cap = prefetch_cap_.load(std::memory_order_relaxed);
    if (base == 0 || cap == 0) return;
    prefetch_line(reinterpret_cast<const void*>(base + scale(k.hash(), cap) * sizeof(Entry<K>)));
  }

  [[nodiscard]] size_t size() const { return size_; }
  [[nodiscard]] size_t capacity() const { return cap_; }
  [[nodiscard]] size_t slot_bytes() const { return cap_ * sizeof(Entry<K>); }

  // Slots between k's home and its entry (k must be in the map): how far
  // a look-up of k walks, for the tests.
  [[nodiscard]] size_t displacement(const K& k) const { return distance(home(k), static_cast<size_t>(find(k) - slots_.get())); }

  [[nodiscard]] const Entry<K>* find(const K& k) const { return const_cast<PrefixMap*>(this)->find(k); }
  [[nodiscard]] Entry<K>* find(const K& k) {
    if (size_ == 0) return nullptr;
    for (size_t i = home(k);; i = next(i)) {
      Entry<K>& e = slots_[i];
      if (e.key.len == K::kEmpty) return nullptr;
      if (e.key == k) return &e;
    }
  }
  // Room for n entries without growing. Keys that come in hash order (a
  // walk of another map) must go into a map sized for all of them: while
  // it grows they crowd the front of its slots in one long probe run.
  // A map that must grow for n is made three quarters full at n.
  void reserve(size_t n) {
    if (n * 5 > cap_ * 4) rehash(std::max<size_t>(16, n + n / 3 + 1));
  }
  // The entry of k, made (with no routes) if absent.
  Entry<K>& find_or_insert(const K& k) {
    if ((size_ + 1) * 5 > cap_ * 4) rehash(cap_ ? cap_ * 2 : 16);
    for (size_t i = home(k);; i = next(i)) {
      Entry<K>& e = slots_[i];
      if (e.key.len == K::kEmpty) {
        e.key = k;
        e.kind = 0;
        e.best1 = 0;
        ++size_;
        return e;
      }
      if (e.key == k) return e;
    }
  }
  // Removes an entry found by find()/find_or_insert() (its routes must be
  // gone); entries after it in its probe run move back.
  void erase(Entry<K>* e) {
    assert(e->empty());
    size_t i = static_cast<size_t>(e - slots_.get());
    assert(i < cap_);
    slots_[i].key.len = K::kEmpty;
    --size_;
    for (size_t j = next(i);; j = next(j)) {
      Entry<K>& f = slots_[j];
      if (f.key.len == K::kEmpty) break;
      size_t h = home(f.key);
      // f may move to i when i lies cyclically in [h, j).
      if (distance(h, j) >= distance(i, j)) {
        std::memcpy(static_cast<void*>(&slots_[i]), &f, sizeof(f));
        f.key.len = K::kEmpty;
        f.kind = 0;
        i = j;
      }
    }
  }
  template <typename F>
  void for_each(F&& f) {
    for (size_t i = 0; i < cap_; ++i)
      if (slots_[i].key.len != K::kEmpty) f(slots_[i]);
  }
  template <typename F>
  void for_each(F&& f) const {
    for (size_t i = 0; i < cap_; ++i)
      if (slots_[i].key.len != K::kEmpty) f(static_cast<const Entry<K>&>(slots_[i]));
  }
  // A walk in slices: visits the entries from slot `from` on, at most
  // `max_entries` of them, and returns the slot to go on from (capacity()
  // once every slot was seen). f must not insert or erase. Between slices
  // the walk sees every entry present throughout exactly once provided
  // nothing was erased (a backward shift moves entries) and the map did not
  // grow (a rehash moves them all): the caller keeps to both or starts over.
  template <typename F>
  size_t visit_from(size_t from, size_t max_entries, F&& f) {
    size_t i = from, seen = 0;
    for (; i < cap_ && seen < max_entries; ++i) {
      if (slots_[i].key.len == K::kEmpty) continue;
      f(slots_[i]);
      ++seen;
    }
    return i;
  }
  // Visits every entry; f returns true to keep the entry, false when it
  // has emptied its routes. Entries moved back by an erase are visited
  // once (a backward shift only moves entries from behind the cursor's
  // probe run onto it, and the run is re-examined).
  //
  // `ahead(entry, distance)`, when given, is shown the slots kFar and
  // kNear positions ahead of the cursor (entries or empty slots, possibly
  // seen again after an erase) so that it can ask the CPU for what f will
  // read there: a hint only, it must not change anything.
  static constexpr size_t kFar = 16, kNear = 8;
  template <typename F>
  void sweep(F&& f) {
    sweep(std::forward<F>(f), [](const Entry<K>&, size_t) {});
  }
  template <typename F, typename A>
  void sweep(F&& f, A&& ahead) {
    size_t i = 0;
    // Start after an empty slot so no probe run wraps around the start.
    while (i < cap_ && slots_[i].key.len != K::kEmpty) ++i;
    if (i == cap_) {  // never: the load factor is below 1
      return;
    }
    size_t start = i;
    for (size_t n = 0; n < cap_; ++n) {
      size_t at = wrap(start + 1 + n);
      ahead(static_cast<const Entry<K>&>(slots_[wrap(at + kFar)]), kFar);
      ahead(static_cast<const Entry<K>&>(slots_[wrap(at + kNear)]), kNear);
      for (;;) {  // an erase may move a later entry into `at`
        Entry<K>& e = slots_[at];
        if (e.key.len == K::kEmpty || f(e)) break;
        assert(e.empty());
        erase(&e);
      }
    }
  }
  // The map's own slot memory plus the routes' arrays.
  [[nodiscard]] size_t bytes() const {
    size_t b = slot_bytes();
    for (size_t i = 0; i < cap_; ++i)
      if (slots_[i].key.len != K::kEmpty) b += slots_[i].heap_bytes();
    return b;
  }

 private:
  // A hash's slot in a map of `cap` slots: its high bits scaled (the
  // hashes mix into their high bits).
  __extension__ using U128 = unsigned __int128;
  static size_t scale(uint64_t hash, size_t cap) { return static_cast<size_t>((U128{hash} * cap) >> 64); }
  [[nodiscard]] size_t home(const K& k) const { return scale(k.hash(), cap_); }
  [[nodiscard]] size_t next(size_t i) const { return i + 1 == cap_ ? 0 : i + 1; }
  // i for i < 2 * capacity, taken around the end.
  [[nodiscard]] size_t wrap(size_t i) const { return i >= cap_ ? i - cap_ : i; }
  // Slots from `from` forward to `to`, around the end.
  [[nodiscard]] size_t distance(size_t from, size_t to) const { return to >= from ? to - from : to + cap_ - from; }
  void rehash(size_t cap) {
    Slots old = std::move(slots_);
    size_t old_cap = cap_;
    slots_ = allocate(cap);
    cap_ = cap;
    prefetch_cap_.store(cap_, std::memory_order_relaxed);
    prefetch_base_.store(reinterpret_cast<uintptr_t>(slots_.get()), std::memory_order_relaxed);
    for (size_t i = 0; i < old_cap; ++i) {
      Entry<K>& e = old[i];
      if (e.key.len == K::kEmpty) continue;
      for (size_t j = home(e.key);; j = next(j)) {
        if (slots_[j].key.len == K::kEmpty) {
          std::memcpy(static_cast<void*>(&slots_[j]), &e, sizeof(e));
          break;
        }
      }
    }
  }
  void destroy() {
    prefetch_base_.store(0, std::memory_order_relaxed);
    for (size_t i = 0; i < cap_; ++i) slots_[i].free_routes();
    slots_.reset();
    cap_ = size_ = 0;
  }

  // The slot array (plain bytes: entries are trivially destructible). A
  // full table's maps are megabytes read at random: with 4 KiB pages
  // nearly every access also misses the TLB (a two-level walk under a
  // hypervisor), so arrays of 2 MiB or more are aligned to 2 MiB and offered
  // to the kernel for transparent huge pages (crates/alloc/huge_pages.h;
  // nothing happens where THP is off).
  struct Free {
    void operator()(Entry<K>* p) const { std::free(p); }
  };
  using Slots = std::unique_ptr<Entry<K>[], Free>;
  static constexpr size_t kHugePage = alloc::kHugePage;
  static Slots allocate(size_t cap) {
    size_t bytes = cap * sizeof(Entry<K>);
    void* p = nullptr;
    if (bytes >= kHugePage) {
      if (posix_memalign(&p, kHugePage, bytes) != 0) p = nullptr;
      if (p) alloc::advise_huge_pages(p, bytes);
    } else {
      p = std::malloc(bytes);
    }
    auto* e = static_cast<Entry<K>*>(p);
    if (!e) throw std::bad_alloc();
    for (size_t i = 0; i < cap; ++i) new (&e[i]) Entry<K>();
    return Slots(e);
  }
  static_assert(std::is_trivially_destructible_v<Entry<K>>);

  Slots slots_;
  size_t cap_ = 0, size_ = 0;
  std::atomic<uintptr_t> prefetch_base_{0};
  std::atomic<size_t> prefetch_cap_{0};
};

}  // namespace petrel::table
