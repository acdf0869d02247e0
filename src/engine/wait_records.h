// engine/wait_records.h — how a durable wait describes itself in the store and on the wire.
//
// An approval's stored request (ApprovalRecord.request) holds everything a person is shown and everything
// the approval is bound to: the call (id, tool_call node, arguments), the tool's security metadata and
// descriptor digest, the resolved target, the gatekeeper's reason and rule version, and the decisions it
// offers. An interaction's stored request holds the call it belongs to and the tool's own request. Both are
// built once, when the wait is written, and read back by the continuation and by recovery, so what was
// approved is compared with what is about to run, never looked up again by name.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "keel/tool.h"
#include "keel/tool_registry.h"
#include "policy/gatekeeper.h"
#include "store/records.h"

namespace keel {

nlohmann::json target_json(const ToolTarget& target);
ToolTarget target_from_json(const nlohmann::json& value);

// The decisions an approval.request offers: accept, acceptForSite (when the verdict offers it), decline.
std::vector<std::string> approval_offers(const GateVerdict& verdict);

struct ApprovalSubject {
  std::string tool_call_id;
  std::string call_node_id;
  const ToolDescriptor* descriptor = nullptr;
  const nlohmann::json* arguments = nullptr;
  ToolTarget target;
  GateVerdict verdict;
  const CallPreview* preview = nullptr;  // what the call will do (never null when built by the runner)
};
// The stored request and approval.request payload: the fields above, plus "preview" (what the call will
// do: action, target, sensitive, sensitiveReasons, change {format, text, bytesBefore?, bytesAfter?}) and,
// when acceptForSite is offered, "remember" (the rule it would write: the verdict's site_rule_offer).
nlohmann::json approval_request_json(const ApprovalSubject& subject);

// What `tool` says `arguments` will do, with the reasons the target's path is sensitive added whatever the
// tool said (so a tool that forgets cannot hide a write into .git/). A preview that throws (a bug) falls
// back to the default one. Computed before the approval is persisted.
CallPreview preview_call(const AgentTool& tool, const nlohmann::json& arguments, const ToolTarget& target);
nlohmann::json preview_json(const CallPreview& preview);

// The descriptor fields the gatekeeper reads (name, label, effects, level, trust, provenance, binding
// server, digest), from a stored approval request; for a rule written by acceptForSite.
ToolDescriptor approved_descriptor(const nlohmann::json& request);

}  // namespace keel
