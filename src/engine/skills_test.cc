// Skills through the whole engine (issue 19, point 6): a run is told of the skills it binds, reads them with
// read_skill, and cannot continue once a skill it bound changed or disappeared (environment.drift).
#include <gtest/gtest.h>

#include "engine/engine_errors.h"
#include "engine/engine_harness.h"
#include "skills/read_skill_tool.h"
#include "testing/fake_skill_catalog.h"
#include "tools/builtin/builtin_tools.h"

namespace keel {
namespace {

using nlohmann::json;
using testing::EngineHarness;
using testing::FakeSkillCatalog;
using testing::ScriptedResponse;

class SkillsEngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    skills.add("deploy", "Ship a release to production.",
               "Run the release script, then check the dashboard.");
    skills.add("lint", "Check the style of C++ files.", "Run clang-format.");
    ASSERT_TRUE(builtin::register_builtin_tools(h.tools, {.interactions = true}));
    ASSERT_TRUE(h.tools.register_tool(std::make_shared<skills::ReadSkillTool>(skills)));
    h.set_skills(&skills);
  }
  std::string last_result_text(const std::string& thread) {
    std::string text;
    for (const NodeRecord& node : h.path(thread)) {
      if (node.kind == NodeKind::kToolResult) text = node.body["content"][0].value("text", "");
    }
    return text;
  }
  // A turn whose model asks the person a question, and waits; returns the interaction.request.
  AgentEvent turn_that_asks(const std::string& thread) {
    h.provider.push(ScriptedResponse::tool_calls({{"c1", "ask_user", json{{"question", "Which?"}}.dump()}}));
    h.provider.push(ScriptedResponse::text("done"));
    EXPECT_EQ(h.request("turn.submit", {{"threadId", thread}, {"input", "go"}}).type, "command.ack");
    return h.wait_event(thread, "interaction.request");
  }
  AgentEvent answer(const std::string& thread, const AgentEvent& asked) {
    return h.request("interaction.response", {{"threadId", thread},
                                              {"interactionId", asked.payload["interactionId"]},
                                              {"response", {{"answer", "left"}}}});
  }

  FakeSkillCatalog skills;
  EngineHarness h;
};

TEST_F(SkillsEngineTest, TheModelIsToldOfEachSkillAndReadsOneThroughReadSkill) {
  h.provider.push(ScriptedResponse::tool_calls({{"c1", "read_skill", R"({"name":"deploy"})"}}));
  h.provider.push(ScriptedResponse::text("done"));
  h.start();
  const std::string thread = h.create_thread();
  ASSERT_EQ(h.request("turn.submit", {{"threadId", thread}, {"input", "ship it"}}).type, "command.ack");
  EXPECT_EQ(h.wait_complete(thread, 1).payload["stopReason"], "end");
  const std::string prompt = h.provider.requests().at(0).system_prompt;
  EXPECT_TRUE(prompt.starts_with(h.engine_options().model.system_prompt + "\n\n# Skills\n")) << prompt;
  EXPECT_NE(prompt.find("- deploy: Ship a release to production.\n"), std::string::npos) << prompt;
  EXPECT_NE(prompt.find("- lint: Check the style of C++ files.\n"), std::string::npos) << prompt;
  EXPECT_NE(last_result_text(thread).find("Run the release script"), std::string::npos);
}

TEST_F(SkillsEngineTest, WithoutTheReadSkillToolTheModelIsNotToldOfSkills) {
  ASSERT_TRUE(h.tools.unregister_tool("read_skill"));
  h.provider.push(ScriptedResponse::text("done"));
  h.start();
  const std::string thread = h.create_thread();
  h.run_turn(thread, "hello");
  const std::string prompt = h.provider.requests().at(0).system_prompt;
  EXPECT_EQ(prompt.find("# Skills"), std::string::npos) << prompt;
  EXPECT_EQ(prompt.find("deploy"), std::string::npos) << prompt;
}

TEST_F(SkillsEngineTest, ARunWaitingForAnAnswerContinuesWhenItsSkillsAreUnchanged) {
  h.start();
  const std::string thread = h.create_thread();
  const AgentEvent asked = turn_that_asks(thread);
  h.stop();
  FakeSkillCatalog same;
  same.add("deploy", "Ship a release to production.", "Run the release script, then check the dashboard.");
  same.add("lint", "Check the style of C++ files.", "Run clang-format.");
  h.set_skills(&same);
  h.start();
  ASSERT_EQ(answer(thread, asked).type, "command.ack");
  EXPECT_EQ(h.wait_complete(thread, 1).payload["stopReason"], "end");
}

TEST_F(SkillsEngineTest, ASkillEditedWhileARunWaitsRefusesItsContinuationWithEnvironmentDrift) {
  h.start();
  const std::string thread = h.create_thread();
  const AgentEvent asked = turn_that_asks(thread);
  const size_t requests_before = h.provider.requests().size();
  h.stop();
  FakeSkillCatalog edited;
  edited.add("deploy", "Ship a release to production.", "Run the NEW release script.");
  edited.add("lint", "Check the style of C++ files.", "Run clang-format.");
  h.set_skills(&edited);
  h.start();
  ASSERT_EQ(answer(thread, asked).type, "command.ack");
  const AgentEvent complete = h.wait_complete(thread, 1);
  EXPECT_EQ(complete.payload["stopReason"], "error");
  EXPECT_EQ(complete.payload["error"]["code"], codes::kEnvironmentDrift) << complete.payload.dump();
  const std::string message = complete.payload["error"].value("message", "");
  EXPECT_NE(message.find("skill deploy changed"), std::string::npos) << message;
  EXPECT_EQ(message.find("lint"), std::string::npos) << message;
  EXPECT_EQ(h.run(asked.payload["runId"]).state, RunState::kFailed);
  EXPECT_EQ(h.provider.requests().size(), requests_before) << "the run went on with the edited skill";
}

TEST_F(SkillsEngineTest, ASkillRemovedWhileARunWaitsRefusesItsContinuationWithEnvironmentDrift) {
  h.start();
  const std::string thread = h.create_thread();
  const AgentEvent asked = turn_that_asks(thread);
  h.stop();
  FakeSkillCatalog fewer;
  fewer.add("lint", "Check the style of C++ files.", "Run clang-format.");
  h.set_skills(&fewer);
  h.start();
  ASSERT_EQ(answer(thread, asked).type, "command.ack");
  const AgentEvent complete = h.wait_complete(thread, 1);
  EXPECT_EQ(complete.payload["error"]["code"], codes::kEnvironmentDrift) << complete.payload.dump();
  EXPECT_NE(complete.payload["error"].value("message", "").find("skill deploy is no longer available"),
            std::string::npos)
      << complete.payload.dump();
}

}  // namespace
}  // namespace keel
