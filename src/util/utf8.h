// util/utf8.h — cutting UTF-8 text without splitting a character.
#pragma once

#include <cstddef>
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

}  // namespace keel
