#include "providers/wire/anthropic_messages_codec.h"

#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "providers/wire/codec_support.h"
#include "providers/wire/json_tape.h"
#include "providers/wire/provider_error_mapping.h"

namespace keel::providers {
namespace {

using nlohmann::json;
namespace pe = provider_event;

constexpr std::string_view kApi = "Anthropic Messages";
constexpr std::string_view kDataKey = "anthropic";

// --- request ---

json image_block(const ContentBlock& image) {
  return {{"type", "image"},
          {"source", {{"type", "base64"}, {"media_type", image.media_type}, {"data", image.data_base64}}}};
}

// Text and image blocks of a user message or tool result; empty text is left out.
json user_blocks(const std::vector<ContentBlock>& content) {
  json blocks = json::array();
  for (const ContentBlock& block : content) {
    if (block.kind == ContentBlock::Kind::kText && !block.text.empty()) {
      blocks.push_back({{"type", "text"}, {"text", block.text}});
    } else if (block.kind == ContentBlock::Kind::kImage) {
      blocks.push_back(image_block(block));
    }
  }
  return blocks;
}

json tool_result_block(const Message& message) {
  json block = {{"type", "tool_result"}, {"tool_use_id", message.tool_call_id}};
  if (has_image(message.content)) {
    block["content"] = user_blocks(message.content);
  } else {
    block["content"] = text_of(message.content);
  }
  if (message.is_error) block["is_error"] = true;
  return block;
}

// The thinking block to send back for `block`, or null when it cannot be (see the header).
json thinking_block(const ContentBlock& block) {
  const json* data = provider_entry(block, kDataKey);
  if (data == nullptr) return nullptr;
  const std::string type = data->value("type", "");
  if (type == "thinking") {
    const std::string signature = data->value("signature", "");
    if (signature.empty()) return nullptr;
    return {{"type", "thinking"}, {"thinking", block.text}, {"signature", signature}};
  }
  if (type == "redacted_thinking") {
    const std::string redacted = data->value("data", "");
    if (redacted.empty()) return nullptr;
    return {{"type", "redacted_thinking"}, {"data", redacted}};
  }
  return nullptr;
}

json assistant_blocks(const Message& message, const ModelCapabilities& caps) {
  json blocks = json::array();
  for (const ContentBlock& block : message.content) {
    if (block.kind == ContentBlock::Kind::kReasoning && caps.reasoning) {
      if (json thinking = thinking_block(block); !thinking.is_null()) blocks.push_back(std::move(thinking));
    } else if (block.kind == ContentBlock::Kind::kText && !block.text.empty()) {
      blocks.push_back({{"type", "text"}, {"text", block.text}});
    }
  }
  for (const ToolCall& call : message.tool_calls) {
    blocks.push_back({{"type", "tool_use"},
                      {"id", call.id},
                      {"name", call.name},
                      {"input", call.arguments.is_object() ? call.arguments : json::object()}});
  }
  return blocks;
}

// Appends blocks to the conversation, merging into the last message when it has the same role.
class Turns {
 public:
  void add(std::string_view role, json blocks) {
    if (blocks.empty()) return;
    if (messages_.empty() || messages_.back()["role"] != role) {
      messages_.push_back({{"role", role}, {"content", std::move(blocks)}});
      return;
    }
    json& content = messages_.back()["content"];
    for (json& block : blocks) content.push_back(std::move(block));
  }
  // A tool_result goes before any other block of its user turn.
  void add_tool_result(json block) {
    if (messages_.empty() || messages_.back()["role"] != "user") {
      add("user", json::array({std::move(block)}));
      return;
    }
    json& content = messages_.back()["content"];
    auto first_other = std::find_if(content.begin(), content.end(),
                                    [](const json& b) { return b.value("type", "") != "tool_result"; });
    content.insert(first_other, std::move(block));
  }
  json take() { return std::move(messages_); }

 private:
  json messages_ = json::array();
};

class AnthropicCodec final : public WireCodec {
 public:
  WireFormat format() const override { return WireFormat::kAnthropicMessages; }
  Result<json> encode(const ProviderRequest& request, const ModelCapabilities& caps) const override;
  std::unique_ptr<StreamDecoder> new_decoder() const override;
};

Result<json> AnthropicCodec::encode(const ProviderRequest& request, const ModelCapabilities& caps) const {
  KEEL_TRY(check_request(request, caps));
  Turns turns;
  for (const Message& message : request.messages) {
    switch (message.role) {
      case Role::kUser:
        turns.add("user", user_blocks(message.content));
        break;
      case Role::kAssistant: {
        json blocks = assistant_blocks(message, caps);
        if (is_empty_reply(message)) blocks.push_back({{"type", "text"}, {"text", kEmptyReplyText}});
        turns.add("assistant", std::move(blocks));
        break;
      }
      case Role::kTool:
        turns.add_tool_result(tool_result_block(message));
        break;
    }
  }
  json body = {{"model", request.model},
               {"max_tokens", output_token_limit(request, caps)},
               {"messages", turns.take()},
               {"stream", true}};
  if (!request.system_prompt.empty()) body["system"] = request.system_prompt;
  if (!request.tools.empty()) {
    json tools = json::array();
    for (const ProviderTool& tool : request.tools) {
      tools.push_back(
          {{"name", tool.name}, {"description", tool.description}, {"input_schema", tool.input_schema}});
    }
    body["tools"] = std::move(tools);
  } else {
    // The API refuses a history with tool_use blocks unless the request defines tools. With none offered
    // (the failure breaker turned them off), the tools the history names are declared, with an open
    // schema, and tool_choice none, so the model can call none of them.
    std::set<std::string> names;
    for (const Message& message : request.messages) {
      for (const ToolCall& call : message.tool_calls) names.insert(call.name);
    }
    if (!names.empty()) {
      json tools = json::array();
      for (const std::string& name : names) {
        tools.push_back({{"name", name},
                         {"description", "Disabled for this request."},
                         {"input_schema", {{"type", "object"}}}});
      }
      body["tools"] = std::move(tools);
      body["tool_choice"] = {{"type", "none"}};
    }
  }
  KEEL_TRY(add_parameters(body, request.parameters,
                          {"model", "messages", "system", "stream", "tools", "tool_choice", "max_tokens"}));
  return body;
}

// --- stream ---

StopReason map_stop_reason(std::string_view reason) {
  if (reason == "end_turn" || reason == "stop_sequence" || reason == "pause_turn") return StopReason::kEnd;
  if (reason == "tool_use") return StopReason::kToolUse;
  if (reason == "max_tokens" || reason == "model_context_window_exceeded") return StopReason::kMaxTokens;
  if (reason == "refusal") return StopReason::kContentFilter;
  return StopReason::kError;
}

class AnthropicDecoder final : public StreamDecoder {
 protected:
  Result<void> decode_event(const SseEvent& event, std::vector<ProviderEvent>& out) override;
  Result<void> finish_stream(std::vector<ProviderEvent>&) override {
    if (!terminal_) return fail(truncated_error(kApi, "message_stop"));
    return {};
  }

 private:
  enum class Kind { kText, kThinking, kTool, kOther };
  struct Block {
    int64_t index = 0;
    Kind kind = Kind::kOther;
    int tool_index = 0;
    bool stopped = false;
    std::string signature;
  };

  Result<Block*> open_block(JsonValue data, std::string_view type);
  Result<void> on_block_start(JsonValue data, std::vector<ProviderEvent>& out);
  Result<void> on_block_delta(JsonValue data, std::vector<ProviderEvent>& out);
  Result<void> on_block_stop(JsonValue data, std::vector<ProviderEvent>& out);
  Result<void> on_message_stop(std::vector<ProviderEvent>& out);
  void update_usage(JsonValue usage);

  JsonTape tape_;
  std::vector<Block> blocks_;
  int tools_ = 0;
  bool started_ = false;
  bool terminal_ = false;
  std::optional<std::string> stop_reason_;
  int64_t input_tokens_ = 0;
  int64_t cache_creation_tokens_ = 0;
  int64_t cache_read_tokens_ = 0;
  int64_t output_tokens_ = 0;
};

Result<void> AnthropicDecoder::decode_event(const SseEvent& event, std::vector<ProviderEvent>& out) {
  if (terminal_) return fail(protocol_error(kApi, "an event arrived after message_stop"));
  const JsonValue data = KEEL_TRY(parse_event_object(tape_, event.data, kApi));
  std::string_view type = data["type"].string();
  if (type.empty()) type = event.event;

  if (type == "ping") return {};
  if (type == "error") {
    const JsonValue error = data["error"];
    return fail(classify_provider_error(
        {.api = kApi, .type = error["type"].string(), .message = error["message"].string()}));
  }
  const bool known = type == "message_start" || type == "content_block_start" ||
                     type == "content_block_delta" || type == "content_block_stop" ||
                     type == "message_delta" || type == "message_stop";
  if (!known) return {};  // Anthropic adds event types over time and asks clients to ignore unknown ones
  if (type == "message_start") {
    if (started_) return fail(protocol_error(kApi, "a second message_start"));
    started_ = true;
    update_usage(data["message"]["usage"]);
    return {};
  }
  if (!started_) return fail(protocol_error(kApi, std::string(type) + " before message_start"));
  if (type == "content_block_delta") return on_block_delta(data, out);
  if (type == "content_block_start") return on_block_start(data, out);
  if (type == "content_block_stop") return on_block_stop(data, out);
  if (type == "message_delta") {
    if (const JsonValue reason = data["delta"]["stop_reason"]; reason.is_string()) {
      stop_reason_ = std::string(reason.string());
    }
    update_usage(data["usage"]);
    return {};
  }
  return on_message_stop(out);
}

void AnthropicDecoder::update_usage(JsonValue usage) {
  // message_delta's counts are cumulative; a field it leaves out keeps message_start's value.
  auto update = [&](std::string_view field, int64_t& value) {
    if (usage[field].int64()) value = token_count(usage[field]);
  };
  update("input_tokens", input_tokens_);
  update("cache_creation_input_tokens", cache_creation_tokens_);
  update("cache_read_input_tokens", cache_read_tokens_);
  update("output_tokens", output_tokens_);
}

Result<AnthropicDecoder::Block*> AnthropicDecoder::open_block(JsonValue data, std::string_view type) {
  const std::optional<int64_t> index = data["index"].int64();
  if (!index) return fail(protocol_error(kApi, std::string(type) + " without an index"));
  auto it = std::find_if(blocks_.begin(), blocks_.end(), [&](const Block& b) { return b.index == *index; });
  if (it == blocks_.end() || it->stopped) {
    return fail(protocol_error(
        kApi, std::string(type) + " for content block " + std::to_string(*index) + ", which is not open"));
  }
  return &*it;
}

Result<void> AnthropicDecoder::on_block_start(JsonValue data, std::vector<ProviderEvent>& out) {
  const std::optional<int64_t> index = data["index"].int64();
  if (!index) return fail(protocol_error(kApi, "content_block_start without an index"));
  if (std::any_of(blocks_.begin(), blocks_.end(), [&](const Block& b) { return b.index == *index; })) {
    return fail(protocol_error(kApi, "content block " + std::to_string(*index) + " was started twice"));
  }
  const JsonValue block = data["content_block"];
  const std::string_view type = block["type"].string();
  Block& started = blocks_.emplace_back();
  started.index = *index;
  if (type == "text") {
    started.kind = Kind::kText;
    if (const std::string_view text = block["text"].string(); !text.empty()) {
      out.push_back(pe::TextDelta{std::string(text)});
    }
  } else if (type == "thinking") {
    started.kind = Kind::kThinking;
    started.signature = block["signature"].string();
    if (const std::string_view text = block["thinking"].string(); !text.empty()) {
      out.push_back(pe::ReasoningDelta{std::string(text), nullptr});
    }
  } else if (type == "redacted_thinking") {
    // Complete at its start: the encrypted thinking has no deltas.
    json entry = {{"type", "redacted_thinking"}, {"data", std::string(block["data"].string())}};
    out.push_back(pe::ReasoningDelta{"", json{{kDataKey, std::move(entry)}}});
  } else if (type == "tool_use") {
    const std::string_view name = block["name"].string();
    if (name.empty()) return fail(protocol_error(kApi, "a tool_use block without a name"));
    started.kind = Kind::kTool;
    started.tool_index = tools_++;
    out.push_back(
        pe::ToolCallStart{started.tool_index, std::string(block["id"].string()), std::string(name)});
    // The input arrives as input_json_delta fragments; a non-empty input here is a server that sent it whole.
    if (const JsonValue input = block["input"]; input.is_object() && input.size() > 0) {
      out.push_back(pe::ToolCallDelta{started.tool_index, std::string(input.raw())});
    }
  }
  return {};
}

Result<void> AnthropicDecoder::on_block_delta(JsonValue data, std::vector<ProviderEvent>& out) {
  Block* block = KEEL_TRY(open_block(data, "content_block_delta"));
  if (block->kind == Kind::kOther) return {};  // a block type keel does not know: its deltas neither
  const JsonValue delta = data["delta"];
  const std::string_view type = delta["type"].string();
  auto expect = [&](Kind kind) -> Result<void> {
    if (block->kind == kind) return {};
    return fail(protocol_error(kApi, std::string(type) + " in a content block of another type"));
  };
  if (type == "text_delta") {
    KEEL_TRY(expect(Kind::kText));
    if (const std::string_view text = delta["text"].string(); !text.empty()) {
      out.push_back(pe::TextDelta{std::string(text)});
    }
  } else if (type == "input_json_delta") {
    KEEL_TRY(expect(Kind::kTool));
    if (const std::string_view json_text = delta["partial_json"].string(); !json_text.empty()) {
      out.push_back(pe::ToolCallDelta{block->tool_index, std::string(json_text)});
    }
  } else if (type == "thinking_delta") {
    KEEL_TRY(expect(Kind::kThinking));
    if (const std::string_view text = delta["thinking"].string(); !text.empty()) {
      out.push_back(pe::ReasoningDelta{std::string(text), nullptr});
    }
  } else if (type == "signature_delta") {
    KEEL_TRY(expect(Kind::kThinking));
    block->signature += delta["signature"].string();
  }
  return {};  // other delta types (citations_delta, ...) add nothing keel keeps
}

Result<void> AnthropicDecoder::on_block_stop(JsonValue data, std::vector<ProviderEvent>& out) {
  Block* block = KEEL_TRY(open_block(data, "content_block_stop"));
  block->stopped = true;
  if (block->kind == Kind::kTool) {
    out.push_back(pe::ToolCallEnd{block->tool_index});
  } else if (block->kind == Kind::kThinking && !block->signature.empty()) {
    json entry = {{"type", "thinking"}, {"signature", std::move(block->signature)}};
    out.push_back(pe::ReasoningDelta{"", json{{kDataKey, std::move(entry)}}});
  }
  return {};
}

Result<void> AnthropicDecoder::on_message_stop(std::vector<ProviderEvent>& out) {
  terminal_ = true;
  if (!stop_reason_) return fail(protocol_error(kApi, "message_stop without a stop_reason"));
  for (Block& block : blocks_) {
    if (block.kind == Kind::kTool && !block.stopped) {
      block.stopped = true;
      out.push_back(pe::ToolCallEnd{block.tool_index});
    }
  }
  out.push_back(pe::Usage{TokenUsage{
      .input_tokens = input_tokens_ + cache_creation_tokens_ + cache_read_tokens_,
      .output_tokens = output_tokens_,
      .cached_input_tokens = cache_read_tokens_,
      .reasoning_tokens = 0,  // Anthropic does not report thinking tokens apart from the output
  }});
  out.push_back(pe::Finish{map_stop_reason(*stop_reason_), *stop_reason_});
  return {};
}

std::unique_ptr<StreamDecoder> AnthropicCodec::new_decoder() const {
  return std::make_unique<AnthropicDecoder>();
}

}  // namespace

std::unique_ptr<WireCodec> make_anthropic_messages_codec() { return std::make_unique<AnthropicCodec>(); }

}  // namespace keel::providers
