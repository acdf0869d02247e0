// Tests for the ask_user tool (tools/builtin/ask_user_tool.h) with a fake prompter.
#include "tools/builtin/ask_user_tool.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "keel/error_codes.h"
#include "keel/tool_registry.h"

namespace keel::builtin {
namespace {

// Records the question; the test answers it later through `answered`.
class FakePrompter final : public UserPrompter {
 public:
  void ask(std::string tool_call_id, std::string thread_id, std::string question,
           std::vector<std::string> choices, CancellationToken cancel,
           std::function<void(Result<std::string>)> answered) override {
    ++asked;
    asked_call_id = std::move(tool_call_id);
    asked_thread_id = std::move(thread_id);
    asked_question = std::move(question);
    asked_choices = std::move(choices);
    asked_cancel = std::move(cancel);
    answer = std::move(answered);
  }

  int asked = 0;
  std::string asked_call_id;
  std::string asked_thread_id;
  std::string asked_question;
  std::vector<std::string> asked_choices;
  CancellationToken asked_cancel;
  std::function<void(Result<std::string>)> answer;
};

struct Outcome {
  int calls = 0;
  std::optional<Result<ToolResult>> result;
  std::function<void(Result<ToolResult>)> done() {
    return [this](Result<ToolResult> r) {
      ++calls;
      result = std::move(r);
    };
  }
};

ToolCallContext context(CancellationToken cancel = {}) {
  return ToolCallContext{"call-7", "thread-3", std::move(cancel), [](ToolProgress) {}};
}

TEST(AskUserToolTest, PassesTheQuestionAndReturnsTheAnswerAsContent) {
  FakePrompter prompter;
  AskUserTool tool(prompter);
  Outcome outcome;
  tool.execute(context(), {{"question", "Which branch?"}, {"choices", {"main", "dev"}}}, outcome.done());
  ASSERT_EQ(prompter.asked, 1);
  EXPECT_EQ(prompter.asked_call_id, "call-7");
  EXPECT_EQ(prompter.asked_thread_id, "thread-3");
  EXPECT_EQ(prompter.asked_question, "Which branch?");
  EXPECT_EQ(prompter.asked_choices, (std::vector<std::string>{"main", "dev"}));
  EXPECT_EQ(outcome.calls, 0);  // waits for the user

  prompter.answer(std::string("dev"));
  ASSERT_EQ(outcome.calls, 1);
  ASSERT_TRUE(outcome.result->has_value());
  ASSERT_EQ((*outcome.result)->content.size(), 1u);
  EXPECT_EQ((*outcome.result)->content[0].text, "dev");
  EXPECT_EQ((*outcome.result)->details.at("answer"), "dev");
  EXPECT_EQ((*outcome.result)->details.at("question"), "Which branch?");
}

TEST(AskUserToolTest, WithoutChoicesTheAnswerIsFreeForm) {
  FakePrompter prompter;
  AskUserTool tool(prompter);
  Outcome outcome;
  tool.execute(context(), {{"question", "Name?"}}, outcome.done());
  EXPECT_TRUE(prompter.asked_choices.empty());
  prompter.answer(std::string(""));
  ASSERT_TRUE(outcome.result->has_value());
  EXPECT_EQ((*outcome.result)->content[0].text, "(the user answered with an empty message)");
}

TEST(AskUserToolTest, PrompterErrorsBecomeTheCallsError) {
  FakePrompter prompter;
  AskUserTool tool(prompter);
  Outcome outcome;
  CancellationSource source;
  tool.execute(context(source.token()), {{"question", "Proceed?"}}, outcome.done());
  source.cancel();
  ASSERT_TRUE(prompter.asked_cancel.is_cancelled());  // the prompter got the call's token
  prompter.answer(fail(codes::kCancelled, "cancelled"));
  ASSERT_EQ(outcome.calls, 1);
  ASSERT_FALSE(outcome.result->has_value());
  EXPECT_EQ(outcome.result->error().code(), codes::kCancelled);
}

TEST(AskUserToolTest, ASecondAnswerIsIgnored) {
  FakePrompter prompter;
  AskUserTool tool(prompter);
  Outcome outcome;
  tool.execute(context(), {{"question", "Proceed?"}}, outcome.done());
  prompter.answer(std::string("yes"));
  prompter.answer(std::string("no"));
  EXPECT_EQ(outcome.calls, 1);
  EXPECT_EQ((*outcome.result)->content[0].text, "yes");
}

TEST(AskUserToolTest, AlreadyCancelledCallDoesNotAsk) {
  FakePrompter prompter;
  AskUserTool tool(prompter);
  Outcome outcome;
  CancellationSource source;
  source.cancel();
  tool.execute(context(source.token()), {{"question", "Proceed?"}}, outcome.done());
  EXPECT_EQ(prompter.asked, 0);
  ASSERT_EQ(outcome.calls, 1);
  EXPECT_EQ(outcome.result->error().code(), codes::kCancelled);
}

TEST(AskUserToolTest, SchemaRequiresAQuestionAndStringChoices) {
  FakePrompter prompter;
  AskUserTool tool(prompter);
  auto validator = compile_parameter_schema(tool.spec().parameters).value();
  EXPECT_TRUE(validator->validate({{"question", "Q?"}}).has_value());
  EXPECT_TRUE(validator->validate({{"question", "Q?"}, {"choices", {"a", "b"}}}).has_value());
  EXPECT_FALSE(validator->validate(nlohmann::json::object()).has_value());
  EXPECT_FALSE(validator->validate({{"question", ""}}).has_value());
  EXPECT_FALSE(validator->validate({{"question", "Q?"}, {"choices", {1, 2}}}).has_value());
  EXPECT_FALSE(validator->validate({{"question", "Q?"}, {"default", "a"}}).has_value());
}

}  // namespace
}  // namespace keel::builtin
