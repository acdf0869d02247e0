#include "util/assert.h"

#include <cstdio>
#include <cstdlib>

namespace keel::detail {

void assertion_failed(const char* file, int line, const char* what) noexcept {
  // stdio, not the logger: the logger may be asynchronous and would not flush before abort().
  std::fprintf(stderr, "%s:%d: %s\n", file, line, what);
  std::fflush(stderr);
  std::abort();
}

}  // namespace keel::detail
