#include "skills/front_matter.h"

#include <yaml-cpp/yaml.h>

#include <exception>
#include <optional>

#include "skills/skill_errors.h"
#include "util/utf8.h"

namespace keel::skills {
namespace {

// The line starting at `at` without its end ("\n" or "\r\n"), and where the next line starts.
std::pair<std::string_view, size_t> line_at(std::string_view text, size_t at) {
  const size_t end = text.find('\n', at);
  const size_t next = end == std::string_view::npos ? text.size() : end + 1;
  std::string_view line = text.substr(at, (end == std::string_view::npos ? text.size() : end) - at);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return {line, next};
}

bool is_fence(std::string_view line) {
  while (!line.empty() && (line.back() == ' ' || line.back() == '\t')) line.remove_suffix(1);
  return line == "---";
}

// Control characters count as whitespace: a description is one line of the system prompt.
bool is_space(char c) {
  const auto b = static_cast<unsigned char>(c);
  return b <= 0x20 || b == 0x7F;
}

std::string collapse_whitespace(std::string_view text) {
  std::string out;
  bool pending_space = false;
  for (const char c : text) {
    if (is_space(c)) {
      pending_space = !out.empty();
      continue;
    }
    if (pending_space) out += ' ';
    pending_space = false;
    out += c;
  }
  return out;
}

size_t characters(std::string_view text) {
  size_t count = 0;
  for (const char c : text) count += (static_cast<unsigned char>(c) & 0xC0) != 0x80 ? 1 : 0;
  return count;
}

// The string value of `key`: nullopt when absent or null, an error when it is not a scalar.
Result<std::optional<std::string>> string_field(const YAML::Node& map, const char* key,
                                                std::string_view file) {
  const YAML::Node value = map[key];
  if (!value.IsDefined() || value.IsNull()) return std::optional<std::string>();
  if (!value.IsScalar()) {
    return fail(codes::kSkillBadFrontMatter,
                std::string(file) + ": the front matter's `" + key + "` must be a string");
  }
  return std::optional<std::string>(value.Scalar());
}

Result<SkillDocument> parse_front_matter(std::string_view yaml, std::string_view body, std::string_view file,
                                         const FrontMatterLimits& limits) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    // e.mark is the position inside the front matter; the front matter starts on the file's second line.
    const std::string where = e.mark.is_null() ? "" : " (line " + std::to_string(e.mark.line + 2) + ")";
    return fail(codes::kSkillBadFrontMatter,
                std::string(file) + ": the front matter is not valid YAML" + where + ": " + e.msg);
  }
  if (!root.IsMap()) {
    return fail(
        codes::kSkillBadFrontMatter,
        std::string(file) + ": the front matter must be a YAML mapping with `name` and `description`");
  }
  SkillDocument doc;
  std::optional<std::string> name = KEEL_TRY(string_field(root, "name", file));
  std::optional<std::string> description = KEEL_TRY(string_field(root, "description", file));
  if (!name || name->empty()) {
    return fail(codes::kSkillMissingField, std::string(file) + ": the front matter has no `name`");
  }
  if (!is_skill_name(*name)) {
    // Not repeated: it may be anything, and long.
    return fail(codes::kSkillBadName, std::string(file) +
                                          ": the skill's `name` must be 1 to 64 lowercase letters, digits "
                                          "and hyphens ([a-z0-9-])");
  }
  doc.name = std::move(*name);
  doc.description = collapse_whitespace(description.value_or(""));
  if (doc.description.empty()) {
    return fail(codes::kSkillMissingField, std::string(file) + ": the front matter has no `description`");
  }
  if (!utf8_valid(doc.description)) {
    return fail(codes::kSkillBadFrontMatter, std::string(file) + ": the `description` is not UTF-8 text");
  }
  if (const size_t count = characters(doc.description); count > limits.max_description_chars) {
    return fail(codes::kSkillTooLarge, std::string(file) + ": the `description` has " +
                                           std::to_string(count) + " characters, more than " +
                                           std::to_string(limits.max_description_chars));
  }
  doc.body = std::string(body);
  return doc;
}

}  // namespace

bool is_skill_name(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  for (const char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  }
  return true;
}

Result<SkillDocument> parse_skill_document(std::string_view text, std::string_view file,
                                           const FrontMatterLimits& limits) {
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);  // a byte order mark some editors write
  const auto [first, after_first] = line_at(text, 0);
  if (!is_fence(first)) {
    return fail(codes::kSkillBadFrontMatter,
                std::string(file) +
                    ": no front matter: the file must start with a `---` line, then `name:` "
                    "and `description:`, then a closing `---` line");
  }
  size_t at = after_first;
  while (at < text.size() && at - after_first <= limits.max_front_matter_bytes) {
    const auto [line, next] = line_at(text, at);
    if (is_fence(line)) {
      try {
        return parse_front_matter(text.substr(after_first, at - after_first), text.substr(next), file,
                                  limits);
      } catch (const std::exception& e) {
        // yaml-cpp's node accessors may throw on a document they parsed (an exception it did not classify).
        return fail(codes::kSkillBadFrontMatter,
                    std::string(file) + ": the front matter cannot be read: " + e.what());
      }
    }
    at = next;
  }
  if (at - after_first > limits.max_front_matter_bytes) {
    return fail(codes::kSkillTooLarge, std::string(file) + ": the front matter is longer than " +
                                           std::to_string(limits.max_front_matter_bytes) + " bytes");
  }
  return fail(codes::kSkillBadFrontMatter,
              std::string(file) + ": the front matter has no closing `---` line");
}

}  // namespace keel::skills
