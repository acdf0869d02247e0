// cli/chat_virtual_terminal.h — for tests of `keel chat`: a small terminal emulator that turns the bytes a
// program writes into what a person would see, so a test can check the screen rather than the byte stream.
//
// Emulates what keel chat's screen uses, as xterm does it: printable UTF-8 (wide characters take two
// cells), CR, LF (scrolling the top row into the scrollback at the bottom), BS, auto-wrap with xterm's
// pending-wrap state in the last column, and the CSI sequences CUU/CUD/CUF/CUB (A/B/C/D), CHA (G), CUP (H),
// ED (J) and EL (K). SGR (m) and every other sequence are read and ignored. Bytes may come in any pieces.
// Not thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace keel::cli {

class VirtualTerminal {
 public:
  VirtualTerminal(int columns, int rows);

  void feed(std::string_view bytes);

  // The scrollback and then the screen, one line per row, trailing blanks cut, trailing empty rows dropped.
  std::string text() const;
  // One row of the screen (0 = top), trailing blanks cut.
  std::string row(int index) const;
  int cursor_row() const { return row_; }
  int cursor_column() const { return column_; }
  int rows() const { return rows_; }

 private:
  void put(const std::string& utf8, int cells);
  void line_feed();
  void csi(std::string_view params, char final_byte);
  std::string render_row(const std::vector<std::string>& cells) const;

  int columns_;
  int rows_;
  std::vector<std::vector<std::string>>
      screen_;  // a cell: its UTF-8 text; "" = blank or a wide char's right half
  std::vector<std::string> scrollback_;
  int row_ = 0;
  int column_ = 0;
  bool wrap_pending_ = false;
  std::string pending_;  // an incomplete sequence or character from the last feed()
};

}  // namespace keel::cli
