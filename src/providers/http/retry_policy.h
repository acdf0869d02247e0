// providers/http/retry_policy.h — whether, and after how long, a failed model request is sent again.
//
// The rules:
//   - Never once any output of the attempt reached the caller: the engine has already shown or stored it,
//     and a second attempt would produce it again (the caller passes this fact in).
//   - At most `max_attempts` attempts in all.
//   - Retryable: HTTP 408, 409, 429 and every 5xx (529 is Anthropic's "overloaded"); an API's in-stream
//     "overloaded" error; a transport failure whose Error is retryable (connect, idle, lost connection).
//     Anything else (400, 401, 403, 404, 413, 422, a TLS or proxy failure) will fail the same way again.
//   - The wait is exponential backoff with full jitter — uniform in [0, min(max_delay, base·2^(n-1))) for
//     the n-th failed attempt — so many clients that failed together do not retry together.
//   - For 429, 5xx and overloaded errors a server's `retry-after-ms` (OpenAI) or `Retry-After` header
//     (delta-seconds or an HTTP-date, read against the injected clock) replaces the backoff, capped at
//     `max_retry_after`; a date in the past means "now". A header that does not parse is ignored.
// Pure logic over an injected clock and random source; decide() is as thread-safe as the random source.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "keel/clock.h"

namespace keel::providers {

struct RetryOptions {
  int max_attempts = 4;  // the first attempt included
  std::chrono::milliseconds base_delay{500};
  std::chrono::milliseconds max_delay{30'000};
  std::chrono::milliseconds max_retry_after{60'000};
};

// What the caller knows about the attempt that just failed.
struct FailedAttempt {
  int attempt = 1;                            // 1 for the first attempt
  bool output_streamed = false;               // some of its output already reached the caller
  std::optional<int> http_status;             // when the server answered with an error status
  std::optional<std::string> retry_after;     // the Retry-After header's value
  std::optional<std::string> retry_after_ms;  // the retry-after-ms header's value
  bool overloaded = false;                    // the API reported itself overloaded inside a stream
  bool transport_retryable = false;           // no status: the transport Error's retryable flag
};

struct RetryDecision {
  bool retry = false;
  std::chrono::milliseconds delay{0};
  std::string reason;  // for logs: why (not) and where the delay came from
};

class RetryPolicy {
 public:
  // A number uniformly distributed in [0, 1).
  using Random = std::function<double()>;

  // `clock` must outlive the policy.
  RetryPolicy(RetryOptions options, const Clock* clock, Random random);

  RetryDecision decide(const FailedAttempt& failure) const;

  // A seeded Mersenne Twister as a Random; not thread-safe.
  static Random seeded_random(uint64_t seed);

 private:
  std::chrono::milliseconds backoff(int attempt) const;
  std::optional<std::chrono::milliseconds> server_delay(const FailedAttempt& failure) const;

  RetryOptions options_;
  const Clock* clock_;
  Random random_;
};

}  // namespace keel::providers
