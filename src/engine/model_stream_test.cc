// stream_model: the one stream-and-collect loop of a step, a compaction summary and a title. Events reach
// the collector in order; a refused event abandons the request; an interrupt returns at once and cancels
// the request; a failed stream gives its error.
#include "engine/model_stream.h"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <memory>
#include <string>
#include <vector>

namespace keel {
namespace {

namespace asio = boost::asio;

// Sends its scripted events (then ends with `done`) from inside stream(), or, with `hold`, keeps the
// sink and sends nothing.
class FakeProvider final : public Provider {
 public:
  std::string name() const override { return "fake"; }
  void stream(ProviderRequest request, CancellationToken cancel,
              std::shared_ptr<ProviderSink> sink) override {
    model = request.model;
    token = cancel;
    held = sink;
    if (hold) return;
    for (const std::string& text : texts) sink->on_event(provider_event::TextDelta{text});
    sink->on_done(done);
  }
  std::vector<std::string> texts;
  Result<void> done;
  bool hold = false;
  std::string model;
  CancellationToken token;
  std::shared_ptr<ProviderSink> held;
};

struct Collected {
  std::vector<std::string> texts;
  std::vector<bool> input_queued;  // before_wait's argument, one per wait
  std::optional<StreamOutcome> outcome;
};

asio::awaitable<void> collect_into(ModelStream stream, std::shared_ptr<Collected> into) {
  into->outcome = co_await stream_model(std::move(stream));
}

class ModelStreamTest : public ::testing::Test {
 protected:
  // Streams from `provider`; `refuse_at`: the text the collector refuses.
  void start(FakeProvider& provider, CancellationToken cancel, std::string refuse_at = "") {
    ProviderRequest request;
    request.model = "m";
    ModelStream stream{
        .provider = &provider,
        .request = std::move(request),
        .strand = strand_,
        .io_lifetime = lifetime_,
        .cancel = std::move(cancel),
        .collect = [into = collected_, refuse_at](const ProviderEvent& event) -> Result<void> {
          const auto& text = std::get<provider_event::TextDelta>(event).text;
          if (text == refuse_at) return fail("provider.protocol_error", "refused " + text);
          into->texts.push_back(text);
          return {};
        },
        .before_wait = [into = collected_](bool queued) { into->input_queued.push_back(queued); }};
    asio::co_spawn(strand_, collect_into(std::move(stream), collected_), asio::detached);
  }

  asio::io_context io_;
  Strand strand_ = asio::make_strand(io_);
  std::shared_ptr<IoLifetime> lifetime_ = std::make_shared<IoLifetime>();
  std::shared_ptr<Collected> collected_ = std::make_shared<Collected>();
};

TEST_F(ModelStreamTest, EventsReachTheCollectorInOrderUntilTheStreamEnds) {
  FakeProvider provider;
  provider.texts = {"a", "b", "c"};
  start(provider, CancellationToken());
  io_.run();
  ASSERT_TRUE(collected_->outcome.has_value());
  EXPECT_FALSE(collected_->outcome->interrupted);
  EXPECT_FALSE(collected_->outcome->error.has_value());
  EXPECT_EQ(collected_->texts, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(provider.model, "m");
  EXPECT_FALSE(provider.token.is_cancelled());
  // The provider answered inside stream(): the first wait knew input was on its way (events are batched).
  ASSERT_FALSE(collected_->input_queued.empty());
  EXPECT_TRUE(collected_->input_queued.front());
}

TEST_F(ModelStreamTest, ARefusedEventAbandonsTheRequestWithTheCollectorsError) {
  FakeProvider provider;
  provider.texts = {"a", "bad", "c"};
  start(provider, CancellationToken(), "bad");
  io_.run();
  ASSERT_TRUE(collected_->outcome.has_value());
  ASSERT_TRUE(collected_->outcome->error.has_value());
  EXPECT_EQ(collected_->outcome->error->code(), "provider.protocol_error");
  EXPECT_EQ(collected_->texts, (std::vector<std::string>{"a"}));
  EXPECT_TRUE(provider.token.is_cancelled());
}

TEST_F(ModelStreamTest, AFailedStreamGivesItsError) {
  FakeProvider provider;
  provider.texts = {"a"};
  provider.done = fail("provider.unavailable", "down");
  start(provider, CancellationToken());
  io_.run();
  ASSERT_TRUE(collected_->outcome.has_value());
  ASSERT_TRUE(collected_->outcome->error.has_value());
  EXPECT_EQ(collected_->outcome->error->code(), "provider.unavailable");
  EXPECT_FALSE(collected_->outcome->interrupted);
}

TEST_F(ModelStreamTest, AnInterruptReturnsAtOnceAndCancelsTheRequest) {
  FakeProvider provider;
  provider.hold = true;  // the provider never answers
  CancellationSource interrupt;
  start(provider, interrupt.token());
  asio::post(strand_, [&interrupt] { interrupt.cancel("interrupted"); });
  io_.run();
  ASSERT_TRUE(collected_->outcome.has_value());
  EXPECT_TRUE(collected_->outcome->interrupted);
  EXPECT_TRUE(provider.token.is_cancelled());
  ASSERT_FALSE(collected_->input_queued.empty());
  EXPECT_FALSE(collected_->input_queued.front());  // nothing was on its way: the events go out first
  // What the provider reports after the loop returned reaches nobody.
  provider.held->on_event(provider_event::TextDelta{"late"});
  io_.restart();
  io_.run();
  EXPECT_TRUE(collected_->texts.empty());
}

}  // namespace
}  // namespace keel
