#include "testing/sequential_ids.h"

#include <cstdio>

namespace keel::testing {

std::string SequentialIdSource::next_id() {
  char digits[32];
  std::snprintf(digits, sizeof digits, "%06llu", static_cast<unsigned long long>(next_.fetch_add(1)));
  return prefix_ + "-" + digits;
}

}  // namespace keel::testing
