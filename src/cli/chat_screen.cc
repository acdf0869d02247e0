#include "cli/chat_screen.h"

#include <algorithm>
#include <cstdint>

#include "util/utf8.h"

namespace keel::cli {

namespace {

constexpr char kEsc = 0x1b;
constexpr std::string_view kReset = "\x1b[0m";

// Length of the escape sequence at the start of `s` (which starts with ESC): CSI up to its final byte,
// otherwise ESC and one byte. `final_byte` gets the CSI's final byte, or 0.
size_t escape_length(std::string_view s, char& final_byte) {
  final_byte = 0;
  if (s.size() < 2) return s.size();
  if (s[1] != '[') return 2;
  size_t j = 2;
  while (j < s.size() && static_cast<uint8_t>(s[j]) >= 0x20 && static_cast<uint8_t>(s[j]) <= 0x3F) ++j;
  if (j == s.size()) return j;
  final_byte = s[j];
  return j + 1;
}

std::string cursor_up(int rows) { return rows > 0 ? "\x1b[" + std::to_string(rows) + "A" : ""; }

// Calls `visit(utf8, width)` for each character of `text` that takes room on screen, skipping escape
// sequences; stops early when `visit` returns false.
template <typename Visit>
void for_each_visible(std::string_view text, Visit visit) {
  for (size_t at = 0; at < text.size();) {
    if (text[at] == kEsc) {
      char final_byte = 0;
      at += escape_length(text.substr(at), final_byte);
      continue;
    }
    const Utf8Char c = decode_utf8(text.substr(at));
    if (!visit(text.substr(at, c.length), static_cast<size_t>(codepoint_width(c.code_point)))) return;
    at += c.length;
  }
}

// `text` cut to at most `cells` cells, with "…" in the last cell when cut.
std::string fit(std::string_view text, size_t cells) {
  if (display_width(text) <= cells) return std::string(text);
  std::string out;
  size_t used = 0;
  for_each_visible(text, [&](std::string_view utf8, size_t width) {
    if (used + width + 1 > cells) return false;
    out.append(utf8);
    used += width;
    return true;
  });
  return out + "…";
}

}  // namespace

int codepoint_width(char32_t cp) {
  if (cp == 0) return 0;
  if (cp < 0x20 || (cp >= 0x7F && cp < 0xA0)) return 0;
  // Combining marks, zero-width spaces and joiners, variation selectors.
  if ((cp >= 0x0300 && cp <= 0x036F) || (cp >= 0x1AB0 && cp <= 0x1AFF) || (cp >= 0x1DC0 && cp <= 0x1DFF) ||
      (cp >= 0x200B && cp <= 0x200F) || (cp >= 0x20D0 && cp <= 0x20FF) || (cp >= 0xFE00 && cp <= 0xFE0F) ||
      (cp >= 0xFE20 && cp <= 0xFE2F) || (cp >= 0xE0100 && cp <= 0xE01EF)) {
    return 0;
  }
  // East Asian wide and full-width ranges, and the emoji blocks terminals draw two cells wide.
  if ((cp >= 0x1100 && cp <= 0x115F) || (cp >= 0x2E80 && cp <= 0x303E) || (cp >= 0x3041 && cp <= 0x33FF) ||
      (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0xA000 && cp <= 0xA4CF) ||
      (cp >= 0xAC00 && cp <= 0xD7A3) || (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0xFE30 && cp <= 0xFE4F) ||
      (cp >= 0xFF00 && cp <= 0xFF60) || (cp >= 0xFFE0 && cp <= 0xFFE6) || (cp >= 0x1F300 && cp <= 0x1F64F) ||
      (cp >= 0x1F900 && cp <= 0x1F9FF) || (cp >= 0x20000 && cp <= 0x3FFFD)) {
    return 2;
  }
  return 1;
}

size_t display_width(std::string_view text) {
  size_t cells = 0;
  for_each_visible(text, [&](std::string_view, size_t width) {
    cells += width;
    return true;
  });
  return cells;
}

ChatScreen::ChatScreen(bool color, int columns) : color_(color), columns_(std::max(columns, 20)) {}

void ChatScreen::set_width(int columns) {
  columns = std::max(columns, 20);
  if (columns == columns_) return;
  columns_ = columns;
  // A streamed line that no longer fits is finished as it is; the terminal wraps it like any output.
  if (tail_cells_ + 1 > static_cast<size_t>(columns_)) end_line();
  dirty_ = true;
}

void ChatScreen::print(std::string_view text) {
  if (text.empty()) return;
  add_text(text);
  dirty_ = true;
}

void ChatScreen::set_status(std::string status) {
  if (status == status_) return;
  status_ = std::move(status);
  dirty_ = true;
}

void ChatScreen::set_input(std::string prompt, std::string text, size_t cursor) {
  if (prompt == prompt_ && text == input_ && cursor == input_cursor_) return;
  prompt_ = std::move(prompt);
  input_ = std::move(text);
  input_cursor_ = std::min(cursor, input_.size());
  dirty_ = true;
}

void ChatScreen::add_text(std::string_view text) {
  for (size_t at = 0; at < text.size();) {
    const char c = text[at];
    if (c == kEsc) {
      char final_byte = 0;
      const size_t length = escape_length(text.substr(at), final_byte);
      if (final_byte == 'm') {
        const std::string_view sequence = text.substr(at, length);
        tail_ += sequence;
        if (sequence == "\x1b[m" || sequence == kReset) {
          active_sgr_.clear();
        } else {
          active_sgr_ += sequence;
        }
      }
      at += length;
      continue;
    }
    if (c == '\n') {
      end_line();
      ++at;
      continue;
    }
    if (c == '\t') {
      do add_char(" ", 1);
      while (tail_cells_ % 8 != 0);
      ++at;
      continue;
    }
    if (static_cast<uint8_t>(c) < 0x20) {
      ++at;
      continue;
    }
    const Utf8Char d = decode_utf8(text.substr(at));
    const std::string_view utf8 = d.code_point == 0xFFFD && d.length == 1 && static_cast<uint8_t>(c) >= 0x80
                                      ? std::string_view("\xEF\xBF\xBD")
                                      : text.substr(at, d.length);
    add_char(utf8, codepoint_width(d.code_point));
    at += d.length;
  }
}

void ChatScreen::add_char(std::string_view utf8, int cells) {
  // The last column stays free: a row that filled it would leave the cursor in the terminal's
  // pending-wrap state, and the row count of the bottom area would no longer be certain.
  if (tail_cells_ + static_cast<size_t>(cells) + 1 > static_cast<size_t>(columns_)) end_line();
  tail_ += utf8;
  tail_cells_ += static_cast<size_t>(cells);
}

void ChatScreen::end_line() {
  finished_ += tail_prefix_;
  finished_ += tail_;
  if (color_) finished_ += kReset;
  finished_ += "\r\n";
  tail_.clear();
  tail_cells_ = 0;
  tail_prefix_ = active_sgr_;
  dirty_ = true;
}

std::string ChatScreen::erase_bottom() const {
  if (drawn_rows_ == 0) return "";
  return "\r" + cursor_up(drawn_rows_ - 1) + "\x1b[J";
}

std::string ChatScreen::input_row(size_t& cursor_column) const {
  const size_t usable = static_cast<size_t>(columns_) - 1;
  const std::string prompt = fit(prompt_, usable > 12 ? usable - 10 : usable / 2);
  const size_t prompt_cells = display_width(prompt);
  const size_t room = usable - prompt_cells;
  const size_t cursor_cells = display_width(std::string_view(input_).substr(0, input_cursor_));
  // Scroll sideways so that the cursor stays on the row, one cell from its right end.
  const size_t skip = cursor_cells + 1 > room ? cursor_cells + 1 - room : 0;
  std::string shown;
  size_t skipped = 0;
  size_t used = 0;
  for (size_t at = 0; at < input_.size();) {
    const Utf8Char d = decode_utf8(std::string_view(input_).substr(at));
    const auto w = static_cast<size_t>(codepoint_width(d.code_point));
    if (skipped < skip) {
      skipped += w;
    } else {
      if (used + w > room) break;
      shown.append(input_, at, d.length);
      used += w;
    }
    at += d.length;
  }
  cursor_column = prompt_cells + cursor_cells - std::min(skipped, cursor_cells);
  return prompt + shown;
}

std::string ChatScreen::frame() {
  if (!dirty_) return "";
  dirty_ = false;
  std::string out = erase_bottom();
  out += finished_;
  finished_.clear();
  int rows = 0;
  if (!tail_.empty()) {
    out += tail_prefix_ + tail_;
    if (color_) out += kReset;
    out += "\r\n";
    ++rows;
  }
  if (!status_.empty()) {
    const std::string status = fit(status_, static_cast<size_t>(columns_) - 1);
    out += color_ ? "\x1b[2m" + status + std::string(kReset) : status;
    out += "\r\n";
    ++rows;
  }
  size_t cursor_column = 0;
  out += input_row(cursor_column);
  out += "\r";
  if (cursor_column > 0) out += "\x1b[" + std::to_string(cursor_column) + "C";
  drawn_rows_ = rows + 1;
  return out;
}

std::string ChatScreen::close() {
  std::string out = erase_bottom();
  drawn_rows_ = 0;
  if (!tail_.empty()) end_line();
  out += finished_;
  finished_.clear();
  dirty_ = true;
  return out;
}

}  // namespace keel::cli
