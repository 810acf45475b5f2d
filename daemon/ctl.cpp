// The control socket's command-line client (ctl.h): one request line out,
// one answer line back, the answer printed for a person.
#include "daemon/ctl.h"

#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/cli.h"
#include "daemon/config.h"
#include "daemon/control_protocol.h"

namespace petrel::daemon {

namespace {

constexpr std::string_view kUsage =
    "usage: petrel [-s SOCKET] reload\n"
    "       petrel [-s SOCKET] peer NAME disable|enable\n"
    "       petrel [-s SOCKET] peer NAME reset [--soft-in|--soft-out]\n"
    "       petrel [-s SOCKET] peer NAME shutdown [--message TEXT]\n"
    "       petrel [-s SOCKET] route announce PREFIX [next-hop ADDR] [communities C ...]\n"
    "                          [large-communities L ...] [med N] [local-pref N] [origin igp|egp|incomplete]\n"
    "       petrel [-s SOCKET] route withdraw PREFIX\n"
    "       petrel [-s SOCKET] route list\n"
    "       petrel [-s SOCKET] dump [FILE]\n"
    "\n"
    "Commands to a running daemon over its control socket (docs/operations.md).\n"
    "  -s, --socket PATH   the control socket (default /run/petrel/petrel.sock)\n"
    "  -c, --config FILE   take the socket from this file's [control] socket\n";

// The answer must come within this (a peer command waits up to 5 s for
// its worker, a reload reads and checks the whole file).
constexpr int kAnswerTimeoutMs = 60'000;

std::string connect_error(int e, const std::string& path) {
  switch (e) {
    case ENOENT: return fmt::format("no control socket at {}: is petrel running? ([control] socket)", path);
    case ECONNREFUSED: return fmt::format("petrel is not running: nothing answers on {}", path);
    case EACCES:
    case EPERM:
      return fmt::format("permission denied on {}: run as root or as a member of the socket's group ([control] group)",
                         path);
    default: return fmt::format("{}: {}", path, std::strerror(e));
  }
}

// One request and its answer line; false with err set when the exchange failed.
bool exchange(const std::string& path, const std::string& request, std::string& answer, std::string& err) {
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof sa.sun_path) {
    err = fmt::format("the socket path \"{}\" does not fit a Unix socket address", path);
    return false;
  }
  std::memcpy(sa.sun_path, path.data(), path.size());
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || ::connect(fd, reinterpret_cast<const sockaddr*>(&sa), sizeof sa) != 0) {
    err = connect_error(errno, path);
    if (fd >= 0) ::close(fd);
    return false;
  }
  std::string out = request + "\n";
  for (size_t off = 0; off < out.size();) {
    ssize_t n = ::send(fd, out.data() + off, out.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      err = fmt::format("{}: {}", path, std::strerror(errno));
      ::close(fd);
      return false;
    }
    off += static_cast<size_t>(n);
  }
  while (answer.find('\n') == std::string::npos) {
    pollfd p{fd, POLLIN, 0};
    int r = ::poll(&p, 1, kAnswerTimeoutMs);
    if (r == 0) err = "petrel did not answer in time";
    char buf[4096];
    ssize_t n = r > 0 ? ::recv(fd, buf, sizeof buf, 0) : -1;
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (err.empty()) err = "petrel closed the connection without an answer";
      ::close(fd);
      return false;
    }
    answer.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  answer.resize(answer.find('\n'));
  return true;
}

}  // namespace

int ctl_main(int argc, char** argv) {
  std::string socket{kDefaultControlSocket};
  std::vector<std::string_view> args;
  const std::string_view command = argc > 0 ? argv[0] : "";
  args.push_back(command);
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if ((a == "--message" || a == "-m") && i + 1 < argc) {  // the text is never an option
      args.push_back(a);
      args.push_back(argv[++i]);
      continue;
    }
    if (a == "-h" || a == "--help") {
      fmt::print("{}", kUsage);
      return kExitOk;
    }
    if (a == "-s" || a == "--socket") {
      if (i + 1 >= argc) {
        fmt::print(stderr, "petrel {}: {} needs a path\n{}", command, a, kUsage);
        return kExitUsage;
      }
      socket = argv[++i];
      continue;
    }
    if (a == "-c" || a == "--config" || a.starts_with("--config=")) {
      // (--config=FILE too: `petrel --config=FILE reload` passes it here)
      std::string path;
      if (a.starts_with("--config=")) {
        path = std::string(a.substr(9));
      } else if (i + 1 < argc) {
        path = argv[++i];
      } else {
        fmt::print(stderr, "petrel {}: {} needs a file name\n{}", command, a, kUsage);
        return kExitUsage;
      }
      auto cfg = load_config(path);
      if (!cfg) {
        print_config_errors(cfg.error());
        return kExitFailure;
      }
      if (cfg->control.socket.empty()) {
        fmt::print(stderr, "petrel {}: {} runs no control socket ([control] socket = \"\")\n", command, path);
        return kExitFailure;
      }
      socket = cfg->control.socket;
      continue;
    }
    args.push_back(a);
  }
  // dump FILE: the daemon runs elsewhere, so a relative name is made
  // absolute here, against the caller's directory.
  std::string absolute;
  if (command == "dump" && args.size() == 2 && !args[1].empty() && args[1].front() != '/') {
    std::error_code ec;
    absolute = std::filesystem::absolute(std::filesystem::path(args[1]), ec).lexically_normal().string();
    if (ec) {
      fmt::print(stderr, "petrel dump: {}: {}\n", args[1], ec.message());
      return kExitFailure;
    }
    args[1] = absolute;
  }
  control::ArgsResult req = control::request_from_args(args);
  if (req.line.empty()) {
    fmt::print(stderr, "petrel {}: {}\n{}", command, req.error, kUsage);
    return kExitUsage;
  }
  std::string answer, err;
  if (!exchange(socket, req.line, answer, err)) {
    fmt::print(stderr, "petrel {}: {}\n", command, err);
    return kExitFailure;
  }
  auto j = nlohmann::json::parse(answer, nullptr, false);
  if (!j.is_object() || !j.contains("ok") || !j["ok"].is_boolean()) {
    fmt::print(stderr, "petrel {}: an answer that is not the protocol's: {}\n", command, answer.substr(0, 200));
    return kExitFailure;
  }
  if (!j["ok"].get<bool>()) {
    fmt::print(stderr, "petrel {}: {}\n", command, j.value("error", std::string("failed")));
    if (j.contains("details") && j["details"].is_array())
      for (const auto& d : j["details"])
        if (d.is_string()) fmt::print(stderr, "{}\n", d.get<std::string>());
    return kExitFailure;
  }
  if (j.contains("routes") && j["routes"].is_array()) fmt::print("{}\n", j["routes"].dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
  else if (j.contains("result") && j["result"].is_string()) fmt::print("{}\n", j["result"].get<std::string>());
  return kExitOk;
}

}  // namespace petrel::daemon
