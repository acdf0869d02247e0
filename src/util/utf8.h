// util/utf8.h — reading and cutting UTF-8 text one character at a time, without splitting a character.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace keel {

// The length of the longest prefix of `text` that is at most `max_bytes` long and does not end inside a
// multi-byte UTF-8 sequence (it backs up over continuation bytes).
inline size_t utf8_prefix_length(std::string_view text, size_t max_bytes) {
  if (max_bytes >= text.size()) return text.size();
  size_t cut = max_bytes;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return cut;
}

// The length of the UTF-8 sequence that `lead` begins: 1 for ASCII, 2 to 4 for a lead byte, 0 for a byte that
// begins none (a continuation byte, 0xC0, 0xC1, 0xF5 and above).
inline size_t utf8_sequence_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  if (lead >= 0xE0 && lead <= 0xEF) return 3;
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  return 0;
}

struct Utf8Char {
  char32_t code_point;
  size_t length;  // bytes
};

// The character at the start of `text` (not empty). A byte that begins no sequence, a sequence cut short and
// a sequence with a bad continuation byte each decode as U+FFFD of length 1, so a caller always advances.
inline Utf8Char decode_utf8(std::string_view text) {
  const auto lead = static_cast<uint8_t>(text[0]);
  const size_t length = utf8_sequence_length(lead);
  if (length == 1) return {lead, 1};
  if (length == 0 || text.size() < length) return {0xFFFD, 1};
  char32_t cp = lead & (length == 2 ? 0x1F : length == 3 ? 0x0F : 0x07);
  for (size_t i = 1; i < length; ++i) {
    const auto byte = static_cast<uint8_t>(text[i]);
    if ((byte & 0xC0) != 0x80) return {0xFFFD, 1};
    cp = (cp << 6) | (byte & 0x3F);
  }
  return {cp, length};
}

// Whether `text` is valid UTF-8 throughout (what the store and canonical JSON accept).
inline bool utf8_valid(std::string_view text) {
  size_t at = 0;
  while (at < text.size()) {
    const auto lead = static_cast<unsigned char>(text[at]);
    if (lead < 0x80) {
      ++at;
      continue;
    }
    const Utf8Char c = decode_utf8(text.substr(at));
    // decode_utf8 reads a bad byte as U+FFFD of length 1; a real U+FFFD is three bytes long. Overlong forms,
    // surrogates and values past U+10FFFF are invalid too.
    if (c.length == 1) return false;
    if ((c.length == 3 && c.code_point < 0x800) || (c.length == 4 && c.code_point < 0x10000) ||
        (c.code_point >= 0xD800 && c.code_point <= 0xDFFF) || c.code_point > 0x10FFFF) {
      return false;
    }
    at += c.length;
  }
  return true;
}

// `text` with every byte that does not belong to a valid UTF-8 character replaced by U+FFFD, so text from
// outside (a tool's output, a file name, a model's reply) can always be stored and encoded. Valid text is
// returned unchanged.
inline std::string utf8_sanitized(std::string text) {
  if (utf8_valid(text)) return text;
  std::string out;
  out.reserve(text.size() + 16);
  size_t at = 0;
  while (at < text.size()) {
    const Utf8Char c = decode_utf8(std::string_view(text).substr(at));
    const std::string_view piece = std::string_view(text).substr(at, c.length);
    if (c.length > 1 && utf8_valid(piece)) {
      out += piece;
    } else if (c.length == 1 && static_cast<unsigned char>(text[at]) < 0x80) {
      out += text[at];
    } else {
      out += "\xEF\xBF\xBD";  // U+FFFD
    }
    at += c.length;
  }
  return out;
}

}  // namespace keel
