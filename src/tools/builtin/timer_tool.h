// tools/builtin/timer_tool.h — `set_timer` {seconds, note?}: pauses the run until a durable timer fires.
//
// Unlike `wait` (an in-process delay of up to an hour that shows progress), the timer is an interaction
// (keel/tool.h): the engine persists it with its due time, re-arms it after a restart (firing at once when
// it fell due while keel was down), and the call's result says when it fired. The user cannot answer a
// timer; interrupting the run withdraws it.
#pragma once

#include "keel/tool.h"

namespace keel::builtin {

class TimerTool final : public AgentTool {
 public:
  static constexpr double kMaxSeconds = 7 * 24 * 3600;
  TimerTool();

  const ToolSpec& spec() const override { return spec_; }
  // Never called by the engine (the call is an interaction); answers with an error if called anyway.
  void execute(ToolCallContext context, nlohmann::json params,
               std::function<void(Result<ToolResult>)> done) override;
  std::optional<InteractionPlan> plan_interaction(const nlohmann::json& params) const override;
  // Timers are fired by the engine, never answered: every response is refused.
  Result<void> check_response(const nlohmann::json& request, const nlohmann::json& response) const override;
  ToolResult complete_interaction(const nlohmann::json& request,
                                  const nlohmann::json& response) const override;

 private:
  ToolSpec spec_;
};

}  // namespace keel::builtin
