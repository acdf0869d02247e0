// engine/io_lifetime.h — lets threads outside the engine post to its io_context only while it exists.
//
// Providers, tools and timers call back on threads of their own, and a few call back after the engine is
// gone: a model transfer aborted at shutdown reports its end from the HTTP client's thread, a tool that
// ignored its cancellation past the grace finishes on its worker. The engine ends its IoLifetime just before
// its io_context is destroyed; a post attempted after that is dropped instead of reaching freed memory.
// The check and the post are one step: the post runs under a shared lock that end() takes exclusively.
#pragma once

#include "util/thread_annotations.h"

namespace keel {

class IoLifetime {
 public:
  // Runs `post` (which posts to the io_context) unless end() was called; returns whether it ran. Any thread;
  // `post` must not block (posting does not).
  template <typename Post>
  bool post_if_alive(Post&& post) {
    ReaderLock lock(mu_);
    if (ended_) return false;
    post();
    return true;
  }

  // After this returns, post_if_alive() runs nothing, and no post it ran is still in progress.
  void end() {
    WriterLock lock(mu_);
    ended_ = true;
  }

 private:
  SharedMutex mu_;
  bool ended_ GUARDED_BY(mu_) = false;
};

}  // namespace keel
