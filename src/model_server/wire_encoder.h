// model_server/wire_encoder.h — turning a scripted response into what the server writes, per wire format.
//
// render_response() is pure: it walks the response's steps and asks the API's WireEncoder for the events
// of each, producing a RenderedResponse — what to do before the head (delays; a disconnect or a hang that
// means no head is ever sent), the head, and either a fixed body or the list of stream actions (write these
// bytes, wait, drop the connection, go silent). The server only plays that list back, so every stream
// shape is testable without a socket.
//
// Encoders write each API's documented stream:
//   OpenAI Chat Completions: `data: {chat.completion.chunk}` lines (delta.content, delta.tool_calls with
//     index/id/function, delta.reasoning_content as llama.cpp/vLLM/DeepSeek send it, finish_reason), a
//     usage chunk with empty choices when the request asked stream_options.include_usage, `data: [DONE]`.
//   OpenAI Responses: named events with sequence_number — response.created / in_progress, output_item.added,
//     content_part.added, output_text.delta/done, reasoning_summary_* for reasoning (the signature becomes
//     encrypted_content), function_call_arguments.delta/done, output_item.done, response.completed (or
//     .incomplete for stop_reason "max_output_tokens") with usage.
//   Anthropic Messages: message_start, content_block_start/delta/stop (text_delta, thinking_delta +
//     signature_delta, input_json_delta), ping, message_delta with stop_reason and usage, message_stop.
//     Parallel tool calls are consecutive blocks: Anthropic never interleaves blocks.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model_server/script.h"

namespace keel::model_server {

enum class Api { kChatCompletions, kResponses, kAnthropicMessages };
std::string_view api_name(Api api);

struct Action {
  enum class Kind { kWrite, kDelay, kDisconnect, kHang };
  Kind kind = Kind::kWrite;
  std::string bytes;                   // kWrite: never empty
  std::chrono::milliseconds delay{0};  // kDelay
};

struct RenderedResponse {
  std::vector<Action> before_head;  // delays, possibly ending in kDisconnect / kHang (then no head at all)
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;  // Content-Type included
  bool streamed = true;  // true: chunked body played from `actions`; false: `body` with Content-Length
  std::string body;
  std::vector<Action> actions;
};

// What a response depends on besides the script.
struct RenderContext {
  std::string model = "scripted-model";  // echoed from the request
  bool include_usage = false;            // Chat Completions: stream_options.include_usage
  uint64_t request_number = 1;           // makes ids unique and deterministic
  int64_t created = 1'700'000'000;       // the "created" timestamps (fixed: outputs are reproducible)
};

// Collects actions. Consecutive writes with no delay between them are merged into one write (up to 64 KiB)
// so a long fast stream costs few syscalls; chunk_delay > 0 puts a delay between every two events instead.
class EventWriter {
 public:
  explicit EventWriter(std::chrono::milliseconds chunk_delay) : chunk_delay_(chunk_delay) {}
  void write(std::string bytes);
  void delay(std::chrono::milliseconds delay);
  void end(Action::Kind kind);  // kDisconnect or kHang
  std::vector<Action> take() { return std::move(actions_); }

 private:
  std::chrono::milliseconds chunk_delay_;
  bool wrote_ = false;
  std::vector<Action> actions_;
};

// One text split into deltas of at most `chunk_size` bytes (0: one piece), never inside a UTF-8 sequence.
std::vector<std::string> split_utf8(std::string_view text, size_t chunk_size);

// Events are built as ordered JSON so their keys read in the order the APIs' documentation shows them.
using OrderedJson = nlohmann::ordered_json;

// SSE framing. JSON is serialized compactly; invalid UTF-8 is replaced rather than thrown on.
std::string sse_data(const OrderedJson& data);
std::string sse_event(std::string_view event, const OrderedJson& data);

// The events of one wire format. One encoder serves one response; it keeps the indices and ids.
class WireEncoder {
 public:
  virtual ~WireEncoder() = default;
  virtual void begin(EventWriter& out) = 0;
  virtual void text(EventWriter& out, const std::vector<std::string>& pieces) = 0;
  virtual void reasoning(EventWriter& out, const std::vector<std::string>& pieces,
                         const std::string& signature) = 0;
  // calls[i].second: the argument pieces of calls[i].first.
  virtual void tool_calls(EventWriter& out,
                          const std::vector<std::pair<ScriptedToolCall, std::vector<std::string>>>& calls,
                          bool interleave) = 0;
  virtual void ping(EventWriter& out) = 0;
  virtual void error(EventWriter& out, const Step& step) = 0;  // in the stream; the stream ends after it
  virtual void finish(EventWriter& out) = 0;                   // stop reason, usage, terminator
};

std::unique_ptr<WireEncoder> make_chat_completions_encoder(const ScriptedResponse& response,
                                                           RenderContext context);
std::unique_ptr<WireEncoder> make_responses_encoder(const ScriptedResponse& response, RenderContext context);
std::unique_ptr<WireEncoder> make_anthropic_encoder(const ScriptedResponse& response, RenderContext context);

// The API's error body for an HTTP error ({"error": {...}} for OpenAI, {"type": "error", ...} for Anthropic);
// an empty `type` picks the API's usual type for `status`.
OrderedJson error_body(Api api, int status, std::string type, std::string message);
// The API's usual error type for `status` ("rate_limit_error", "overloaded_error", "server_error", ...).
std::string default_error_type(Api api, int status);

// A complete HTTP error response with the API's JSON error body.
RenderedResponse error_response(Api api, int status, std::string type, std::string message);

RenderedResponse render_response(Api api, const ScriptedResponse& response, const RenderContext& context);

}  // namespace keel::model_server
