#include "cli/chat_line_editor.h"

namespace keel::cli {

namespace {

bool continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

size_t previous_boundary(const std::string& text, size_t at) {
  if (at == 0) return 0;
  --at;
  while (at > 0 && continuation(text[at])) --at;
  return at;
}

size_t next_boundary(const std::string& text, size_t at) {
  if (at >= text.size()) return text.size();
  ++at;
  while (at < text.size() && continuation(text[at])) ++at;
  return at;
}

bool is_space(char c) { return c == ' ' || c == '\t'; }

}  // namespace

bool LineEditor::apply(const Key& key) {
  switch (key.kind) {
    case Key::Kind::kText:
      insert(key.text);
      return true;
    case Key::Kind::kBackspace:
      backspace();
      return true;
    case Key::Kind::kDelete:
      erase_forward();
      return true;
    case Key::Kind::kLeft:
      move_left();
      return true;
    case Key::Kind::kRight:
      move_right();
      return true;
    case Key::Kind::kHome:
      home();
      return true;
    case Key::Kind::kEnd:
      end();
      return true;
    case Key::Kind::kCtrl:
      switch (key.ctrl) {
        case 'a':
          home();
          return true;
        case 'e':
          end();
          return true;
        case 'b':
          move_left();
          return true;
        case 'f':
          move_right();
          return true;
        case 'h':
          backspace();
          return true;
        case 'u':
          kill_to_start();
          return true;
        case 'k':
          kill_to_end();
          return true;
        case 'w':
          kill_word_back();
          return true;
        default:
          return false;
      }
    default:
      return false;
  }
}

void LineEditor::insert(std::string_view text) {
  text_.insert(cursor_, text);
  cursor_ += text.size();
}

void LineEditor::backspace() {
  const size_t from = previous_boundary(text_, cursor_);
  text_.erase(from, cursor_ - from);
  cursor_ = from;
}

void LineEditor::erase_forward() {
  const size_t to = next_boundary(text_, cursor_);
  text_.erase(cursor_, to - cursor_);
}

void LineEditor::move_left() { cursor_ = previous_boundary(text_, cursor_); }

void LineEditor::move_right() { cursor_ = next_boundary(text_, cursor_); }

void LineEditor::kill_to_start() {
  text_.erase(0, cursor_);
  cursor_ = 0;
}

void LineEditor::kill_to_end() { text_.erase(cursor_); }

void LineEditor::kill_word_back() {
  size_t from = cursor_;
  while (from > 0 && is_space(text_[from - 1])) --from;
  while (from > 0 && !is_space(text_[from - 1])) --from;
  text_.erase(from, cursor_ - from);
  cursor_ = from;
}

std::string LineEditor::take() {
  std::string text = std::move(text_);
  text_.clear();
  cursor_ = 0;
  return text;
}

}  // namespace keel::cli
