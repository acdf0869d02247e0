// fuzz_skill_front_matter — a SKILL.md's front matter parser (skills/front_matter.h) on arbitrary bytes: no
// crash, no exception, and a document it accepts has a valid name, a description within its bound on one
// line, and a body that is the end of the input.
#include <cstdint>
#include <string_view>

#include "fuzz/fuzz_support.h"
#include "skills/front_matter.h"
#include "util/utf8.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  // The loader hands the parser only UTF-8 text without NUL bytes; anything else never reaches it.
  if (text.find('\0') != std::string_view::npos || !keel::utf8_valid(text)) return 0;
  keel::skills::FrontMatterLimits limits;
  limits.max_front_matter_bytes = 4096;
  limits.max_description_chars = 200;
  const auto doc = keel::skills::parse_skill_document(text, "fuzz/SKILL.md", limits);
  if (!doc) {
    keel::fuzz::require(doc.error().code().starts_with("skill."), "an error without a skill.* code");
    return 0;
  }
  keel::fuzz::require(keel::skills::is_skill_name(doc->name), "an accepted name outside [a-z0-9-]{1,64}");
  keel::fuzz::require(!doc->description.empty(), "an empty description accepted");
  keel::fuzz::require(doc->description.find('\n') == std::string::npos, "a description over two lines");
  keel::fuzz::require(doc->description.size() <= 4 * limits.max_description_chars,
                      "a description over its bound");
  keel::fuzz::require(text.ends_with(doc->body), "a body that is not the end of the file");
  return 0;
}
