// keel/provider.h — the model seam: how the engine calls an LLM.
//
// The engine knows models only through Provider. An adapter (OpenAI Chat Completions, OpenAI Responses,
// Anthropic Messages, or the scripted provider of tests) turns a provider-neutral request into its wire
// format and reports the response as a sequence of ProviderEvents, normalized so the engine never sees a
// wire format:
//   text and reasoning deltas; tool calls as start / argument fragments / end (several may be open at once:
//   parallel calls are told apart by `index`); usage; and exactly one Finish with the normalized stop reason
//   and the provider's raw one.
//
// Contract of stream():
//   - It returns at once; events arrive on `sink` later, from any thread, one at a time and in order.
//   - sink->on_done() is called exactly once, last: success only after a Finish event was delivered; an
//     Error otherwise (provider.* codes; `retryable` when trying again may help).
//   - When `cancel` fires, the adapter aborts the request promptly and finishes with a `cancelled` error.
//   - A stream that ends without Finish, or that violates this ordering, is the adapter's to report as
//     provider.protocol_error; the engine also checks and fails the turn closed.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "keel/cancellation.h"
#include "keel/error.h"
#include "keel/message.h"

namespace keel {

enum class StopReason { kToolUse, kEnd, kMaxTokens, kContentFilter, kError };
std::string_view to_string(StopReason reason);

struct TokenUsage {
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  int64_t cached_input_tokens = 0;
  int64_t reasoning_tokens = 0;
  int64_t total() const { return input_tokens + output_tokens; }
  friend bool operator==(const TokenUsage&, const TokenUsage&) = default;
};

// A model's prices in US dollars per million tokens (the configuration's price table; token.usage reports
// what each response cost). Cached input and reasoning output fall back to the plain input and output
// prices when unset.
struct ModelPrice {
  double input_per_million = 0;
  double output_per_million = 0;
  std::optional<double> cached_input_per_million;
  std::optional<double> reasoning_output_per_million;
};

// A tool as offered to the model: generated from the tool's frozen descriptor.
struct ProviderTool {
  std::string name;
  std::string description;
  nlohmann::json input_schema;  // JSON Schema of the arguments object
};

// The request's views (messages) are valid only until stream() returns: an adapter encodes the request
// before returning (it keeps its own encoded body for retries). This lets the engine hand over its cached
// context without copying it on every request.
struct ProviderRequest {
  std::string model;
  std::string system_prompt;
  std::span<const Message> messages;
  std::vector<ProviderTool> tools;  // empty: tools are not offered
  std::optional<int64_t> max_output_tokens;
  nlohmann::json parameters = nlohmann::json::object();  // temperature etc., passed through
};

namespace provider_event {
struct TextDelta {
  std::string text;
};
struct ReasoningDelta {
  std::string text;
  nlohmann::json provider_data;  // signatures / encrypted content to send back later; null if none
};
struct ToolCallStart {
  int index = 0;
  std::string id;  // may be empty: the engine then assigns one
  std::string name;
};
struct ToolCallDelta {
  int index = 0;
  std::string arguments_fragment;  // pieces of the arguments' JSON text
};
struct ToolCallEnd {
  int index = 0;
};
struct Usage {
  TokenUsage usage;
};
struct Finish {
  StopReason reason = StopReason::kEnd;
  std::string provider_reason;  // the provider's own word ("stop", "tool_calls", "end_turn", ...)
};
}  // namespace provider_event

using ProviderEvent =
    std::variant<provider_event::TextDelta, provider_event::ReasoningDelta, provider_event::ToolCallStart,
                 provider_event::ToolCallDelta, provider_event::ToolCallEnd, provider_event::Usage,
                 provider_event::Finish>;

class ProviderSink {
 public:
  virtual ~ProviderSink() = default;
  virtual void on_event(ProviderEvent event) = 0;
  virtual void on_done(Result<void> result) = 0;
};

class Provider {
 public:
  virtual ~Provider() = default;
  // A short name for logs and errors ("openai-chat", "scripted").
  virtual std::string name() const = 0;
  virtual void stream(ProviderRequest request, CancellationToken cancel,
                      std::shared_ptr<ProviderSink> sink) = 0;
};

}  // namespace keel
