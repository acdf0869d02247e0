// engine/async_inbox.h — hands values from any thread to a coroutine running on a strand.
//
// Providers and tools report through callbacks on threads of their own choosing; the turn loop runs on its
// thread's strand. push() posts each value to the strand (so values arrive in push order per pushing
// thread, and never concurrently with the coroutine); next() suspends the coroutine until a value is
// there.
//
// The consumer owns the inbox (shared with the values on their way to it); producers hold a Sender, which
// does not keep it alive. A producer may report long after anyone listens: a tool finishing after an
// interrupt, a model transfer that ends after the engine is gone. Its value is then dropped, and it never
// touches the strand or the io_context: a strand must not outlive its io_context, so only the engine's
// threads and the io_context's own queue ever hold the inbox (engine/io_lifetime.h).
#pragma once

#include <atomic>
#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <deque>
#include <memory>
#include <optional>

#include "engine/io_lifetime.h"

namespace keel {

using Strand = boost::asio::strand<boost::asio::io_context::executor_type>;

template <typename T>
class AsyncInbox : public std::enable_shared_from_this<AsyncInbox<T>> {
 public:
  // What a producer holds: pushes while the inbox and its io_context exist, drops the value otherwise.
  class Sender {
   public:
    Sender() = default;
    // Any thread. Returns whether the value was posted.
    bool push(T value) const {
      bool posted = false;
      if (!lifetime_) return posted;
      lifetime_->post_if_alive([&] {
        // Taken and released under the lifetime's lock: if this was the last reference, the inbox (and its
        // strand) goes while the io_context still exists.
        if (std::shared_ptr<AsyncInbox> inbox = inbox_.lock()) {
          inbox->post(std::move(value));
          posted = true;
        }
      });
      return posted;
    }

   private:
    friend class AsyncInbox;
    Sender(std::weak_ptr<AsyncInbox> inbox, std::shared_ptr<IoLifetime> lifetime)
        : inbox_(std::move(inbox)), lifetime_(std::move(lifetime)) {}
    std::weak_ptr<AsyncInbox> inbox_;
    std::shared_ptr<IoLifetime> lifetime_;
  };

  // `lifetime` is that of the io_context behind `strand`.
  AsyncInbox(Strand strand, std::shared_ptr<IoLifetime> lifetime)
      : strand_(std::move(strand)), lifetime_(std::move(lifetime)) {}

  Sender sender() { return Sender(this->weak_from_this(), lifetime_); }

  // For a holder of the inbox on one of the engine's threads (the io_context lives): posts the value.
  void push(T value) { post(std::move(value)); }

  // Whether a value was pushed that next() has not returned yet: the consumer will not wait for it long
  // (it is on its way to the strand). A hint, for batching work until the consumer would really block.
  bool has_queued() const { return queued_.load(std::memory_order_relaxed) > 0; }

  // On the strand, from the one coroutine that consumes this inbox.
  boost::asio::awaitable<T> next() {
    auto self = this->shared_from_this();
    return boost::asio::async_initiate<const boost::asio::use_awaitable_t<>&, void(T)>(
        [self](boost::asio::any_completion_handler<void(T)> handler) {
          self->waiter_.emplace(std::move(handler));
          // Deliver from a fresh handler, never from inside the initiating function.
          boost::asio::post(self->strand_, [self] { self->deliver(); });
        },
        boost::asio::use_awaitable);
  }

 private:
  void post(T value) {
    queued_.fetch_add(1, std::memory_order_relaxed);
    boost::asio::post(strand_, [self = this->shared_from_this(), value = std::move(value)]() mutable {
      self->values_.push_back(std::move(value));
      self->deliver();
    });
  }

  void deliver() {
    if (!waiter_ || values_.empty()) return;
    auto handler = std::move(*waiter_);
    waiter_.reset();
    T value = std::move(values_.front());
    values_.pop_front();
    queued_.fetch_sub(1, std::memory_order_relaxed);
    std::move(handler)(std::move(value));
  }

  Strand strand_;
  const std::shared_ptr<IoLifetime> lifetime_;
  std::deque<T> values_;
  std::atomic<size_t> queued_{0};
  std::optional<boost::asio::any_completion_handler<void(T)>> waiter_;
};

}  // namespace keel
