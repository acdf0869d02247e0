// Integration tests of what EngineCore answers about a thread's state (issue 14): a title given at
// thread.create survives the first turn, budgets are bounded, queue.list shows the queue, and event seqs keep
// increasing across an engine restart, and thread.branches lists the leaves of a thread's tree.
#include "engine/engine_core.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>

#include "engine/engine_harness.h"
#include "keel/error_codes.h"

namespace keel {
namespace {

using nlohmann::json;
using testing::EngineHarness;
using testing::HarnessOptions;
using testing::ScriptedResponse;

TEST(EngineCoreTest, ATitleGivenAtCreateIsKeptThroughTheFirstTurn) {
  HarnessOptions options;
  options.with_task_provider = true;
  options.engine.task_model = "small-model";
  EngineHarness h(options);
  h.provider.push(ScriptedResponse::text("answer"));
  h.task_provider.push(ScriptedResponse::text("Generated title"));
  h.start();
  AgentEvent created = h.request("thread.create", {{"title", "Chosen by me"}});
  ASSERT_EQ(created.type, "command.ack") << created.payload.dump();
  const std::string thread = created.payload["result"]["threadId"];
  h.run_turn(thread, "Plan a trip to Lisbon");
  auto read = h.request("thread.read", {{"threadId", thread}});
  EXPECT_EQ(read.payload["result"]["title"], "Chosen by me");
  EXPECT_TRUE(h.task_provider.requests().empty()) << "no title is generated for a titled thread";
  for (const AgentEvent& e : h.log.of_type("thread.updated"))
    EXPECT_FALSE(e.payload.contains("title")) << e.payload;
}

TEST(EngineCoreTest, ThreadBranchesListsTheTreesLeavesAndFollowsSelectBranch) {
  EngineHarness h;
  h.provider.push(ScriptedResponse::text("first answer"));
  h.start();
  const std::string thread = h.create_thread();
  h.run_turn(thread, "question");
  const std::vector<NodeRecord> first = h.path(thread);
  ASSERT_GE(first.size(), 3u);
  const std::string turn_context = first[0].id;
  const std::string first_leaf = first.back().id;
  // A second branch as an edited message would make it: a user message under the first turn's context.
  {
    ThreadRepository threads(h.clock);
    auto tx = h.store().begin(TxMode::kWrite);
    ASSERT_TRUE(tx);
    NewNode edited;
    edited.id = "edited";
    edited.thread_id = thread;
    edited.kind = NodeKind::kUserMessage;
    edited.body = {{"content", json::array({{{"type", "text"}, {"text", "question, edited"}}})}};
    edited.parent_id = turn_context;
    ASSERT_TRUE(threads.append(**tx, std::move(edited)));
    ASSERT_TRUE((*tx)->commit());
  }
  AgentEvent listed = h.request("thread.branches", {{"threadId", thread}});
  ASSERT_EQ(listed.type, "command.ack") << listed.payload.dump();
  const json& result = listed.payload["result"];
  EXPECT_EQ(result["selectedLeafNodeId"], "edited");
  EXPECT_GE(result["lastSeq"].get<uint64_t>(), 1u);
  ASSERT_EQ(result["branches"].size(), 2u);
  EXPECT_EQ(result["branches"][0]["leafNodeId"], "edited");
  EXPECT_EQ(result["branches"][0]["preview"], "question, edited");
  EXPECT_EQ(result["branches"][1]["leafNodeId"], first_leaf);
  EXPECT_EQ(result["branches"][1]["forkNodeId"], turn_context);
  EXPECT_EQ(result["branches"][1]["preview"], "first answer");

  AgentEvent selected = h.request("thread.selectBranch", {{"threadId", thread}, {"leafNodeId", first_leaf}});
  ASSERT_EQ(selected.type, "command.ack") << selected.payload.dump();
  AgentEvent relisted = h.request("thread.branches", {{"threadId", thread}});
  EXPECT_EQ(relisted.payload["result"]["selectedLeafNodeId"], first_leaf);
  EXPECT_EQ(relisted.payload["result"]["branches"][0]["forkNodeId"], turn_context);

  AgentEvent unknown = h.request("thread.branches", {{"threadId", "no-such-thread"}});
  EXPECT_EQ(unknown.payload["error"]["code"], codes::kThreadNotFound) << unknown.payload.dump();
  ASSERT_EQ(h.request("thread.delete", {{"threadId", thread}}).type, "command.ack");
  AgentEvent deleted = h.request("thread.branches", {{"threadId", thread}});
  EXPECT_EQ(deleted.payload["error"]["code"], codes::kThreadDeleted) << deleted.payload.dump();
}

TEST(EngineCoreTest, RaisedBudgetSaturatesInsteadOfOverflowing) {
  EXPECT_EQ(raised_budget(100, 1000), 1100);
  EXPECT_EQ(raised_budget(std::nullopt, 5), 5);
  EXPECT_EQ(raised_budget(kMaxBudgetTokens - 1, kMaxBudgetTokens), kMaxBudgetTokens);
  EXPECT_EQ(raised_budget(std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::max()),
            kMaxBudgetTokens);
  EXPECT_EQ(raised_budget(-50, 10), 10) << "a damaged negative budget counts as none";
}

TEST(EngineCoreTest, BudgetsOutOfRangeAreRefusedAndAResumedBudgetSaturates) {
  EngineHarness h;
  h.provider.push(ScriptedResponse::tool_calls({{"c1", "echo", "{}"}}).with_usage(80, 40));
  h.provider.push(ScriptedResponse::tool_calls({{"c2", "echo", "{}"}}).with_usage(10, 5));
  h.provider.push(ScriptedResponse::text("finished").with_usage(10, 5));
  h.start();
  const std::string thread = h.create_thread();
  for (const json& bad : {json(0), json(-5), json(kMaxBudgetTokens + 1),
                          json(std::numeric_limits<uint64_t>::max()), json(1.5)}) {
    AgentEvent refused =
        h.request("turn.submit", {{"threadId", thread}, {"input", "go"}, {"budgetTokens", bad}});
    ASSERT_EQ(refused.type, "command.rejected") << bad;
    EXPECT_EQ(refused.payload["error"]["code"], codes::kInvalidArgument) << bad;
  }
  AgentEvent paused = h.run_turn(thread, "go", {{"budgetTokens", 100}});
  ASSERT_EQ(paused.payload["stopReason"], "budget_pause");
  const std::string run_id = paused.payload["runId"];
  // INT64_MAX on top of 100 used to wrap around to a negative budget.
  for (const json& bad : {json(std::numeric_limits<int64_t>::max()), json(0), json(kMaxBudgetTokens + 1)}) {
    AgentEvent refused = h.request("run.resume", {{"threadId", thread}, {"additionalBudgetTokens", bad}});
    ASSERT_EQ(refused.type, "command.rejected") << bad;
    EXPECT_EQ(refused.payload["error"]["code"], codes::kInvalidArgument) << bad;
  }
  EXPECT_EQ(h.run(run_id).budget_tokens, 100) << "a refused resume changes nothing";
  AgentEvent resumed =
      h.request("run.resume", {{"threadId", thread}, {"additionalBudgetTokens", kMaxBudgetTokens}});
  ASSERT_EQ(resumed.type, "command.ack") << resumed.payload.dump();
  AgentEvent done = h.wait_complete(thread, 2);
  EXPECT_EQ(done.payload["stopReason"], "end");
  EXPECT_EQ(h.run(run_id).budget_tokens, kMaxBudgetTokens) << "saturated, not wrapped";
}

TEST(EngineCoreTest, QueueListShowsTheQueueAndQueueRemoveTakesAnEntryOut) {
  EngineHarness h;
  h.provider.push(ScriptedResponse::stall());
  h.start();
  const std::string thread = h.create_thread();
  AgentEvent empty = h.request("queue.list", {{"threadId", thread}});
  ASSERT_EQ(empty.type, "command.ack") << empty.payload.dump();
  EXPECT_EQ(empty.payload["result"]["items"], json::array());
  ASSERT_EQ(h.request("turn.submit", {{"threadId", thread}, {"input", "long"}}).type, "command.ack");
  AgentEvent first = h.request("turn.enqueue", {{"threadId", thread}, {"input", "first"}});
  AgentEvent second = h.request("turn.enqueue", {{"threadId", thread}, {"input", "second"}});
  ASSERT_EQ(second.type, "command.ack") << second.payload.dump();
  AgentEvent listed = h.request("queue.list", {{"threadId", thread}});
  ASSERT_EQ(listed.type, "command.ack") << listed.payload.dump();
  const json& items = listed.payload["result"]["items"];
  ASSERT_EQ(items.size(), 2u) << listed.payload.dump();
  EXPECT_EQ(items[0]["itemId"], first.payload["result"]["itemId"]);
  EXPECT_EQ(items[0]["input"], "first");
  EXPECT_EQ(items[1]["input"], "second");
  EXPECT_EQ(listed.payload["result"]["revision"], second.payload["result"]["revision"]);
  EXPECT_GE(listed.payload["result"]["lastSeq"].get<uint64_t>(), h.log.of_type("turn.start").back().seq);

  const json remove = {{"threadId", thread}, {"itemId", first.payload["result"]["itemId"]}};
  AgentEvent removed = h.request_as("remove-1", "queue.remove", remove);
  ASSERT_EQ(removed.type, "command.ack") << removed.payload.dump();
  EXPECT_EQ(removed.payload["result"]["queueLength"], 1);
  AgentEvent again = h.request_as("remove-1", "queue.remove", remove);
  EXPECT_EQ(again.type, "command.ack") << "the receipt answers a retry";
  EXPECT_EQ(again.payload["replayed"], true);
  AgentEvent gone = h.request("queue.remove", remove);
  EXPECT_EQ(gone.type, "command.rejected") << "a new submission finds the entry gone";
  auto after = h.request("queue.list", {{"threadId", thread}}).payload["result"]["items"];
  ASSERT_EQ(after.size(), 1u);
  EXPECT_EQ(after[0]["input"], "second");
  EXPECT_EQ(h.request("queue.list", {{"threadId", "no-such-thread"}}).payload["error"]["code"],
            codes::kThreadNotFound);
  h.request("turn.interrupt", {{"threadId", thread}});
  h.wait_complete(thread, 1);
}

TEST(EngineCoreTest, EventSeqsKeepIncreasingAcrossARestartAndThreadReadSaysWhereToContinue) {
  EngineHarness h;
  h.provider.push(ScriptedResponse::text("one"));
  h.provider.push(ScriptedResponse::text("two"));
  h.start();
  const std::string thread = h.create_thread();
  h.run_turn(thread, "first");
  uint64_t before = 0;
  for (const AgentEvent& e : h.log.events()) {
    if (e.thread_id == thread) before = std::max(before, e.seq);
  }
  AgentEvent read = h.request("thread.read", {{"threadId", thread}});
  EXPECT_EQ(read.payload["result"]["lastSeq"].get<uint64_t>(), before)
      << "every event of the thread so far is reflected in the read";

  h.stop();
  const size_t seen = h.log.events().size();
  h.start();
  AgentEvent reread = h.request("thread.read", {{"threadId", thread}});
  EXPECT_GT(reread.payload["result"]["lastSeq"].get<uint64_t>(), before)
      << "after a restart the next seq is above every earlier one";
  h.run_turn(thread, "second");
  const auto events = h.log.events();
  uint64_t last = before;
  size_t after_restart = 0;
  for (size_t i = seen; i < events.size(); ++i) {
    if (events[i].thread_id != thread) continue;
    EXPECT_GT(events[i].seq, last) << events[i].type;
    EXPECT_GT(events[i].seq, reread.payload["result"]["lastSeq"].get<uint64_t>()) << events[i].type;
    last = events[i].seq;
    ++after_restart;
  }
  EXPECT_GT(after_restart, 3u);
}

}  // namespace
}  // namespace keel
