// store/node_body.h — the persisted JSON body of each node kind (nodes.body), with encoders and decoders.
//
// A node's body is a JSON object with camelCase keys. The kinds that take part in the model context have
// a typed form here; the others are free-form objects:
//
//   user_message       {"content":[block...], "steered":bool, "steerId":string?}
//                      steered defaults to false; steerId is present only for a materialized steer.
//   assistant_message  {"content":[block...], "stopReason":"tool_use|end|max_tokens|content_filter|error",
//                       "providerStopReason":string, "usage":object?}
//                      content may include reasoning blocks; usage is omitted when unknown.
//   tool_call          {"toolCallId":string, "name":string, "arguments":object, "assistantNodeId":string}
//                      assistantNodeId names the assistant_message node whose response made the call, so
//                      parallel calls are grouped with it again when the context is rebuilt although the
//                      store interleaves them with their results (spec §2).
//   tool_result        {"toolCallId":string, "content":[block...], "isError":bool, "details":any?,
//                       "untrusted":{"tool":string, "provenance":string, "path":string?, "origin":string?,
//                                    "server":string?}?}
//                      details is for the UI only and never reaches the model; omitted when null.
//                      untrusted: the content came from outside keel (a tool whose descriptor is untrusted
//                      ran); the session context gives it to the model inside a data envelope
//                      (store/data_envelope.h). Omitted for keel's own results; results written before it
//                      existed have none and are sent as they were.
//   notice             {"text":string, "forModel":bool}
//                      a notice for the model is sent as a user text message; others are UI-only.
//   compaction         {"summary":string, "replacedToNodeId":string, "keptFromNodeId":string?,
//                       "tail":[message...], "tokensBefore":int, "tokensAfter":int}
//                      the context from here on is the summary (a user message) followed by `tail`, the
//                      messages kept verbatim (from keptFromNodeId on); everything before is replaced.
//                      A message: {"role":"user|assistant|tool", "content":[block...], "toolCalls":
//                      [{"id","name","arguments"}]?, "toolCallId":string?, "isError":bool?,
//                      "sourceNodeId":string?}.
//   turn_context, approval_decision
//                      free-form objects; never part of the model context.
//
// Content blocks:
//   {"type":"text", "text":string}
//   {"type":"image", "mediaType":string, "data":base64 string}
//   {"type":"reasoning", "text":string, "providerData":any}
// Any block may carry "providerData" (opaque per-provider extras, e.g. reasoning signatures); it is
// omitted when null and read back as null when missing.
//
// Decoders accept what the encoders write, ignore keys they do not know (a newer keel may add some) and
// reject anything else with store.decode_failed: a body that does not decode was damaged or written by
// something that is not keel. Encoders reject values that could not be decoded again (an empty tool call
// id, arguments that are not an object, ...) with invalid_argument. Neither checks UTF-8: the store's
// canonical JSON encoding does that when the node is written (json.invalid_utf8).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "keel/error.h"
#include "keel/message.h"
#include "store/data_envelope.h"
#include "store/records.h"

namespace keel {

// Every member of the body structs has a default initializer, so designated initializers may omit any
// of them (g++ 12 warns about omitted members that have none).

// Why a model response ended, as persisted in assistant_message.stopReason.
enum class AssistantStopReason { kToolUse, kEnd, kMaxTokens, kContentFilter, kError };
std::string_view to_string(AssistantStopReason reason);
// Errors: store.decode_failed for an unknown reason.
Result<AssistantStopReason> parse_assistant_stop_reason(std::string_view text);

struct UserMessageBody {
  static constexpr NodeKind kKind = NodeKind::kUserMessage;
  std::vector<ContentBlock> content{};
  bool steered = false;
  std::optional<std::string> steer_id{};

  friend bool operator==(const UserMessageBody&, const UserMessageBody&) = default;
};

struct AssistantMessageBody {
  static constexpr NodeKind kKind = NodeKind::kAssistantMessage;
  std::vector<ContentBlock> content{};
  AssistantStopReason stop_reason = AssistantStopReason::kEnd;
  std::string provider_stop_reason{};     // the provider's own word for it ("end_turn", "stop", ...)
  std::optional<nlohmann::json> usage{};  // an object when present

  friend bool operator==(const AssistantMessageBody&, const AssistantMessageBody&) = default;
};

struct ToolCallBody {
  static constexpr NodeKind kKind = NodeKind::kToolCall;
  std::string tool_call_id{};
  std::string name{};
  nlohmann::json arguments = nlohmann::json::object();
  std::string assistant_node_id{};

  friend bool operator==(const ToolCallBody&, const ToolCallBody&) = default;
};

// Spec §1's context window: the history up to `replaced_to_node_id` summarized, the tail kept as it was.
struct CompactionBody {
  static constexpr NodeKind kKind = NodeKind::kCompaction;
  std::string summary{};
  std::string replaced_to_node_id{};
  std::string kept_from_node_id{};  // "" when nothing was kept
  std::vector<Message> tail{};
  int64_t tokens_before = 0;  // estimated tokens of the request that triggered it
  int64_t tokens_after = 0;   // estimated tokens of the messages that replace the history (summary + tail)

  friend bool operator==(const CompactionBody&, const CompactionBody&) = default;
};

struct ToolResultBody {
  static constexpr NodeKind kKind = NodeKind::kToolResult;
  std::string tool_call_id{};
  std::vector<ContentBlock> content{};
  bool is_error = false;
  nlohmann::json details{};               // null when there are none
  std::optional<DataSource> untrusted{};  // where untrusted content came from; nullopt for keel's own

  friend bool operator==(const ToolResultBody&, const ToolResultBody&) = default;
};

struct NoticeBody {
  static constexpr NodeKind kKind = NodeKind::kNotice;
  std::string text{};
  bool for_model = false;

  friend bool operator==(const NoticeBody&, const NoticeBody&) = default;
};

// Content blocks <-> their JSON array. content_to_json never fails (an image needs a media type; see
// encode_* for the checks); content_from_json fails with store.decode_failed.
nlohmann::json content_to_json(std::span<const ContentBlock> content);
Result<std::vector<ContentBlock>> content_from_json(const nlohmann::json& content);

// Encoders. Errors: invalid_argument.
Result<nlohmann::json> encode_user_message(const UserMessageBody& body);
Result<nlohmann::json> encode_assistant_message(const AssistantMessageBody& body);
Result<nlohmann::json> encode_tool_call(const ToolCallBody& body);
Result<nlohmann::json> encode_tool_result(const ToolResultBody& body);
Result<nlohmann::json> encode_notice(const NoticeBody& body);
Result<nlohmann::json> encode_compaction(const CompactionBody& body);

// Decoders. `body` is a sink: pass an rvalue to move large strings (image data) instead of copying them.
// Errors: store.decode_failed, with a message naming the kind and the offending key.
Result<UserMessageBody> decode_user_message(nlohmann::json body);
Result<AssistantMessageBody> decode_assistant_message(nlohmann::json body);
Result<ToolCallBody> decode_tool_call(nlohmann::json body);
Result<ToolResultBody> decode_tool_result(nlohmann::json body);
Result<NoticeBody> decode_notice(nlohmann::json body);
Result<CompactionBody> decode_compaction(nlohmann::json body);

// Checks that `body` is a valid body of a node of `kind` (for turn_context and approval_decision: an
// object). Errors: store.decode_failed.
Result<void> validate_node_body(NodeKind kind, const nlohmann::json& body);

}  // namespace keel
