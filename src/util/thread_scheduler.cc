// util/thread_scheduler.cc — see thread_scheduler.h.
#include "util/thread_scheduler.h"

namespace keel {

class ThreadScheduler::Task final : public ScheduledTask {
 public:
  Task(ThreadScheduler& scheduler, uint64_t id) : scheduler_(scheduler), id_(id) {}
  ~Task() override { scheduler_.cancel(id_); }

 private:
  ThreadScheduler& scheduler_;
  uint64_t id_;
};

ThreadScheduler::ThreadScheduler() : thread_([this] { run(); }) {}

ThreadScheduler::~ThreadScheduler() {
  {
    MutexLock guard(mu_);
    stopping_ = true;
    due_.clear();
  }
  cv_.notify_all();
  thread_.join();
}

std::unique_ptr<ScheduledTask> ThreadScheduler::schedule_after(std::chrono::milliseconds delay,
                                                               std::function<void()> callback) {
  uint64_t id = 0;
  {
    MutexLock guard(mu_);
    id = next_id_++;
    due_.emplace(std::chrono::steady_clock::now() + delay, Entry{id, std::move(callback)});
  }
  cv_.notify_all();
  return std::make_unique<Task>(*this, id);
}

void ThreadScheduler::cancel(uint64_t id) {
  MutexLock lock(mu_);
  for (auto it = due_.begin(); it != due_.end(); ++it) {
    if (it->second.id == id) {
      due_.erase(it);
      return;
    }
  }
  // Running now: wait until it returns, unless this is the callback cancelling itself.
  if (std::this_thread::get_id() == thread_id_) return;
  while (running_id_ == id) lock.wait(cv_);
}

void ThreadScheduler::run() {
  MutexLock lock(mu_);
  thread_id_ = std::this_thread::get_id();
  while (!stopping_) {
    if (due_.empty()) {
      lock.wait(cv_);
      continue;
    }
    auto first = due_.begin();
    // A copy: while this waits, the entry may be cancelled and erased.
    const std::chrono::steady_clock::time_point due = first->first;
    if (due > std::chrono::steady_clock::now()) {
      lock.wait_until(cv_, due);
      continue;
    }
    Entry entry = std::move(first->second);
    due_.erase(first);
    running_id_ = entry.id;
    lock.unlock();
    entry.callback();
    // Destroyed before the lock is taken again: the callback may hold the last reference to the owner of
    // its own handle, whose destructor then cancels (and so locks).
    entry.callback = nullptr;
    lock.lock();
    running_id_ = 0;
    cv_.notify_all();
  }
}

}  // namespace keel
