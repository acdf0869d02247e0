// testing/manual_clock.h — a Clock that moves only when a test says so.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "keel/clock.h"

namespace keel::testing {

// Thread-safe. Starts at `start_unix_ms` (wall) and at an arbitrary fixed steady time point.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(int64_t start_unix_ms = 1'700'000'000'000) : now_ms_(start_unix_ms) {}
  int64_t now_unix_ms() const override { return now_ms_.load(); }
  std::chrono::steady_clock::time_point steady_now() const override;
  void advance(std::chrono::milliseconds by) {
    now_ms_ += by.count();
    steady_ms_ += by.count();
  }
  void set_unix_ms(int64_t ms) { now_ms_ = ms; }

 private:
  std::atomic<int64_t> now_ms_;
  std::atomic<int64_t> steady_ms_{0};
};

}  // namespace keel::testing
