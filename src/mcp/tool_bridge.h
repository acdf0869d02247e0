// mcp/tool_bridge.h — keel's tools as MCP tools: the tools/list entries and one tools/call from its
// arguments to its CallToolResult, through the same checks the engine makes before a tool runs.
//
// A call goes: parameter validation (the registry's ParameterValidator) -> resolve_target -> the
// Gatekeeper -> execute with the call's cancellation token. What fails on the way is a tool execution error
// (a CallToolResult with isError: true, MCP 2025-11-25), never a protocol error, so that a model can read it
// and correct itself: invalid arguments (invalid_argument), a target that does not resolve, a refusal
// (mcp.call_refused: a deny verdict always, an ask verdict unless allow_writes — nobody is there to
// approve), the tool's own error. Each error result names its keel code in `_meta["keel/code"]`; its text
// is what keel's model would see in the same case. Content blocks map one to one: text -> {type:"text"},
// image -> {type:"image", data, mimeType}; reasoning blocks are not tool output and are dropped.
//
// The tools are one registry generation, fixed at construction: the list never changes while a client is
// connected (capabilities.tools.listChanged is false). Thread-safe: call() may run on many threads at once.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "keel/cancellation.h"
#include "keel/gatekeeper.h"
#include "keel/tool.h"
#include "keel/tool_registry.h"

namespace keel::mcp {

struct ToolBridgeOptions {
  // Run calls the gatekeeper would ask a person about (writes in ask_writes). Deny verdicts, host
  // permissions and read_only still refuse.
  bool allow_writes = false;
  // The thread the gatekeeper decides for: rules bounded to another thread never apply.
  std::string thread_id = "mcp";
};

// One finished tools/call.
struct CallOutcome {
  nlohmann::json result;            // the CallToolResult: {content: [...], isError}
  std::optional<std::string> code;  // the keel code when isError
};

class ToolBridge {
 public:
  // `gatekeeper` must outlive the bridge and every call it runs.
  ToolBridge(std::shared_ptr<const ToolRegistryGeneration> tools, Gatekeeper& gatekeeper,
             ToolBridgeOptions options = {});

  // The tools/list `tools` array: {name, title, description, inputSchema, annotations} per tool, by name.
  // annotations: readOnlyHint = effects read, destructiveHint = effects write, idempotentHint = recovery
  // retry-safe, openWorldHint = the tool reaches beyond keel's machine (page and MCP levels), title.
  nlohmann::json list_tools() const;
  bool has_tool(const std::string& name) const;

  // Runs the tool `name` (has_tool() must be true) with `arguments` (an object). Blocking parts (validation,
  // the gate, execute itself) run on the calling thread; `done` is called exactly once, on this thread or
  // on whichever thread the tool finishes on. `progress` receives the tool's progress reports until then.
  void call(const std::string& name, nlohmann::json arguments, std::string call_id, CancellationToken cancel,
            std::function<void(ToolProgress)> progress, std::function<void(CallOutcome)> done) const;

 private:
  std::shared_ptr<const ToolRegistryGeneration> tools_;
  Gatekeeper& gatekeeper_;
  ToolBridgeOptions options_;
};

// The CallToolResult of a tool's result, or of an error (isError with `_meta["keel/code"]`).
CallOutcome outcome_of(const ToolResult& result);
CallOutcome outcome_of(const Error& error);

}  // namespace keel::mcp
