// The files the MRT writers put on disk (docs/operations.md, "MRT"):
// `petrel dump`'s and the periodic table dumps (mrt_dump.h), and the
// UPDATE log's (mrt_log.h). One piece of code for the three: a file is
// written under NAME.tmp, gzip-compressed or not, and renamed to NAME
// only once complete, so a reader never sees half a file; names come from
// a strftime pattern in UTC; rotation keeps the newest files of a pattern.
// Blocking I/O: for the writers' own threads, never a routing thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ctime>
#include <string>
#include <vector>

namespace petrel::daemon {

// `pattern` through strftime(3) for `now` in UTC ("" when the result is
// empty or longer than 4095 bytes).
std::string mrt_file_name(const std::string& pattern, std::time_t now);

// An MRT file being written: NAME.tmp until finish() renames it to NAME.
// Errors carry the file and errno's text; after one the .tmp file is gone.
class MrtFile {
 public:
  MrtFile() = default;
  ~MrtFile();
  MrtFile(const MrtFile&) = delete;
  MrtFile& operator=(const MrtFile&) = delete;

  // Creates path + ".tmp" (replacing one left over), through zlib when
  // `gzip`. False, with error() set, when it cannot.
  bool open(const std::string& path, bool gzip);
  [[nodiscard]] bool is_open() const { return fd_ >= 0; }
  [[nodiscard]] const std::string& path() const { return path_; }
  // Appends `data`; false (the file removed, error() set) on a failure.
  bool write(const std::vector<std::byte>& data);
  // Flushes, syncs and renames NAME.tmp to NAME; false (the .tmp file
  // removed, error() set) on a failure.
  bool finish();
  // Closes and removes the .tmp file (nothing when none is open).
  void abandon();
  [[nodiscard]] const std::string& error() const { return error_; }
  // Octets handed to write() since open().
  [[nodiscard]] uint64_t bytes() const { return bytes_; }

 private:
  bool failed(const std::string& what, int err);
  std::string path_;
  std::string tmp_;
  int fd_ = -1;          // the .tmp file, open until finish() or abandon()
  void* gz_ = nullptr;   // a gzFile on a duplicate of fd_, when gzip
  uint64_t bytes_ = 0;
  std::string error_;
};

// Rotation: the files in the pattern's directory whose names begin with
// the part of the pattern's file name before its first '%' (all of it
// when it has none) and do not end in ".tmp", newest first by
// modification time (then name); those past the first `keep` are
// removed. Returns the paths removed. `keep` 0: nothing is removed.
std::vector<std::string> rotate_mrt_files(const std::string& pattern, uint32_t keep);

}  // namespace petrel::daemon
