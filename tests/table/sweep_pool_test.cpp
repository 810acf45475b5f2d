// Tests of table/sweep_pool.h: every call runs once per job, one job at a
// time, and an exception from the caller's call or a helper's reaches the
// caller after every call has ended, leaving the pool usable.
#include "table/sweep_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <stdexcept>
#include <thread>
#include <vector>

namespace petrel::table {
namespace {

// The pool (of one helper) runs a job after a failed one.
void expect_usable(SweepPool& pool) {
  std::atomic<int> calls{0};
  const std::function<void(size_t)> ok = [&](size_t) { calls.fetch_add(1); };
  EXPECT_TRUE(pool.run(ok));
  EXPECT_EQ(calls.load(), 2);
}

TEST(SweepPool, EveryThreadCallsOncePerJob) {
  SweepPool pool(2);
  ASSERT_EQ(pool.threads(), 3u);
  for (int job = 0; job < 50; ++job) {
    std::vector<std::atomic<int>> calls(pool.threads());
    const std::function<void(size_t)> fn = [&](size_t id) { calls.at(id).fetch_add(1); };
    ASSERT_TRUE(pool.run(fn));
    for (auto& c : calls) EXPECT_EQ(c.load(), 1);
  }
}

// A helper throws while the caller is still working: run() waits for the
// caller's call, then throws the helper's exception; the next job runs.
TEST(SweepPool, AHelpersExceptionReachesTheCallerAfterEveryCall) {
  SweepPool pool(1);
  ASSERT_EQ(pool.threads(), 2u);
  std::atomic<bool> helper_threw{false}, caller_finished{false};
  const std::function<void(size_t)> fn = [&](size_t id) {
    if (id == 1) {
      helper_threw = true;
      throw std::runtime_error("helper out of memory");
    }
    // The caller outlasts the helper's throw.
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!helper_threw && std::chrono::steady_clock::now() < until) std::this_thread::yield();
    caller_finished = true;
  };
  try {
    (void)pool.run(fn);
    ADD_FAILURE() << "run() returned normally";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "helper out of memory");
  }
  EXPECT_TRUE(helper_threw);
  EXPECT_TRUE(caller_finished);
  expect_usable(pool);
}

// The caller's call throws while a helper still works on fn: run() waits
// for the helper before it lets the exception leave (fn and what it
// captures live on the caller's stack).
TEST(SweepPool, TheCallersExceptionWaitsForTheHelpers) {
  SweepPool pool(1);
  std::atomic<bool> helper_started{false}, helper_done{false};
  bool done_when_caught = false;
  {
    const std::function<void(size_t)> fn = [&](size_t id) {
      if (id == 0) {
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        while (!helper_started && std::chrono::steady_clock::now() < until) std::this_thread::yield();
        throw std::runtime_error("caller out of memory");
      }
      helper_started = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      helper_done = true;
    };
    try {
      (void)pool.run(fn);
    } catch (const std::runtime_error&) {
      done_when_caught = helper_done.load();
    }
  }
  EXPECT_TRUE(helper_started);
  EXPECT_TRUE(done_when_caught);
  expect_usable(pool);
}

// A second caller while a job runs is told to sweep alone.
TEST(SweepPool, OneJobAtATime) {
  SweepPool pool(1);
  std::atomic<bool> inside{false}, release{false};
  std::atomic<int> second{-1};
  const std::function<void(size_t)> slow = [&](size_t id) {
    if (id != 0) return;
    inside = true;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!release && std::chrono::steady_clock::now() < until) std::this_thread::yield();
  };
  std::thread first([&] { (void)pool.run(slow); });
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!inside && std::chrono::steady_clock::now() < until) std::this_thread::yield();
  const std::function<void(size_t)> other = [](size_t) {};
  second = pool.run(other) ? 1 : 0;
  release = true;
  first.join();
  EXPECT_EQ(second.load(), 0);
}

}  // namespace
}  // namespace petrel::table
