#include "providers/wire/wire_codec.h"

#include "providers/wire/anthropic_messages_codec.h"
#include "providers/wire/json_tape.h"
#include "providers/wire/openai_chat_codec.h"
#include "providers/wire/openai_responses_codec.h"
#include "providers/wire/provider_error_mapping.h"

namespace keel::providers {
namespace {

// Error bodies larger than this are not read (a proxy's HTML page, say); the status alone decides.
constexpr size_t kMaxErrorBodyBytes = size_t{1} << 20;

std::string_view api_name(WireFormat format) {
  switch (format) {
    case WireFormat::kOpenAiChat:
      return "OpenAI Chat Completions";
    case WireFormat::kOpenAiResponses:
      return "OpenAI Responses";
    case WireFormat::kAnthropicMessages:
      return "Anthropic Messages";
  }
  return "provider";
}

}  // namespace

std::string_view to_string(WireFormat format) {
  switch (format) {
    case WireFormat::kOpenAiChat:
      return "openai-chat";
    case WireFormat::kOpenAiResponses:
      return "openai-responses";
    case WireFormat::kAnthropicMessages:
      return "anthropic-messages";
  }
  return "unknown";
}

std::optional<WireFormat> parse_wire_format(std::string_view name) {
  for (WireFormat format :
       {WireFormat::kOpenAiChat, WireFormat::kOpenAiResponses, WireFormat::kAnthropicMessages}) {
    if (to_string(format) == name) return format;
  }
  return std::nullopt;
}

Result<void> StreamDecoder::decode(const SseEvent& event, std::vector<ProviderEvent>& out) {
  if (error_) return fail(*error_);
  auto r = decode_event(event, out);
  if (!r) error_ = r.error();
  return r;
}

Result<void> StreamDecoder::finish(std::vector<ProviderEvent>& out) {
  if (error_) return fail(*error_);
  auto r = finish_stream(out);
  if (!r) error_ = r.error();
  return r;
}

std::unique_ptr<WireCodec> make_wire_codec(WireFormat format, CodecOptions options) {
  switch (format) {
    case WireFormat::kOpenAiChat:
      return make_openai_chat_codec(options);
    case WireFormat::kOpenAiResponses:
      return make_openai_responses_codec();
    case WireFormat::kAnthropicMessages:
      return make_anthropic_messages_codec();
  }
  return nullptr;
}

Error decode_http_error(WireFormat format, int status, std::string_view body,
                        std::optional<std::string> retry_after) {
  ProviderErrorReport report{.api = api_name(format), .http_status = status};
  if (retry_after) report.retry_after = *retry_after;
  // Every API nests {type, code, message} under "error" (Anthropic: {"type": "error", "error": {...}});
  // OpenAI-compatible servers also send {"error": "text"}, {"message": ..., "type": ...} or {"detail": ...}.
  JsonTape tape;
  const bool readable = body.size() <= kMaxErrorBodyBytes;
  Result<JsonValue> root = readable ? tape.parse(body) : Result<JsonValue>(JsonValue());
  std::string fallback;
  if (readable && root && root->is_object()) {
    const JsonValue error = (*root)["error"];
    const JsonValue holder = error.is_object() ? error : *root;
    report.type = holder["type"].string();
    if (report.type == "error") report.type = {};  // Anthropic's envelope, not the error's type
    report.code = holder["code"].string();
    report.message = holder["message"].string();
    if (report.message.empty()) report.message = error.string();
    if (report.message.empty()) report.message = (*root)["detail"].string();
  } else {
    // Never the body itself: a proxy's error page may echo the request, headers included.
    fallback = body.empty() ? "the response body is empty"
               : !readable
                   ? "the response body is too large to read (" + std::to_string(body.size()) + " bytes)"
                   : "the response body is not a JSON error (" + std::to_string(body.size()) + " bytes)";
    report.message = fallback;
  }
  return classify_provider_error(report);
}

}  // namespace keel::providers
