// model_server/render.cc — the walk over a response's steps shared by every wire format, and the pieces
// (SSE framing, UTF-8-safe chunking, error bodies) the encoders share.
#include <utility>

#include "model_server/wire_encoder.h"
#include "util/assert.h"

namespace keel::model_server {

namespace {

using nlohmann::json;

constexpr size_t kMaxMergedWrite = 64 * 1024;

template <typename Json>
std::string dump(const Json& value) {
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::unique_ptr<WireEncoder> make_encoder(Api api, const ScriptedResponse& response,
                                          const RenderContext& context) {
  switch (api) {
    case Api::kChatCompletions:
      return make_chat_completions_encoder(response, context);
    case Api::kResponses:
      return make_responses_encoder(response, context);
    case Api::kAnthropicMessages:
      return make_anthropic_encoder(response, context);
  }
  KEEL_BUG("an Api the switch above does not handle");  // every enumerator has its case
}

RenderedResponse fixed_response(int status, std::string content_type, std::string body) {
  RenderedResponse out;
  out.status = status;
  out.streamed = false;
  out.headers.emplace_back("Content-Type", std::move(content_type));
  out.body = std::move(body);
  return out;
}

RenderedResponse scripted_error(Api api, const Step& step) {
  RenderedResponse out;
  if (step.body) {
    out =
        fixed_response(step.status, step.body->is_string() ? "text/plain; charset=utf-8" : "application/json",
                       step.body->is_string() ? step.body->get<std::string>() : dump(*step.body));
  } else {
    out = error_response(api, step.status, step.error_type, step.message);
  }
  if (step.retry_after) out.headers.emplace_back("Retry-After", *step.retry_after);
  for (const auto& header : step.headers) out.headers.push_back(header);
  return out;
}

}  // namespace

std::string_view api_name(Api api) {
  switch (api) {
    case Api::kChatCompletions:
      return "openai-chat-completions";
    case Api::kResponses:
      return "openai-responses";
    case Api::kAnthropicMessages:
      return "anthropic-messages";
  }
  return "unknown";
}

void EventWriter::write(std::string bytes) {
  if (bytes.empty()) return;  // an empty chunk would end a chunked body
  if (wrote_ && chunk_delay_.count() > 0) actions_.push_back({Action::Kind::kDelay, "", chunk_delay_});
  wrote_ = true;
  if (!actions_.empty() && actions_.back().kind == Action::Kind::kWrite &&
      actions_.back().bytes.size() + bytes.size() <= kMaxMergedWrite) {
    actions_.back().bytes += bytes;
    return;
  }
  actions_.push_back({Action::Kind::kWrite, std::move(bytes), {}});
}

void EventWriter::delay(std::chrono::milliseconds delay) {
  actions_.push_back({Action::Kind::kDelay, "", delay});
}

void EventWriter::end(Action::Kind kind) { actions_.push_back({kind, "", {}}); }

std::vector<std::string> split_utf8(std::string_view text, size_t chunk_size) {
  std::vector<std::string> pieces;
  if (chunk_size == 0) {
    if (!text.empty()) pieces.emplace_back(text);
    return pieces;
  }
  while (!text.empty()) {
    size_t end = std::min(chunk_size, text.size());
    // Back off continuation bytes (10xxxxxx) so the cut falls before a character's first byte.
    while (end < text.size() && end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
    if (end == 0) {  // a chunk smaller than one character: take the whole character
      end = 1;
      while (end < text.size() && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) ++end;
    }
    pieces.emplace_back(text.substr(0, end));
    text.remove_prefix(end);
  }
  return pieces;
}

std::string sse_data(const OrderedJson& data) { return "data: " + dump(data) + "\n\n"; }

std::string sse_event(std::string_view event, const OrderedJson& data) {
  return "event: " + std::string(event) + "\ndata: " + dump(data) + "\n\n";
}

std::string default_error_type(Api api, int status) {
  if (api == Api::kAnthropicMessages) {
    switch (status) {
      case 400:
        return "invalid_request_error";
      case 401:
        return "authentication_error";
      case 403:
        return "permission_error";
      case 404:
        return "not_found_error";
      case 413:
        return "request_too_large";
      case 429:
        return "rate_limit_error";
      case 529:
        return "overloaded_error";
      default:
        return status >= 500 ? "api_error" : "invalid_request_error";
    }
  }
  if (status == 429) return "rate_limit_error";
  if (status == 503 || status == 529) return "overloaded_error";
  return status >= 500 ? "server_error" : "invalid_request_error";
}

OrderedJson error_body(Api api, int status, std::string type, std::string message) {
  if (type.empty()) type = default_error_type(api, status);
  if (message.empty()) message = "scripted error (HTTP " + std::to_string(status) + ")";
  if (api == Api::kAnthropicMessages) {
    return {{"type", "error"}, {"error", {{"type", type}, {"message", message}}}};
  }
  OrderedJson code = nullptr;
  if (status == 401) code = "invalid_api_key";
  if (status == 429) code = "rate_limit_exceeded";
  return {{"error", {{"message", message}, {"type", type}, {"param", nullptr}, {"code", code}}}};
}

RenderedResponse error_response(Api api, int status, std::string type, std::string message) {
  return fixed_response(status, "application/json",
                        dump(error_body(api, status, std::move(type), std::move(message))));
}

RenderedResponse render_response(Api api, const ScriptedResponse& response, const RenderContext& context) {
  const std::vector<Step>& steps = response.steps;
  std::vector<Action> before_head;
  size_t i = 0;
  for (; i < steps.size(); ++i) {
    const Step& step = steps[i];
    if (step.kind == Step::Kind::kDelay) {
      before_head.push_back({Action::Kind::kDelay, "", step.delay});
      continue;
    }
    if (step.kind == Step::Kind::kDisconnect || step.kind == Step::Kind::kHang) {
      RenderedResponse out;
      before_head.push_back(
          {step.kind == Step::Kind::kHang ? Action::Kind::kHang : Action::Kind::kDisconnect, "", {}});
      out.before_head = std::move(before_head);
      return out;
    }
    break;
  }
  if (i < steps.size() && steps[i].kind == Step::Kind::kError) {
    RenderedResponse out = scripted_error(api, steps[i]);
    out.before_head = std::move(before_head);
    return out;
  }
  if (i < steps.size() && steps[i].kind == Step::Kind::kNotSse) {
    const Step& step = steps[i];
    RenderedResponse out =
        fixed_response(step.status, step.content_type,
                       step.body && step.body->is_string() ? step.body->get<std::string>()
                                                           : dump(step.body.value_or(json())));
    out.before_head = std::move(before_head);
    return out;
  }

  RenderedResponse out;
  out.before_head = std::move(before_head);
  out.headers = {{"Content-Type", "text/event-stream; charset=utf-8"}, {"Cache-Control", "no-cache"}};
  std::unique_ptr<WireEncoder> encoder = make_encoder(api, response, context);
  EventWriter writer(response.chunk_delay);
  encoder->begin(writer);
  bool ended = false;
  for (; i < steps.size() && !ended; ++i) {
    const Step& step = steps[i];
    switch (step.kind) {
      case Step::Kind::kText:
        encoder->text(writer, split_utf8(step.text, step.chunk_size));
        break;
      case Step::Kind::kReasoning:
        encoder->reasoning(writer, split_utf8(step.text, step.chunk_size), step.signature);
        break;
      case Step::Kind::kToolCalls: {
        std::vector<std::pair<ScriptedToolCall, std::vector<std::string>>> calls;
        for (const ScriptedToolCall& call : step.calls)
          calls.emplace_back(call, split_utf8(call.arguments, step.chunk_size));
        encoder->tool_calls(writer, calls, step.interleave);
        break;
      }
      case Step::Kind::kDelay:
        writer.delay(step.delay);
        break;
      case Step::Kind::kPing:
        encoder->ping(writer);
        break;
      case Step::Kind::kMalformed:
        writer.write(step.raw);
        break;
      case Step::Kind::kError:
        encoder->error(writer, step);
        ended = true;
        break;
      case Step::Kind::kDisconnect:
      case Step::Kind::kHang:
        writer.end(step.kind == Step::Kind::kHang ? Action::Kind::kHang : Action::Kind::kDisconnect);
        ended = true;
        break;
      case Step::Kind::kNotSse:  // only valid as the sole step (checked when parsing), handled above
        break;
    }
  }
  if (!ended) encoder->finish(writer);
  out.actions = writer.take();
  return out;
}

}  // namespace keel::model_server
