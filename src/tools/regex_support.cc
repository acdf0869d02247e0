// tools/regex_support.cc — see regex_support.h.
#include "tools/regex_support.h"

#include <locale>
#include <mutex>

namespace keel::detail {

void prepare_concurrent_regex() {
  static std::once_flag once;
  std::call_once(once, [] {
    // std::regex uses the global locale's ctype facet and narrows with '\0' as the default, so those are
    // the cache entries to fill (a character narrowing to the default is never cached, so never written).
    const auto& ctype = std::use_facet<std::ctype<char>>(std::locale());
    for (int c = 0; c < 256; ++c) (void)ctype.narrow(static_cast<char>(c), '\0');
  });
}

}  // namespace keel::detail
