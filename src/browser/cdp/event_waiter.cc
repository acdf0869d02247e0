// browser/cdp/event_waiter.cc — see event_waiter.h.
#include "browser/cdp/event_waiter.h"

#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <string>

#include "browser/browser_errors.h"

namespace keel::browser {

namespace asio = boost::asio;

namespace {

// The outcome. After an event the waiter is ready to accept the next one; an error (the connection closed)
// stays, so a later wait() returns it at once.
template <typename State>
Result<CdpEvent> take(State& state) {
  if (!state.outcome->has_value()) return *state.outcome;
  Result<CdpEvent> outcome = std::move(*state.outcome);
  state.outcome.reset();
  return outcome;
}

}  // namespace

EventWaiter::EventWaiter(CdpClient& client, std::function<bool(const CdpEvent&)> accept)
    : state_(std::make_shared<State>(client.executor())) {
  state_->accept = std::move(accept);
  std::weak_ptr<State> weak = state_;
  events_ = client.listen([weak](const CdpEvent& event) {
    auto state = weak.lock();
    if (state && !state->outcome && state->accept(event)) state->finish(event);
  });
  close_ = client.on_close([weak](const Error& why) {
    if (auto state = weak.lock()) state->finish(fail(why));
  });
}

asio::awaitable<Result<CdpEvent>> EventWaiter::wait(std::chrono::milliseconds timeout,
                                                    CancellationToken cancel) {
  std::shared_ptr<State> state = state_;
  if (state->outcome) co_return take(*state);
  std::weak_ptr<State> weak = state;
  asio::any_io_executor ex = state->signal.get_executor();
  CancellationRegistration registration = cancel.on_cancel([weak, ex] {
    asio::post(ex, [weak] {
      if (auto locked = weak.lock()) locked->finish(fail(codes::kCancelled, "the wait was cancelled"));
    });
  });
  state->signal.expires_after(timeout);
  boost::system::error_code ec;
  co_await state->signal.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  if (state->outcome) co_return take(*state);
  co_return fail(codes::kBrowserCdpTimeout,
                 "no awaited CDP event within " + std::to_string(timeout.count()) + " ms",
                 /*retryable=*/true);
}

}  // namespace keel::browser
