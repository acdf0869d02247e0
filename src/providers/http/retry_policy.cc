// providers/http/retry_policy.cc — backoff with full jitter, and reading a server's requested delay.
#include "providers/http/retry_policy.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <memory>
#include <random>

#include "providers/http/http_date.h"

namespace keel::providers {

namespace {

bool retryable_status(int status) { return status == 408 || status == 409 || status == 429 || status >= 500; }

bool all_digits(std::string_view text) {
  return !text.empty() &&
         std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  return text;
}

// A non-negative decimal number of milliseconds ("1500", "1500.5"), or nullopt.
std::optional<double> parse_millis(std::string_view text) {
  text = trim(text);
  const size_t dot = text.find('.');
  const std::string_view whole = text.substr(0, dot);
  if (!all_digits(whole) || whole.size() > 12) return std::nullopt;
  if (dot != std::string_view::npos && !all_digits(text.substr(dot + 1))) return std::nullopt;
  return std::stod(std::string(text));
}

}  // namespace

RetryPolicy::RetryPolicy(RetryOptions options, const Clock* clock, Random random)
    : options_(options), clock_(clock), random_(std::move(random)) {}

RetryDecision RetryPolicy::decide(const FailedAttempt& failure) const {
  if (failure.output_streamed) return {false, {}, "output was already streamed; a retry would repeat it"};
  if (failure.attempt >= options_.max_attempts) {
    return {false, {}, "gave up after " + std::to_string(failure.attempt) + " attempts"};
  }
  const bool status_retryable = failure.http_status && retryable_status(*failure.http_status);
  if (!status_retryable && !failure.overloaded && (failure.http_status || !failure.transport_retryable)) {
    return {false,
            {},
            failure.http_status ? "HTTP status " + std::to_string(*failure.http_status) + " is not retryable"
                                : "the failure is not retryable"};
  }
  const bool may_name_delay = failure.overloaded || (failure.http_status && *failure.http_status == 429) ||
                              (failure.http_status && *failure.http_status >= 500);
  if (may_name_delay) {
    if (auto delay = server_delay(failure)) return {true, *delay, "the server's requested delay"};
  }
  return {true, backoff(failure.attempt), "backoff"};
}

std::chrono::milliseconds RetryPolicy::backoff(int attempt) const {
  const double cap = static_cast<double>(options_.max_delay.count());
  const double exponential =
      static_cast<double>(options_.base_delay.count()) * std::pow(2.0, std::max(0, attempt - 1));
  const double ceiling = std::min(cap, exponential);
  const double unit = std::clamp(random_(), 0.0, 1.0);
  return std::chrono::milliseconds(static_cast<int64_t>(std::floor(unit * ceiling)));
}

std::optional<std::chrono::milliseconds> RetryPolicy::server_delay(const FailedAttempt& failure) const {
  std::optional<double> millis;
  if (failure.retry_after_ms) millis = parse_millis(*failure.retry_after_ms);
  if (!millis && failure.retry_after) {
    const std::string_view value = trim(*failure.retry_after);
    if (all_digits(value) && value.size() <= 9) {
      millis = std::stod(std::string(value)) * 1000.0;
    } else if (auto when = parse_http_date(value)) {
      millis = static_cast<double>(std::max<int64_t>(0, *when - clock_->now_unix_ms()));
    }
  }
  if (!millis) return std::nullopt;
  const double capped = std::min(*millis, static_cast<double>(options_.max_retry_after.count()));
  return std::chrono::milliseconds(static_cast<int64_t>(std::ceil(capped)));
}

RetryPolicy::Random RetryPolicy::seeded_random(uint64_t seed) {
  auto engine = std::make_shared<std::mt19937_64>(seed);
  return [engine] { return std::uniform_real_distribution<double>(0.0, 1.0)(*engine); };
}

}  // namespace keel::providers
