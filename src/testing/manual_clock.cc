#include "testing/manual_clock.h"

namespace keel::testing {

std::chrono::steady_clock::time_point ManualClock::steady_now() const {
  return std::chrono::steady_clock::time_point(std::chrono::milliseconds(steady_ms_.load()));
}

}  // namespace keel::testing
