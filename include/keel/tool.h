// keel/tool.h — the AgentTool interface (spec §4): one shape for every tool (builtin, browser, MCP).
//
// A tool declares a ToolSpec; ToolRegistry::register_tool() validates it and freezes it into a
// ToolDescriptor (keel/tool_registry.h), the single source of the tool's capability metadata: the provider
// schema, the run's tool catalog and the Gatekeeper's inputs all come from the descriptor, never from the
// tool object again.
//
// execute() contract:
//   - It may complete synchronously (calling `done` before returning) or later, from any thread; `done` is
//     called exactly once. `progress` may be called any number of times before `done`.
//   - An Error passed to `done` (or an exception escaping execute) becomes an isError tool_result the model
//     can act on; it never reaches the user as an engine error.
//   - `content` is what the model sees; `details` is for the UI only and is never sent to the model. A
//     conclusion the model needs must be in `content`.
//   - When `cancel` fires (interrupt), the tool stops promptly and calls `done` with a `cancelled` error.
//
// Interactions (spec §5): a tool that needs a person's answer (ask_user) or time to pass (a timer) does not
// wait inside execute(). It returns a plan from plan_interaction(); the engine persists it as a
// waiting_interaction (it survives restarts, its timer is re-armed), sends interaction.request, and once the
// answer has been claimed — exactly once — asks complete_interaction() for the call's result, which is
// trusted. execute() is then never called for that call.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "keel/cancellation.h"
#include "keel/error.h"
#include "keel/interaction_kind.h"
#include "keel/message.h"

namespace keel {

enum class ToolLevel { kL0, kL1, kL2, kMcp, kBuiltin };
enum class ToolEffects { kRead, kWrite };
enum class ToolRecovery { kRetrySafe, kInspectFirst, kNeverRetry };
enum class ToolTrust { kTrusted, kUntrusted };
// Where a tool's results come from: keel itself (tool), the workspace's files (workspace), an MCP server
// (mcp) or a web page (page). Untrusted results reach the model inside a data envelope naming it.
enum class ToolProvenance { kTool, kMcp, kPage, kWorkspace };

std::string_view to_string(ToolLevel level);
std::string_view to_string(ToolEffects effects);
std::string_view to_string(ToolRecovery recovery);
std::string_view to_string(ToolTrust trust);
std::string_view to_string(ToolProvenance provenance);

// Where a tool's implementation runs. Only mcp-level tools may (and must) use an MCP binding.
struct ToolBinding {
  enum class Kind { kLocal, kMcp };
  Kind kind = Kind::kLocal;
  std::string server;         // kMcp: the server's configured name
  std::string endpoint;       // kMcp: command line or URL
  std::string auth_identity;  // kMcp: which credential reference authenticates it ("" = none)
};

// A name a ToolSpec may have, and every model provider takes: [a-zA-Z0-9_-]{1,64}.
bool is_valid_tool_name(std::string_view name);

struct ToolSpec {
  std::string name;                                      // [a-zA-Z0-9_-]{1,64}, unique in a registry
  std::string label;                                     // for people: "Read file"
  std::string description;                               // for the model
  nlohmann::json parameters = nlohmann::json::object();  // JSON Schema of the arguments (type: object)
  ToolLevel level = ToolLevel::kBuiltin;
  ToolEffects effects = ToolEffects::kRead;
  // Unset fields take §4's defaults at registration; set them only to override.
  std::optional<ToolRecovery> recovery;
  std::optional<ToolTrust> trust;
  std::optional<ToolProvenance> provenance;
  ToolBinding binding;
  // The tool is useful only to a model that sees images (a screenshot): a run whose model has vision:false
  // is not offered it. Recorded in the catalog entry only when true, so no other tool's digest changes.
  bool needs_vision = false;
};

// What a call acts on, for the Gatekeeper (resolved from the arguments before dispatch).
struct ToolTarget {
  std::optional<std::string> origin = std::nullopt;
  std::optional<int64_t> tab_id = std::nullopt;
  std::optional<int64_t> frame_id = std::nullopt;
  std::optional<std::string> server_id = std::nullopt;
  std::optional<std::string> path = std::nullopt;  // workspace tools: the file or folder
  friend bool operator==(const ToolTarget&, const ToolTarget&) = default;
};

// What a call will do, for the person asked to approve it (docs/policy.md, "What the approver sees"). The
// engine asks the tool for it when a call needs approval, before the approval is persisted, and stores it
// with the approval, so the prompt shown again after a restart is the same. Every front end shows the
// target first and whole, then the change.
struct CallPreview {
  std::string action;  // a few words: "overwrite file", "create file", "edit file", "call tool"
  // The resolved target, whole, for people: an absolute path (resolved against the workspace), an origin,
  // an MCP server. "" when the call has no target.
  std::string target;
  // Why the target deserves a second look (inside .git/, a shell start-up file, outside the workspace);
  // empty when nothing does. The engine adds the reasons a target path has whatever the tool says.
  std::vector<std::string> sensitive{};
  std::string change_format = "none";  // "diff" (unified-style lines), "excerpt", "arguments" or "none"
  // The change, bounded (a few KiB): what is left out is said inside it, and an excerpt always keeps the
  // end of the text as well as its start.
  std::string change;
  std::optional<int64_t> bytes_before = std::nullopt;  // the target's size now (files)
  std::optional<int64_t> bytes_after = std::nullopt;   // and after the call
};

struct ToolResult {
  std::vector<ContentBlock> content{};
  nlohmann::json details{};  // null when none
};

struct ToolProgress {
  std::string text;
  nlohmann::json details;
};

// What a call waits for instead of executing.
struct InteractionPlan {
  InteractionKind kind = InteractionKind::kAskUser;   // what the call waits for
  nlohmann::json request = nlohmann::json::object();  // shown to the person (interaction.request)
  std::optional<int64_t> due_in_ms = std::nullopt;    // timer: fires this long after it was persisted
};

// Who asks for a call's target: tools whose targets depend on per-thread state (a browser's current tab,
// its refs) resolve them for that thread.
struct ToolScope {
  std::string thread_id;
  std::string tool_call_id;
};

struct ToolCallContext {
  std::string tool_call_id;
  std::string thread_id;
  CancellationToken cancel;
  std::function<void(ToolProgress)> progress;  // never null
  // The target the Gatekeeper decided on (and a person may have approved), as resolve_target() gave it
  // before dispatch. A tool whose target can change meanwhile (a page that navigated) compares it with the
  // live one and refuses rather than act on something nobody decided on.
  ToolTarget target{};
};

class AgentTool {
 public:
  virtual ~AgentTool() = default;
  virtual const ToolSpec& spec() const = 0;
  // The call's target, from validated arguments. Default: no target.
  virtual Result<ToolTarget> resolve_target(const nlohmann::json& params) const {
    (void)params;
    return ToolTarget{};
  }
  // The same for one call of one thread; the engine calls this one. Default: resolve_target() above, so a
  // tool whose target does not depend on the thread overrides only that one. (A name of its own, not an
  // overload: overriding one of two overloads would hide the other, -Woverloaded-virtual.)
  virtual Result<ToolTarget> resolve_target_for(const ToolScope& scope, const nlohmann::json& params) const {
    (void)scope;
    return resolve_target(params);
  }
  // How long one call may run before the engine ends it (tool.timed_out) and cancels it. nullopt (the
  // default): the engine's budget (EngineOptions::tool_time_budget). A tool whose calls legitimately run
  // longer (wait) asks for what the call needs.
  virtual std::optional<std::chrono::milliseconds> time_budget(const nlohmann::json& params) const {
    (void)params;
    return std::nullopt;
  }
  // `params` were validated against spec().parameters. The engine calls it on a worker thread of its own,
  // never on an I/O thread, so it may block or compute; it should still honour `cancel`.
  virtual void execute(ToolCallContext context, nlohmann::json params,
                       std::function<void(Result<ToolResult>)> done) = 0;

  // What the call will do, for its approval (CallPreview). Called on the engine's thread with validated
  // params and the target resolve_target() gave; it may read (the file a write replaces) but must not
  // change anything, and should be quick. Default: the target as resolve_target() gave it and every
  // argument, long strings cut in the middle so that their end stays visible (default_call_preview()).
  virtual CallPreview preview(const nlohmann::json& params, const ToolTarget& target) const;

  // nullopt (the default): the call executes. Otherwise it waits durably for what the plan names.
  virtual std::optional<InteractionPlan> plan_interaction(const nlohmann::json& params) const {
    (void)params;
    return std::nullopt;
  }
  // Whether `response` is an answer a person may give to `request` (interaction.response is rejected with
  // the error otherwise, and nothing changes). Default: any JSON object.
  virtual Result<void> check_response(const nlohmann::json& request, const nlohmann::json& response) const;
  // The call's result from its claimed response (for a timer, the engine's {"firedAtMs": ...}). Default:
  // the response as JSON text.
  virtual ToolResult complete_interaction(const nlohmann::json& request,
                                          const nlohmann::json& response) const;
};

// The default preview (AgentTool::preview): target from `target`, change = every argument of `params`.
CallPreview default_call_preview(const nlohmann::json& params, const ToolTarget& target);

// Convenience: a ToolResult holding one text block.
inline ToolResult text_result(std::string text, nlohmann::json details = nullptr) {
  ContentBlock block;
  block.text = std::move(text);
  return ToolResult{{std::move(block)}, std::move(details)};
}

}  // namespace keel
