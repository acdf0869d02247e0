#include "model_server/history_rules.h"

#include <set>
#include <vector>

namespace keel::model_server {
namespace {

using nlohmann::json;

std::string at(const char* list, size_t index) {
  return std::string(list) + "[" + std::to_string(index) + "]";
}

std::string string_field(const json& object, const char* key) {
  if (!object.is_object()) return "";
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

const json* array_field(const json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(key);
  return it != object.end() && it->is_array() ? &*it : nullptr;
}

std::string ids_of(const std::set<std::string>& ids) {
  std::string out;
  for (const std::string& id : ids) out += (out.empty() ? "" : ", ") + id;
  return out;
}

std::optional<std::string> chat(const json& body) {
  const json* messages = array_field(body, "messages");
  if (messages == nullptr) return "messages: must be an array";
  std::set<std::string> open;  // calls of the last assistant message not answered yet
  size_t opened_at = 0;
  for (size_t i = 0; i < messages->size(); ++i) {
    const json& message = (*messages)[i];
    const std::string role = string_field(message, "role");
    if (role == "tool") {
      const std::string id = string_field(message, "tool_call_id");
      if (!open.erase(id)) {
        return at("messages", i) + ": a 'tool' message must be a response to a preceding message with " +
               "'tool_calls' (tool_call_id '" + id + "' is not an unanswered call)";
      }
      continue;
    }
    if (!open.empty()) {
      return "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
             "'tool_call_id'. " +
             at("messages", opened_at) + " has calls without a response before " + at("messages", i) + ": " +
             ids_of(open);
    }
    if (role != "assistant") continue;
    const json* calls = array_field(message, "tool_calls");
    const bool has_content =
        message.is_object() && message.contains("content") && !message["content"].is_null();
    if (!has_content && (calls == nullptr || calls->empty())) {
      return at("messages", i) + ": an assistant message must have 'content' or 'tool_calls'";
    }
    if (calls == nullptr) continue;
    for (const json& call : *calls) open.insert(string_field(call, "id"));
    opened_at = i;
  }
  if (!open.empty()) {
    return "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
           "'tool_call_id'. " +
           at("messages", opened_at) + " has calls without a response: " + ids_of(open);
  }
  return std::nullopt;
}

std::optional<std::string> responses(const json& body) {
  const json* input = array_field(body, "input");
  if (input == nullptr) return std::nullopt;  // a plain string input has no history
  std::set<std::string> called;
  std::set<std::string> open;
  size_t opened_at = 0;
  for (size_t i = 0; i < input->size(); ++i) {
    const json& item = (*input)[i];
    const std::string type = string_field(item, "type");
    if (type == "function_call") {
      const std::string id = string_field(item, "call_id");
      if (!called.insert(id).second) return at("input", i) + ": duplicate function_call call_id '" + id + "'";
      if (open.empty()) opened_at = i;
      open.insert(id);
    } else if (type == "function_call_output") {
      const std::string id = string_field(item, "call_id");
      if (!called.contains(id)) {
        return at("input", i) + ": No tool call found for function call output with call_id " + id + ".";
      }
      if (!open.erase(id)) return at("input", i) + ": a second output for call_id " + id;
    } else if (type.empty() || type == "message") {
      if (!open.empty()) {
        return at("input", i) + ": a message between the function calls of " + at("input", opened_at) +
               " and their outputs (" + ids_of(open) + ")";
      }
    }
  }
  if (!open.empty()) return "No tool output found for function call " + ids_of(open) + ".";
  return std::nullopt;
}

std::optional<std::string> anthropic(const json& body) {
  const json* messages = array_field(body, "messages");
  if (messages == nullptr) return "messages: Field required";
  std::set<std::string> uses;  // tool_use ids of the previous assistant message
  size_t uses_at = 0;
  bool any_tool_use = false;
  for (size_t i = 0; i < messages->size(); ++i) {
    const json& message = (*messages)[i];
    const std::string role = string_field(message, "role");
    if (role != "user" && role != "assistant") return at("messages", i) + ": role must be user or assistant";
    if (i == 0 && role != "user") return "messages: the first message must use the \"user\" role";
    if (i > 0 && string_field((*messages)[i - 1], "role") == role) {
      return "messages: roles must alternate between \"user\" and \"assistant\", but found multiple \"" +
             role + "\" roles in a row at " + at("messages", i);
    }
    std::vector<json> blocks;
    if (message.is_object() && message.contains("content") && message["content"].is_string()) {
      if (message["content"].get<std::string>().empty()) {
        return at("messages", i) + ": all messages must have non-empty content";
      }
      blocks.push_back(json{{"type", "text"}, {"text", message["content"]}});
    } else if (const json* content = array_field(message, "content"); content != nullptr) {
      blocks.assign(content->begin(), content->end());
    } else {
      return at("messages", i) + ".content: Field required";
    }
    if (blocks.empty()) return at("messages", i) + ": all messages must have non-empty content";
    std::set<std::string> answered;
    bool past_results = false;
    for (size_t b = 0; b < blocks.size(); ++b) {
      const std::string type = string_field(blocks[b], "type");
      const std::string where = at("messages", i) + "." + at("content", b);
      if (type == "text" && string_field(blocks[b], "text").empty()) {
        return where + ": text content blocks must be non-empty";
      }
      if (type == "tool_result") {
        if (role != "user") return where + ": tool_result blocks belong in user messages";
        if (past_results) return where + ": tool_result blocks must come before any other content";
        const std::string id = string_field(blocks[b], "tool_use_id");
        if (!uses.contains(id) || !answered.insert(id).second) {
          return where + ": unexpected `tool_use_id` found in `tool_result` blocks: " + id +
                 ". Each `tool_result` block must have a corresponding `tool_use` block in the previous "
                 "message.";
        }
      } else {
        past_results = true;
      }
    }
    if (!uses.empty() && answered != uses) {
      std::set<std::string> missing;
      for (const std::string& id : uses)
        if (!answered.contains(id)) missing.insert(id);
      return at("messages", i) +
             ": `tool_use` ids were found without `tool_result` blocks immediately after: " +
             ids_of(missing) + ". Each `tool_use` block (" + at("messages", uses_at) +
             ") must have a corresponding `tool_result` block in the next message.";
    }
    uses.clear();
    if (role == "assistant") {
      for (const json& block : blocks) {
        if (string_field(block, "type") == "tool_use") uses.insert(string_field(block, "id"));
      }
      uses_at = i;
      any_tool_use = any_tool_use || !uses.empty();
    }
  }
  if (!uses.empty()) {
    return "`tool_use` ids were found without `tool_result` blocks immediately after: " + ids_of(uses);
  }
  if (any_tool_use && array_field(body, "tools") == nullptr) {
    return "Requests which include `tool_use` or `tool_result` blocks must define tools.";
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> history_violation(Api api, const nlohmann::json& body) {
  switch (api) {
    case Api::kChatCompletions:
      return chat(body);
    case Api::kResponses:
      return responses(body);
    case Api::kAnthropicMessages:
      return anthropic(body);
  }
  return std::nullopt;
}

}  // namespace keel::model_server
