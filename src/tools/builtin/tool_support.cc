// tools/builtin/tool_support.cc — helpers shared by the builtin tools.
#include "tools/builtin/tool_support.h"

#include "keel/error_codes.h"
#include "util/utf8.h"

namespace keel::builtin {

Error cancelled_error(const CancellationToken& cancel) {
  const std::string reason = cancel.reason();
  return Error(codes::kCancelled,
               reason.empty() || reason == "cancelled" ? "cancelled" : "cancelled: " + reason);
}

namespace {

// Length of the valid UTF-8 sequence starting at text[i], or 0 when it is invalid (RFC 3629: no overlong
// forms, no surrogates, nothing above U+10FFFF).
size_t utf8_sequence_length(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  if (lead < 0x80) return 1;
  size_t length = 0;
  unsigned char min_second = 0x80;
  unsigned char max_second = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) min_second = 0xA0;
    if (lead == 0xED) max_second = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) min_second = 0x90;
    if (lead == 0xF4) max_second = 0x8F;
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  if (byte(i + 1) < min_second || byte(i + 1) > max_second) return 0;
  for (size_t k = 2; k < length; ++k) {
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  }
  return length;
}

}  // namespace

std::string valid_utf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  size_t i = 0;
  while (i < bytes.size()) {
    const size_t length = utf8_sequence_length(bytes, i);
    if (length == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD REPLACEMENT CHARACTER
      ++i;
    } else {
      out.append(bytes.substr(i, length));
      i += length;
    }
  }
  return out;
}

std::string truncate_utf8(std::string_view text, size_t max_bytes, std::string_view marker) {
  if (text.size() <= max_bytes) return std::string(text);
  std::string out(text.substr(0, utf8_prefix_length(text, max_bytes)));
  out += marker;
  return out;
}

}  // namespace keel::builtin
