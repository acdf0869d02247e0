// browser/cdp/json_repair.cc — see json_repair.h.
#include "browser/cdp/json_repair.h"

#include <optional>

namespace keel::browser {
namespace {

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The code unit of a `\uXXXX` escape starting at `at` (the backslash), if there is one.
std::optional<unsigned> unicode_escape_at(std::string_view text, size_t at) {
  if (at + 6 > text.size() || text[at] != '\\' || text[at + 1] != 'u') return std::nullopt;
  unsigned unit = 0;
  for (size_t i = at + 2; i < at + 6; ++i) {
    const int digit = hex_digit(text[i]);
    if (digit < 0) return std::nullopt;
    unit = unit * 16 + static_cast<unsigned>(digit);
  }
  return unit;
}

bool is_high(unsigned unit) { return unit >= 0xD800 && unit <= 0xDBFF; }
bool is_low(unsigned unit) { return unit >= 0xDC00 && unit <= 0xDFFF; }

}  // namespace

SurrogateRepair repair_lone_surrogates(std::string_view json_text) {
  SurrogateRepair out;
  out.text.reserve(json_text.size());
  size_t copied = 0;  // json_text[copied, at) is still to be copied
  size_t at = 0;
  // Backslashes occur only inside strings in JSON, so stepping from escape to escape never misreads `\\u`.
  while ((at = json_text.find('\\', at)) != std::string_view::npos) {
    const std::optional<unsigned> unit = unicode_escape_at(json_text, at);
    if (!unit) {
      at += 2;  // a two-character escape (`\\`, `\"`, `\n`, ...)
      continue;
    }
    if (is_high(*unit)) {
      const std::optional<unsigned> next = unicode_escape_at(json_text, at + 6);
      if (next && is_low(*next)) {
        at += 12;  // a proper pair
        continue;
      }
    }
    if (is_high(*unit) || is_low(*unit)) {
      out.text.append(json_text.substr(copied, at - copied));
      out.text.append("\\uFFFD");
      ++out.replaced;
      copied = at + 6;
    }
    at += 6;
  }
  out.text.append(json_text.substr(copied));
  return out;
}

}  // namespace keel::browser
