// testing/simulated_time.h — simulated time: one object that is both the Clock and the Scheduler of a test.
//
// Time moves only when the test calls advance(). advance() runs every task that falls due on the way, in
// due order, on the calling thread, with the clock reading each task's due time while it runs; so a
// durable timer due in an hour, a tool's ten-minute time budget or a retry's backoff is a test that takes
// no real time. The engine (EngineDeps::scheduler and ::clock), tools that wait and the transports all
// take it where they take a Scheduler.
//
// Guarantees, those keel/scheduler.h asks of every Scheduler: destroying a task's handle cancels it; when
// the task is running on another thread the destructor waits until its callback returned; from inside the
// task's own callback it returns at once. A task scheduled with a zero delay runs at the next advance()
// (advance(0ms) runs it without moving time), never inside schedule_after().
//
// Wall time (now_unix_ms) and steady time move together in advance(); set_unix_ms() moves only the wall
// clock, as a clock correction would, and fires nothing (tasks are due on the steady timeline).
//
// Thread-safe. Code under test schedules from its own threads, so a test that wants a timer to fire first
// waits until it was scheduled (wait_scheduled()) and then advances.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <thread>
#include <vector>

#include "keel/clock.h"
#include "keel/scheduler.h"
#include "util/thread_annotations.h"

namespace keel::testing {

class SimulatedTime final : public Clock, public Scheduler {
 public:
  explicit SimulatedTime(int64_t start_unix_ms = 1'700'000'000'000) : unix_ms_(start_unix_ms) {}
  SimulatedTime(const SimulatedTime&) = delete;
  SimulatedTime& operator=(const SimulatedTime&) = delete;

  // Clock
  int64_t now_unix_ms() const override { return unix_ms_.load(); }
  std::chrono::steady_clock::time_point steady_now() const override;

  // Scheduler
  [[nodiscard]] std::unique_ptr<ScheduledTask> schedule_after(std::chrono::milliseconds delay,
                                                              std::function<void()> callback) override;

  // Moves time forward by `by`, running each task due on the way when its time comes (tasks due at the
  // same time in the order they were scheduled). One thread advances at a time.
  void advance(std::chrono::milliseconds by);
  // Moves only the wall clock (no task runs).
  void set_unix_ms(int64_t ms) { unix_ms_ = ms; }

  // Tasks scheduled and neither run nor cancelled.
  size_t pending() const;
  // How many tasks were scheduled in all, and their delays in the order they were asked for.
  size_t scheduled() const;
  std::vector<std::chrono::milliseconds> delays() const;
  // Waits until `count` tasks were scheduled in all. The bound is a hang guard for a broken test, not a
  // timing assertion; false when it ran out.
  bool wait_scheduled(size_t count, std::chrono::seconds bound = std::chrono::seconds(30)) const;

 private:
  struct Task {
    int64_t due_ms;  // steady, in ms since the simulation began
    std::function<void()> callback;
  };
  class Handle;

  void cancel(uint64_t id) EXCLUDES(mu_);

  std::atomic<int64_t> unix_ms_;
  std::atomic<int64_t> steady_ms_{0};

  mutable Mutex mu_;
  mutable std::condition_variable changed_;  // a task was scheduled, or a running task returned
  uint64_t next_id_ GUARDED_BY(mu_) = 1;
  uint64_t running_id_ GUARDED_BY(mu_) = 0;  // the task whose callback runs now (0: none)
  std::thread::id running_thread_ GUARDED_BY(mu_);
  std::map<uint64_t, Task> tasks_ GUARDED_BY(mu_);
  std::vector<std::chrono::milliseconds> delays_ GUARDED_BY(mu_);
};

}  // namespace keel::testing
