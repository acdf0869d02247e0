// store/sqlite/fifo_mutex.h — a mutex that admits waiters in arrival order (a ticket lock).
//
// The SQLite writer uses it so that a group-commit leader queues *behind* the writers that were already
// waiting: they finish their transactions first and ride along in the leader's sync, which is what makes
// group commit group. A plain std::mutex gives no order and lets the leader jump the queue.
//
// lock() and unlock() may be called from different threads (the lock is not owned by a thread).
#pragma once

#include <condition_variable>
#include <cstdint>

#include "util/assert.h"
#include "util/thread_annotations.h"

namespace keel::sqlite {

class FifoMutex {
 public:
  void lock() {
    MutexLock guard(mu_);
    const uint64_t ticket = next_ticket_++;
    while (now_serving_ != ticket) guard.wait(cv_);
  }
  void unlock() {
    {
      MutexLock guard(mu_);
      KEEL_ASSERT(now_serving_ < next_ticket_);  // unlocking a FifoMutex that nobody holds is a bug
      ++now_serving_;
    }
    cv_.notify_all();
  }

 private:
  Mutex mu_;
  std::condition_variable cv_;
  uint64_t next_ticket_ GUARDED_BY(mu_) = 0;
  uint64_t now_serving_ GUARDED_BY(mu_) = 0;
};

}  // namespace keel::sqlite
