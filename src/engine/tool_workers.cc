// engine/tool_workers.cc — see tool_workers.h.
#include "engine/tool_workers.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <system_error>
#include <thread>
#include <utility>

#include "util/thread_annotations.h"

namespace keel {

class ToolWorkers::Job {
 public:
  explicit Job(std::function<void()> body) : work(std::move(body)) {}
  std::function<void()> work;
  // Guarded by State::mu (not annotated: the analysis names a mutex only through the object that holds it,
  // and a Job does not know its State).
  bool running = false;
  bool finished = false;
  bool abandoned = false;
};

struct ToolWorkers::State {
  explicit State(size_t max) : max_threads(std::max<size_t>(1, max)) {}
  const size_t max_threads;
  mutable Mutex mu;
  std::condition_variable work_cv;   // a job was queued, or shutdown began
  std::condition_variable ended_cv;  // a thread ended
  std::deque<std::shared_ptr<Job>> queue GUARDED_BY(mu);
  size_t threads GUARDED_BY(mu) = 0;            // started, not ended
  size_t idle GUARDED_BY(mu) = 0;               // waiting for a job
  size_t abandoned_running GUARDED_BY(mu) = 0;  // threads running an abandoned job (they end when it returns)
  bool stopping GUARDED_BY(mu) = false;

  // Threads that may take work: the others end as soon as their abandoned job returns.
  size_t slots() const REQUIRES(mu) { return threads - abandoned_running; }

  // Starts a thread when queued work outnumbers idle threads and a slot is free.
  void start_thread_if_needed(const std::shared_ptr<State>& self) REQUIRES(mu) {
    if (queue.size() > idle && slots() < max_threads) {
      ++threads;
      // Detached: shutdown must be able to return while a tool ignores its cancellation. The thread owns
      // the state it uses (self) and its job's closure, nothing of the engine.
      try {
        std::thread([self] { run(self); }).detach();
      } catch (const std::system_error&) {
        --threads;  // no thread to be had: the job waits for a busy one (or its time budget)
      }
    }
  }

  static void run(const std::shared_ptr<State>& self) {
    MutexLock lock(self->mu);
    for (;;) {
      ++self->idle;
      while (!self->stopping && self->queue.empty()) lock.wait(self->work_cv);
      --self->idle;
      if (self->stopping) break;
      std::shared_ptr<Job> job = std::move(self->queue.front());
      self->queue.pop_front();
      job->running = true;
      std::function<void()> work = std::move(job->work);
      lock.unlock();
      try {
        work();
      } catch (...) {  // NOLINT(bugprone-empty-catch): the engine's job reports its own exceptions
      }
      work = nullptr;  // what the tool call owned goes before the next job starts
      lock.lock();
      job->running = false;
      job->finished = true;
      if (job->abandoned) {
        --self->abandoned_running;
        break;  // its slot already went to another thread
      }
    }
    --self->threads;
    self->ended_cv.notify_all();
  }
};

ToolWorkers::ToolWorkers(size_t max_threads) : state_(std::make_shared<State>(max_threads)) {}

ToolWorkers::~ToolWorkers() { shutdown(std::chrono::milliseconds(0)); }

std::shared_ptr<ToolWorkers::Job> ToolWorkers::post(std::function<void()> work) {
  auto job = std::make_shared<Job>(std::move(work));
  MutexLock lock(state_->mu);
  if (state_->stopping) {
    lock.unlock();
    job->work = nullptr;
    return job;
  }
  state_->queue.push_back(job);
  state_->start_thread_if_needed(state_);
  state_->work_cv.notify_one();
  return job;
}

void ToolWorkers::abandon(const std::shared_ptr<Job>& job) {
  if (!job) return;
  MutexLock lock(state_->mu);
  if (job->abandoned || job->finished) return;
  if (!job->running) {
    // Still queued: it will never be wanted, so it never runs.
    std::erase(state_->queue, job);
    job->finished = true;
    job->work = nullptr;
    return;
  }
  if (state_->abandoned_running >= state_->max_threads) return;  // bounded: it keeps its slot
  job->abandoned = true;
  ++state_->abandoned_running;
  state_->start_thread_if_needed(state_);
}

void ToolWorkers::shutdown(std::chrono::milliseconds grace) {
  std::deque<std::shared_ptr<Job>> dropped;
  MutexLock lock(state_->mu);
  if (!state_->stopping) {
    state_->stopping = true;
    dropped.swap(state_->queue);
    state_->work_cv.notify_all();
  }
  const auto give_up = std::chrono::steady_clock::now() + grace;
  while (state_->threads != 0) {
    if (lock.wait_until(state_->ended_cv, give_up) == std::cv_status::timeout) break;
  }
  lock.unlock();
  dropped.clear();  // their closures, outside the lock
}

size_t ToolWorkers::threads() const {
  MutexLock lock(state_->mu);
  return state_->threads;
}

size_t ToolWorkers::abandoned() const {
  MutexLock lock(state_->mu);
  return state_->abandoned_running;
}

}  // namespace keel
