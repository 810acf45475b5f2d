// mrt-extract: writes the BGP messages of an MRT file (BGP4MP/BGP4MP_ET
// MESSAGE records of every subtype), one per line as hex on stdout or one
// per file in a directory, for fuzz seed corpora and `petrel decode`
// examples. With --attributes it writes the path attribute blocks of
// TABLE_DUMP / TABLE_DUMP_V2 RIB entries instead.
//
//   mrt-extract [--dir DIR] [--attributes] [--type N] [--limit N] FILE
//
// FILE may be gzip-compressed. --type keeps only BGP messages of that type
// (1 OPEN, 2 UPDATE, 3 NOTIFICATION, 4 KEEPALIVE, 5 ROUTE-REFRESH).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "mrt/file.h"
#include "mrt/mrt.h"

namespace {

using petrel::bytes::Span;

int usage() {
  std::fprintf(stderr,
               "usage: mrt-extract [--dir DIR] [--attributes] [--type N] [--limit N] FILE\n"
               "  writes each BGP message of an MRT file as a hex line on stdout,\n"
               "  or as a binary file DIR/NNNNNN.bin with --dir\n");
  return 2;
}

struct Sink {
  std::string dir;
  size_t written = 0;

  void put(Span bytes) {
    if (dir.empty()) {
      std::string line = petrel::bytes::to_hex(bytes);
      line.push_back('\n');
      std::fwrite(line.data(), 1, line.size(), stdout);
    } else {
      char name[32];
      std::snprintf(name, sizeof name, "%06zu.bin", written);
      std::ofstream out(std::filesystem::path(dir) / name, std::ios::binary);
      out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    }
    ++written;
  }
};

}  // namespace

int main(int argc, char** argv) {
  Sink sink;
  bool attributes = false;
  long type = -1;
  size_t limit = SIZE_MAX;
  const char* file = nullptr;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    bool has_value = i + 1 < argc;
    if (a == "--dir" && has_value) {
      sink.dir = argv[++i];
    } else if (a == "--attributes") {
      attributes = true;
    } else if (a == "--type" && has_value) {
      type = std::strtol(argv[++i], nullptr, 10);
    } else if (a == "--limit" && has_value) {
      limit = std::strtoull(argv[++i], nullptr, 10);
    } else if (a.starts_with("-") || file != nullptr) {
      return usage();
    } else {
      file = argv[i];
    }
  }
  if (file == nullptr) return usage();
  if (!sink.dir.empty()) std::filesystem::create_directories(sink.dir);

  auto data = petrel::mrt::load_file(file);
  if (!data) {
    std::fprintf(stderr, "mrt-extract: %s: %s\n", file, petrel::mrt::to_string(data.error()));
    return 1;
  }
  petrel::mrt::RecordReader reader(*data);
  size_t records = 0;
  int status = 0;
  while (!reader.done() && sink.written < limit) {
    auto rec = reader.next();
    if (!rec) {
      std::fprintf(stderr, "mrt-extract: %s: record %zu: %s\n", file, records,
                   petrel::mrt::to_string(rec.error()));
      status = 1;
      break;
    }
    ++records;
    if (attributes) {
      if (rec->is(petrel::mrt::Type::kTableDump)) {
        if (auto e = petrel::mrt::decode_table_dump(*rec)) sink.put(e->attributes);
      } else if (petrel::mrt::is_rib(*rec)) {
        if (auto rib = petrel::mrt::decode_rib(*rec)) {
          for (const auto& entry : *rib) {
            if (sink.written >= limit) break;
            sink.put(entry.attributes);
          }
        }
      }
      continue;
    }
    if (!petrel::mrt::is_bgp4mp_message(*rec)) continue;
    auto m = petrel::mrt::decode_bgp4mp_message(*rec);
    if (!m) {
      std::fprintf(stderr, "mrt-extract: %s: record %zu: %s\n", file, records,
                   petrel::mrt::to_string(m.error()));
      status = 1;
      continue;
    }
    // The BGP message type is the octet after the marker and length.
    if (type >= 0 && (m->message.size() < 19 || std::to_integer<long>(m->message[18]) != type)) continue;
    sink.put(m->message);
  }
  std::fprintf(stderr, "mrt-extract: %zu records read, %zu %s written\n", records, sink.written,
               attributes ? "attribute blocks" : "messages");
  return status;
}
