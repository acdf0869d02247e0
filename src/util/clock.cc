// util/clock.cc — SystemClock, the production Clock: wall time from system_clock, durations from
// steady_clock. Both std clocks are thread-safe, so SystemClock needs no state of its own.
#include "keel/clock.h"

namespace keel {

int64_t SystemClock::now_unix_ms() const {
  // system_clock's epoch is the Unix epoch (guaranteed since C++20).
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::chrono::steady_clock::time_point SystemClock::steady_now() const {
  return std::chrono::steady_clock::now();
}

}  // namespace keel
