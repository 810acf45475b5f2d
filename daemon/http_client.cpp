// The API's HTTP client (daemon/http_client.h).
#include "daemon/http_client.h"

#include <fmt/format.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>

#include "daemon/cli.h"
#include "daemon/config.h"

namespace petrel::daemon {

namespace {

constexpr int kConnectTimeoutMs = 3000;
constexpr int kReadTimeoutMs = 30000;
constexpr size_t kMaxBody = 256u << 20;

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Waits until fd is ready for `events` or the deadline passes.
bool wait_fd(int fd, short events, int64_t deadline) {
  for (;;) {
    int64_t left = deadline - now_ms();
    if (left <= 0) return false;
    pollfd p{fd, events, 0};
    int n = ::poll(&p, 1, static_cast<int>(left));
    if (n > 0) return true;
    if (n == 0) return false;
    if (errno != EINTR) return false;
  }
}

int connect_to(const std::string& host, const std::string& port, std::string& err) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &res); rc != 0) {
    err = ::gai_strerror(rc);
    return -1;
  }
  int fd = -1;
  for (addrinfo* a = res; a != nullptr && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      err = std::strerror(errno);
      continue;
    }
    if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) break;
    if (errno == EINPROGRESS && wait_fd(fd, POLLOUT, now_ms() + kConnectTimeoutMs)) {
      int so = 0;
      socklen_t len = sizeof so;
      if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &so, &len) == 0 && so == 0) break;
      err = std::strerror(so != 0 ? so : errno);
    } else {
      err = errno == EINPROGRESS ? "timed out" : std::strerror(errno);
    }
    ::close(fd);
    fd = -1;
  }
  ::freeaddrinfo(res);
  return fd;
}

}  // namespace

std::optional<HttpResult> http_get(std::string_view where, std::string_view path, std::string& err) {
  Endpoint to;
  if (auto bad = parse_endpoint(where, to)) {  // show_main checked it
    err = *bad;
    return std::nullopt;
  }
  int fd = connect_to(to.address.to_string(), std::to_string(to.port), err);
  if (fd < 0) return std::nullopt;
  const int64_t deadline = now_ms() + kReadTimeoutMs;
  std::string req = fmt::format("GET {} HTTP/1.0\r\nHost: {}\r\nConnection: close\r\n\r\n", path, where);
  size_t sent = 0;
  std::string in;
  bool ok = true;
  while (ok && sent < req.size()) {
    ssize_t n = ::send(fd, req.data() + sent, req.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
    } else if (n < 0 && errno == EAGAIN) {
      ok = wait_fd(fd, POLLOUT, deadline);
    } else {
      ok = false;
    }
  }
  char buf[65536];
  while (ok) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n > 0) {
      in.append(buf, static_cast<size_t>(n));
      if (in.size() > kMaxBody) ok = false;
    } else if (n == 0) {
      break;
    } else if (errno == EAGAIN || errno == EINTR) {
      ok = wait_fd(fd, POLLIN, deadline);
    } else {
      ok = false;
    }
  }
  int saved = errno;
  ::close(fd);
  if (!ok) {
    err = in.size() > kMaxBody ? "the answer is too large" : now_ms() >= deadline ? "no answer in time" : std::strerror(saved);
    return std::nullopt;
  }
  // "HTTP/1.0 200 OK\r\n...\r\n\r\nbody"
  auto head_end = in.find("\r\n\r\n");
  if (!in.starts_with("HTTP/1.") || in.size() < 12 || head_end == std::string::npos) {
    err = "the answer is not HTTP";
    return std::nullopt;
  }
  HttpResult r;
  for (size_t i = 9; i < 12; ++i) {
    if (in[i] < '0' || in[i] > '9') {
      err = "the answer is not HTTP";
      return std::nullopt;
    }
    r.status = r.status * 10 + static_cast<unsigned>(in[i] - '0');
  }
  r.body = in.substr(head_end + 4);
  return r;
}

std::string url_encode(std::string_view s) {
  std::string out;
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) || c == '-' || c == '.' || c == '_' || c == '~' || c == ':') {
      out += c;
    } else {
      out += fmt::format("%{:02X}", u);
    }
  }
  return out;
}


std::optional<std::string> option_value(int argc, char** argv, int& i, std::string_view cmd, std::string_view usage) {
  if (i + 1 >= argc) {
    fmt::print(stderr, "{}: {} needs a value\n{}", cmd, argv[i], usage);
    return std::nullopt;
  }
  return std::string(argv[++i]);
}

ApiOption api_option(int argc, char** argv, int& i, ApiOptions& o, std::string_view cmd, std::string_view usage) {
  const std::string_view a = argv[i];
  std::optional<std::string> v;
  if (a.starts_with("--http=")) {
    v = std::string(a.substr(7));
  } else if (a.starts_with("--config=")) {
    o.config = std::string(a.substr(9));
    return ApiOption::kTaken;
  } else if (a == "--http" || a == "-c" || a == "--config" || a == "-s" || a == "--socket") {
    v = option_value(argc, argv, i, cmd, usage);
    if (!v) return ApiOption::kUsage;
    if (a == "-c" || a == "--config") o.config = std::move(*v);
    if (a != "--http") return ApiOption::kTaken;
  } else {
    return ApiOption::kNotOne;
  }
  o.http = std::move(*v);
  o.http_given = true;
  return ApiOption::kTaken;
}

std::optional<int> api_address(std::string_view cmd, ApiOptions& o, std::string_view usage) {
  if (!o.config.empty() && !o.http_given) {
    auto cfg = load_config(o.config);
    if (!cfg) {
      print_config_errors(cfg.error());
      fmt::print(stderr, "{}: cannot take the daemon's address from {} (--http ADDRESS:PORT names it)\n", cmd, o.config);
      return kExitFailure;
    }
    if (!cfg->http.listen) {
      fmt::print(stderr, "{}: {} runs no HTTP API ([http] listen = \"\"), which {} reads\n", cmd, o.config, cmd);
      return kExitFailure;
    }
    o.http = cfg->http.listen->to_string();
  }
  // A usage error, not an unreachable daemon: 127.0.0.1:99999 must not
  // become some other port, nor "nonsense" a failed name lookup.
  if (Endpoint e; auto bad = parse_endpoint(o.http, e)) {
    fmt::print(stderr, "{}: --http: {}\n{}", cmd, *bad, usage);
    return kExitUsage;
  }
  return std::nullopt;
}

}  // namespace petrel::daemon
