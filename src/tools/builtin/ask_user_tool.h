// tools/builtin/ask_user_tool.h — `ask_user` {question, choices?}: asks the user and returns the answer.
//
// The call is an interaction (keel/tool.h): the engine persists the question as a waiting_interaction,
// sends interaction.request {question, choices}, and the answer — interaction.response {answer: string} —
// becomes the call's content, verbatim (an empty answer is said to be one). The question survives a
// restart of the engine; the answer is claimed exactly once.
#pragma once

#include "keel/tool.h"

namespace keel::builtin {

class AskUserTool final : public AgentTool {
 public:
  AskUserTool();

  const ToolSpec& spec() const override { return spec_; }
  // Never called by the engine (the call is an interaction); answers with an error if called anyway.
  void execute(ToolCallContext context, nlohmann::json params,
               std::function<void(Result<ToolResult>)> done) override;
  std::optional<InteractionPlan> plan_interaction(const nlohmann::json& params) const override;
  // The response must be {answer: string}, valid UTF-8, at most 64 KiB.
  Result<void> check_response(const nlohmann::json& request, const nlohmann::json& response) const override;
  ToolResult complete_interaction(const nlohmann::json& request,
                                  const nlohmann::json& response) const override;

 private:
  ToolSpec spec_;
};

}  // namespace keel::builtin
