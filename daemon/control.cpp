// The control socket's I/O on the main loop (control.h).
#include "daemon/control.h"

#include <fcntl.h>
#include <grp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "daemon/log.h"

namespace petrel::daemon {

namespace {

constexpr int kBacklog = 16;
constexpr size_t kReadChunk = 4096;
constexpr int kAcceptsPerWakeup = 16;

std::string errno_text(const std::string& what) { return what + ": " + std::strerror(errno); }

bool make_address(const std::string& path, sockaddr_un& sa) {
  sa = {};
  sa.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof sa.sun_path) return false;
  std::memcpy(sa.sun_path, path.data(), path.size());
  return true;
}

// Whether a daemon answers on the socket at `sa`.
bool someone_listens(const sockaddr_un& sa) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  bool live = ::connect(fd, reinterpret_cast<const sockaddr*>(&sa), sizeof sa) == 0;
  ::close(fd);
  return live;
}

}  // namespace

ControlServer::~ControlServer() { stop(); }

bool ControlServer::start(const ControlConfig& c, std::string& err) {
  sockaddr_un sa{};
  if (!make_address(c.socket, sa)) {
    err = "control.socket: the path does not fit a Unix socket address";
    return false;
  }
  max_connections_ = c.max_connections;
  gid_t gid = static_cast<gid_t>(-1);
  if (!c.group.empty()) {
    struct group* g = ::getgrnam(c.group.c_str());
    if (!g) {
      err = "control.group: no group is named \"" + c.group + "\"";
      return false;
    }
    gid = g->gr_gid;
  }
  // The default directory (/run/petrel) is made when missing; a
  // configured one must exist.
  const std::string dir = c.socket.substr(0, c.socket.rfind('/'));
  if (c.socket == kDefaultControlSocket && !dir.empty()) (void)::mkdir(dir.c_str(), 0755);
  struct stat st{};
  if (::lstat(c.socket.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      err = c.socket + " exists and is not a socket";
      return false;
    }
    if (someone_listens(sa)) {
      err = c.socket + ": another daemon answers on this socket";
      return false;
    }
    ::unlink(c.socket.c_str());  // left by a daemon that did not stop cleanly
  }
  fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd_ < 0) {
    err = errno_text("socket");
    return false;
  }
  // No moment where the socket is open to all: created 0600, then opened
  // to the group.
  const mode_t old = ::umask(0177);
  const int rc = ::bind(fd_, reinterpret_cast<const sockaddr*>(&sa), sizeof sa);
  ::umask(old);
  if (rc != 0 || (gid != static_cast<gid_t>(-1) && ::chown(c.socket.c_str(), static_cast<uid_t>(-1), gid) != 0) ||
      ::chmod(c.socket.c_str(), 0660) != 0 || ::listen(fd_, kBacklog) != 0) {
    err = errno_text(c.socket);
    ::close(fd_);
    fd_ = -1;
    if (rc == 0) ::unlink(c.socket.c_str());
    return false;
  }
  path_ = c.socket;
  ev_io_init(&accept_io_, &ControlServer::on_accept, fd_, EV_READ);
  accept_io_.data = this;
  ev_io_start(loop_, &accept_io_);
  return true;
}

void ControlServer::stop() {
  while (!conns_.empty()) close(conns_.front());
  if (fd_ >= 0) {
    ev_io_stop(loop_, &accept_io_);
    ::close(fd_);
    fd_ = -1;
    ::unlink(path_.c_str());
  }
}

void ControlServer::on_accept(struct ev_loop*, ev_io* w, int) { static_cast<ControlServer*>(w->data)->accept_all(); }

void ControlServer::accept_all() {
  for (int i = 0; i < kAcceptsPerWakeup; ++i) {
    int fd = ::accept4(fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK)
        log_limited("control", LogLevel::kWarn, "control-accept-failed", {{"socket", path_}}, std::strerror(errno));
      return;
    }
    if (conns_.size() >= max_connections_) {
      // Told why, best effort (the socket buffer takes one short line).
      std::string a = control::answer_error("too many control connections") + "\n";
      (void)!::send(fd, a.data(), a.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      ::close(fd);
      log_limited("control", LogLevel::kWarn, "control-refused", {{"socket", path_}},
                  "control.max_connections connections are open");
      continue;
    }
    Conn& c = conns_.emplace_back();
    c.server = this;
    c.fd = fd;
    c.id = next_id_++;
    ev_io_init(&c.rd, &ControlServer::on_read, fd, EV_READ);
    c.rd.data = &c;
    ev_io_init(&c.wr, &ControlServer::on_write, fd, EV_WRITE);
    c.wr.data = &c;
    ev_io_start(loop_, &c.rd);
  }
}

void ControlServer::on_read(struct ev_loop*, ev_io* w, int) {
  auto* c = static_cast<Conn*>(w->data);
  c->server->read_from(*c);
}

void ControlServer::on_write(struct ev_loop*, ev_io* w, int) {
  auto* c = static_cast<Conn*>(w->data);
  (void)c->server->flush(*c);
}

void ControlServer::read_from(Conn& c) {
  char buf[kReadChunk];
  ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
  if (n <= 0) {
    close(c);
    return;
  }
  c.in.append(buf, static_cast<size_t>(n));
  (void)process(c);
}

// Answers every complete line, unless answers wait to be read: then
// reading rests until they are (the client's own back-pressure). False
// when the connection was closed (c is gone).
bool ControlServer::process(Conn& c) {
  size_t start = 0;
  while (c.out.empty() && !c.closing && !c.waiting) {
    size_t nl = c.in.find('\n', start);
    if (nl == std::string::npos) break;
    std::string_view line(c.in.data() + start, nl - start);
    start = nl + 1;
    if (line.empty() || line == "\r") continue;
    control::ParseResult r = control::parse_request(line);
    c.in.erase(0, start);
    start = 0;
    if (r.request && deferred_) {
      const uint64_t id = c.id;
      auto now = deferred_(*r.request, [this, id](std::string a) { answer_later(id, std::move(a)); });
      if (!now) {
        // Not read from until the answer is written (flush starts reading again).
        c.waiting = true;
        ev_io_stop(loop_, &c.rd);
        return true;
      }
      c.out = *now + "\n";
    } else {
      c.out = (r.request ? handler_(*r.request) : control::answer_error(r.error)) + "\n";
    }
    if (!flush(c)) return false;
  }
  c.in.erase(0, start);
  if (c.in.size() > control::kMaxLineBytes && c.in.find('\n') == std::string::npos && !c.closing) {
    c.out += control::answer_error("the request line is longer than " + std::to_string(control::kMaxLineBytes) +
                                   " bytes") + "\n";
    c.closing = true;
    c.in.clear();
    return flush(c);
  }
  return true;
}

bool ControlServer::flush(Conn& c) {
  while (!c.out.empty()) {
    ssize_t n = ::send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      ev_io_stop(loop_, &c.rd);
      ev_io_start(loop_, &c.wr);
      return true;
    }
    if (n <= 0) {
      close(c);
      return false;
    }
    c.out.erase(0, static_cast<size_t>(n));
  }
  ev_io_stop(loop_, &c.wr);
  if (c.closing) {
    close(c);
    return false;
  }
  if (!ev_is_active(&c.rd)) {
    ev_io_start(loop_, &c.rd);
    return process(c);  // lines that came while the answer waited
  }
  return true;
}

void ControlServer::answer_later(uint64_t id, std::string answer) {
  for (Conn& c : conns_) {
    if (c.id != id || !c.waiting) continue;
    c.waiting = false;
    c.out = std::move(answer) + "\n";
    (void)flush(c);
    return;
  }
}

void ControlServer::close(Conn& c) {
  ev_io_stop(loop_, &c.rd);
  ev_io_stop(loop_, &c.wr);
  ::close(c.fd);
  c.fd = -1;
  conns_.remove_if([&](const Conn& x) { return &x == &c; });
}

}  // namespace petrel::daemon
