// The MRT UPDATE log ([mrt] updates_file; docs/operations.md, "MRT"):
// every UPDATE received from a peer as a BGP4MP_ET MESSAGE_AS4 record
// (MESSAGE_AS4_ADDPATH when its NLRI carry path identifiers, RFC 8050), and every change of a session's state as STATE_CHANGE_AS4 (RFC
// 6396 section 4.4), in files named by a strftime pattern, one per
// updates_interval seconds, optionally gzip-compressed.
//
// A session's worker encodes the record and queues it (a copy, under a
// lock held for the push only); a thread of its own (`petrel-mrt`) writes
// them out. The queue is bounded (updates_queue records): when the disk
// is slower than the UPDATEs, records are dropped, counted and logged, and
// routing never waits. A file is written as NAME.tmp and renamed to NAME
// when its period ends (daemon/mrt_file.h).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <ctime>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "crates/bytes/bytes.h"
#include "daemon/config.h"
#include "daemon/mrt_file.h"
#include "mrt/writer.h"

namespace petrel::daemon {

struct MrtLogStatus {
  std::string file;       // the file being written (its final name), "" between files
  uint64_t records = 0;   // records written
  uint64_t dropped = 0;   // records lost: the queue was full, or the file could not be written
  uint64_t bytes = 0;     // MRT octets written (before compression)
  uint64_t files = 0;     // files completed (renamed)
  uint64_t errors = 0;    // files that could not be opened, written or renamed
  uint64_t queued = 0;    // records waiting now
  std::string last_error;
};

class MrtUpdateLog {
 public:
  explicit MrtUpdateLog(const MrtConfig& config);
  ~MrtUpdateLog();
  MrtUpdateLog(const MrtUpdateLog&) = delete;
  MrtUpdateLog& operator=(const MrtUpdateLog&) = delete;

  void start();
  // Writes what is queued, completes the file and ends the thread.
  void stop();

  // Any thread; never waits for the disk. `body`: the UPDATE after the
  // 19-octet BGP header (the record gets the whole message back).
  void update(const mrt::Bgp4mpPeer& peer, bool add_path, bytes::Span body);
  // States numbered as RFC 4271 section 8.2.2 (1 Idle .. 6 Established).
  void state_change(const mrt::Bgp4mpPeer& peer, uint16_t old_state, uint16_t new_state);

  [[nodiscard]] MrtLogStatus status() const;

 private:
  void push(std::vector<std::byte>&& record);
  void run();
  void write(std::vector<std::vector<std::byte>>& batch, std::time_t now);
  void complete();

  const MrtConfig config_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::deque<std::vector<std::byte>> queue_;
  bool stopping_ = false;
  std::thread thread_;
  MrtLogStatus status_;  // under mu_ (the writer's figures copied in after each batch)
  // The writer thread's own: the file of the period ending at period_end_,
  // and, after a failure, no new file before the next period.
  MrtFile file_;
  std::time_t period_end_ = 0;
  std::time_t failed_until_ = 0;
  uint64_t drops_logged_ = 0;
  std::time_t drops_logged_at_ = 0;
};

// The UPDATE log the sessions feed, if any (like bmp_feed(): set by the
// server before the sessions start, cleared before it stops).
MrtUpdateLog* mrt_update_log();
void set_mrt_update_log(MrtUpdateLog* log);

}  // namespace petrel::daemon
