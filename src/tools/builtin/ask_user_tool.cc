// tools/builtin/ask_user_tool.cc — the ask_user tool: a thin adapter onto UserPrompter.
#include "tools/builtin/ask_user_tool.h"

#include <atomic>
#include <memory>
#include <utility>

#include "keel/error_codes.h"
#include "tools/builtin/tool_support.h"

namespace keel::builtin {

namespace {

ToolSpec ask_user_spec() {
  ToolSpec spec;
  spec.name = "ask_user";
  spec.label = "Ask the user";
  spec.description =
      "Ask the user a question and wait for the answer. Use it when you need a decision or information only "
      "the user has; offer choices when the likely answers are known. The answer is returned as text.";
  spec.parameters = {
      {"type", "object"},
      {"properties",
       {{"question",
         {{"type", "string"}, {"minLength", 1}, {"description", "The question, as the user will see it."}}},
        {"choices",
         {{"type", "array"},
          {"items", {{"type", "string"}, {"minLength", 1}}},
          {"maxItems", 20},
          {"description", "Suggested answers to choose from (optional)."}}}}},
      {"required", {"question"}},
      {"additionalProperties", false},
  };
  spec.effects = ToolEffects::kRead;
  return spec;
}

}  // namespace

AskUserTool::AskUserTool(UserPrompter& prompter) : prompter_(prompter), spec_(ask_user_spec()) {}

void AskUserTool::execute(ToolCallContext context, nlohmann::json params,
                          std::function<void(Result<ToolResult>)> done) {
  if (context.cancel.is_cancelled()) {
    done(fail(cancelled_error(context.cancel)));
    return;
  }
  const auto question = params.find("question");
  if (question == params.end() || !question->is_string() || question->get_ref<const std::string&>().empty()) {
    done(fail(codes::kInvalidArgument, "/question: must be a non-empty string"));
    return;
  }
  std::vector<std::string> choices;
  if (const auto it = params.find("choices"); it != params.end() && it->is_array()) {
    for (const auto& choice : *it) {
      if (choice.is_string()) choices.push_back(choice.get<std::string>());
    }
  }
  nlohmann::json asked = {{"question", *question}, {"choices", choices}};
  auto answered_once = std::make_shared<std::atomic<bool>>(false);
  prompter_.ask(
      context.tool_call_id, context.thread_id, question->get<std::string>(), std::move(choices),
      context.cancel,
      [done = std::move(done), asked = std::move(asked), answered_once](Result<std::string> answer) {
        if (answered_once->exchange(true)) return;
        if (!answer) {
          done(fail(answer.error()));
          return;
        }
        const std::string text = valid_utf8(*answer);
        nlohmann::json details = asked;
        details["answer"] = text;
        // The model must see that an empty reply was an answer, not a missing result.
        std::string content = text.empty() ? "(the user answered with an empty message)" : text;
        done(text_result(std::move(content), std::move(details)));
      });
}

}  // namespace keel::builtin
