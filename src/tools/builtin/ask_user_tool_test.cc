// Tests for the interaction tools: ask_user (tools/builtin/ask_user_tool.h) and set_timer
// (tools/builtin/timer_tool.h). The engine's side (persisting, claiming, restarts) is tested in
// engine/interaction_test.cc.
#include "tools/builtin/ask_user_tool.h"

#include <gtest/gtest.h>

#include "keel/error_codes.h"
#include "keel/tool_registry.h"
#include "tools/builtin/timer_tool.h"

namespace keel::builtin {
namespace {

TEST(AskUserToolTest, PlansAnAskUserInteractionWithTheQuestionAndChoices) {
  AskUserTool tool;
  auto plan = tool.plan_interaction({{"question", "Which branch?"}, {"choices", {"main", "dev"}}});
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->kind, InteractionKind::kAskUser);
  EXPECT_EQ(plan->request, (nlohmann::json{{"question", "Which branch?"}, {"choices", {"main", "dev"}}}));
  EXPECT_FALSE(plan->due_in_ms.has_value());
}

TEST(AskUserToolTest, TheAnswerBecomesTheContentVerbatimWithTheQuestionInDetails) {
  AskUserTool tool;
  const nlohmann::json request = {{"question", "Which branch?"}, {"choices", {"main"}}};
  ToolResult result = tool.complete_interaction(request, {{"answer", "dev, please"}});
  ASSERT_EQ(result.content.size(), 1u);
  EXPECT_EQ(result.content[0].text, "dev, please");
  EXPECT_EQ(result.details["question"], "Which branch?");
  EXPECT_EQ(result.details["answer"], "dev, please");
}

TEST(AskUserToolTest, AnEmptyAnswerIsSaidToBeOne) {
  AskUserTool tool;
  ToolResult result = tool.complete_interaction({{"question", "q"}}, {{"answer", ""}});
  EXPECT_EQ(result.content[0].text, "(the user answered with an empty message)");
}

TEST(AskUserToolTest, ResponsesThatAreNotATextAnswerAreRefused) {
  AskUserTool tool;
  const nlohmann::json request = {{"question", "q"}};
  EXPECT_TRUE(tool.check_response(request, {{"answer", "yes"}}).has_value());
  for (const nlohmann::json& bad :
       {nlohmann::json("yes"), nlohmann::json::object(), nlohmann::json{{"answer", 3}},
        nlohmann::json{{"answer", nullptr}}, nlohmann::json{{"answer", std::string(70000, 'a')}},
        nlohmann::json{{"answer", std::string("\xff\xfe")}}}) {
    auto checked = tool.check_response(request, bad);
    ASSERT_FALSE(checked.has_value()) << bad.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    EXPECT_EQ(checked.error().code(), codes::kInvalidArgument);
  }
}

TEST(AskUserToolTest, ExecutingItDirectlyIsAnErrorNotAHang) {
  AskUserTool tool;
  std::optional<Result<ToolResult>> outcome;
  tool.execute(ToolCallContext{"c", "t", {}, [](ToolProgress) {}}, {{"question", "q"}},
               [&](Result<ToolResult> r) { outcome = std::move(r); });
  ASSERT_TRUE(outcome.has_value());
  EXPECT_FALSE(outcome->has_value());
}

TEST(AskUserToolTest, RegistersAsATrustedBuiltinRead) {
  ToolRegistry registry;
  auto descriptor = registry.register_tool(std::make_shared<AskUserTool>());
  ASSERT_TRUE(descriptor.has_value()) << descriptor.error().to_string();
  EXPECT_EQ((*descriptor)->effects, ToolEffects::kRead);
  EXPECT_EQ((*descriptor)->trust, ToolTrust::kTrusted);
}

TEST(TimerToolTest, PlansATimerDueAfterTheGivenSeconds) {
  TimerTool tool;
  auto plan = tool.plan_interaction({{"seconds", 2.5}, {"note", "check the build"}});
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->kind, InteractionKind::kTimer);
  EXPECT_EQ(plan->due_in_ms, 2500);
  EXPECT_EQ(plan->request["note"], "check the build");
}

TEST(TimerToolTest, CannotBeAnsweredByAPerson) {
  TimerTool tool;
  auto checked = tool.check_response({{"seconds", 1}}, {{"firedAtMs", 5}});
  ASSERT_FALSE(checked.has_value());
  EXPECT_EQ(checked.error().code(), codes::kInvalidArgument);
}

TEST(TimerToolTest, TheResultSaysTheTimerFired) {
  TimerTool tool;
  ToolResult result = tool.complete_interaction({{"seconds", 60}, {"note", "build"}}, {{"firedAtMs", 1234}});
  EXPECT_EQ(result.content[0].text, "The timer of 60 s fired (build).");
  EXPECT_EQ(result.details["firedAtMs"], 1234);
}

TEST(TimerToolTest, TheSchemaBoundsTheDelay) {
  ToolRegistry registry;
  ASSERT_TRUE(registry.register_tool(std::make_shared<TimerTool>()).has_value());
  const RegisteredTool* tool = registry.snapshot()->find("set_timer");
  ASSERT_NE(tool, nullptr);
  EXPECT_TRUE(tool->validator->validate({{"seconds", 30}}).has_value());
  EXPECT_FALSE(tool->validator->validate({{"seconds", 0}}).has_value());
  EXPECT_FALSE(tool->validator->validate({{"seconds", TimerTool::kMaxSeconds + 1}}).has_value());
}

}  // namespace
}  // namespace keel::builtin
