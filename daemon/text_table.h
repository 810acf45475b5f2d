// `petrel show`'s tables for people: columns as wide as their widest cell,
// two spaces apart, trailing spaces trimmed.
//
// A column may have a largest width (peer names, which may be 64
// characters, and next hops). A longer cell is written whole (a peer name
// must stay whole to be typed back in `petrel show peer NAME`) and ends
// its line; the rest of the row follows on the next line, starting under
// its own column, as `show bgp summary` of other daemons wraps a long
// neighbour name. The other rows keep narrow columns that fit a terminal.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace petrel::daemon {

class TextTable {
 public:
  // max_width[i]: the widest column i is made for its cells (0 or absent:
  // as wide as its widest cell); the header's own width always counts.
  explicit TextTable(std::vector<std::string> header, std::vector<size_t> max_width = {});
  void add(std::vector<std::string> row);
  // The table, a line each row (two for a row with a cell past its
  // column's largest width, and so on), each line ending in '\n'.
  [[nodiscard]] std::string text() const;

 private:
  std::vector<std::vector<std::string>> rows_;  // the header first
  std::vector<size_t> max_width_;
};

// A duration for people: "42s", "5m07s", "3h12m", "2d04h".
std::string duration_text(int64_t seconds);

}  // namespace petrel::daemon
