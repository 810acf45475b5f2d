// A session worker: one thread running one libev loop. Sessions live on one
// worker from start to close; other threads hand work to it through post(),
// an ev_async plus a locked queue (docs/DESIGN.md, "Threads").
#pragma once

#include <ev.h>

#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace petrel::daemon {

class Worker {
 public:
  explicit Worker(std::string name);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  void start();
  // Runs fn on the worker's thread. Safe from any thread.
  void post(std::function<void()> fn);
  // Asks the loop to end once fn-s posted before are done; join() waits.
  void stop();
  void join();

  [[nodiscard]] struct ev_loop* loop() const { return loop_; }
  [[nodiscard]] const std::string& name() const { return name_; }
  // True when called on this worker's own thread.
  [[nodiscard]] bool on_thread() const { return std::this_thread::get_id() == thread_.get_id(); }

  // Set when the loop ended because a task threw out of the worker's own
  // code (not a session's: those are caught per session).
  [[nodiscard]] bool failed() const { return failed_; }
  [[nodiscard]] const std::string& failure() const { return failure_; }

 private:
  static void on_async(struct ev_loop* loop, ev_async* w, int revents);
  void drain();

  std::string name_;
  struct ev_loop* loop_;
  ev_async async_;
  std::mutex mu_;
  std::vector<std::function<void()>> queue_;
  bool stopping_ = false;
  std::thread thread_;
  bool failed_ = false;
  std::string failure_;
};

}  // namespace petrel::daemon
