// keel/cancellation.h — cooperative cancellation.
//
// A CancellationSource owns the decision to cancel; it hands out CancellationTokens to the work it may
// need to stop (a provider request, a running tool). Interrupt is a cancel() on the turn's source and
// must reach that work promptly: a token both answers is_cancelled() and runs registered callbacks
// (for example, one that closes a socket).
//
// Guarantees:
//   - cancel() is idempotent and thread-safe; the first call's reason is kept.
//   - A callback registered before cancel() runs exactly once, on the thread calling cancel().
//     A callback registered after cancel() runs at once, on the registering thread.
//   - Destroying a CancellationRegistration unregisters its callback; after the destructor returns the
//     callback is not running and will not run (the destructor waits if it is running on another thread).
//   - Tokens stay valid after the source is destroyed (shared state), and then never become cancelled.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace keel {

namespace detail {
struct CancellationState;
}

class CancellationRegistration {
 public:
  CancellationRegistration() = default;
  CancellationRegistration(std::shared_ptr<detail::CancellationState> state, uint64_t id);
  CancellationRegistration(CancellationRegistration&& other) noexcept;
  CancellationRegistration& operator=(CancellationRegistration&& other) noexcept;
  CancellationRegistration(const CancellationRegistration&) = delete;
  CancellationRegistration& operator=(const CancellationRegistration&) = delete;
  ~CancellationRegistration();

 private:
  void reset();
  std::shared_ptr<detail::CancellationState> state_;
  uint64_t id_ = 0;
};

class CancellationToken {
 public:
  // A token that is never cancelled.
  CancellationToken() = default;

  bool is_cancelled() const;
  // The reason given to cancel(), or "" when not cancelled.
  std::string reason() const;
  // Runs `callback` when (or, if already cancelled, as soon as) the token is cancelled. Keep the
  // returned registration alive for as long as the callback may run.
  [[nodiscard]] CancellationRegistration on_cancel(std::function<void()> callback) const;

 private:
  friend class CancellationSource;
  explicit CancellationToken(std::shared_ptr<detail::CancellationState> state) : state_(std::move(state)) {}
  std::shared_ptr<detail::CancellationState> state_;
};

class CancellationSource {
 public:
  CancellationSource();
  CancellationToken token() const;
  void cancel(std::string reason = "cancelled");
  bool is_cancelled() const;

 private:
  std::shared_ptr<detail::CancellationState> state_;
};

}  // namespace keel
