// engine/async_inbox.h — hands values from any thread to a coroutine running on a strand.
//
// Providers and tools report through callbacks on threads of their own choosing; the turn loop runs on its
// thread's strand. push() posts each value to the strand (so values arrive in push order per pushing
// thread, and never concurrently with the coroutine); next() suspends the coroutine until a value is
// there. Owned through shared_ptr so late callbacks (a tool finishing after an interrupt) stay safe.
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

namespace keel {

using Strand = boost::asio::strand<boost::asio::io_context::executor_type>;

template <typename T>
class AsyncInbox : public std::enable_shared_from_this<AsyncInbox<T>> {
 public:
  explicit AsyncInbox(Strand strand) : strand_(std::move(strand)) {}

  // Any thread.
  void push(T value) {
    queued_.fetch_add(1, std::memory_order_relaxed);
    boost::asio::post(strand_, [self = this->shared_from_this(), value = std::move(value)]() mutable {
      self->values_.push_back(std::move(value));
      self->deliver();
    });
  }

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
  std::deque<T> values_;
  std::atomic<size_t> queued_{0};
  std::optional<boost::asio::any_completion_handler<void(T)>> waiter_;
};

}  // namespace keel
