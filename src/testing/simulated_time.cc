#include "testing/simulated_time.h"

#include <algorithm>
#include <utility>

namespace keel::testing {

class SimulatedTime::Handle final : public ScheduledTask {
 public:
  Handle(SimulatedTime& time, uint64_t id) : time_(time), id_(id) {}
  ~Handle() override { time_.cancel(id_); }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;

 private:
  SimulatedTime& time_;
  uint64_t id_;
};

std::chrono::steady_clock::time_point SimulatedTime::steady_now() const {
  return std::chrono::steady_clock::time_point(std::chrono::milliseconds(steady_ms_.load()));
}

std::unique_ptr<ScheduledTask> SimulatedTime::schedule_after(std::chrono::milliseconds delay,
                                                             std::function<void()> callback) {
  uint64_t id = 0;
  {
    MutexLock lock(mu_);
    id = next_id_++;
    const int64_t due = steady_ms_.load() + std::max<int64_t>(0, delay.count());
    tasks_.emplace(id, Task{due, std::move(callback)});
    delays_.push_back(delay);
  }
  changed_.notify_all();
  return std::make_unique<Handle>(*this, id);
}

void SimulatedTime::advance(std::chrono::milliseconds by) {
  MutexLock lock(mu_);
  const int64_t until = steady_ms_.load() + std::max<int64_t>(0, by.count());
  while (true) {
    auto next = tasks_.end();
    for (auto it = tasks_.begin(); it != tasks_.end(); ++it) {
      if (it->second.due_ms > until) continue;
      if (next == tasks_.end() || it->second.due_ms < next->second.due_ms) next = it;  // ids keep order
    }
    if (next == tasks_.end()) break;
    const int64_t step = std::max<int64_t>(0, next->second.due_ms - steady_ms_.load());
    steady_ms_ += step;
    unix_ms_ += step;
    std::function<void()> callback = std::move(next->second.callback);
    running_id_ = next->first;
    running_thread_ = std::this_thread::get_id();
    tasks_.erase(next);
    lock.unlock();
    callback();
    callback = nullptr;  // what it captured goes before a waiting cancel() returns
    lock.lock();
    running_id_ = 0;
    changed_.notify_all();
  }
  const int64_t rest = until - steady_ms_.load();
  steady_ms_ += rest;
  unix_ms_ += rest;
}

void SimulatedTime::cancel(uint64_t id) {
  std::function<void()> dropped;  // destroyed outside the lock: it may own handles of other tasks
  {
    MutexLock lock(mu_);
    if (auto node = tasks_.extract(id)) dropped = std::move(node.mapped().callback);
    if (running_id_ == id && running_thread_ != std::this_thread::get_id()) {
      while (running_id_ == id) lock.wait(changed_);
    }
  }
}

size_t SimulatedTime::pending() const {
  MutexLock lock(mu_);
  return tasks_.size();
}

size_t SimulatedTime::scheduled() const {
  MutexLock lock(mu_);
  return delays_.size();
}

std::vector<std::chrono::milliseconds> SimulatedTime::delays() const {
  MutexLock lock(mu_);
  return delays_;
}

bool SimulatedTime::wait_scheduled(size_t count, std::chrono::seconds bound) const {
  MutexLock lock(mu_);
  const auto give_up = std::chrono::steady_clock::now() + bound;
  while (delays_.size() < count) {
    if (lock.wait_until(changed_, give_up) == std::cv_status::timeout) return delays_.size() >= count;
  }
  return true;
}

}  // namespace keel::testing
