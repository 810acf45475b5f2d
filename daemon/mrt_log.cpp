// The MRT UPDATE log (mrt_log.h).
#include "daemon/mrt_log.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>

#include "codec/framer.h"
#include "daemon/log.h"

namespace petrel::daemon {

namespace {

std::atomic<MrtUpdateLog*> g_log{nullptr};

// A BGP message header (RFC 4271 section 4.1): marker, length, type.

mrt::Bgp4mpTime now_time() {
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(
                      std::chrono::system_clock::now().time_since_epoch()).count();
  return {static_cast<uint32_t>(us / 1'000'000), static_cast<uint32_t>(us % 1'000'000)};
}

// Drops are logged at most this often (seconds), with the count since.
constexpr std::time_t kDropLogEvery = 10;

}  // namespace

MrtUpdateLog* mrt_update_log() { return g_log.load(std::memory_order_acquire); }
void set_mrt_update_log(MrtUpdateLog* log) { g_log.store(log, std::memory_order_release); }

MrtUpdateLog::MrtUpdateLog(const MrtConfig& config) : config_(config) {}

MrtUpdateLog::~MrtUpdateLog() { stop(); }

void MrtUpdateLog::start() {
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "petrel-mrt");
    run();
  });
}

void MrtUpdateLog::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void MrtUpdateLog::update(const mrt::Bgp4mpPeer& peer, bool add_path, bytes::Span body) {
  const std::vector<std::byte> message = codec::whole_message(codec::MessageType::kUpdate, body);
  std::vector<std::byte> record;
  record.reserve(message.size() + 48);
  mrt::bgp4mp_message(now_time(), peer, add_path, message, record);
  push(std::move(record));
}

void MrtUpdateLog::state_change(const mrt::Bgp4mpPeer& peer, uint16_t old_state, uint16_t new_state) {
  std::vector<std::byte> record;
  mrt::bgp4mp_state_change(now_time(), peer, old_state, new_state, record);
  push(std::move(record));
}

void MrtUpdateLog::push(std::vector<std::byte>&& record) {
  bool first = false;
  {
    std::lock_guard lock(mu_);
    if (stopping_ || queue_.size() >= config_.updates_queue) {
      ++status_.dropped;
      return;
    }
    first = queue_.empty();
    queue_.push_back(std::move(record));
  }
  if (first) wake_.notify_one();  // the writer empties the whole queue once woken
}

MrtLogStatus MrtUpdateLog::status() const {
  std::lock_guard lock(mu_);
  MrtLogStatus s = status_;
  s.queued = queue_.size();
  return s;
}

void MrtUpdateLog::run() {
  std::vector<std::vector<std::byte>> batch;
  std::unique_lock lock(mu_);
  while (true) {
    // Wakes for records, for the end of the file's period, and once a
    // second whatever happens (a notify missed delays, never loses).
    wake_.wait_for(lock, std::chrono::seconds(1), [&] { return stopping_ || !queue_.empty(); });
    batch.assign(std::make_move_iterator(queue_.begin()), std::make_move_iterator(queue_.end()));
    queue_.clear();
    const bool stop = stopping_;
    const uint64_t dropped = status_.dropped;
    lock.unlock();

    const std::time_t now = std::time(nullptr);
    if (file_.is_open() && now >= period_end_) complete();
    if (!batch.empty()) write(batch, now);
    batch.clear();
    if (dropped != drops_logged_ && now - drops_logged_at_ >= kDropLogEvery) {
      log(LogLevel::kWarn, "mrt-updates-dropped", {{"dropped", dropped - drops_logged_}, {"dropped_total", dropped}},
          "the UPDATE log's queue was full (mrt.updates_queue) or its file could not be written");
      drops_logged_ = dropped;
      drops_logged_at_ = now;
    }
    lock.lock();
    if (stop && queue_.empty()) break;
  }
  lock.unlock();
  if (file_.is_open()) complete();
}

void MrtUpdateLog::write(std::vector<std::vector<std::byte>>& batch, std::time_t now) {
  auto lose = [&](size_t n) {
    std::lock_guard lock(mu_);
    status_.dropped += n;
  };
  if (!file_.is_open()) {
    if (now < failed_until_) return lose(batch.size());
    const std::time_t interval = config_.updates_interval;
    const std::time_t start = now - now % interval;
    period_end_ = start + interval;
    const std::string path = mrt_file_name(config_.updates_file, start);
    if (path.empty() || !file_.open(path, config_.updates_gzip)) {
      const std::string error = path.empty() ? "mrt.updates_file gives an empty or too long name" : file_.error();
      log(LogLevel::kWarn, "mrt-updates-failed", {{"file", path}}, error);
      failed_until_ = period_end_;
      std::lock_guard lock(mu_);
      ++status_.errors;
      status_.last_error = error;
      status_.dropped += batch.size();
      return;
    }
    std::lock_guard lock(mu_);
    status_.file = path;
  }
  std::vector<std::byte> buf;
  size_t total = 0;
  for (const auto& r : batch) total += r.size();
  buf.reserve(total);
  for (const auto& r : batch) buf.insert(buf.end(), r.begin(), r.end());
  if (!file_.write(buf)) {
    log(LogLevel::kWarn, "mrt-updates-failed", {{"file", file_.path()}}, file_.error());
    failed_until_ = period_end_;
    std::lock_guard lock(mu_);
    ++status_.errors;
    status_.last_error = file_.error();
    status_.dropped += batch.size();
    status_.file.clear();
    return;
  }
  std::lock_guard lock(mu_);
  status_.records += batch.size();
  status_.bytes += total;
}

void MrtUpdateLog::complete() {
  const bool ok = file_.finish();
  if (!ok) log(LogLevel::kWarn, "mrt-updates-failed", {{"file", file_.path()}}, file_.error());
  else log(LogLevel::kInfo, "mrt-updates-written", {{"file", file_.path()}, {"bytes", file_.bytes()}});
  std::vector<std::string> removed;
  if (ok) removed = rotate_mrt_files(config_.updates_file, config_.updates_keep);
  for (const std::string& f : removed) log(LogLevel::kInfo, "mrt-file-removed", {{"file", f}});
  std::lock_guard lock(mu_);
  status_.file.clear();
  if (ok) {
    ++status_.files;
  } else {
    ++status_.errors;
    status_.last_error = file_.error();
  }
}

}  // namespace petrel::daemon
