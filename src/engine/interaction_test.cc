// Interactions through the whole engine (spec §5, §5.1): ask_user questions and set_timer timers as
// durable waiting_interaction records, answered or fired, claimed exactly once, across restarts.
#include <gtest/gtest.h>

#include "engine/engine_errors.h"
#include "engine/engine_harness.h"
#include "store/interaction_repository.h"
#include "tools/builtin/builtin_tools.h"

namespace keel {
namespace {

using nlohmann::json;
using testing::EngineHarness;
using testing::ScriptedResponse;

class InteractionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(builtin::register_builtin_tools(h.tools, {.interactions = true}));
    h.start();
    thread = h.create_thread();
  }
  // A turn whose model calls `tool` with `arguments`, then answers "done"; returns its interaction.request.
  AgentEvent turn_that_waits(const std::string& tool, json arguments) {
    h.provider.push(ScriptedResponse::tool_calls({{"c1", tool, arguments.dump()}}));
    h.provider.push(ScriptedResponse::text("done"));
    const size_t before = h.log.of_type("interaction.request").size();
    EXPECT_EQ(h.request("turn.submit", {{"threadId", thread}, {"input", "go"}}).type, "command.ack");
    return h.wait_event(thread, "interaction.request", before + 1);
  }
  AgentEvent answer(const std::string& id, json response) {
    return h.request("interaction.response",
                     {{"threadId", thread}, {"interactionId", id}, {"response", std::move(response)}});
  }
  std::vector<NodeRecord> results() {
    std::vector<NodeRecord> out;
    for (const NodeRecord& node : h.path(thread)) {
      if (node.kind == NodeKind::kToolResult) out.push_back(node);
    }
    return out;
  }
  std::string result_text() {
    auto found = results();
    if (found.empty()) return "";
    return found.back().body["content"][0].value("text", "");
  }

  EngineHarness h;
  std::string thread;
};

TEST_F(InteractionTest, AQuestionWaitsDurablyAndItsAnswerBecomesTheTrustedResult) {
  AgentEvent asked =
      turn_that_waits("ask_user", {{"question", "Which branch?"}, {"choices", {"main", "dev"}}});
  EXPECT_EQ(asked.payload["kind"], "ask_user");
  EXPECT_EQ(asked.payload["request"]["question"], "Which branch?");
  const std::string id = asked.payload["interactionId"];
  EXPECT_EQ(h.run(asked.payload["runId"]).state, RunState::kWaitingInteraction);
  EXPECT_TRUE(results().empty());
  ASSERT_EQ(answer(id, {{"answer", "dev"}}).type, "command.ack");
  EXPECT_EQ(h.wait_complete(thread, 1).payload["stopReason"], "end");
  EXPECT_EQ(result_text(), "dev");
  EXPECT_EQ(results().back().body.value("interactionId", ""), id);
}

TEST_F(InteractionTest, AMalformedAnswerIsRefusedAndTheQuestionStillWaits) {
  AgentEvent asked = turn_that_waits("ask_user", {{"question", "Name?"}});
  const std::string id = asked.payload["interactionId"];
  for (const json& bad : {json("dev"), json::object(), json{{"answer", 4}}}) {
    AgentEvent refused = answer(id, bad);
    ASSERT_EQ(refused.type, "command.rejected") << bad.dump();
    EXPECT_EQ(refused.payload["error"]["code"], codes::kInvalidArgument);
  }
  AgentEvent missing = h.request("interaction.response", {{"threadId", thread}, {"interactionId", id}});
  EXPECT_EQ(missing.payload["error"]["code"], codes::kInvalidArgument);
  EXPECT_EQ(answer("nope", {{"answer", "x"}}).payload["error"]["code"], codes::kInteractionNotFound);
  const std::string other = h.create_thread();
  EXPECT_EQ(h.request("interaction.response",
                      {{"threadId", other}, {"interactionId", id}, {"response", {{"answer", "x"}}}})
                .payload["error"]["code"],
            codes::kInteractionThreadMismatch);
  EXPECT_EQ(h.run(asked.payload["runId"]).state, RunState::kWaitingInteraction);
  ASSERT_EQ(answer(id, {{"answer", "Ada"}}).type, "command.ack");
  h.wait_complete(thread, 1);
  EXPECT_EQ(result_text(), "Ada");
}

TEST_F(InteractionTest, TheSameAnswerAgainIsAcknowledgedAndADifferentOneRefusedLiveAndWithoutAWaiter) {
  AgentEvent asked = turn_that_waits("ask_user", {{"question", "Name?"}});
  const std::string id = asked.payload["interactionId"];
  ASSERT_EQ(answer(id, {{"answer", "Ada"}}).type, "command.ack");
  for (int round = 0; round < 2; ++round) {
    AgentEvent same = answer(id, {{"answer", "Ada"}});
    EXPECT_EQ(same.type, "command.ack");
    EXPECT_TRUE(same.payload["result"].value("alreadySettled", false));
    AgentEvent other = answer(id, {{"answer", "Bob"}});
    ASSERT_EQ(other.type, "command.rejected");
    EXPECT_EQ(other.payload["error"]["code"], codes::kInvalidCommand);
    if (round == 0) h.wait_complete(thread, 1);
  }
  ASSERT_EQ(results().size(), 1u);
  EXPECT_EQ(result_text(), "Ada");
}

TEST_F(InteractionTest, AQuestionSurvivesARestartIsSentAgainAndItsAnswerContinuesTheRun) {
  AgentEvent asked = turn_that_waits("ask_user", {{"question", "Name?"}});
  const std::string id = asked.payload["interactionId"];
  h.stop();
  h.start();
  AgentEvent init = h.request("initialize", {{"subscribe", true}});
  ASSERT_EQ(init.type, "command.ack");
  const nlohmann::json& unfinished = init.payload["result"]["unfinished"];
  ASSERT_EQ(unfinished.size(), 1u) << unfinished.dump();
  EXPECT_EQ(unfinished[0]["pendingInteractions"],
            nlohmann::json::array({{{"interactionId", id}, {"kind", "ask_user"}}}));
  AgentEvent resent = h.wait_event(thread, "interaction.request", 2);
  EXPECT_EQ(resent.payload["interactionId"], id);
  EXPECT_EQ(h.request("thread.fork", {{"threadId", thread}}).payload["error"]["code"], codes::kThreadWaiting);
  ASSERT_EQ(answer(id, {{"answer", "Ada"}}).type, "command.ack");
  EXPECT_EQ(h.wait_complete(thread, 1).payload["stopReason"], "end");
  EXPECT_EQ(result_text(), "Ada");
  EXPECT_TRUE(answer(id, {{"answer", "Ada"}}).payload["result"].value("alreadySettled", false));
  EXPECT_EQ(answer(id, {{"answer", "Bob"}}).payload["error"]["code"], codes::kInvalidCommand);
}

TEST_F(InteractionTest, AnAnswerCommittedBeforeACrashIsClaimedOnceOnTheNextStart) {
  AgentEvent asked = turn_that_waits("ask_user", {{"question", "Name?"}});
  const std::string id = asked.payload["interactionId"];
  h.stop();
  {
    InteractionRepository interactions(h.clock);
    auto tx = h.store().begin(TxMode::kWrite);
    ASSERT_TRUE(tx);
    ASSERT_TRUE(interactions.answer(**tx, id, {{"answer", "Ada"}}));
    ASSERT_TRUE((*tx)->commit());
  }
  h.start();
  h.wait_run_state(asked.payload["runId"], RunState::kCompleted);
  ASSERT_EQ(results().size(), 1u);
  EXPECT_EQ(result_text(), "Ada");
  auto tx = h.store().begin(TxMode::kRead);
  ASSERT_TRUE(tx);
  InteractionRepository interactions(h.clock);
  EXPECT_EQ(interactions.get_interaction(**tx, id)->claim_state, ClaimState::kClaimed);
}

TEST_F(InteractionTest, ATimerFiresAndTheRunContinues) {
  AgentEvent asked = turn_that_waits("set_timer", {{"seconds", 1}, {"note", "build"}});
  EXPECT_EQ(asked.payload["kind"], "timer");
  EXPECT_EQ(asked.payload["dueAtMs"], h.clock.now_unix_ms() + 1000);
  // Nobody may answer a timer.
  EXPECT_EQ(answer(asked.payload["interactionId"], {{"firedAtMs", 1}}).payload["error"]["code"],
            codes::kInvalidArgument);
  ASSERT_TRUE(h.clock.wait_scheduled(1));
  EXPECT_EQ(h.clock.delays().back(), std::chrono::seconds(1));
  h.clock.advance(std::chrono::seconds(1));
  EXPECT_EQ(h.wait_complete(thread, 1).payload["stopReason"], "end");
  EXPECT_EQ(result_text(), "The timer of 1 s fired (build).");
}

// Simulated time: an hour's timer is a test that takes no real time, and it fires neither early nor late.
TEST_F(InteractionTest, ATimerDueInAnHourFiresWhenTheHourHasPassed) {
  AgentEvent asked = turn_that_waits("set_timer", {{"seconds", 3600}});
  ASSERT_TRUE(h.clock.wait_scheduled(1));
  EXPECT_EQ(h.clock.delays().back(), std::chrono::hours(1));
  h.clock.advance(std::chrono::minutes(59));
  EXPECT_EQ(h.clock.pending(), 1u);
  EXPECT_EQ(h.run(asked.payload["runId"]).state, RunState::kWaitingInteraction);
  h.clock.advance(std::chrono::minutes(1));
  EXPECT_EQ(h.wait_complete(thread, 1).payload["stopReason"], "end");
  EXPECT_EQ(result_text(), "The timer of 3600 s fired.");
}

TEST_F(InteractionTest, ATimerThatFellDueWhileKeelWasDownFiresAtTheNextStart) {
  AgentEvent asked = turn_that_waits("set_timer", {{"seconds", 3600}});
  ASSERT_TRUE(h.clock.wait_scheduled(1));
  h.stop();
  h.clock.advance(std::chrono::hours(2));
  h.start();
  ASSERT_TRUE(h.clock.wait_scheduled(2));  // armed again by recovery, due at once
  EXPECT_EQ(h.clock.delays().back(), std::chrono::milliseconds(0));
  h.clock.advance(std::chrono::milliseconds(0));
  h.wait_run_state(asked.payload["runId"], RunState::kCompleted);
  EXPECT_EQ(result_text(), "The timer of 3600 s fired.");
}

// Issue 14 point 20: a steer while a question waits is ACKed durably and read by the first request after
// the answer.
TEST_F(InteractionTest, ASteerWhileAQuestionWaitsIsAckedAndReadAfterTheAnswer) {
  AgentEvent asked = turn_that_waits("ask_user", {{"question", "Which branch?"}});
  AgentEvent steered =
      h.request("turn.steer",
                {{"threadId", thread}, {"expectedTurnId", asked.payload["turnId"]}, {"input", "use dev"}});
  ASSERT_EQ(steered.type, "command.ack") << steered.payload.dump();
  ASSERT_EQ(answer(asked.payload["interactionId"], {{"answer", "main"}}).type, "command.ack");
  EXPECT_EQ(h.wait_complete(thread, 1).payload["stopReason"], "end");
  EXPECT_EQ(h.kinds(thread),
            (std::vector<std::string>{"turn_context", "user_message", "assistant_message", "tool_call",
                                      "tool_result", "user_message", "assistant_message"}));
  auto requests = h.provider.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[1].messages.back().content[0].text, "use dev");
}

TEST_F(InteractionTest, InterruptWithdrawsTheQuestion) {
  AgentEvent asked = turn_that_waits("ask_user", {{"question", "Name?"}});
  ASSERT_EQ(h.request("turn.interrupt", {{"threadId", thread}}).type, "command.ack");
  EXPECT_EQ(h.wait_complete(thread, 1).payload["stopReason"], "interrupted");
  EXPECT_EQ(answer(asked.payload["interactionId"], {{"answer", "late"}}).payload["error"]["code"],
            codes::kInteractionExpired);
  ASSERT_EQ(results().size(), 1u);
  EXPECT_TRUE(results().back().body.value("interrupted", false));
}

}  // namespace
}  // namespace keel
