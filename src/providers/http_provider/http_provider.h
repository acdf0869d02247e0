// providers/http_provider/http_provider.h — a Provider (keel/provider.h) that talks to a model over HTTP and
// Server-Sent Events in one of the three wire formats: the HTTP client, the SSE parser and the format's
// codec composed, with retries.
//
// One stream() is one exchange: the request is encoded once (the body is kept for retries), sent with the
// credential read at that moment (so a key rotated behind the same reference is used by the next request),
// and the 2xx response's SSE events are decoded into ProviderEvents as the bytes arrive. Guarantees, on top
// of the Provider contract:
//   - retries (RetryPolicy: backoff with jitter, Retry-After honoured) only while nothing of the attempt
//     reached the sink: a 429 / 5xx / overloaded answer, an overloaded error event before any output, a
//     retryable transport failure;
//   - a 2xx response that is not an event stream is provider.not_sse; an error status is decoded by the
//     format's decode_http_error (provider.unauthorized, provider.rate_limited, ...);
//   - a decode error aborts the transfer at once and ends the exchange with that error;
//   - cancellation aborts the transfer (or the wait before a retry) at once, ending with `cancelled`;
//   - no error message carries the key or request headers.
// Endpoints: OpenAI kinds POST base_url + "/chat/completions" or "/responses" (base_url ends in /v1);
// Anthropic POSTs base_url + "/v1/messages".
//
// Thread-safe: stream() may be called from any thread; events arrive on the HTTP client's worker thread
// (and the scheduler's, for a retry that fails before any response).
//
// Lifetime: an exchange may outlive the provider (the engine that asked for it may already be gone when
// its transfer ends). Destroying the provider stops every exchange it started: a wait before a retry ends
// at once with `cancelled`, a transfer in flight is aborted and ends with `cancelled` when the client
// reports it, and no exchange starts another attempt (so the credential callback is never called after the
// destructor returns). What an exchange still reads afterwards (options, codec, retry policy) it shares
// with the provider, so it is never freed under it.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "keel/clock.h"
#include "keel/provider.h"
#include "keel/scheduler.h"
#include "providers/http/http_client.h"
#include "providers/http/retry_policy.h"
#include "providers/model_capabilities.h"
#include "providers/wire/wire_codec.h"

namespace keel::providers {

struct HttpProviderOptions {
  std::string name = "http";  // for logs and errors ("anthropic", "local-llama")
  WireFormat format = WireFormat::kOpenAiChat;
  std::string base_url;
  ModelCapabilities capabilities;
  std::vector<HttpHeader> extra_headers;
  // The API key, read for each attempt; null when the server needs none. Errors end the exchange.
  std::function<Result<std::string>()> api_key;
  std::chrono::milliseconds connect_timeout{10'000};
  std::chrono::milliseconds idle_timeout{120'000};
  RetryOptions retry;
  CodecOptions codec;
};

class HttpProvider final : public Provider {
 public:
  // `client`, `scheduler` and `clock` must outlive the provider and every exchange it started.
  HttpProvider(HttpProviderOptions options, HttpClient& client, Scheduler& scheduler, const Clock& clock,
               RetryPolicy::Random random);
  ~HttpProvider() override;
  HttpProvider(const HttpProvider&) = delete;
  HttpProvider& operator=(const HttpProvider&) = delete;
  std::string name() const override;
  void stream(ProviderRequest request, CancellationToken cancel, std::shared_ptr<ProviderSink> sink) override;

  // The URL requests of `format` go to from `base_url`.
  static std::string endpoint(WireFormat format, const std::string& base_url);

 private:
  class Exchange;
  struct Shared;
  std::shared_ptr<Shared> shared_;
};

}  // namespace keel::providers
