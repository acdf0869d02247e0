// tools/builtin/ask_user_tool.h — `ask_user` {question, choices?}: asks the user and returns the answer.
//
// The tool only states the question; the engine owns how it reaches the user (an interaction record, an
// interaction.request event, a durable wait across restarts), behind the UserPrompter interface below.
// The answer becomes the call's `content`, verbatim.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "keel/cancellation.h"
#include "keel/error.h"
#include "keel/tool.h"

namespace keel::builtin {

// Implemented by the engine. ask() returns at once; `answered` is called exactly once, later and from any
// thread (or before ask() returns): with the user's answer, or with an error — `cancelled` when `cancel`
// fired, which must happen promptly. `choices` may be empty (a free-form answer); when given, the UI offers
// them but the user may still answer in their own words.
class UserPrompter {
 public:
  virtual ~UserPrompter() = default;
  virtual void ask(std::string tool_call_id, std::string thread_id, std::string question,
                   std::vector<std::string> choices, CancellationToken cancel,
                   std::function<void(Result<std::string>)> answered) = 0;
};

// `prompter` must outlive the tool and every call in flight. A prompter that calls `answered` more than
// once is tolerated: later answers are ignored, so `done` still runs exactly once.
class AskUserTool final : public AgentTool {
 public:
  explicit AskUserTool(UserPrompter& prompter);

  const ToolSpec& spec() const override { return spec_; }
  void execute(ToolCallContext context, nlohmann::json params,
               std::function<void(Result<ToolResult>)> done) override;

 private:
  UserPrompter& prompter_;
  ToolSpec spec_;
};

}  // namespace keel::builtin
