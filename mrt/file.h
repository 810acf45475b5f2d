// Loads an MRT file (or any file) into memory, inflating it first if it is
// gzip-compressed, as archived MRT dumps usually are. Kept apart from the
// reader (its own library, the only one here that links zlib) so that
// parsing MRT needs neither files nor zlib. For tests, tools and
// benchmarks: the daemon does not read MRT.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "crates/bytes/bytes.h"
#include "crates/result/result.h"

namespace petrel::mrt {

enum class FileError : uint8_t {
  kOpen,     // the file could not be opened
  kRead,     // reading it failed
  kCorrupt,  // it starts like gzip but does not inflate
};
const char* to_string(FileError e);

// True if data starts with the gzip magic bytes (RFC 1952 section 2.3.1).
bool is_gzip(bytes::Span data);

// Inflates gzip data, every member of a multi-member file in turn.
Result<std::vector<std::byte>, FileError> gunzip(bytes::Span data);

// The file's bytes, inflated if they are gzip.
Result<std::vector<std::byte>, FileError> load_file(const std::string& path);

}  // namespace petrel::mrt
