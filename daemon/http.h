// The HTTP server of `[http] listen` (default 127.0.0.1:8179): the JSON API
// and Prometheus metrics of daemon/api.h, served by libmicrohttpd on its
// own threads, one per connection so that an event stream (daemon/events.h)
// can wait for its next event (docs/http-api.md, docs/metrics.md).
//
// A request never waits for the BGP side: it reads the peers' counters
// (relaxed atomics) and each peer's status snapshot (a short lock held only
// to copy it), never anything a worker owns.
//
// Two steps so that a configuration whose HTTP address cannot be bound
// fails before any session starts:
//   HttpServer http;
//   if (!http.bind(config)) return failure;   // logs why
//   ... server.start() ...
//   http.start(server);
//   ... server.run() ...
//   http.stop();                              // before the Server goes
//
// A reload may move or change [http] (rebind(), Server's reload_http
// hook): the new address is bound first and the old one serves on when it
// cannot be; otherwise the new daemon answers and the old one closes (its
// event streams end: clients connect again).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "daemon/config.h"

struct MHD_Daemon;

namespace petrel::daemon {

class EventHub;
class Server;
namespace api {
class PrefixListings;
}

class HttpServer {
 public:
  HttpServer();
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Opens the listening socket of config.http.listen and keeps what the
  // status body needs of config. True when HTTP is disabled (listen = "")
  // or the socket is bound; false, with an "http-listen-failed" log line,
  // when it cannot be.
  bool bind(const Config& config);
  // Starts answering requests about server's peers. server must outlive
  // stop(). False (logged) if libmicrohttpd cannot start its thread.
  bool start(const Server& server);
  // Stops the thread and closes the socket. Idempotent.
  void stop();
  // [http] of `config` from now on (main loop, after start()): listen
  // moved, added, removed, or its limits changed. Empty when done; else
  // why not, and the daemon as it was answers on.
  std::string rebind(const Config& config);

  // The bound port (useful when the configuration asked for port 0); 0
  // when disabled.
  [[nodiscard]] uint16_t port() const { return port_; }
  [[nodiscard]] bool enabled() const { return fd_ >= 0 || daemon_ != nullptr; }

  // What each request reads: the router's identity from the configuration
  // and the server whose peers it reports.
  struct Context {
    uint32_t asn = 0;
    std::string router_id;
    int64_t started_ms = 0;  // steady clock
    const Server* server = nullptr;
    EventHub* events = nullptr;  // GET /api/events
    api::PrefixListings* listings = nullptr;  // GET /api/routes pages
    uint32_t idle_timeout = 10;  // [http] idle_timeout: event streams' keep-alive comes sooner
  };

 private:
  // A libmicrohttpd daemon answering on fd with these limits, its
  // requests reading ctx; nullptr when it does not start.
  static MHD_Daemon* start_daemon(int fd, const HttpConfig& limits, Context& ctx);
  // Ends the daemon's event streams, then the daemon (its socket closed
  // unless quiesced).
  void stop_daemon(MHD_Daemon* d);
  // The event hub and route listings (once), and the context's pointers.
  void start_events();
  void log_listening() const;

  std::unique_ptr<Context> ctx_;  // the running daemon's
  const Server* server_ = nullptr;  // from start()
  HttpConfig limits_;  // [http]: listen and connection bounds
  int fd_ = -1;
  uint16_t port_ = 0;
  std::string where_;
  MHD_Daemon* daemon_ = nullptr;
  std::unique_ptr<EventHub> events_;
  std::unique_ptr<api::PrefixListings> listings_;
};

}  // namespace petrel::daemon
