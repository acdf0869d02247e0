// The event builders against the protocol's JSON Schema: each payload carries every field the schema
// requires and no field it does not describe.
#include "protocol/events.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace keel::events {
namespace {

using nlohmann::json;

json schema_definition(const std::string& type) {
  std::ifstream in(std::filesystem::path(KEEL_SOURCE_DIR) / "docs" / "protocol" /
                   "keel-protocol-v1.schema.json");
  std::stringstream text;
  text << in.rdbuf();
  return json::parse(text.str()).at("definitions").at("event." + type);
}

// Fails with the offending field: a required one missing, or one the schema does not list.
void expect_matches_schema(const Event& event) {
  const json definition = schema_definition(event.type);
  for (const json& required : definition.value("required", json::array())) {
    EXPECT_TRUE(event.payload.contains(required.get<std::string>()))
        << event.type << " lacks " << required << ": " << event.payload.dump();
  }
  const json properties = definition.at("properties");
  for (const auto& [key, value] : event.payload.items()) {
    EXPECT_TRUE(properties.contains(key)) << event.type << " has " << key << ", not in the schema";
  }
}

RunRecord sample_run() {
  RunRecord run;
  run.id = "run-1";
  run.turn_id = "turn-1";
  run.thread_id = "thread-1";
  run.state = RunState::kExecutingTool;
  run.revision = 7;
  return run;
}

TEST(EventsTest, RunUpdatedCarriesRunIdStateAndRevision) {
  const Event event = run_updated(sample_run());
  EXPECT_EQ(event.type, "run.updated");
  EXPECT_EQ(event.payload, (json{{"runId", "run-1"}, {"state", "executing_tool"}, {"revision", 7}}));
  expect_matches_schema(event);
}

TEST(EventsTest, UnpersistedRunUpdateKeepsTheLastPersistedStateAndSaysWhy) {
  const Event event = run_unpersisted(sample_run(), Error("store.poisoned", "the disk is full"));
  EXPECT_EQ(event.payload["state"], "executing_tool");
  EXPECT_EQ(event.payload["revision"], 7);
  EXPECT_EQ(event.payload["persisted"], false);
  EXPECT_EQ(event.payload["error"], (json{{"code", "store.poisoned"}, {"message", "the disk is full"}}));
  expect_matches_schema(event);
}

TEST(EventsTest, TurnCompleteHasOnlyTheFieldsItsEndSets) {
  const Event plain = turn_complete({.turn_id = "turn-1", .run_id = "run-1", .stop_reason = "end"});
  EXPECT_EQ(plain.payload, (json{{"turnId", "turn-1"}, {"runId", "run-1"}, {"stopReason", "end"}}));
  expect_matches_schema(plain);

  TokenUsage used;
  used.input_tokens = 10;
  used.output_tokens = 5;
  const Event full = turn_complete({.turn_id = "turn-1",
                                    .run_id = "run-1",
                                    .stop_reason = "error",
                                    .provider_stop_reason = "length",
                                    .may_be_incomplete = true,
                                    .error = Error("provider.failed", "down"),
                                    .unpersisted = true,
                                    .usage = used,
                                    .budget_tokens = 100});
  EXPECT_EQ(full.payload["persisted"], false);
  EXPECT_EQ(full.payload["mayBeIncomplete"], true);
  EXPECT_EQ(full.payload["usage"]["totalTokens"], 15);
  EXPECT_EQ(full.payload["budgetTokens"], 100);
  EXPECT_EQ(full.payload["error"]["code"], "provider.failed");
  expect_matches_schema(full);
}

TEST(EventsTest, ItemEventsMatchTheSchema) {
  NodeRecord node;
  node.id = "node-1";
  node.kind = NodeKind::kToolResult;
  node.body = {{"toolCallId", "call-1"}};
  const Event complete = item_complete(node, "turn-1");
  EXPECT_EQ(complete.payload["kind"], "tool_result");
  EXPECT_EQ(complete.payload["node"], (json{{"id", "node-1"}, {"kind", "tool_result"}, {"body", node.body}}));
  expect_matches_schema(complete);
  expect_matches_schema(reply_started("node-2", "turn-1"));
  const Event started = tool_started("node-3", "turn-1", "call-1", "read_file");
  EXPECT_EQ(started.payload["kind"], "tool_result");
  expect_matches_schema(started);
  expect_matches_schema(text_delta("node-2", "hi"));
  expect_matches_schema(reasoning_delta("node-2", "hm"));
  const Event progress = tool_progress("node-3", "half", json{{"done", 1}});
  EXPECT_EQ(progress.payload["toolProgress"], (json{{"text", "half"}, {"details", {{"done", 1}}}}));
  expect_matches_schema(progress);
}

TEST(EventsTest, TokenUsageCarriesCostsOnlyWhenPriced) {
  TokenUsage step;
  step.input_tokens = 3;
  const Event unpriced = token_usage(sample_run(), {.step = step, .total = step});
  EXPECT_FALSE(unpriced.payload["usage"].contains("costUsd"));
  const Event priced =
      token_usage(sample_run(), {.step = step, .total = step, .step_cost_usd = 0.5, .total_cost_usd = 1.5});
  EXPECT_EQ(priced.payload["usage"]["costUsd"], 0.5);
  EXPECT_EQ(priced.payload["total"]["costUsd"], 1.5);
  expect_matches_schema(priced);
}

TEST(EventsTest, TurnStartAndThreadTitleMatchTheSchema) {
  const Event recovered = turn_start(sample_run(), true, true);
  EXPECT_EQ(recovered.payload["recovered"], true);
  EXPECT_FALSE(turn_start(sample_run(), false).payload.contains("recovered"));
  expect_matches_schema(recovered);
  ThreadRecord thread;
  thread.id = "thread-1";
  thread.title = "Plans";
  thread.revision = 3;
  const Event titled = thread_titled(thread);
  EXPECT_EQ(titled.payload, (json{{"threadId", "thread-1"}, {"title", "Plans"}, {"revision", 3}}));
  expect_matches_schema(titled);
}

}  // namespace
}  // namespace keel::events
