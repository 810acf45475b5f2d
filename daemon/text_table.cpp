// TextTable (text_table.h): aligned columns, long cells wrapped after.
#include "daemon/text_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

namespace petrel::daemon {

namespace {

constexpr size_t kGap = 2;  // spaces between columns

void end_line(std::string& out, std::string& line) {
  while (line.ends_with(' ')) line.pop_back();
  out += line;
  out += '\n';
  line.clear();
}

}  // namespace

TextTable::TextTable(std::vector<std::string> header, std::vector<size_t> max_width)
    : max_width_(std::move(max_width)) {
  rows_.push_back(std::move(header));
}

void TextTable::add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }

std::string TextTable::text() const {
  auto limit = [&](size_t i) { return i < max_width_.size() && max_width_[i] != 0 ? max_width_[i] : SIZE_MAX; };
  std::vector<size_t> width;
  for (size_t r = 0; r < rows_.size(); ++r) {
    const auto& row = rows_[r];
    width.resize(std::max(width.size(), row.size()));
    for (size_t i = 0; i < row.size(); ++i)
      if (r == 0 || row[i].size() <= limit(i)) width[i] = std::max(width[i], row[i].size());
  }
  std::string out;
  for (const auto& row : rows_) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 == row.size()) break;
      if (row[i].size() > width[i]) {
        // Too long for its column: the row goes on under the next column.
        const size_t at = line.size() - row[i].size() + width[i] + kGap;
        end_line(out, line);
        line.assign(at, ' ');
      } else {
        line.append(width[i] - row[i].size() + kGap, ' ');
      }
    }
    end_line(out, line);
  }
  return out;
}

std::string duration_text(int64_t seconds) {
  if (seconds < 60) return fmt::format("{}s", seconds);
  if (seconds < 3600) return fmt::format("{}m{:02}s", seconds / 60, seconds % 60);
  if (seconds < 86400) return fmt::format("{}h{:02}m", seconds / 3600, seconds / 60 % 60);
  return fmt::format("{}d{:02}h", seconds / 86400, seconds / 3600 % 24);
}

}  // namespace petrel::daemon
