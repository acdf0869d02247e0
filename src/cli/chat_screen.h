// cli/chat_screen.h — the layout of `keel chat` on a terminal: the conversation scrolls above, and a small
// bottom area — the line of output still being streamed, a status line and the input line — is redrawn
// below it whenever either changes, so a person can type while the reply streams.
//
// The screen produces bytes; it never writes. Each frame() erases the bottom area it drew last (cursor up
// to its first row, erase to the end of the screen), writes the output completed since, and draws the
// bottom area again with the cursor on the input line. That works without knowing where on the screen the
// area is, provided the screen knows how many rows it drew: every row it draws is kept shorter than the
// terminal's width (the streamed line is broken before the last column; the input line scrolls sideways
// to keep the cursor visible), so no row ever wraps. Widths are counted in terminal cells (East Asian wide
// characters and most emoji take two, combining marks none); SGR colour sequences in the output pass
// through and count nothing, other control sequences are dropped.
//
// Not thread-safe: one screen per terminal, used from one thread.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace keel::cli {

// Cells a code point takes on a terminal (0, 1 or 2).
int codepoint_width(char32_t code_point);
// Cells `text` takes, skipping escape sequences; invalid UTF-8 bytes count one each.
size_t display_width(std::string_view text);

class ChatScreen {
 public:
  // `color`: the output may carry SGR sequences, and the status line is dimmed.
  explicit ChatScreen(bool color, int columns = 80);

  // The terminal's width; values below 20 are taken as 20.
  void set_width(int columns);
  // Conversation output: text in any pieces (a line may come in several), with SGR sequences.
  void print(std::string_view text);
  // The line above the input line ("" = none).
  void set_status(std::string status);
  // The input line: `prompt` then `text` with the cursor at byte `cursor` of `text`.
  void set_input(std::string prompt, std::string text, size_t cursor);

  // The bytes that bring the terminal up to date; "" when nothing changed since the last frame.
  std::string frame();
  // The bytes that erase the bottom area and end the streamed line, leaving the cursor at the start of an
  // empty line below the conversation (before the program leaves the terminal to the shell).
  std::string close();

 private:
  void add_text(std::string_view text);
  void add_char(std::string_view utf8, int cells);
  void end_line();
  std::string erase_bottom() const;
  std::string input_row(size_t& cursor_column) const;

  bool color_;
  int columns_;
  std::string finished_;  // output lines completed since the last frame, ready to write
  std::string tail_;      // the line being streamed (fewer than columns_ cells)
  size_t tail_cells_ = 0;
  std::string tail_prefix_;  // SGR in force where the tail starts (the bottom area resets it)
  std::string active_sgr_;   // SGR in force at the end of the tail
  std::string status_;
  std::string prompt_;
  std::string input_;
  size_t input_cursor_ = 0;
  int drawn_rows_ = 0;  // rows of the bottom area on the terminal now; the cursor is on the last
  bool dirty_ = true;
};

}  // namespace keel::cli
