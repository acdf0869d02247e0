// keel/thread_annotations.h — clang's thread-safety annotations, and the Mutex, SharedMutex and lock types
// that carry them.
//
// A member written `int count_ KEEL_GUARDED_BY(mu_);` may be read or written only while mu_ is held; a method
// declared `void drain() KEEL_REQUIRES(mu_);` may be called only with mu_ held. clang checks this at compile
// time with -Wthread-safety (scripts/clang_tidy.sh runs that analysis on every src/ file); under g++ the
// macros expand to nothing. std::mutex carries no annotations in libstdc++, so annotated classes hold a
// keel::Mutex and lock it with keel::MutexLock (a std::lock_guard / std::unique_lock in one).
//
// Public, because public classes that hold a mutex (FailPoints, UuidV7Source, ToolRegistry) declare what it
// guards in their headers, which may include only keel/ headers; the annotations keep those classes' layout
// as it was, where a pimpl would have cost an allocation and an indirection on every call for nothing but
// hiding the mutex. The macros are KEEL_-prefixed here so that an embedder's own GUARDED_BY (abseil's, say)
// cannot collide with them; keel's sources use the short names from util/thread_annotations.h.
//
// Waiting on a condition variable: `while (!ready_) lock.wait(cv_);` — the condition is checked in the
// locked scope, where the analysis sees the lock (a predicate lambda would be checked without it).
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <shared_mutex>

#if defined(__clang__)
#define KEEL_THREAD_ANNOTATION_(x) __attribute__((x))
#else
#define KEEL_THREAD_ANNOTATION_(x)
#endif

#define KEEL_CAPABILITY(x) KEEL_THREAD_ANNOTATION_(capability(x))
#define KEEL_SCOPED_CAPABILITY KEEL_THREAD_ANNOTATION_(scoped_lockable)
#define KEEL_GUARDED_BY(x) KEEL_THREAD_ANNOTATION_(guarded_by(x))
#define KEEL_PT_GUARDED_BY(x) KEEL_THREAD_ANNOTATION_(pt_guarded_by(x))
#define KEEL_REQUIRES(...) KEEL_THREAD_ANNOTATION_(requires_capability(__VA_ARGS__))
#define KEEL_REQUIRES_SHARED(...) KEEL_THREAD_ANNOTATION_(requires_shared_capability(__VA_ARGS__))
#define KEEL_EXCLUDES(...) KEEL_THREAD_ANNOTATION_(locks_excluded(__VA_ARGS__))
#define KEEL_ACQUIRE(...) KEEL_THREAD_ANNOTATION_(acquire_capability(__VA_ARGS__))
#define KEEL_ACQUIRE_SHARED(...) KEEL_THREAD_ANNOTATION_(acquire_shared_capability(__VA_ARGS__))
#define KEEL_RELEASE(...) KEEL_THREAD_ANNOTATION_(release_capability(__VA_ARGS__))
#define KEEL_RELEASE_SHARED(...) KEEL_THREAD_ANNOTATION_(release_shared_capability(__VA_ARGS__))
#define KEEL_RELEASE_GENERIC(...) KEEL_THREAD_ANNOTATION_(release_generic_capability(__VA_ARGS__))
#define KEEL_TRY_ACQUIRE(...) KEEL_THREAD_ANNOTATION_(try_acquire_capability(__VA_ARGS__))
#define KEEL_NO_THREAD_SAFETY_ANALYSIS KEEL_THREAD_ANNOTATION_(no_thread_safety_analysis)

namespace keel {

// A std::mutex the analysis knows about. Not recursive; lock() and unlock() on the same thread.
class KEEL_CAPABILITY("mutex") Mutex {
 public:
  void lock() KEEL_ACQUIRE() { mu_.lock(); }
  void unlock() KEEL_RELEASE() { mu_.unlock(); }
  bool try_lock() KEEL_TRY_ACQUIRE(true) { return mu_.try_lock(); }

 private:
  friend class MutexLock;
  std::mutex mu_;
};

// Holds a Mutex for its scope. unlock() / lock() release and take it again early (the analysis follows);
// wait*() block on a condition variable with the mutex released, and return with it held again.
class KEEL_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) KEEL_ACQUIRE(mu) : lock_(mu.mu_) {}
  ~MutexLock() KEEL_RELEASE() {}
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void unlock() KEEL_RELEASE() { lock_.unlock(); }
  void lock() KEEL_ACQUIRE() { lock_.lock(); }

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

// A std::shared_mutex the analysis knows about: many readers (ReaderLock) or one writer (WriterLock).
class KEEL_CAPABILITY("mutex") SharedMutex {
 public:
  void lock() KEEL_ACQUIRE() { mu_.lock(); }
  void unlock() KEEL_RELEASE() { mu_.unlock(); }
  void lock_shared() KEEL_ACQUIRE_SHARED() { mu_.lock_shared(); }
  void unlock_shared() KEEL_RELEASE_SHARED() { mu_.unlock_shared(); }

 private:
  std::shared_mutex mu_;
};

// Holds a SharedMutex shared (for reading) for its scope.
class KEEL_SCOPED_CAPABILITY ReaderLock {
 public:
  explicit ReaderLock(SharedMutex& mu) KEEL_ACQUIRE_SHARED(mu) : mu_(mu) { mu_.lock_shared(); }
  ~ReaderLock() KEEL_RELEASE() { mu_.unlock_shared(); }
  ReaderLock(const ReaderLock&) = delete;
  ReaderLock& operator=(const ReaderLock&) = delete;

 private:
  SharedMutex& mu_;
};

// Holds a SharedMutex exclusively (for writing) for its scope.
class KEEL_SCOPED_CAPABILITY WriterLock {
 public:
  explicit WriterLock(SharedMutex& mu) KEEL_ACQUIRE(mu) : mu_(mu) { mu_.lock(); }
  ~WriterLock() KEEL_RELEASE() { mu_.unlock(); }
  WriterLock(const WriterLock&) = delete;
  WriterLock& operator=(const WriterLock&) = delete;

 private:
  SharedMutex& mu_;
};

}  // namespace keel
