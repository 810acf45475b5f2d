// jemalloc statistics through mallctl (daemon/memory.h). PETREL_JEMALLOC is
// defined by daemon/meson.build where jemalloc is the allocator.
#include "daemon/memory.h"

#ifdef PETREL_JEMALLOC
#include <jemalloc/jemalloc.h>

#include <cstddef>
#include <string>
#endif

namespace petrel::daemon {

#ifdef PETREL_JEMALLOC

namespace {

uint64_t stat(const char* name, bool& ok) {
  size_t value = 0;
  size_t len = sizeof value;
  if (mallctl(name, &value, &len, nullptr, 0) != 0) ok = false;
  return value;
}

}  // namespace

MemoryStats read_memory() {
  MemoryStats m;
  // The statistics are a snapshot taken at the last epoch change.
  uint64_t epoch = 1;
  size_t len = sizeof epoch;
  if (mallctl("epoch", &epoch, &len, &epoch, len) != 0) return m;
  bool ok = true;
  m.allocated = stat("stats.allocated", ok);
  m.active = stat("stats.active", ok);
  m.metadata = stat("stats.metadata", ok);
  m.resident = stat("stats.resident", ok);
  m.mapped = stat("stats.mapped", ok);
  m.retained = stat("stats.retained", ok);
  bool bg = false;
  len = sizeof bg;
  m.background_thread = mallctl("background_thread", &bg, &len, nullptr, 0) == 0 && bg;
  m.available = ok;  // jemalloc built without --enable-stats answers ENOENT
  if (!ok) m = MemoryStats{};
  return m;
}

void release_free_memory() {
  // "arena.<MALLCTL_ARENAS_ALL>.purge": every arena.
  static const std::string name = "arena." + std::to_string(MALLCTL_ARENAS_ALL) + ".purge";
  (void)mallctl(name.c_str(), nullptr, nullptr, nullptr, 0);
}

#else

MemoryStats read_memory() { return {}; }
void release_free_memory() {}

#endif

}  // namespace petrel::daemon
