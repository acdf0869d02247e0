// util/thread_scheduler.h — a Scheduler (keel/scheduler.h) with one thread of its own, for components that
// need timers outside the engine's io_context (a model provider's retry backoff).
//
// Tasks run on the scheduler's thread in due order; a task must not block for long, since later tasks wait
// behind it. Destroying a task's handle cancels it; after the handle's destructor returns, the callback is
// not running and will not run (unless the handle is destroyed from inside its own callback, which is
// allowed). Every handle must be destroyed before the scheduler, which then joins its thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "keel/scheduler.h"
#include "util/thread_annotations.h"

namespace keel {

class ThreadScheduler final : public Scheduler {
 public:
  ThreadScheduler();
  ~ThreadScheduler() override;
  ThreadScheduler(const ThreadScheduler&) = delete;
  ThreadScheduler& operator=(const ThreadScheduler&) = delete;

  [[nodiscard]] std::unique_ptr<ScheduledTask> schedule_after(std::chrono::milliseconds delay,
                                                              std::function<void()> callback) override;

 private:
  class Task;
  struct Entry {
    uint64_t id;
    std::function<void()> callback;
  };
  void run() EXCLUDES(mu_);
  void cancel(uint64_t id) EXCLUDES(mu_);

  Mutex mu_;
  std::condition_variable cv_;
  std::multimap<std::chrono::steady_clock::time_point, Entry> due_ GUARDED_BY(mu_);
  uint64_t next_id_ GUARDED_BY(mu_) = 1;
  uint64_t running_id_ GUARDED_BY(mu_) = 0;  // the task whose callback runs now, 0 when none
  std::thread::id thread_id_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace keel
