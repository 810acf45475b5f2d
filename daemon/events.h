// The event stream behind GET /api/events (server-sent events,
// docs/http-api.md): session state changes, tapped from the daemon's log
// (daemon/log.h, log_subscribe), and best-route changes, read from the
// routing table by a follower of its journals (table/table.h, follow/read)
// on a thread of its own, which the table's writers wake (Table::subscribe)
// while a client listens.
//
// Each client has a bounded queue. Publishing never waits for a client:
// when a client's queue is full, its queue is replaced by one final
// "dropped" event and the client is closed, so a slow reader costs the
// daemon nothing but its own connection.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "crates/net/ip.h"
#include "table/table.h"

namespace petrel::daemon {

// One event as the stream sends it.
struct Event {
  uint64_t id = 0;
  std::string type;    // the SSE event name: session-up, session-down, best-change, resync, dropped
  std::string peer;    // for the peer= filter; empty: none
  std::optional<net::Prefix> prefix;  // for the prefix= filter
  std::string data;    // one line of JSON
};

// "id: 7\nevent: best-change\ndata: {...}\n\n".
std::string format_sse(const Event& e);

// What a client asked for: an event passes when each filter that applies
// to it matches (peer= to events of a peer, prefix= to events of a prefix;
// a best-change passes prefix=P when P covers its prefix).
struct EventFilter {
  std::string peer;
  std::optional<net::Prefix> prefix;
  [[nodiscard]] bool passes(const Event& e) const;
};

class EventClient {
 public:
  EventClient(EventFilter filter, size_t limit) : filter_(std::move(filter)), limit_(limit) {}

  // The next piece of the stream: an event's text when one is queued
  // within `wait_ms`, else a comment line that keeps the connection alive;
  // nullopt once the client is closed and everything queued was taken.
  std::optional<std::string> next(int wait_ms);
  [[nodiscard]] bool closed() const;

 private:
  friend class EventHub;
  // Queues e if it passes the filter; false when the client overflowed
  // (then only a final "dropped" event remains queued).
  void offer(const Event& e);
  void close();

  EventFilter filter_;
  size_t limit_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> queue_;
  bool closed_ = false;
};

class EventHub {
 public:
  static constexpr size_t kQueueLimit = 1024;  // events queued per client
  static constexpr size_t kMaxClients = 16;    // of the HTTP server's 64 connections

  EventHub();
  ~EventHub();
  EventHub(const EventHub&) = delete;
  EventHub& operator=(const EventHub&) = delete;

  // Follows `table` (which must outlive stop()) on a thread and taps the
  // log for session events.
  void start(const table::Table& table);
  // Stops the thread and closes every client (their streams end).
  void stop();
  // Closes every client (their streams end), and goes on: the HTTP
  // server moved (HttpServer::rebind), and its old connections end.
  void close_clients();

  // nullptr when kMaxClients streams are open already. The client gets
  // the best-route changes made after this call.
  std::shared_ptr<EventClient> subscribe(EventFilter filter, size_t limit = kQueueLimit);
  void unsubscribe(const std::shared_ptr<EventClient>& c);
  // Numbers the event and offers it to every client.
  void publish(Event e);
  [[nodiscard]] size_t clients() const;

 private:
  void follow_loop();

  // Taken before mu_ where both are.
  std::mutex follow_mu_;                 // the follower: the thread's reads, subscribe()'s skip
  const table::Table* table_ = nullptr;  // from start()
  std::optional<table::Follower> follower_;
  mutable std::mutex mu_;
  std::vector<std::shared_ptr<EventClient>> clients_;
  uint64_t next_id_ = 1;
  std::atomic<bool> stopping_{false};
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool woken_ = false;  // under stop_mu_: the table changed, or a first client came
  table::Subscription woken_by_table_;
  std::thread thread_;
};

}  // namespace petrel::daemon
