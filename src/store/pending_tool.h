// store/pending_tool.h — Run.pending_tool as a typed value: the tool call a run has started or waits on,
// and its one encoder and decoder for the `runs.pending_tool` column (docs/store.md).
//
// A run names at most one pending call, in one of two cases:
//   - a dispatch record, written before a call whose tool is not retry-safe runs (and, with
//     `recoveryAttempts`, before recovery runs a retry-safe call again): recovery reads it to know the
//     call's outcome may be unknown. run.resolveUncertain{retry} marks it `resolution: "retry"`;
//   - a durable wait: the call waits for an approval or an interaction, with the breaker's notices held
//     for the end of the response (`heldNotices`).
// The stored JSON is exactly what earlier versions wrote:
//   {toolCallId, name, nodeId [, recoveryAttempts] [, resolution: "retry"]}          (dispatch)
//   {toolCallId, name, nodeId, approvalId | interactionId [, heldNotices: [text…]]}  (wait)
// Decoding is strict: anything else (not an object, a missing or mistyped key, an unknown key, both wait
// ids, wait and dispatch keys together) is a damaged value, store.decode_failed; so what decodes encodes
// back to the same JSON. Encoding refuses a value no case above describes (invalid_argument: a bug).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "keel/error.h"

namespace keel {

// What a durable wait waits for.
enum class WaitKind { kApproval, kInteraction };
std::string_view to_string(WaitKind kind);  // "approval" | "interaction"

struct PendingTool {
  struct Wait {
    WaitKind kind = WaitKind::kApproval;
    std::string id;  // the approval's or the interaction's id
    // The failure breaker's notices held for the end of the response (spec §1), in order.
    std::vector<std::string> held_notices = {};
    bool operator==(const Wait&) const = default;
  };

  std::string tool_call_id;
  std::string name;          // the tool's name
  std::string node_id;       // the call's tool_call node
  std::optional<Wait> wait;  // set: a durable wait; unset: a dispatch record
  // Dispatch records only: how many times recovery ran the call again (absent until it does).
  std::optional<int> recovery_attempts;
  // Dispatch records only: the person chose run.resolveUncertain{retry}; the continuation runs the call
  // again as approved.
  bool retry_chosen = false;

  bool is_dispatch() const { return !wait.has_value(); }
  bool waits_for(WaitKind kind) const { return wait && wait->kind == kind; }
  bool operator==(const PendingTool&) const = default;
};

// A dispatch record for a call.
PendingTool dispatch_record(std::string tool_call_id, std::string name, std::string node_id);

// The stored JSON (shapes above). invalid_argument for a value that mixes a wait with dispatch fields,
// has an empty wait id, or a negative recovery count.
Result<nlohmann::json> encode_pending_tool(const PendingTool& pending);
// store.decode_failed (naming `what`, e.g. "pending_tool of run X") for anything but the shapes above.
Result<PendingTool> decode_pending_tool(const nlohmann::json& value, std::string_view what);

}  // namespace keel
