// `petrel dump`: the routing table as an MRT TABLE_DUMP_V2 file (RFC 6396,
// RFC 8050; docs/operations.md, "MRT table dumps"). The snapshot and the
// writing run on a thread of their own: the snapshot holds each shard's
// lock only while copying that shard's routes (their attribute bytes
// included), the encoding (mrt/writer.h) and the file's I/O hold none.
#pragma once

#include <cstdint>
#include <ctime>
#include <string>
#include <vector>

#include "table/table.h"

namespace petrel::daemon {

// Where a dump goes when no file is named: this directory, a name from
// the UTC time.
inline constexpr const char* kDefaultDumpDir = "/var/lib/petrel";

// kDefaultDumpDir + "/petrel-YYYYMMDDTHHMMSSZ.mrt" for `now`.
std::string default_dump_path(std::time_t now);

struct DumpOutcome {
  bool ok = false;
  std::string path;
  std::string error;  // when !ok: what failed, with the file and errno's text
  uint64_t prefixes = 0;
  uint64_t routes = 0;
  uint64_t routes_left_out = 0;  // too large for an MRT record, or malformed
  uint64_t peers = 0;
  uint64_t bytes = 0;  // MRT octets, before any compression
  std::vector<std::string> removed;  // older dumps rotation removed
};

// The periodic dumps' figures ([mrt] dump_interval), for GET /api/mrt.
struct MrtDumpStatus {
  uint64_t written = 0;  // dumps completed, `petrel dump`'s included
  uint64_t failed = 0;
  uint64_t skipped = 0;  // periodic dumps not started: the previous one was still running
  std::string last_file;
  std::string last_error;
};

// Takes the snapshot of `t`'s IPv4 and IPv6 unicast routes and writes it
// to path + ".tmp" (gzip-compressed when `gzip`), then renames that to
// `path` (a reader never sees half a file; on an error the .tmp file is
// removed; daemon/mrt_file.h). The same for `petrel dump` and the
// periodic dumps of [mrt]. `collector_id`: our
// router id (host order); `local_as`: the AS of our own routes' peer
// entry. Blocking: for a thread of its own.
DumpOutcome dump_table(const table::Table& t, const std::string& path, bool gzip, uint32_t collector_id,
                       uint32_t local_as, std::time_t now);

}  // namespace petrel::daemon
