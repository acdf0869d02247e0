// Recovery of unfinished runs at start (spec §5): a "crash" is simulated by making every store write fail
// (a fail point) before the engine is dropped, so nothing after that moment persists, as when the process
// is killed; a new engine then starts on the same store.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <tuple>

#include "engine/engine_errors.h"
#include "engine/engine_harness.h"
#include "policy/policy_gatekeeper.h"
#include "store/queue_repository.h"
#include "store/run_repository.h"

namespace keel {
namespace {

using nlohmann::json;
using testing::EngineHarness;
using testing::ScriptedResponse;

// A tool that blocks (until the turn is cancelled) on its first execution and succeeds afterwards; counts
// executions.
class FlakyOnceTool final : public AgentTool {
 public:
  FlakyOnceTool(std::string name, ToolEffects effects, std::optional<ToolRecovery> recovery,
                int blocking_runs = 1)
      : blocking_runs_(blocking_runs) {
    spec_ = testing::simple_spec(std::move(name), effects);
    spec_.recovery = recovery;
  }
  const ToolSpec& spec() const override { return spec_; }
  void execute(ToolCallContext context, json, std::function<void(Result<ToolResult>)> done) override {
    if (++runs <= blocking_runs_) {
      context.progress(ToolProgress{"working", nullptr});
      auto shared = std::make_shared<std::function<void(Result<ToolResult>)>>(std::move(done));
      registration_ = context.cancel.on_cancel([shared] { (*shared)(fail(codes::kCancelled, "cancelled")); });
      return;
    }
    done(text_result("done on run " + std::to_string(runs.load())));
  }
  std::atomic<int> runs{0};

 private:
  const int blocking_runs_;
  ToolSpec spec_;
  CancellationRegistration registration_;
};

class RecoveryTest : public ::testing::Test {
 protected:
  static testing::HarnessOptions options(FailPoints* points) {
    testing::HarnessOptions o;
    o.fail_points = points;
    return o;
  }
  RecoveryTest() : h(options(&fail_points)) {}
  void SetUp() override {
    for (auto& [name, effects, recovery] :
         std::vector<std::tuple<std::string, ToolEffects, std::optional<ToolRecovery>>>{
             {"send_mail", ToolEffects::kWrite, std::nullopt},  // never-retry by default
             {"deploy", ToolEffects::kWrite, ToolRecovery::kInspectFirst},
             {"fetch", ToolEffects::kRead, std::nullopt},  // retry-safe by default
             {"search", ToolEffects::kRead, std::nullopt}}) {
      // search stands for a call that kills the process every time it runs (issue 14: a regex).
      auto tool = std::make_shared<FlakyOnceTool>(name, effects, recovery, name == "search" ? 1000 : 1);
      tools[name] = tool;
      ASSERT_TRUE(h.tools.register_tool(tool));
    }
    h.start();
    thread = h.create_thread();
  }
  // Starts a turn whose model calls `tool`, waits until the tool runs, then "crashes".
  std::string crash_while_running(const std::string& tool) {
    h.provider.push(ScriptedResponse::tool_calls({{"c1", tool, "{}"}}));
    AgentEvent ack = h.request("turn.submit", {{"threadId", thread}, {"input", "go"}});
    EXPECT_EQ(ack.type, "command.ack");
    h.wait_tool_progress(thread);
    crash();
    return ack.payload["result"]["runId"];
  }
  void crash() {
    fail_points.arm("store.begin", FailPoints::Action::kError, 1, /*repeat=*/true);
    h.stop();
    fail_points.disarm_all();
  }
  std::vector<NodeRecord> results() {
    std::vector<NodeRecord> out;
    for (const NodeRecord& node : h.path(thread)) {
      if (node.kind == NodeKind::kToolResult) out.push_back(node);
    }
    return out;
  }

  FailPoints fail_points;
  std::unique_ptr<PolicyGatekeeper> policy;  // declared before the harness: it outlives the engine
  EngineHarness h;
  std::map<std::string, std::shared_ptr<FlakyOnceTool>> tools;
  std::string thread;
};

TEST_F(RecoveryTest, ACrashInANeverRetryWritePausesTheRunUntilThePersonDecides) {
  const std::string run_id = crash_while_running("send_mail");
  EXPECT_EQ(h.run(run_id).state, RunState::kExecutingTool);
  h.start();
  h.wait_run_state(run_id, RunState::kPausedUncertain);
  EXPECT_EQ(tools["send_mail"]->runs, 1);
  // A new turn may not build on a call without a result; enqueueing is fine.
  EXPECT_EQ(h.request("turn.submit", {{"threadId", thread}, {"input", "x"}}).payload["error"]["code"],
            codes::kRunUncertain);
  AgentEvent init = h.request("initialize", {{"subscribe", true}});
  ASSERT_EQ(init.payload["result"]["unfinished"].size(), 1u);
  EXPECT_EQ(init.payload["result"]["unfinished"][0]["state"], "paused_uncertain");
  h.provider.push(ScriptedResponse::text("ok, it was sent"));
  AgentEvent resolved =
      h.request("run.resolveUncertain", {{"threadId", thread}, {"resolution", "mark_done"}});
  ASSERT_EQ(resolved.type, "command.ack") << resolved.payload.dump();
  h.wait_run_state(run_id, RunState::kCompleted);
  EXPECT_EQ(tools["send_mail"]->runs, 1);  // never executed twice
  ASSERT_EQ(results().size(), 1u);
  EXPECT_EQ(results()[0].body.value("resolution", ""), "mark_done");
}

TEST_F(RecoveryTest, RetryRunsTheUncertainWriteAgainOnlyWhenThePersonSaysSo) {
  const std::string run_id = crash_while_running("send_mail");
  h.start();
  h.wait_run_state(run_id, RunState::kPausedUncertain);
  h.provider.push(ScriptedResponse::text("sent"));
  ASSERT_EQ(h.request("run.resolveUncertain", {{"threadId", thread}, {"resolution", "retry"}}).type,
            "command.ack");
  h.wait_run_state(run_id, RunState::kCompleted);
  EXPECT_EQ(tools["send_mail"]->runs, 2);
  ASSERT_EQ(results().size(), 1u);
  EXPECT_FALSE(results()[0].body.value("isError", true));
}

// Issue 14 point 19: the person's choice to retry is the call's approval. With a policy that asks for
// writes, the retried call runs without a new approval.request — re-verified against the rules in force
// (the next test), as an approved call is.
TEST_F(RecoveryTest, RetryIsTheApprovalSoTheCallRunsWithoutAskingAgain) {
  const std::string run_id = crash_while_running("send_mail");
  auto opened = PolicyGatekeeper::open(h.store(), h.clock, h.ids, PolicyMode::kAskWrites);
  ASSERT_TRUE(opened) << opened.error().to_string();
  policy = std::move(opened).value();
  h.set_gatekeeper(policy.get());
  h.start();
  h.wait_run_state(run_id, RunState::kPausedUncertain);
  h.provider.push(ScriptedResponse::text("sent"));
  ASSERT_EQ(h.request("run.resolveUncertain", {{"threadId", thread}, {"resolution", "retry"}}).type,
            "command.ack");
  ASSERT_TRUE(h.log.wait_until([&](const std::vector<AgentEvent>& events) {
    for (const AgentEvent& e : events) {
      if (e.thread_id == thread && (e.type == "turn.complete" || e.type == "approval.request")) return true;
    }
    return false;
  }));
  ASSERT_TRUE(h.log.of_type("approval.request").empty()) << "the retry asked for approval again";
  h.wait_run_state(run_id, RunState::kCompleted);
  EXPECT_EQ(tools["send_mail"]->runs, 2);
  ASSERT_EQ(results().size(), 1u);
  EXPECT_FALSE(results()[0].body.value("isError", true));
}

TEST_F(RecoveryTest, ARetriedCallIsStillRefusedWhenTheRulesNowRefuseIt) {
  const std::string run_id = crash_while_running("send_mail");
  auto opened = PolicyGatekeeper::open(h.store(), h.clock, h.ids, PolicyMode::kReadOnly);
  ASSERT_TRUE(opened) << opened.error().to_string();
  policy = std::move(opened).value();
  h.set_gatekeeper(policy.get());
  h.start();
  h.wait_run_state(run_id, RunState::kPausedUncertain);
  h.provider.push(ScriptedResponse::text("it was refused"));
  ASSERT_EQ(h.request("run.resolveUncertain", {{"threadId", thread}, {"resolution", "retry"}}).type,
            "command.ack");
  h.wait_run_state(run_id, RunState::kCompleted);
  EXPECT_EQ(tools["send_mail"]->runs, 1) << "a refused call is not run again";
  ASSERT_EQ(results().size(), 1u);
  EXPECT_TRUE(results()[0].body.value("refused", false)) << results()[0].body.dump();
}

TEST_F(RecoveryTest, FailGivesTheModelAnErrorResultAndTheRunGoesOn) {
  const std::string run_id = crash_while_running("send_mail");
  h.start();
  h.wait_run_state(run_id, RunState::kPausedUncertain);
  h.provider.push(ScriptedResponse::text("it failed then"));
  ASSERT_EQ(h.request("run.resolveUncertain", {{"threadId", thread}, {"resolution", "fail"}}).type,
            "command.ack");
  h.wait_run_state(run_id, RunState::kCompleted);
  EXPECT_EQ(tools["send_mail"]->runs, 1);
  EXPECT_TRUE(results()[0].body.value("isError", false));
}

TEST_F(RecoveryTest, ResolveUncertainRefusesRunsThatAreNotUncertainAndBadResolutions) {
  h.provider.push(ScriptedResponse::text("hi"));
  h.run_turn(thread, "hello");
  EXPECT_EQ(h.request("run.resolveUncertain", {{"threadId", thread}, {"resolution", "retry"}})
                .payload["error"]["code"],
            codes::kRunNotUncertain);
  EXPECT_EQ(h.request("run.resolveUncertain", {{"threadId", thread}, {"resolution", "maybe"}})
                .payload["error"]["code"],
            codes::kInvalidArgument);
  EXPECT_EQ(
      h.request("run.resolveUncertain", {{"threadId", thread}, {"resolution", "retry"}, {"runId", "nope"}})
          .payload["error"]["code"],
      codes::kRunNotFound);
}

TEST_F(RecoveryTest, AnInspectFirstCallGetsAnOutcomeUnknownResultAndTheRunContinues) {
  const std::string run_id = crash_while_running("deploy");
  h.provider.push(ScriptedResponse::text("I will check the deployment first"));
  h.start();
  h.wait_run_state(run_id, RunState::kCompleted);
  EXPECT_EQ(tools["deploy"]->runs, 1);
  ASSERT_EQ(results().size(), 1u);
  EXPECT_TRUE(results()[0].body.value("uncertain", false));
  EXPECT_NE(results()[0].body.dump().find("Inspect"), std::string::npos);
}

TEST_F(RecoveryTest, ARetrySafeCallRunsAgainAndTheRunContinues) {
  const std::string run_id = crash_while_running("fetch");
  h.provider.push(ScriptedResponse::text("fetched"));
  h.start();
  h.wait_run_state(run_id, RunState::kCompleted);
  EXPECT_EQ(tools["fetch"]->runs, 2);
  ASSERT_EQ(results().size(), 1u);
  EXPECT_FALSE(results()[0].body.value("isError", true));
}

// Issue 14: a retry-safe call that kills the process would kill every start after it, since recovery runs
// it again each time. Recovery counts its attempts in the run's dispatch record before running it, and a
// call it already ran once (and the process died again) gets an error result instead.
TEST_F(RecoveryTest, ARetrySafeCallThatKeepsKillingTheProcessIsNotRunAThirdTime) {
  const std::string run_id = crash_while_running("search");
  h.start();  // recovery counts its first attempt, then runs the call again: it "kills" the process again
  h.wait_tool_progress(thread, 2);
  EXPECT_EQ(tools["search"]->runs, 2);
  const std::optional<PendingTool> recorded = h.run(run_id).pending_tool;
  ASSERT_TRUE(recorded && recorded->is_dispatch());
  EXPECT_EQ(recorded->tool_call_id, "c1");
  EXPECT_EQ(recorded->recovery_attempts, 1);
  crash();

  h.provider.push(ScriptedResponse::text("the search crashed keel; I will narrow it"));
  h.start();
  h.wait_run_state(run_id, RunState::kCompleted);
  EXPECT_EQ(tools["search"]->runs, 2);  // not run a third time
  ASSERT_EQ(results().size(), 1u);
  EXPECT_TRUE(results()[0].body.value("isError", false));
  EXPECT_EQ(results()[0].body["details"]["code"], codes::kToolNotRetried) << results()[0].body;
  EXPECT_FALSE(h.run(run_id).pending_tool.has_value());
  // The model was told.
  const auto requests = h.provider.requests();
  ASSERT_GE(requests.size(), 2u);
  EXPECT_NE(requests.back().messages.back().content.front().text.find("not run again"), std::string::npos);
}

// The same bound from store state alone: a run whose dispatch record says recovery already ran the call.
TEST_F(RecoveryTest, ACallRecoveryAlreadyRanIsAnsweredWithoutRunningIt) {
  const std::string run_id = crash_while_running("fetch");
  {
    RunRepository runs(h.clock);
    auto tx = h.store().begin(TxMode::kWrite);
    ASSERT_TRUE(tx);
    RunRecord run = *runs.get(**tx, run_id);
    RunUpdate update;
    update.pending_tool = dispatch_record("c1", "fetch", "x");
    update.pending_tool->recovery_attempts = 1;
    ASSERT_TRUE(runs.transition(**tx, run_id, run.revision, RunState::kExecutingTool, update));
    ASSERT_TRUE((*tx)->commit());
  }
  h.provider.push(ScriptedResponse::text("ok"));
  h.start();
  h.wait_run_state(run_id, RunState::kCompleted);
  EXPECT_EQ(tools["fetch"]->runs, 1);
  ASSERT_EQ(results().size(), 1u);
  EXPECT_EQ(results()[0].body["details"]["code"], codes::kToolNotRetried) << results()[0].body;
}

TEST_F(RecoveryTest, ARunThatDiedWhileTheModelStreamedContinuesByItself) {
  h.provider.push(ScriptedResponse::stall());
  AgentEvent ack = h.request("turn.submit", {{"threadId", thread}, {"input", "go"}});
  ASSERT_EQ(ack.type, "command.ack");
  const std::string run_id = ack.payload["result"]["runId"];
  ASSERT_TRUE(h.log.wait_until([&](const auto&) { return h.provider.requests().size() == 1; }));
  crash();
  EXPECT_EQ(h.run(run_id).state, RunState::kStreamingModel);
  h.provider.push(ScriptedResponse::text("here is the answer"));
  h.start();
  h.wait_run_state(run_id, RunState::kCompleted);
  EXPECT_EQ(h.kinds(thread), (std::vector<std::string>{"turn_context", "user_message", "assistant_message"}));
}

TEST_F(RecoveryTest, AnInterruptedRunWaitsAndIsListedAsUnfinished) {
  h.provider.push(ScriptedResponse::stall());
  AgentEvent ack = h.request("turn.submit", {{"threadId", thread}, {"input", "go"}});
  ASSERT_TRUE(h.log.wait_until([&](const auto&) { return h.provider.requests().size() == 1; }));
  ASSERT_EQ(h.request("turn.interrupt", {{"threadId", thread}}).type, "command.ack");
  h.wait_complete(thread, 1);
  h.stop();
  h.start();
  AgentEvent init = h.request("initialize", {{"subscribe", true}});
  const json unfinished = init.payload["result"]["unfinished"];
  ASSERT_EQ(unfinished.size(), 1u);
  EXPECT_EQ(unfinished[0]["state"], "interrupted");
  EXPECT_TRUE(unfinished[0]["canContinue"].get<bool>());
  EXPECT_EQ(h.run(ack.payload["result"]["runId"]).state, RunState::kInterrupted);
}

TEST_F(RecoveryTest, ARecoveredRunUsesTheEnvironmentItStartedWithNotTheCurrentConfiguration) {
  h.provider.push(ScriptedResponse::stall());
  AgentEvent ack = h.request("turn.submit", {{"threadId", thread}, {"input", "go"}});
  const std::string run_id = ack.payload["result"]["runId"];
  ASSERT_TRUE(h.log.wait_until([&](const auto&) { return h.provider.requests().size() == 1; }));
  const std::string prompt_then = h.provider.requests()[0].system_prompt;
  crash();
  h.engine_options().model.system_prompt = "A prompt configured after the crash.";
  h.provider.push(ScriptedResponse::text("continued"));
  h.start();
  h.wait_run_state(run_id, RunState::kCompleted);
  ASSERT_EQ(h.provider.requests().size(), 2u);
  EXPECT_EQ(h.provider.requests()[1].system_prompt, prompt_then);
}

TEST_F(RecoveryTest, ARunWhoseProviderTransportDriftedFailsWithAReasonAndNothingIsDeleted) {
  const std::string run_id = crash_while_running("fetch");
  const std::vector<NodeRecord> before = h.path(thread);
  h.engine_options().transport.base_url = "https://another-endpoint.example/v1";
  h.start();
  // The turn's end event, not the run's state: the state commits before the thread is free for a new turn.
  const AgentEvent complete = h.wait_complete(thread, 1);
  EXPECT_EQ(complete.payload["runId"], run_id);
  EXPECT_EQ(complete.payload["error"]["code"], codes::kEnvironmentDrift) << complete.payload.dump();
  const RunRecord run = h.run(run_id);
  ASSERT_EQ(run.state, RunState::kFailed);
  ASSERT_TRUE(run.error.has_value());
  EXPECT_NE(run.error->find("environment.drift"), std::string::npos) << *run.error;
  EXPECT_NE(run.error->find("baseUrl"), std::string::npos) << *run.error;
  const std::vector<NodeRecord> after = h.path(thread);
  ASSERT_GE(after.size(), before.size());
  for (size_t i = 0; i < before.size(); ++i) EXPECT_EQ(after[i].id, before[i].id);
  EXPECT_EQ(tools["fetch"]->runs, 1);  // not run again under a changed environment
  // The open call got a result, so the thread can take a new turn.
  h.provider.push(ScriptedResponse::text("fresh start"));
  EXPECT_EQ(h.run_turn(thread, "again").payload["stopReason"], "end");
}

TEST_F(RecoveryTest, ARunWhoseToolChangedFailsInsteadOfRunningTheNewTool) {
  const std::string run_id = crash_while_running("fetch");
  ASSERT_TRUE(h.tools.unregister_tool("fetch"));
  auto changed = std::make_shared<FlakyOnceTool>("fetch", ToolEffects::kWrite, std::nullopt);
  ASSERT_TRUE(h.tools.register_tool(changed));
  h.start();
  h.wait_run_state(run_id, RunState::kFailed);
  EXPECT_NE(h.run(run_id).error->find("fetch changed"), std::string::npos);
  EXPECT_EQ(changed->runs, 0);
}

TEST_F(RecoveryTest, ADamagedRunRowFailsWithTheReasonAndTheOtherRunsStillRecover) {
  const std::string other_thread = h.create_thread();
  const std::string run_id = crash_while_running("fetch");
  {
    // A second unfinished run, on another thread, whose state no keel state names.
    RunRepository runs(h.clock);
    auto tx = h.store().begin(TxMode::kWrite);
    ASSERT_TRUE(tx);
    RunRecord damaged;
    damaged.id = "damaged-run";
    damaged.thread_id = other_thread;
    damaged.turn_id = "damaged-turn";
    damaged.state = RunState::kStreamingModel;
    damaged.usage = json::object();
    ASSERT_TRUE(runs.create(**tx, damaged));
    ASSERT_TRUE((*tx)->execute("UPDATE runs SET state = 'sleeping' WHERE id = 'damaged-run'", {}));
    ASSERT_TRUE((*tx)->commit());
  }
  h.provider.push(ScriptedResponse::text("fetched"));
  h.start();
  h.wait_run_state(run_id, RunState::kCompleted);
  // Marked while the engine started, before any run continued.
  const RunRecord failed = h.run("damaged-run");
  EXPECT_EQ(failed.state, RunState::kFailed);
  ASSERT_TRUE(failed.error.has_value());
  EXPECT_NE(failed.error->find("sleeping"), std::string::npos) << *failed.error;
}

TEST_F(RecoveryTest, ASubmissionSentAgainWhileItsTurnRunsReplaysItsAck) {
  // A client that lost the ACK in a crash sends the same submission again; its turn is running by then.
  h.provider.push(ScriptedResponse::held(ScriptedResponse::text("done")));
  const AgentEvent first =
      h.request_as("submit-once", "turn.submit", {{"threadId", thread}, {"input", "go"}});
  ASSERT_EQ(first.type, "command.ack");
  const AgentEvent again =
      h.request_as("submit-once", "turn.submit", {{"threadId", thread}, {"input", "go"}});
  ASSERT_EQ(again.type, "command.ack") << again.payload.dump();
  EXPECT_TRUE(again.payload["replayed"].get<bool>());
  EXPECT_EQ(again.payload["result"], first.payload["result"]);
  // A new submission is still refused while the turn runs.
  const AgentEvent other = h.request("turn.submit", {{"threadId", thread}, {"input", "another"}});
  EXPECT_EQ(other.payload["error"]["code"], codes::kTurnBusy);
  ASSERT_TRUE(h.provider.release());
  h.wait_run_state(first.payload["result"]["runId"], RunState::kCompleted);
}

TEST_F(RecoveryTest, AQueueLeftBehindByACompletedTurnStartsAtStart) {
  // The process died after the turn's end committed and before the queue's next input started.
  h.provider.push(ScriptedResponse::text("first done"));
  h.run_turn(thread, "first");
  h.stop();
  {
    QueueRepository queue(h.clock);
    auto tx = h.store().begin(TxMode::kWrite);
    ASSERT_TRUE(tx);
    QueuedInput item;
    item.id = "queued-1";
    item.thread_id = thread;
    item.input = json("second");
    ASSERT_TRUE(queue.enqueue(**tx, item));
    ASSERT_TRUE((*tx)->commit());
  }
  h.provider.push(ScriptedResponse::text("second done"));
  h.start();
  // turn_context, user_message, assistant_message for each turn.
  EXPECT_TRUE(h.wait_for([&] { return h.kinds(thread).size() >= 6; }));
  const std::vector<NodeRecord> path = h.path(thread);
  ASSERT_EQ(path.size(), 6u) << ::testing::PrintToString(h.kinds(thread));
  EXPECT_EQ(path[4].body["content"][0]["text"], "second");
  EXPECT_EQ(path[5].body["content"][0]["text"], "second done");
  std::string latest_run;
  {
    RunRepository runs(h.clock);
    auto tx = h.store().begin(TxMode::kRead);
    ASSERT_TRUE(tx);
    auto latest = runs.latest_for_thread(**tx, thread);
    ASSERT_TRUE(latest && *latest);
    latest_run = (*latest)->id;
  }
  h.wait_run_state(latest_run, RunState::kCompleted);
}

}  // namespace
}  // namespace keel
