// model_server/response_selector.cc — reading the last user / tool-result text out of each request format.
#include "model_server/response_selector.h"

namespace keel::model_server {

namespace {

using nlohmann::json;

void append(std::string& out, const std::string& text) {
  if (!out.empty() && !text.empty()) out += "\n";
  out += text;
}

// A content field that is a string, or an array of parts of which those with a string `text` count.
std::string content_text(const json& content) {
  if (content.is_string()) return content.get<std::string>();
  std::string out;
  if (!content.is_array()) return out;
  for (const json& part : content) {
    if (!part.is_object()) continue;
    if (part.contains("text") && part.at("text").is_string()) append(out, part.at("text").get<std::string>());
    // An Anthropic tool_result block nests its own content.
    if (part.value("type", "") == "tool_result" && part.contains("content"))
      append(out, content_text(part.at("content")));
  }
  return out;
}

std::string from_messages(const json& body, std::initializer_list<const char*> roles) {
  if (!body.contains("messages") || !body.at("messages").is_array()) return "";
  const json& messages = body.at("messages");
  for (auto it = messages.rbegin(); it != messages.rend(); ++it) {
    if (!it->is_object()) continue;
    const std::string role = it->value("role", "");
    for (const char* wanted : roles) {
      if (role == wanted) return content_text(it->value("content", json()));
    }
  }
  return "";
}

std::string from_responses_input(const json& body) {
  if (!body.contains("input")) return "";
  const json& input = body.at("input");
  if (input.is_string()) return input.get<std::string>();
  if (!input.is_array()) return "";
  for (auto it = input.rbegin(); it != input.rend(); ++it) {
    if (!it->is_object()) continue;
    const std::string type = it->value("type", "message");
    if (type == "function_call_output") return content_text(it->value("output", json()));
    if (type == "message" && it->value("role", "") == "user")
      return content_text(it->value("content", json()));
  }
  return "";
}

}  // namespace

std::string last_input_text(Api api, const json& body) {
  if (!body.is_object()) return "";
  switch (api) {
    case Api::kChatCompletions:
      return from_messages(body, {"user", "tool"});
    case Api::kResponses:
      return from_responses_input(body);
    case Api::kAnthropicMessages:
      return from_messages(body, {"user"});
  }
  return "";
}

const ScriptedResponse* ResponseSelector::choose(std::string_view last_input) {
  for (const ScriptedResponse& response : script_.responses) {
    if (response.match && last_input.find(*response.match) != std::string_view::npos) return &response;
  }
  while (next_ordered_ < script_.responses.size()) {
    const ScriptedResponse& response = script_.responses[next_ordered_++];
    if (!response.match) return &response;
  }
  return nullptr;
}

}  // namespace keel::model_server
