// Tests for CallExecutor (engine/call_executor.h): planning a response's calls, the one decision whether a
// call runs, its dispatch record, its execution and its committed result.
#include "engine/call_executor.h"

#include <gtest/gtest.h>

#include "engine/engine_errors.h"
#include "engine/turn_fixture.h"

namespace keel {
namespace {

using nlohmann::json;
using Next = CallExecutor::Outcome::Next;

class CallExecutorTest : public testing::TurnFixture {
 protected:
  CallDecision decide(const PlannedCall& call, bool approved = false) {
    return on_strand([&] { return calls().decide(call, approved); });
  }
  CallExecutor::Outcome run_call(const PlannedCall& call, bool more_after = false) {
    return on_strand(calls().run(call, more_after, std::nullopt, false));
  }
  PlannedCall plan_one(const std::string& tool, const std::string& arguments = "{}") {
    AssembledResponse response;
    response.tool_calls = {asked("c1", tool, arguments)};
    return on_strand([&] { return calls().plan(response); }).front();
  }
};

TEST_F(CallExecutorTest, PlanningGivesEveryCallAThreadUniqueIdAndItsOwnNodes) {
  AssembledResponse response;
  response.tool_calls = {asked("c1", "echo"), asked("c1", "echo"), asked("", "echo")};
  const std::vector<PlannedCall> planned = on_strand([&] { return calls().plan(response); });
  ASSERT_EQ(planned.size(), 3u);
  EXPECT_EQ(planned[0].tool_call_id, "c1");
  EXPECT_NE(planned[1].tool_call_id, "c1") << "a duplicate in the response is replaced";
  EXPECT_EQ(planned[1].original_id, "c1");
  EXPECT_FALSE(planned[2].tool_call_id.empty()) << "an empty id is replaced";
  EXPECT_NE(planned[1].tool_call_id, planned[2].tool_call_id);
  EXPECT_NE(planned[0].call_node_id, planned[0].result_node_id);
  EXPECT_NE(planned[0].call_node_id, planned[1].call_node_id);
}

TEST_F(CallExecutorTest, PlanningParsesArgumentsAndKeepsWhyTheyCannotBeUsed) {
  EXPECT_EQ(plan_one("echo", R"({"text":"hi"})").arguments, (json{{"text", "hi"}}));
  EXPECT_EQ(plan_one("echo", "  ").arguments, json::object()) << "no arguments are an empty object";
  const PlannedCall not_json = plan_one("echo", "{not json");
  ASSERT_TRUE(not_json.argument_error.has_value());
  EXPECT_EQ(not_json.argument_error->code(), codes::kToolArgumentsNotJson);
  const PlannedCall not_object = plan_one("echo", "[1]");
  ASSERT_TRUE(not_object.argument_error.has_value());
  EXPECT_EQ(not_object.argument_error->code(), codes::kToolArgumentsNotJson);
}

TEST_F(CallExecutorTest, ACallTheEngineCannotRunIsAnsweredAtOnceWithoutAskingTheGatekeeper) {
  const CallDecision unknown = decide(plan_one("no_such_tool"));
  ASSERT_TRUE(unknown.immediate_error.has_value());
  EXPECT_EQ(unknown.immediate_error->code(), codes::kToolUnknown);
  EXPECT_NE(unknown.immediate_error->message().find("echo"), std::string::npos) << "it names the tools";
  EXPECT_TRUE(decide(plan_one("echo", "{bad")).immediate_error.has_value());
  EXPECT_TRUE(decide(plan_one("echo", R"({"other":1})")).immediate_error.has_value()) << "schema mismatch";
  turn().tools_off = true;
  EXPECT_TRUE(decide(plan_one("echo")).immediate_error.has_value()) << "tools are off";
  EXPECT_EQ(gatekeeper.checks(), 0);
}

TEST_F(CallExecutorTest, TheGatekeepersVerdictDecidesWhetherACallRunsWaitsOrIsRefused) {
  const PlannedCall call = plan_one("write_note");
  gatekeeper.set(GateVerdict::Kind::kAllow);
  EXPECT_TRUE(decide(call).executes());
  EXPECT_TRUE(decide(call).needs_dispatch_record()) << "write_note is never-retry";
  EXPECT_FALSE(decide(plan_one("echo")).needs_dispatch_record()) << "echo is retry-safe";
  gatekeeper.set(GateVerdict::Kind::kAsk, "it writes");
  EXPECT_TRUE(decide(call).waits());
  EXPECT_TRUE(decide(call, /*approved=*/true).executes()) << "a person approved what the verdict asked for";
  gatekeeper.set(GateVerdict::Kind::kDeny, "not here");
  const CallDecision denied = decide(call, /*approved=*/true);
  EXPECT_FALSE(denied.runs());
  EXPECT_EQ(denied.refusal, "not here");
  EXPECT_EQ(gatekeeper.checks(), 6);
}

TEST_F(CallExecutorTest, ARefusedCallGetsARefusedResultAndNoDispatch) {
  const PlannedCall call = commit_calls({asked("c1", "write_note")}).front();
  gatekeeper.set(GateVerdict::Kind::kDeny, "writing is off");

  const CallExecutor::Outcome outcome = run_call(call);

  EXPECT_EQ(outcome.next, Next::kAnswered);
  EXPECT_EQ(executions("write_note"), 0);
  const NodeRecord result = node(call.result_node_id);
  EXPECT_TRUE(result.body.value("refused", false));
  EXPECT_NE(result.body.dump().find("writing is off"), std::string::npos) << result.body.dump();
  const RunRecord run = stored_run();
  EXPECT_FALSE(run.pending_tool.has_value()) << "nothing was dispatched";
  EXPECT_EQ(run.state, RunState::kStreamingModel);
  EXPECT_EQ(run.failure_streak, 0) << "a refusal does not count as a failure";
  EXPECT_EQ(outbox_types(), (std::vector<std::string>{"item.complete"})) << "no tool.started";
}

TEST_F(CallExecutorTest, ANonRepeatableCallIsRecordedAsDispatchedBeforeItRuns) {
  const PlannedCall call = commit_calls({asked("c1", "write_note")}).front();

  const CallExecutor::Outcome outcome = run_call(call);

  EXPECT_EQ(outcome.next, Next::kAnswered);
  const std::vector<RunRecord> seen = runs_seen_by("write_note");
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].state, RunState::kExecutingTool);
  EXPECT_EQ(seen[0].pending_tool, TurnJournal::dispatch_record(call)) << "durable before the tool started";
  EXPECT_FALSE(stored_run().pending_tool.has_value()) << "the result settles it";
  EXPECT_FALSE(node(call.result_node_id).body.value("isError", true));
}

TEST_F(CallExecutorTest, ARetrySafeCallRunsWithoutADispatchRecord) {
  const PlannedCall call = commit_calls({asked("c1", "echo", R"({"text":"hi"})")}).front();

  EXPECT_EQ(run_call(call).next, Next::kAnswered);

  const std::vector<RunRecord> seen = runs_seen_by("echo");
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_FALSE(seen[0].pending_tool.has_value());
  EXPECT_NE(node(call.result_node_id).body.dump().find("echo: hi"), std::string::npos);
}

TEST_F(CallExecutorTest, ADispatchRecordThatCannotBeWrittenKeepsTheToolFromRunning) {
  const PlannedCall call = commit_calls({asked("c1", "write_note")}).front();
  fail_points.arm("store.commit", FailPoints::Action::kError);

  const CallExecutor::Outcome outcome = run_call(call);

  EXPECT_EQ(outcome.next, Next::kEnded);
  EXPECT_EQ(executions("write_note"), 0);
  ASSERT_TRUE(turn().failed_write.has_value()) << "the runner ends the turn with it";
  EXPECT_EQ(turn().failed_write->code(), codes::kFailPoint);
}

TEST_F(CallExecutorTest, ACallThatMustBeApprovedWaitsWithoutRunningOrWriting) {
  const PlannedCall call = commit_calls({asked("c1", "write_note")}).front();
  gatekeeper.set(GateVerdict::Kind::kAsk, "it writes");
  const int64_t revision = stored_run().revision;

  const CallExecutor::Outcome outcome = run_call(call);

  EXPECT_EQ(outcome.next, Next::kWaits);
  EXPECT_TRUE(outcome.decision.ask);
  EXPECT_EQ(executions("write_note"), 0);
  EXPECT_EQ(stored_run().revision, revision);
}

TEST_F(CallExecutorTest, AFailingToolsErrorIsItsResultAndCountsTowardsTheBreaker) {
  const PlannedCall call = commit_calls({asked("c1", "fail")}).front();

  EXPECT_EQ(run_call(call).next, Next::kAnswered);

  const NodeRecord result = node(call.result_node_id);
  EXPECT_TRUE(result.body.value("isError", false));
  EXPECT_NE(result.body.dump().find("test.failed"), std::string::npos) << result.body.dump();
  EXPECT_EQ(stored_run().failure_streak, 1);
}

TEST_F(CallExecutorTest, ACallOfACancelledTurnEndsItInterruptedWithoutRunning) {
  const PlannedCall call = commit_calls({asked("c1", "echo")}).front();
  on_strand([&] { actor->cancel_turn("interrupted by the user"); });

  EXPECT_EQ(run_call(call).next, Next::kEnded);

  EXPECT_EQ(executions("echo"), 0);
  EXPECT_EQ(stored_run().state, RunState::kInterrupted);
  EXPECT_NE(node(call.result_node_id).body.dump().find("it was not run"), std::string::npos);
}

}  // namespace
}  // namespace keel
