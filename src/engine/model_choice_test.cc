// The model picker at the engine (issue 18): a catalogue of models, each thread's chosen one
// (thread.setModel, thread.create{model}), model.list, a new turn taking its thread's model when it starts,
// and recovery resolving a run's model by the name its snapshot holds.
#include <gtest/gtest.h>

#include "engine/engine_errors.h"
#include "engine/engine_harness.h"
#include "tools/builtin/builtin_tools.h"

namespace keel {
namespace {

using nlohmann::json;
using testing::EngineHarness;
using testing::ScriptedResponse;

// Reports progress and blocks until its turn is cancelled the first time it runs; succeeds afterwards (a
// recovered run runs it again).
class BlocksOnceTool final : public AgentTool {
 public:
  BlocksOnceTool() : spec_(testing::simple_spec("blocks_once")) {}
  const ToolSpec& spec() const override { return spec_; }
  void execute(ToolCallContext context, json, std::function<void(Result<ToolResult>)> done) override {
    if (++runs_ > 1) return done(text_result("done"));
    context.progress(ToolProgress{"working", nullptr});
    auto shared = std::make_shared<std::function<void(Result<ToolResult>)>>(std::move(done));
    registration_ = context.cancel.on_cancel([shared] { (*shared)(fail(codes::kCancelled, "cancelled")); });
  }

 private:
  ToolSpec spec_;
  std::atomic<int> runs_{0};
  CancellationRegistration registration_;
};

CatalogModel catalog_entry(std::string name, Provider* provider) {
  CatalogModel model;
  model.name = name;
  model.provider_name = "provider-" + name;
  model.settings.model = "id-" + name;
  ModelPrice price;
  price.input_per_million = 3;
  price.output_per_million = 15;
  model.settings.price = price;
  model.transport.kind = "scripted";
  model.transport.base_url = "http://" + name + ".invalid/v1";
  model.transport.credential_id = "env:SECRET_OF_" + name;
  model.provider = provider;
  return model;
}

class ModelChoiceTest : public ::testing::Test {
 protected:
  static testing::HarnessOptions options(FailPoints* points, const ModelCatalog* models) {
    testing::HarnessOptions o;
    o.fail_points = points;
    o.models = models;
    return o;
  }
  ModelChoiceTest() : h(options(&fail_points, &both)) {}
  void SetUp() override {
    ASSERT_TRUE(h.tools.register_tool(std::make_shared<BlocksOnceTool>()));
    ASSERT_TRUE(builtin::register_builtin_tools(h.tools, {.interactions = true}));
    h.start();
  }

  std::string set_model(const std::string& thread, const std::string& model, const std::string& expect) {
    AgentEvent answer = h.request("thread.setModel", {{"threadId", thread}, {"model", model}});
    EXPECT_EQ(answer.type, expect) << answer.payload.dump();
    return answer.type == "command.rejected" ? answer.payload["error"].value("code", "") : "";
  }
  // A turn whose model calls the blocking tool, then a simulated crash while the tool runs.
  std::string crash_while_running(const std::string& thread, testing::ScriptedProvider& provider) {
    provider.push(ScriptedResponse::tool_calls({{"c1", "blocks_once", "{}"}}));
    AgentEvent ack = h.request("turn.submit", {{"threadId", thread}, {"input", "go"}});
    EXPECT_EQ(ack.type, "command.ack") << ack.payload.dump();
    h.wait_tool_progress(thread);
    fail_points.arm("store.begin", FailPoints::Action::kError, 1, /*repeat=*/true);
    h.stop();
    fail_points.disarm_all();
    return ack.payload["result"]["runId"];
  }

  FailPoints fail_points;
  testing::ScriptedProvider second;  // model "b"; the harness's own provider is model "a"
  EngineHarness h;
  // Declared after the harness, whose provider they point at, and destroyed before it: the engine is stopped
  // by then (TearDown).
  ModelCatalog both{{catalog_entry("a", &h.provider), catalog_entry("b", &second)}, "a"};
  ModelCatalog only_a{{catalog_entry("a", &h.provider)}, "a"};
  void TearDown() override { h.stop(); }
};

TEST_F(ModelChoiceTest, TwoThreadsWithDifferentModelsCallTheirOwnProviders) {
  const std::string on_default = h.create_thread();
  const std::string on_b = h.create_thread();
  set_model(on_b, "b", "command.ack");
  h.provider.push(ScriptedResponse::text("from a"));
  second.push(ScriptedResponse::text("from b"));
  EXPECT_EQ(h.run_turn(on_b, "hello b").payload["stopReason"], "end");
  EXPECT_EQ(h.run_turn(on_default, "hello a").payload["stopReason"], "end");
  ASSERT_EQ(second.requests().size(), 1u);
  EXPECT_EQ(second.requests()[0].model, "id-b");
  ASSERT_EQ(h.provider.requests().size(), 1u);
  EXPECT_EQ(h.provider.requests()[0].model, "id-a");
  // The turn_context node records the id the run was started with.
  EXPECT_EQ(h.path(on_b).front().body.value("model", ""), "id-b");
}

TEST_F(ModelChoiceTest, AQueuedTurnUsesTheModelTheThreadHasWhenItStarts) {
  const std::string thread = h.create_thread();
  h.provider.push(ScriptedResponse::held(ScriptedResponse::text("first, from a")));
  second.push(ScriptedResponse::text("second, from b"));
  ASSERT_EQ(h.request("turn.submit", {{"threadId", thread}, {"input", "one"}}).type, "command.ack");
  ASSERT_TRUE(h.provider.wait_held(1));
  ASSERT_EQ(h.request("turn.enqueue", {{"threadId", thread}, {"input", "two"}}).type, "command.ack");
  // Allowed while the turn runs: the running turn keeps its model, the next one takes the new choice.
  set_model(thread, "b", "command.ack");
  ASSERT_TRUE(h.provider.release());
  const AgentEvent second_turn = h.wait_complete(thread, 2);
  EXPECT_EQ(second_turn.payload["stopReason"], "end");
  EXPECT_EQ(h.provider.requests().size(), 1u);
  ASSERT_EQ(second.requests().size(), 1u);
  EXPECT_EQ(second.requests()[0].model, "id-b");
}

// A wait answered while the engine runs continues the run in this process: the continuation's requests go
// to the run's own model, not to the default one.
TEST_F(ModelChoiceTest, ARunThatWaitedForAnAnswerContinuesWithItsOwnModel) {
  const std::string thread = h.create_thread();
  set_model(thread, "b", "command.ack");
  second.push(ScriptedResponse::tool_calls({{"c1", "ask_user", R"({"question": "Which one?"})"}}));
  second.push(ScriptedResponse::text("thanks, from b"));
  ASSERT_EQ(h.request("turn.submit", {{"threadId", thread}, {"input", "go"}}).type, "command.ack");
  const AgentEvent asked = h.wait_event(thread, "interaction.request", 1);
  const AgentEvent answered =
      h.request("interaction.response", {{"threadId", thread},
                                         {"interactionId", asked.payload["interactionId"]},
                                         {"response", {{"answer", "this one"}}}});
  ASSERT_EQ(answered.type, "command.ack") << answered.payload.dump();
  EXPECT_EQ(h.wait_complete(thread, 1).payload["stopReason"], "end");
  EXPECT_TRUE(h.provider.requests().empty()) << "the default model was asked";
  ASSERT_EQ(second.requests().size(), 2u);
  EXPECT_EQ(second.requests()[1].model, "id-b");
  EXPECT_EQ(h.path(thread).back().body["content"][0]["text"], "thanks, from b");
}

TEST_F(ModelChoiceTest, AnUnknownModelIsRefusedAndTheChoiceIsReadBack) {
  const std::string thread = h.create_thread();
  EXPECT_EQ(set_model(thread, "gpt-9", "command.rejected"), codes::kModelUnknown);
  AgentEvent created = h.request("thread.create", {{"model", "gpt-9"}});
  ASSERT_EQ(created.type, "command.rejected");
  EXPECT_EQ(created.payload["error"]["code"], codes::kModelUnknown);

  json read = h.request("thread.read", {{"threadId", thread}}).payload["result"];
  EXPECT_TRUE(read["model"].is_null()) << read.dump();
  set_model(thread, "b", "command.ack");
  read = h.request("thread.read", {{"threadId", thread}}).payload["result"];
  EXPECT_EQ(read["model"], "b");
  const json list = h.request("thread.list", json::object()).payload["result"];
  ASSERT_EQ(list["threads"].size(), 1u);
  EXPECT_EQ(list["threads"][0]["model"], "b");

  AgentEvent with_model = h.request("thread.create", {{"model", "b"}});
  ASSERT_EQ(with_model.type, "command.ack");
  const std::string created_on_b = with_model.payload["result"]["threadId"];
  EXPECT_EQ(h.request("thread.read", {{"threadId", created_on_b}}).payload["result"]["model"], "b");
  // A fork keeps its source's model.
  AgentEvent fork = h.request("thread.fork", {{"threadId", thread}});
  ASSERT_EQ(fork.type, "command.ack") << fork.payload.dump();
  EXPECT_EQ(
      h.request("thread.read", {{"threadId", fork.payload["result"]["threadId"]}}).payload["result"]["model"],
      "b");
}

TEST_F(ModelChoiceTest, ModelListNamesEveryModelAndTheDefaultAndNoCredential) {
  AgentEvent answer = h.request("model.list", json::object());
  ASSERT_EQ(answer.type, "command.ack") << answer.payload.dump();
  const json result = answer.payload["result"];
  EXPECT_EQ(result["defaultModel"], "a");
  ASSERT_EQ(result["models"].size(), 2u);
  const json& b = result["models"][1];
  EXPECT_EQ(b["name"], "b");
  EXPECT_EQ(b["provider"], "provider-b");
  EXPECT_EQ(b["modelId"], "id-b");
  EXPECT_EQ(b["price"]["inputPerMillion"], 3);
  EXPECT_EQ(result.dump().find("SECRET_OF"), std::string::npos) << result.dump();
  EXPECT_EQ(result.dump().find(".invalid"), std::string::npos) << result.dump();
}

TEST_F(ModelChoiceTest, ARecoveredRunWhoseModelWasRemovedFailsWithDrift) {
  const std::string thread = h.create_thread();
  set_model(thread, "b", "command.ack");
  const std::string run_id = crash_while_running(thread, second);
  h.set_models(&only_a);
  h.start();
  const AgentEvent complete = h.wait_complete(thread, 1);
  EXPECT_EQ(complete.payload["runId"], run_id);
  EXPECT_EQ(complete.payload["error"]["code"], codes::kEnvironmentDrift) << complete.payload.dump();
  EXPECT_NE(complete.payload["error"].value("message", "").find("'b'"), std::string::npos)
      << complete.payload.dump();
  EXPECT_EQ(h.run(run_id).state, RunState::kFailed);
  // The thread's own choice is gone too: a new turn is refused until another model is chosen.
  AgentEvent refused = h.request("turn.submit", {{"threadId", thread}, {"input", "again"}});
  ASSERT_EQ(refused.type, "command.rejected");
  EXPECT_EQ(refused.payload["error"]["code"], codes::kModelUnknown);
  set_model(thread, "a", "command.ack");
  h.provider.push(ScriptedResponse::text("back on a"));
  EXPECT_EQ(h.run_turn(thread, "again").payload["stopReason"], "end");
}

TEST_F(ModelChoiceTest, ARecoveredRunContinuesWithItsOwnModelWhateverTheDefaultIsNow) {
  const std::string thread = h.create_thread();
  set_model(thread, "b", "command.ack");
  const std::string run_id = crash_while_running(thread, second);
  // Restarted with "b" as the default and "a" listed first: the run still resolves "b" by name.
  ModelCatalog b_default{{catalog_entry("a", &h.provider), catalog_entry("b", &second)}, "b"};
  h.set_models(&b_default);
  second.push(ScriptedResponse::text("recovered on b"));
  h.start();
  const AgentEvent complete = h.wait_complete(thread, 1);
  EXPECT_EQ(complete.payload["stopReason"], "end") << complete.payload.dump();
  EXPECT_EQ(h.provider.requests().size(), 0u);
  EXPECT_EQ(second.requests().size(), 2u);
  h.stop();
}

TEST_F(ModelChoiceTest, ARecoveredRunWhoseModelNowNamesAnotherIdFailsWithDrift) {
  const std::string thread = h.create_thread();
  set_model(thread, "b", "command.ack");
  const std::string run_id = crash_while_running(thread, second);
  CatalogModel renamed = catalog_entry("b", &second);
  renamed.settings.model = "id-b-2";
  ModelCatalog changed{{catalog_entry("a", &h.provider), renamed}, "a"};
  h.set_models(&changed);
  h.start();
  const AgentEvent complete = h.wait_complete(thread, 1);
  EXPECT_EQ(complete.payload["error"]["code"], codes::kEnvironmentDrift) << complete.payload.dump();
  EXPECT_NE(complete.payload["error"].value("message", "").find("id-b-2"), std::string::npos);
  h.stop();
}

}  // namespace
}  // namespace keel
