// Text and JSON-lines logging for the daemon.
#include "daemon/log.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <iterator>

namespace petrel::daemon {

namespace {

std::atomic<LogFormat> g_format{LogFormat::kText};
std::atomic<LogLevel> g_level{LogLevel::kInfo};
std::atomic<int> g_fd{2};
std::atomic<bool> g_journal{false};  // g_fd is systemd's journal stream
std::atomic<LogSubscriber> g_subscriber{nullptr};

std::string_view level_name(LogLevel l) {
  switch (l) {
    case LogLevel::kDebug: return "debug";
    case LogLevel::kInfo: return "info";
    case LogLevel::kWarn: return "warn";
    case LogLevel::kError: return "error";
  }
  return "info";
}

void json_string(std::string& out, std::string_view s) {
  out.push_back('"');
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (u < 0x20) {
          static constexpr char kHex[] = "0123456789abcdef";
          out += "\\u00";
          out.push_back(kHex[u >> 4]);
          out.push_back(kHex[u & 0xf]);
        } else {
          out.push_back(c);
        }
    }
  }
  out.push_back('"');
}

bool needs_quotes(std::string_view v) {
  if (v.empty()) return true;
  for (char c : v)
    if (c == ' ' || c == '"' || c == '=' || static_cast<unsigned char>(c) < 0x20) return true;
  return false;
}

void text_value(std::string& out, std::string_view v) {
  if (!needs_quotes(v)) {
    out += v;
    return;
  }
  json_string(out, v);  // a quoted, escaped form that stays on one line
}

void timestamp(std::string& out, int64_t unix_ms) {
  std::time_t secs = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[40];
  size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  out.append(buf, n);
  char ms[8];
  std::snprintf(ms, sizeof ms, ".%03dZ", static_cast<int>(unix_ms % 1000));
  out += ms;
}

}  // namespace

void log_configure(LogFormat format, LogLevel level, int fd) {
  g_format = format;
  g_level = level;
  g_fd = fd;
  g_journal = is_journal_stream(fd);
}

void log_reconfigure(LogFormat format, LogLevel level) {
  g_format = format;
  g_level = level;
}

bool log_enabled(LogLevel level) { return level >= g_level.load(std::memory_order_relaxed); }

bool parse_log_level(std::string_view s, LogLevel& out) {
  for (LogLevel l : {LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarn, LogLevel::kError}) {
    if (level_name(l) == s) {
      out = l;
      return true;
    }
  }
  return false;
}

bool parse_log_format(std::string_view s, LogFormat& out) {
  if (s == "text") out = LogFormat::kText;
  else if (s == "json") out = LogFormat::kJson;
  else return false;
  return true;
}

bool is_journal_stream(int fd) {
  const char* env = std::getenv("JOURNAL_STREAM");
  unsigned long long dev = 0, ino = 0;
  if (!env || std::sscanf(env, "%llu:%llu", &dev, &ino) != 2) return false;
  struct stat st {};
  return ::fstat(fd, &st) == 0 && st.st_dev == dev && st.st_ino == ino;
}

std::string format_log_line(LogFormat format, int64_t unix_ms, LogLevel level, std::string_view event,
                            std::initializer_list<LogField> fields, std::string_view message, bool journal) {
  std::string out;
  out.reserve(128);
  if (format == LogFormat::kJson) {
    out += "{\"ts\":\"";
    timestamp(out, unix_ms);
    out += "\",\"level\":\"";
    out += level_name(level);
    out += "\",\"event\":";
    json_string(out, event);
    for (const auto& f : fields) {
      out.push_back(',');
      json_string(out, f.key);
      out.push_back(':');
      json_string(out, f.value);
    }
    if (!message.empty()) {
      out += ",\"msg\":";
      json_string(out, message);
    }
    out += "}\n";
    return out;
  }
  if (journal) {
    out += level == LogLevel::kDebug ? "<7>" : level == LogLevel::kInfo ? "<6>" : level == LogLevel::kWarn ? "<4>" : "<3>";
  } else {
    timestamp(out, unix_ms);
    out.push_back(' ');
  }
  out += level_name(level);
  out.push_back(' ');
  out += event;
  for (const auto& f : fields) {
    out.push_back(' ');
    out += f.key;
    out.push_back('=');
    text_value(out, f.value);
  }
  if (!message.empty()) {
    out += ": ";
    for (char c : message) out.push_back(c == '\n' ? ' ' : c);
  }
  out.push_back('\n');
  return out;
}

void log_subscribe(LogSubscriber fn) { g_subscriber = fn; }

void log(LogLevel level, std::string_view event, std::initializer_list<LogField> fields,
         std::string_view message) {
  if (LogSubscriber fn = g_subscriber.load(std::memory_order_acquire)) fn(level, event, fields, message);
  if (!log_enabled(level)) return;
  auto now = std::chrono::system_clock::now();
  int64_t ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
  std::string line = format_log_line(g_format.load(), ms, level, event, fields, message, g_journal.load());
  // One write per line; a short write (a full pipe) is retried a bounded
  // number of times, then the rest is dropped rather than blocking forever.
  const char* p = line.data();
  size_t left = line.size();
  for (int tries = 0; left > 0 && tries < 8; ++tries) {
    ssize_t n = ::write(g_fd.load(), p, left);
    if (n <= 0) continue;
    p += n;
    left -= static_cast<size_t>(n);
  }
}

bool RateLimit::allow(double now_s) {
  if (last_ >= 0) {
    tokens_ += (now_s - last_) * rate_;
    if (tokens_ > burst_) tokens_ = burst_;
  }
  last_ = now_s;
  if (tokens_ >= 1) {
    tokens_ -= 1;
    return true;
  }
  ++suppressed_;
  return false;
}

LogLimiter::Verdict LogLimiter::allow(std::string_view event, std::string_view key, double now_s) {
  std::lock_guard lock(mu_);
  auto it = buckets_.find(std::pair<std::string, std::string>(event, key));
  if (it == buckets_.end()) {
    if (buckets_.size() >= max_keys_) {
      for (auto i = buckets_.begin(); i != buckets_.end();) i = i->second.idle(now_s) ? buckets_.erase(i) : std::next(i);
    }
    std::string k(buckets_.size() >= max_keys_ ? std::string_view("*") : key);
    it = buckets_.try_emplace({std::string(event), std::move(k)}, per_second_, burst_).first;
  }
  Verdict v;
  v.allow = it->second.allow(now_s);
  if (v.allow) v.suppressed = it->second.take_suppressed();
  return v;
}

size_t LogLimiter::keys() const {
  std::lock_guard lock(mu_);
  return buckets_.size();
}

void log_limited(LogLimiter& limiter, double now_s, std::string_view key, LogLevel level, std::string_view event,
                 std::initializer_list<LogField> fields, std::string_view message) {
  if (!log_enabled(level)) {
    log(level, event, fields, message);  // the subscriber still sees it; nothing is written
    return;
  }
  LogLimiter::Verdict v = limiter.allow(event, key, now_s);
  if (!v.allow) return;
  if (v.suppressed > 0)
    log(level, "log-suppressed", {{"event", event}, {"key", key}, {"suppressed", v.suppressed}},
        std::to_string(v.suppressed) + " similar lines suppressed");
  log(level, event, fields, message);
}

void log_limited(std::string_view key, LogLevel level, std::string_view event,
                 std::initializer_list<LogField> fields, std::string_view message) {
  static LogLimiter limiter;
  double now = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  log_limited(limiter, now, key, level, event, fields, message);
}

}  // namespace petrel::daemon
