// tools/builtin/wait_tool.h — `wait` {seconds, reason?}: pauses the turn for up to an hour.
//
// The delay runs on an injected Scheduler (never a sleeping thread), one timer per second: each full
// second reports progress ("waited 3 of 10 s") through the call's context, and the call completes with
// success when the delay is over. When the call's cancellation token fires, the pending timer is
// destroyed and the call completes promptly with a `cancelled` error.
//
// Races: the timer and the cancellation may fire at the same time on different threads; a small shared
// state under a mutex decides which one finishes the call, so `done` runs exactly once, and never while a
// progress report of the same call is still running (a cancel that arrives during one is delivered right
// after it). No lock is held while `done`, `progress` or a handle's destructor runs.
//
// Requirement on the Scheduler (keel/scheduler.h does not spell it out yet): destroying a ScheduledTask
// from inside its own callback must be allowed (the callback has started, so there is nothing to cancel),
// as CancellationRegistration allows it; every timer handle is released by the next tick or on completion.
//
// The scheduler must outlive every call in flight; the tool itself may be destroyed earlier.
#pragma once

#include <chrono>
#include <functional>
#include <optional>

#include "keel/scheduler.h"
#include "keel/tool.h"

namespace keel::builtin {

class WaitTool final : public AgentTool {
 public:
  static constexpr double kMaxSeconds = 3600;
  explicit WaitTool(Scheduler& scheduler);

  // Added to the wait for the engine's time budget of a call (which would otherwise cut a long wait short).
  static constexpr std::chrono::milliseconds kBudgetMargin{std::chrono::minutes(1)};

  const ToolSpec& spec() const override { return spec_; }
  // The wait itself plus a margin: a wait may be longer than the engine's default budget.
  std::optional<std::chrono::milliseconds> time_budget(const nlohmann::json& params) const override;
  void execute(ToolCallContext context, nlohmann::json params,
               std::function<void(Result<ToolResult>)> done) override;

 private:
  Scheduler& scheduler_;
  ToolSpec spec_;
};

}  // namespace keel::builtin
