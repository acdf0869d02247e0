// util/thread_annotations.h — clang's thread-safety annotations, and a Mutex and MutexLock that carry them.
//
// A member written `int count_ GUARDED_BY(mu_);` may be read or written only while mu_ is held; a method
// declared `void drain() REQUIRES(mu_);` may be called only with mu_ held. clang checks this at compile time
// with -Wthread-safety (scripts/clang_tidy.sh runs that analysis on every src/ file); under g++ the macros
// expand to nothing. std::mutex carries no annotations in libstdc++, so annotated classes hold a keel::Mutex
// and lock it with keel::MutexLock (a std::lock_guard / std::unique_lock in one).
//
// Waiting on a condition variable: `while (!ready_) lock.wait(cv_);` — the condition is checked in the
// locked scope, where the analysis sees the lock (a predicate lambda would be checked without it).
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

#if defined(__clang__)
#define KEEL_THREAD_ANNOTATION_(x) __attribute__((x))
#else
#define KEEL_THREAD_ANNOTATION_(x)
#endif

#define CAPABILITY(x) KEEL_THREAD_ANNOTATION_(capability(x))
#define SCOPED_CAPABILITY KEEL_THREAD_ANNOTATION_(scoped_lockable)
#define GUARDED_BY(x) KEEL_THREAD_ANNOTATION_(guarded_by(x))
#define PT_GUARDED_BY(x) KEEL_THREAD_ANNOTATION_(pt_guarded_by(x))
#define REQUIRES(...) KEEL_THREAD_ANNOTATION_(requires_capability(__VA_ARGS__))
#define EXCLUDES(...) KEEL_THREAD_ANNOTATION_(locks_excluded(__VA_ARGS__))
#define ACQUIRE(...) KEEL_THREAD_ANNOTATION_(acquire_capability(__VA_ARGS__))
#define RELEASE(...) KEEL_THREAD_ANNOTATION_(release_capability(__VA_ARGS__))
#define TRY_ACQUIRE(...) KEEL_THREAD_ANNOTATION_(try_acquire_capability(__VA_ARGS__))
#define NO_THREAD_SAFETY_ANALYSIS KEEL_THREAD_ANNOTATION_(no_thread_safety_analysis)

namespace keel {

// A std::mutex the analysis knows about. Not recursive; lock() and unlock() on the same thread.
class CAPABILITY("mutex") Mutex {
 public:
  void lock() ACQUIRE() { mu_.lock(); }
  void unlock() RELEASE() { mu_.unlock(); }
  bool try_lock() TRY_ACQUIRE(true) { return mu_.try_lock(); }

 private:
  friend class MutexLock;
  std::mutex mu_;
};

// Holds a Mutex for its scope. unlock() / lock() release and take it again early (the analysis follows);
// wait*() block on a condition variable with the mutex released, and return with it held again.
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) ACQUIRE(mu) : lock_(mu.mu_) {}
  ~MutexLock() RELEASE() {}
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void unlock() RELEASE() { lock_.unlock(); }
  void lock() ACQUIRE() { lock_.lock(); }

  void wait(std::condition_variable& cv) { cv.wait(lock_); }
  template <class Clock, class Duration>
  std::cv_status wait_until(std::condition_variable& cv, std::chrono::time_point<Clock, Duration> due) {
    return cv.wait_until(lock_, due);
  }
  template <class Rep, class Period>
  std::cv_status wait_for(std::condition_variable& cv, std::chrono::duration<Rep, Period> bound) {
    return cv.wait_for(lock_, bound);
  }

 private:
  std::unique_lock<std::mutex> lock_;
};

}  // namespace keel
