#include "providers/wire/provider_error_mapping.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <utility>

#include "providers/provider_errors.h"
#include "providers/wire/utf8_validate.h"
#include "util/utf8.h"

namespace keel::providers {
namespace {

struct Kind {
  const char* code;
  bool retryable;
};

constexpr Kind kOverloaded{codes::kProviderOverloaded, true};
constexpr Kind kRateLimited{codes::kProviderRateLimited, true};
constexpr Kind kQuota{codes::kProviderQuotaExceeded, false};
constexpr Kind kUnauthorized{codes::kProviderUnauthorized, false};
constexpr Kind kForbidden{codes::kProviderForbidden, false};
constexpr Kind kNotFound{codes::kProviderNotFound, false};
constexpr Kind kTooLarge{codes::kProviderRequestTooLarge, false};
constexpr Kind kContextTooLong{codes::kProviderContextTooLong, false};
constexpr Kind kRefused{codes::kProviderRefused, false};
constexpr Kind kServerError{codes::kProviderServerError, true};
constexpr Kind kTimeout{codes::kProviderTimeout, true};
constexpr Kind kBadRequest{codes::kProviderBadRequest, false};
constexpr Kind kOther{codes::kProviderOtherError, false};

// Error types and codes of the three APIs (Anthropic's `error.type`, OpenAI's `error.type` / `error.code`),
// and the spellings OpenAI-compatible servers use for the same conditions.
constexpr std::array<std::pair<std::string_view, Kind>, 34> kByName = {{
    {"overloaded_error", kOverloaded},
    {"overloaded", kOverloaded},
    {"rate_limit_error", kRateLimited},
    {"rate_limit_exceeded", kRateLimited},
    {"rate_limited", kRateLimited},
    {"too_many_requests", kRateLimited},
    {"insufficient_quota", kQuota},
    {"quota_exceeded", kQuota},
    {"billing_error", kQuota},
    {"billing_hard_limit_reached", kQuota},
    {"authentication_error", kUnauthorized},
    {"invalid_api_key", kUnauthorized},
    {"invalid_authentication", kUnauthorized},
    {"unauthorized", kUnauthorized},
    {"permission_error", kForbidden},
    {"permission_denied", kForbidden},
    {"unsupported_country_region_territory", kForbidden},
    {"not_found_error", kNotFound},
    {"model_not_found", kNotFound},
    {"request_too_large", kTooLarge},
    {"context_length_exceeded", kContextTooLong},
    {"context_window_exceeded", kContextTooLong},
    {"model_context_window_exceeded", kContextTooLong},
    {"content_policy_violation", kRefused},
    {"content_filter", kRefused},
    {"api_error", kServerError},
    {"server_error", kServerError},
    {"internal_error", kServerError},
    {"internal_server_error", kServerError},
    {"service_unavailable", kServerError},
    {"timeout", kTimeout},
    {"request_timeout", kTimeout},
    {"invalid_request_error", kBadRequest},
    {"invalid_request", kBadRequest},
}};

std::optional<Kind> by_name(std::string_view name) {
  for (const auto& [known, kind] : kByName) {
    if (known.size() == name.size() &&
        std::equal(known.begin(), known.end(), name.begin(),
                   [](char a, char b) { return a == std::tolower(static_cast<unsigned char>(b)); })) {
      return kind;
    }
  }
  return std::nullopt;
}

Kind by_status(int status) {
  switch (status) {
    case 401:
      return kUnauthorized;
    case 402:
      return kQuota;
    case 403:
      return kForbidden;
    case 404:
      return kNotFound;
    case 408:
      return kTimeout;
    case 409:
      return kServerError;  // OpenAI: a conflicting concurrent update; trying again is documented to help
    case 413:
      return kTooLarge;
    case 429:
      return kRateLimited;
    case 529:
      return kOverloaded;
    default:
      if (status >= 500 && status <= 599) return kServerError;
      if (status >= 400 && status <= 499) return kBadRequest;
      return kOther;
  }
}

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// A bad request that is really a context overflow: the APIs report it as invalid_request_error with only
// the message telling ("prompt is too long: 210000 tokens > 200000 maximum", "This model's maximum context
// length is 128000 tokens").
bool mentions_context_overflow(std::string_view message) {
  const std::string text = lower(message);
  for (std::string_view phrase : {"prompt is too long", "maximum context length", "context length",
                                  "context window", "too many tokens", "input is too long"}) {
    if (text.find(phrase) != std::string::npos) return true;
  }
  return false;
}

bool is_token_char(unsigned char c) {
  // Not '=' or ':': "api_key=x" and "key: x" are the word "key" and then the value.
  return std::isalnum(c) != 0 || c == '-' || c == '_' || c == '.' || c == '+' || c == '/' || c == '*' ||
         c == '~';
}

bool looks_like_secret(std::string_view token) {
  if (token.starts_with("sk-") || token.starts_with("sk_")) return true;
  if (token.size() < 24) return false;
  const bool digit = std::any_of(token.begin(), token.end(), [](char c) { return c >= '0' && c <= '9'; });
  const bool letter = std::any_of(token.begin(), token.end(),
                                  [](char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; });
  return digit && letter;
}

// Whether the word before a token introduces a credential ("Bearer x", "API key provided: x", "key=x").
bool introduces_secret(std::string_view word) {
  const std::string w = lower(word);
  return w == "bearer" || w == "basic" || w.ends_with("key") || w == "provided" || w.ends_with("token") ||
         w == "authorization" || w == "password" || w == "secret";
}

std::optional<std::string> sanitize_retry_after(std::string_view value) {
  while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  while (!value.empty() && value.back() == ' ') value.remove_suffix(1);
  if (value.empty() || value.size() > 40) return std::nullopt;
  const bool digits = std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (digits) return std::string(value) + " s";
  // An HTTP-date: "Wed, 21 Oct 2015 07:28:00 GMT".
  const bool date = std::all_of(value.begin(), value.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == ' ' || c == ',' || c == ':' || c == '-';
  });
  if (date) return std::string(value);
  return std::nullopt;
}

}  // namespace

std::string sanitize_provider_message(std::string_view text, size_t max_bytes) {
  std::string out;
  out.reserve(std::min(text.size(), max_bytes) + 16);
  std::string_view previous_word;
  size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x80) {
      // Kept when well formed; a byte that is not UTF-8 would make the message unwritable as JSON.
      const auto* p = reinterpret_cast<const unsigned char*>(text.data()) + i;
      const size_t length = utf8_sequence_length(p, p + (text.size() - i));
      out.append(length == 0 ? std::string_view("?") : text.substr(i, length));
      i += std::max<size_t>(length, 1);
      continue;
    }
    if (!is_token_char(c)) {
      out.push_back(c < 0x20 || c == 0x7F ? ' ' : static_cast<char>(c));
      ++i;
      continue;
    }
    size_t j = i;
    while (j < text.size() && is_token_char(static_cast<unsigned char>(text[j]))) ++j;
    const std::string_view token = text.substr(i, j - i);
    if (looks_like_secret(token) || introduces_secret(previous_word)) {
      out += "[redacted]";
    } else {
      out.append(token);
    }
    previous_word = token;  // separators in between do not matter: "key = x", "key provided: x"
    i = j;
  }
  if (out.size() > max_bytes) {
    out.resize(utf8_prefix_length(out, max_bytes));
    out += "...";
  }
  return out;
}

Error classify_provider_error(const ProviderErrorReport& report) {
  std::optional<Kind> kind = by_name(report.code);
  if (!kind) kind = by_name(report.type);
  if (!kind && report.http_status) kind = by_status(*report.http_status);
  Kind k = kind.value_or(kOther);
  if (k.code == kBadRequest.code && mentions_context_overflow(report.message)) k = kContextTooLong;
  // A 5xx is retryable whatever its body calls it (a proxy's 503 may carry an upstream's 400 body).
  if (report.http_status && *report.http_status >= 500 && !k.retryable) k = kServerError;

  std::string message = std::string(report.api) + " error";
  std::string detail;
  if (report.http_status) detail = "HTTP " + std::to_string(*report.http_status);
  auto add_detail = [&](std::string_view part) {
    if (part.empty()) return;
    if (!detail.empty()) detail += ", ";
    detail += sanitize_provider_message(part, 64);
  };
  add_detail(report.type);
  if (report.code != report.type) add_detail(report.code);
  if (!detail.empty()) message += " (" + detail + ")";
  const bool credential_error = k.code == kUnauthorized.code || k.code == kForbidden.code;
  if (credential_error) {
    message += ": the provider refused the credentials or their permissions";
  } else if (!report.message.empty()) {
    message += ": " + sanitize_provider_message(report.message);
  }
  if (report.retry_after) {
    if (auto after = sanitize_retry_after(*report.retry_after)) message += " (retry after " + *after + ")";
  }
  return Error(k.code, std::move(message), k.retryable);
}

}  // namespace keel::providers
