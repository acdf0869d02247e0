// What a turn does when something cannot be stored or throws (issue 14, point 8), and when the store
// refuses writes for good (point 14): the turn always ends, the thread never takes a turn on top of an
// orphaned run, and a restart never continues an orphan into newer history.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <limits>

#include "engine/engine_errors.h"
#include "engine/engine_harness.h"
#include "engine/tool_output.h"
#include "store/run_repository.h"
#include "util/canonical_json.h"
#include "util/fail_points.h"

namespace keel {
namespace {

using nlohmann::json;
using testing::EngineHarness;
using testing::HarnessOptions;
using testing::LambdaTool;
using testing::ScriptedResponse;
using testing::simple_spec;

void add_tool(EngineHarness& h, ToolSpec spec, LambdaTool::Body body) {
  auto added = h.tools.register_tool(std::make_shared<LambdaTool>(std::move(spec), std::move(body)));
  ASSERT_TRUE(added) << added.error().to_string();
}

// A tool whose target resolution throws: an exception inside the turn's coroutine, as a bug would raise.
class ThrowingTargetTool final : public AgentTool {
 public:
  ThrowingTargetTool() : spec_(simple_spec("throw_target")) {}
  const ToolSpec& spec() const override { return spec_; }
  Result<ToolTarget> resolve_target(const json&) const override {
    throw std::runtime_error("resolve_target threw on purpose");
  }
  void execute(ToolCallContext, json, std::function<void(Result<ToolResult>)> done) override {
    done(text_result("not reached"));
  }

 private:
  ToolSpec spec_;
};

// A file tool whose target names a file that is not UTF-8 (as a workspace may hold).
class BadNameTool final : public AgentTool {
 public:
  BadNameTool() : spec_(simple_spec("touch", ToolEffects::kWrite)) {}
  const ToolSpec& spec() const override { return spec_; }
  Result<ToolTarget> resolve_target(const json&) const override {
    ToolTarget target;
    target.path = std::string("/workspace/caf\xE9.txt");
    return target;
  }
  void execute(ToolCallContext, json, std::function<void(Result<ToolResult>)> done) override {
    ++runs;
    done(text_result("touched"));
  }
  std::atomic<int> runs{0};

 private:
  ToolSpec spec_;
};

const NodeRecord* last_of(const std::vector<NodeRecord>& path, NodeKind kind) {
  for (auto it = path.rbegin(); it != path.rend(); ++it) {
    if (it->kind == kind) return &*it;
  }
  return nullptr;
}

// ---- (a) bounded and sanitised before the write ----

TEST(TurnFailureTest, AToolResultOverTheNodeLimitIsCutForTheModelAndTheTurnCompletes) {
  EngineHarness h;
  add_tool(h, simple_spec("huge"), [](ToolCallContext, json, auto done) {
    done(text_result(std::string(5 * 1024 * 1024, 'x'), {{"lines", 1}}));
  });
  h.provider.push(ScriptedResponse::tool_calls({{"c1", "huge", "{}"}}));
  h.provider.push(ScriptedResponse::text("done"));
  h.start();
  const std::string thread = h.create_thread();
  EXPECT_EQ(h.run_turn(thread, "go").payload["stopReason"], "end");
  const auto path = h.path(thread);
  const NodeRecord* result = last_of(path, NodeKind::kToolResult);
  ASSERT_NE(result, nullptr);
  const std::string text = result->body["content"][0]["text"];
  EXPECT_LE(text.size(), 30000u);
  const std::string notice = result->body["content"].back()["text"];
  EXPECT_NE(notice.find("too large to keep"), std::string::npos) << notice;
  EXPECT_GT(result->body["details"]["fullContentOmitted"]["bytes"].get<size_t>(), 5u * 1024 * 1024);
  EXPECT_EQ(result->body["details"]["toolDetails"]["lines"], 1);
}

TEST(TurnFailureTest, InvalidUtf8AndNonFiniteNumbersInAToolResultAreReplacedAndStored) {
  EngineHarness h;
  add_tool(h, simple_spec("odd"), [](ToolCallContext, json, auto done) {
    done(text_result(std::string("name: caf\xE9"), {{"ratio", std::numeric_limits<double>::quiet_NaN()},
                                                    {std::string("k\xFF"), std::string("v\xFE")}}));
  });
  h.provider.push(ScriptedResponse::tool_calls({{"c1", "odd", "{}"}}));
  h.provider.push(ScriptedResponse::text("done"));
  h.start();
  const std::string thread = h.create_thread();
  EXPECT_EQ(h.run_turn(thread, "go").payload["stopReason"], "end");
  const std::vector<NodeRecord> path = h.path(thread);
  const NodeRecord* result = last_of(path, NodeKind::kToolResult);
  ASSERT_NE(result, nullptr);
  EXPECT_EQ(result->body["content"][0]["text"], "name: caf\uFFFD");
  EXPECT_TRUE(result->body["details"]["ratio"].is_null());
  EXPECT_EQ(result->body["details"]["k\uFFFD"], "v\uFFFD");
  ASSERT_EQ(h.provider.requests().size(), 2u);  // the model got the result and answered
}

TEST(TurnFailureTest, ToolArgumentsOverTheLimitGetACodedResultAndTheCallDoesNotRun) {
  EngineHarness h;
  std::atomic<int> runs{0};
  add_tool(h, simple_spec("take"), [&runs](ToolCallContext, json, auto done) {
    ++runs;
    done(text_result("taken"));
  });
  const std::string arguments = json{{"text", std::string(5 * 1024 * 1024, 'a')}}.dump();
  h.provider.push(ScriptedResponse::tool_calls({{"c1", "take", arguments}}));
  h.provider.push(ScriptedResponse::text("I will split it"));
  h.start();
  const std::string thread = h.create_thread();
  EXPECT_EQ(h.run_turn(thread, "go").payload["stopReason"], "end");
  EXPECT_EQ(runs.load(), 0);
  const std::vector<NodeRecord> path = h.path(thread);
  const NodeRecord* result = last_of(path, NodeKind::kToolResult);
  ASSERT_NE(result, nullptr);
  EXPECT_EQ(result->body["isError"], true);
  EXPECT_EQ(result->body["details"]["code"], codes::kToolArgumentsTooLarge);
  const NodeRecord* call = last_of(path, NodeKind::kToolCall);
  ASSERT_NE(call, nullptr);
  EXPECT_LE(call->body["argumentsText"].get<std::string>().size(), 64u * 1024);
}

TEST(TurnFailureTest, AReplyOverTheLimitEndsTheTurnWithACodedErrorAndTheThreadGoesOn) {
  EngineHarness h;
  h.provider.push(ScriptedResponse::text(std::string(5 * 1024 * 1024, 'r')));
  h.provider.push(ScriptedResponse::text("short"));
  h.start();
  const std::string thread = h.create_thread();
  const AgentEvent complete = h.run_turn(thread, "go");
  EXPECT_EQ(complete.payload["stopReason"], "error");
  EXPECT_EQ(complete.payload["error"]["code"], codes::kProviderReplyTooLarge);
  EXPECT_EQ(h.run(complete.payload["runId"]).state, RunState::kFailed);
  const std::vector<NodeRecord> path = h.path(thread);
  const NodeRecord* kept = last_of(path, NodeKind::kAssistantMessage);
  ASSERT_NE(kept, nullptr);
  EXPECT_EQ(kept->body["providerStopReason"], "reply_too_large");
  EXPECT_EQ(h.run_turn(thread, "again").payload["stopReason"], "end");
}

TEST(TurnFailureTest, AFileNameThatIsNotUtf8IsRefusedBeforeApprovalInsteadOfThrowing) {
  EngineHarness h;
  auto tool = std::make_shared<BadNameTool>();
  ASSERT_TRUE(h.tools.register_tool(tool));
  h.provider.push(ScriptedResponse::tool_calls({{"c1", "touch", "{}"}}));
  h.provider.push(ScriptedResponse::text("done"));
  h.start();
  const std::string thread = h.create_thread();
  EXPECT_EQ(h.run_turn(thread, "go").payload["stopReason"], "end");
  EXPECT_EQ(tool->runs.load(), 0);
  const std::vector<NodeRecord> path = h.path(thread);
  const NodeRecord* result = last_of(path, NodeKind::kToolResult);
  ASSERT_NE(result, nullptr);
  EXPECT_EQ(result->body["details"]["code"], codes::kJsonInvalidUtf8);
}

// ---- (b) a failed write or an exception ends the turn ----

TEST(TurnFailureTest, AToolResultTheStoreRefusesEndsTheTurnWithACodedErrorAndAnsweredCall) {
  FailPoints fail_points;
  HarnessOptions options;
  options.fail_points = &fail_points;
  EngineHarness h(options);
  // The next commit after the tool ran is its result's: the store refuses it once (a transient failure).
  add_tool(h, simple_spec("arm"), [&fail_points](ToolCallContext, json, auto done) {
    fail_points.arm("store.commit", FailPoints::Action::kError);
    done(text_result("ran"));
  });
  h.provider.push(ScriptedResponse::tool_calls({{"c1", "arm", "{}"}}));
  h.start();
  const std::string thread = h.create_thread();
  const AgentEvent complete = h.run_turn(thread, "go");
  EXPECT_EQ(complete.payload["stopReason"], "error");
  EXPECT_EQ(complete.payload["error"]["code"], codes::kFailPoint);
  EXPECT_EQ(h.run(complete.payload["runId"]).state, RunState::kFailed);
  // The call has a result, so every provider accepts the history; the thread takes a new turn.
  const std::vector<NodeRecord> path = h.path(thread);
  const NodeRecord* result = last_of(path, NodeKind::kToolResult);
  ASSERT_NE(result, nullptr);
  EXPECT_NE(result->body["content"][0]["text"].get<std::string>().find("may have partly run"),
            std::string::npos);
  h.provider.push(ScriptedResponse::text("fresh"));
  EXPECT_EQ(h.run_turn(thread, "again").payload["stopReason"], "end");
}

TEST(TurnFailureTest, AnExceptionInsideTheTurnEndsItFailedInsteadOfOrphaningTheRun) {
  EngineHarness h;
  ASSERT_TRUE(h.tools.register_tool(std::make_shared<ThrowingTargetTool>()));
  h.provider.push(ScriptedResponse::tool_calls({{"c1", "throw_target", "{}"}}));
  h.start();
  const std::string thread = h.create_thread();
  const AgentEvent complete = h.run_turn(thread, "go");
  EXPECT_EQ(complete.payload["stopReason"], "error");
  EXPECT_EQ(complete.payload["error"]["code"], codes::kInternal);
  EXPECT_EQ(h.run(complete.payload["runId"]).state, RunState::kFailed);
  // It threw before the reply committed: no call of it is in the history without a result.
  const std::vector<NodeRecord> path = h.path(thread);
  EXPECT_EQ(last_of(path, NodeKind::kToolCall), nullptr);
  h.provider.push(ScriptedResponse::text("fresh"));
  EXPECT_EQ(h.run_turn(thread, "again").payload["stopReason"], "end");
}

// Point 14 at the engine: a failed sync poisons the store; the turn still ends (unpersisted), its thread
// takes nothing on top, the host hears of it once, and a restart continues the run where it was synced.
TEST(TurnFailureTest, APoisonedStoreEndsTheTurnUnpersistedStrandsTheThreadAndTellsTheHost) {
  FailPoints fail_points;
  HarnessOptions options;
  options.fail_points = &fail_points;
  std::atomic<int> store_failures{0};
  options.engine.on_store_failed = [&store_failures] { ++store_failures; };
  EngineHarness h(options);
  add_tool(h, simple_spec("arm"), [&fail_points](ToolCallContext, json, auto done) {
    fail_points.arm("store.sync.before", FailPoints::Action::kError, 1, /*repeat=*/true);  // the disk is full
    done(text_result("ran"));
  });
  h.provider.push(ScriptedResponse::tool_calls({{"c1", "arm", "{}"}}));
  h.start();
  const std::string thread = h.create_thread();
  const AgentEvent complete = h.run_turn(thread, "go");
  EXPECT_EQ(complete.payload["stopReason"], "error");
  EXPECT_EQ(complete.payload["persisted"], false);
  const std::string run_id = complete.payload["runId"];
  EXPECT_TRUE(h.store().poisoned());
  // Ops are handled on the thread's strand after the turn's end, which told the host.
  const AgentEvent refused = h.request("turn.submit", {{"threadId", thread}, {"input", "on top"}});
  EXPECT_EQ(refused.type, "command.rejected");
  EXPECT_EQ(refused.payload["error"]["code"], codes::kTurnUnpersisted) << refused.payload.dump();
  EXPECT_EQ(store_failures.load(), 1);
  EXPECT_NE(h.run(run_id).state, RunState::kCompleted);  // the end was not written
}

// ---- (c) a restart never continues an orphan into newer history ----

TEST(TurnFailureTest, ARestartFailsARunLeftUnfinishedUnderANewerTurnInsteadOfContinuingIt) {
  EngineHarness h;
  h.provider.push(ScriptedResponse::text("first"));
  h.provider.push(ScriptedResponse::text("second"));
  h.start();
  const std::string thread = h.create_thread();
  const std::string orphan = h.run_turn(thread, "one").payload["runId"];
  h.run_turn(thread, "two");
  h.stop();
  // What an earlier keel left behind: the first run's end was never written, and a newer turn was
  // accepted on top of it.
  {
    auto tx = h.store().begin(TxMode::kWrite);
    ASSERT_TRUE(tx);
    ASSERT_TRUE((*tx)->execute("UPDATE runs SET state = 'streaming_model' WHERE id = ?", {orphan}));
    ASSERT_TRUE((*tx)->commit());
  }
  const auto before = h.path(thread);
  const size_t requests = h.provider.requests().size();
  h.provider.push(ScriptedResponse::text("replayed into the newer history"));
  h.start();
  h.wait_run_state(orphan, RunState::kFailed);
  const RunRecord run = h.run(orphan);
  ASSERT_TRUE(run.error.has_value());
  EXPECT_NE(run.error->find("newer turn"), std::string::npos) << *run.error;
  EXPECT_EQ(h.provider.requests().size(), requests);
  EXPECT_EQ(h.path(thread).size(), before.size());
}

TEST(ToolOutputTest, StorableJsonReplacesWhatCanonicalJsonRefuses) {
  json deep = json::array();
  for (int i = 0; i < 200; ++i) deep = json::array({deep});
  json value = {
      {"inf", std::numeric_limits<double>::infinity()}, {"text", std::string("a\xC3")}, {"deep", deep}};
  EXPECT_FALSE(canonical_json(value));
  const json storable = storable_json(value);
  auto encoded = canonical_json(storable);
  EXPECT_TRUE(encoded) << (encoded ? "" : encoded.error().to_string());
  EXPECT_TRUE(storable["inf"].is_null());
  EXPECT_EQ(storable["text"], "a\uFFFD");
}

}  // namespace
}  // namespace keel
