// Tests of daemon/log.h's rate limiting: the token bucket per event and
// key, on a fake clock, and the "log-suppressed" summary line that comes
// before the first line let through again.
#include "daemon/log.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <sys/stat.h>

#include <cstdlib>
#include <string>
#include <vector>

namespace petrel::daemon {
namespace {

TEST(LogLimiter, BurstThenOneASecondPerEventAndKey) {
  LogLimiter l(1.0, 3.0);
  double t = 100.0;
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(l.allow("update-error", "p1", t).allow);
  for (int i = 0; i < 50; ++i) EXPECT_FALSE(l.allow("update-error", "p1", t).allow);
  // Another peer, and another event of the same peer, have their own buckets.
  EXPECT_TRUE(l.allow("update-error", "p2", t).allow);
  EXPECT_TRUE(l.allow("fsm-ignored", "p1", t).allow);
  // A second later one more line, which says how many were dropped.
  auto v = l.allow("update-error", "p1", t + 1.0);
  EXPECT_TRUE(v.allow);
  EXPECT_EQ(v.suppressed, 50u);
  EXPECT_FALSE(l.allow("update-error", "p1", t + 1.5).allow);
  v = l.allow("update-error", "p1", t + 2.0);
  EXPECT_TRUE(v.allow);
  EXPECT_EQ(v.suppressed, 1u);
  // After a quiet spell the whole burst is back (and no more than it).
  int allowed = 0;
  for (int i = 0; i < 10; ++i) allowed += l.allow("update-error", "p1", t + 1000.0).allow ? 1 : 0;
  EXPECT_EQ(allowed, 3);
}

TEST(LogLimiter, KeysAreBounded) {
  LogLimiter l(1.0, 2.0, 4);
  double t = 0;
  // Four keys hold back lines, so none can be forgotten: the fifth and
  // later keys share the event's overflow bucket.
  for (int k = 0; k < 4; ++k)
    for (int i = 0; i < 3; ++i) (void)l.allow("connection-refused", "k" + std::to_string(k), t);
  int allowed = 0;
  for (int k = 4; k < 1000; ++k) allowed += l.allow("connection-refused", "k" + std::to_string(k), t).allow ? 1 : 0;
  EXPECT_EQ(allowed, 2);
  EXPECT_LE(l.keys(), 5u);
  // Later, idle buckets are forgotten to make room.
  EXPECT_TRUE(l.allow("connection-refused", "new", t + 100).allow);
  EXPECT_LE(l.keys(), 5u);
}

// What log_limited writes, through a pipe.
class Written {
 public:
  Written() {
    EXPECT_EQ(::pipe2(fds_, O_NONBLOCK), 0);
    log_configure(LogFormat::kText, LogLevel::kInfo, fds_[1]);
  }
  ~Written() {
    log_configure(LogFormat::kText, LogLevel::kInfo, 2);
    ::close(fds_[0]);
    ::close(fds_[1]);
  }
  std::vector<std::string> lines() {
    std::string all;
    char buf[4096];
    ssize_t n;
    while ((n = ::read(fds_[0], buf, sizeof buf)) > 0) all.append(buf, static_cast<size_t>(n));
    std::vector<std::string> out;
    size_t at = 0;
    for (size_t nl; (nl = all.find('\n', at)) != std::string::npos; at = nl + 1) out.push_back(all.substr(at, nl - at));
    return out;
  }

 private:
  int fds_[2] = {-1, -1};
};

TEST(LogLimited, WritesASummaryWhenItOpensAgain) {
  Written w;
  LogLimiter l(1.0, 2.0);
  for (int i = 0; i < 1000; ++i)
    log_limited(l, 10.0, "upstream", LogLevel::kWarn, "update-error", {{"peer", "upstream"}}, "bad");
  auto first = w.lines();
  ASSERT_EQ(first.size(), 2u);  // a flood of a thousand UPDATEs: two lines
  log_limited(l, 11.0, "upstream", LogLevel::kWarn, "update-error", {{"peer", "upstream"}}, "bad");
  auto next = w.lines();
  ASSERT_EQ(next.size(), 2u);
  EXPECT_NE(next[0].find("log-suppressed event=update-error key=upstream suppressed=998: 998 similar lines"),
            std::string::npos)
      << next[0];
  EXPECT_NE(next[1].find("update-error peer=upstream: bad"), std::string::npos) << next[1];
}

TEST(LogLimited, LinesBelowTheLevelUseNoTokens) {
  Written w;
  LogLimiter l(1.0, 1.0);
  for (int i = 0; i < 100; ++i) log_limited(l, 5.0, "p", LogLevel::kDebug, "fsm-ignored", {{"peer", "p"}});
  EXPECT_TRUE(w.lines().empty());
  EXPECT_EQ(l.keys(), 0u);
}

// Under systemd (docs/operations.md): a syslog priority first, no time
// stamp; JSON lines unchanged; the journal's stream known by
// $JOURNAL_STREAM's device and inode.
TEST(LogJournal, PriorityPrefixAndStreamDetection) {
  const int64_t t = 1'700'000'000'123;
  EXPECT_EQ(format_log_line(LogFormat::kText, t, LogLevel::kWarn, "x", {{"a", "1"}}, "m", true), "<4>warn x a=1: m\n");
  EXPECT_EQ(format_log_line(LogFormat::kText, t, LogLevel::kInfo, "x", {}, "", true), "<6>info x\n");
  EXPECT_EQ(format_log_line(LogFormat::kText, t, LogLevel::kError, "x", {}, "", true).substr(0, 3), "<3>");
  EXPECT_EQ(format_log_line(LogFormat::kText, t, LogLevel::kDebug, "x", {}, "", true).substr(0, 3), "<7>");
  EXPECT_EQ(format_log_line(LogFormat::kText, t, LogLevel::kInfo, "x", {}, "", false).substr(0, 24),
            "2023-11-14T22:13:20.123Z");
  EXPECT_EQ(format_log_line(LogFormat::kJson, t, LogLevel::kInfo, "x", {}, "", true),
            format_log_line(LogFormat::kJson, t, LogLevel::kInfo, "x", {}, "", false));
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  struct stat st {};
  ASSERT_EQ(fstat(fds[1], &st), 0);
  unsetenv("JOURNAL_STREAM");
  EXPECT_FALSE(is_journal_stream(fds[1]));
  const std::string mine = std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
  setenv("JOURNAL_STREAM", mine.c_str(), 1);
  EXPECT_TRUE(is_journal_stream(fds[1]));
  setenv("JOURNAL_STREAM", "1:2", 1);
  EXPECT_FALSE(is_journal_stream(fds[1]));
  unsetenv("JOURNAL_STREAM");
  close(fds[0]);
  close(fds[1]);
}

}  // namespace
}  // namespace petrel::daemon
