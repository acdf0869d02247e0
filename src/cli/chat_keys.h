// cli/chat_keys.h — the bytes a terminal in raw mode sends, decoded into the keys `keel chat` acts on.
//
// Decodes UTF-8 text, Enter (CR or LF), Tab, Backspace (DEL or BS), Ctrl-letters, and the CSI / SS3 escape
// sequences of the arrow, Home, End and Delete keys. A lone ESC byte is ambiguous — it may be the Esc key or
// the start of a sequence whose next bytes have not arrived yet — so the decoder keeps it pending; the caller
// waits a moment for more bytes (kEscapeWait) and calls flush(), which turns a still-lone ESC into kEscape.
// Bytes that form no key (an unknown sequence, invalid UTF-8) are dropped, never passed on as text.
// Not thread-safe: one decoder per input stream.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace keel::cli {

// How long to wait after an ESC byte for the rest of an escape sequence (terminals send one in one write).
inline constexpr std::chrono::milliseconds kEscapeWait{50};

struct Key {
  enum class Kind {
    kText,  // `text`: one UTF-8 character
    kEnter,
    kTab,
    kBackspace,
    kDelete,
    kLeft,
    kRight,
    kUp,
    kDown,
    kHome,
    kEnd,
    kEscape,
    kCtrl,  // `ctrl`: the letter, lower case ('c' for Ctrl-C)
  };
  Kind kind = Kind::kText;
  std::string text;
  char ctrl = 0;

  static Key of(Kind kind) { return Key{kind, {}, 0}; }
  static Key character(std::string utf8) { return Key{Kind::kText, std::move(utf8), 0}; }
  static Key control(char letter) { return Key{Kind::kCtrl, {}, letter}; }

  bool operator==(const Key&) const = default;
};

class KeyDecoder {
 public:
  // Decodes `bytes` after whatever was left pending; an incomplete sequence or character at the end stays
  // pending for the next call.
  std::vector<Key> feed(std::string_view bytes);
  // True while the pending bytes start with ESC (the caller should flush() after kEscapeWait of silence).
  bool escape_pending() const;
  // Ends a pending escape: a lone ESC becomes kEscape; a partial sequence is dropped.
  std::vector<Key> flush();

 private:
  std::string pending_;
};

}  // namespace keel::cli
