// Whole-file loading with gzip inflation through zlib.
#include "mrt/file.h"

#include <zlib.h>

#include <cstdio>
#include <memory>

namespace petrel::mrt {

const char* to_string(FileError e) {
  switch (e) {
    case FileError::kOpen: return "cannot open file";
    case FileError::kRead: return "cannot read file";
    case FileError::kCorrupt: return "file is not valid gzip";
  }
  return "unknown file error";
}

bool is_gzip(bytes::Span data) {
  return data.size() >= 2 && data[0] == std::byte{0x1f} && data[1] == std::byte{0x8b};
}

Result<std::vector<std::byte>, FileError> gunzip(bytes::Span data) {
  std::vector<std::byte> out;
  out.resize(data.size() * 4 + 4096);
  z_stream z{};
  if (inflateInit2(&z, 15 + 16) != Z_OK) return fail(FileError::kCorrupt);
  // zlib's API is not const-correct; it does not write to next_in.
  z.next_in = const_cast<Bytef*>(reinterpret_cast<const Bytef*>(data.data()));
  size_t in_left = data.size();
  size_t produced = 0;
  int rc = Z_OK;
  while (true) {
    if (produced == out.size()) out.resize(out.size() * 2);
    // zlib counts in uInt: feed and drain at most 1 GiB per call.
    auto in_chunk = static_cast<uInt>(std::min<size_t>(in_left, 1u << 30));
    auto out_chunk = static_cast<uInt>(std::min<size_t>(out.size() - produced, 1u << 30));
    z.avail_in = in_chunk;
    z.next_out = reinterpret_cast<Bytef*>(out.data() + produced);
    z.avail_out = out_chunk;
    rc = inflate(&z, Z_NO_FLUSH);
    in_left -= in_chunk - z.avail_in;
    produced += out_chunk - z.avail_out;
    if (rc == Z_STREAM_END) {
      // Another gzip member may follow (RFC 1952 section 2.2).
      if (in_left == 0 || !is_gzip(data.subspan(data.size() - in_left))) break;
      if (inflateReset(&z) != Z_OK) break;
      continue;
    }
    if (rc == Z_BUF_ERROR && z.avail_out != 0) break;  // input ended early
    if (rc != Z_OK && rc != Z_BUF_ERROR) break;
  }
  inflateEnd(&z);
  if (rc != Z_STREAM_END) return fail(FileError::kCorrupt);
  out.resize(produced);
  return out;
}

Result<std::vector<std::byte>, FileError> load_file(const std::string& path) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) return fail(FileError::kOpen);
  std::vector<std::byte> data;
  std::byte buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f.get())) > 0) data.insert(data.end(), buf, buf + n);
  if (std::ferror(f.get())) return fail(FileError::kRead);
  if (is_gzip(data)) return gunzip(data);
  return data;
}

}  // namespace petrel::mrt
