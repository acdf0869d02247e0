// providers/wire/wire_codec.h — what the three wire formats (OpenAI Chat Completions, OpenAI Responses,
// Anthropic Messages) have in common: a request encoder, a streaming response decoder, and the reading of an
// HTTP error response.
//
// An HttpProvider composes these with the HTTP client: encode() gives the request body, each SSE event of a
// 2xx response goes through a StreamDecoder (wire_stream.h joins the SSE parser to it), and an error status
// goes through decode_http_error(). Everything here is pure computation: no I/O, no clock, no threads.
//
// provider_data written by the decoders, and read back by the encoders, is keyed by format so a block
// produced by one API is never sent to another (the encoders skip foreign keys):
//   Anthropic:        {"anthropic": {"type": "thinking", "signature": "..."}}
//                     {"anthropic": {"type": "redacted_thinking", "data": "..."}}
//   OpenAI Responses: {"openai_responses": {"type": "reasoning", "id": "rs_...", "encrypted_content": "...",
//                                           "summary": [{"type": "summary_text", "text": "..."}]}}
//   Chat Completions: reasoning carries no provider_data.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "keel/error.h"
#include "keel/provider.h"
#include "providers/model_capabilities.h"
#include "providers/sse/sse_parser.h"

namespace keel::providers {

enum class WireFormat { kOpenAiChat, kOpenAiResponses, kAnthropicMessages };

// "openai-chat", "openai-responses", "anthropic-messages": the names configuration uses.
std::string_view to_string(WireFormat format);
std::optional<WireFormat> parse_wire_format(std::string_view name);

// Turns one response's SSE events into keel's normalized ProviderEvents (keel/provider.h): text and reasoning
// deltas, tool calls as start / argument fragments / end with a dense `index` per response, usage with cached
// tokens counted inside input_tokens, and exactly one Finish, last, after the format's terminal event.
//
// Tool-call arguments are passed through as the provider sent them, even when they are not JSON: the engine
// parses them when the response is complete (engine/call_executor.cc, tool.arguments_not_json) and answers
// the model with the error, which is what lets a model correct itself.
//
// Errors: an error event in the stream becomes its coded provider error (provider.overloaded,
// provider.rate_limited, ... retryable when waiting may help); malformed JSON is provider.bad_event_json;
// an event type the format never sends is provider.unknown_event (types the API documents as extensible are
// ignored); a grammar violation (deltas for a call never started, events after the terminal one) is
// provider.protocol_error; finish() before the terminal event is provider.stream_truncated (retryable).
// The first error is sticky: every later call returns it again. Events appended to `out` before an error in
// the same call are valid output that preceded it.
//
// One decoder per response; not thread-safe.
class StreamDecoder {
 public:
  virtual ~StreamDecoder() = default;

  [[nodiscard]] Result<void> decode(const SseEvent& event, std::vector<ProviderEvent>& out);
  // The response's byte stream ended.
  [[nodiscard]] Result<void> finish(std::vector<ProviderEvent>& out);

 protected:
  virtual Result<void> decode_event(const SseEvent& event, std::vector<ProviderEvent>& out) = 0;
  virtual Result<void> finish_stream(std::vector<ProviderEvent>& out) = 0;

 private:
  std::optional<Error> error_;
};

struct CodecOptions {
  // Chat Completions: send an assistant message's reasoning back as `reasoning_content`. Off by default
  // (see openai_chat_codec.h); DeepSeek's thinking mode needs it on for turns with tool calls.
  bool chat_send_reasoning_content = false;
  // Chat Completions: finish_reason "stop" after tool calls means tool_calls. Off by default: such a
  // response is a protocol error and no tool runs (spec §2); on for compatible servers known to send it.
  bool chat_stop_with_tool_calls_is_tool_use = false;
};

class WireCodec {
 public:
  virtual ~WireCodec() = default;
  virtual WireFormat format() const = 0;

  // The streaming request body for `request` on a model with `caps`. Reads request.messages only during the
  // call. Errors: provider.image_unsupported (an image in a user message or tool result and !caps.vision),
  // provider.tools_unsupported (tools offered and !caps.tool_use), provider.reserved_parameter (a
  // request.parameters key the codec sets itself, such as "model" or "stream").
  [[nodiscard]] virtual Result<nlohmann::json> encode(const ProviderRequest& request,
                                                      const ModelCapabilities& caps) const = 0;

  // A decoder for one response stream.
  virtual std::unique_ptr<StreamDecoder> new_decoder() const = 0;
};

std::unique_ptr<WireCodec> make_wire_codec(WireFormat format, CodecOptions options = {});

// The Error for an HTTP error response of `format`: a provider.* code from the body's error type or code
// and the status, retryable for 408, 409, 429 (except exhausted quota), 5xx and overloaded errors. The
// message names the status and the provider's own message, with anything that looks like a credential
// removed; it never includes request headers, and for 401/403 not even the provider's message (which may
// echo the key). `retry_after` (the Retry-After header) is mentioned in the message when it is well formed.
Error decode_http_error(WireFormat format, int status, std::string_view body,
                        std::optional<std::string> retry_after);

}  // namespace keel::providers
