#include "cli/chat_keys.h"

#include <cstdint>

#include "util/utf8.h"

namespace keel::cli {

namespace {

constexpr char kEsc = 0x1b;

Key key(Key::Kind kind) { return Key::of(kind); }

// The key of a CSI sequence "ESC [ params final" (or SS3 "ESC O final"); false for keys chat has no use for.
bool csi_key(std::string_view params, char final_byte, Key& out) {
  switch (final_byte) {
    case 'A':
      out = key(Key::Kind::kUp);
      return true;
    case 'B':
      out = key(Key::Kind::kDown);
      return true;
    case 'C':
      out = key(Key::Kind::kRight);
      return true;
    case 'D':
      out = key(Key::Kind::kLeft);
      return true;
    case 'H':
      out = key(Key::Kind::kHome);
      return true;
    case 'F':
      out = key(Key::Kind::kEnd);
      return true;
    case '~': {
      // "1;5~" and the like: the key is the first number, the rest are modifiers.
      const std::string_view number = params.substr(0, params.find(';'));
      if (number == "1" || number == "7")
        out = key(Key::Kind::kHome);
      else if (number == "4" || number == "8")
        out = key(Key::Kind::kEnd);
      else if (number == "3")
        out = key(Key::Kind::kDelete);
      else
        return false;
      return true;
    }
    default:
      return false;
  }
}

// Decodes one key (or one dropped unit) at the start of `s` into `keys`; returns the bytes it used, 0 when
// `s` holds only the beginning of something.
size_t decode_one(std::string_view s, std::vector<Key>& keys) {
  const auto c = static_cast<uint8_t>(s[0]);
  if (c == kEsc) {
    if (s.size() == 1) return 0;
    if (s[1] == '[') {
      size_t j = 2;
      while (j < s.size() && static_cast<uint8_t>(s[j]) >= 0x20 && static_cast<uint8_t>(s[j]) <= 0x3F) ++j;
      if (j == s.size()) return 0;
      const auto final_byte = static_cast<uint8_t>(s[j]);
      if (final_byte < 0x40 || final_byte > 0x7E) return j;  // malformed: drop up to the odd byte
      if (Key k; csi_key(s.substr(2, j - 2), static_cast<char>(final_byte), k)) keys.push_back(std::move(k));
      return j + 1;
    }
    if (s[1] == 'O') {
      if (s.size() < 3) return 0;
      if (Key k; csi_key("", s[2], k)) keys.push_back(std::move(k));
      return 3;
    }
    // ESC followed by anything that starts no sequence: the Esc key, then that byte on its own.
    keys.push_back(key(Key::Kind::kEscape));
    return 1;
  }
  if (c == '\r' || c == '\n') {
    keys.push_back(key(Key::Kind::kEnter));
    return 1;
  }
  if (c == '\t') {
    keys.push_back(key(Key::Kind::kTab));
    return 1;
  }
  if (c == 0x7f || c == 0x08) {
    keys.push_back(key(Key::Kind::kBackspace));
    return 1;
  }
  if (c >= 0x01 && c <= 0x1a) {
    keys.push_back(Key::control(static_cast<char>('a' + c - 1)));
    return 1;
  }
  if (c < 0x20) return 1;
  if (c < 0x80) {
    keys.push_back(Key::character(std::string(1, static_cast<char>(c))));
    return 1;
  }
  const size_t length = utf8_sequence_length(c);
  if (length == 0) return 1;
  for (size_t k = 1; k < length && k < s.size(); ++k) {
    if ((static_cast<uint8_t>(s[k]) & 0xC0) != 0x80) return 1;  // a broken character: drop its lead byte
  }
  if (s.size() < length) return 0;
  keys.push_back(Key::character(std::string(s.substr(0, length))));
  return length;
}

}  // namespace

std::vector<Key> KeyDecoder::feed(std::string_view bytes) {
  pending_.append(bytes);
  std::vector<Key> keys;
  size_t at = 0;
  while (at < pending_.size()) {
    const size_t used = decode_one(std::string_view(pending_).substr(at), keys);
    if (used == 0) break;
    at += used;
  }
  pending_.erase(0, at);
  return keys;
}

bool KeyDecoder::escape_pending() const { return !pending_.empty() && pending_[0] == kEsc; }

std::vector<Key> KeyDecoder::flush() {
  std::vector<Key> keys;
  if (!escape_pending()) return keys;
  if (pending_.size() == 1) keys.push_back(key(Key::Kind::kEscape));
  pending_.clear();
  return keys;
}

}  // namespace keel::cli
