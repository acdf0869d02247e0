#include "providers/wire/openai_responses_codec.h"

#include <algorithm>
#include <string>
#include <utility>

#include "providers/wire/codec_support.h"
#include "providers/wire/json_tape.h"
#include "providers/wire/provider_error_mapping.h"

namespace keel::providers {
namespace {

using nlohmann::json;
namespace pe = provider_event;

constexpr std::string_view kApi = "OpenAI Responses";
constexpr std::string_view kDataKey = "openai_responses";

// --- request ---

json input_parts(const std::vector<ContentBlock>& content) {
  json parts = json::array();
  for (const ContentBlock& block : content) {
    if (block.kind == ContentBlock::Kind::kText) {
      parts.push_back({{"type", "input_text"}, {"text", block.text}});
    } else if (block.kind == ContentBlock::Kind::kImage) {
      parts.push_back({{"type", "input_image"}, {"image_url", image_data_url(block)}});
    }
  }
  return parts;
}

// The reasoning item to send back for `block`, or null when it cannot be sent (see the header).
json reasoning_item(const ContentBlock& block) {
  const json* data = provider_entry(block, kDataKey);
  if (data == nullptr) return nullptr;
  auto encrypted = data->find("encrypted_content");
  if (encrypted == data->end() || !encrypted->is_string()) return nullptr;
  json item = {{"type", "reasoning"}, {"encrypted_content", *encrypted}};
  if (auto id = data->find("id"); id != data->end() && id->is_string()) item["id"] = *id;
  auto summary = data->find("summary");
  if (summary != data->end() && summary->is_array()) {
    item["summary"] = *summary;
  } else if (!block.text.empty()) {
    item["summary"] = json::array({{{"type", "summary_text"}, {"text", block.text}}});
  } else {
    item["summary"] = json::array();
  }
  return item;
}

void add_assistant_items(const Message& message, const ModelCapabilities& caps, json& input) {
  std::string text;
  for (const ContentBlock& block : message.content) {
    if (block.kind == ContentBlock::Kind::kText) {
      text += block.text;
    } else if (block.kind == ContentBlock::Kind::kReasoning && caps.reasoning) {
      if (json item = reasoning_item(block); !item.is_null()) input.push_back(std::move(item));
    }
  }
  if (is_empty_reply(message)) text = kEmptyReplyText;
  if (!text.empty()) input.push_back({{"role", "assistant"}, {"content", std::move(text)}});
  for (const ToolCall& call : message.tool_calls) {
    input.push_back({{"type", "function_call"},
                     {"call_id", call.id},
                     {"name", call.name},
                     {"arguments", call.arguments.dump()}});
  }
}

class ResponsesCodec final : public WireCodec {
 public:
  WireFormat format() const override { return WireFormat::kOpenAiResponses; }
  Result<json> encode(const ProviderRequest& request, const ModelCapabilities& caps) const override;
  std::unique_ptr<StreamDecoder> new_decoder() const override;
};

Result<json> ResponsesCodec::encode(const ProviderRequest& request, const ModelCapabilities& caps) const {
  KEEL_TRY(check_request(request, caps));
  json input = json::array();
  for (const Message& message : request.messages) {
    switch (message.role) {
      case Role::kUser:
        input.push_back({{"role", "user"}, {"content", input_parts(message.content)}});
        break;
      case Role::kAssistant:
        add_assistant_items(message, caps, input);
        break;
      case Role::kTool: {
        json output =
            has_image(message.content) ? input_parts(message.content) : json(text_of(message.content));
        input.push_back({{"type", "function_call_output"},
                         {"call_id", message.tool_call_id},
                         {"output", std::move(output)}});
        break;
      }
    }
  }
  json body = {{"model", request.model},
               {"input", std::move(input)},
               {"stream", true},
               {"store", false},
               {"max_output_tokens", output_token_limit(request, caps)}};
  if (!request.system_prompt.empty()) body["instructions"] = request.system_prompt;
  if (caps.reasoning) body["include"] = json::array({"reasoning.encrypted_content"});
  if (!request.tools.empty()) {
    json tools = json::array();
    for (const ProviderTool& tool : request.tools) {
      tools.push_back({{"type", "function"},
                       {"name", tool.name},
                       {"description", tool.description},
                       {"parameters", tool.input_schema},
                       {"strict", false}});
    }
    body["tools"] = std::move(tools);
  }
  KEEL_TRY(add_parameters(body, request.parameters,
                          {"model", "input", "instructions", "stream", "store", "include", "tools",
                           "max_output_tokens", "previous_response_id"}));
  return body;
}

// --- stream ---

class ResponsesDecoder final : public StreamDecoder {
 protected:
  Result<void> decode_event(const SseEvent& event, std::vector<ProviderEvent>& out) override;
  Result<void> finish_stream(std::vector<ProviderEvent>&) override {
    if (!terminal_) return fail(truncated_error(kApi, "response.completed"));
    return {};
  }

 private:
  enum class Kind { kMessage, kFunctionCall, kReasoning, kOther };
  struct Item {
    int64_t output_index = 0;
    Kind kind = Kind::kOther;
    int tool_index = 0;
    bool done = false;
    bool got_arguments = false;
    bool got_reasoning_text = false;
    int64_t summary_index = -1;
  };

  Result<Item*> item_for(JsonValue data, std::string_view type);
  Result<void> on_item_added(JsonValue data, std::vector<ProviderEvent>& out);
  Result<void> on_item_done(JsonValue data, std::vector<ProviderEvent>& out);
  Result<void> on_reasoning_delta(JsonValue data, std::string_view type, std::vector<ProviderEvent>& out);
  Result<void> on_end(JsonValue response, bool completed, std::vector<ProviderEvent>& out);

  JsonTape tape_;
  std::vector<Item> items_;
  int tools_ = 0;
  bool refused_ = false;
  bool terminal_ = false;
};

Result<void> ResponsesDecoder::decode_event(const SseEvent& event, std::vector<ProviderEvent>& out) {
  if (terminal_) return fail(protocol_error(kApi, "an event arrived after the response ended"));
  const JsonValue data = KEEL_TRY(parse_event_object(tape_, event.data, kApi));
  std::string_view type = data["type"].string();
  if (type.empty()) type = event.event;

  if (type == "response.output_text.delta" || type == "response.refusal.delta") {
    KEEL_TRY(item_for(data, type));
    const std::string_view delta = data["delta"].string();
    if (type == "response.refusal.delta") refused_ = true;
    if (!delta.empty()) out.push_back(pe::TextDelta{std::string(delta)});
    return {};
  }
  if (type == "response.function_call_arguments.delta" || type == "response.function_call_arguments.done") {
    Item* item = KEEL_TRY(item_for(data, type));
    if (item->kind != Kind::kFunctionCall || item->done) {
      return fail(protocol_error(kApi, std::string(type) + " for an item that is not an open function call"));
    }
    const bool done = type == "response.function_call_arguments.done";
    // The full text in .done matters only to a server that sent no deltas.
    const std::string_view arguments =
        done ? (item->got_arguments ? "" : data["arguments"].string()) : data["delta"].string();
    if (!arguments.empty()) {
      out.push_back(pe::ToolCallDelta{item->tool_index, std::string(arguments)});
      item->got_arguments = true;
    }
    return {};
  }
  if (type == "response.reasoning_summary_text.delta" || type == "response.reasoning_text.delta") {
    return on_reasoning_delta(data, type, out);
  }
  if (type == "response.output_item.added") return on_item_added(data, out);
  if (type == "response.output_item.done") return on_item_done(data, out);
  if (type == "response.completed") return on_end(data["response"], true, out);
  if (type == "response.incomplete") return on_end(data["response"], false, out);
  if (type == "response.failed") {
    terminal_ = true;
    const JsonValue error = data["response"]["error"];
    return fail(classify_provider_error({.api = kApi,
                                         .type = error["type"].string(),
                                         .code = error["code"].string(),
                                         .message = error["message"].string()}));
  }
  if (type == "error") {
    terminal_ = true;
    const JsonValue error = data["error"].is_object() ? data["error"] : data;
    return fail(
        classify_provider_error({.api = kApi,
                                 .type = error["type"].string() == "error" ? "" : error["type"].string(),
                                 .code = error["code"].string(),
                                 .message = error["message"].string()}));
  }
  // Other response.* events (created, in_progress, content_part.*, *.done, annotations, tool progress of
  // hosted tools) carry nothing keel keeps.
  if (type.starts_with("response.")) return {};
  return fail(unknown_event_error(kApi, type));
}

Result<ResponsesDecoder::Item*> ResponsesDecoder::item_for(JsonValue data, std::string_view type) {
  const std::optional<int64_t> index = data["output_index"].int64();
  if (!index) return fail(protocol_error(kApi, std::string(type) + " without an output_index"));
  auto it = std::find_if(items_.begin(), items_.end(),
                         [&](const Item& item) { return item.output_index == *index; });
  if (it == items_.end()) {
    return fail(protocol_error(
        kApi, std::string(type) + " for output item " + std::to_string(*index) + ", which was never added"));
  }
  return &*it;
}

Result<void> ResponsesDecoder::on_item_added(JsonValue data, std::vector<ProviderEvent>& out) {
  const std::optional<int64_t> index = data["output_index"].int64();
  if (!index) return fail(protocol_error(kApi, "response.output_item.added without an output_index"));
  if (std::any_of(items_.begin(), items_.end(),
                  [&](const Item& item) { return item.output_index == *index; })) {
    return fail(protocol_error(kApi, "output item " + std::to_string(*index) + " was added twice"));
  }
  const JsonValue item = data["item"];
  const std::string_view type = item["type"].string();
  Item& added = items_.emplace_back();
  added.output_index = *index;
  if (type == "message") {
    added.kind = Kind::kMessage;
  } else if (type == "reasoning") {
    added.kind = Kind::kReasoning;
  } else if (type == "function_call") {
    const std::string_view name = item["name"].string();
    if (name.empty()) return fail(protocol_error(kApi, "a function_call item without a name"));
    added.kind = Kind::kFunctionCall;
    added.tool_index = tools_++;
    out.push_back(
        pe::ToolCallStart{added.tool_index, std::string(item["call_id"].string()), std::string(name)});
    if (const std::string_view arguments = item["arguments"].string(); !arguments.empty()) {
      out.push_back(pe::ToolCallDelta{added.tool_index, std::string(arguments)});
      added.got_arguments = true;
    }
  }
  return {};
}

Result<void> ResponsesDecoder::on_reasoning_delta(JsonValue data, std::string_view type,
                                                  std::vector<ProviderEvent>& out) {
  Item* item = KEEL_TRY(item_for(data, type));
  if (item->kind != Kind::kReasoning || item->done) {
    return fail(protocol_error(kApi, std::string(type) + " for an item that is not an open reasoning item"));
  }
  std::string text(data["delta"].string());
  if (text.empty()) return {};
  // Summary parts are paragraphs of their own.
  const int64_t part = data["summary_index"].int64().value_or(0);
  if (item->got_reasoning_text && part != item->summary_index) text.insert(0, "\n\n");
  item->summary_index = part;
  item->got_reasoning_text = true;
  out.push_back(pe::ReasoningDelta{std::move(text), nullptr});
  return {};
}

Result<void> ResponsesDecoder::on_item_done(JsonValue data, std::vector<ProviderEvent>& out) {
  Item* item = KEEL_TRY(item_for(data, "response.output_item.done"));
  if (item->done) return fail(protocol_error(kApi, "an output item was done twice"));
  item->done = true;
  const JsonValue done = data["item"];
  if (item->kind == Kind::kFunctionCall) {
    if (const std::string_view arguments = done["arguments"].string();
        !item->got_arguments && !arguments.empty()) {
      out.push_back(pe::ToolCallDelta{item->tool_index, std::string(arguments)});
    }
    out.push_back(pe::ToolCallEnd{item->tool_index});
  } else if (item->kind == Kind::kReasoning) {
    json entry = {{"type", "reasoning"}, {"id", std::string(done["id"].string())}};
    entry["summary"] = done["summary"].is_array() ? done["summary"].to_json() : json::array();
    if (done["encrypted_content"].is_string()) {
      entry["encrypted_content"] = std::string(done["encrypted_content"].string());
    }
    // A server that streamed no summary deltas still gets its summary shown.
    std::string text;
    if (!item->got_reasoning_text) {
      done["summary"].for_each_element([&](JsonValue part) {
        if (part["text"].string().empty()) return;
        if (!text.empty()) text += "\n\n";
        text += part["text"].string();
      });
    }
    out.push_back(pe::ReasoningDelta{std::move(text), json{{kDataKey, std::move(entry)}}});
  }
  return {};
}

Result<void> ResponsesDecoder::on_end(JsonValue response, bool completed, std::vector<ProviderEvent>& out) {
  terminal_ = true;
  for (Item& item : items_) {
    if (item.kind == Kind::kFunctionCall && !item.done) {
      item.done = true;
      out.push_back(pe::ToolCallEnd{item.tool_index});
    }
  }
  if (const JsonValue usage = response["usage"]; usage.is_object()) {
    // input_tokens includes the cached ones, output_tokens the reasoning ones: keel's convention.
    out.push_back(pe::Usage{TokenUsage{
        .input_tokens = token_count(usage["input_tokens"]),
        .output_tokens = token_count(usage["output_tokens"]),
        .cached_input_tokens = token_count(usage["input_tokens_details"]["cached_tokens"]),
        .reasoning_tokens = token_count(usage["output_tokens_details"]["reasoning_tokens"]),
    }});
  }
  if (completed) {
    const StopReason reason = tools_ > 0 ? StopReason::kToolUse
                              : refused_ ? StopReason::kContentFilter
                                         : StopReason::kEnd;
    out.push_back(pe::Finish{reason, "completed"});
    return {};
  }
  const std::string_view why = response["incomplete_details"]["reason"].string();
  const StopReason reason = why == "max_output_tokens" ? StopReason::kMaxTokens
                            : why == "content_filter"  ? StopReason::kContentFilter
                                                       : StopReason::kError;
  out.push_back(pe::Finish{reason, why.empty() ? std::string("incomplete") : std::string(why)});
  return {};
}

std::unique_ptr<StreamDecoder> ResponsesCodec::new_decoder() const {
  return std::make_unique<ResponsesDecoder>();
}

}  // namespace

std::unique_ptr<WireCodec> make_openai_responses_codec() { return std::make_unique<ResponsesCodec>(); }

}  // namespace keel::providers
