#include "util/terminal_text.h"

#include <array>
#include <cstdio>

#include "util/utf8.h"

namespace keel {

namespace {

bool shown_as_code_point(char32_t cp) {
  return (cp >= 0x80 && cp <= 0x9F) || (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

void append_code_point_name(std::string& out, char32_t cp) {
  std::array<char, 16> name{};
  std::snprintf(name.data(), name.size(), "<U+%04X>", static_cast<unsigned>(cp));
  out += name.data();
}

}  // namespace

std::string terminal_safe(std::string_view text, LineBreaks breaks) {
  std::string out;
  out.reserve(text.size());
  size_t at = 0;
  while (at < text.size()) {
    const auto byte = static_cast<unsigned char>(text[at]);
    if (byte < 0x80) {
      if (byte == '\t' || (byte == '\n' && breaks == LineBreaks::kKeep)) {
        out += static_cast<char>(byte);
      } else if (byte == '\r' && breaks == LineBreaks::kKeep && at + 1 < text.size() &&
                 text[at + 1] == '\n') {
        // The CR of a CRLF moves the cursor where the LF's line starts anyway: nothing is hidden by it.
      } else if (byte < 0x20) {
        out += '^';
        out += static_cast<char>(byte + 0x40);
      } else if (byte == 0x7F) {
        out += "^?";
      } else {
        out += static_cast<char>(byte);
      }
      ++at;
      continue;
    }
    const Utf8Char c = decode_utf8(text.substr(at));
    if (c.length == 1 || !utf8_valid(text.substr(at, c.length))) {
      out += "\xEF\xBF\xBD";  // U+FFFD: not a character, and to some terminals an 8-bit control
      ++at;
      continue;
    }
    if (shown_as_code_point(c.code_point)) {
      append_code_point_name(out, c.code_point);
    } else {
      out += text.substr(at, c.length);
    }
    at += c.length;
  }
  return out;
}

nlohmann::json terminal_safe_json(const nlohmann::json& value) {
  if (value.is_string()) return terminal_safe(value.get_ref<const std::string&>());
  if (value.is_array()) {
    nlohmann::json out = nlohmann::json::array();
    for (const nlohmann::json& item : value) out.push_back(terminal_safe_json(item));
    return out;
  }
  if (value.is_object()) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [key, item] : value.items()) out[terminal_safe(key)] = terminal_safe_json(item);
    return out;
  }
  return value;
}

TerminalSafeStreambuf::~TerminalSafeStreambuf() {
  MutexLock lock(mu_);
  emit(/*all=*/true);
  target_->pubsync();
}

TerminalSafeStreambuf::int_type TerminalSafeStreambuf::overflow(int_type ch) {
  if (traits_type::eq_int_type(ch, traits_type::eof())) return traits_type::not_eof(ch);
  MutexLock lock(mu_);
  pending_ += traits_type::to_char_type(ch);
  if (pending_.back() == '\n' || pending_.size() >= 4096) emit(/*all=*/false);
  return ch;
}

std::streamsize TerminalSafeStreambuf::xsputn(const char* text, std::streamsize count) {
  MutexLock lock(mu_);
  pending_.append(text, static_cast<size_t>(count));
  if (pending_.find('\n') != std::string::npos || pending_.size() >= 4096) emit(/*all=*/false);
  return count;
}

int TerminalSafeStreambuf::sync() {
  MutexLock lock(mu_);
  emit(/*all=*/false);
  return target_->pubsync();
}

void TerminalSafeStreambuf::emit(bool all) {
  size_t cut = pending_.size();
  if (!all) {
    // Hold back a last character whose lead byte is here but not all of its continuation bytes (at most 3
    // bytes are held; anything else is written, bad bytes included).
    for (size_t back = 1; back <= 3 && back <= pending_.size(); ++back) {
      const auto byte = static_cast<unsigned char>(pending_[pending_.size() - back]);
      if ((byte & 0xC0) == 0x80) continue;
      if (utf8_sequence_length(byte) > back) cut = pending_.size() - back;
      break;
    }
  }
  if (cut == 0) return;
  const std::string safe = terminal_safe(std::string_view(pending_).substr(0, cut));
  target_->sputn(safe.data(), static_cast<std::streamsize>(safe.size()));
  pending_.erase(0, cut);
}

}  // namespace keel
