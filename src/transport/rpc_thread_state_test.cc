// What a (reconnecting) client learns about a thread through JSON-RPC, over each transport (issue 14): the
// title it gave at thread.create stays, budgets out of range get coded errors, queue.list shows the queue and
// queue.remove takes an entry out under a receipt, and thread.read names the last seq it reflects.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "engine/engine_core.h"
#include "transport/rpc_transport_fixture.h"

namespace keel::testing {
namespace {

using nlohmann::json;

using RpcThreadStateTest = RpcTransportFixture;

TEST_P(RpcThreadStateTest, ATitleGivenAtCreateSurvivesTheFirstTurn) {
  RpcTestClient& client = connect();
  auto created = client.command("thread.create", {{"title", "Kept title"}});
  ASSERT_TRUE(created.contains("result")) << created.dump();
  const std::string thread = created["result"]["threadId"];
  h.provider.push(ScriptedResponse::text("answer"));
  ASSERT_TRUE(client.command("turn.submit", {{"threadId", thread}, {"input", "Some first message"}})
                  .contains("result"));
  client.wait_event(thread, "turn.complete");
  auto read = client.request("thread.read", {{"threadId", thread}});
  ASSERT_TRUE(read.contains("result")) << read.dump();
  EXPECT_EQ(read["result"]["title"], "Kept title");
  auto listed = client.request("thread.list");
  ASSERT_EQ(listed["result"]["threads"].size(), 1u);
  EXPECT_EQ(listed["result"]["threads"][0]["title"], "Kept title");
}

TEST_P(RpcThreadStateTest, BudgetsOutOfRangeGetCodedErrors) {
  RpcTestClient& client = connect();
  const std::string thread = create_thread(client);
  auto too_big = client.command(
      "turn.submit", {{"threadId", thread}, {"input", "x"}, {"budgetTokens", kMaxBudgetTokens + 1}});
  ASSERT_TRUE(too_big.contains("error")) << too_big.dump();
  EXPECT_EQ(too_big["error"]["data"]["code"],
            "rpc.invalid_params");  // the schema refuses it before the engine
  h.provider.push(ScriptedResponse::tool_calls({{"c1", "echo", "{}"}}).with_usage(80, 40));
  ASSERT_TRUE(client.command("turn.submit", {{"threadId", thread}, {"input", "go"}, {"budgetTokens", 100}})
                  .contains("result"));
  auto paused = client.wait_event(thread, "turn.complete");
  ASSERT_EQ(paused["payload"]["stopReason"], "budget_pause");
  auto overflow = client.request(
      "run.resume", {{"threadId", thread}, {"additionalBudgetTokens", std::numeric_limits<int64_t>::max()}});
  ASSERT_TRUE(overflow.contains("error")) << overflow.dump();
  EXPECT_EQ(overflow["error"]["data"]["code"], "rpc.invalid_params");
  EXPECT_EQ(h.run(paused["payload"]["runId"]).budget_tokens, 100);
}

TEST_P(RpcThreadStateTest, QueueListShowsTheQueueAndQueueRemoveIsReceipted) {
  RpcTestClient& client = connect();
  const std::string thread = create_thread(client);
  h.provider.push(ScriptedResponse::stall());
  ASSERT_TRUE(client.command("turn.submit", {{"threadId", thread}, {"input", "long"}}).contains("result"));
  auto first = client.command("turn.enqueue", {{"threadId", thread}, {"input", "first"}});
  auto second = client.command("turn.enqueue", {{"threadId", thread}, {"input", "second"}});
  ASSERT_TRUE(second.contains("result")) << second.dump();

  // A client that connects now learns the queue without having seen any queue.updated.
  RpcTestClient& late = connect();
  auto listed = late.request("queue.list", {{"threadId", thread}});
  ASSERT_TRUE(listed.contains("result")) << listed.dump();
  ASSERT_EQ(listed["result"]["items"].size(), 2u) << listed.dump();
  EXPECT_EQ(listed["result"]["items"][0]["itemId"], first["result"]["itemId"]);
  EXPECT_EQ(listed["result"]["items"][1]["input"], "second");
  EXPECT_EQ(listed["result"]["revision"], second["result"]["revision"]);

  const json remove = {{"threadId", thread}, {"itemId", first["result"]["itemId"]}, {"submissionId", "rm-1"}};
  auto removed = late.request("queue.remove", remove);
  ASSERT_TRUE(removed.contains("result")) << removed.dump();
  EXPECT_EQ(removed["result"]["queueLength"], 1);
  auto replayed = late.request("queue.remove", remove);
  ASSERT_TRUE(replayed.contains("result"))
      << "a retry under the same submission is answered from its receipt";
  EXPECT_EQ(replayed["result"].value("replayed", false), true);
  json first_answer = replayed["result"];
  first_answer.erase("replayed");
  EXPECT_EQ(first_answer, removed["result"]);
  auto left = late.request("queue.list", {{"threadId", thread}});
  ASSERT_EQ(left["result"]["items"].size(), 1u);
  EXPECT_EQ(left["result"]["items"][0]["input"], "second");
  auto missing = late.request("queue.list", {});
  ASSERT_TRUE(missing.contains("error")) << missing.dump();
  client.request("turn.interrupt", {{"threadId", thread}});
  client.wait_event(thread, "turn.complete");
}

TEST_P(RpcThreadStateTest, ThreadReadNamesTheLastSeqItReflects) {
  RpcTestClient& client = connect();
  ASSERT_TRUE(client.request("initialize", {{"subscribe", true}}).contains("result"));
  const std::string thread = create_thread(client);
  h.provider.push(ScriptedResponse::text("hello"));
  ASSERT_TRUE(client.command("turn.submit", {{"threadId", thread}, {"input", "hi"}}).contains("result"));
  auto complete = client.wait_event(thread, "turn.complete");
  auto read = client.request("thread.read", {{"threadId", thread}});
  ASSERT_TRUE(read.contains("result")) << read.dump();
  const uint64_t last_seq = read["result"]["lastSeq"];
  EXPECT_GE(last_seq, complete["seq"].get<uint64_t>()) << "the completed turn is in the read";
  h.provider.push(ScriptedResponse::text("again"));
  ASSERT_TRUE(client.command("turn.submit", {{"threadId", thread}, {"input", "more"}}).contains("result"));
  auto next = client.wait_event(thread, "turn.start", 2);
  EXPECT_GT(next["seq"].get<uint64_t>(), last_seq) << "what happens after the read comes above its lastSeq";
  client.wait_event(thread, "turn.complete", 2);
}

INSTANTIATE_TEST_SUITE_P(Transports, RpcThreadStateTest,
                         ::testing::Values(TransportKind::kStdioSocket, TransportKind::kStdioPipes,
                                           TransportKind::kWebSocket),
                         transport_name);

}  // namespace
}  // namespace keel::testing
