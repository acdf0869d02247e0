// Recovery alone (engine/recovery.h), on a store an earlier process left behind: no engine, no turn runner.
// The runs are written straight into the store as a process that died would have left them; the engine's
// side is recorded (a run handed on to continue, a queue started, the events published), so each test sees
// exactly what recovery decided. The posted recoveries run when the test runs the io_context.
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <map>
#include <optional>
#include <vector>

#include "engine/engine_errors.h"
#include "engine/recovery.h"
#include "keel/gatekeeper.h"
#include "store/node_body.h"
#include "testing/sequential_ids.h"
#include "testing/simulated_time.h"
#include "testing/store_test.h"

namespace keel {
namespace {

using nlohmann::json;
using testing::must;

// A tool recovery only classifies: it is never run here.
class IdleTool final : public AgentTool {
 public:
  IdleTool(std::string name, ToolEffects effects, std::optional<ToolRecovery> recovery) {
    spec_.name = std::move(name);
    spec_.label = spec_.name;
    spec_.description = "a test tool";
    spec_.parameters = {{"type", "object"}, {"properties", json::object()}};
    spec_.effects = effects;
    spec_.recovery = recovery;
  }
  const ToolSpec& spec() const override { return spec_; }
  void execute(ToolCallContext, json, std::function<void(Result<ToolResult>)> done) override {
    done(fail("test.unexpected", "recovery ran a tool itself"));
  }

 private:
  ToolSpec spec_;
};

struct Published {
  std::string type;
  std::string thread_id;
  json payload;
};

class RecordingReplies final : public EngineReplies {
 public:
  void ack(const Op& op, const std::string&, json result, bool replayed) override {
    acks.push_back({op.method, std::move(result), replayed});
  }
  void reject(const Op& op, const std::string&, const Error& error) override {
    rejections.push_back({op.method, error.code()});
  }
  void publish_event(const std::string& thread_id, events::Event event) override {
    events.push_back({std::move(event.type), thread_id, std::move(event.payload)});
  }
  std::vector<const Published*> of_type(const std::string& type) const {
    std::vector<const Published*> out;
    for (const Published& event : events) {
      if (event.type == type) out.push_back(&event);
    }
    return out;
  }
  struct Ack {
    std::string method;
    json result;
    bool replayed = false;
  };
  std::vector<Ack> acks;
  std::vector<std::pair<std::string, std::string>> rejections;
  std::vector<Published> events;
};

struct Continued {
  std::shared_ptr<ThreadActor> actor;
  RunRecord run;
  CancellationToken cancel;
  std::shared_ptr<const ToolRegistryGeneration> generation;
};

class RecordingLauncher final : public TurnLauncher {
 public:
  void continue_turn(std::shared_ptr<ThreadActor> actor, RunRecord run, CancellationToken cancel,
                     std::shared_ptr<const ToolRegistryGeneration> generation) override {
    continued.push_back({std::move(actor), std::move(run), std::move(cancel), std::move(generation)});
  }
  bool stopping() const override { return stop; }
  bool stop = false;
  std::vector<Continued> continued;
};

class RecordingActors final : public ThreadActors {
 public:
  explicit RecordingActors(boost::asio::io_context& io) : io_(io) {}
  std::shared_ptr<ThreadActor> actor_for(const std::string& thread_id) override {
    auto& actor = actors[thread_id];
    if (!actor) {
      actor = std::make_shared<ThreadActor>(thread_id, boost::asio::make_strand(io_), lifetime_);
    }
    return actor;
  }
  void advance_queue(const std::shared_ptr<ThreadActor>& actor) override {
    queues_started.push_back(actor->thread_id);
  }
  std::map<std::string, std::shared_ptr<ThreadActor>> actors;
  std::vector<std::string> queues_started;

 private:
  boost::asio::io_context& io_;
  std::shared_ptr<IoLifetime> lifetime_ = std::make_shared<IoLifetime>();
};

// Run.pendingTool as the turn writes it when it dispatches a call, and as recovery counts a re-run.
PendingTool dispatch_record(const std::string& name, std::optional<int> recovery_attempts = std::nullopt) {
  PendingTool record = keel::dispatch_record("c1", name, "call-node");
  record.recovery_attempts = recovery_attempts;
  return record;
}

class RecoveryUnitTest : public testing::StoreTest {
 protected:
  void SetUp() override {
    reopen();
    for (const auto& [name, effects, recovery] :
         std::vector<std::tuple<std::string, ToolEffects, std::optional<ToolRecovery>>>{
             {"send_mail", ToolEffects::kWrite, std::nullopt},  // never-retry by default
             {"deploy", ToolEffects::kWrite, ToolRecovery::kInspectFirst},
             {"fetch", ToolEffects::kRead, std::nullopt}}) {  // retry-safe by default
      ASSERT_TRUE(tools_.register_tool(std::make_shared<IdleTool>(name, effects, recovery)));
    }
    writer_.emplace(*store_, [] {});
    waits_.emplace(WaitsContext{*writer_, clock_, ids_, gatekeeper_, tools_, time_, threads_, runs_,
                                interactions_, replies_, launcher_});
    recovery_.emplace(RecoveryContext{*writer_, clock_, ids_, tools_, threads_, runs_, queue_, interactions_,
                                      *waits_, replies_, launcher_, actors_});
  }

  // Recovery at start, and every recovery it posted to a thread's strand.
  void recover() {
    recovery_->recover_runs();
    io_.restart();
    io_.run();
  }

  template <typename F>
  auto write(F&& body) {
    return must(writer_->write(std::forward<F>(body)));
  }

  void create_thread(const std::string& thread_id) {
    write([&](Transaction& tx) { return threads_.create(tx, thread_id, "a thread"); });
  }

  // A run of `thread_id` that got as far as the model's reply; later runs of the thread are created later.
  RunRecord start_run(const std::string& thread_id, const std::string& run_id) {
    clock_.advance(std::chrono::milliseconds(10));
    return write([&](Transaction& tx) -> Result<RunRecord> {
      RunRecord run;
      run.id = run_id;
      run.thread_id = thread_id;
      run.turn_id = "turn-" + run_id;
      run.state = RunState::kStreamingModel;
      KEEL_TRY(runs_.create(tx, run));
      NewNode user{.id = run_id + "-user", .thread_id = thread_id, .kind = NodeKind::kUserMessage};
      user.body = KEEL_TRY(encode_user_message(UserMessageBody{.content = text_result("go").content}));
      user.run_id = run_id;
      KEEL_TRY(threads_.append(tx, std::move(user)));
      return runs_.get(tx, run_id);
    });
  }

  // The run's reply called `tool` (call c1, node call-node), and the process died while the call ran;
  // `pending` is the run's Run.pendingTool then.
  RunRecord died_in_call(const std::string& thread_id, const std::string& run_id, const std::string& tool,
                         std::optional<PendingTool> pending) {
    start_run(thread_id, run_id);
    return write([&](Transaction& tx) -> Result<RunRecord> {
      NewNode reply{.id = "reply-node", .thread_id = thread_id, .kind = NodeKind::kAssistantMessage};
      reply.body = KEEL_TRY(encode_assistant_message(AssistantMessageBody{
          .stop_reason = AssistantStopReason::kToolUse, .provider_stop_reason = "tool_use"}));
      reply.run_id = run_id;
      KEEL_TRY(threads_.append(tx, std::move(reply)));
      NewNode call{.id = "call-node", .thread_id = thread_id, .kind = NodeKind::kToolCall};
      call.body = KEEL_TRY(encode_tool_call(
          ToolCallBody{.tool_call_id = "c1", .name = tool, .assistant_node_id = "reply-node"}));
      call.run_id = run_id;
      KEEL_TRY(threads_.append(tx, std::move(call)));
      RunUpdate update;
      update.pending_tool = std::move(pending);
      return runs_.transition(tx, run_id, std::nullopt, RunState::kExecutingTool, update);
    });
  }

  RunRecord stored(const std::string& run_id) {
    auto tx = begin(TxMode::kRead);
    return must(runs_.get(*tx, run_id));
  }
  std::vector<NodeRecord> results(const std::string& thread_id) {
    auto tx = begin(TxMode::kRead);
    std::vector<NodeRecord> out;
    for (const NodeRecord& node : must(threads_.nodes_of(*tx, thread_id))) {
      if (node.kind == NodeKind::kToolResult) out.push_back(node);
    }
    return out;
  }

  testing::SequentialIdSource ids_;
  testing::SimulatedTime time_;  // the waits' timers
  AllowAllGatekeeper gatekeeper_;
  ToolRegistry tools_;
  RunRepository runs_{clock_};
  QueueRepository queue_{clock_};
  InteractionRepository interactions_{clock_};
  // Before the launcher and the actors: the actors' strands (some held by the launcher's records) must be
  // destroyed while their io_context still exists.
  boost::asio::io_context io_;
  RecordingReplies replies_;
  RecordingLauncher launcher_;
  RecordingActors actors_{io_};
  std::optional<StoreWriter> writer_;
  std::optional<Waits> waits_;
  std::optional<Recovery> recovery_;
};

TEST_F(RecoveryUnitTest, ARunLeftUnfinishedUnderANewerTurnIsFailedAndTheNewerOneRecovers) {
  create_thread("th");
  start_run("th", "old");
  start_run("th", "new");
  recover();
  const RunRecord old_run = stored("old");
  EXPECT_EQ(old_run.state, RunState::kFailed);
  EXPECT_NE(old_run.error.value_or("").find("newer turn"), std::string::npos) << old_run.error.value_or("");
  ASSERT_EQ(launcher_.continued.size(), 1u);
  EXPECT_EQ(launcher_.continued[0].run.id, "new");
  EXPECT_EQ(actors_.actors.at("th")->turn()->run_id, "new");
}

TEST_F(RecoveryUnitTest, ARunThatDiedBeforeAnyCallContinuesAsARecoveredTurn) {
  create_thread("th");
  start_run("th", "r1");
  recover();
  ASSERT_EQ(launcher_.continued.size(), 1u);
  const Continued& continued = launcher_.continued[0];
  EXPECT_EQ(continued.run.state, RunState::kStreamingModel);
  EXPECT_FALSE(continued.cancel.is_cancelled());
  ASSERT_NE(continued.generation, nullptr);
  const auto starts = replies_.of_type("turn.start");
  ASSERT_EQ(starts.size(), 1u);
  EXPECT_EQ(starts[0]->payload.value("recovered", false), true) << starts[0]->payload.dump();
}

TEST_F(RecoveryUnitTest, ADispatchedNeverRetryCallPausesTheRunUncertainAndNothingContinues) {
  create_thread("th");
  died_in_call("th", "r1", "send_mail", dispatch_record("send_mail"));
  recover();
  const RunRecord run = stored("r1");
  EXPECT_EQ(run.state, RunState::kPausedUncertain);
  EXPECT_EQ(run.stop_reason.value_or(""), "uncertain");
  EXPECT_TRUE(launcher_.continued.empty());
  EXPECT_EQ(actors_.actors.at("th")->turn(), nullptr);
  EXPECT_TRUE(results("th").empty());
  const auto uncertain = replies_.of_type("run.uncertain");
  ASSERT_EQ(uncertain.size(), 1u);
  EXPECT_EQ(uncertain[0]->payload["toolCallId"], "c1");
  EXPECT_EQ(uncertain[0]->payload["offers"], json({"retry", "mark_done", "fail"}));
  ASSERT_EQ(replies_.of_type("run.updated").size(), 1u);
  EXPECT_EQ(replies_.of_type("run.updated")[0]->payload["state"], "paused_uncertain");
}

TEST_F(RecoveryUnitTest, ADispatchedCallOfAToolThatIsGoneIsTreatedAsNeverRetry) {
  create_thread("th");
  died_in_call("th", "r1", "uninstalled", dispatch_record("uninstalled"));
  recover();
  EXPECT_EQ(stored("r1").state, RunState::kPausedUncertain);
  EXPECT_TRUE(launcher_.continued.empty());
}

TEST_F(RecoveryUnitTest, ADispatchedInspectFirstCallGetsAnOutcomeUnknownResultAndTheRunGoesOn) {
  create_thread("th");
  died_in_call("th", "r1", "deploy", dispatch_record("deploy"));
  recover();
  const auto answered = results("th");
  ASSERT_EQ(answered.size(), 1u);
  EXPECT_EQ(answered[0].body.value("toolCallId", ""), "c1");
  EXPECT_TRUE(answered[0].body.value("isError", false));
  EXPECT_TRUE(answered[0].body.value("uncertain", false));
  ASSERT_EQ(launcher_.continued.size(), 1u);
  EXPECT_EQ(launcher_.continued[0].run.state, RunState::kExecutingTool);
  EXPECT_FALSE(stored("r1").pending_tool.has_value());
}

TEST_F(RecoveryUnitTest, ARetrySafeCallIsCountedBeforeItRunsAgain) {
  create_thread("th");
  // A retry-safe call writes no dispatch record before it runs.
  died_in_call("th", "r1", "fetch", std::nullopt);
  recover();
  EXPECT_TRUE(results("th").empty()) << "the continuation runs the call again";
  const RunRecord run = stored("r1");
  ASSERT_TRUE(run.pending_tool.has_value());
  EXPECT_EQ(run.pending_tool->tool_call_id, "c1");
  EXPECT_EQ(run.pending_tool->recovery_attempts, 1);
  ASSERT_EQ(launcher_.continued.size(), 1u);
  EXPECT_EQ(launcher_.continued[0].run.revision, run.revision) << "continued with the counted run";
}

TEST_F(RecoveryUnitTest, ACallThatAlreadyDiedWithTheProcessAsOftenAsAllowedIsNotRunAgain) {
  create_thread("th");
  died_in_call("th", "r1", "fetch", dispatch_record("fetch", Recovery::kMaxAttempts));
  recover();
  const auto answered = results("th");
  ASSERT_EQ(answered.size(), 1u);
  EXPECT_TRUE(answered[0].body.value("notRetried", false));
  EXPECT_EQ(answered[0].body["details"].value("code", ""), codes::kToolNotRetried);
  EXPECT_FALSE(stored("r1").pending_tool.has_value());
  ASSERT_EQ(launcher_.continued.size(), 1u) << "the run goes on to the model";
  EXPECT_EQ(launcher_.continued[0].run.state, RunState::kExecutingTool);
}

TEST_F(RecoveryUnitTest, ARunWaitingForAnOpenApprovalHoldsItsThreadAndNoRunnerStarts) {
  create_thread("th");
  start_run("th", "r1");
  write([&](Transaction& tx) -> Result<RunRecord> {
    ApprovalRecord approval;
    approval.id = "a1";
    approval.run_id = "r1";
    approval.tool_call_id = "c1";
    approval.request = {{"offers", {"accept", "decline"}}};
    KEEL_TRY(interactions_.create_approval(tx, approval));
    RunUpdate update;
    PendingTool waiting = keel::dispatch_record("c1", "send_mail", "call-node");
    waiting.wait = PendingTool::Wait{.kind = WaitKind::kApproval, .id = "a1"};
    update.pending_tool = std::move(waiting);
    return runs_.transition(tx, "r1", std::nullopt, RunState::kWaitingApproval, update);
  });
  recover();
  const auto& actor = actors_.actors.at("th");
  ASSERT_NE(actor->held(), nullptr);
  EXPECT_EQ(actor->held()->id, "a1");
  EXPECT_TRUE(launcher_.continued.empty());
  EXPECT_EQ(stored("r1").state, RunState::kWaitingApproval);
}

TEST_F(RecoveryUnitTest, AQueueStartsOnlyBehindATurnThatCompleted) {
  for (const std::string thread_id : {"done", "failed"}) {
    create_thread(thread_id);
    start_run(thread_id, thread_id + "-run");
    write([&](Transaction& tx) -> Result<QueuedInput> {
      const RunState end = thread_id == "done" ? RunState::kCompleted : RunState::kFailed;
      KEEL_TRY(runs_.transition(tx, thread_id + "-run", std::nullopt, end));
      QueuedInput item;
      item.id = thread_id + "-item";
      item.thread_id = thread_id;
      item.input = "next";
      return queue_.enqueue(tx, item);
    });
  }
  recover();
  EXPECT_EQ(actors_.queues_started, std::vector<std::string>{"done"});
  EXPECT_TRUE(launcher_.continued.empty());
}

TEST_F(RecoveryUnitTest, ARunRecoveredWhileTheEngineStopsStartsCancelled) {
  create_thread("th");
  start_run("th", "r1");
  launcher_.stop = true;
  recover();
  ASSERT_EQ(launcher_.continued.size(), 1u);
  EXPECT_TRUE(launcher_.continued[0].cancel.is_cancelled());
}

TEST_F(RecoveryUnitTest, MarkDoneAnswersTheUncertainCallAndTheRunGoesOnToTheModel) {
  create_thread("th");
  died_in_call("th", "r1", "send_mail", dispatch_record("send_mail"));
  recover();
  ASSERT_EQ(stored("r1").state, RunState::kPausedUncertain);
  const Op op{"run.resolveUncertain", "client", "s1", {{"threadId", "th"}, {"resolution", "mark_done"}}};
  recovery_->resolve_uncertain(actors_.actors.at("th"), op,
                               protocol::decode<protocol::OpKind::kRunResolveUncertain>(op.params));
  ASSERT_EQ(replies_.acks.size(), 1u) << (replies_.rejections.empty() ? "" : replies_.rejections[0].second);
  const auto answered = results("th");
  ASSERT_EQ(answered.size(), 1u);
  EXPECT_EQ(answered[0].body.value("resolution", ""), "mark_done");
  EXPECT_FALSE(answered[0].body.value("isError", true));
  ASSERT_EQ(launcher_.continued.size(), 1u);
  EXPECT_EQ(launcher_.continued[0].run.state, RunState::kStreamingModel);
  // The same submission again replays its answer and continues nothing more.
  launcher_.continued[0].actor->finish();
  recovery_->resolve_uncertain(actors_.actors.at("th"), op,
                               protocol::decode<protocol::OpKind::kRunResolveUncertain>(op.params));
  ASSERT_EQ(replies_.acks.size(), 2u);
  EXPECT_TRUE(replies_.acks[1].replayed);
  EXPECT_EQ(launcher_.continued.size(), 1u);
  EXPECT_EQ(results("th").size(), 1u);
}

TEST_F(RecoveryUnitTest, OnlyAPausedUncertainRunCanBeResolved) {
  create_thread("th");
  start_run("th", "r1");
  const Op op{"run.resolveUncertain", "client", "s1", {{"threadId", "th"}, {"resolution", "fail"}}};
  recovery_->resolve_uncertain(actors_.actor_for("th"), op,
                               protocol::decode<protocol::OpKind::kRunResolveUncertain>(op.params));
  ASSERT_EQ(replies_.rejections.size(), 1u);
  EXPECT_EQ(replies_.rejections[0].second, codes::kRunNotUncertain);
  EXPECT_TRUE(launcher_.continued.empty());
  EXPECT_EQ(stored("r1").state, RunState::kStreamingModel);
}

TEST_F(RecoveryUnitTest, UnfinishedRunsListWhatWaitsForThePerson) {
  create_thread("th");
  died_in_call("th", "r1", "send_mail", dispatch_record("send_mail"));
  recover();
  const json unfinished = recovery_->unfinished_runs();
  ASSERT_EQ(unfinished.size(), 1u) << unfinished.dump();
  EXPECT_EQ(unfinished[0]["runId"], "r1");
  EXPECT_EQ(unfinished[0]["state"], "paused_uncertain");
  EXPECT_FALSE(unfinished[0]["canContinue"].get<bool>());
}

}  // namespace
}  // namespace keel
