#include "engine/model_stream.h"

#include <variant>

namespace keel {

namespace {

struct StreamDone {
  Result<void> result;
};
struct Interrupted {};
using StreamInput = std::variant<ProviderEvent, StreamDone, Interrupted>;
using Inbox = AsyncInbox<StreamInput>;

class InboxSink final : public ProviderSink {
 public:
  explicit InboxSink(Inbox::Sender inbox) : inbox_(std::move(inbox)) {}
  void on_event(ProviderEvent event) override { inbox_.push(std::move(event)); }
  void on_done(Result<void> result) override { inbox_.push(StreamDone{std::move(result)}); }

 private:
  Inbox::Sender inbox_;  // the provider may end after the turn (and the engine) did
};

}  // namespace

boost::asio::awaitable<StreamOutcome> stream_model(ModelStream stream) {
  auto inbox = std::make_shared<Inbox>(stream.strand, stream.io_lifetime);
  CancellationRegistration on_cancel =
      stream.cancel.on_cancel([to = inbox->sender()] { to.push(Interrupted{}); });
  // The request's own cancellation: fired by an interrupt, or here when the stream turns out malformed and
  // must be abandoned.
  auto request_cancel = std::make_shared<CancellationSource>();
  CancellationRegistration forward =
      stream.cancel.on_cancel([request_cancel] { request_cancel->cancel("interrupted"); });
  stream.provider->stream(std::move(stream.request), request_cancel->token(),
                          std::make_shared<InboxSink>(inbox->sender()));
  StreamOutcome outcome;
  for (;;) {
    if (stream.before_wait) stream.before_wait(inbox->has_queued());
    StreamInput input = co_await inbox->next();
    if (std::holds_alternative<Interrupted>(input)) {
      outcome.interrupted = true;
      break;
    }
    if (auto* done = std::get_if<StreamDone>(&input)) {
      if (!done->result) outcome.error = done->result.error();
      break;
    }
    if (auto collected = stream.collect(std::get<ProviderEvent>(input)); !collected) {
      outcome.error = collected.error();
      request_cancel->cancel("protocol error");
      break;
    }
  }
  co_return outcome;
}

}  // namespace keel
