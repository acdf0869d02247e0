#include "tools/call_preview.h"

#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>

#include "keel/tool.h"

namespace keel {
namespace {

// Longest prefix of `text` of at most `max` bytes that ends on a UTF-8 boundary.
std::string_view utf8_prefix(std::string_view text, size_t max) {
  if (text.size() <= max) return text;
  size_t end = max;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return text.substr(0, end);
}

// Longest suffix of `text` of at most `max` bytes that starts on a UTF-8 boundary.
std::string_view utf8_suffix(std::string_view text, size_t max) {
  if (text.size() <= max) return text;
  size_t start = text.size() - max;
  while (start < text.size() && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) ++start;
  return text.substr(start);
}

// `bytes` with every sequence that is not UTF-8 replaced by U+FFFD.
std::string valid_utf8_text(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  size_t i = 0;
  while (i < bytes.size()) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    size_t length = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    bool ok = length > 0 && i + length <= bytes.size();
    for (size_t k = 1; ok && k < length; ++k) ok = (static_cast<unsigned char>(bytes[i + k]) & 0xC0) == 0x80;
    if (ok && length == 2) ok = c >= 0xC2;
    if (ok) {
      out.append(bytes.substr(i, length));
      i += length;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  return out;
}

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

// Built by appending: inserting into the digits trips g++ 12's -Wrestrict false positive.
std::string with_commas(size_t n) {
  const std::string digits = std::to_string(n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

}  // namespace

std::string byte_count(size_t bytes) {
  std::string text = with_commas(bytes);
  text.append(bytes == 1 ? " byte" : " bytes");
  return text;
}

std::string excerpt_lines(std::string_view text, std::string_view prefix, ExcerptLimits limits) {
  const std::vector<std::string_view> lines = split_lines(text);
  const size_t max_lines = std::max<size_t>(limits.max_lines, 2);
  const size_t half_bytes = std::max<size_t>(limits.max_bytes / 2, 16);
  std::string out;
  const auto emit = [&](std::string_view line) {
    out += prefix;
    out += valid_utf8_text(line);
    out += '\n';
  };
  if (lines.size() <= max_lines && text.size() <= limits.max_bytes) {
    for (std::string_view line : lines) emit(line);
    return out;
  }
  // The start: whole lines while they fit in half the lines and half the bytes; the end likewise.
  size_t head = 0, head_bytes = 0;
  while (head < lines.size() && head < max_lines / 2 && head_bytes + lines[head].size() + 1 <= half_bytes) {
    head_bytes += lines[head].size() + 1;
    ++head;
  }
  size_t tail = 0, tail_bytes = 0;
  while (tail < lines.size() - head && tail < max_lines / 2 &&
         tail_bytes + lines[lines.size() - 1 - tail].size() + 1 <= half_bytes) {
    tail_bytes += lines[lines.size() - 1 - tail].size() + 1;
    ++tail;
  }
  // A line too long to fit whole: its start (at the head) and its end (at the tail) are shown cut.
  std::string cut_head, cut_tail;
  if (head == 0 && !lines.empty()) {
    cut_head = std::string(utf8_prefix(lines.front(), half_bytes)) + " …";
    head_bytes = cut_head.size();
  }
  if (tail == 0 && lines.size() > head) {
    cut_tail = "… " + std::string(utf8_suffix(lines.back(), half_bytes));
    tail_bytes = cut_tail.size();
  }
  for (size_t i = 0; i < head; ++i) emit(lines[i]);
  if (!cut_head.empty()) emit(cut_head);
  const size_t omitted_lines = lines.size() - head - tail;
  const size_t shown = head_bytes + tail_bytes;
  const size_t omitted_bytes = text.size() > shown ? text.size() - shown : 0;
  out += prefix;
  out += "… " + std::to_string(omitted_lines) + (omitted_lines == 1 ? " line" : " lines") + " (" +
         byte_count(omitted_bytes) + ") not shown …\n";
  if (!cut_tail.empty()) emit(cut_tail);
  for (size_t i = lines.size() - tail; i < lines.size(); ++i) emit(lines[i]);
  return out;
}

std::string bounded_diff(std::string_view before, std::string_view after, ExcerptLimits limits) {
  if (before == after) return "";
  const std::vector<std::string_view> old_lines = split_lines(before);
  const std::vector<std::string_view> new_lines = split_lines(after);
  size_t common_start = 0;
  while (common_start < old_lines.size() && common_start < new_lines.size() &&
         old_lines[common_start] == new_lines[common_start]) {
    ++common_start;
  }
  size_t common_end = 0;
  while (common_end < old_lines.size() - common_start && common_end < new_lines.size() - common_start &&
         old_lines[old_lines.size() - 1 - common_end] == new_lines[new_lines.size() - 1 - common_end]) {
    ++common_end;
  }
  const auto join = [](const std::vector<std::string_view>& lines, size_t from, size_t to) {
    std::string text;
    for (size_t i = from; i < to; ++i) {
      text += lines[i];
      text += '\n';
    }
    return text;
  };
  const std::string removed = join(old_lines, common_start, old_lines.size() - common_end);
  const std::string added = join(new_lines, common_start, new_lines.size() - common_end);
  ExcerptLimits side = limits;
  side.max_lines = std::max<size_t>(limits.max_lines / 2, 2);
  side.max_bytes = std::max<size_t>(limits.max_bytes / 2, 32);
  std::string out = "@@ line " + std::to_string(common_start + 1) + " @@\n";
  out += excerpt_lines(removed, "-", side);
  out += excerpt_lines(added, "+", side);
  // A change only in the final newline leaves both sides' lines equal.
  if (removed == added) out += "(only the line ending at the end of the file changes)\n";
  return out;
}

std::vector<std::string> sensitive_path_reasons(std::string_view path) {
  std::vector<std::string> reasons;
  const std::vector<std::string_view> parts = [&] {
    std::vector<std::string_view> out;
    size_t start = 0;
    while (start <= path.size()) {
      size_t end = path.find('/', start);
      if (end == std::string_view::npos) end = path.size();
      if (end > start) out.push_back(path.substr(start, end - start));
      start = end + 1;
    }
    return out;
  }();
  const bool absolute = path.starts_with('/');
  int depth = 0;
  bool escapes = false;
  for (std::string_view part : parts) {
    if (part == "..") {
      if (--depth < 0) escapes = true;
    } else if (part != ".") {
      ++depth;
    }
  }
  if (absolute || escapes) reasons.emplace_back("outside the workspace");
  if (std::find(parts.begin(), parts.end(), ".git") != parts.end()) {
    reasons.emplace_back("inside .git/ (its hooks and config run commands)");
  }
  static constexpr std::array<std::string_view, 17> kStartupFiles = {
      ".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".zshrc",
      ".zshenv", ".zprofile",     ".zlogin",     ".zlogout",     ".cshrc",   ".tcshrc",
      ".login",  ".kshrc",        ".envrc",      "config.fish",  ".xprofile"};
  if (!parts.empty() &&
      std::find(kStartupFiles.begin(), kStartupFiles.end(), parts.back()) != kStartupFiles.end()) {
    reasons.emplace_back("a shell start-up file (it runs in every new shell)");
  }
  return reasons;
}

CallPreview default_call_preview(const nlohmann::json& params, const ToolTarget& target) {
  CallPreview preview;
  preview.action = "call tool";
  if (target.path) {
    preview.target = *target.path;
  } else if (target.origin) {
    preview.target = *target.origin;
  } else if (target.server_id) {
    preview.target = "MCP server " + *target.server_id;
  }
  if (!params.is_object() || params.empty()) return preview;
  preview.change_format = "arguments";
  ExcerptLimits each;
  each.max_lines = 12;
  each.max_bytes = 1024;
  for (const auto& [name, value] : params.items()) {
    const std::string text = value.is_string()
                                 ? value.get<std::string>()
                                 : value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    const bool one_line = text.find('\n') == std::string::npos && text.size() <= each.max_bytes;
    if (one_line) {
      preview.change += name + ": " + valid_utf8_text(text) + "\n";
    } else {
      preview.change += name + ":\n" + excerpt_lines(text, "  ", each);
    }
  }
  return preview;
}

}  // namespace keel
