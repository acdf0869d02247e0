// Branches through the binary over JSON-RPC: turn.submit{parentNodeId} sends the second question again,
// edited, as a new branch (thread.updated says where the leaf went, the model answers the edited question);
// after a restart thread.branches lists both leaves, thread.selectBranch switches back to the old one and
// thread.branches and thread.read follow; unknown threads are refused with thread.not_found.
#include <string>

#include "serve_fixture.h"

namespace keel::e2e {
namespace {

using nlohmann::json;

using ServeBranchesTest = ServeFixture;

// The text of the last assistant message on a thread.read's path.
std::string last_answer(const json& read) {
  std::string text;
  for (const json& node : read["result"]["nodes"]) {
    if (node["kind"] != "assistant_message") continue;
    text.clear();
    for (const json& block : node["body"]["content"]) text += block.value("text", "");
  }
  return text;
}

TEST_F(ServeBranchesTest, AnEditedMessageMakesABranchAndSelectBranchSwitchesBetweenThem) {
  start_model(
      {{"responses", json::array({response("[one]", json::array({text_step("the first answer")})),
                                  response("[two]", json::array({text_step("the second answer")})),
                                  response("[edited]", json::array({text_step("the edited answer")}))})}});
  std::string thread;
  std::string first_answer;
  std::string old_leaf;
  std::string new_leaf;
  {
    auto [process, client] = serve_stdio();
    ASSERT_NE(client, nullptr);
    thread = create_thread(*client);
    ASSERT_FALSE(submit(*client, thread, "[one] the first question").empty());
    client->wait_event(thread, "turn.complete");
    ASSERT_FALSE(submit(*client, thread, "[two] the second question").empty());
    client->wait_event(thread, "turn.complete", 2);
    auto one = client->request("thread.branches", {{"threadId", thread}});
    ASSERT_TRUE(one.contains("result")) << one.dump();
    ASSERT_EQ(one["result"]["branches"].size(), 1u) << one.dump();
    auto read = client->request("thread.read", {{"threadId", thread}});
    const json& nodes = read["result"]["nodes"];
    ASSERT_EQ(nodes.size(), 6u) << read.dump();
    ASSERT_EQ(nodes[2]["kind"], "assistant_message");
    first_answer = nodes[2]["id"];
    old_leaf = read["result"]["leafNodeId"];

    auto edited = client->command("turn.submit", {{"threadId", thread},
                                                  {"input", "[edited] the second question, edited"},
                                                  {"parentNodeId", first_answer}});
    ASSERT_TRUE(edited.contains("result")) << edited.dump();
    // The thread's first turn titled it (a thread.updated too): the one that says where the leaf went.
    const json user_node = edited["result"]["userNodeId"];
    EXPECT_TRUE(client->wait_until([&](const std::vector<json>& received) {
      for (const json& message : received) {
        if (!message.is_object() || message.value("method", "") != "event") continue;
        const json& event = message["params"];
        if (event["type"] == "thread.updated" && event["payload"].value("leafNodeId", json()) == user_node)
          return true;
      }
      return false;
    })) << "no thread.updated for the new branch";
    client->wait_event(thread, "turn.complete", 3);
    auto branched = client->request("thread.read", {{"threadId", thread}});
    EXPECT_EQ(last_answer(branched), "the edited answer");
    new_leaf = branched["result"]["leafNodeId"];
    client->disconnect();
    ASSERT_EQ(process->wait_exit(), 0) << process->err();
  }

  auto [process, client] = serve_stdio();
  ASSERT_NE(client, nullptr);
  auto two = client->request("thread.branches", {{"threadId", thread}});
  ASSERT_TRUE(two.contains("result")) << two.dump();
  EXPECT_EQ(two["result"]["selectedLeafNodeId"], new_leaf);
  ASSERT_EQ(two["result"]["branches"].size(), 2u) << two.dump();
  EXPECT_EQ(two["result"]["branches"][0]["leafNodeId"], new_leaf);
  EXPECT_TRUE(two["result"]["branches"][0]["forkNodeId"].is_null());
  EXPECT_EQ(two["result"]["branches"][0]["length"], 6);
  EXPECT_EQ(two["result"]["branches"][1]["leafNodeId"], old_leaf);
  EXPECT_EQ(two["result"]["branches"][1]["forkNodeId"], first_answer);
  EXPECT_EQ(two["result"]["branches"][1]["preview"], "the second answer");
  EXPECT_EQ(two["result"]["truncated"], false);

  auto selected = client->command("thread.selectBranch", {{"threadId", thread}, {"leafNodeId", old_leaf}});
  ASSERT_TRUE(selected.contains("result")) << selected.dump();
  auto switched = client->request("thread.branches", {{"threadId", thread}});
  EXPECT_EQ(switched["result"]["selectedLeafNodeId"], old_leaf);
  EXPECT_EQ(switched["result"]["branches"][0]["forkNodeId"], first_answer);
  EXPECT_TRUE(switched["result"]["branches"][1]["forkNodeId"].is_null());
  auto read = client->request("thread.read", {{"threadId", thread}});
  EXPECT_EQ(read["result"]["leafNodeId"], old_leaf);
  EXPECT_EQ(last_answer(read), "the second answer");

  auto unknown = client->request("thread.branches", {{"threadId", "no-such-thread"}});
  EXPECT_EQ(unknown["error"]["data"]["code"], "thread.not_found") << unknown.dump();
}

}  // namespace
}  // namespace keel::e2e
