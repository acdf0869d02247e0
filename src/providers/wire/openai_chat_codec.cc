#include "providers/wire/openai_chat_codec.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>

#include "providers/wire/codec_support.h"
#include "providers/wire/json_tape.h"
#include "providers/wire/provider_error_mapping.h"

namespace keel::providers {
namespace {

using nlohmann::json;
namespace pe = provider_event;

constexpr std::string_view kApi = "OpenAI Chat Completions";

// --- request ---

json user_content(const Message& message) {
  if (message.content.size() == 1 && message.content[0].kind == ContentBlock::Kind::kText) {
    return message.content[0].text;
  }
  json parts = json::array();
  for (const ContentBlock& block : message.content) {
    if (block.kind == ContentBlock::Kind::kText) {
      parts.push_back({{"type", "text"}, {"text", block.text}});
    } else if (block.kind == ContentBlock::Kind::kImage) {
      parts.push_back({{"type", "image_url"}, {"image_url", {{"url", image_data_url(block)}}}});
    }
  }
  if (parts.empty()) return "";
  return parts;
}

json assistant_message(const Message& message, const CodecOptions& options) {
  json out = {{"role", "assistant"}};
  std::string text = text_of(message.content);
  if (text.empty() && !message.tool_calls.empty()) {
    out["content"] = nullptr;
  } else if (is_empty_reply(message)) {
    out["content"] = kEmptyReplyText;
  } else {
    out["content"] = std::move(text);
  }
  if (options.chat_send_reasoning_content) {
    std::string reasoning;
    for (const ContentBlock& block : message.content) {
      if (block.kind == ContentBlock::Kind::kReasoning) reasoning += block.text;
    }
    if (!reasoning.empty()) out["reasoning_content"] = std::move(reasoning);
  }
  if (!message.tool_calls.empty()) {
    json calls = json::array();
    for (const ToolCall& call : message.tool_calls) {
      calls.push_back({{"id", call.id},
                       {"type", "function"},
                       {"function", {{"name", call.name}, {"arguments", call.arguments.dump()}}}});
    }
    out["tool_calls"] = std::move(calls);
  }
  return out;
}

class ChatCodec final : public WireCodec {
 public:
  explicit ChatCodec(CodecOptions options) : options_(options) {}
  WireFormat format() const override { return WireFormat::kOpenAiChat; }
  Result<json> encode(const ProviderRequest& request, const ModelCapabilities& caps) const override;
  std::unique_ptr<StreamDecoder> new_decoder() const override;

 private:
  CodecOptions options_;
};

Result<json> ChatCodec::encode(const ProviderRequest& request, const ModelCapabilities& caps) const {
  KEEL_TRY(check_request(request, caps));
  json messages = json::array();
  if (!request.system_prompt.empty()) {
    messages.push_back({{"role", "system"}, {"content", request.system_prompt}});
  }
  // Images of the current run of tool results: they may only follow the run (a tool message must come
  // right after the assistant message with its call, or after another tool message).
  json tool_images = json::array();
  auto flush_tool_images = [&] {
    if (tool_images.empty()) return;
    messages.push_back({{"role", "user"}, {"content", std::exchange(tool_images, json::array())}});
  };
  for (const Message& message : request.messages) {
    if (message.role != Role::kTool) flush_tool_images();
    switch (message.role) {
      case Role::kUser:
        messages.push_back({{"role", "user"}, {"content", user_content(message)}});
        break;
      case Role::kAssistant:
        messages.push_back(assistant_message(message, options_));
        break;
      case Role::kTool:
        messages.push_back({{"role", "tool"},
                            {"tool_call_id", message.tool_call_id},
                            {"content", text_of(message.content)}});
        if (has_image(message.content)) {
          tool_images.push_back(
              {{"type", "text"},
               {"text", "The image(s) returned by tool call " + message.tool_call_id + ":"}});
          for (const ContentBlock& block : message.content) {
            if (block.kind != ContentBlock::Kind::kImage) continue;
            tool_images.push_back({{"type", "image_url"}, {"image_url", {{"url", image_data_url(block)}}}});
          }
        }
        break;
    }
  }
  flush_tool_images();

  json body = {{"model", request.model},
               {"messages", std::move(messages)},
               {"stream", true},
               {"stream_options", {{"include_usage", true}}}};
  body[caps.reasoning ? "max_completion_tokens" : "max_tokens"] = output_token_limit(request, caps);
  if (!request.tools.empty()) {
    json tools = json::array();
    for (const ProviderTool& tool : request.tools) {
      tools.push_back(
          {{"type", "function"},
           {"function",
            {{"name", tool.name}, {"description", tool.description}, {"parameters", tool.input_schema}}}});
    }
    body["tools"] = std::move(tools);
  }
  KEEL_TRY(add_parameters(
      body, request.parameters,
      {"model", "messages", "stream", "stream_options", "tools", "max_tokens", "max_completion_tokens"}));
  return body;
}

// --- stream ---

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

Error stream_error(JsonValue error) {
  // OpenAI: {"message", "type", "param", "code"}; some servers send the message alone as a string.
  const std::string_view message = error.is_string() ? error.string() : error["message"].string();
  return classify_provider_error(
      {.api = kApi, .type = error["type"].string(), .code = error["code"].string(), .message = message});
}

class ChatDecoder final : public StreamDecoder {
 public:
  explicit ChatDecoder(bool stop_with_tool_calls_is_tool_use)
      : stop_with_tool_calls_is_tool_use_(stop_with_tool_calls_is_tool_use) {}

 protected:
  Result<void> decode_event(const SseEvent& event, std::vector<ProviderEvent>& out) override;
  Result<void> finish_stream(std::vector<ProviderEvent>&) override {
    if (!done_) return fail(truncated_error(kApi, "[DONE]"));
    return {};
  }

 private:
  struct Call {
    int64_t provider_index = 0;
    int index = 0;
  };

  Result<void> on_choice(JsonValue choice, std::vector<ProviderEvent>& out);
  Result<void> on_tool_call(JsonValue call, std::vector<ProviderEvent>& out);
  Result<void> on_done(std::vector<ProviderEvent>& out);
  void end_calls(std::vector<ProviderEvent>& out);

  const bool stop_with_tool_calls_is_tool_use_;
  JsonTape tape_;
  std::vector<Call> calls_;
  bool calls_ended_ = false;
  std::optional<std::string> finish_reason_;
  bool refused_ = false;
  bool done_ = false;
};

Result<void> ChatDecoder::decode_event(const SseEvent& event, std::vector<ProviderEvent>& out) {
  if (done_) return fail(protocol_error(kApi, "an event arrived after [DONE]"));
  // Chat Completions names no events; "error" is how some compatible servers mark an error chunk.
  const bool error_event = event.event == "error";
  if (event.event != "message" && !error_event) return fail(unknown_event_error(kApi, event.event));
  const std::string_view data = trim(event.data);
  if (data == "[DONE]") return on_done(out);
  const JsonValue chunk = KEEL_TRY(parse_event_object(tape_, data, kApi));
  if (const JsonValue error = chunk["error"]; error.present() && !error.is_null()) {
    return fail(stream_error(error));
  }
  if (error_event) return fail(stream_error(chunk));

  const JsonValue choices = chunk["choices"];
  for (size_t i = 0, n = choices.size(); i < n; ++i) {
    const JsonValue choice = choices.at(i);
    // Only the first choice is read (keel never asks for n > 1); a choice without index is the first.
    if (choice["index"].int64().value_or(0) != 0) continue;
    KEEL_TRY(on_choice(choice, out));
    break;
  }
  if (const JsonValue usage = chunk["usage"]; usage.is_object()) {
    // prompt_tokens includes the cached ones, completion_tokens the reasoning ones: keel's convention.
    out.push_back(pe::Usage{TokenUsage{
        .input_tokens = token_count(usage["prompt_tokens"]),
        .output_tokens = token_count(usage["completion_tokens"]),
        .cached_input_tokens = token_count(usage["prompt_tokens_details"]["cached_tokens"]),
        .reasoning_tokens = token_count(usage["completion_tokens_details"]["reasoning_tokens"]),
    }});
  }
  return {};
}

Result<void> ChatDecoder::on_choice(JsonValue choice, std::vector<ProviderEvent>& out) {
  const JsonValue delta = choice["delta"];
  std::string_view reasoning = delta["reasoning_content"].string();
  if (reasoning.empty()) reasoning = delta["reasoning"].string();
  const std::string_view text = delta["content"].string();
  const std::string_view refusal = delta["refusal"].string();
  const JsonValue tool_calls = delta["tool_calls"];
  const bool output = !reasoning.empty() || !text.empty() || !refusal.empty() || tool_calls.size() > 0;
  if (output && finish_reason_) return fail(protocol_error(kApi, "output arrived after the finish_reason"));
  if (!reasoning.empty()) out.push_back(pe::ReasoningDelta{std::string(reasoning), nullptr});
  if (!text.empty()) out.push_back(pe::TextDelta{std::string(text)});
  if (!refusal.empty()) {
    refused_ = true;
    out.push_back(pe::TextDelta{std::string(refusal)});
  }
  for (size_t i = 0, n = tool_calls.size(); i < n; ++i) KEEL_TRY(on_tool_call(tool_calls.at(i), out));

  const JsonValue reason = choice["finish_reason"];
  if (reason.is_string()) {
    if (finish_reason_ && *finish_reason_ != reason.string()) {
      return fail(protocol_error(kApi, "a second, different finish_reason"));
    }
    finish_reason_ = std::string(reason.string());
    end_calls(out);
  }
  return {};
}

Result<void> ChatDecoder::on_tool_call(JsonValue call, std::vector<ProviderEvent>& out) {
  const JsonValue function = call["function"];
  const std::string_view id = call["id"].string();
  // Every documented chunk has an index; servers that omit it send each call whole, so a fragment with a
  // new id is a new call (numbered below zero, apart from documented indices) and one without continues
  // the last.
  std::optional<int64_t> provider_index = call["index"].int64();
  if (!provider_index) {
    if (!id.empty() || calls_.empty()) {
      provider_index = -static_cast<int64_t>(calls_.size()) - 1;
    } else {
      provider_index = calls_.back().provider_index;
    }
  }
  auto it = std::find_if(calls_.begin(), calls_.end(),
                         [&](const Call& c) { return c.provider_index == *provider_index; });
  if (it == calls_.end()) {
    const std::string_view name = function["name"].string();
    if (name.empty()) {
      return fail(protocol_error(kApi, "arguments for tool call index " + std::to_string(*provider_index) +
                                           ", which was never started"));
    }
    const int index = static_cast<int>(calls_.size());
    calls_.push_back(Call{*provider_index, index});
    out.push_back(pe::ToolCallStart{index, std::string(id), std::string(name)});
    it = calls_.end() - 1;
  }
  const JsonValue arguments = function["arguments"];
  if (arguments.is_string() && !arguments.string().empty()) {
    out.push_back(pe::ToolCallDelta{it->index, std::string(arguments.string())});
  } else if (arguments.is_object()) {
    out.push_back(
        pe::ToolCallDelta{it->index, std::string(arguments.raw())});  // a server that sent JSON itself
  }
  return {};
}

void ChatDecoder::end_calls(std::vector<ProviderEvent>& out) {
  if (calls_ended_) return;
  calls_ended_ = true;
  for (const Call& call : calls_) out.push_back(pe::ToolCallEnd{call.index});
}

Result<void> ChatDecoder::on_done(std::vector<ProviderEvent>& out) {
  done_ = true;
  if (!finish_reason_) return fail(protocol_error(kApi, "[DONE] arrived without a finish_reason"));
  end_calls(out);
  const std::string& raw = *finish_reason_;
  StopReason reason = StopReason::kError;
  if (raw == "stop") {
    // "stop" with tool calls stays end, which the engine refuses as a protocol error before any tool runs
    // (spec §2), unless the provider is configured to take it as tool_calls (see the header).
    reason = !calls_.empty() && stop_with_tool_calls_is_tool_use_ ? StopReason::kToolUse
             : refused_ && calls_.empty()                         ? StopReason::kContentFilter
                                                                  : StopReason::kEnd;
  } else if (raw == "tool_calls" || raw == "function_call") {
    reason = StopReason::kToolUse;
  } else if (raw == "length") {
    reason = StopReason::kMaxTokens;
  } else if (raw == "content_filter") {
    reason = StopReason::kContentFilter;
  }
  out.push_back(pe::Finish{reason, raw});
  return {};
}

std::unique_ptr<StreamDecoder> ChatCodec::new_decoder() const {
  return std::make_unique<ChatDecoder>(options_.chat_stop_with_tool_calls_is_tool_use);
}

}  // namespace

std::unique_ptr<WireCodec> make_openai_chat_codec(CodecOptions options) {
  return std::make_unique<ChatCodec>(options);
}

}  // namespace keel::providers
