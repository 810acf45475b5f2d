// Logging for the daemon: one line per event, as text (default) or JSON
// lines (--log-format json). Pure modules never log; they return
// diagnostics that the daemon turns into lines here.
//
// A line is an event name, key=value fields and a free message. Each line
// goes out with a single write(2) so lines from different threads never
// interleave.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

namespace petrel::daemon {

enum class LogLevel : uint8_t { kDebug, kInfo, kWarn, kError };
enum class LogFormat : uint8_t { kText, kJson };

struct LogField {
  std::string_view key;
  std::string value;

  LogField(std::string_view k, std::string v) : key(k), value(std::move(v)) {}
  LogField(std::string_view k, std::string_view v) : key(k), value(v) {}
  LogField(std::string_view k, const char* v) : key(k), value(v) {}
  template <typename Int, typename = std::enable_if_t<std::is_integral_v<Int>>>
  LogField(std::string_view k, Int v) : key(k), value(std::to_string(v)) {}
};

void log_configure(LogFormat format, LogLevel level, int fd = 2);
// The format and level from now on, the output as it was (a reload's
// [log]); lines being written meanwhile are whole in either form.
void log_reconfigure(LogFormat format, LogLevel level);
bool log_enabled(LogLevel level);
// Parses "debug", "info", "warn", "error" / "text", "json".
bool parse_log_level(std::string_view s, LogLevel& out);
bool parse_log_format(std::string_view s, LogFormat& out);

void log(LogLevel level, std::string_view event, std::initializer_list<LogField> fields,
         std::string_view message = {});

// One function that sees every log() call, whatever the level (the event
// stream taps session events here, daemon/events.h); nullptr removes it.
// It runs on the logging thread and must not log.
using LogSubscriber = void (*)(LogLevel level, std::string_view event, std::initializer_list<LogField> fields,
                               std::string_view message);
void log_subscribe(LogSubscriber fn);

// Formats one line without writing it (tests and the event stream).
// journal: a text line for systemd's journal: a "<N>" syslog priority
// first (sd-daemon(3): debug 7, info 6, warn 4, error 3) and no time
// stamp (the journal keeps its own); JSON lines are the same either way.
std::string format_log_line(LogFormat format, int64_t unix_ms, LogLevel level, std::string_view event,
                            std::initializer_list<LogField> fields, std::string_view message,
                            bool journal = false);
// Whether fd is the stream systemd's journal reads ($JOURNAL_STREAM names
// its device and inode): log_configure then writes journal lines.
bool is_journal_stream(int fd);

// Allows at most `burst` events, refilled at `per_second`; counts what it
// suppressed so the next allowed line can say how many were dropped.
class RateLimit {
 public:
  RateLimit(double per_second, double burst) : rate_(per_second), burst_(burst), tokens_(burst) {}
  // now_s: monotonic seconds. True if this event may be logged.
  bool allow(double now_s);
  // Events suppressed since the last allowed one; reset on read.
  uint64_t take_suppressed() {
    uint64_t s = suppressed_;
    suppressed_ = 0;
    return s;
  }
  // Full again at now_s with nothing suppressed: forgetting it loses nothing.
  [[nodiscard]] bool idle(double now_s) const {
    return suppressed_ == 0 && (last_ < 0 || tokens_ + (now_s - last_) * rate_ >= burst_);
  }

 private:
  double rate_, burst_, tokens_;
  double last_ = -1;
  uint64_t suppressed_ = 0;
};

// Token buckets per (event, key), for the lines a peer can make us write
// as often as it likes: per UPDATE (update-error, fsm-ignored) and per
// connection (connection-refused, connection-accepted, connect-failed...).
// The key is the peer's name. At most max_keys buckets: past that, idle
// ones are forgotten, and a new key shares its event's overflow bucket
// ("*"). Thread-safe.
class LogLimiter {
 public:
  // Ten lines at once, then one a second, per event and key.
  static constexpr double kPerSecond = 1.0;
  static constexpr double kBurst = 10.0;

  explicit LogLimiter(double per_second = kPerSecond, double burst = kBurst, size_t max_keys = 4096)
      : per_second_(per_second), burst_(burst), max_keys_(max_keys) {}

  struct Verdict {
    bool allow = false;
    uint64_t suppressed = 0;  // when allowed: lines of this event and key dropped since the last one allowed
  };
  Verdict allow(std::string_view event, std::string_view key, double now_s);
  [[nodiscard]] size_t keys() const;

 private:
  double per_second_, burst_;
  size_t max_keys_;
  mutable std::mutex mu_;
  std::map<std::pair<std::string, std::string>, RateLimit> buckets_;
};

// log() unless `limiter` holds the line back. The first line let through
// after some were held back is preceded by a "log-suppressed" line
// (event, key, suppressed: how many similar lines were dropped).
void log_limited(LogLimiter& limiter, double now_s, std::string_view key, LogLevel level, std::string_view event,
                 std::initializer_list<LogField> fields, std::string_view message = {});
// The same through the process's limiter and the monotonic clock.
void log_limited(std::string_view key, LogLevel level, std::string_view event,
                 std::initializer_list<LogField> fields, std::string_view message = {});

}  // namespace petrel::daemon
