// tools/builtin/ask_user_tool.cc — the ask_user tool: a question as a durable interaction.
#include "tools/builtin/ask_user_tool.h"

#include <string>
#include <utility>
#include <vector>

#include "keel/error_codes.h"
#include "tools/builtin/tool_support.h"

namespace keel::builtin {

namespace {

constexpr size_t kMaxAnswerBytes = 64 * 1024;

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

AskUserTool::AskUserTool() : spec_(ask_user_spec()) {}

void AskUserTool::execute(ToolCallContext, nlohmann::json, std::function<void(Result<ToolResult>)> done) {
  done(fail(codes::kInvalidArgument, "ask_user runs as an interaction: the engine asks the user"));
}

std::optional<InteractionPlan> AskUserTool::plan_interaction(const nlohmann::json& params) const {
  std::vector<std::string> choices;
  if (const auto it = params.find("choices"); it != params.end() && it->is_array()) {
    for (const auto& choice : *it) {
      if (choice.is_string()) choices.push_back(choice.get<std::string>());
    }
  }
  return InteractionPlan{.kind = InteractionKind::kAskUser,
                         .request = {{"question", params.value("question", "")}, {"choices", choices}}};
}

Result<void> AskUserTool::check_response(const nlohmann::json&, const nlohmann::json& response) const {
  const auto answer = response.is_object() ? response.find("answer") : response.end();
  if (!response.is_object() || answer == response.end() || !answer->is_string()) {
    return fail(codes::kInvalidArgument, "an answer to ask_user is {\"answer\": \"<text>\"}");
  }
  const std::string& text = answer->get_ref<const std::string&>();
  if (text.size() > kMaxAnswerBytes) {
    return fail(codes::kInvalidArgument,
                "the answer is longer than " + std::to_string(kMaxAnswerBytes) + " bytes");
  }
  if (valid_utf8(text) != text) return fail(codes::kInvalidArgument, "the answer is not valid UTF-8");
  return {};
}

ToolResult AskUserTool::complete_interaction(const nlohmann::json& request,
                                             const nlohmann::json& response) const {
  const std::string text = valid_utf8(response.value("answer", ""));
  nlohmann::json details = request;
  details["answer"] = text;
  // The model must see that an empty reply was an answer, not a missing result.
  return text_result(text.empty() ? "(the user answered with an empty message)" : text, std::move(details));
}

}  // namespace keel::builtin
