// The event builders against the protocol's JSON Schema: each payload carries every field the schema
// requires, no field it does not describe, and is valid by the schema's validator.
#include "protocol/events.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "transport/protocol_schema.h"

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
  // A definition without properties (policy.updated: the gatekeeper's own change) leaves the keys open.
  if (definition.contains("properties")) {
    const json& properties = definition["properties"];
    for (const auto& [key, value] : event.payload.items()) {
      EXPECT_TRUE(properties.contains(key)) << event.type << " has " << key << ", not in the schema";
    }
  }
  auto schema = testing::ProtocolSchema::load();
  ASSERT_TRUE(schema) << schema.error().to_string();
  auto valid = schema->check(event.payload, "event." + event.type);
  EXPECT_TRUE(valid) << event.type << ": " << valid.error().to_string() << " in " << event.payload.dump();
  // The whole event, as a subscriber receives it.
  const json message = AgentEvent{event.type, "thread-1", 1, event.payload}.to_json();
  auto whole = schema->check(message, "event");
  EXPECT_TRUE(whole) << event.type << ": " << whole.error().to_string();
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
                                    .error = Error("provider.error", "down"),
                                    .unpersisted = true,
                                    .usage = used,
                                    .budget_tokens = 100});
  EXPECT_EQ(full.payload["persisted"], false);
  EXPECT_EQ(full.payload["mayBeIncomplete"], true);
  EXPECT_EQ(full.payload["usage"]["totalTokens"], 15);
  EXPECT_EQ(full.payload["budgetTokens"], 100);
  EXPECT_EQ(full.payload["error"]["code"], "provider.error");
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

TEST(EventsTest, QueueUpdatedListsTheItemsOrSaysTheQueueIsHeld) {
  ThreadRecord thread;
  thread.id = "thread-1";
  thread.revision = 4;
  QueuedInput item;
  item.id = "q1";
  item.position = 2;
  item.input = "next";
  item.revision = 1;
  EXPECT_EQ(queue_items_payload({item}),
            (json::array({{{"itemId", "q1"}, {"position", 2}, {"input", "next"}, {"revision", 1}}})));
  const Event updated = queue_updated(thread, {item});
  EXPECT_EQ(updated.type, "queue.updated");
  EXPECT_EQ(updated.payload,
            (json{{"threadId", "thread-1"}, {"items", queue_items_payload({item})}, {"revision", 4}}));
  expect_matches_schema(updated);
  const Event held = queue_held("thread-1", Error("store.busy", "locked"));
  EXPECT_EQ(held.payload, (json{{"threadId", "thread-1"},
                                {"held", true},
                                {"error", {{"code", "store.busy"}, {"message", "locked"}}}}));
  expect_matches_schema(held);
}

TEST(EventsTest, ThreadChangedCarriesTheStoreCommandsResult) {
  const json forked = {
      {"threadId", "thread-2"}, {"parentThreadId", "thread-1"}, {"forkNodeId", "node-1"}, {"revision", 1}};
  const Event event = thread_changed(forked);
  EXPECT_EQ(event.type, "thread.updated");
  EXPECT_EQ(event.payload, forked);
  expect_matches_schema(event);
  expect_matches_schema(
      thread_changed({{"threadId", "thread-1"}, {"leafNodeId", "node-3"}, {"revision", 5}}));
}

ApprovalRecord sample_approval() {
  ApprovalRecord approval;
  approval.id = "approval-1";
  approval.run_id = "run-1";
  approval.tool_call_id = "call-1";
  approval.request = {{"toolCallId", "call-1"},
                      {"callNodeId", "node-1"},
                      {"tool", {{"name", "write_file"}, {"effects", "write"}}},
                      {"arguments", {{"path", "a.txt"}}},
                      {"target", {{"path", "/w/a.txt"}}},
                      {"reason", "writes ask"},
                      {"ruleVersion", 3},
                      {"offers", {"accept", "decline"}}};
  return approval;
}

TEST(EventsTest, ApprovalRequestIsTheStoredRequestWithItsRun) {
  const Event event = approval_request(sample_approval(), sample_run());
  EXPECT_EQ(event.type, "approval.request");
  json expected = sample_approval().request;
  expected["approvalId"] = "approval-1";
  expected["threadId"] = "thread-1";
  expected["runId"] = "run-1";
  expected["turnId"] = "turn-1";
  EXPECT_EQ(event.payload, expected);
  expect_matches_schema(event);
  const Event resent = approval_request(sample_approval(), sample_run(), /*resent=*/true);
  EXPECT_EQ(resent.payload["resent"], true);
  expect_matches_schema(resent);
}

TEST(EventsTest, ApprovalResolvedIsTheResponsesAckResult) {
  const Event event = approval_resolved("approval-1", "run-1", "accept", "node-9");
  EXPECT_EQ(event.type, "approval.resolved");
  EXPECT_EQ(
      event.payload,
      (json{{"approvalId", "approval-1"}, {"runId", "run-1"}, {"decision", "accept"}, {"nodeId", "node-9"}}));
  expect_matches_schema(event);
}

TEST(EventsTest, InteractionRequestCarriesThePromptAndADueTimeOnlyForATimer) {
  InteractionRecord question;
  question.id = "interaction-1";
  question.run_id = "run-1";
  question.kind = InteractionKind::kAskUser;
  question.request = {
      {"toolCallId", "call-1"}, {"toolName", "ask_user"}, {"prompt", {{"question", "Which?"}}}};
  const Event asked = interaction_request(question, sample_run());
  EXPECT_EQ(asked.type, "interaction.request");
  EXPECT_EQ(asked.payload, (json{{"interactionId", "interaction-1"},
                                 {"threadId", "thread-1"},
                                 {"runId", "run-1"},
                                 {"turnId", "turn-1"},
                                 {"kind", "ask_user"},
                                 {"toolCallId", "call-1"},
                                 {"toolName", "ask_user"},
                                 {"request", {{"question", "Which?"}}}}));
  expect_matches_schema(asked);
  InteractionRecord timer = question;
  timer.kind = InteractionKind::kTimer;
  timer.due_at = 5000;
  const Event due = interaction_request(timer, sample_run(), /*resent=*/true);
  EXPECT_EQ(due.payload["dueAtMs"], 5000);
  EXPECT_EQ(due.payload["resent"], true);
  expect_matches_schema(due);
}

TEST(EventsTest, InteractionResolvedSaysWhenATimerFired) {
  const Event answered = interaction_resolved("interaction-1", "run-1");
  EXPECT_EQ(answered.payload, (json{{"interactionId", "interaction-1"}, {"runId", "run-1"}}));
  expect_matches_schema(answered);
  const Event fired = interaction_resolved("interaction-1", "run-1", /*fired=*/true);
  EXPECT_EQ(fired.payload["fired"], true);
  expect_matches_schema(fired);
}

TEST(EventsTest, RunUncertainOffersTheThreeResolutions) {
  const Event event = run_uncertain(sample_run(), "call-1", "write_file");
  EXPECT_EQ(event.type, "run.uncertain");
  EXPECT_EQ(event.payload, (json{{"runId", "run-1"},
                                 {"turnId", "turn-1"},
                                 {"toolCallId", "call-1"},
                                 {"name", "write_file"},
                                 {"offers", {"retry", "mark_done", "fail"}}}));
  expect_matches_schema(event);
}

TEST(EventsTest, PolicyUpdatedIsTheCommittedChange) {
  const json change = {
      {"kind", "thread_mode"}, {"threadId", "thread-1"}, {"mode", "read_only"}, {"version", 2}};
  const Event event = policy_updated(change);
  EXPECT_EQ(event.type, "policy.updated");
  EXPECT_EQ(event.payload, change);
  expect_matches_schema(event);
}

TEST(EventsTest, TakeoverUpdatedNamesTheHolderAndCarriesTheTargetsDetailsOnlyWhenAnObject) {
  const Event taken = takeover_updated("thread-1", "browser", /*person_holds=*/true, {{"tab", 1}});
  EXPECT_EQ(taken.type, "takeover.updated");
  EXPECT_EQ(
      taken.payload,
      (json{
          {"threadId", "thread-1"}, {"target", "browser"}, {"holder", "person"}, {"details", {{"tab", 1}}}}));
  expect_matches_schema(taken);
  const Event back = takeover_updated("thread-1", "browser", /*person_holds=*/false, nullptr);
  EXPECT_EQ(back.payload, (json{{"threadId", "thread-1"}, {"target", "browser"}, {"holder", "agent"}}));
  expect_matches_schema(back);
}

TEST(EventsTest, CommandAnswersNameTheOpAndCarryItsResultOrError) {
  const Op op{"thread.create", "client-1", "sub-1", json::object()};
  const Event ack = command_ack(op, {{"threadId", "thread-1"}}, /*replayed=*/true);
  EXPECT_EQ(ack.type, "command.ack");
  EXPECT_EQ(ack.payload, (json{{"clientId", "client-1"},
                               {"submissionId", "sub-1"},
                               {"method", "thread.create"},
                               {"result", {{"threadId", "thread-1"}}},
                               {"replayed", true}}));
  const Event rejected = command_rejected(op, Error("thread.not_found", "no thread"));
  EXPECT_EQ(rejected.type, "command.rejected");
  EXPECT_EQ(rejected.payload, (json{{"clientId", "client-1"},
                                    {"submissionId", "sub-1"},
                                    {"method", "thread.create"},
                                    {"error", {{"code", "thread.not_found"}, {"message", "no thread"}}}}));
  // The error travels to a JSON-RPC client as the schema's keelError.
  auto schema = testing::ProtocolSchema::load();
  ASSERT_TRUE(schema);
  EXPECT_TRUE(schema->check(rejected.payload["error"], "keelError"));
}

}  // namespace
}  // namespace keel::events
