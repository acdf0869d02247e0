// providers/wire/provider_error_mapping.h — from what a provider says went wrong to a coded keel Error.
//
// The three APIs report errors in two places: an HTTP error response (status + JSON body) and an error
// event inside a 2xx stream (no status). Both end here, so an overloaded Anthropic model or a rate-limited
// OpenAI key maps to the same code and retry decision either way:
//   - the error's type or code decides first (it is the most specific: a 400 may be a context overflow);
//   - then the HTTP status; an unknown error without status is provider.error, not retryable.
// Retryable: overloaded, rate limits (not exhausted quotas or billing), timeouts, 409 and every 5xx.
//
// Messages are built for people and logs, so they pass through sanitize_provider_message(): control
// characters become spaces, anything that looks like a credential is replaced, and the length is bounded.
// For authentication and permission errors the provider's message is dropped entirely, as some providers
// echo (part of) the key they refused.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "keel/error.h"

namespace keel::providers {

// Every member has a default initializer so designated initializers may omit any of them.
struct ProviderErrorReport {
  std::string_view api{};            // for the message: "OpenAI Chat Completions", ...
  std::optional<int> http_status{};  // nullopt for an error event inside a stream
  std::string_view type{};           // "overloaded_error", "invalid_request_error", ... or empty
  std::string_view code{};           // "rate_limit_exceeded", "context_length_exceeded", ... or empty
  std::string_view message{};        // the provider's message, unsanitized
  std::optional<std::string_view> retry_after{};  // the Retry-After header, unsanitized
};

Error classify_provider_error(const ProviderErrorReport& report);

// `text` with control characters replaced, credential-like tokens replaced by "[redacted]", and cut (on a
// UTF-8 boundary) to at most `max_bytes` plus an ellipsis.
std::string sanitize_provider_message(std::string_view text, size_t max_bytes = 300);

}  // namespace keel::providers
