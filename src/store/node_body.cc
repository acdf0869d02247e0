#include "store/node_body.h"

#include <algorithm>
#include <array>
#include <utility>

#include "keel/error_codes.h"

namespace keel {
namespace {

using nlohmann::json;

constexpr std::array<std::pair<AssistantStopReason, std::string_view>, 5> kStopReasons = {{
    {AssistantStopReason::kToolUse, "tool_use"},
    {AssistantStopReason::kEnd, "end"},
    {AssistantStopReason::kMaxTokens, "max_tokens"},
    {AssistantStopReason::kContentFilter, "content_filter"},
    {AssistantStopReason::kError, "error"},
}};

// Every decode error names where it happened: "<what>: <problem>".
std::unexpected<Error> decode_error(std::string_view what, std::string_view problem) {
  return fail(codes::kStoreDecode, std::string(what) + ": " + std::string(problem));
}

std::unexpected<Error> invalid(std::string_view what, std::string_view problem) {
  return fail(codes::kInvalidArgument, std::string(what) + ": " + std::string(problem));
}

std::string quoted(std::string_view key) { return "\"" + std::string(key) + "\""; }

Result<void> require_object(const json& value, std::string_view what) {
  if (!value.is_object()) {
    return decode_error(what, std::string("must be a JSON object, not ") + value.type_name());
  }
  return {};
}

// The member `key` of `object`, or nullptr when it is missing.
json* find_member(json& object, std::string_view key) {
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

Result<std::string> take_string(json& object, std::string_view key, std::string_view what, bool allow_empty) {
  json* value = find_member(object, key);
  if (value == nullptr) return decode_error(what, quoted(key) + " is missing");
  if (!value->is_string()) {
    return decode_error(what, quoted(key) + " must be a string, not " + value->type_name());
  }
  std::string text = std::move(value->get_ref<std::string&>());
  if (!allow_empty && text.empty()) return decode_error(what, quoted(key) + " must not be empty");
  return text;
}

Result<std::optional<std::string>> take_optional_string(json& object, std::string_view key,
                                                        std::string_view what) {
  json* value = find_member(object, key);
  if (value == nullptr || value->is_null()) return std::optional<std::string>();
  if (!value->is_string()) {
    return decode_error(what, quoted(key) + " must be a string, not " + value->type_name());
  }
  return std::optional<std::string>(std::move(value->get_ref<std::string&>()));
}

// A boolean; `fallback` when missing (nullopt: required).
Result<bool> take_bool(json& object, std::string_view key, std::string_view what,
                       std::optional<bool> fallback) {
  json* value = find_member(object, key);
  if (value == nullptr) {
    if (fallback) return *fallback;
    return decode_error(what, quoted(key) + " is missing");
  }
  if (!value->is_boolean()) {
    return decode_error(what, quoted(key) + " must be a boolean, not " + value->type_name());
  }
  return value->get<bool>();
}

// Any JSON value; null when missing.
json take_any(json& object, std::string_view key) {
  json* value = find_member(object, key);
  return value == nullptr ? json() : std::move(*value);
}

Result<ContentBlock> block_from_json(json&& value, std::string_view what) {
  KEEL_TRY(require_object(value, what));
  const std::string type = KEEL_TRY(take_string(value, "type", what, /*allow_empty=*/false));
  ContentBlock block;
  if (type == "text") {
    block.kind = ContentBlock::Kind::kText;
    block.text = KEEL_TRY(take_string(value, "text", what, /*allow_empty=*/true));
  } else if (type == "image") {
    block.kind = ContentBlock::Kind::kImage;
    block.media_type = KEEL_TRY(take_string(value, "mediaType", what, /*allow_empty=*/false));
    block.data_base64 = KEEL_TRY(take_string(value, "data", what, /*allow_empty=*/true));
  } else if (type == "reasoning") {
    block.kind = ContentBlock::Kind::kReasoning;
    block.text = KEEL_TRY(take_string(value, "text", what, /*allow_empty=*/true));
  } else {
    return decode_error(what, "unknown content block type \"" + type + "\"");
  }
  block.provider_data = take_any(value, "providerData");
  return block;
}

Result<std::vector<ContentBlock>> blocks_from_json(json&& value, std::string_view what) {
  if (!value.is_array()) {
    return decode_error(what, std::string("\"content\" must be an array, not ") + value.type_name());
  }
  std::vector<ContentBlock> blocks;
  blocks.reserve(value.size());
  for (size_t i = 0; i < value.size(); ++i) {
    auto block = block_from_json(std::move(value[i]), "block");
    if (!block)
      return fail(block.error().with_context(std::string(what) + ": content[" + std::to_string(i) + "]"));
    blocks.push_back(std::move(block).value());
  }
  return blocks;
}

Result<std::vector<ContentBlock>> take_content(json& object, std::string_view what) {
  json* value = find_member(object, "content");
  if (value == nullptr) return decode_error(what, "\"content\" is missing");
  return blocks_from_json(std::move(*value), what);
}

json block_to_json(const ContentBlock& block) {
  json out = json::object();
  switch (block.kind) {
    case ContentBlock::Kind::kText:
      out["type"] = "text";
      out["text"] = block.text;
      break;
    case ContentBlock::Kind::kImage:
      out["type"] = "image";
      out["mediaType"] = block.media_type;
      out["data"] = block.data_base64;
      break;
    case ContentBlock::Kind::kReasoning:
      out["type"] = "reasoning";
      out["text"] = block.text;
      break;
  }
  if (!block.provider_data.is_null()) out["providerData"] = block.provider_data;
  return out;
}

Result<void> check_content(std::span<const ContentBlock> content, std::string_view what) {
  for (size_t i = 0; i < content.size(); ++i) {
    if (content[i].kind == ContentBlock::Kind::kImage && content[i].media_type.empty()) {
      return invalid(what, "content[" + std::to_string(i) + "] is an image without a media type");
    }
  }
  return {};
}

constexpr std::array<std::pair<Role, std::string_view>, 3> kRoles = {{
    {Role::kUser, "user"},
    {Role::kAssistant, "assistant"},
    {Role::kTool, "tool"},
}};

json message_to_json(const Message& message) {
  json out = {{"role", "user"}, {"content", json::array()}};
  for (const auto& [role, name] : kRoles) {
    if (role == message.role) out["role"] = name;
  }
  for (const ContentBlock& block : message.content) out["content"].push_back(block_to_json(block));
  if (!message.tool_calls.empty()) {
    json calls = json::array();
    for (const ToolCall& call : message.tool_calls) {
      calls.push_back({{"id", call.id}, {"name", call.name}, {"arguments", call.arguments}});
    }
    out["toolCalls"] = std::move(calls);
  }
  if (!message.tool_call_id.empty()) out["toolCallId"] = message.tool_call_id;
  if (message.is_error) out["isError"] = true;
  if (!message.source_node_id.empty()) out["sourceNodeId"] = message.source_node_id;
  return out;
}

Result<Message> message_from_json(json&& value, std::string_view what) {
  KEEL_TRY(require_object(value, what));
  Message message;
  const std::string role = KEEL_TRY(take_string(value, "role", what, /*allow_empty=*/false));
  auto known =
      std::find_if(kRoles.begin(), kRoles.end(), [&](const auto& entry) { return entry.second == role; });
  if (known == kRoles.end()) return decode_error(what, "unknown role \"" + role + "\"");
  message.role = known->first;
  message.content = KEEL_TRY(take_content(value, what));
  json calls = take_any(value, "toolCalls");
  if (!calls.is_null()) {
    if (!calls.is_array()) return decode_error(what, "\"toolCalls\" must be an array");
    for (json& call : calls) {
      KEEL_TRY(require_object(call, what));
      ToolCall decoded;
      decoded.id = KEEL_TRY(take_string(call, "id", what, /*allow_empty=*/false));
      decoded.name = KEEL_TRY(take_string(call, "name", what, /*allow_empty=*/false));
      json arguments = take_any(call, "arguments");
      if (!arguments.is_object()) return decode_error(what, "a tool call's \"arguments\" must be an object");
      decoded.arguments = std::move(arguments);
      message.tool_calls.push_back(std::move(decoded));
    }
  }
  message.tool_call_id = KEEL_TRY(take_optional_string(value, "toolCallId", what)).value_or("");
  message.is_error = KEEL_TRY(take_bool(value, "isError", what, false));
  message.source_node_id = KEEL_TRY(take_optional_string(value, "sourceNodeId", what)).value_or("");
  return message;
}

Result<int64_t> take_int(json& object, std::string_view key, std::string_view what) {
  json* value = find_member(object, key);
  if (value == nullptr || !value->is_number_integer()) {
    return decode_error(what, quoted(key) + " must be an integer");
  }
  return value->get<int64_t>();
}

}  // namespace

std::string_view to_string(AssistantStopReason reason) {
  for (const auto& [r, name] : kStopReasons) {
    if (r == reason) return name;
  }
  return "unknown";
}

Result<AssistantStopReason> parse_assistant_stop_reason(std::string_view text) {
  for (const auto& [r, name] : kStopReasons) {
    if (name == text) return r;
  }
  return fail(codes::kStoreDecode, "unknown assistant stop reason \"" + std::string(text) + "\"");
}

json content_to_json(std::span<const ContentBlock> content) {
  json out = json::array();
  for (const ContentBlock& block : content) out.push_back(block_to_json(block));
  return out;
}

Result<std::vector<ContentBlock>> content_from_json(const json& content) {
  return blocks_from_json(json(content), "content");
}

Result<json> encode_user_message(const UserMessageBody& body) {
  KEEL_TRY(check_content(body.content, "user_message"));
  json out = {{"content", content_to_json(body.content)}, {"steered", body.steered}};
  if (body.steer_id) {
    if (body.steer_id->empty()) return invalid("user_message", "an empty steer id");
    out["steerId"] = *body.steer_id;
  }
  return out;
}

Result<json> encode_assistant_message(const AssistantMessageBody& body) {
  KEEL_TRY(check_content(body.content, "assistant_message"));
  json out = {{"content", content_to_json(body.content)},
              {"stopReason", to_string(body.stop_reason)},
              {"providerStopReason", body.provider_stop_reason}};
  if (body.usage) {
    if (!body.usage->is_object()) return invalid("assistant_message", "usage must be an object");
    out["usage"] = *body.usage;
  }
  return out;
}

Result<json> encode_tool_call(const ToolCallBody& body) {
  if (body.tool_call_id.empty()) return invalid("tool_call", "an empty tool call id");
  if (body.name.empty()) return invalid("tool_call", "an empty tool name");
  if (!body.arguments.is_object()) {
    return invalid("tool_call",
                   std::string("arguments must be an object, not ") + body.arguments.type_name());
  }
  if (body.assistant_node_id.empty()) return invalid("tool_call", "an empty assistant node id");
  return json{{"toolCallId", body.tool_call_id},
              {"name", body.name},
              {"arguments", body.arguments},
              {"assistantNodeId", body.assistant_node_id}};
}

Result<json> encode_tool_result(const ToolResultBody& body) {
  if (body.tool_call_id.empty()) return invalid("tool_result", "an empty tool call id");
  KEEL_TRY(check_content(body.content, "tool_result"));
  json out = {{"toolCallId", body.tool_call_id},
              {"content", content_to_json(body.content)},
              {"isError", body.is_error}};
  if (!body.details.is_null()) out["details"] = body.details;
  if (body.untrusted) {
    const DataSource& source = *body.untrusted;
    if (source.tool.empty() || source.provenance.empty()) {
      return invalid("tool_result", "an untrusted source without a tool or provenance");
    }
    json untrusted = {{"tool", source.tool}, {"provenance", source.provenance}};
    if (!source.path.empty()) untrusted["path"] = source.path;
    if (!source.origin.empty()) untrusted["origin"] = source.origin;
    if (!source.server.empty()) untrusted["server"] = source.server;
    out["untrusted"] = std::move(untrusted);
  }
  return out;
}

Result<json> encode_notice(const NoticeBody& body) {
  return json{{"text", body.text}, {"forModel", body.for_model}};
}

Result<json> encode_compaction(const CompactionBody& body) {
  json tail = json::array();
  for (const Message& message : body.tail) {
    KEEL_TRY(check_content(message.content, "compaction tail"));
    tail.push_back(message_to_json(message));
  }
  json out = {{"summary", body.summary},
              {"replacedToNodeId", body.replaced_to_node_id},
              {"tail", std::move(tail)},
              {"tokensBefore", body.tokens_before},
              {"tokensAfter", body.tokens_after}};
  if (!body.kept_from_node_id.empty()) out["keptFromNodeId"] = body.kept_from_node_id;
  return out;
}

Result<UserMessageBody> decode_user_message(json body) {
  constexpr std::string_view what = "user_message body";
  KEEL_TRY(require_object(body, what));
  UserMessageBody out;
  out.content = KEEL_TRY(take_content(body, what));
  out.steered = KEEL_TRY(take_bool(body, "steered", what, false));
  out.steer_id = KEEL_TRY(take_optional_string(body, "steerId", what));
  return out;
}

Result<AssistantMessageBody> decode_assistant_message(json body) {
  constexpr std::string_view what = "assistant_message body";
  KEEL_TRY(require_object(body, what));
  AssistantMessageBody out;
  out.content = KEEL_TRY(take_content(body, what));
  const std::string reason = KEEL_TRY(take_string(body, "stopReason", what, /*allow_empty=*/false));
  auto parsed = parse_assistant_stop_reason(reason);
  if (!parsed) return decode_error(what, parsed.error().message());
  out.stop_reason = *parsed;
  out.provider_stop_reason = KEEL_TRY(take_string(body, "providerStopReason", what, /*allow_empty=*/true));
  json usage = take_any(body, "usage");
  if (!usage.is_null()) {
    if (!usage.is_object()) {
      return decode_error(what, std::string("\"usage\" must be an object, not ") + usage.type_name());
    }
    out.usage = std::move(usage);
  }
  return out;
}

Result<ToolCallBody> decode_tool_call(json body) {
  constexpr std::string_view what = "tool_call body";
  KEEL_TRY(require_object(body, what));
  ToolCallBody out;
  out.tool_call_id = KEEL_TRY(take_string(body, "toolCallId", what, /*allow_empty=*/false));
  out.name = KEEL_TRY(take_string(body, "name", what, /*allow_empty=*/false));
  json* arguments = find_member(body, "arguments");
  if (arguments == nullptr) return decode_error(what, "\"arguments\" is missing");
  if (!arguments->is_object()) {
    return decode_error(what, std::string("\"arguments\" must be an object, not ") + arguments->type_name());
  }
  out.arguments = std::move(*arguments);
  out.assistant_node_id = KEEL_TRY(take_string(body, "assistantNodeId", what, /*allow_empty=*/false));
  return out;
}

Result<ToolResultBody> decode_tool_result(json body) {
  constexpr std::string_view what = "tool_result body";
  KEEL_TRY(require_object(body, what));
  ToolResultBody out;
  out.tool_call_id = KEEL_TRY(take_string(body, "toolCallId", what, /*allow_empty=*/false));
  out.content = KEEL_TRY(take_content(body, what));
  out.is_error = KEEL_TRY(take_bool(body, "isError", what, std::nullopt));
  out.details = take_any(body, "details");
  json untrusted = take_any(body, "untrusted");
  if (!untrusted.is_null()) {
    constexpr std::string_view source_what = "tool_result body's untrusted";
    KEEL_TRY(require_object(untrusted, source_what));
    DataSource source;
    source.tool = KEEL_TRY(take_string(untrusted, "tool", source_what, /*allow_empty=*/false));
    source.provenance = KEEL_TRY(take_string(untrusted, "provenance", source_what, /*allow_empty=*/false));
    source.path = KEEL_TRY(take_optional_string(untrusted, "path", source_what)).value_or("");
    source.origin = KEEL_TRY(take_optional_string(untrusted, "origin", source_what)).value_or("");
    source.server = KEEL_TRY(take_optional_string(untrusted, "server", source_what)).value_or("");
    out.untrusted = std::move(source);
  }
  return out;
}

Result<NoticeBody> decode_notice(json body) {
  constexpr std::string_view what = "notice body";
  KEEL_TRY(require_object(body, what));
  NoticeBody out;
  out.text = KEEL_TRY(take_string(body, "text", what, /*allow_empty=*/true));
  out.for_model = KEEL_TRY(take_bool(body, "forModel", what, std::nullopt));
  return out;
}

Result<CompactionBody> decode_compaction(json body) {
  constexpr std::string_view what = "compaction body";
  KEEL_TRY(require_object(body, what));
  CompactionBody out;
  out.summary = KEEL_TRY(take_string(body, "summary", what, /*allow_empty=*/false));
  out.replaced_to_node_id = KEEL_TRY(take_string(body, "replacedToNodeId", what, /*allow_empty=*/false));
  out.kept_from_node_id = KEEL_TRY(take_optional_string(body, "keptFromNodeId", what)).value_or("");
  json* tail = find_member(body, "tail");
  if (tail == nullptr || !tail->is_array()) return decode_error(what, "\"tail\" must be an array");
  for (json& message : *tail) out.tail.push_back(KEEL_TRY(message_from_json(std::move(message), what)));
  out.tokens_before = KEEL_TRY(take_int(body, "tokensBefore", what));
  out.tokens_after = KEEL_TRY(take_int(body, "tokensAfter", what));
  return out;
}

Result<void> validate_node_body(NodeKind kind, const json& body) {
  switch (kind) {
    case NodeKind::kUserMessage:
      KEEL_TRY(decode_user_message(body));
      return {};
    case NodeKind::kAssistantMessage:
      KEEL_TRY(decode_assistant_message(body));
      return {};
    case NodeKind::kToolCall:
      KEEL_TRY(decode_tool_call(body));
      return {};
    case NodeKind::kToolResult:
      KEEL_TRY(decode_tool_result(body));
      return {};
    case NodeKind::kNotice:
      KEEL_TRY(decode_notice(body));
      return {};
    case NodeKind::kCompaction:
      KEEL_TRY(decode_compaction(body));
      return {};
    case NodeKind::kTurnContext:
      return require_object(body, "turn_context body");
    case NodeKind::kApprovalDecision:
      return require_object(body, "approval_decision body");
  }
  return fail(codes::kInternal, "unknown node kind");
}

}  // namespace keel
