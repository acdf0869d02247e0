// providers/http_provider/http_provider.cc — see http_provider.h.
#include "providers/http_provider/http_provider.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "keel/error_codes.h"
#include "providers/provider_errors.h"
#include "providers/wire/wire_stream.h"
#include "util/thread_annotations.h"

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

// What the provider and its exchanges share: the settings an exchange reads until its end, which may come
// after the provider is gone, and the exchanges still running, which the provider's destructor stops.
struct HttpProvider::Shared {
  Shared(HttpProviderOptions options_in, HttpClient& client_in, Scheduler& scheduler_in, const Clock& clock,
         RetryPolicy::Random random)
      : options(std::move(options_in)),
        codec(make_wire_codec(options.format, options.codec)),
        client(client_in),
        scheduler(scheduler_in),
        retry(options.retry, &clock, std::move(random)) {}

  const HttpProviderOptions options;
  const std::unique_ptr<WireCodec> codec;
  HttpClient& client;
  Scheduler& scheduler;
  RetryPolicy retry;

  Mutex mu;
  bool stopped GUARDED_BY(mu) = false;                          // the provider is being destroyed
  std::vector<std::weak_ptr<Exchange>> running GUARDED_BY(mu);  // expired entries are dropped as it grows
  size_t running_after_prune GUARDED_BY(mu) = 8;                // running's size after the last pruning
};

// One stream(): its attempts, from the encoded body to exactly one on_done.
class HttpProvider::Exchange final : public HttpStreamHandler, public std::enable_shared_from_this<Exchange> {
 public:
  Exchange(std::shared_ptr<Shared> shared, std::string body, CancellationToken cancel,
           std::shared_ptr<ProviderSink> sink)
      : provider_(std::move(shared)),
        body_(std::move(body)),
        cancel_(std::move(cancel)),
        sink_(std::move(sink)) {}

  void begin() {
    std::weak_ptr<Exchange> weak = weak_from_this();
    // The caller's cancellation reaches whatever is in progress: the transfer (through its own token) or
    // the wait before a retry. (Weak: the exchange owns the registration.)
    on_cancel_ = cancel_.on_cancel([weak] {
      if (auto self = weak.lock()) self->cancelled();
    });
    start_attempt();
  }

  // The provider is being destroyed: no further attempt starts, and what is in progress is cancelled.
  void stop() {
    {
      MutexLock guard(mu_);
      stopped_ = true;
    }
    cancelled();
  }

  void on_response_head(int status, const std::vector<HttpHeader>& headers) override {
    MutexLock guard(mu_);
    status_ = status;
    if (auto value = find_header(headers, "retry-after")) retry_after_ = std::string(*value);
    if (auto value = find_header(headers, "retry-after-ms")) retry_after_ms_ = std::string(*value);
    if (!is_success(status)) return;
    const std::string type = lower(find_header(headers, "content-type").value_or(""));
    if (type.find("text/event-stream") == std::string::npos) {
      fail_attempt(Error(codes::kProviderNotSse, provider_->options.name + " answered " +
                                                     std::to_string(status) + " with content type '" +
                                                     type.substr(0, 80) + "', not an event stream"));
      return;
    }
    stream_.emplace(provider_->codec->new_decoder());
  }

  void on_body(std::string_view chunk) override {
    std::vector<ProviderEvent> events;
    {
      MutexLock guard(mu_);
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
    FailedAttempt attempt;
    {
      MutexLock guard(mu_);
      if (cancel_.is_cancelled() || stopped_) {
        failure = cancelled_error();
      } else if (attempt_error_) {
        failure = *attempt_error_;
        overloaded = failure->code() == codes::kProviderOverloaded;
      } else if (!result) {
        failure = result.error();
        transport_retryable = result.error().retryable();
      } else if (!is_success(status_)) {
        http_status = status_;
        failure = decode_http_error(provider_->options.format, status_, error_body_, retry_after_);
        overloaded = failure->code() == codes::kProviderOverloaded;
      } else if (stream_) {
        if (auto finished = stream_->finish(events); !finished) failure = finished.error();
        output_streamed_ = output_streamed_ || !events.empty();
      } else {
        failure = Error(codes::kProviderProtocolError, provider_->options.name + " sent no response");
      }
      attempt = FailedAttempt{.attempt = attempt_,
                              .output_streamed = output_streamed_,
                              .http_status = http_status,
                              .retry_after = retry_after_,
                              .retry_after_ms = retry_after_ms_,
                              .overloaded = overloaded,
                              .transport_retryable = transport_retryable};
    }
    for (ProviderEvent& event : events) sink_->on_event(std::move(event));
    if (!failure) return done({});
    if (failure->code() != codes::kCancelled) {
      const RetryDecision decision = provider_->retry.decide(attempt);
      if (decision.retry) return schedule_retry(decision.delay);
    }
    done(fail(*failure));
  }

 private:
  // Records the attempt's error and aborts its transfer; on_complete then reports it.
  void fail_attempt(Error error) REQUIRES(mu_) {
    if (!attempt_error_) attempt_error_ = std::move(error);
    if (attempt_cancel_) attempt_cancel_->cancel("the response could not be read");
  }

  void start_attempt() {
    bool stopping = false;
    HttpRequest request;
    request.url = endpoint(provider_->options.format, provider_->options.base_url);
    request.body = body_;
    request.connect_timeout = provider_->options.connect_timeout;
    request.idle_timeout = provider_->options.idle_timeout;
    request.headers = {{"content-type", "application/json"}, {"accept", "text/event-stream"}};
    if (provider_->options.api_key) {
      auto key = provider_->options.api_key();
      if (!key) return done(fail(key.error()));
      if (provider_->options.format == WireFormat::kAnthropicMessages) {
        request.headers.push_back({"x-api-key", std::move(*key)});
      } else {
        request.headers.push_back({"authorization", "Bearer " + std::move(*key)});
      }
    }
    if (provider_->options.format == WireFormat::kAnthropicMessages) {
      request.headers.push_back({"anthropic-version", "2023-06-01"});
    }
    for (const HttpHeader& header : provider_->options.extra_headers) request.headers.push_back(header);
    auto attempt_cancel = std::make_shared<CancellationSource>();
    {
      MutexLock guard(mu_);
      // Checked where the attempt's source is published: stop() either sees this source and cancels it,
      // or this sees stopped_.
      if (stopped_) stopping = true;
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
    if (stopping) return done(fail(cancelled_error()));
    if (cancel_.is_cancelled()) attempt_cancel->cancel("cancelled");
    provider_->client.start(std::move(request), attempt_cancel->token(), shared_from_this());
  }

  void schedule_retry(std::chrono::milliseconds delay) {
    auto self = shared_from_this();
    {
      MutexLock guard(mu_);
      if (finished_) return;
      if (!stopped_) {
        retry_task_ = provider_->scheduler.schedule_after(delay, [self] { self->start_attempt(); });
        return;
      }
    }
    done(fail(cancelled_error()));
  }

  void cancelled() {
    std::unique_ptr<ScheduledTask> pending_retry;
    std::shared_ptr<CancellationSource> attempt;
    {
      MutexLock guard(mu_);
      pending_retry = std::move(retry_task_);
      attempt = attempt_cancel_;
    }
    if (attempt) attempt->cancel("cancelled");
    // A retry that was waiting: no transfer will complete, so the exchange ends here. (Destroying the task
    // waits for a retry that is starting at this moment; that attempt then sees the cancelled source.)
    if (pending_retry) {
      pending_retry.reset();
      done(fail(cancelled_error()));
    }
  }

  Error cancelled_error() const {
    return Error(codes::kCancelled, "the request to " + provider_->options.name + " was cancelled");
  }

  void done(Result<void> result) {
    {
      MutexLock guard(mu_);
      if (finished_) return;
      finished_ = true;
    }
    sink_->on_done(std::move(result));
    sink_.reset();
  }

  const std::shared_ptr<Shared> provider_;
  const std::string body_;
  CancellationToken cancel_;
  std::shared_ptr<ProviderSink> sink_;
  CancellationRegistration on_cancel_;

  Mutex mu_;
  int attempt_ GUARDED_BY(mu_) = 0;
  int status_ GUARDED_BY(mu_) = 0;
  std::string error_body_ GUARDED_BY(mu_);
  std::optional<std::string> retry_after_ GUARDED_BY(mu_);
  std::optional<std::string> retry_after_ms_ GUARDED_BY(mu_);
  std::optional<Error> attempt_error_ GUARDED_BY(mu_);
  std::optional<WireStream> stream_ GUARDED_BY(mu_);
  bool output_streamed_ GUARDED_BY(mu_) = false;
  bool finished_ GUARDED_BY(mu_) = false;
  bool stopped_ GUARDED_BY(mu_) = false;  // the provider is being destroyed
  std::shared_ptr<CancellationSource> attempt_cancel_ GUARDED_BY(mu_);
  std::unique_ptr<ScheduledTask> retry_task_ GUARDED_BY(mu_);
};

HttpProvider::HttpProvider(HttpProviderOptions options, HttpClient& client, Scheduler& scheduler,
                           const Clock& clock, RetryPolicy::Random random)
    : shared_(std::make_shared<Shared>(std::move(options), client, scheduler, clock, std::move(random))) {}

HttpProvider::~HttpProvider() {
  std::vector<std::weak_ptr<Exchange>> running;
  {
    MutexLock guard(shared_->mu);
    shared_->stopped = true;
    running.swap(shared_->running);
  }
  for (const std::weak_ptr<Exchange>& weak : running) {
    if (std::shared_ptr<Exchange> exchange = weak.lock()) exchange->stop();
  }
}

std::string HttpProvider::name() const { return shared_->options.name; }

void HttpProvider::stream(ProviderRequest request, CancellationToken cancel,
                          std::shared_ptr<ProviderSink> sink) {
  auto body = shared_->codec->encode(request, shared_->options.capabilities);
  if (!body) return sink->on_done(fail(body.error()));
  auto exchange = std::make_shared<Exchange>(shared_, body->dump(), std::move(cancel), sink);
  {
    MutexLock guard(shared_->mu);
    // A call racing the destructor is the caller's bug (the provider must outlive its calls), but it still
    // ends cleanly instead of starting a transfer nobody will stop.
    if (shared_->stopped) {
      exchange.reset();
    } else {
      // Ended exchanges are dropped whenever the list has doubled, so it stays about as long as what runs.
      if (shared_->running.size() >= 2 * shared_->running_after_prune) {
        std::erase_if(shared_->running, [](const std::weak_ptr<Exchange>& weak) { return weak.expired(); });
        shared_->running_after_prune = std::max<size_t>(shared_->running.size(), 8);
      }
      shared_->running.push_back(exchange);
    }
  }
  if (!exchange) {
    return sink->on_done(
        fail(codes::kCancelled, "the request to " + shared_->options.name + " was cancelled"));
  }
  exchange->begin();
}

}  // namespace keel::providers
