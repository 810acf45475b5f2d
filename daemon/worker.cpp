// Session worker threads: a libev loop each, fed through ev_async.
#include "daemon/worker.h"

#include <exception>

#include "daemon/log.h"

namespace petrel::daemon {

Worker::Worker(std::string name) : name_(std::move(name)), loop_(ev_loop_new(EVFLAG_AUTO)) {
  ev_async_init(&async_, &Worker::on_async);
  async_.data = this;
  ev_async_start(loop_, &async_);
}

Worker::~Worker() {
  join();
  ev_async_stop(loop_, &async_);
  ev_loop_destroy(loop_);
}

void Worker::start() {
  thread_ = std::thread([this] {
    try {
      ev_run(loop_, 0);
    } catch (const std::exception& e) {
      failed_ = true;
      failure_ = e.what();
      log(LogLevel::kError, "worker-failed", {{"worker", name_}}, e.what());
    }
  });
}

void Worker::post(std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(fn));
  }
  ev_async_send(loop_, &async_);
}

void Worker::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  ev_async_send(loop_, &async_);
}

void Worker::join() {
  if (thread_.joinable()) thread_.join();
}

void Worker::on_async(struct ev_loop* /*loop*/, ev_async* w, int /*revents*/) {
  static_cast<Worker*>(w->data)->drain();
}

void Worker::drain() {
  std::vector<std::function<void()>> batch;
  bool stopping;
  {
    std::lock_guard<std::mutex> lock(mu_);
    batch.swap(queue_);
    stopping = stopping_;
  }
  for (auto& fn : batch) fn();
  if (stopping) ev_break(loop_, EVBREAK_ALL);
}

}  // namespace petrel::daemon
