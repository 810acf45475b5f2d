// The event stream (daemon/events.h): clients' bounded queues, the log tap
// for session events and the table follower for best-route changes.
#include "daemon/events.h"

#include <fmt/format.h>

#include <chrono>

#include "codec/types.h"
#include "crates/json/json.h"
#include "daemon/log.h"
#include "table/table.h"

namespace petrel::daemon {

namespace {

constexpr size_t kReadMax = 4096;            // journal entries per shard per read
constexpr int kMaxReadsPerTick = 64;         // then wait kFloodPause, so a flood cannot pin a core
constexpr auto kFloodPause = std::chrono::milliseconds(100);
// The thread reads when the table wakes it (Table::subscribe), and at
// least this often while a client listens: a wake missed (none should be)
// delays a change by that much, never loses it.
constexpr auto kSafetyWait = std::chrono::milliseconds(1000);

// The session events the stream carries (daemon/peer.cpp logs them).
constexpr std::string_view kSessionEvents[] = {"session-up", "session-down", "link-down"};

// The hub the log tap publishes to; null when none runs.
std::mutex g_hub_mu;
EventHub* g_hub = nullptr;

void on_log(LogLevel, std::string_view event, std::initializer_list<LogField> fields, std::string_view message) {
  bool wanted = false;
  for (auto name : kSessionEvents) wanted = wanted || name == event;
  if (!wanted) return;
  std::lock_guard lock(g_hub_mu);
  if (g_hub == nullptr || g_hub->clients() == 0) return;
  Event e;
  e.type = std::string(event);
  std::string data;
  json::Writer w(data);
  w.begin_object();
  for (const auto& f : fields) {
    if (f.key == "peer") e.peer = f.value;
    w.member(f.key, f.value);
  }
  if (!message.empty()) w.member("reason", message);
  w.end_object();
  e.data = std::move(data);
  g_hub->publish(std::move(e));
}

// A best-route change as the stream sends it: the prefix and its best
// route now (null: no route left).
Event best_change(const table::FollowEvent& ev) {
  Event e;
  e.type = "best-change";
  e.prefix = ev.change.prefix;
  char buf[32];
  std::string data;
  json::Writer w(data);
  w.begin_object();
  w.member("prefix", ev.change.prefix.to_string());
  w.member("family", codec::family_name(codec::kKnownFamilyList[ev.change.family], buf));
  w.key_raw("best");
  if (!ev.best) {
    w.null();
  } else {
    const table::RouteView& b = *ev.best;
    e.peer = b.peer->name;
    w.begin_object();
    w.member("peer", b.peer->name);
    w.member("peer_address", b.peer->address.to_string());
    w.member("path_id", b.path_id);
    auto nh = b.attrs->next_hop();
    if (!nh) nh = b.attrs->mp_next_hop();
    w.key_raw("next_hop");
    if (nh) {
      w.string(nh->to_string());
    } else {
      w.null();
    }
    w.member("as_path_length", b.attrs->as_path_length());
    w.member("origin_as", b.attrs->origin_as());
    w.end_object();
  }
  w.end_object();
  e.data = std::move(data);
  return e;
}

}  // namespace

std::string format_sse(const Event& e) {
  // data holds one line of JSON, so one data: field carries it.
  return fmt::format("id: {}\nevent: {}\ndata: {}\n\n", e.id, e.type, e.data);
}

bool EventFilter::passes(const Event& e) const {
  if (!peer.empty() && !e.peer.empty() && e.peer != peer) return false;
  if (prefix && e.prefix && !prefix->contains(*e.prefix)) return false;
  return true;
}

// ---- EventClient

void EventClient::offer(const Event& e) {
  if (!filter_.passes(e)) return;
  std::lock_guard lock(mu_);
  if (closed_) return;
  if (queue_.size() >= limit_) {
    // Too slow: what is queued goes, one last event says why.
    queue_.clear();
    Event last;
    last.id = e.id;
    last.type = "dropped";
    last.data = fmt::format(R"({{"reason":"the client fell {} events behind"}})", limit_);
    queue_.push_back(format_sse(last));
    closed_ = true;
  } else {
    queue_.push_back(format_sse(e));
  }
  cv_.notify_one();
}

void EventClient::close() {
  std::lock_guard lock(mu_);
  closed_ = true;
  cv_.notify_all();
}

bool EventClient::closed() const {
  std::lock_guard lock(mu_);
  return closed_;
}

std::optional<std::string> EventClient::next(int wait_ms) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, std::chrono::milliseconds(wait_ms), [&] { return !queue_.empty() || closed_; });
  if (!queue_.empty()) {
    std::string s = std::move(queue_.front());
    queue_.pop_front();
    return s;
  }
  if (closed_) return std::nullopt;
  return std::string(": keep-alive\n\n");
}

// ---- EventHub

EventHub::EventHub() = default;

EventHub::~EventHub() { stop(); }

void EventHub::start(const table::Table& table) {
  {
    std::lock_guard lock(g_hub_mu);
    g_hub = this;
  }
  log_subscribe(&on_log);
  // The table as it is now is the starting point, not a change: the
  // follower's first pass (every shard's content) happens here, so every
  // change after start() is an event.
  table_ = &table;
  follower_ = table.follow();
  table.skip(*follower_);
  woken_by_table_ = table.subscribe([this] {
    {
      std::lock_guard lock(stop_mu_);
      woken_ = true;
    }
    stop_cv_.notify_one();
  });
  thread_ = std::thread([this] { follow_loop(); });
}

void EventHub::stop() {
  {
    std::lock_guard lock(g_hub_mu);
    if (g_hub == this) {
      log_subscribe(nullptr);
      g_hub = nullptr;
    }
  }
  {
    std::lock_guard lock(stop_mu_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  woken_by_table_.reset();
  close_clients();
}

void EventHub::close_clients() {
  std::lock_guard lock(mu_);
  for (auto& c : clients_) c->close();
  clients_.clear();
}

std::shared_ptr<EventClient> EventHub::subscribe(EventFilter filter, size_t limit) {
  std::shared_ptr<EventClient> c;
  {
    std::lock_guard follow_lock(follow_mu_);
    std::lock_guard lock(mu_);
    if (clients_.size() >= kMaxClients || stopping_) return nullptr;
    // With nobody listening the thread did not read: the changes until
    // now are nobody's events.
    if (clients_.empty() && follower_) table_->skip(*follower_);
    clients_.push_back(std::make_shared<EventClient>(std::move(filter), limit));
    c = clients_.back();
  }
  {
    std::lock_guard lock(stop_mu_);
    woken_ = true;
  }
  stop_cv_.notify_one();
  return c;
}

void EventHub::unsubscribe(const std::shared_ptr<EventClient>& c) {
  std::lock_guard lock(mu_);
  std::erase(clients_, c);
  c->close();
}

size_t EventHub::clients() const {
  std::lock_guard lock(mu_);
  return clients_.size();
}

void EventHub::publish(Event e) {
  std::lock_guard lock(mu_);
  e.id = next_id_++;
  for (auto& c : clients_) c->offer(e);
}

void EventHub::follow_loop() {
  std::vector<Event> batch;
  while (!stopping_) {
    bool flood = true;
    for (int reads = 0; reads < kMaxReadsPerTick && !stopping_; ++reads) {
      size_t handed = 0;
      {
        std::lock_guard follow_lock(follow_mu_);
        // Nobody listens: no read (it would take every shard's lock as
        // often as the exporters do, 4 % of the daemon's time under a full
        // feed) and no take(), so the table does not wake the thread
        // again; subscribe() moves the follower to the end and wakes it.
        if (clients() == 0) {
          flood = false;
          break;
        }
        (void)woken_by_table_.take();  // before the read: a change after it wakes the wait below
        size_t resync_shard = SIZE_MAX;  // events of a resync are the shard's content, not changes
        handed = table_->read(*follower_, kReadMax, [&](const table::FollowEvent& ev) {
          if (ev.resync) {
            resync_shard = ev.shard;
            // This follower fell behind the journal (it starts at the
            // end, so any resynchronisation here is one).
            Event e;
            e.type = "resync";
            e.data = fmt::format(R"({{"shard":{},"reason":"best-route changes were missed"}})", ev.shard);
            batch.push_back(std::move(e));
            return;
          }
          if (ev.shard == resync_shard || !ev.change.best_changed) return;
          batch.push_back(best_change(ev));
        });
      }
      // Published outside the shards' locks.
      for (auto& e : batch) publish(std::move(e));
      batch.clear();
      if (handed < kReadMax) {
        flood = false;
        break;
      }
    }
    std::unique_lock lock(stop_mu_);
    if (flood) {
      stop_cv_.wait_for(lock, kFloodPause, [&] { return stopping_.load(); });
    } else {
      stop_cv_.wait_for(lock, kSafetyWait, [&] { return stopping_ || woken_; });
      woken_ = false;
    }
  }
}

}  // namespace petrel::daemon
