// keel/clock.h — the injectable source of time.
//
// Nothing in keel reads the system clock directly: every timestamp, timeout and backoff goes through a
// Clock, so a test can run the engine deterministically with a ManualClock (src/testing/manual_clock.h).
// Implementations must be safe to call from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>

namespace keel {

class Clock {
 public:
  virtual ~Clock() = default;
  // Wall-clock time in milliseconds since the Unix epoch. Used for persisted timestamps and ids; may jump.
  virtual int64_t now_unix_ms() const = 0;
  // Monotonic time, for measuring durations and deadlines. Never goes backwards.
  virtual std::chrono::steady_clock::time_point steady_now() const = 0;
};

// The real clock. Stateless; one instance may be shared by every component.
class SystemClock final : public Clock {
 public:
  int64_t now_unix_ms() const override;
  std::chrono::steady_clock::time_point steady_now() const override;
};

}  // namespace keel
