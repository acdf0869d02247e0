// browser/cdp/json_repair.h — makes CDP text with lone UTF-16 surrogates parseable.
//
// Chromium serialises JavaScript strings as they are, so a page title or a script result holding an unpaired
// surrogate arrives as `"a\ud800b"`; nlohmann::json rejects such text, which would make a whole reply
// unreadable and its call time out (plan §5 R1). The repair replaces each `\uD800`–`\uDFFF` escape that is
// not part of a high+low pair by `\uFFFD` (U+FFFD REPLACEMENT CHARACTER), leaving everything else byte for
// byte.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace keel::browser {

struct SurrogateRepair {
  std::string text;
  size_t replaced = 0;  // escapes replaced; 0 means `text` equals the input
};

SurrogateRepair repair_lone_surrogates(std::string_view json_text);

}  // namespace keel::browser
