// Tests for daemon/mrt_file.h and daemon/mrt_log.h: MRT files written
// under NAME.tmp and renamed, gzip read back by mrt/file.h, strftime names,
// rotation; the UPDATE log's records read back by Petrel's own reader
// (mrt/mrt.h), and a writer stuck on its file (a FIFO nobody reads yet:
// a disk that does not answer) never blocking update(), drops counted.
#include "daemon/mrt_log.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/time.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "daemon/mrt_file.h"
#include "mrt/file.h"
#include "mrt/mrt.h"

namespace petrel::daemon {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<std::byte>;

struct TempDir {
  TempDir() {
    std::string t = (fs::temp_directory_path() / "petrel-mrt-XXXXXX").string();
    path = ::mkdtemp(t.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string operator/(const std::string& name) const { return path + "/" + name; }
  std::string path;
};

Bytes some_bytes(size_t n) {
  Bytes b(n);
  for (size_t i = 0; i < n; ++i) b[i] = std::byte(i * 7 % 251);
  return b;
}

TEST(MrtFile, GzipIsReadBackAndRenamedWhenComplete) {
  TempDir d;
  const std::string path = d / "rib.mrt.gz";
  MrtFile f;
  ASSERT_TRUE(f.open(path, true)) << f.error();
  EXPECT_TRUE(fs::exists(path + ".tmp"));
  EXPECT_FALSE(fs::exists(path));
  const Bytes data = some_bytes(100'000);
  ASSERT_TRUE(f.write(data));
  ASSERT_TRUE(f.finish()) << f.error();
  EXPECT_FALSE(fs::exists(path + ".tmp"));
  Bytes raw(fs::file_size(path));
  std::ifstream(path, std::ios::binary).read(reinterpret_cast<char*>(raw.data()), static_cast<std::streamsize>(raw.size()));
  EXPECT_TRUE(mrt::is_gzip(raw));
  EXPECT_LT(raw.size(), data.size());
  auto back = mrt::load_file(path);
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, data);
}

TEST(MrtFile, AnErrorNamesTheFileAndLeavesNothing) {
  TempDir d;
  MrtFile f;
  const std::string path = d / "no/such/dir/rib.mrt";
  EXPECT_FALSE(f.open(path, false));
  EXPECT_EQ(f.error(), "cannot open " + path + ".tmp: No such file or directory");
  MrtFile g;
  ASSERT_TRUE(g.open(d / "x.mrt", false));
  g.abandon();
  EXPECT_FALSE(fs::exists(d / "x.mrt.tmp"));
  EXPECT_FALSE(fs::exists(d / "x.mrt"));
}

// A FIFO at the temporary file's path that no one reads fails the open at
// once, instead of holding the writing thread in open() for good; one a
// reader holds open is written. A device there is refused and left alone.
TEST(MrtFile, AFifoWithoutAReaderOrADeviceIsRefusedWithoutWaiting) {
  TempDir d;
  const std::string path = d / "rib.mrt";
  ASSERT_EQ(::mkfifo((path + ".tmp").c_str(), 0600), 0);
  MrtFile f;
  EXPECT_FALSE(f.open(path, false));
  EXPECT_EQ(f.error(), "cannot open " + path + ".tmp: No such device or address");  // no reader: ENXIO
  EXPECT_TRUE(fs::is_fifo(path + ".tmp"));
  const int reader = ::open((path + ".tmp").c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(reader, 0);
  MrtFile g;
  ASSERT_TRUE(g.open(path, false)) << g.error();
  ASSERT_TRUE(g.write(some_bytes(100)));
  std::byte buf[200];
  EXPECT_EQ(::read(reader, buf, sizeof buf), 100);
  g.abandon();
  ::close(reader);
  if (::geteuid() != 0) GTEST_SKIP() << "making a device node needs root";
  const std::string dev = d / "dev.mrt";
  ASSERT_EQ(::mknod((dev + ".tmp").c_str(), S_IFCHR | 0600, ::makedev(1, 3)), 0);  // /dev/null's
  MrtFile h;
  EXPECT_FALSE(h.open(dev, false));
  EXPECT_EQ(h.error(), "cannot open " + dev + ".tmp: not a regular file");
  EXPECT_TRUE(fs::is_character_file(dev + ".tmp"));
}

TEST(MrtFile, NamesAreStrftimeInUtc) {
  EXPECT_EQ(mrt_file_name("/var/lib/petrel/rib.%Y%m%d.%H%M.mrt", 86400 + 3600 + 120),
            "/var/lib/petrel/rib.19700102.0102.mrt");
  EXPECT_EQ(mrt_file_name("/fixed.mrt", 0), "/fixed.mrt");
  EXPECT_EQ(mrt_file_name(std::string(5000, 'a'), 0), "");
}

TEST(MrtFile, RotationKeepsTheNewestOfThePatternOnly) {
  TempDir d;
  auto make = [&](const std::string& name, time_t mtime) {
    std::ofstream(d / name) << "x";
    struct timeval tv[2] = {{mtime, 0}, {mtime, 0}};
    ASSERT_EQ(::utimes((d / name).c_str(), tv), 0);
  };
  make("rib.1.mrt", 1000);
  make("rib.2.mrt", 2000);
  make("rib.3.mrt", 3000);
  make("rib.0.mrt.tmp", 500);   // being written: never removed
  make("updates.1.mrt", 100);   // another pattern's
  std::vector<std::string> removed = rotate_mrt_files(d / "rib.%s.mrt", 2);
  EXPECT_EQ(removed, std::vector<std::string>{d / "rib.1.mrt"});
  EXPECT_TRUE(fs::exists(d / "rib.2.mrt"));
  EXPECT_TRUE(fs::exists(d / "rib.3.mrt"));
  EXPECT_TRUE(fs::exists(d / "rib.0.mrt.tmp"));
  EXPECT_TRUE(fs::exists(d / "updates.1.mrt"));
  EXPECT_TRUE(rotate_mrt_files(d / "rib.%s.mrt", 0).empty());  // 0: keep all
}

mrt::Bgp4mpPeer session() {
  mrt::Bgp4mpPeer p;
  p.peer_as = 65002;
  p.local_as = 65001;
  p.peer_ip = *net::IpAddress::parse("192.0.2.1");
  p.local_ip = *net::IpAddress::parse("192.0.2.2");
  return p;
}

// An UPDATE's body: no withdrawals, no attributes (End-of-RIB).
const Bytes kBody(4, std::byte{0});

MrtConfig log_config(const TempDir& d, uint32_t queue) {
  MrtConfig c;
  c.updates_file = d / "updates.%Y%m%d.%H%M%S.mrt";
  c.updates_interval = 604'800;  // one file for the whole test
  c.updates_queue = queue;
  return c;
}

std::string current_file(const MrtConfig& c) {
  const std::time_t now = std::time(nullptr);
  return mrt_file_name(c.updates_file, now - now % c.updates_interval);
}

TEST(MrtUpdateLog, RecordsAreReadBackByTheReader) {
  TempDir d;
  MrtConfig c = log_config(d, 100);
  MrtUpdateLog log(c);
  log.start();
  log.state_change(session(), 5, 6);
  for (int i = 0; i < 3; ++i) log.update(session(), i == 2, kBody);
  log.stop();
  const std::string path = current_file(c);
  ASSERT_TRUE(fs::exists(path));
  EXPECT_FALSE(fs::exists(path + ".tmp"));
  auto data = mrt::load_file(path);
  ASSERT_TRUE(data);
  mrt::RecordReader r(*data);
  auto first = r.next();
  ASSERT_TRUE(first);
  auto sc = mrt::decode_bgp4mp_state_change(*first);
  ASSERT_TRUE(sc);
  EXPECT_EQ(sc->new_state, 6);
  for (int i = 0; i < 3; ++i) {
    auto rec = r.next();
    ASSERT_TRUE(rec);
    EXPECT_TRUE(rec->is(mrt::Type::kBgp4mpEt));
    auto m = mrt::decode_bgp4mp_message(*rec);
    ASSERT_TRUE(m);
    EXPECT_EQ(m->add_path, i == 2);
    ASSERT_EQ(m->message.size(), 23u);  // the 19-octet header put back
    EXPECT_EQ(m->message[0], std::byte{0xFF});
    EXPECT_EQ(m->message[17], std::byte{23});
    EXPECT_EQ(m->message[18], std::byte{2});
  }
  EXPECT_TRUE(r.done());
  MrtLogStatus st = log.status();
  EXPECT_EQ(st.records, 4u);
  EXPECT_EQ(st.dropped, 0u);
  EXPECT_EQ(st.files, 1u);
}

TEST(MrtUpdateLog, AStuckDiskDropsAndCountsNeverWaits) {
  TempDir d;
  MrtConfig c = log_config(d, 4);
  const std::string path = current_file(c);
  // The disk: a FIFO whose reader does not read yet, filled to the brim,
  // so that the log's first write waits.
  ASSERT_EQ(::mkfifo((path + ".tmp").c_str(), 0600), 0);
  const int rd = ::open((path + ".tmp").c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(rd, 0);
  size_t filler = 0;
  {
    const int wr = ::open((path + ".tmp").c_str(), O_WRONLY | O_NONBLOCK);
    ASSERT_GE(wr, 0);
    const std::byte zeros[4096]{};
    for (int i = 0; i < 1024; ++i) {  // 64 KiB by default; at most 4 MiB
      const ssize_t n = ::write(wr, zeros, sizeof zeros);
      if (n <= 0) break;
      filler += static_cast<size_t>(n);
    }
    ::close(wr);
  }
  MrtUpdateLog log(c);
  log.start();
  constexpr int kSent = 50;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kSent; ++i) {
    log.update(session(), false, kBody);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  MrtLogStatus st = log.status();
  EXPECT_LE(st.queued, 4u);
  EXPECT_GE(st.dropped, static_cast<uint64_t>(kSent - 8));  // the queue and one batch at most got through
  // The disk answers: what was queued is written, the rest stays dropped.
  Bytes got;
  std::thread reader([&] {
    (void)::fcntl(rd, F_SETFL, O_RDONLY);  // waits for data, ends when the log closes
    std::byte buf[4096];
    ssize_t n;
    while ((n = ::read(rd, buf, sizeof buf)) > 0) got.insert(got.end(), buf, buf + n);
    ::close(rd);
  });
  log.stop();
  reader.join();
  ASSERT_GE(got.size(), filler);
  got.erase(got.begin(), got.begin() + static_cast<std::ptrdiff_t>(filler));
  st = log.status();
  EXPECT_EQ(st.records + st.dropped, static_cast<uint64_t>(kSent));
  mrt::RecordReader r(got);
  uint64_t records = 0;
  while (!r.done()) {
    ASSERT_TRUE(r.next());
    ++records;
  }
  EXPECT_EQ(records, st.records);
  EXPECT_GT(records, 0u);
}

}  // namespace
}  // namespace petrel::daemon
