// keel serve killed with SIGKILL and started again on the same data directory: a turn killed mid-stream is
// listed as unfinished and taken up by the engine's recovery until it completes; an approval pending at the
// kill is sent again with `resent: true` and, answered, lets the turn complete; and a second serve on a data
// directory in use refuses to start.
#include <signal.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "serve_fixture.h"

namespace keel::e2e {
namespace {

using nlohmann::json;
using testing::WsTestClient;

const json kHang = {{"type", "hang"}};

json unfinished_turn(const json& init, const std::string& turn) {
  for (const json& run : init["result"]["unfinished"]) {
    if (run.value("turnId", "") == turn) return run;
  }
  return nullptr;
}

using ServeRestartTest = ServeFixture;

TEST_F(ServeRestartTest, TurnKilledMidStreamIsListedUnfinishedAndRecoveryCompletesIt) {
  // First process: the reply streams, then the model goes silent. After the restart the recovered request
  // finds a model that says nothing either, until the test swaps in one that answers (below): so the turn
  // is still unfinished, whatever the timing, when the new client asks.
  start_model({{"responses",
                json::array({response(std::nullopt, json::array({text_step("before the crash ", 4), kHang})),
                             response(std::nullopt, json::array({kHang}))})}});
  const uint16_t model_port = model().port();
  auto first = serve_stdio();
  ASSERT_NE(first.client, nullptr);
  const std::string thread = create_thread(*first.client);
  const std::string turn = submit(*first.client, thread, "[crash] work on it");
  ASSERT_FALSE(turn.empty());
  first.client->wait_event(thread, "item.delta");
  first.process->signal(SIGKILL);
  ASSERT_EQ(first.process->wait_exit(), 128 + SIGKILL);
  uint64_t seq_before_kill = 0;
  for (const json& event : first.client->events(thread))
    seq_before_kill = std::max<uint64_t>(seq_before_kill, event["seq"]);
  ASSERT_GT(seq_before_kill, 0u);

  auto second = serve_stdio();
  ASSERT_NE(second.client, nullptr);
  auto init = second.client->request("initialize", {{"subscribe", true}});
  ASSERT_TRUE(init.contains("result")) << init.dump();
  const json listed = unfinished_turn(init, turn);
  ASSERT_FALSE(listed.is_null()) << "the killed turn is not listed as unfinished: " << init.dump();
  EXPECT_EQ(listed["threadId"], thread);
  EXPECT_EQ(listed["canContinue"], false) << "recovery takes it up by itself";

  // The model answers now. The request that was waiting is dropped with nothing sent, which the provider
  // retries: the retry reaches the new server.
  model().stop();
  start_model({{"responses",
                json::array({response(std::nullopt, json::array({text_step("after the restart", 5)}))})}},
              model_port);
  auto complete = second.client->wait_event(thread, "turn.complete");
  EXPECT_EQ(complete["payload"]["turnId"], turn);
  EXPECT_EQ(complete["payload"]["stopReason"], "end") << complete.dump();
  auto start = second.client->wait_event(thread, "turn.start");
  EXPECT_EQ(start["payload"]["turnId"], turn);
  EXPECT_EQ(start["payload"]["recovered"], true) << start.dump();
  ASSERT_EQ(model().requests().size(), 1u);
  EXPECT_EQ(last_user_text(model().requests()[0]), "[crash] work on it");
  EXPECT_TRUE(second.process->wait_stderr("(recovered after a restart)")) << second.process->err();

  // The reply is on the thread, once, and nothing is unfinished any more.
  auto read = second.client->request("thread.read", {{"threadId", thread}});
  ASSERT_TRUE(read.contains("result")) << read.dump();
  size_t users = 0;
  std::string replies;
  for (const json& node : read["result"]["nodes"]) {
    users += node["kind"] == "user_message";
    if (node["kind"] == "assistant_message") replies += node["body"].dump();
  }
  EXPECT_EQ(users, 1u);
  EXPECT_NE(replies.find("after the restart"), std::string::npos) << read.dump();
  // Seqs go on above the killed process's, so a client can tell new events from ones it has seen; the read
  // names the last seq it reflects.
  for (const json& event : second.client->events(thread))
    EXPECT_GT(event["seq"].get<uint64_t>(), seq_before_kill) << event.dump();
  EXPECT_GT(read["result"]["lastSeq"].get<uint64_t>(), seq_before_kill);
  EXPECT_GE(read["result"]["lastSeq"].get<uint64_t>(), complete["seq"].get<uint64_t>());
  EXPECT_EQ(second.client->request("initialize", {{"subscribe", false}})["result"]["unfinished"],
            json::array());
}

// Issue 14 point 5: turn.interrupt is answered only once the interrupted state is committed. On the wire
// the answer follows the run.updated {state: interrupted} that reports the commit, and a process killed
// right after the answer finds the run interrupted after the restart: listed as one the user can continue,
// never taken up by recovery.
TEST_F(ServeRestartTest, InterruptAnsweredRightBeforeAKillLeavesTheRunInterruptedAfterTheRestart) {
  start_model({{"responses",
                json::array({response(std::nullopt, json::array({text_step("thinking ", 4), kHang}))})}});
  auto first = serve_stdio();
  ASSERT_NE(first.client, nullptr);
  const std::string thread = create_thread(*first.client);
  const std::string turn = submit(*first.client, thread, "work on it");
  ASSERT_FALSE(turn.empty());
  first.client->wait_event(thread, "item.delta");
  const json answer = first.client->request("turn.interrupt", {{"threadId", thread}});
  first.process->signal(SIGKILL);
  ASSERT_EQ(first.process->wait_exit(), 128 + SIGKILL);
  ASSERT_TRUE(answer.contains("result")) << answer.dump();
  EXPECT_EQ(answer["result"]["interrupted"], true);
  EXPECT_EQ(answer["result"]["turnId"], turn);
  bool committed_before_answer = false;
  for (const json& message : first.client->received()) {
    if (message.contains("id") && message["id"] == answer["id"]) break;
    if (message.value("method", "") == "event" && message["params"].value("type", "") == "run.updated" &&
        message["params"]["payload"].value("state", "") == "interrupted") {
      committed_before_answer = true;
    }
  }
  EXPECT_TRUE(committed_before_answer) << "turn.interrupt was answered before its state was committed";

  auto second = serve_stdio();
  ASSERT_NE(second.client, nullptr);
  auto init = second.client->request("initialize", {{"subscribe", true}});
  ASSERT_TRUE(init.contains("result")) << init.dump();
  const json listed = unfinished_turn(init, turn);
  ASSERT_FALSE(listed.is_null()) << init.dump();
  EXPECT_EQ(listed["state"], "interrupted")
      << "the ACKed interrupt was lost: recovery takes the turn up again";
  EXPECT_EQ(listed["canContinue"], true);
  auto read = second.client->request("thread.read", {{"threadId", thread}});
  ASSERT_TRUE(read.contains("result")) << read.dump();
  EXPECT_EQ(read["result"]["latestRun"]["state"], "interrupted");
  EXPECT_EQ(model().requests().size(), 1u) << "the interrupted turn asked the model again";
}

TEST_F(ServeRestartTest, ApprovalPendingAtTheKillIsResentAfterTheRestartAndTheTurnCompletes) {
  const std::string content = "approved after a restart\n";
  start_model(
      {{"responses",
        json::array({response("[write]", json::array({write_file_call("call_k", "kept.txt", content)})),
                     response(std::nullopt, json::array({text_step("Written after the restart.")}))})}});
  auto [process, port] = serve_listen();
  ASSERT_NE(port, 0);
  WsTestClient& before = connect(port);
  const std::string thread = create_thread(before);
  const std::string turn = submit(before, thread, "[write] keep this");
  ASSERT_FALSE(turn.empty());
  auto asked = before.wait_event(thread, "approval.request");
  const std::string approval = asked["payload"]["approvalId"];
  process->signal(SIGKILL);
  ASSERT_EQ(process->wait_exit(), 128 + SIGKILL);
  EXPECT_TRUE(before.wait_closed());

  auto [restarted, new_port] = serve_listen();
  ASSERT_NE(new_port, 0);
  WsTestClient& after = connect(new_port);
  auto init = after.request("initialize", {{"subscribe", true}});
  ASSERT_TRUE(init.contains("result")) << init.dump();
  const json listed = unfinished_turn(init, turn);
  ASSERT_FALSE(listed.is_null()) << init.dump();
  EXPECT_EQ(listed["state"], "waiting_approval");
  auto resent = after.wait_event(thread, "approval.request");
  EXPECT_EQ(resent["payload"]["approvalId"], approval);
  EXPECT_EQ(resent["payload"]["resent"], true);
  EXPECT_EQ(resent["payload"]["arguments"], asked["payload"]["arguments"]);
  EXPECT_FALSE(std::filesystem::exists(workspace_ / "kept.txt"));

  auto accepted = after.command("approval.response",
                                {{"threadId", thread}, {"approvalId", approval}, {"decision", "accept"}});
  ASSERT_TRUE(accepted.contains("result")) << accepted.dump();
  auto complete = after.wait_event(thread, "turn.complete");
  EXPECT_EQ(complete["payload"]["turnId"], turn);
  EXPECT_EQ(complete["payload"]["stopReason"], "end");
  std::ifstream written(workspace_ / "kept.txt");
  std::stringstream text;
  text << written.rdbuf();
  EXPECT_EQ(text.str(), content);
  EXPECT_EQ(model().requests().size(), 2u);
  EXPECT_TRUE(restarted->running());
}

TEST_F(ServeRestartTest, SecondServeOnADataDirInUseExitsWithStoreInUse) {
  start_model(unused_script());
  auto [process, port] = serve_listen();
  ASSERT_NE(port, 0);
  ServeProcess& second = spawn({"--stdio"});
  const auto status = second.wait_exit();
  ASSERT_TRUE(status.has_value());
  EXPECT_NE(*status, 0);
  EXPECT_NE(second.err().find("host.store_in_use"), std::string::npos) << second.err();
  // The first one is untouched.
  EXPECT_TRUE(process->running());
  WsTestClient& client = connect(port);
  EXPECT_TRUE(client.request("thread.list").contains("result"));
}

}  // namespace
}  // namespace keel::e2e
