// cli/chat_line_editor.h — the text of `keel chat`'s input line and the edits a person makes to it.
//
// Holds UTF-8 text and a cursor that always sits on a character boundary: moves and deletions step over
// whole characters, never splitting one. The editing keys follow readline: Ctrl-A / Ctrl-E (start / end),
// Ctrl-U (delete to the start), Ctrl-K (delete to the end), Ctrl-W (delete the word before the cursor).
// A value type; not thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "cli/chat_keys.h"

namespace keel::cli {

class LineEditor {
 public:
  // Applies an editing key; false for a key that does not edit (Enter, Tab, Esc, Ctrl-C, ...), which the
  // caller handles. Text keys insert at the cursor.
  bool apply(const Key& key);

  void insert(std::string_view text);
  void backspace();
  void erase_forward();
  void move_left();
  void move_right();
  void home() { cursor_ = 0; }
  void end() { cursor_ = text_.size(); }
  void kill_to_start();
  void kill_to_end();
  void kill_word_back();

  // The whole text, cleared, with the cursor at 0.
  std::string take();
  void clear() { take(); }

  const std::string& text() const { return text_; }
  size_t cursor() const { return cursor_; }  // a byte offset into text(), on a character boundary
  bool empty() const { return text_.empty(); }

 private:
  std::string text_;
  size_t cursor_ = 0;
};

}  // namespace keel::cli
