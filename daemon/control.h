// The control socket (docs/operations.md, "The control channel"): a Unix
// stream socket on the main loop, mode 0660 with the configured group,
// never on the network. Each connection sends request lines and reads
// answer lines (control_protocol.h); the server only does the I/O and
// hands each parsed request to the handler.
//
// Bounds, since any local client may be hostile: a line longer than
// control::kMaxLineBytes ends its connection; at most max_connections at
// once (one more is told so and closed); a client that does not read its
// answers is not read from until it does, so its answers cannot pile up.
#pragma once

#include <ev.h>

#include <functional>
#include <list>
#include <optional>
#include <string>

#include "daemon/config.h"
#include "daemon/control_protocol.h"

namespace petrel::daemon {

class ControlServer {
 public:
  // The answer line (without its newline) to one request.
  using Handler = std::function<std::string(const control::ControlRequest&)>;
  // An answer given later (a dump runs on its own thread): called on the
  // main loop, at most once; nothing when the connection has gone.
  using Reply = std::function<void(std::string)>;
  // Tried before Handler: the answer now, or nullopt when it calls the
  // Reply later. The connection reads no further request meanwhile.
  using DeferredHandler = std::function<std::optional<std::string>(const control::ControlRequest&, Reply)>;

  ControlServer(struct ev_loop* loop, Handler handler, DeferredHandler deferred = {})
      : loop_(loop), handler_(std::move(handler)), deferred_(std::move(deferred)) {}
  ~ControlServer();
  ControlServer(const ControlServer&) = delete;
  ControlServer& operator=(const ControlServer&) = delete;

  // Binds the socket at c.socket (a stale socket file is replaced; one a
  // live daemon answers on is not). False with err set when it cannot.
  bool start(const ControlConfig& c, std::string& err);
  // Closes every connection and removes the socket file.
  void stop();
  [[nodiscard]] size_t connections() const { return conns_.size(); }

 private:
  struct Conn {
    ControlServer* server = nullptr;
    int fd = -1;
    ev_io rd{}, wr{};
    std::string in, out;
    bool closing = false;  // close once out is written
    bool waiting = false;  // a deferred answer is due
    uint64_t id = 0;
  };

  static void on_accept(struct ev_loop*, ev_io* w, int);
  static void on_read(struct ev_loop*, ev_io* w, int);
  static void on_write(struct ev_loop*, ev_io* w, int);
  void accept_all();
  void read_from(Conn& c);
  bool process(Conn& c);
  bool flush(Conn& c);
  void close(Conn& c);
  void answer_later(uint64_t id, std::string answer);

  struct ev_loop* loop_;
  Handler handler_;
  DeferredHandler deferred_;
  uint64_t next_id_ = 1;
  std::string path_;
  uint32_t max_connections_ = 16;
  int fd_ = -1;
  ev_io accept_io_{};
  std::list<Conn> conns_;
};

}  // namespace petrel::daemon
