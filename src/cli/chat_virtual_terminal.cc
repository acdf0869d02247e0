#include "cli/chat_virtual_terminal.h"

#include <algorithm>
#include <cstdint>

#include "cli/chat_screen.h"
#include "util/utf8.h"

namespace keel::cli {

namespace {

int parameter(std::string_view params, size_t index, int fallback) {
  size_t at = 0;
  for (size_t i = 0; i < index; ++i) {
    at = params.find(';', at);
    if (at == std::string_view::npos) return fallback;
    ++at;
  }
  int value = 0;
  bool any = false;
  for (; at < params.size() && params[at] >= '0' && params[at] <= '9'; ++at) {
    value = value * 10 + (params[at] - '0');
    any = true;
  }
  return any ? value : fallback;
}

}  // namespace

VirtualTerminal::VirtualTerminal(int columns, int rows)
    : columns_(columns),
      rows_(rows),
      screen_(static_cast<size_t>(rows), std::vector<std::string>(static_cast<size_t>(columns))) {}

void VirtualTerminal::feed(std::string_view bytes) {
  pending_.append(bytes);
  size_t at = 0;
  while (at < pending_.size()) {
    const auto c = static_cast<uint8_t>(pending_[at]);
    if (c == 0x1b) {
      if (at + 1 >= pending_.size()) break;
      if (pending_[at + 1] != '[') {
        at += 2;  // ESC 7, ESC 8 and the like: not used by keel chat
        continue;
      }
      size_t j = at + 2;
      while (j < pending_.size() && static_cast<uint8_t>(pending_[j]) >= 0x20 &&
             static_cast<uint8_t>(pending_[j]) <= 0x3F) {
        ++j;
      }
      if (j >= pending_.size()) break;
      csi(std::string_view(pending_).substr(at + 2, j - at - 2), pending_[j]);
      at = j + 1;
      continue;
    }
    if (c == '\r') {
      column_ = 0;
      wrap_pending_ = false;
      ++at;
      continue;
    }
    if (c == '\n') {
      line_feed();
      wrap_pending_ = false;
      ++at;
      continue;
    }
    if (c == '\b') {
      if (column_ > 0) --column_;
      wrap_pending_ = false;
      ++at;
      continue;
    }
    if (c < 0x20 || c == 0x7f) {
      ++at;
      continue;
    }
    // A byte that begins no character is drawn as one cell of U+FFFD, as a terminal would.
    const size_t length = std::max<size_t>(1, utf8_sequence_length(c));
    if (at + length > pending_.size()) break;
    const Utf8Char decoded = decode_utf8(std::string_view(pending_).substr(at, length));
    put(pending_.substr(at, decoded.length), codepoint_width(decoded.code_point));
    at += decoded.length;
  }
  pending_.erase(0, at);
}

void VirtualTerminal::put(const std::string& utf8, int cells) {
  if (cells == 0) return;
  if (wrap_pending_ || column_ + cells > columns_) {
    column_ = 0;
    line_feed();
    wrap_pending_ = false;
  }
  auto& line = screen_[static_cast<size_t>(row_)];
  line[static_cast<size_t>(column_)] = utf8;
  if (cells == 2) line[static_cast<size_t>(column_ + 1)] = "";
  column_ += cells;
  if (column_ >= columns_) {
    column_ = columns_ - 1;
    wrap_pending_ = true;
  }
}

void VirtualTerminal::line_feed() {
  if (row_ + 1 < rows_) {
    ++row_;
    return;
  }
  scrollback_.push_back(render_row(screen_.front()));
  screen_.erase(screen_.begin());
  screen_.emplace_back(static_cast<size_t>(columns_));
}

void VirtualTerminal::csi(std::string_view params, char final_byte) {
  wrap_pending_ = false;
  auto& line = screen_[static_cast<size_t>(row_)];
  switch (final_byte) {
    case 'A':
      row_ = std::max(0, row_ - std::max(1, parameter(params, 0, 1)));
      break;
    case 'B':
      row_ = std::min(rows_ - 1, row_ + std::max(1, parameter(params, 0, 1)));
      break;
    case 'C':
      column_ = std::min(columns_ - 1, column_ + std::max(1, parameter(params, 0, 1)));
      break;
    case 'D':
      column_ = std::max(0, column_ - std::max(1, parameter(params, 0, 1)));
      break;
    case 'G':
      column_ = std::clamp(parameter(params, 0, 1) - 1, 0, columns_ - 1);
      break;
    case 'H':
      row_ = std::clamp(parameter(params, 0, 1) - 1, 0, rows_ - 1);
      column_ = std::clamp(parameter(params, 1, 1) - 1, 0, columns_ - 1);
      break;
    case 'J': {
      const int mode = parameter(params, 0, 0);
      if (mode == 0) {
        std::fill(line.begin() + column_, line.end(), "");
        for (int r = row_ + 1; r < rows_; ++r)
          std::fill(screen_[static_cast<size_t>(r)].begin(), screen_[static_cast<size_t>(r)].end(), "");
      } else if (mode == 2) {
        for (auto& each : screen_) std::fill(each.begin(), each.end(), "");
      }
      break;
    }
    case 'K': {
      const int mode = parameter(params, 0, 0);
      if (mode == 0) std::fill(line.begin() + column_, line.end(), "");
      if (mode == 1) std::fill(line.begin(), line.begin() + column_ + 1, "");
      if (mode == 2) std::fill(line.begin(), line.end(), "");
      break;
    }
    default:
      break;
  }
}

std::string VirtualTerminal::render_row(const std::vector<std::string>& cells) const {
  std::string out;
  for (size_t i = 0; i < cells.size(); ++i) {
    if (!cells[i].empty()) {
      out += cells[i];
    } else if (i == 0 || cells[i - 1].empty() || codepoint_width(decode_utf8(cells[i - 1]).code_point) != 2) {
      out += ' ';  // a blank, not the right half of a wide character
    }
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

std::string VirtualTerminal::row(int index) const { return render_row(screen_[static_cast<size_t>(index)]); }

std::string VirtualTerminal::text() const {
  std::vector<std::string> lines = scrollback_;
  for (const auto& cells : screen_) lines.push_back(render_row(cells));
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  std::string out;
  for (const auto& line : lines) out += line + "\n";
  return out;
}

}  // namespace keel::cli
