// engine/model_stream.h — one model request streamed to its end: the one stream-and-collect loop of the
// turn's step, its compaction summary and a thread's title.
//
// stream_model() sends the request and hands every provider event, on the caller's strand, to `collect`
// until the stream ends, `collect` refuses an event (the request is then abandoned: its own cancellation
// fires), or `cancel` fires (an interrupt: the request is cancelled and the loop returns at once). Nothing
// the provider reports after it returned reaches the caller. Coroutine: parameters by value.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <functional>
#include <memory>
#include <optional>

#include "engine/async_inbox.h"
#include "engine/io_lifetime.h"
#include "keel/cancellation.h"
#include "keel/provider.h"

namespace keel {

struct ModelStream {
  Provider* provider = nullptr;  // must outlive the request (the engine's providers do)
  ProviderRequest request{};
  Strand strand;  // the caller's
  std::shared_ptr<IoLifetime> io_lifetime;
  CancellationToken cancel;  // an interrupt
  // Each event in arrival order; an error abandons the request and becomes the outcome's error.
  std::function<Result<void>(const ProviderEvent&)> collect;
  // Called before each wait for the next input, with whether input is already on its way (for batching).
  std::function<void(bool input_queued)> before_wait;
};

struct StreamOutcome {
  bool interrupted = false;
  std::optional<Error> error;  // the stream failed, or `collect` refused an event
};

boost::asio::awaitable<StreamOutcome> stream_model(ModelStream stream);

}  // namespace keel
