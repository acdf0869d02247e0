// model_server/script.h — the scripted model server's script: which responses it gives, step by step.
//
// A script is a JSON file (format and examples in docs/model-server.md): a list of responses, each either
// taken in order or chosen by a `match` on the text of the request's last user or tool-result message, and
// each made of steps — text, reasoning with a signature, (parallel) tool calls, delays, pings, an HTTP or
// in-stream error, a malformed event, a disconnect, a stream that never ends, a 200 that is not SSE.
// Parsing is strict: an unknown key, a wrong type or a step in an impossible place is an error whose message
// names the place ("responses[1].steps[2].chunk_size: must be a positive integer"), code
// model_server.bad_script. Immutable once parsed.
#pragma once

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "keel/error.h"

namespace keel::model_server {

struct ScriptedToolCall {
  std::string id;  // "" = the server makes one up
  std::string name;
  std::string arguments;  // JSON text, streamed in pieces
};

struct Step {
  enum class Kind {
    kText,
    kReasoning,
    kToolCalls,
    kDelay,
    kPing,
    kError,
    kMalformed,
    kDisconnect,
    kHang,
    kNotSse
  };
  Kind kind = Kind::kText;

  std::string text;       // kText, kReasoning
  std::string signature;  // kReasoning: Anthropic signature / Responses encrypted_content
  size_t chunk_size = 0;  // kText, kReasoning, kToolCalls: bytes per delta (0 = all at once)

  std::vector<ScriptedToolCall> calls;  // kToolCalls
  bool interleave = true;               // kToolCalls: argument deltas of parallel calls alternate

  std::chrono::milliseconds delay{0};  // kDelay

  // kError: as the first step, an HTTP error response (status, body, Retry-After, extra headers); after
  // output was sent, an error event inside the stream (error_type, message).
  int status = 500;
  std::optional<nlohmann::json> body;  // kError, kNotSse: JSON value, or a string sent as is
  std::string error_type;              // "" = the API's usual type for `status`
  std::string message;
  std::optional<std::string> retry_after;
  std::vector<std::pair<std::string, std::string>> headers;

  std::string raw;           // kMalformed: bytes written into the stream as they are
  std::string content_type;  // kNotSse
};

struct ScriptedUsage {
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  int64_t cached_input_tokens = 0;
  int64_t reasoning_tokens = 0;
};

struct ScriptedResponse {
  std::optional<std::string> match;  // chosen by substring of the last user/tool-result text; "" matches all
  std::vector<Step> steps;
  ScriptedUsage usage;
  std::optional<std::string> stop_reason;    // the API's raw stop reason; default: derived from the steps
  std::chrono::milliseconds chunk_delay{0};  // between consecutive events
};

struct Script {
  std::vector<ScriptedResponse> responses;
  std::optional<std::string> api_key;  // when set, requests must carry it (401 otherwise)
};

Result<Script> parse_script(const nlohmann::json& json);
// Reads and parses the file; errors name the file (and the JSON parser's position).
Result<Script> load_script(const std::string& path);

}  // namespace keel::model_server
