// The HttpProvider against the scripted model server, in-process, for each wire format: streamed text,
// reasoning with signatures, parallel tool calls, usage; retries that honour Retry-After and stop once
// output was streamed; cancellation; and each bad answer as a coded error.
#include "providers/http_provider/http_provider.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <string>
#include <vector>

#include "keel/error_codes.h"
#include "model_server/model_server.h"
#include "providers/provider_errors.h"
#include "util/overloaded.h"
#include "util/thread_scheduler.h"

namespace keel::providers {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

// Collects one stream's events and its end.
class RecordingSink final : public ProviderSink {
 public:
  void on_event(ProviderEvent event) override {
    std::lock_guard<std::mutex> guard(mu_);
    events_.push_back(std::move(event));
    cv_.notify_all();
  }
  void on_done(Result<void> result) override {
    std::lock_guard<std::mutex> guard(mu_);
    ++done_calls_;
    result_ = std::move(result);
    cv_.notify_all();
  }
  // Waits for on_done (a hang guard bounds it).
  Result<void> wait() {
    std::unique_lock<std::mutex> lock(mu_);
    EXPECT_TRUE(cv_.wait_for(lock, 30s, [&] { return result_.has_value(); })) << "the stream never ended";
    return result_.value_or(fail(codes::kInternal, "no end"));
  }
  bool wait_for_events(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, 30s, [&] { return events_.size() >= n; });
  }
  std::vector<ProviderEvent> events() const {
    std::lock_guard<std::mutex> guard(mu_);
    return events_;
  }
  int done_calls() const {
    std::lock_guard<std::mutex> guard(mu_);
    return done_calls_;
  }
  std::string text() const {
    std::string out;
    for (const ProviderEvent& event : events()) {
      if (auto* delta = std::get_if<provider_event::TextDelta>(&event)) out += delta->text;
    }
    return out;
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<ProviderEvent> events_;
  std::optional<Result<void>> result_;
  int done_calls_ = 0;
};

// The thread scheduler, telling the test when a retry has been scheduled (the exchange is then waiting).
class ObservedScheduler final : public Scheduler {
 public:
  std::unique_ptr<ScheduledTask> schedule_after(std::chrono::milliseconds delay,
                                                std::function<void()> callback) override {
    std::unique_ptr<ScheduledTask> task = scheduler_.schedule_after(delay, std::move(callback));
    std::lock_guard<std::mutex> guard(mu_);
    ++scheduled_;
    cv_.notify_all();
    return task;
  }
  bool wait_for_scheduled(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, 30s, [&] { return scheduled_ >= n; });
  }

 private:
  ThreadScheduler scheduler_;
  std::mutex mu_;
  std::condition_variable cv_;
  int scheduled_ = 0;
};

class HttpProviderTest : public ::testing::TestWithParam<WireFormat> {
 protected:
  // Starts the server with `responses` (script JSON) and a provider of the test's format pointed at it.
  void serve(json responses, HttpProviderOptions options = {}) {
    json script = {{"responses", std::move(responses)}};
    if (key_) script["api_key"] = *key_;
    auto parsed = model_server::parse_script(script);
    ASSERT_TRUE(parsed) << parsed.error().to_string();
    model_server::ServerOptions server_options;
    server_options.script = std::move(*parsed);
    auto server = model_server::ModelServer::start(std::move(server_options));
    ASSERT_TRUE(server) << server.error().to_string();
    server_ = std::move(*server);
    options.format = GetParam();
    options.name = "scripted";
    options.base_url = server_->base_url() + (GetParam() == WireFormat::kAnthropicMessages ? "" : "/v1");
    options.capabilities.vision = true;
    options.capabilities.reasoning = true;
    options.retry.base_delay = 1ms;
    options.retry.max_delay = 5ms;
    if (key_ && !options.api_key) options.api_key = [key = *key_]() -> Result<std::string> { return key; };
    provider_ = std::make_unique<HttpProvider>(std::move(options), client_, scheduler_, clock_,
                                               RetryPolicy::seeded_random(7));
  }

  std::shared_ptr<RecordingSink> run(CancellationToken cancel = CancellationToken()) {
    auto sink = std::make_shared<RecordingSink>();
    std::vector<Message> messages(1);
    messages[0].content.push_back(ContentBlock{.text = "what is the weather?"});
    ProviderRequest request;
    request.model = "test-model";
    request.system_prompt = "be brief";
    request.messages = messages;
    request.tools.push_back(
        ProviderTool{"get_weather", "the weather of a city",
                     json{{"type", "object"}, {"properties", {{"city", {{"type", "string"}}}}}}});
    provider_->stream(std::move(request), std::move(cancel), sink);
    return sink;
  }

  SystemClock clock_;
  ObservedScheduler scheduler_;
  CurlHttpClient client_;
  std::optional<std::string> key_;
  std::unique_ptr<model_server::ModelServer> server_;
  std::unique_ptr<HttpProvider> provider_;
};

TEST_P(HttpProviderTest, StreamsTextReasoningParallelCallsAndUsageEndingInOneFinish) {
  serve(json::array(
      {{{"usage", {{"input_tokens", 120}, {"output_tokens", 40}, {"cached_input_tokens", 100}}},
        {"steps",
         {{{"type", "reasoning"}, {"text", "Two cities."}, {"signature", "c2ln"}, {"chunk_size", 4}},
          {{"type", "text"}, {"text", "Let me check both."}, {"chunk_size", 3}},
          {{"type", "tool_calls"},
           {"chunk_size", 5},
           {"calls",
            {{{"id", "call_1"}, {"name", "get_weather"}, {"arguments", {{"city", "Paris"}}}},
             {{"id", "call_2"}, {"name", "get_weather"}, {"arguments", {{"city", "Rome"}}}}}}}}}}}));
  auto sink = run();
  ASSERT_TRUE(sink->wait()) << sink->wait().error().to_string();
  EXPECT_EQ(sink->text(), "Let me check both.");
  std::string reasoning;
  std::map<int, std::string> arguments;
  std::map<int, std::string> names;
  int finishes = 0;
  std::optional<TokenUsage> usage;
  for (const ProviderEvent& event : sink->events()) {
    std::visit(Overloaded{[&](const provider_event::ReasoningDelta& r) { reasoning += r.text; },
                          [&](const provider_event::ToolCallStart& s) { names[s.index] = s.name; },
                          [&](const provider_event::ToolCallDelta& d) {
                            arguments[d.index] += d.arguments_fragment;
                          },
                          [&](const provider_event::Usage& u) { usage = u.usage; },
                          [&](const provider_event::Finish& f) {
                            ++finishes;
                            EXPECT_EQ(f.reason, StopReason::kToolUse);
                          },
                          [](const auto&) {}},
               event);
  }
  EXPECT_EQ(reasoning, "Two cities.");
  ASSERT_EQ(arguments.size(), 2u);
  EXPECT_EQ(json::parse(arguments.begin()->second), (json{{"city", "Paris"}}));
  EXPECT_EQ(json::parse(std::next(arguments.begin())->second), (json{{"city", "Rome"}}));
  EXPECT_EQ(finishes, 1);
  ASSERT_TRUE(usage.has_value());
  EXPECT_EQ(usage->input_tokens, 120);
  EXPECT_EQ(usage->cached_input_tokens, 100);
  EXPECT_EQ(usage->output_tokens, 40);
  std::holds_alternative<provider_event::Finish>(sink->events().back())
      ? void()
      : ADD_FAILURE() << "Finish is not the last event";
  // The request went to the format's endpoint with the model, the tools and stream: true.
  const auto requests = server_->requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0]["body"]["model"], "test-model");
  EXPECT_EQ(requests[0]["body"]["stream"], true);
  EXPECT_EQ(sink->done_calls(), 1);
}

TEST_P(HttpProviderTest, A429IsRetriedAfterItsRetryAfterAndTheKeyTravelsInTheFormatsHeader) {
  key_ = "sk-test-key-123";
  serve(json::array({{{"steps", {{{"type", "error"}, {"status", 429}, {"retry_after", 0}}}}},
                     {{"steps", {{{"type", "text"}, {"text", "ok"}}}}}}));
  auto sink = run();
  ASSERT_TRUE(sink->wait());
  EXPECT_EQ(sink->text(), "ok");
  const auto requests = server_->requests();
  ASSERT_EQ(requests.size(), 2u);
  const json& headers = requests[1]["headers"];
  if (GetParam() == WireFormat::kAnthropicMessages) {
    EXPECT_EQ(headers["x-api-key"], "[redacted]");
    EXPECT_EQ(headers["anthropic-version"], "2023-06-01");
  } else {
    EXPECT_EQ(headers["authorization"], "Bearer [redacted]");
  }
}

TEST_P(HttpProviderTest, AWrongKeyIsUnauthorizedAndNotRetriedAndTheKeyIsInNoMessage) {
  key_ = "sk-right";
  HttpProviderOptions options;
  options.api_key = []() -> Result<std::string> { return std::string("sk-wrong-secret-value"); };
  serve(json::array({{{"steps", {{{"type", "text"}, {"text", "never"}}}}}}), std::move(options));
  auto sink = run();
  auto result = sink->wait();
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code(), codes::kProviderUnauthorized);
  EXPECT_FALSE(result.error().retryable());
  EXPECT_EQ(result.error().message().find("sk-wrong-secret-value"), std::string::npos);
  EXPECT_EQ(server_->requests().size(), 1u);
}

TEST_P(HttpProviderTest, AnErrorAfterOutputWasStreamedIsNotRetried) {
  serve(json::array({{{"steps",
                       {{{"type", "text"}, {"text", "partial answer"}},
                        {{"type", "error"}, {"error_type", "overloaded_error"}, {"message", "busy"}}}}},
                     {{"steps", {{{"type", "text"}, {"text", "second"}}}}}}));
  auto sink = run();
  auto result = sink->wait();
  ASSERT_FALSE(result);
  EXPECT_EQ(sink->text(), "partial answer");
  EXPECT_EQ(server_->requests().size(), 1u);
}

TEST_P(HttpProviderTest, ACutStreamIsTruncatedAndANonSseAnswerIsNotSse) {
  serve(json::array(
      {{{"steps", {{{"type", "text"}, {"text", "half"}}, {{"type", "disconnect"}}}}},
       {{"steps", {{{"type", "not_sse"}, {"content_type", "text/html"}, {"body", "<html>proxy</html>"}}}}}}));
  auto cut = run();
  auto first = cut->wait();
  ASSERT_FALSE(first);
  EXPECT_TRUE(first.error().code() == codes::kProviderStreamTruncated ||
              first.error().code() == "provider.connection_lost")
      << first.error().to_string();
  auto page = run();
  auto second = page->wait();
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().code(), codes::kProviderNotSse);
}

TEST_P(HttpProviderTest, MalformedEventJsonEndsTheStreamWithACodedError) {
  serve(json::array({{{"steps", {{{"type", "text"}, {"text", "a"}}, {{"type", "malformed"}}}}}}));
  auto sink = run();
  auto result = sink->wait();
  ASSERT_FALSE(result);
  EXPECT_TRUE(result.error().code().starts_with("provider.")) << result.error().to_string();
  EXPECT_EQ(sink->done_calls(), 1);
}

TEST_P(HttpProviderTest, CancellingAHangingStreamEndsItCancelledAtOnce) {
  serve(json::array({{{"steps", {{{"type", "text"}, {"text", "thinking..."}}, {{"type", "hang"}}}}}}));
  CancellationSource cancel;
  auto sink = run(cancel.token());
  ASSERT_TRUE(sink->wait_for_events(1));
  cancel.cancel("interrupted");
  auto result = sink->wait();
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code(), codes::kCancelled);
  EXPECT_EQ(sink->done_calls(), 1);
}

TEST_P(HttpProviderTest, CancellingDuringTheWaitBeforeARetryEndsItCancelled) {
  serve(json::array({{{"steps", {{{"type", "error"}, {"status", 503}, {"retry_after", 30}}}}},
                     {{"steps", {{{"type", "text"}, {"text", "too late"}}}}}}));
  // Retry-After of 30 s is honoured (capped at a minute), so the exchange waits.
  CancellationSource cancel;
  auto sink = run(cancel.token());
  ASSERT_TRUE(scheduler_.wait_for_scheduled(1));
  cancel.cancel("interrupted");
  auto result = sink->wait();
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code(), codes::kCancelled);
  EXPECT_EQ(server_->requests().size(), 1u);
}

// The engine that asked may be gone before a transfer ends (keel run interrupted, then exiting): destroying
// the provider ends its exchanges, and what ends later reads nothing of the destroyed provider.
TEST_P(HttpProviderTest, DestroyingTheProviderEndsAHangingExchangeCancelled) {
  serve(json::array({{{"steps", {{{"type", "text"}, {"text", "thinking..."}}, {{"type", "hang"}}}}}}));
  auto sink = run();
  ASSERT_TRUE(sink->wait_for_events(1));
  provider_.reset();
  auto result = sink->wait();
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code(), codes::kCancelled);
  EXPECT_EQ(sink->done_calls(), 1);
}

TEST_P(HttpProviderTest, DestroyingTheProviderDuringTheWaitBeforeARetryEndsItAndStartsNoAttempt) {
  int key_reads = 0;
  HttpProviderOptions options;
  // Read on the test's thread for the first attempt and on the scheduler's for a retry; never after reset.
  options.api_key = [&key_reads]() -> Result<std::string> {
    ++key_reads;
    return std::string("k");
  };
  serve(json::array({{{"steps", {{{"type", "error"}, {"status", 503}, {"retry_after", 30}}}}},
                     {{"steps", {{{"type", "text"}, {"text", "too late"}}}}}}),
        std::move(options));
  auto sink = run();
  ASSERT_TRUE(scheduler_.wait_for_scheduled(1));
  provider_.reset();
  // Ended by the destructor itself: no transfer was running to report it.
  EXPECT_EQ(sink->done_calls(), 1);
  auto result = sink->wait();
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code(), codes::kCancelled);
  EXPECT_NE(result.error().message().find("scripted"), std::string::npos) << result.error().message();
  EXPECT_EQ(server_->requests().size(), 1u);
  EXPECT_EQ(key_reads, 1);
}

INSTANTIATE_TEST_SUITE_P(EachWireFormat, HttpProviderTest,
                         ::testing::Values(WireFormat::kOpenAiChat, WireFormat::kOpenAiResponses,
                                           WireFormat::kAnthropicMessages),
                         [](const ::testing::TestParamInfo<WireFormat>& param) {
                           std::string name(to_string(param.param));
                           for (char& c : name) c = c == '-' ? '_' : c;
                           return name;
                         });

TEST(HttpProviderEndpointTest, OpenAiBasesEndInV1AndAnthropicAddsIt) {
  EXPECT_EQ(HttpProvider::endpoint(WireFormat::kOpenAiChat, "https://api.openai.com/v1/"),
            "https://api.openai.com/v1/chat/completions");
  EXPECT_EQ(HttpProvider::endpoint(WireFormat::kOpenAiResponses, "http://127.0.0.1:8080/v1"),
            "http://127.0.0.1:8080/v1/responses");
  EXPECT_EQ(HttpProvider::endpoint(WireFormat::kAnthropicMessages, "https://api.anthropic.com"),
            "https://api.anthropic.com/v1/messages");
}

}  // namespace
}  // namespace keel::providers
