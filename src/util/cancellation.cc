// util/cancellation.cc — the shared state behind CancellationSource/Token/Registration.
//
// One mutex guards everything except the `cancelled` flag, which is also mirrored in an atomic so
// is_cancelled() (polled in hot loops) takes no lock. No lock is ever held while a callback runs or while
// a callback's std::function is destroyed: callbacks (and the objects they capture) may call back into
// the token or destroy registrations, and would otherwise deadlock.
//
// The registration destructor must not return while its callback is running on another thread, so the
// cancelling thread publishes which callback it is running (running_id) and on which thread. A
// destructor that finds its callback running waits on `done` — unless it is on that very thread, which
// means the callback is destroying its own registration; waiting there would deadlock forever, and not
// waiting is safe because the callback is already on its way out.
#include "keel/cancellation.h"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <thread>
#include <utility>

#include "util/thread_annotations.h"

namespace keel {

namespace detail {

struct CancellationState {
  Mutex mu;
  std::condition_variable done;  // signalled whenever a callback run by cancel() finishes
  std::atomic<bool> cancelled{false};
  std::string reason GUARDED_BY(mu);                                   // set once, by the first cancel()
  uint64_t next_id GUARDED_BY(mu) = 1;                                 // 0 means "no registration"
  std::map<uint64_t, std::function<void()>> callbacks GUARDED_BY(mu);  // registered and not yet run
  uint64_t running_id GUARDED_BY(mu) = 0;                              // callback cancel() is running
  std::thread::id running_thread GUARDED_BY(mu);                       // the thread running cancel()
};

}  // namespace detail

namespace {

// Callbacks must not throw: cancel() runs them on behalf of someone else, and an exception escaping
// half-way would leave later callbacks never run. A throwing callback is a bug and terminates here.
void run_callback(const std::function<void()>& callback) noexcept { callback(); }

}  // namespace

// --- CancellationRegistration ---

CancellationRegistration::CancellationRegistration(std::shared_ptr<detail::CancellationState> state,
                                                   uint64_t id)
    : state_(std::move(state)), id_(id) {}

CancellationRegistration::CancellationRegistration(CancellationRegistration&& other) noexcept
    : state_(std::move(other.state_)), id_(std::exchange(other.id_, 0)) {}

CancellationRegistration& CancellationRegistration::operator=(CancellationRegistration&& other) noexcept {
  if (this != &other) {
    reset();
    state_ = std::move(other.state_);
    id_ = std::exchange(other.id_, 0);
  }
  return *this;
}

CancellationRegistration::~CancellationRegistration() { reset(); }

void CancellationRegistration::reset() {
  if (!state_) return;
  std::function<void()> unregistered;  // destroyed after the lock is released (see file comment)
  {
    MutexLock lock(state_->mu);
    if (auto node = state_->callbacks.extract(id_)) {
      unregistered = std::move(node.mapped());
    } else if (state_->running_id == id_ && state_->running_thread != std::this_thread::get_id()) {
      while (state_->running_id == id_) lock.wait(state_->done);
    }
    // Otherwise the callback already ran, or is running on this thread and is destroying its own
    // registration.
  }
  state_.reset();
  id_ = 0;
}

// --- CancellationToken ---

bool CancellationToken::is_cancelled() const {
  return state_ != nullptr && state_->cancelled.load(std::memory_order_acquire);
}

std::string CancellationToken::reason() const {
  if (!state_) return "";
  MutexLock lock(state_->mu);
  return state_->reason;  // "" until cancelled
}

CancellationRegistration CancellationToken::on_cancel(std::function<void()> callback) const {
  if (!state_) return {};  // a default token is never cancelled: the callback can never run
  {
    MutexLock lock(state_->mu);
    if (!state_->cancelled.load(std::memory_order_relaxed)) {
      const uint64_t id = state_->next_id++;
      state_->callbacks.emplace(id, std::move(callback));
      return CancellationRegistration(state_, id);
    }
  }
  // Already cancelled: run now, on this thread, without the lock. It has finished by the time we
  // return, so an empty registration keeps the destructor guarantee trivially.
  run_callback(callback);
  return {};
}

// --- CancellationSource ---

CancellationSource::CancellationSource() : state_(std::make_shared<detail::CancellationState>()) {}

// A moved-from source has no state; it behaves like a source that can never be cancelled.
CancellationToken CancellationSource::token() const { return CancellationToken(state_); }

bool CancellationSource::is_cancelled() const {
  return state_ != nullptr && state_->cancelled.load(std::memory_order_acquire);
}

void CancellationSource::cancel(std::string reason) {
  if (!state_) return;
  detail::CancellationState& s = *state_;
  MutexLock lock(s.mu);
  if (s.cancelled.load(std::memory_order_relaxed)) return;  // idempotent: the first reason is kept
  s.reason = std::move(reason);
  s.cancelled.store(true, std::memory_order_release);
  // From here on on_cancel() runs new callbacks itself, so `callbacks` only shrinks and this loop ends.
  s.running_thread = std::this_thread::get_id();
  while (!s.callbacks.empty()) {
    const auto first = s.callbacks.begin();  // registration order
    s.running_id = first->first;
    std::function<void()> callback = std::move(first->second);
    s.callbacks.erase(first);
    lock.unlock();
    run_callback(callback);
    callback = nullptr;  // release what the callback captured before its registration may return
    lock.lock();
    s.running_id = 0;
    s.done.notify_all();
  }
  s.running_thread = std::thread::id();
}

}  // namespace keel
