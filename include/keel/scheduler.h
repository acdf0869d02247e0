// keel/scheduler.h — the injectable source of timers.
//
// Code that waits (the wait tool, retry backoff, durable timers) schedules through a Scheduler instead of
// sleeping, so tests can drive time with a manual scheduler and the engine can cancel waits on interrupt.
#pragma once

#include <chrono>
#include <functional>
#include <memory>

namespace keel {

// Destroying the handle cancels the task if it has not run; after the destructor returns the callback is
// not running and will not run.
class ScheduledTask {
 public:
  virtual ~ScheduledTask() = default;
};

class Scheduler {
 public:
  virtual ~Scheduler() = default;
  // Runs `callback` once, `delay` from now, on a thread of the scheduler's choosing. Thread-safe.
  [[nodiscard]] virtual std::unique_ptr<ScheduledTask> schedule_after(std::chrono::milliseconds delay,
                                                                      std::function<void()> callback) = 0;
};

}  // namespace keel
