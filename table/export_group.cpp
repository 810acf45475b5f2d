// Update groups (export_group.h).
#include "table/export_group.h"

#include <algorithm>

#include "codec/route_refresh.h"

namespace petrel::table {

namespace {

constexpr size_t kChunkBytes = 256 * 1024;  // a chunk's room: a write that does not fit starts the next
constexpr size_t kKeepScratch = 1u << 20;   // the group's write buffer keeps at most this between writes
constexpr uint32_t kNoSlot = UINT32_MAX;    // the group's target: nobody's split horizon
constexpr size_t kWalkSlice = 32 * 1024;    // octets a walk writes per pump

// Whether two policies are the same.
bool same_filter(const PolicyChain* a, const PolicyChain* b) {
  if (a == b) return true;
  if (!a || !b) return false;
  return *a == *b;
}

}  // namespace

class ExportGroup {
 public:
  ExportGroup(Table& table, Interner& out_sets, ExporterSetup setup, std::shared_ptr<const PolicyChain> filter, bool alone)
      : setup_(std::move(setup)),
        filter_(std::move(filter)),
        alone_(alone),
        exporter_(table, out_sets, setup_) {}

  // A run of the stream. Its bytes are shared with the members' send
  // queues (sendq::append_shared), which keep them until they went out:
  // they are never moved or changed once written, so a chunk's room is
  // reserved when it is made and a write that does not fit goes into the
  // next chunk.
  struct Chunk {
    uint64_t start = 0;  // its first octet's position in the stream
    std::shared_ptr<std::vector<std::byte>> bytes;
    std::vector<StreamMark> marks;
    [[nodiscard]] size_t size() const { return bytes->size(); }
  };

  // Lets the exporter write up to `budget` more octets into the stream;
  // true when it has work left.
  bool advance(size_t budget) {
    // The exporter writes into scratch_ (a write may go past the budget by
    // a whole set's announcements), which is then copied into the chunk.
    scratch_.clear();
    scratch_marks_.clear();
    exporter_.set_marks(&scratch_marks_);
    more_ = exporter_.pump(scratch_, budget);
    exporter_.set_marks(nullptr);
    // The history is kept only while it is announcements alone: once it
    // withdraws (a peer went, its slot may be taken by another) a
    // newcomer replaying it could be sent its own routes for a while.
    for (const StreamMark& m : scratch_marks_)
      if (m.kind == StreamMark::Kind::kWithdraw || m.kind == StreamMark::Kind::kOnly) history_limit_ = 0;
    if (!scratch_.empty() || !scratch_marks_.empty()) {
      if (chunks_.empty() || chunks_.back().size() + scratch_.size() > chunks_.back().bytes->capacity()) {
        auto bytes = std::make_shared<std::vector<std::byte>>();
        bytes->reserve(std::max(kChunkBytes, scratch_.size()));
        chunks_.push_back(Chunk{head_, std::move(bytes), {}});
      }
      Chunk& c = chunks_.back();
      const size_t base = c.size();
      c.bytes->insert(c.bytes->end(), scratch_.begin(), scratch_.end());
      for (StreamMark m : scratch_marks_) {
        m.end += static_cast<uint32_t>(base);
        c.marks.push_back(m);
      }
      head_ += scratch_.size();
    }
    if (scratch_.capacity() > kKeepScratch) std::vector<std::byte>().swap(scratch_);
    if (head_ > history_limit_) history_limit_ = 0;  // too long to keep: newcomers are walked
    if (!eor_end_ && exporter_.initial_done()) eor_end_ = head_;
    return more_;
  }

  // Marks the members more than max_lag behind: the stream stops keeping
  // what they have not read (their sessions end).
  void leave_behind(uint64_t max_lag) {
    for (GroupMember* m : members_)
      if (head_ - m->pos_ > max_lag) m->too_slow_.store(true, std::memory_order_relaxed);
  }

  // Drops the chunks every member has read.
  void collect() {
    if (history_limit_ > 0 || chunks_.empty()) return;  // kept whole for newcomers, or nothing held
    uint64_t low = head_;
    for (const GroupMember* m : members_)
      if (!m->too_slow()) low = std::min(low, m->pos_);
    while (!chunks_.empty() && chunks_.front().start + chunks_.front().size() <= low) chunks_.pop_front();
  }

  [[nodiscard]] uint64_t held_bytes() const {
    uint64_t n = 0;
    for (const Chunk& c : chunks_) n += c.size();
    return n;
  }

  std::mutex mu_;
  ExporterSetup setup_;  // the group's: shared, target.slot kNoSlot (unless alone)
  std::shared_ptr<const PolicyChain> filter_;
  bool alone_;           // one member, not to be joined: an exporter of its own
  Exporter exporter_;
  std::deque<Chunk> chunks_;
  std::vector<std::byte> scratch_;  // advance()'s
  std::vector<StreamMark> scratch_marks_;
  uint64_t head_ = 0;    // the stream's length so far
  // While the stream is no longer than this, it is kept whole from its
  // start (0: not any more).
  uint64_t history_limit_ = 0;
  bool more_ = true;
  std::optional<uint64_t> eor_end_;  // where the group's End-of-RIB ends
  std::vector<GroupMember*> members_;
};

// ---- ExportGroups

ExportGroups::~ExportGroups() = default;

bool ExportGroups::same_group(const ExporterSetup& a, const PolicyChain* fa, const ExporterSetup& b, const PolicyChain* fb) {
  ExportTarget ta = a.target, tb = b.target;
  ta.slot = tb.slot = kNoSlot;
  return ta == tb && same_filter(fa, fb) && a.send_nothing == b.send_nothing &&
         a.params.four_octet_as == b.params.four_octet_as &&
         a.params.extended_message == b.params.extended_message &&
         a.params.add_path_send.bits() == b.params.add_path_send.bits() &&
         a.params.extended_next_hop.bits() == b.params.extended_next_hop.bits() &&
         a.families.bits() == b.families.bits() && a.add_path_max == b.add_path_max;
}

std::shared_ptr<ExportGroup> ExportGroups::make(const ExporterSetup& setup, std::shared_ptr<const PolicyChain> filter,
                                                bool alone) {
  ExporterSetup g = setup;
  g.filter = filter.get();
  g.shared = !alone;
  if (!alone) g.target.slot = kNoSlot;
  auto group = std::make_shared<ExportGroup>(table_, out_sets_, std::move(g), std::move(filter), alone);
  if (!alone) group->history_limit_ = history_;
  return group;
}

std::unique_ptr<GroupMember> ExportGroups::join(ExporterSetup setup, std::shared_ptr<const PolicyChain> filter,
                                                uint16_t slot) {
  setup.filter = filter.get();
  // ADD-PATH send picks each peer's best n paths among the others': a
  // group of its own.
  const bool alone = !setup.params.add_path_send.empty();
  std::shared_ptr<ExportGroup> group;
  {
    std::lock_guard lock(mu_);
    std::erase_if(groups_, [](const std::weak_ptr<ExportGroup>& w) { return w.expired(); });
    if (!alone)
      for (const auto& w : groups_) {
        auto g = w.lock();
        if (g && !g->alone_ && same_group(g->setup_, g->filter_.get(), setup, filter.get())) {
          group = std::move(g);
          break;
        }
      }
    if (!group) {
      group = make(setup, filter, alone);
      groups_.push_back(group);
    }
  }
  auto m = std::unique_ptr<GroupMember>(new GroupMember(*this, group, std::move(setup), std::move(filter), slot));
  std::lock_guard lock(group->mu_);
  m->pos_ = group->head_;
  if (group->history_limit_ > 0) m->pos_ = 0;  // the whole stream is there: read from its start
  // (The oversized routes the newcomer's peer is not sent are counted for
  // it from here on.)
  m->oversized_seen_ = group->exporter_.counters().oversized.load(std::memory_order_relaxed);
  if (m->pos_ > 0) {
    // The group wrote already: what it holds goes to the newcomer by a
    // walk, and End-of-RIB after it if the group's is behind.
    m->walk_ = MemberWalk{m->setup_.families, 0, 0, false};
    group->exporter_.begin_walk();
    m->eor_owed_ = group->eor_end_.has_value();
  }
  group->members_.push_back(m.get());
  return m;
}

ExportGroups::Stats ExportGroups::stats() const {
  Stats s;
  std::vector<std::shared_ptr<ExportGroup>> live;
  {
    std::lock_guard lock(mu_);
    for (const auto& w : groups_)
      if (auto g = w.lock()) live.push_back(std::move(g));
  }
  for (const auto& g : live) {
    std::lock_guard lock(g->mu_);
    ++s.groups;
    s.members += g->members_.size();
    s.messages += g->exporter_.counters().updates.load(std::memory_order_relaxed);
    s.stream_bytes += g->held_bytes();
  }
  return s;
}

// ---- GroupMember

GroupMember::GroupMember(ExportGroups& groups, std::shared_ptr<ExportGroup> group, ExporterSetup setup,
                         std::shared_ptr<const PolicyChain> filter, uint16_t slot)
    : groups_(groups),
      group_(std::move(group)),
      setup_(std::move(setup)),
      filter_(std::move(filter)),
      slot_(slot),
      builder_(setup_.params) {}

GroupMember::~GroupMember() { leave(); }

void GroupMember::leave() {
  if (!group_) return;
  std::lock_guard lock(group_->mu_);
  if (walk_) group_->exporter_.end_walk();
  walk_.reset();
  std::erase(group_->members_, this);
  group_->collect();
}

bool GroupMember::initial_done() const {
  std::lock_guard lock(group_->mu_);
  return eor_sent_;
}

size_t GroupMember::group_size() const {
  std::lock_guard lock(group_->mu_);
  return group_->members_.size();
}

RefreshOutcome GroupMember::refresh(codec::Family f) {
  if (codec::known_index(f) < 0 || !setup_.families.has(f) || setup_.send_nothing) return RefreshOutcome::kIgnored;
  std::lock_guard lock(group_->mu_);
  counters_.refresh_requests.fetch_add(1, std::memory_order_relaxed);
  if (walk_ && walk_is_refresh_ && refresh_family_ == f) {
    // What went out before the request may have been read under the
    // peer's old policy: one more walk after this one.
    if (refresh_again_.has(f)) return RefreshOutcome::kCoalesced;
    refresh_again_.add(f);
    return RefreshOutcome::kQueued;
  }
  if (refresh_owed_.has(f)) return RefreshOutcome::kCoalesced;
  refresh_owed_.add(f);
  return RefreshOutcome::kQueued;
}

void GroupMember::set_filter(std::shared_ptr<const PolicyChain> filter, bool send_nothing) {
  std::lock_guard lock(group_->mu_);
  switch_to_.emplace(std::move(filter), send_nothing);
}

void GroupMember::copy_stream(Out& out, size_t budget) {
  ExportGroup& g = *group_;
  const size_t start = out.size();
  for (const ExportGroup::Chunk& c : g.chunks_) {
    if (c.start + c.size() <= pos_) continue;
    // The first run that ends after the cursor (runs end in order).
    auto it = std::upper_bound(c.marks.begin(), c.marks.end(), pos_ - c.start,
                               [](uint64_t at, const StreamMark& m) { return at < m.end; });
    for (; it != c.marks.end(); ++it) {
      if (out.size() - start >= budget) return;
      const size_t from = it == c.marks.begin() ? 0 : (it - 1)->end;
      const StreamMark& m = *it;
      bool mine = true;
      switch (m.kind) {
        case StreamMark::Kind::kAnnounce: mine = m.source != slot_ || g.alone_; break;
        case StreamMark::Kind::kWithdraw: break;
        case StreamMark::Kind::kOnly:
        case StreamMark::Kind::kOnlyAnnounce: mine = m.source == slot_ && !g.alone_; break;
        case StreamMark::Kind::kEndOfRib: mine = !eor_sent_; break;
      }
      if (mine) {
        if (out.queue) {
          out.queue->append_shared(c.bytes, from, m.end - from);  // encoded once, sent by every member
        } else {
          out.bytes.insert(out.bytes.end(), c.bytes->begin() + static_cast<std::ptrdiff_t>(from),
                           c.bytes->begin() + static_cast<std::ptrdiff_t>(m.end));
        }
        // End-of-RIB is not counted as an UPDATE (as an exporter does).
        if (m.kind != StreamMark::Kind::kEndOfRib) counters_.updates.fetch_add(m.messages, std::memory_order_relaxed);
        if (m.kind == StreamMark::Kind::kAnnounce || m.kind == StreamMark::Kind::kOnlyAnnounce)
          counters_.announced.fetch_add(m.prefixes, std::memory_order_relaxed);
        else if (m.kind != StreamMark::Kind::kEndOfRib) counters_.withdrawn.fetch_add(m.prefixes, std::memory_order_relaxed);
        else eor_sent_ = true;
      }
      pos_ = c.start + m.end;
    }
  }
}

void GroupMember::walk_step(std::vector<std::byte>& out, size_t budget) {
  ExportGroup& g = *group_;
  uint64_t announced = 0, messages = 0;
  const bool done =
      g.exporter_.walk(*walk_, g.alone_ ? kNoSource : slot_, builder_, out, budget, announced, messages);
  counters_.announced.fetch_add(announced, std::memory_order_relaxed);
  counters_.updates.fetch_add(messages, std::memory_order_relaxed);
  if (!done) return;
  g.exporter_.end_walk();
  walk_.reset();
  if (walk_is_refresh_) {
    walk_is_refresh_ = false;
    if (setup_.enhanced_route_refresh)
      codec::encode_route_refresh(codec::RouteRefresh{refresh_family_, codec::RefreshSubtype::kEndOfRefresh, {}}, out);
    if (refresh_again_.has(refresh_family_)) {
      refresh_again_.remove(refresh_family_);
      refresh_owed_.add(refresh_family_);
    }
    return;
  }
  if (eor_owed_ && !eor_sent_) {
    for (codec::Family f : codec::kKnownFamilyList)
      if (setup_.families.has(f)) codec::UpdateBuilder::end_of_rib(f, out);
    eor_sent_ = true;
  }
}

void GroupMember::sync_counters() {
  const Exporter& ex = group_->exporter_;
  for (size_t f = 0; f < kFamilies; ++f) {
    uint64_t n = ex.counters().advertised[f].load(std::memory_order_relaxed);
    if (!group_->alone_) {
      n -= std::min(n, ex.advertised_from(slot_, static_cast<FamilyIndex>(f)));
      n += ex.advertised_for(slot_, static_cast<FamilyIndex>(f));
    }
    counters_.advertised[f].store(n, std::memory_order_relaxed);
  }
  counters_.filtered.store(ex.counters().filtered.load(std::memory_order_relaxed), std::memory_order_relaxed);
  counters_.resyncs.store(ex.counters().resyncs.load(std::memory_order_relaxed), std::memory_order_relaxed);
  const uint64_t oversized = ex.counters().oversized.load(std::memory_order_relaxed);
  if (oversized > oversized_seen_) counters_.oversized.fetch_add(oversized - oversized_seen_, std::memory_order_relaxed);
  oversized_seen_ = oversized;
  if (!first_oversized_ && ex.first_oversized()) first_oversized_ = ex.first_oversized();
}

bool GroupMember::pump(std::vector<std::byte>& out, size_t budget) {
  Out o{out, nullptr};
  return pump(o, budget);
}

bool GroupMember::pump(sendq::SendQueue& out, size_t budget) {
  Out o{out.tail(), &out};
  return pump(o, budget);
}

bool GroupMember::pump(Out& out, size_t budget) {
  std::unique_lock lock(group_->mu_);
  if (too_slow()) return false;  // left behind: the stream did not keep its part
  if (switch_to_ && !walk_ && pos_ >= group_->head_) {
    // A new export filter, the whole stream read: an exporter of its own
    // that starts from what the peer holds (the group's Adj-RIB-Out).
    auto [filter, none] = std::move(*switch_to_);
    switch_to_.reset();
    ExporterSetup s = setup_;
    s.filter = filter.get();
    s.send_nothing = false;
    auto own = groups_.make(s, filter, true);
    {
      // (Lock order: a group's, then the registry's; join and stats never
      // hold the registry's while taking a group's.)
      std::lock_guard registry(groups_.mu_);
      groups_.groups_.push_back(own);
    }
    own->exporter_.adopt(group_->exporter_, group_->alone_ ? kNoSource : slot_, eor_sent_);
    own->exporter_.set_filter(filter.get(), none);
    std::erase(group_->members_, this);
    group_->collect();
    lock.unlock();
    setup_ = s;
    setup_.send_nothing = none;
    filter_ = std::move(filter);
    group_ = std::move(own);
    lock = std::unique_lock(group_->mu_);
    group_->members_.push_back(this);
    pos_ = 0;
    oversized_seen_ = 0;
  }
  ExportGroup& g = *group_;
  const size_t start = out.size();
  const uint64_t head_before = g.head_;
  auto used = [&] { return out.size() - start; };
  if (!walk_ && eor_sent_ && !refresh_owed_.empty()) {
    for (codec::Family f : codec::kKnownFamilyList) {
      if (!refresh_owed_.has(f)) continue;
      refresh_owed_.remove(f);
      if (setup_.enhanced_route_refresh)
        codec::encode_route_refresh(codec::RouteRefresh{f, codec::RefreshSubtype::kBeginOfRefresh, {}}, out.bytes);
      codec::FamilySet one;
      one.add(f);
      walk_ = MemberWalk{one, 0, 0, false};
      walk_is_refresh_ = true;
      refresh_family_ = f;
      g.exporter_.begin_walk();
      counters_.refreshes.fetch_add(1, std::memory_order_relaxed);
      break;
    }
  }
  // A walk goes in short slices: members joining (a burst of returning
  // peers) share their worker with the members that must be told of
  // changes now, whose turns come between the slices (head-of-line).
  if (walk_) walk_step(out.bytes, std::min(budget, kWalkSlice));
  for (int round = 0; round < 8 && used() < budget; ++round) {
    if (walk_) break;  // the walk first: the stream waits at the cursor
    if (pos_ < g.head_) {
      copy_stream(out, budget - used());
      continue;
    }
    // Everything read: the group writes more (the first member to get
    // here does the work for all).
    const uint64_t before = g.head_;
    g.advance(budget - used());
    if (g.head_ == before) break;
  }
  // Only a longer stream leaves anyone behind: the members are looked at
  // once per write of the group, by the member that wrote (after its copy).
  if (g.head_ != head_before) g.leave_behind(groups_.max_lag_);
  sync_counters();
  // Only a member past the first chunk may have been the last to hold it.
  if (!g.chunks_.empty() && g.chunks_.front().start + g.chunks_.front().size() <= pos_) g.collect();
  return walk_.has_value() || pos_ < g.head_ || g.more_ || !refresh_owed_.empty() || switch_to_.has_value();
}

}  // namespace petrel::table
