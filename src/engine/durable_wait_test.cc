// Tests for DurableWait (engine/durable_wait.h): a call that waits suspends the run on a durable approval or
// interaction, and the continuation re-verifies an approved call, finishes an interaction, or answers the
// open calls of a withdrawn wait.
#include "engine/durable_wait.h"

#include <gtest/gtest.h>

#include "engine/turn_fixture.h"

namespace keel {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

class DurableWaitTest : public testing::TurnFixture {
 protected:
  bool run_call(const PlannedCall& call) {
    return on_strand(waits().run_call(call, /*more_after=*/false, std::nullopt, false));
  }
  // What the run's pending tool names as its wait.
  std::string wait_id(const char* key) {
    const std::optional<PendingTool> pending = stored_run().pending_tool;
    if (!pending) return "";
    auto stored = encode_pending_tool(*pending);  // the keys as the store writes them
    return stored ? stored->value(key, "") : "";
  }
  // A person's decision on the approval, written as the approval op writes it.
  void decide_approval(json decision) {
    const std::string approval_id = wait_id("approvalId");
    ASSERT_TRUE(engine().write([&](Transaction& tx) -> Result<void> {
      ApprovalAnswer answer = KEEL_TRY(decode_approval_answer(decision, "the test's decision"));
      KEEL_TRY(engine().interactions().decide(tx, approval_id, std::move(answer)));
      RunRecord run = KEEL_TRY(engine().runs().get(tx, kRunId));
      KEEL_TRY(engine().runs().transition_from(tx, run, RunState::kWaitingApproval));
      return {};
    }));
  }
  bool continue_wait() {
    continue_after_wait();
    return on_strand(waits().continue_wait());
  }
  PlannedCall approval_pending() {
    gatekeeper.set(GateVerdict::Kind::kAsk, "it writes");
    const PlannedCall call = commit_calls({asked("c1", "write_note")}).front();
    EXPECT_FALSE(run_call(call));
    return call;
  }
};

TEST_F(DurableWaitTest, ACallThatMustBeApprovedSuspendsTheRunOnADurableApproval) {
  gatekeeper.set(GateVerdict::Kind::kAsk, "it writes");
  const PlannedCall call = commit_calls({asked("c1", "write_note")}).front();

  EXPECT_FALSE(run_call(call)) << "the turn waits";

  const RunRecord run = stored_run();
  EXPECT_EQ(run.state, RunState::kWaitingApproval);
  const std::string approval_id = wait_id("approvalId");
  ASSERT_FALSE(approval_id.empty());
  ASSERT_TRUE(run.pending_tool.has_value());
  EXPECT_EQ(run.pending_tool->tool_call_id, call.tool_call_id);
  auto tx = engine().store().begin(TxMode::kRead);
  ASSERT_TRUE(tx);
  auto approval = engine().interactions().get_approval(**tx, approval_id);
  ASSERT_TRUE(approval) << approval.error().to_string();
  EXPECT_EQ(approval->tool_call_id, call.tool_call_id);
  EXPECT_FALSE(approval->request.value("tool", json::object()).value("digest", "").empty())
      << "what was approved is stored with it";
  EXPECT_TRUE(on_strand([&] { return actor->holds(approval_id); })) << "the wait holds the thread";
  EXPECT_EQ(outbox_types(), (std::vector<std::string>{"run.updated", "approval.request"}));
  EXPECT_EQ(executions("write_note"), 0);
}

TEST_F(DurableWaitTest, AnAcceptedApprovalRunsTheCallOnce) {
  const PlannedCall call = approval_pending();
  decide_approval({{"decision", "accept"}});

  EXPECT_TRUE(continue_wait()) << "the run goes on to the model";

  EXPECT_EQ(executions("write_note"), 1);
  EXPECT_EQ(result_for(call).body.dump().find("refused"), std::string::npos);
  EXPECT_EQ(stored_run().state, RunState::kStreamingModel);
  EXPECT_FALSE(stored_run().pending_tool.has_value());
}

TEST_F(DurableWaitTest, AnAcceptedApprovalThatFailsReverificationIsRefused) {
  const PlannedCall call = approval_pending();
  decide_approval({{"decision", "accept"}});
  gatekeeper.set(GateVerdict::Kind::kDeny, "the rules changed meanwhile");

  EXPECT_TRUE(continue_wait());

  EXPECT_EQ(executions("write_note"), 0);
  const NodeRecord result = result_for(call);
  EXPECT_TRUE(result.body.value("refused", false));
  EXPECT_NE(result.body.dump().find("the rules changed meanwhile"), std::string::npos) << result.body.dump();
  EXPECT_EQ(stored_run().state, RunState::kStreamingModel);
}

TEST_F(DurableWaitTest, ADeclinedApprovalIsRefusedWithThePersonsReason) {
  const PlannedCall call = approval_pending();
  decide_approval({{"decision", "decline"}, {"reason", "not that file"}});

  EXPECT_TRUE(continue_wait());

  EXPECT_EQ(executions("write_note"), 0);
  const NodeRecord result = result_for(call);
  EXPECT_TRUE(result.body.value("refused", false));
  EXPECT_NE(result.body.dump().find("not that file"), std::string::npos) << result.body.dump();
}

TEST_F(DurableWaitTest, AWithdrawnWaitAnswersTheOpenCallAsNotRunAndEndsInterrupted) {
  const PlannedCall call = approval_pending();
  on_strand([&] { actor->interrupt("interrupted by the user"); });

  EXPECT_FALSE(continue_wait());

  EXPECT_EQ(executions("write_note"), 0);
  EXPECT_EQ(stored_run().state, RunState::kInterrupted);
  EXPECT_NE(result_for(call).body.dump().find("it was not run"), std::string::npos);
}

TEST_F(DurableWaitTest, ATimerWaitResumesWhenSimulatedTimeReachesItsDueTime) {
  const PlannedCall call = commit_calls({asked("c1", "set_timer", R"({"seconds":60})")}).front();
  const int64_t started = clock.now_unix_ms();

  EXPECT_FALSE(run_call(call));

  EXPECT_EQ(stored_run().state, RunState::kWaitingInteraction);
  const std::string interaction_id = wait_id("interactionId");
  ASSERT_FALSE(interaction_id.empty());
  auto interaction = [&] {
    auto tx = engine().store().begin(TxMode::kRead);
    EXPECT_TRUE(tx);
    auto found = engine().interactions().get_interaction(**tx, interaction_id);
    EXPECT_TRUE(found);
    return found ? *found : InteractionRecord{};
  };
  EXPECT_EQ(interaction().due_at, started + 60'000);
  provider.push(testing::ScriptedResponse::text("the timer fired"));

  clock.advance(milliseconds(59'999));
  EXPECT_FALSE(interaction().response.has_value()) << "not due yet";
  clock.advance(milliseconds(1));

  // The timer answers the interaction and the continuation runs the turn to its end.
  ASSERT_TRUE(log.wait_count("turn.complete", 1));
  EXPECT_TRUE(interaction().response.has_value());
  const NodeRecord result = result_for(call);
  EXPECT_EQ(result.body.value("interactionId", ""), interaction_id);
  EXPECT_EQ(stored_run().state, RunState::kCompleted);
}

TEST_F(DurableWaitTest, TheOpenCallsAreThoseOfTheLastResponseWithoutAResult) {
  const std::vector<PlannedCall> planned = commit_calls({asked("c1", "echo"), asked("c2", "echo")});
  ASSERT_TRUE(on_strand(calls().run(planned[0], /*more_after=*/true, std::nullopt, false)).next ==
              CallExecutor::Outcome::Next::kAnswered);

  auto open = on_strand([&]() -> Result<std::vector<PlannedCall>> {
    auto tx = KEEL_TRY(engine().store().begin(TxMode::kRead));
    return waits().calls_without_results(*tx);
  });

  ASSERT_TRUE(open) << open.error().to_string();
  ASSERT_EQ(open->size(), 1u);
  EXPECT_EQ(open->front().tool_call_id, planned[1].tool_call_id);
  EXPECT_EQ(open->front().call_node_id, planned[1].call_node_id);
  EXPECT_EQ(open->front().arguments, json::object());
}

}  // namespace
}  // namespace keel
