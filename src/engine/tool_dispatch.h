// engine/tool_dispatch.h — running one tool call off the engine's I/O threads, within a time budget.
//
// dispatch_tool_call() posts AgentTool::execute to the engine's ToolWorkers and arms the call's budget on a
// Scheduler. What comes back goes through the returned handle's port:
//   - progress reports, until the outcome;
//   - exactly one outcome: the tool's `done`, an exception escaping execute (tool.failed), or the budget
//     running out (tool.timed_out) — whichever comes first; later ones are dropped;
//   - nothing at all once the handle is destroyed: a tool finishing after its turn moved on (an interrupt,
//     a timeout, shutdown) never touches the runner or the engine.
// The call's cancellation token fires on the turn's cancellation (interrupt, shutdown) and when the budget
// runs out. When the handle goes before the tool delivered its outcome, its job is abandoned (see
// ToolWorkers::abandon), so a tool that ignores cancellation holds neither a turn nor a pool slot.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>

#include "engine/tool_workers.h"
#include "keel/scheduler.h"
#include "keel/tool.h"

namespace keel {

class ToolCallHandle {
 public:
  virtual ~ToolCallHandle() = default;
};

struct ToolCallSinks {
  std::function<void(ToolProgress)> progress;
  std::function<void(Result<ToolResult>)> done;
};

// `context.cancel` is the turn's token; the tool gets a token of its own that follows it.
[[nodiscard]] std::unique_ptr<ToolCallHandle> dispatch_tool_call(
    ToolWorkers& workers, Scheduler& timers, std::shared_ptr<AgentTool> tool, ToolCallContext context,
    nlohmann::json arguments, std::chrono::milliseconds budget, ToolCallSinks sinks);

}  // namespace keel
