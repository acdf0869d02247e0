// browser/cdp/event_waiter.h — waits for the first CDP event a predicate accepts.
//
// It listens from its construction, so the way to never miss an event is: construct the waiter, then send
// the command that causes the event, then co_await wait(). An accepted event that came before wait() is kept
// and returned at once. wait() ends with the event, or browser.cdp_timeout after `timeout`, or `cancelled`
// when the token fires, or the connection's error when the client closes.
//
// Threading: construct, wait and destroy it on the client's executor. One wait() at a time; after one
// returns an event, the next wait() returns the next accepted event.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>

#include "browser/cdp/cdp_client.h"
#include "keel/cancellation.h"
#include "keel/error.h"

namespace keel::browser {

class EventWaiter {
 public:
  EventWaiter(CdpClient& client, std::function<bool(const CdpEvent&)> accept);
  EventWaiter(const EventWaiter&) = delete;
  EventWaiter& operator=(const EventWaiter&) = delete;

  // Parameters by value (coroutine).
  boost::asio::awaitable<Result<CdpEvent>> wait(std::chrono::milliseconds timeout, CancellationToken cancel);

 private:
  // Shared with the handlers, which may run after this waiter is gone (a posted cancellation).
  struct State {
    explicit State(const boost::asio::any_io_executor& ex) : signal(ex) {}
    std::function<bool(const CdpEvent&)> accept;
    boost::asio::steady_timer signal;
    std::optional<Result<CdpEvent>> outcome;
    void finish(Result<CdpEvent> result) {
      if (outcome) return;
      outcome = std::move(result);
      signal.cancel();
    }
  };
  std::shared_ptr<State> state_;
  CdpClient::Subscription events_;
  CdpClient::Subscription close_;
};

}  // namespace keel::browser
