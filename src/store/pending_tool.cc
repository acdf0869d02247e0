#include "store/pending_tool.h"

#include <limits>
#include <utility>

#include "keel/error_codes.h"
#include "store/stored_json.h"

namespace keel {

using nlohmann::json;
using stored_json::damaged;
using stored_json::string_field;

namespace {

constexpr char kToolCallId[] = "toolCallId";
constexpr char kName[] = "name";
constexpr char kNodeId[] = "nodeId";
constexpr char kApprovalId[] = "approvalId";
constexpr char kInteractionId[] = "interactionId";
constexpr char kHeldNotices[] = "heldNotices";
constexpr char kRecoveryAttempts[] = "recoveryAttempts";
constexpr char kResolution[] = "resolution";
constexpr char kRetry[] = "retry";

const char* wait_key(WaitKind kind) { return kind == WaitKind::kApproval ? kApprovalId : kInteractionId; }

}  // namespace

std::string_view to_string(WaitKind kind) { return kind == WaitKind::kApproval ? "approval" : "interaction"; }

PendingTool dispatch_record(std::string tool_call_id, std::string name, std::string node_id) {
  PendingTool pending;
  pending.tool_call_id = std::move(tool_call_id);
  pending.name = std::move(name);
  pending.node_id = std::move(node_id);
  return pending;
}

Result<json> encode_pending_tool(const PendingTool& pending) {
  json out = {{kToolCallId, pending.tool_call_id}, {kName, pending.name}, {kNodeId, pending.node_id}};
  if (pending.wait) {
    if (pending.recovery_attempts || pending.retry_chosen) {
      return fail(codes::kInvalidArgument,
                  "the pending tool " + pending.tool_call_id + " is a wait and cannot carry dispatch fields");
    }
    if (pending.wait->id.empty()) {
      return fail(codes::kInvalidArgument, "the pending tool " + pending.tool_call_id + " waits on no id");
    }
    out[wait_key(pending.wait->kind)] = pending.wait->id;
    if (!pending.wait->held_notices.empty()) out[kHeldNotices] = pending.wait->held_notices;
    return out;
  }
  if (pending.recovery_attempts) {
    if (*pending.recovery_attempts < 0) {
      return fail(codes::kInvalidArgument,
                  "the pending tool " + pending.tool_call_id + " has a negative recovery count");
    }
    out[kRecoveryAttempts] = *pending.recovery_attempts;
  }
  if (pending.retry_chosen) out[kResolution] = kRetry;
  return out;
}

Result<PendingTool> decode_pending_tool(const json& value, std::string_view what) {
  KEEL_TRY(stored_json::expect_object_with_keys(value,
                                                {kToolCallId, kName, kNodeId, kApprovalId, kInteractionId,
                                                 kHeldNotices, kRecoveryAttempts, kResolution},
                                                what));
  PendingTool pending;
  pending.tool_call_id = KEEL_TRY(string_field(value, kToolCallId, what));
  pending.name = KEEL_TRY(string_field(value, kName, what));
  pending.node_id = KEEL_TRY(string_field(value, kNodeId, what));

  const bool approval = value.contains(kApprovalId);
  const bool interaction = value.contains(kInteractionId);
  if (approval && interaction)
    return std::unexpected(damaged(what, "it waits on an approval and an interaction"));
  if (approval || interaction) {
    if (value.contains(kRecoveryAttempts) || value.contains(kResolution)) {
      return std::unexpected(damaged(what, "a wait with dispatch fields"));
    }
    PendingTool::Wait wait;
    wait.kind = approval ? WaitKind::kApproval : WaitKind::kInteraction;
    wait.id = KEEL_TRY(string_field(value, wait_key(wait.kind), what));
    if (wait.id.empty()) return std::unexpected(damaged(what, "an empty wait id"));
    if (const auto notices = value.find(kHeldNotices); notices != value.end()) {
      if (!notices->is_array() || notices->empty()) {
        return std::unexpected(damaged(what, "'heldNotices' is not a non-empty array"));
      }
      for (const json& text : *notices) {
        if (!text.is_string()) return std::unexpected(damaged(what, "a held notice is not a string"));
        wait.held_notices.push_back(text.get<std::string>());
      }
    }
    pending.wait = std::move(wait);
    return pending;
  }
  if (value.contains(kHeldNotices)) return std::unexpected(damaged(what, "held notices without a wait"));
  if (const auto attempts = value.find(kRecoveryAttempts); attempts != value.end()) {
    if (!attempts->is_number_integer() || attempts->get<int64_t>() < 0 ||
        attempts->get<int64_t>() > std::numeric_limits<int>::max()) {
      return std::unexpected(damaged(what, "'recoveryAttempts' is not a count"));
    }
    pending.recovery_attempts = attempts->get<int>();
  }
  if (const auto resolution = value.find(kResolution); resolution != value.end()) {
    if (*resolution != kRetry) return std::unexpected(damaged(what, "an unknown resolution"));
    pending.retry_chosen = true;
  }
  return pending;
}

}  // namespace keel
