// thread.branches through the binary over JSON-RPC: a thread with a second branch (appended under an earlier
// node by the store, as an edited message would be: no op makes one yet, docs/protocol.md *Branches*) is
// listed with both leaves after a restart, thread.selectBranch switches to the other one and thread.branches
// and thread.read follow; unknown threads are refused with thread.not_found.
#include <string>

#include "keel/clock.h"
#include "keel/sqlite_store.h"
#include "serve_fixture.h"
#include "store/thread_repository.h"

namespace keel::e2e {
namespace {

using nlohmann::json;

using ServeBranchesTest = ServeFixture;

// Appends a user message under `parent` in the stopped server's store: the leaf moves to it.
void append_edited_message(const std::filesystem::path& store_path, const std::string& thread,
                           const std::string& parent) {
  auto store = open_sqlite_store(SqliteStoreOptions{.path = store_path});
  ASSERT_TRUE(store) << store.error().to_string();
  SystemClock clock;
  ThreadRepository threads(clock);
  auto tx = (*store)->begin(TxMode::kWrite);
  ASSERT_TRUE(tx) << tx.error().to_string();
  NewNode edited;
  edited.id = "edited-message";
  edited.thread_id = thread;
  edited.kind = NodeKind::kUserMessage;
  edited.body = {{"content", json::array({{{"type", "text"}, {"text", "the question, edited"}}})}};
  edited.parent_id = parent;
  auto node = threads.append(**tx, std::move(edited));
  ASSERT_TRUE(node) << node.error().to_string();
  ASSERT_TRUE((*tx)->commit());
}

TEST_F(ServeBranchesTest, BranchesAreListedAndSelectBranchSwitchesBetweenThem) {
  start_model({{"responses", json::array({response("[q]", json::array({text_step("the first answer")}))})}});
  std::string thread;
  std::string turn_context;
  std::string first_leaf;
  {
    auto [process, client] = serve_stdio();
    ASSERT_NE(client, nullptr);
    thread = create_thread(*client);
    ASSERT_FALSE(submit(*client, thread, "[q] the question").empty());
    client->wait_event(thread, "turn.complete");
    auto one = client->request("thread.branches", {{"threadId", thread}});
    ASSERT_TRUE(one.contains("result")) << one.dump();
    ASSERT_EQ(one["result"]["branches"].size(), 1u) << one.dump();
    EXPECT_EQ(one["result"]["branches"][0]["preview"], "the first answer");
    auto read = client->request("thread.read", {{"threadId", thread}});
    ASSERT_GE(read["result"]["nodes"].size(), 3u) << read.dump();
    turn_context = read["result"]["nodes"][0]["id"];
    first_leaf = read["result"]["leafNodeId"];
    client->disconnect();
    ASSERT_EQ(process->wait_exit(), 0) << process->err();
  }
  append_edited_message(data_dir_ / "keel.db", thread, turn_context);

  auto [process, client] = serve_stdio();
  ASSERT_NE(client, nullptr);
  auto two = client->request("thread.branches", {{"threadId", thread}});
  ASSERT_TRUE(two.contains("result")) << two.dump();
  EXPECT_EQ(two["result"]["selectedLeafNodeId"], "edited-message");
  ASSERT_EQ(two["result"]["branches"].size(), 2u) << two.dump();
  EXPECT_EQ(two["result"]["branches"][0]["leafNodeId"], "edited-message");
  EXPECT_TRUE(two["result"]["branches"][0]["forkNodeId"].is_null());
  EXPECT_EQ(two["result"]["branches"][0]["length"], 2);
  EXPECT_EQ(two["result"]["branches"][1]["leafNodeId"], first_leaf);
  EXPECT_EQ(two["result"]["branches"][1]["forkNodeId"], turn_context);
  EXPECT_EQ(two["result"]["truncated"], false);

  auto selected = client->command("thread.selectBranch", {{"threadId", thread}, {"leafNodeId", first_leaf}});
  ASSERT_TRUE(selected.contains("result")) << selected.dump();
  auto switched = client->request("thread.branches", {{"threadId", thread}});
  EXPECT_EQ(switched["result"]["selectedLeafNodeId"], first_leaf);
  EXPECT_EQ(switched["result"]["branches"][0]["forkNodeId"], turn_context);
  EXPECT_TRUE(switched["result"]["branches"][1]["forkNodeId"].is_null());
  auto read = client->request("thread.read", {{"threadId", thread}});
  EXPECT_EQ(read["result"]["leafNodeId"], first_leaf);

  auto unknown = client->request("thread.branches", {{"threadId", "no-such-thread"}});
  EXPECT_EQ(unknown["error"]["data"]["code"], "thread.not_found") << unknown.dump();
}

}  // namespace
}  // namespace keel::e2e
