// providers/wire/utf8_validate.h — how long the well-formed UTF-8 sequence at a position is.
//
// keel stores what providers send as JSON, and nlohmann::json refuses to write invalid UTF-8, so every
// string that leaves the wire codecs (event text, error messages) is checked with this.
#pragma once

#include <cstddef>

namespace keel::providers {

// The length (1-4) of the well-formed UTF-8 sequence starting at p (Unicode table 3-7: no overlong forms,
// no surrogates, nothing above U+10FFFF), or 0 when there is none. Requires p < end.
inline size_t utf8_sequence_length(const unsigned char* p, const unsigned char* end) {
  const unsigned char c = p[0];
  if (c < 0x80) return 1;
  const size_t available = static_cast<size_t>(end - p);
  auto cont = [](unsigned char b) { return (b & 0xC0) == 0x80; };
  auto in = [](unsigned char b, unsigned char lo, unsigned char hi) { return b >= lo && b <= hi; };
  if (c >= 0xC2 && c <= 0xDF) return available >= 2 && cont(p[1]) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (available < 3 || !cont(p[2])) return 0;
    const bool second = c == 0xE0 ? in(p[1], 0xA0, 0xBF) : c == 0xED ? in(p[1], 0x80, 0x9F) : cont(p[1]);
    return second ? 3 : 0;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (available < 4 || !cont(p[2]) || !cont(p[3])) return 0;
    const bool second = c == 0xF0 ? in(p[1], 0x90, 0xBF) : c == 0xF4 ? in(p[1], 0x80, 0x8F) : cont(p[1]);
    return second ? 4 : 0;
  }
  return 0;
}

}  // namespace keel::providers
