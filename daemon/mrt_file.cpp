// MRT files on disk (mrt_file.h).
#include "daemon/mrt_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

namespace petrel::daemon {

namespace {
constexpr size_t kMaxPath = 4095;
}  // namespace

std::string mrt_file_name(const std::string& pattern, std::time_t now) {
  std::tm tm{};
  gmtime_r(&now, &tm);
  std::string out(kMaxPath + 1, '\0');
  // The pattern is the operator's (mrt.dump_file, mrt.updates_file).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
  size_t n = std::strftime(out.data(), out.size(), pattern.c_str(), &tm);
#pragma GCC diagnostic pop
  out.resize(n);  // 0 when it did not fit (or is empty)
  return out;
}

MrtFile::~MrtFile() { abandon(); }

bool MrtFile::failed(const std::string& what, int err) {
  error_ = what + " " + tmp_ + ": " + std::strerror(err);
  abandon();
  return false;
}

bool MrtFile::open(const std::string& path, bool gzip) {
  abandon();
  path_ = path;
  tmp_ = path + ".tmp";
  bytes_ = 0;
  error_.clear();
  // Without waiting: a FIFO at the path that no one reads would hold the
  // writing thread in open() for good, and every later dump and the
  // daemon's stop behind it; opened without waiting it fails at once
  // (ENXIO). One a reader holds open is written as a file would be (a
  // reader that stops reading is a stuck disk). Other kinds (a device)
  // are refused and left alone.
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
  if (fd_ < 0) {
    error_ = "cannot open " + tmp_ + ": " + std::strerror(errno);
    return false;
  }
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || ::fcntl(fd_, F_SETFL, O_WRONLY) != 0) return failed("cannot open", errno);
  if (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode)) {
    error_ = "cannot open " + tmp_ + ": not a regular file";
    ::close(fd_);
    fd_ = -1;
    return false;
  }
  if (gzip) {
    // zlib gets a duplicate to close; ours stays open to be synced.
    int dup = ::fcntl(fd_, F_DUPFD_CLOEXEC, 0);
    if (dup < 0) return failed("cannot open", errno);
    gz_ = gzdopen(dup, "wb6");
    if (gz_ == nullptr) {
      ::close(dup);
      return failed("cannot start gzip for", ENOMEM);
    }
  }
  return true;
}

bool MrtFile::write(const std::vector<std::byte>& data) {
  if (fd_ < 0) return false;
  size_t off = 0;
  while (off < data.size()) {
    if (gz_ != nullptr) {
      auto chunk = static_cast<unsigned>(std::min<size_t>(data.size() - off, 1u << 30));
      errno = 0;
      int n = gzwrite(static_cast<gzFile>(gz_), data.data() + off, chunk);
      if (n <= 0) return failed("cannot write", errno != 0 ? errno : EIO);
      off += static_cast<size_t>(n);
      continue;
    }
    ssize_t n = ::write(fd_, data.data() + off, data.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return failed("cannot write", n < 0 ? errno : EIO);
    off += static_cast<size_t>(n);
  }
  bytes_ += data.size();
  return true;
}

bool MrtFile::finish() {
  if (fd_ < 0) return false;
  if (gz_ != nullptr) {
    errno = 0;
    int rc = gzclose(static_cast<gzFile>(gz_));  // the gzip trailer, then its descriptor
    gz_ = nullptr;
    if (rc != Z_OK) return failed("cannot write", errno != 0 ? errno : EIO);
  }
  // (EINVAL: a file that cannot be synced, a FIFO say: nothing to wait for.)
  if (::fsync(fd_) != 0 && errno != EINVAL) return failed("cannot sync", errno);
  int rc = ::close(fd_);
  fd_ = -1;
  if (rc != 0) {
    error_ = "cannot close " + tmp_ + ": " + std::strerror(errno);
    ::unlink(tmp_.c_str());
    return false;
  }
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp_.c_str());
    error_ = "cannot rename " + tmp_ + " to " + path_ + ": " + std::strerror(err);
    return false;
  }
  return true;
}

void MrtFile::abandon() {
  if (gz_ != nullptr) gzclose(static_cast<gzFile>(gz_));
  if (fd_ >= 0) ::close(fd_);
  if (fd_ >= 0) ::unlink(tmp_.c_str());
  gz_ = nullptr;
  fd_ = -1;
}

std::vector<std::string> rotate_mrt_files(const std::string& pattern, uint32_t keep) {
  std::vector<std::string> removed;
  if (keep == 0) return removed;
  namespace fs = std::filesystem;
  const fs::path p(pattern);
  const fs::path dir = p.parent_path().empty() ? fs::path(".") : p.parent_path();
  const std::string name = p.filename().string();
  const std::string prefix = name.substr(0, name.find('%'));
  struct Found {
    std::time_t mtime;
    std::string path;
  };
  std::vector<Found> found;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string f = it->path().filename().string();
    if (f.compare(0, prefix.size(), prefix) != 0) continue;
    if (f.size() >= 4 && f.compare(f.size() - 4, 4, ".tmp") == 0) continue;
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    found.push_back({st.st_mtime, it->path().string()});
  }
  std::sort(found.begin(), found.end(), [](const Found& a, const Found& b) {
    return a.mtime != b.mtime ? a.mtime > b.mtime : a.path > b.path;
  });
  for (size_t i = keep; i < found.size(); ++i)
    if (::unlink(found[i].path.c_str()) == 0) removed.push_back(found[i].path);
  return removed;
}

}  // namespace petrel::daemon
