// providers/http_provider/http_provider.cc — see http_provider.h.
#include "providers/http_provider/http_provider.h"

#include <mutex>
#include <optional>

#include "keel/error_codes.h"
#include "providers/provider_errors.h"
#include "providers/wire/wire_stream.h"

namespace keel::providers {
namespace {

constexpr size_t kMaxErrorBodyBytes = 64 * 1024;

bool is_success(int status) { return status >= 200 && status < 300; }

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

std::string HttpProvider::endpoint(WireFormat format, const std::string& base_url) {
  std::string base = base_url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  switch (format) {
    case WireFormat::kOpenAiChat:
      return base + "/chat/completions";
    case WireFormat::kOpenAiResponses:
      return base + "/responses";
    case WireFormat::kAnthropicMessages:
      return base + "/v1/messages";
  }
  return base;
}

// One stream(): its attempts, from the encoded body to exactly one on_done.
class HttpProvider::Exchange final : public HttpStreamHandler, public std::enable_shared_from_this<Exchange> {
 public:
  Exchange(HttpProvider& provider, std::string body, CancellationToken cancel,
           std::shared_ptr<ProviderSink> sink)
      : provider_(provider), body_(std::move(body)), cancel_(std::move(cancel)), sink_(std::move(sink)) {}

  void begin() {
    std::weak_ptr<Exchange> weak = weak_from_this();
    // The caller's cancellation reaches whatever is in progress: the transfer (through its own token) or
    // the wait before a retry. (Weak: the exchange owns the registration.)
    on_cancel_ = cancel_.on_cancel([weak] {
      if (auto self = weak.lock()) self->cancelled();
    });
    start_attempt();
  }

  void on_response_head(int status, const std::vector<HttpHeader>& headers) override {
    std::lock_guard<std::mutex> guard(mu_);
    status_ = status;
    if (auto value = find_header(headers, "retry-after")) retry_after_ = std::string(*value);
    if (auto value = find_header(headers, "retry-after-ms")) retry_after_ms_ = std::string(*value);
    if (!is_success(status)) return;
    const std::string type = lower(find_header(headers, "content-type").value_or(""));
    if (type.find("text/event-stream") == std::string::npos) {
      fail_attempt(Error(codes::kProviderNotSse, provider_.options_.name + " answered " + std::to_string(status) +
                                                     " with content type '" + type.substr(0, 80) +
                                                     "', not an event stream"));
      return;
    }
    stream_.emplace(provider_.codec_->new_decoder());
  }

  void on_body(std::string_view chunk) override {
    std::vector<ProviderEvent> events;
    {
      std::lock_guard<std::mutex> guard(mu_);
      if (attempt_error_) return;
      if (!is_success(status_)) {
        const size_t room = kMaxErrorBodyBytes - std::min(kMaxErrorBodyBytes, error_body_.size());
        error_body_.append(chunk.substr(0, room));
        return;
      }
      if (!stream_) return;
      if (auto fed = stream_->feed(chunk, events); !fed) fail_attempt(fed.error());
      output_streamed_ = output_streamed_ || !events.empty();
    }
    // Outside the lock: a sink may take its time (the engine's inbox does not).
    for (ProviderEvent& event : events) sink_->on_event(std::move(event));
  }

  void on_complete(Result<void> result) override {
    std::optional<Error> failure;
    bool overloaded = false;
    bool transport_retryable = false;
    std::optional<int> http_status;
    std::vector<ProviderEvent> events;
    {
      std::lock_guard<std::mutex> guard(mu_);
      if (cancel_.is_cancelled()) {
        failure = Error(codes::kCancelled, "the request to " + provider_.options_.name + " was cancelled");
      } else if (attempt_error_) {
        failure = *attempt_error_;
        overloaded = failure->code() == codes::kProviderOverloaded;
      } else if (!result) {
        failure = result.error();
        transport_retryable = result.error().retryable();
      } else if (!is_success(status_)) {
        http_status = status_;
        failure = decode_http_error(provider_.options_.format, status_, error_body_, retry_after_);
        overloaded = failure->code() == codes::kProviderOverloaded;
      } else if (stream_) {
        if (auto finished = stream_->finish(events); !finished) failure = finished.error();
        output_streamed_ = output_streamed_ || !events.empty();
      } else {
        failure = Error(codes::kProviderProtocolError, provider_.options_.name + " sent no response");
      }
    }
    for (ProviderEvent& event : events) sink_->on_event(std::move(event));
    if (!failure) return done({});
    if (failure->code() != codes::kCancelled) {
      const RetryDecision decision = provider_.retry_.decide(FailedAttempt{.attempt = attempt_,
                                                                           .output_streamed = output_streamed_,
                                                                           .http_status = http_status,
                                                                           .retry_after = retry_after_,
                                                                           .retry_after_ms = retry_after_ms_,
                                                                           .overloaded = overloaded,
                                                                           .transport_retryable =
                                                                               transport_retryable});
      if (decision.retry) return schedule_retry(decision.delay);
    }
    done(fail(*failure));
  }

 private:
  // Records the attempt's error and aborts its transfer; on_complete then reports it.
  void fail_attempt(Error error) {
    if (!attempt_error_) attempt_error_ = std::move(error);
    if (attempt_cancel_) attempt_cancel_->cancel("the response could not be read");
  }

  void start_attempt() {
    HttpRequest request;
    request.url = endpoint(provider_.options_.format, provider_.options_.base_url);
    request.body = body_;
    request.connect_timeout = provider_.options_.connect_timeout;
    request.idle_timeout = provider_.options_.idle_timeout;
    request.headers = {{"content-type", "application/json"}, {"accept", "text/event-stream"}};
    if (provider_.options_.api_key) {
      auto key = provider_.options_.api_key();
      if (!key) return done(fail(key.error()));
      if (provider_.options_.format == WireFormat::kAnthropicMessages) {
        request.headers.push_back({"x-api-key", std::move(*key)});
      } else {
        request.headers.push_back({"authorization", "Bearer " + std::move(*key)});
      }
    }
    if (provider_.options_.format == WireFormat::kAnthropicMessages) {
      request.headers.push_back({"anthropic-version", "2023-06-01"});
    }
    for (const HttpHeader& header : provider_.options_.extra_headers) request.headers.push_back(header);
    auto attempt_cancel = std::make_shared<CancellationSource>();
    {
      std::lock_guard<std::mutex> guard(mu_);
      ++attempt_;
      status_ = 0;
      error_body_.clear();
      retry_after_.reset();
      retry_after_ms_.reset();
      attempt_error_.reset();
      stream_.reset();
      output_streamed_ = false;
      attempt_cancel_ = attempt_cancel;
    }
    if (cancel_.is_cancelled()) attempt_cancel->cancel("cancelled");
    provider_.client_.start(std::move(request), attempt_cancel->token(), shared_from_this());
  }

  void schedule_retry(std::chrono::milliseconds delay) {
    auto self = shared_from_this();
    std::lock_guard<std::mutex> guard(mu_);
    if (finished_) return;
    retry_task_ = provider_.scheduler_.schedule_after(delay, [self] { self->start_attempt(); });
  }

  void cancelled() {
    std::unique_ptr<ScheduledTask> pending_retry;
    std::shared_ptr<CancellationSource> attempt;
    {
      std::lock_guard<std::mutex> guard(mu_);
      pending_retry = std::move(retry_task_);
      attempt = attempt_cancel_;
    }
    if (attempt) attempt->cancel("cancelled");
    // A retry that was waiting: no transfer will complete, so the exchange ends here.
    if (pending_retry) {
      pending_retry.reset();
      done(fail(codes::kCancelled, "the request to " + provider_.options_.name + " was cancelled"));
    }
  }

  void done(Result<void> result) {
    {
      std::lock_guard<std::mutex> guard(mu_);
      if (finished_) return;
      finished_ = true;
    }
    sink_->on_done(std::move(result));
    sink_.reset();
  }

  HttpProvider& provider_;
  const std::string body_;
  CancellationToken cancel_;
  std::shared_ptr<ProviderSink> sink_;
  CancellationRegistration on_cancel_;

  std::mutex mu_;
  int attempt_ = 0;
  int status_ = 0;
  std::string error_body_;
  std::optional<std::string> retry_after_;
  std::optional<std::string> retry_after_ms_;
  std::optional<Error> attempt_error_;
  std::optional<WireStream> stream_;
  bool output_streamed_ = false;
  bool finished_ = false;
  std::shared_ptr<CancellationSource> attempt_cancel_;
  std::unique_ptr<ScheduledTask> retry_task_;
};

HttpProvider::HttpProvider(HttpProviderOptions options, HttpClient& client, Scheduler& scheduler,
                           const Clock& clock, RetryPolicy::Random random)
    : options_(std::move(options)),
      codec_(make_wire_codec(options_.format, options_.codec)),
      client_(client),
      scheduler_(scheduler),
      retry_(options_.retry, &clock, std::move(random)) {}

void HttpProvider::stream(ProviderRequest request, CancellationToken cancel, std::shared_ptr<ProviderSink> sink) {
  auto body = codec_->encode(request, options_.capabilities);
  if (!body) return sink->on_done(fail(body.error()));
  auto exchange = std::make_shared<Exchange>(*this, body->dump(), std::move(cancel), std::move(sink));
  exchange->begin();
}

}  // namespace keel::providers
