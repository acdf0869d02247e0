// keel/message.h — provider-neutral conversation messages.
//
// buildSessionContext turns a thread's persisted path into these; provider adapters turn them into each
// wire format (OpenAI Chat Completions, OpenAI Responses, Anthropic Messages). They carry what every
// format needs and keep provider-specific extras (reasoning signatures, encrypted reasoning items)
// opaque in `provider_data`, so a conversation can be sent back exactly as the provider requires.
#pragma once

// Every member has a default initializer so designated initializers may omit any of them.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace keel {

enum class Role { kUser, kAssistant, kTool };

struct ContentBlock {
  enum class Kind { kText, kImage, kReasoning };
  Kind kind = Kind::kText;
  std::string text{};              // kText, kReasoning
  std::string media_type{};        // kImage: "image/png", ...
  std::string data_base64{};       // kImage
  nlohmann::json provider_data{};  // opaque per-provider extras (signatures, encrypted content); null if none

  friend bool operator==(const ContentBlock&, const ContentBlock&) = default;
};

struct ToolCall {
  std::string id{};
  std::string name{};
  nlohmann::json arguments = nlohmann::json::object();

  friend bool operator==(const ToolCall&, const ToolCall&) = default;
};

struct Message {
  Role role = Role::kUser;
  std::vector<ContentBlock> content{};
  // kAssistant: the calls this response made, in the provider's order, grouped here even though the
  // store keeps each as its own node interleaved with its result.
  std::vector<ToolCall> tool_calls{};
  // kTool: which call this result answers, and whether the tool failed.
  std::string tool_call_id{};
  bool is_error = false;
  // The node this message was built from (for kAssistant, the assistant_message node).
  std::string source_node_id{};

  friend bool operator==(const Message&, const Message&) = default;
};

}  // namespace keel
