// skills/front_matter.h — parsing a SKILL.md: YAML front matter between `---` lines, instructions below.
//
// The front matter must be a YAML mapping with `name` and `description` strings (other keys are allowed and
// ignored). The name is [a-z0-9-]{1,64}; the description is trimmed, its runs of whitespace (newlines
// included) collapsed to one space, so it fits one line of the system prompt, and must then be 1 to
// max_description_chars characters. The text is assumed to be UTF-8 already checked by the caller; the
// parser itself never throws and never crashes on any input (fuzz/skill_front_matter_fuzz.cc): yaml-cpp's
// exceptions become skill.bad_front_matter, and the front matter is bounded before yaml-cpp sees it.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "keel/error.h"

namespace keel::skills {

struct FrontMatterLimits {
  size_t max_front_matter_bytes = 16 * 1024;
  size_t max_description_chars = 1024;
};

struct SkillDocument {
  std::string name;
  std::string description;
  std::string body;  // everything after the closing `---` line
};

// Whether `name` is a valid skill name: [a-z0-9-]{1,64}.
bool is_skill_name(std::string_view name);

// Errors (`file` starts every message): skill.bad_front_matter (no opening or closing `---`, YAML that does
// not parse or is not a mapping, a field that is not a string), skill.missing_field (name or description
// absent or empty), skill.bad_name, skill.too_large (front matter or description over its bound).
Result<SkillDocument> parse_skill_document(std::string_view text, std::string_view file,
                                           const FrontMatterLimits& limits = {});

}  // namespace keel::skills
