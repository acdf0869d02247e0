// Tests for RunEnvironmentSnapshot capture and verification (engine/run_environment.h).
#include "engine/run_environment.h"

#include <gtest/gtest.h>

#include "engine/engine_errors.h"
#include "engine/engine_harness.h"
#include "testing/fake_skill_catalog.h"
#include "util/sha256.h"

namespace keel {
namespace {

using nlohmann::json;

class RunEnvironmentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    add("read_notes", ToolEffects::kRead);
    add("write_notes", ToolEffects::kWrite);
    transport.kind = "openai-chat";
    transport.base_url = "http://127.0.0.1:8080/v1";
    transport.wire_format = "chat-completions";
    transport.credential_id = "local";
    transport.credential_shape = "api_key";
    model.system_prompt = "Be brief.";
    model.model = "m-1";
    model.parameters = {{"temperature", 0.2}};
  }
  void add(const std::string& name, ToolEffects effects, json schema = json(), bool needs_vision = false) {
    ToolSpec spec = testing::simple_spec(name, effects);
    if (!schema.is_null()) spec.parameters = std::move(schema);
    spec.needs_vision = needs_vision;
    auto tool = std::make_shared<testing::LambdaTool>(
        spec, [](ToolCallContext, json, auto done) { done(text_result("ok")); });
    ASSERT_TRUE(registry.register_tool(tool));
  }
  EnvironmentSnapshotRecord capture(const EnvironmentLimits& limits = {}) {
    auto captured = capture_environment("s1", model, transport, *registry.snapshot(), limits);
    EXPECT_TRUE(captured) << captured.error().to_string();
    return captured ? *captured : EnvironmentSnapshotRecord{};
  }
  static std::string drift_of(const Result<void>& verified) {
    EXPECT_FALSE(verified.has_value());
    if (verified) return "";
    EXPECT_EQ(verified.error().code(), codes::kEnvironmentDrift) << verified.error().to_string();
    return verified.error().message();
  }

  ToolRegistry registry;
  ModelSettings model;
  ProviderTransport transport;
};

TEST_F(RunEnvironmentTest, ARunsModelIsFoundByTheNameItsSnapshotRecords) {
  testing::ScriptedProvider provider;
  CatalogModel first{.name = "first",
                     .provider_name = "p",
                     .settings = model,
                     .transport = transport,
                     .reasoning = false,
                     .provider = &provider};
  CatalogModel named = first;
  named.name = "named";
  const ModelCatalog catalog({first, named}, "first");
  auto with_name = capture_environment("s1", model, transport, *registry.snapshot(), {}, "named");
  ASSERT_TRUE(with_name) << with_name.error().to_string();
  EXPECT_EQ(with_name->body["model"]["name"], "named");
  auto found = model_of_run(*with_name, catalog);
  ASSERT_TRUE(found) << found.error().to_string();
  EXPECT_EQ((*found)->name, "named");
  // A snapshot from before the catalogue names no model: it ran with the default one.
  auto unnamed = model_of_run(capture(), catalog);
  ASSERT_TRUE(unnamed) << unnamed.error().to_string();
  EXPECT_EQ((*unnamed)->name, "first");

  const ModelCatalog without({first}, "first");
  auto gone = model_of_run(*with_name, without);
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().code(), codes::kEnvironmentDrift);
  EXPECT_NE(gone.error().message().find("'named' is no longer configured"), std::string::npos);
  named.settings.model = "m-2";
  const ModelCatalog renamed({first, named}, "first");
  auto changed = model_of_run(*with_name, renamed);
  ASSERT_FALSE(changed);
  EXPECT_EQ(changed.error().code(), codes::kEnvironmentDrift);
  EXPECT_NE(changed.error().message().find("'m-2'"), std::string::npos);
  // A damaged snapshot says so before anything about its model.
  EnvironmentSnapshotRecord damaged = *with_name;
  damaged.body["model"]["name"] = "someone-else";
  auto refused = model_of_run(damaged, catalog);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), codes::kSnapshotDigestMismatch);
}

TEST_F(RunEnvironmentTest, CapturesPromptModelTransportAndCatalogUnderItsDigest) {
  EnvironmentSnapshotRecord snapshot = capture();
  EXPECT_EQ(snapshot.version, kEnvironmentVersion);
  EXPECT_EQ(snapshot.body["systemPrompt"], "Be brief.");
  EXPECT_EQ(snapshot.body["model"]["parameters"]["temperature"], 0.2);
  EXPECT_EQ(snapshot.body["provider"]["credential"], (json{{"id", "local"}, {"shape", "api_key"}}));
  ASSERT_EQ(snapshot.body["toolCatalog"].size(), 2u);
  EXPECT_FALSE(snapshot.body["toolCatalog"][0].value("digest", "").empty());
  EXPECT_EQ(*json_fingerprint(snapshot.body), snapshot.digest);
  RunEnvironment env = *environment_of(snapshot);
  EXPECT_EQ(env.model.model, "m-1");
  EXPECT_EQ(env.tool_names, (std::vector<std::string>{"read_notes", "write_notes"}));
}

TEST_F(RunEnvironmentTest, AModelWithoutVisionHasNoToolThatNeedsVisionInItsCatalog) {
  add("page_picture", ToolEffects::kRead, json(), /*needs_vision=*/true);
  add("screenshot", ToolEffects::kRead);  // the name runs recorded before needs_vision are told by
  model.vision = false;
  EXPECT_EQ(environment_of(capture())->tool_names, (std::vector<std::string>{"read_notes", "write_notes"}));
  model.vision = true;
  const EnvironmentSnapshotRecord seeing = capture();
  EXPECT_EQ(environment_of(seeing)->tool_names,
            (std::vector<std::string>{"page_picture", "read_notes", "screenshot", "write_notes"}));
  EXPECT_EQ(seeing.body["toolCatalog"][0].value("needsVision", false), true);
}

TEST_F(RunEnvironmentTest, EachBoundIsEnforcedWithItsOwnCode) {
  auto code_with = [&](EnvironmentLimits limits) {
    auto captured = capture_environment("s", model, transport, *registry.snapshot(), limits);
    EXPECT_FALSE(captured.has_value());
    return captured ? std::string() : captured.error().code();
  };
  EXPECT_EQ(code_with({.max_catalog_entries = 1}), codes::kSnapshotTooManyTools);
  EXPECT_EQ(code_with({.max_entry_bytes = 64}), codes::kSnapshotEntryTooLarge);
  EXPECT_EQ(code_with({.max_total_bytes = 256}), codes::kSnapshotTooLarge);
  json deep = 1;
  for (int i = 0; i < 40; ++i) deep = json::array({deep});
  model.parameters = {{"deep", deep}};
  EXPECT_EQ(code_with({}), codes::kSnapshotTooDeep);
}

TEST_F(RunEnvironmentTest, TheSameEnvironmentVerifiesAndARotatedSecretIsNoDrift) {
  EnvironmentSnapshotRecord snapshot = capture();
  EXPECT_TRUE(verify_environment(snapshot, transport, *registry.snapshot()));
  // The secret behind "local" rotated: nothing of it is in the snapshot, the reference and shape are equal.
  ProviderTransport rotated = transport;
  EXPECT_TRUE(verify_environment(snapshot, rotated, *registry.snapshot()));
}

TEST_F(RunEnvironmentTest, TransportAndCredentialShapeDriftRefuseRecovery) {
  EnvironmentSnapshotRecord snapshot = capture();
  ProviderTransport moved = transport;
  moved.base_url = "https://elsewhere.example/v1";
  EXPECT_NE(drift_of(verify_environment(snapshot, moved, *registry.snapshot())).find("baseUrl"),
            std::string::npos);
  ProviderTransport reshaped = transport;
  reshaped.credential_shape = "oauth";
  EXPECT_NE(drift_of(verify_environment(snapshot, reshaped, *registry.snapshot())).find("credential"),
            std::string::npos);
}

TEST_F(RunEnvironmentTest, AToolWhoseSchemaOrSecurityChangedOrThatIsGoneRefusesRecovery) {
  EnvironmentSnapshotRecord snapshot = capture();
  ASSERT_TRUE(registry.unregister_tool("write_notes"));
  EXPECT_NE(
      drift_of(verify_environment(snapshot, transport, *registry.snapshot())).find("no longer registered"),
      std::string::npos);
  add("write_notes", ToolEffects::kRead);  // same name, different security metadata
  EXPECT_NE(
      drift_of(verify_environment(snapshot, transport, *registry.snapshot())).find("write_notes changed"),
      std::string::npos);
  ASSERT_TRUE(registry.unregister_tool("write_notes"));
  add("write_notes", ToolEffects::kWrite,
      {{"type", "object"}, {"properties", {{"path", {{"type", "string"}}}}}});
  EXPECT_NE(drift_of(verify_environment(snapshot, transport, *registry.snapshot())).find("schema"),
            std::string::npos);
}

TEST_F(RunEnvironmentTest, ADamagedBodyOrANewerVersionIsRefused) {
  EnvironmentSnapshotRecord damaged = capture();
  damaged.body["systemPrompt"] = "Be evil.";
  auto verified = verify_environment(damaged, transport, *registry.snapshot());
  ASSERT_FALSE(verified.has_value());
  EXPECT_EQ(verified.error().code(), codes::kSnapshotDigestMismatch);
  EnvironmentSnapshotRecord newer = capture();
  newer.version = kEnvironmentVersion + 1;
  verified = verify_environment(newer, transport, *registry.snapshot());
  ASSERT_FALSE(verified.has_value());
  EXPECT_EQ(verified.error().code(), codes::kSnapshotVersionUnsupported);
}

TEST_F(RunEnvironmentTest, AVersion1SnapshotWithoutTrustAndProvenanceIsCompletedWithTheDefaults) {
  EnvironmentSnapshotRecord v1 = capture();
  v1.version = 1;
  for (json& entry : v1.body["toolCatalog"]) {
    entry.erase("trust");
    entry.erase("provenance");
  }
  v1.body["version"] = 1;
  v1.digest = *json_fingerprint(v1.body);  // its own digest, as written then
  EXPECT_TRUE(verify_environment(v1, transport, *registry.snapshot()));
  // Completed with the defaults, any other difference still drifts.
  v1.body["toolCatalog"][0]["recovery"] = "never-retry";
  v1.digest = *json_fingerprint(v1.body);
  EXPECT_NE(drift_of(verify_environment(v1, transport, *registry.snapshot())).find("read_notes"),
            std::string::npos);
}

// ---- skills (issue 19, point 6) ----

TEST_F(RunEnvironmentTest, WithoutReadSkillASnapshotIsTheSameAsWithoutSkills) {
  testing::FakeSkillCatalog skills;
  skills.add("deploy", "Ship it.", "Steps.");
  const EnvironmentSnapshotRecord without = capture();
  auto with_catalog = capture_environment("s1", model, transport, *registry.snapshot(), {}, {}, &skills);
  ASSERT_TRUE(with_catalog) << with_catalog.error().to_string();
  EXPECT_EQ(with_catalog->body["skills"], json::array());
  EXPECT_EQ(with_catalog->digest, without.digest);
}

TEST_F(RunEnvironmentTest, ASnapshotBindsEachSkillsNameDescriptionSourceAndDigest) {
  add("read_skill", ToolEffects::kRead);
  testing::FakeSkillCatalog skills;
  skills.add("deploy", "Ship it.", "Steps.", SkillSource::kProject);
  const EnvironmentSnapshotRecord without = capture();
  auto captured = capture_environment("s1", model, transport, *registry.snapshot(), {}, {}, &skills);
  ASSERT_TRUE(captured) << captured.error().to_string();
  ASSERT_EQ(captured->body["skills"].size(), 1u);
  const json& entry = captured->body["skills"][0];
  EXPECT_EQ(entry["name"], "deploy");
  EXPECT_EQ(entry["description"], "Ship it.");
  EXPECT_EQ(entry["source"], "project");
  EXPECT_EQ(entry["digest"], skills.skills()[0].digest);
  EXPECT_NE(captured->digest, without.digest);
  // The run's prompt lists the skills it bound, after the configured prompt.
  auto env = environment_of(*captured);
  ASSERT_TRUE(env);
  EXPECT_EQ(env->model.system_prompt, "Be brief.\n\n" + skills_prompt(captured->body["skills"]));
  EXPECT_NE(env->model.system_prompt.find("- deploy: Ship it.\n"), std::string::npos);
  EXPECT_EQ(environment_of(without)->model.system_prompt, "Be brief.");
  // A model without tools cannot read skills: none are bound.
  model.tool_use = false;
  auto no_tools = capture_environment("s1", model, transport, *registry.snapshot(), {}, {}, &skills);
  ASSERT_TRUE(no_tools);
  EXPECT_EQ(no_tools->body["skills"], json::array());
}

TEST_F(RunEnvironmentTest, ASkillThatChangedOrIsGoneRefusesRecoveryNamingIt) {
  add("read_skill", ToolEffects::kRead);
  testing::FakeSkillCatalog skills;
  skills.add("deploy", "Ship it.", "Steps.");
  skills.add("lint", "Lint.", "Run it.");
  auto captured = capture_environment("s1", model, transport, *registry.snapshot(), {}, {}, &skills);
  ASSERT_TRUE(captured);
  EXPECT_TRUE(verify_environment(*captured, transport, *registry.snapshot(), &skills));

  testing::FakeSkillCatalog edited;
  edited.add("deploy", "Ship it.", "Other steps.");
  edited.add("lint", "Lint.", "Run it.");
  edited.add("new-one", "Added later: no drift.", "x");
  const std::string changed =
      drift_of(verify_environment(*captured, transport, *registry.snapshot(), &edited));
  EXPECT_NE(changed.find("skill deploy changed"), std::string::npos) << changed;
  EXPECT_EQ(changed.find("lint"), std::string::npos) << changed;

  testing::FakeSkillCatalog fewer;
  fewer.add("deploy", "Ship it.", "Steps.");
  const std::string gone = drift_of(verify_environment(*captured, transport, *registry.snapshot(), &fewer));
  EXPECT_NE(gone.find("skill lint is no longer available"), std::string::npos) << gone;
  const std::string off = drift_of(verify_environment(*captured, transport, *registry.snapshot(), nullptr));
  EXPECT_NE(off.find("skill deploy is no longer available"), std::string::npos) << off;
}

// ---- through the engine (issue 14, point 7) ----

using testing::EngineHarness;
using testing::ScriptedResponse;

TEST(RunEnvironmentEngineTest, ResumingAnInterruptedRunAfterTheTransportChangedFailsWithEnvironmentDrift) {
  EngineHarness h;
  h.provider.push(ScriptedResponse::stall());
  h.start();
  const std::string thread = h.create_thread();
  AgentEvent ack = h.request("turn.submit", {{"threadId", thread}, {"input", "go"}});
  ASSERT_EQ(ack.type, "command.ack");
  const std::string run_id = ack.payload["result"]["runId"];
  ASSERT_TRUE(h.log.wait_until([&](const auto&) { return h.provider.requests().size() == 1; }));
  h.request("turn.interrupt", {{"threadId", thread}});
  EXPECT_EQ(h.wait_complete(thread, 1).payload["stopReason"], "interrupted");
  h.stop();
  h.engine_options().transport.base_url = "https://another-endpoint.example/v1";
  h.provider.push(ScriptedResponse::text("continued against the new provider"));
  h.start();
  AgentEvent resumed = h.request("run.resume", {{"threadId", thread}, {"runId", run_id}});
  ASSERT_EQ(resumed.type, "command.ack") << resumed.payload.dump();
  const AgentEvent complete = h.wait_complete(thread, 2);
  EXPECT_EQ(complete.payload["stopReason"], "error");
  EXPECT_EQ(complete.payload["error"]["code"], codes::kEnvironmentDrift) << complete.payload.dump();
  EXPECT_EQ(h.run(run_id).state, RunState::kFailed);
  EXPECT_EQ(h.provider.requests().size(), 1u) << "the run continued against the new provider";
}

TEST(RunEnvironmentEngineTest, OnlyTheThreadsLatestRunCanBeResumed) {
  EngineHarness h;
  h.provider.push(ScriptedResponse::stall());
  h.start();
  const std::string thread = h.create_thread();
  AgentEvent ack = h.request("turn.submit", {{"threadId", thread}, {"input", "go"}});
  const std::string old_run = ack.payload["result"]["runId"];
  ASSERT_TRUE(h.log.wait_until([&](const auto&) { return h.provider.requests().size() == 1; }));
  h.request("turn.interrupt", {{"threadId", thread}});
  h.wait_complete(thread, 1);
  h.provider.push(ScriptedResponse::text("a newer turn"));
  h.run_turn(thread, "newer");
  AgentEvent resumed = h.request("run.resume", {{"threadId", thread}, {"runId", old_run}});
  EXPECT_EQ(resumed.type, "command.rejected");
  EXPECT_EQ(resumed.payload["error"]["code"], codes::kRunNotResumable);
}

// An ask tool whose version says who judged and completed the answer.
class VersionedAskTool final : public AgentTool {
 public:
  VersionedAskTool(std::string version, bool accepts)
      : spec_(testing::simple_spec("ask")), version_(std::move(version)), accepts_(accepts) {}
  const ToolSpec& spec() const override { return spec_; }
  void execute(ToolCallContext, json, std::function<void(Result<ToolResult>)> done) override {
    done(text_result("not an interaction"));
  }
  std::optional<InteractionPlan> plan_interaction(const json&) const override {
    return InteractionPlan{.kind = InteractionKind::kAskUser, .request = {{"question", "which?"}}};
  }
  Result<void> check_response(const json&, const json&) const override {
    if (!accepts_) return fail(codes::kInvalidArgument, "version " + version_ + " refuses every answer");
    return {};
  }
  ToolResult complete_interaction(const json&, const json& response) const override {
    return text_result("completed by " + version_ + ": " + response.value("answer", ""));
  }

 private:
  ToolSpec spec_;
  std::string version_;
  bool accepts_;
};

TEST(RunEnvironmentEngineTest, AnAnswerIsJudgedAndCompletedByTheToolTheWaitingRunIsBoundTo) {
  EngineHarness h;
  ASSERT_TRUE(h.tools.register_tool(std::make_shared<VersionedAskTool>("v1", true)));
  h.provider.push(ScriptedResponse::tool_calls({{"c1", "ask", "{}"}}));
  h.provider.push(ScriptedResponse::text("done"));
  h.start();
  const std::string thread = h.create_thread();
  ASSERT_EQ(h.request("turn.submit", {{"threadId", thread}, {"input", "go"}}).type, "command.ack");
  const AgentEvent asked = h.wait_event(thread, "interaction.request");
  // An MCP reconnect, say, replaces the implementation under the same name and descriptor meanwhile.
  ASSERT_TRUE(h.tools.unregister_tool("ask"));
  ASSERT_TRUE(h.tools.register_tool(std::make_shared<VersionedAskTool>("v2", false)));
  const AgentEvent answered =
      h.request("interaction.response", {{"threadId", thread},
                                         {"interactionId", asked.payload["interactionId"]},
                                         {"response", {{"answer", "left"}}}});
  ASSERT_EQ(answered.type, "command.ack") << answered.payload.dump();
  EXPECT_EQ(h.wait_complete(thread, 1).payload["stopReason"], "end");
  std::string result;
  for (const NodeRecord& node : h.path(thread)) {
    if (node.kind == NodeKind::kToolResult) result = node.body["content"][0].value("text", "");
  }
  EXPECT_EQ(result, "completed by v1: left");
}

}  // namespace
}  // namespace keel
