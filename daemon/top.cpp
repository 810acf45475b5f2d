// `petrel top`: the peers, their UPDATE rates, the table and the memory,
// refreshed in place like top(1), from the daemon's HTTP API (GET
// /api/status and /api/peers through daemon/http_client.h, as `petrel
// show` reads it). The screen's lines are daemon/top_frame.h's.
//
// On a terminal it takes the alternate screen and reads keys one by one
// (no echo; `q` quits), and puts both back however it ends: `q`, SIGINT,
// SIGTERM, SIGHUP, -n's count, or an exception. Those signals are blocked
// except while it waits (ppoll with the signals let through), so one that
// comes during a request ends the wait that follows at once. Without a
// terminal (a pipe, a test) it prints each frame after the other, plainly.
#include "daemon/top.h"

#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <optional>
#include <string>
#include <string_view>

#include "daemon/cli.h"
#include "daemon/http_client.h"
#include "daemon/top_frame.h"

namespace petrel::daemon {

namespace {

using nlohmann::json;

constexpr std::string_view kUsage =
    "usage: petrel top [--http ADDRESS:PORT | -c FILE] [-d SECONDS] [-n COUNT]\n"
    "\n"
    "A live view of the running daemon, refreshed in place like top(1): each\n"
    "peer's state, uptime, prefixes in the table and UPDATEs per second in and\n"
    "out (since the refresh before), the table's size and the memory. Read from\n"
    "the HTTP API, as petrel show reads it. q quits, as do Ctrl-C and SIGTERM;\n"
    "the terminal is put back as it was.\n"
    "\n"
    "options:\n"
    "  -d, --delay SECONDS  between refreshes, 0.2 to 3600 (default 2)\n"
    "  -n, --iterations N   stop after N refreshes (default: until q)\n"
    "  --http ADDRESS:PORT  the daemon's [http] listen address (default 127.0.0.1:8179)\n"
    "  -c, --config FILE    take the address from this file's [http] listen\n";

volatile sig_atomic_t g_stop = 0;
volatile sig_atomic_t g_resized = 0;

void on_signal(int sig) {
  if (sig == SIGWINCH) {
    g_resized = 1;
  } else {
    g_stop = 1;
  }
}

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGWINCH};

// The signals' handlers while top runs, blocked but while it waits; the
// process's own put back at the end.
class Signals {
 public:
  Signals() {
    sigset_t block;
    sigemptyset(&block);
    struct sigaction sa {};
    sa.sa_handler = &on_signal;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < std::size(kSignals); ++i) {
      sigaddset(&block, kSignals[i]);
      sigaction(kSignals[i], &sa, &old_[i]);
    }
    sigprocmask(SIG_BLOCK, &block, &original_);
    waiting_ = original_;
    for (int s : kSignals) sigdelset(&waiting_, s);
  }
  ~Signals() {
    // The mask first: one that came since the last wait reaches our
    // handler (and changes nothing now), not the process's own.
    sigprocmask(SIG_SETMASK, &original_, nullptr);
    for (size_t i = 0; i < std::size(kSignals); ++i) sigaction(kSignals[i], &old_[i], nullptr);
  }
  Signals(const Signals&) = delete;
  Signals& operator=(const Signals&) = delete;
  // The mask to wait with: ours let through.
  [[nodiscard]] const sigset_t* waiting() const { return &waiting_; }

 private:
  struct sigaction old_[std::size(kSignals)] {};
  sigset_t original_{};
  sigset_t waiting_{};
};

void write_all(std::string_view s) {
  while (!s.empty()) {
    ssize_t n = ::write(STDOUT_FILENO, s.data(), s.size());
    if (n > 0) {
      s.remove_prefix(static_cast<size_t>(n));
    } else if (n < 0 && errno != EINTR) {
      return;
    }
  }
}

// The alternate screen without a cursor, and keys without echo or Enter,
// for as long as it lives.
class Terminal {
 public:
  Terminal(bool screen, bool keys) : screen_(screen) {
    if (keys && ::tcgetattr(STDIN_FILENO, &saved_) == 0) {
      termios raw = saved_;
      raw.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO);  // ISIG stays: Ctrl-C is SIGINT
      raw.c_cc[VMIN] = 1;
      raw.c_cc[VTIME] = 0;
      keys_ = ::tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0;
    }
    if (screen_) write_all("\x1b[?1049h\x1b[?25l\x1b[H\x1b[2J");
  }
  ~Terminal() {
    if (screen_) write_all("\x1b[?25h\x1b[?1049l");
    if (keys_) ::tcsetattr(STDIN_FILENO, TCSANOW, &saved_);
  }
  Terminal(const Terminal&) = delete;
  Terminal& operator=(const Terminal&) = delete;
  [[nodiscard]] bool keys() const { return keys_; }

 private:
  bool screen_;
  bool keys_ = false;
  termios saved_{};
};

int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string wall_clock() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[16];
  std::strftime(buf, sizeof buf, "%H:%M:%S", &tm);
  return buf;
}

struct Options : ApiOptions {
  double delay = 2;
  uint64_t iterations = 0;  // 0: until q
};

// GET path as JSON; nullopt with err set otherwise.
std::optional<json> fetch(const Options& o, std::string_view path, std::string& err) {
  auto r = http_get(o.http, path, err);
  if (!r) return std::nullopt;
  json j = json::parse(r->body, nullptr, false);
  if (j.is_discarded() || r->status != 200) {
    err = fmt::format("{} answered HTTP {}", path, r->status);
    return std::nullopt;
  }
  return j;
}

enum class Wake { kRefresh, kQuit };

// Waits for the next refresh (the deadline, or a resized window), reading
// keys meanwhile when `keys`; kQuit for q or a signal.
Wake wait_for(int64_t deadline, bool& keys, const Signals& signals) {
  for (int rounds = 0; rounds < 100000 && g_stop == 0; ++rounds) {
    const int64_t left = deadline - steady_ms();
    if (left <= 0) return Wake::kRefresh;
    pollfd p{STDIN_FILENO, POLLIN, 0};
    timespec ts{static_cast<time_t>(left / 1000), static_cast<long>(left % 1000) * 1'000'000};
    int n = ::ppoll(&p, keys ? 1 : 0, &ts, signals.waiting());
    if (n < 0 && errno == EINTR) {
      if (g_resized != 0) {
        g_resized = 0;
        return Wake::kRefresh;
      }
      continue;
    }
    if (n <= 0) continue;
    char buf[64];
    ssize_t got = ::read(STDIN_FILENO, buf, sizeof buf);
    if (got <= 0) {
      keys = false;  // end of input: wait on the clock alone
      continue;
    }
    for (ssize_t i = 0; i < got; ++i)
      if (buf[i] == 'q' || buf[i] == 'Q') return Wake::kQuit;
  }
  return Wake::kQuit;
}

int run(const Options& o) {
  const bool on_terminal = ::isatty(STDOUT_FILENO) == 1;
  Signals signals;
  Terminal term(on_terminal, ::isatty(STDIN_FILENO) == 1);
  bool keys = term.keys();
  std::optional<TopCounts> before;
  bool answered = false;
  for (uint64_t i = 0; (o.iterations == 0 || i < o.iterations) && g_stop == 0; ++i) {
    TopFrame f;
    f.where = o.http;
    f.delay = o.delay;
    f.clock = wall_clock();
    f.width = 120;
    f.height = SIZE_MAX;
    if (winsize ws{}; on_terminal && ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 && ws.ws_row > 0) {
      f.width = ws.ws_col;
      f.height = ws.ws_row;
    }
    std::optional<json> status = fetch(o, "/api/status", f.error);
    std::optional<json> peers = status ? fetch(o, "/api/peers", f.error) : std::nullopt;
    const TopCounts now = top_counts(peers ? *peers : json(), steady_ms());
    const auto lines = top_lines(status ? *status : json(), peers ? *peers : json(), now,
                                 before && peers ? &*before : nullptr, f);
    std::string screen = on_terminal ? "\x1b[H" : (i == 0 ? "" : "\n");
    for (size_t l = 0; l < lines.size(); ++l) {
      screen += lines[l];
      // On a terminal each line clears what an older frame left on it; the
      // last one ends without a newline, so that a full screen does not scroll.
      if (on_terminal) screen += "\x1b[K";
      if (!on_terminal || l + 1 < lines.size()) screen += on_terminal ? "\r\n" : "\n";
    }
    if (on_terminal) screen += "\x1b[J";
    write_all(screen);
    if (peers) {
      before = now;
      answered = true;
    }
    if (o.iterations != 0 && i + 1 == o.iterations) break;
    if (wait_for(steady_ms() + static_cast<int64_t>(o.delay * 1000), keys, signals) == Wake::kQuit) break;
  }
  return answered ? kExitOk : kExitFailure;
}

}  // namespace

int top_main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    std::optional<std::string> v;
    if (ApiOption taken = api_option(argc, argv, i, o, "petrel top", kUsage); taken != ApiOption::kNotOne) {
      if (taken == ApiOption::kUsage) return kExitUsage;
    } else if (a == "-h" || a == "--help") {
      fmt::print("{}", kUsage);
      return kExitOk;
    } else if (a == "-d" || a == "--delay") {
      if (!(v = option_value(argc, argv, i, "petrel top", kUsage))) return kExitUsage;
      char* end = nullptr;
      o.delay = std::strtod(v->c_str(), &end);
      if (end == v->c_str() || *end != '\0' || !(o.delay >= 0.2 && o.delay <= 3600)) {
        fmt::print(stderr, "petrel top: --delay: expected seconds from 0.2 to 3600, got \"{}\"\n{}", *v, kUsage);
        return kExitUsage;
      }
    } else if (a == "-n" || a == "--iterations") {
      if (!(v = option_value(argc, argv, i, "petrel top", kUsage))) return kExitUsage;
      char* end = nullptr;
      const unsigned long long n = std::strtoull(v->c_str(), &end, 10);
      if (end == v->c_str() || *end != '\0' || n == 0 || v->starts_with("-")) {
        fmt::print(stderr, "petrel top: --iterations: expected a count of 1 or more, got \"{}\"\n{}", *v, kUsage);
        return kExitUsage;
      }
      o.iterations = n;
    } else {
      fmt::print(stderr, "petrel top: unexpected \"{}\"\n{}", a, kUsage);
      return kExitUsage;
    }
  }
  if (auto status = api_address("petrel top", o, kUsage)) return *status;
  try {
    return run(o);
  } catch (const std::exception& e) {  // the terminal is back (Terminal's destructor)
    fmt::print(stderr, "petrel top: {}\n", e.what());
    return kExitFailure;
  }
}

}  // namespace petrel::daemon
