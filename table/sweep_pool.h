// Helper threads that share a peer's withdrawal with its caller
// (Table::sweep_peer): run(fn) calls fn(0) on the calling thread and
// fn(1), fn(2), ... on the helpers, and returns when every call has. One
// job at a time: while another caller's job runs, run() returns false at
// once (and that caller sweeps alone: two withdrawals at once keep two
// threads busy anyway).
//
// An exception from any of the calls (bad_alloc in a sweep) is caught
// where it is thrown; run() still waits for every call to end (fn lives
// on its caller's stack) and then throws the first one on the calling
// thread. The pool stays usable.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace petrel::table {

class SweepPool {
 public:
  // Starts up to `helpers` threads: where the system refuses one, the
  // pool works with those it has (with none, run() calls fn(0) alone).
  explicit SweepPool(size_t helpers) {
    threads_.reserve(helpers);
    for (size_t i = 0; i < helpers; ++i) {
      try {
        threads_.emplace_back([this, i] { loop(i + 1); });
      } catch (const std::system_error&) {
        break;
      }
    }
  }
  ~SweepPool() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    wake_.notify_all();
    for (auto& t : threads_) t.join();
  }
  SweepPool(const SweepPool&) = delete;
  SweepPool& operator=(const SweepPool&) = delete;
  [[nodiscard]] size_t threads() const { return threads_.size() + 1; }

  bool run(const std::function<void(size_t)>& fn) {
    std::unique_lock busy(run_mu_, std::try_to_lock);
    if (!busy) return false;
    {
      std::lock_guard lock(mu_);
      job_ = &fn;
      error_ = nullptr;
      pending_ = threads_.size();
      ++generation_;
    }
    wake_.notify_all();
    std::exception_ptr mine;
    try {
      fn(0);
    } catch (...) {
      mine = std::current_exception();
    }
    std::exception_ptr first;
    {
      std::unique_lock lock(mu_);
      done_.wait(lock, [&] { return pending_ == 0; });
      job_ = nullptr;
      first = mine ? mine : error_;
      error_ = nullptr;
    }
    if (first) std::rethrow_exception(first);
    return true;
  }

 private:
  void loop(size_t id) {
    uint64_t seen = 0;
    std::unique_lock lock(mu_);
    for (;;) {
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      const auto* job = job_;
      lock.unlock();
      std::exception_ptr failed;
      try {
        (*job)(id);
      } catch (...) {
        failed = std::current_exception();
      }
      lock.lock();
      if (failed && !error_) error_ = failed;
      if (--pending_ == 0) done_.notify_one();
    }
  }

  std::mutex run_mu_;  // held by the caller whose job runs
  std::mutex mu_;
  std::condition_variable wake_, done_;
  const std::function<void(size_t)>* job_ = nullptr;
  std::exception_ptr error_;  // a helper's first exception in this job
  size_t pending_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace petrel::table
