#include "engine/thread_views.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "keel/error_codes.h"
#include "keel/sqlite_store.h"
#include "store/node_body.h"
#include "testing/manual_clock.h"
#include "testing/temp_dir.h"

namespace keel {
namespace {

using nlohmann::json;

std::vector<std::string> keys_of(const json& object) {
  std::vector<std::string> keys;
  for (const auto& [key, value] : object.items()) keys.push_back(key);
  return keys;
}

TEST(ThreadViewsTest, AThreadEntryHasThreadListsFieldsAndNullsForWhatIsMissing) {
  ThreadRecord thread;
  thread.id = "t1";
  thread.title = "a title";
  thread.revision = 3;
  thread.updated_at = 42;
  thread.created_at = 7;
  const json entry = thread_entry_json(thread);
  EXPECT_EQ(keys_of(entry), (std::vector<std::string>{"leafNodeId", "mcpServers", "model", "parentThreadId",
                                                      "revision", "threadId", "title", "updatedAt"}));
  EXPECT_TRUE(entry["leafNodeId"].is_null());
  EXPECT_TRUE(entry["parentThreadId"].is_null());
  EXPECT_TRUE(entry["model"].is_null());
  EXPECT_TRUE(entry["mcpServers"].is_null());
  thread.leaf_node_id = "n9";
  thread.parent_thread_id = "t0";
  thread.model = "fast";
  EXPECT_EQ(thread_entry_json(thread)["leafNodeId"], "n9");
  EXPECT_EQ(thread_entry_json(thread)["parentThreadId"], "t0");
  EXPECT_EQ(thread_entry_json(thread)["model"], "fast");
}

TEST(ThreadViewsTest, ARunSummaryNamesItsStateAndStopReason) {
  RunRecord run;
  run.id = "r1";
  run.turn_id = "u1";
  run.state = RunState::kBudgetPaused;
  run.stop_reason = "budget";
  run.usage = {{"inputTokens", 5}};
  EXPECT_EQ(run_summary_json(run), (json{{"runId", "r1"},
                                         {"turnId", "u1"},
                                         {"state", "budget_paused"},
                                         {"stopReason", "budget"},
                                         {"usage", {{"inputTokens", 5}}}}));
}

TEST(ThreadViewsTest, ANodeHasTheProtocolsKeys) {
  NodeRecord node;
  node.id = "n1";
  node.kind = NodeKind::kUserMessage;
  node.body = {{"content", json::array()}};
  node.created_at = 9;
  EXPECT_EQ(node_json(node), (json{{"id", "n1"},
                                   {"kind", "user_message"},
                                   {"runId", nullptr},
                                   {"body", {{"content", json::array()}}},
                                   {"createdAt", 9}}));
}

NodeRecord message_node(NodeKind kind, json content) {
  NodeRecord node;
  node.kind = kind;
  node.body = {{"content", std::move(content)}};
  return node;
}

TEST(ThreadViewsTest, ABranchPreviewIsTheLastMessagesTextCutBetweenCharacters) {
  const json text = {{"type", "text"}, {"text", "first"}};
  std::vector<NodeRecord> path = {message_node(NodeKind::kUserMessage, json::array({text}))};
  EXPECT_EQ(branch_preview(path), "first");
  // A tool result and an assistant message without text are passed over.
  path.push_back(message_node(NodeKind::kAssistantMessage, json::array()));
  path.push_back(message_node(NodeKind::kToolResult, json::array({{{"type", "text"}, {"text", "tool"}}})));
  EXPECT_EQ(branch_preview(path), "first");
  // 130 two-byte characters: the preview keeps 120 of them whole.
  std::string long_text;
  for (int i = 0; i < 130; ++i) long_text += "\u00e9";
  path.push_back(
      message_node(NodeKind::kAssistantMessage, json::array({{{"type", "text"}, {"text", long_text}}})));
  const std::string preview = branch_preview(path);
  EXPECT_EQ(preview.size(), 2 * kBranchPreviewChars);
  EXPECT_EQ(preview, long_text.substr(0, 2 * kBranchPreviewChars));
  EXPECT_EQ(branch_preview({}), "");
}

// A thread on a real store, grown with the repository's appends (branch_turn_test.cc grows branches through
// the engine's turn.submit{parentNodeId}).
class ThreadBranchesViewTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store =
        open_sqlite_store(SqliteStoreOptions{.path = dir_.file("t.db"), .synchronous = Synchronous::kOff});
    ASSERT_TRUE(store) << store.error().to_string();
    store_ = std::move(*store);
    auto tx = store_->begin(TxMode::kWrite);
    ASSERT_TRUE(tx);
    ASSERT_TRUE(repo_.create(**tx, "t1", "title"));
    ASSERT_TRUE((*tx)->commit());
  }

  void add(const std::string& id, std::optional<std::string> parent, NodeKind kind, const std::string& text) {
    clock_.advance(std::chrono::milliseconds(1));
    auto tx = store_->begin(TxMode::kWrite);
    ASSERT_TRUE(tx);
    NewNode node;
    node.id = id;
    node.thread_id = "t1";
    node.kind = kind;
    auto body = kind == NodeKind::kAssistantMessage
                    ? encode_assistant_message(AssistantMessageBody{.content = {ContentBlock{.text = text}}})
                    : encode_user_message(UserMessageBody{.content = {ContentBlock{.text = text}}});
    ASSERT_TRUE(body) << body.error().to_string();
    node.body = std::move(*body);
    node.parent_id = std::move(parent);
    auto appended = repo_.append(**tx, std::move(node));
    ASSERT_TRUE(appended) << appended.error().to_string();
    ASSERT_TRUE((*tx)->commit());
  }

  Result<json> view(const std::string& thread_id = "t1") {
    auto tx = KEEL_TRY(store_->begin(TxMode::kRead));
    return thread_branches_view(*tx, repo_, thread_id);
  }

  testing::TempDir dir_;
  testing::ManualClock clock_;
  ThreadRepository repo_{clock_};
  std::unique_ptr<Store> store_;
};

TEST_F(ThreadBranchesViewTest, ListsEachLeafNewestFirstWithWhereItLeavesTheSelectedBranch) {
  auto empty = view();
  ASSERT_TRUE(empty) << empty.error().to_string();
  EXPECT_EQ(*empty, (json{{"threadId", "t1"},
                          {"selectedLeafNodeId", nullptr},
                          {"branches", json::array()},
                          {"truncated", false}}));

  add("u1", std::nullopt, NodeKind::kUserMessage, "question");
  add("a1", "u1", NodeKind::kAssistantMessage, "first answer");
  add("u2", "a1", NodeKind::kUserMessage, "follow-up");
  add("a2", "u1", NodeKind::kAssistantMessage, "second answer");  // a retried answer: leaf moves here
  auto two = view();
  ASSERT_TRUE(two) << two.error().to_string();
  EXPECT_EQ((*two)["selectedLeafNodeId"], "a2");
  ASSERT_EQ((*two)["branches"].size(), 2u);
  const json& selected = (*two)["branches"][0];
  EXPECT_EQ(selected["leafNodeId"], "a2");
  EXPECT_TRUE(selected["forkNodeId"].is_null());
  EXPECT_EQ(selected["lastNodeKind"], "assistant_message");
  EXPECT_EQ(selected["preview"], "second answer");
  EXPECT_EQ(selected["length"], 2);
  EXPECT_EQ(selected["updatedAt"], clock_.now_unix_ms());
  EXPECT_TRUE(selected["firstNodeId"].is_null());
  EXPECT_TRUE(selected["firstNodeCreatedAt"].is_null());
  const json& other = (*two)["branches"][1];
  EXPECT_EQ(other["leafNodeId"], "u2");
  EXPECT_EQ(other["forkNodeId"], "u1");
  EXPECT_EQ(other["firstNodeId"], "a1") << "where it goes after the fork node";
  EXPECT_EQ(other["firstNodeCreatedAt"], clock_.now_unix_ms() - 2);
  EXPECT_EQ(other["lastNodeKind"], "user_message");
  EXPECT_EQ(other["preview"], "follow-up");
  EXPECT_EQ(other["length"], 3);
  EXPECT_EQ((*two)["truncated"], false);

  // After switching back, the other branch leaves the selected one at the same node.
  {
    auto tx = store_->begin(TxMode::kWrite);
    ASSERT_TRUE(tx);
    ASSERT_TRUE(repo_.select_branch(**tx, "t1", "u2"));
    ASSERT_TRUE((*tx)->commit());
  }
  auto switched = view();
  ASSERT_TRUE(switched);
  EXPECT_EQ((*switched)["selectedLeafNodeId"], "u2");
  EXPECT_EQ((*switched)["branches"][0]["leafNodeId"], "a2");
  EXPECT_EQ((*switched)["branches"][0]["forkNodeId"], "u1");
  EXPECT_EQ((*switched)["branches"][0]["firstNodeId"], "a2");
  EXPECT_TRUE((*switched)["branches"][1]["forkNodeId"].is_null());
}

TEST_F(ThreadBranchesViewTest, ABranchWithARootOfItsOwnSharesNoNodeWithTheSelectedOne) {
  add("u1", std::nullopt, NodeKind::kUserMessage, "question");
  add("a1", "u1", NodeKind::kAssistantMessage, "answer");
  {
    auto tx = store_->begin(TxMode::kWrite);
    ASSERT_TRUE(tx);
    NewNode root;
    root.id = "u1b";
    root.thread_id = "t1";
    root.kind = NodeKind::kUserMessage;
    root.body = *encode_user_message(UserMessageBody{.content = {ContentBlock{.text = "question, edited"}}});
    root.at_root = true;
    ASSERT_TRUE(repo_.append(**tx, std::move(root)));
    ASSERT_TRUE((*tx)->commit());
  }
  auto listed = view();
  ASSERT_TRUE(listed) << listed.error().to_string();
  ASSERT_EQ((*listed)["branches"].size(), 2u);
  EXPECT_EQ((*listed)["selectedLeafNodeId"], "u1b");
  const json& old = (*listed)["branches"][1];
  EXPECT_EQ(old["leafNodeId"], "a1");
  EXPECT_TRUE(old["forkNodeId"].is_null()) << "no node in common";
  EXPECT_EQ(old["firstNodeId"], "u1") << "its own root";
}

TEST_F(ThreadBranchesViewTest, ListsAtMostTheBoundKeepingTheSelectedBranch) {
  add("root", std::nullopt, NodeKind::kUserMessage, "root");
  add("oldest", "root", NodeKind::kAssistantMessage, "oldest");
  for (size_t i = 0; i < kMaxBranchesListed + 5; ++i) {
    add("b" + std::to_string(i), "root", NodeKind::kAssistantMessage, "branch " + std::to_string(i));
  }
  {
    auto tx = store_->begin(TxMode::kWrite);
    ASSERT_TRUE(tx);
    ASSERT_TRUE(repo_.select_branch(**tx, "t1", "oldest"));
    ASSERT_TRUE((*tx)->commit());
  }
  auto listed = view();
  ASSERT_TRUE(listed) << listed.error().to_string();
  const json& branches = (*listed)["branches"];
  ASSERT_EQ(branches.size(), kMaxBranchesListed);
  EXPECT_EQ((*listed)["truncated"], true);
  EXPECT_EQ(branches[0]["leafNodeId"], "b" + std::to_string(kMaxBranchesListed + 4));
  EXPECT_EQ(branches[kMaxBranchesListed - 2]["leafNodeId"], "b6");
  EXPECT_EQ(branches[kMaxBranchesListed - 1]["leafNodeId"], "oldest") << "the selected branch stays listed";
}

TEST_F(ThreadBranchesViewTest, AnUnknownOrDeletedThreadIsRefused) {
  auto unknown = view("nope");
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code(), codes::kThreadNotFound);
  {
    auto tx = store_->begin(TxMode::kWrite);
    ASSERT_TRUE(tx);
    ASSERT_TRUE(repo_.mark_deleted(**tx, "t1"));
    ASSERT_TRUE((*tx)->commit());
  }
  auto deleted = view();
  ASSERT_FALSE(deleted);
  EXPECT_EQ(deleted.error().code(), codes::kThreadDeleted);
}

}  // namespace
}  // namespace keel
