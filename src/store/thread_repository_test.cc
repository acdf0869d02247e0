#include "store/thread_repository.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "keel/error_codes.h"
#include "keel/sqlite_store.h"
#include "keel/store.h"
#include "testing/manual_clock.h"
#include "testing/temp_dir.h"

namespace keel {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

// NewNode has members without default initializers, which g++ 12 flags in designated initializers.
NewNode new_node(std::string id, std::string thread, json body,
                 std::optional<std::string> parent = std::nullopt, NodeKind kind = NodeKind::kNotice,
                 std::optional<std::string> run = std::nullopt) {
  NewNode node;
  node.id = std::move(id);
  node.thread_id = std::move(thread);
  node.kind = kind;
  node.body = std::move(body);
  node.run_id = std::move(run);
  node.parent_id = std::move(parent);
  return node;
}

class ThreadRepositoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store =
        open_sqlite_store(SqliteStoreOptions{.path = dir_.file("t.db"), .synchronous = Synchronous::kOff});
    ASSERT_TRUE(store) << store.error().to_string();
    store_ = std::move(*store);
  }

  std::unique_ptr<Transaction> begin(TxMode mode = TxMode::kWrite) {
    auto tx = store_->begin(mode);
    EXPECT_TRUE(tx) << tx.error().to_string();
    return tx ? std::move(*tx) : nullptr;
  }

  ThreadRecord create(const std::string& id, const std::string& title = "title") {
    auto tx = begin();
    auto thread = repo_.create(*tx, id, title);
    EXPECT_TRUE(thread) << thread.error().to_string();
    EXPECT_TRUE(tx->commit());
    return thread.value_or(ThreadRecord{});
  }

  // Appends a user-ish node in its own committed transaction; returns its id.
  std::string append(const std::string& thread, const std::string& id,
                     std::optional<std::string> parent = std::nullopt) {
    auto tx = begin();
    auto node = repo_.append(*tx, new_node(id, thread, {{"text", id}, {"forModel", false}}, parent));
    EXPECT_TRUE(node) << node.error().to_string();
    EXPECT_TRUE(tx->commit());
    return id;
  }

  ThreadRecord get(const std::string& id) {
    auto tx = begin(TxMode::kRead);
    auto thread = repo_.get(*tx, id);
    EXPECT_TRUE(thread) << thread.error().to_string();
    return thread.value_or(ThreadRecord{});
  }

  std::vector<std::string> path_ids(const std::string& leaf) {
    auto tx = begin(TxMode::kRead);
    auto path = repo_.path_to(*tx, leaf);
    EXPECT_TRUE(path) << path.error().to_string();
    std::vector<std::string> ids;
    for (const NodeRecord& node : path.value_or(std::vector<NodeRecord>{})) ids.push_back(node.id);
    return ids;
  }

  testing::TempDir dir_;
  testing::ManualClock clock_;
  ThreadRepository repo_{clock_};
  std::unique_ptr<Store> store_;
};

TEST_F(ThreadRepositoryTest, CreateThenGet) {
  const int64_t now = clock_.now_unix_ms();
  ThreadRecord created = create("t1", "first");
  EXPECT_EQ(created.id, "t1");
  EXPECT_EQ(created.title, "first");
  EXPECT_FALSE(created.leaf_node_id);
  EXPECT_FALSE(created.parent_thread_id);
  EXPECT_FALSE(created.fork_node_id);
  EXPECT_EQ(created.revision, 1);
  EXPECT_EQ(created.next_node_seq, 1);
  EXPECT_EQ(created.created_at, now);
  EXPECT_EQ(created.updated_at, now);
  EXPECT_FALSE(created.deleted);

  ThreadRecord read = get("t1");
  EXPECT_EQ(read.id, created.id);
  EXPECT_EQ(read.title, created.title);
  EXPECT_EQ(read.revision, created.revision);
}

TEST_F(ThreadRepositoryTest, McpServersAreStoredWithTheThreadClearedByNulloptAndBumpTheRevision) {
  create("t1");
  EXPECT_FALSE(get("t1").mcp_servers.has_value());
  {
    auto tx = begin();
    auto set = repo_.set_mcp_servers(*tx, "t1", std::vector<std::string>{"docs", "mail"});
    ASSERT_TRUE(set) << set.error().to_string();
    EXPECT_EQ(set->revision, 2);
    ASSERT_TRUE(tx->commit());
  }
  ASSERT_TRUE(get("t1").mcp_servers.has_value());
  EXPECT_EQ(*get("t1").mcp_servers, (std::vector<std::string>{"docs", "mail"}));
  {
    auto tx = begin();
    ASSERT_TRUE(repo_.set_mcp_servers(*tx, "t1", std::vector<std::string>{}));
    ASSERT_TRUE(tx->commit());
  }
  ASSERT_TRUE(get("t1").mcp_servers.has_value());
  EXPECT_TRUE(get("t1").mcp_servers->empty());  // none: not the same as every server
  {
    auto tx = begin();
    ASSERT_TRUE(repo_.set_mcp_servers(*tx, "t1", std::nullopt));
    ASSERT_TRUE(tx->commit());
  }
  EXPECT_FALSE(get("t1").mcp_servers.has_value());
}

TEST_F(ThreadRepositoryTest, ADamagedMcpServersColumnIsADecodeErrorNamingTheThread) {
  create("t1");
  for (const std::string damaged : {"not json", "{\"a\": 1}", "[1, 2]"}) {
    {
      auto tx = begin();
      ASSERT_TRUE(tx->execute("UPDATE threads SET mcp_servers = ? WHERE id = 't1'", {damaged}));
      ASSERT_TRUE(tx->commit());
    }
    auto tx = begin(TxMode::kRead);
    auto thread = repo_.get(*tx, "t1");
    ASSERT_FALSE(thread) << damaged;
    EXPECT_EQ(thread.error().code(), codes::kStoreDecode) << damaged;
    EXPECT_NE(thread.error().message().find("t1"), std::string::npos) << thread.error().message();
    auto listed = repo_.list(*tx);
    EXPECT_FALSE(listed) << "a list holding the damaged thread says so";
  }
}

TEST_F(ThreadRepositoryTest, GetUnknownIsThreadNotFound) {
  auto tx = begin(TxMode::kRead);
  auto thread = repo_.get(*tx, "nope");
  ASSERT_FALSE(thread);
  EXPECT_EQ(thread.error().code(), codes::kThreadNotFound);
  auto live = repo_.get_live(*tx, "nope");
  ASSERT_FALSE(live);
  EXPECT_EQ(live.error().code(), codes::kThreadNotFound);
}

TEST_F(ThreadRepositoryTest, CreatingAnExistingIdFails) {
  create("t1");
  auto tx = begin();
  auto again = repo_.create(*tx, "t1", "dup");
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code(), codes::kStoreConstraint);
}

TEST_F(ThreadRepositoryTest, ListIsMostRecentlyUpdatedFirstAndSkipsDeleted) {
  create("t1");
  clock_.advance(milliseconds(10));
  create("t2");
  clock_.advance(milliseconds(10));
  create("t3");
  clock_.advance(milliseconds(10));
  append("t1", "n1");  // t1 is now the most recently updated
  {
    auto tx = begin();
    ASSERT_TRUE(repo_.mark_deleted(*tx, "t2"));
    ASSERT_TRUE(tx->commit());
  }
  auto tx = begin(TxMode::kRead);
  auto threads = repo_.list(*tx);
  ASSERT_TRUE(threads) << threads.error().to_string();
  ASSERT_EQ(threads->size(), 2u);
  EXPECT_EQ((*threads)[0].id, "t1");
  EXPECT_EQ((*threads)[1].id, "t3");
  auto limited = repo_.list(*tx, 1);
  ASSERT_TRUE(limited);
  ASSERT_EQ(limited->size(), 1u);
  EXPECT_EQ((*limited)[0].id, "t1");
}

TEST_F(ThreadRepositoryTest, DeletedThreadRefusesAppendAndStaysReadable) {
  create("t1");
  append("t1", "n1");
  {
    auto tx = begin();
    auto deleted = repo_.mark_deleted(*tx, "t1");
    ASSERT_TRUE(deleted) << deleted.error().to_string();
    EXPECT_TRUE(deleted->deleted);
    const int64_t revision = deleted->revision;
    auto again = repo_.mark_deleted(*tx, "t1");  // idempotent
    ASSERT_TRUE(again);
    EXPECT_EQ(again->revision, revision);
    ASSERT_TRUE(tx->commit());
  }
  auto tx = begin();
  auto appended = repo_.append(*tx, new_node("n2", "t1", {{"text", "x"}, {"forModel", false}}));
  ASSERT_FALSE(appended);
  EXPECT_EQ(appended.error().code(), codes::kThreadDeleted);
  auto live = repo_.get_live(*tx, "t1");
  ASSERT_FALSE(live);
  EXPECT_EQ(live.error().code(), codes::kThreadDeleted);
  auto read = repo_.get(*tx, "t1");
  ASSERT_TRUE(read);
  EXPECT_TRUE(read->deleted);
  // Its nodes stay (forks may share them).
  EXPECT_TRUE(repo_.get_node(*tx, "n1"));
}

TEST_F(ThreadRepositoryTest, AppendMovesTheLeafAndBumpsTheRevisionInTheSameTransaction) {
  create("t1");
  clock_.advance(milliseconds(5));
  auto tx = begin();
  auto first = repo_.append(
      *tx, new_node("n1", "t1", {{"content", json::array()}}, std::nullopt, NodeKind::kUserMessage, "run-1"));
  ASSERT_TRUE(first) << first.error().to_string();
  EXPECT_EQ(first->id, "n1");
  EXPECT_EQ(first->thread_id, "t1");
  EXPECT_FALSE(first->parent_id);
  EXPECT_EQ(first->kind, NodeKind::kUserMessage);
  EXPECT_EQ(first->run_id, "run-1");
  EXPECT_EQ(first->seq, 1);
  EXPECT_EQ(first->created_at, clock_.now_unix_ms());
  // Inside the transaction, before commit, the thread already points at the node.
  auto thread = repo_.get(*tx, "t1");
  ASSERT_TRUE(thread);
  EXPECT_EQ(thread->leaf_node_id, "n1");
  EXPECT_EQ(thread->revision, 2);
  EXPECT_EQ(thread->next_node_seq, 2);
  EXPECT_EQ(thread->updated_at, clock_.now_unix_ms());

  auto second = repo_.append(*tx, new_node("n2", "t1", {{"text", "x"}, {"forModel", true}}));
  ASSERT_TRUE(second);
  EXPECT_EQ(second->parent_id, "n1");
  EXPECT_EQ(second->seq, 2);
  ASSERT_TRUE(tx->commit());

  ThreadRecord after = get("t1");
  EXPECT_EQ(after.leaf_node_id, "n2");
  EXPECT_EQ(after.revision, 3);
  auto read = begin(TxMode::kRead);
  auto node = repo_.get_node(*read, "n2");
  ASSERT_TRUE(node) << node.error().to_string();
  EXPECT_EQ(node->body, json({{"text", "x"}, {"forModel", true}}));
  EXPECT_EQ(node->kind, NodeKind::kNotice);
}

TEST_F(ThreadRepositoryTest, RollbackLeavesNeitherNodeNorLeaf) {
  create("t1");
  append("t1", "n1");
  const ThreadRecord before = get("t1");
  {
    auto tx = begin();
    ASSERT_TRUE(repo_.append(*tx, new_node("n2", "t1", {{"text", "x"}, {"forModel", false}})));
    tx->rollback();
  }
  {
    auto tx = begin();
    ASSERT_TRUE(repo_.append(*tx, new_node("n3", "t1", {{"text", "y"}, {"forModel", false}})));
    // Destroyed without commit: rolled back too.
  }
  const ThreadRecord after = get("t1");
  EXPECT_EQ(after.leaf_node_id, "n1");
  EXPECT_EQ(after.revision, before.revision);
  EXPECT_EQ(after.next_node_seq, before.next_node_seq);
  auto tx = begin(TxMode::kRead);
  for (const char* id : {"n2", "n3"}) {
    auto node = repo_.get_node(*tx, id);
    ASSERT_FALSE(node) << id;
    EXPECT_EQ(node.error().code(), codes::kNodeNotFound);
  }
  auto nodes = repo_.nodes_of(*tx, "t1");
  ASSERT_TRUE(nodes);
  EXPECT_EQ(nodes->size(), 1u);
}

TEST_F(ThreadRepositoryTest, AppendUnderAnEarlierParentStartsABranch) {
  create("t1");
  append("t1", "n1");
  append("t1", "n2");
  append("t1", "n3");
  clock_.advance(milliseconds(1));
  append("t1", "n4", /*parent=*/"n1");
  EXPECT_EQ(get("t1").leaf_node_id, "n4");
  EXPECT_EQ(path_ids("n4"), (std::vector<std::string>{"n1", "n4"}));
  EXPECT_EQ(path_ids("n3"), (std::vector<std::string>{"n1", "n2", "n3"}));

  auto tx = begin(TxMode::kRead);
  auto branches = repo_.list_branches(*tx, "t1");
  ASSERT_TRUE(branches) << branches.error().to_string();
  ASSERT_EQ(branches->size(), 2u);
  EXPECT_EQ((*branches)[0].leaf_node_id, "n3");
  EXPECT_EQ((*branches)[0].leaf_seq, 3);
  EXPECT_FALSE((*branches)[0].selected);
  EXPECT_EQ((*branches)[1].leaf_node_id, "n4");
  EXPECT_EQ((*branches)[1].leaf_seq, 4);
  EXPECT_EQ((*branches)[1].leaf_created_at, clock_.now_unix_ms());
  EXPECT_TRUE((*branches)[1].selected);
}

TEST_F(ThreadRepositoryTest, AppendUnderAnotherThreadsNodeIsNotInThread) {
  create("t1");
  create("t2");
  append("t1", "n1");
  auto tx = begin();
  auto node = repo_.append(*tx, new_node("x", "t2", json::object(), "n1"));
  ASSERT_FALSE(node);
  EXPECT_EQ(node.error().code(), codes::kNodeNotInThread);
  auto unknown = repo_.append(*tx, new_node("y", "t2", json::object(), "zz"));
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code(), codes::kNodeNotInThread);
}

TEST_F(ThreadRepositoryTest, SelectBranch) {
  create("t1");
  create("t2");
  append("t1", "n1");
  append("t1", "n2");
  append("t1", "n3", /*parent=*/"n1");
  append("t2", "other");
  const ThreadRecord before = get("t1");
  ASSERT_EQ(before.leaf_node_id, "n3");

  auto tx = begin();
  auto selected = repo_.select_branch(*tx, "t1", "n2");
  ASSERT_TRUE(selected) << selected.error().to_string();
  EXPECT_EQ(selected->leaf_node_id, "n2");
  EXPECT_EQ(selected->revision, before.revision + 1);

  // Selecting the current leaf changes nothing.
  auto same = repo_.select_branch(*tx, "t1", "n2");
  ASSERT_TRUE(same);
  EXPECT_EQ(same->revision, before.revision + 1);

  auto not_leaf = repo_.select_branch(*tx, "t1", "n1");
  ASSERT_FALSE(not_leaf);
  EXPECT_EQ(not_leaf.error().code(), codes::kNodeNotLeaf);

  auto foreign = repo_.select_branch(*tx, "t1", "other");
  ASSERT_FALSE(foreign);
  EXPECT_EQ(foreign.error().code(), codes::kNodeNotInThread);

  auto unknown = repo_.select_branch(*tx, "t1", "zz");
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code(), codes::kNodeNotFound);
  ASSERT_TRUE(tx->commit());

  EXPECT_EQ(get("t1").leaf_node_id, "n2");
  // Appending continues the selected branch.
  append("t1", "n4");
  EXPECT_EQ(path_ids("n4"), (std::vector<std::string>{"n1", "n2", "n4"}));
}

TEST_F(ThreadRepositoryTest, AppendingAtTheRootStartsABranchThatSharesNoHistory) {
  create("t1");
  append("t1", "n1");
  append("t1", "n2");
  auto tx = begin();
  NewNode root = new_node("r", "t1", {{"text", "r"}, {"forModel", false}}, /*parent=*/"n1");
  root.at_root = true;  // wins over parent_id
  auto appended = repo_.append(*tx, std::move(root));
  ASSERT_TRUE(appended) << appended.error().to_string();
  EXPECT_EQ(appended->parent_id, std::nullopt);
  ASSERT_TRUE(tx->commit());
  EXPECT_EQ(get("t1").leaf_node_id, "r");
  EXPECT_EQ(path_ids("r"), (std::vector<std::string>{"r"}));
  EXPECT_EQ(path_ids("n2"), (std::vector<std::string>{"n1", "n2"})) << "the old branch is intact";
}

TEST_F(ThreadRepositoryTest, IsLeafAndHasChildOfKindDescribeTheTree) {
  create("t1");
  append("t1", "n1");
  append("t1", "n2");
  {
    auto tx = begin();
    ASSERT_TRUE(repo_.append(*tx, new_node("ctx", "t1", {{"turnId", "u"}, {"runId", "r"}, {"model", "m"}},
                                           /*parent=*/"n1", NodeKind::kTurnContext)));
    ASSERT_TRUE(repo_.fork(*tx, "t1", "f1", std::string("n2"), std::nullopt));
    ASSERT_TRUE(tx->commit());
  }
  auto tx = begin(TxMode::kRead);
  const ThreadRecord t1 = *repo_.get(*tx, "t1");
  const ThreadRecord f1 = *repo_.get(*tx, "f1");
  EXPECT_TRUE(*repo_.is_leaf(*tx, t1, "n2"));
  EXPECT_TRUE(*repo_.is_leaf(*tx, t1, "ctx"));
  EXPECT_FALSE(*repo_.is_leaf(*tx, t1, "n1")) << "it has children";
  EXPECT_FALSE(*repo_.is_leaf(*tx, t1, "zz")) << "no such node";
  EXPECT_TRUE(*repo_.is_leaf(*tx, f1, "n2")) << "an empty fork's fork point is its leaf";
  EXPECT_FALSE(*repo_.is_leaf(*tx, f1, "n1")) << "inherited, and not the fork point";
  EXPECT_TRUE(*repo_.has_child_of_kind(*tx, "n1", NodeKind::kTurnContext));
  EXPECT_TRUE(*repo_.has_child_of_kind(*tx, "n1", NodeKind::kNotice));
  EXPECT_FALSE(*repo_.has_child_of_kind(*tx, "n2", NodeKind::kTurnContext));
}

TEST_F(ThreadRepositoryTest, ForkSharesHistoryWithoutCopyingIt) {
  create("t1", "parent title");
  append("t1", "n1");
  append("t1", "n2");
  append("t1", "n3");
  const ThreadRecord parent_before = get("t1");

  {
    auto tx = begin();
    auto fork = repo_.fork(*tx, "t1", "f1", std::string("n2"), std::nullopt);
    ASSERT_TRUE(fork) << fork.error().to_string();
    EXPECT_EQ(fork->id, "f1");
    EXPECT_EQ(fork->title, "parent title");
    EXPECT_EQ(fork->parent_thread_id, "t1");
    EXPECT_EQ(fork->fork_node_id, "n2");
    EXPECT_EQ(fork->leaf_node_id, "n2");
    EXPECT_EQ(fork->next_node_seq, 1);
    ASSERT_TRUE(tx->commit());
  }
  {
    auto tx = begin(TxMode::kRead);
    auto own = repo_.nodes_of(*tx, "f1");
    ASSERT_TRUE(own);
    EXPECT_TRUE(own->empty());  // an empty fork writes no node
    auto branches = repo_.list_branches(*tx, "f1");
    ASSERT_TRUE(branches);
    ASSERT_EQ(branches->size(), 1u);
    EXPECT_EQ((*branches)[0].leaf_node_id, "n2");
    EXPECT_EQ((*branches)[0].leaf_seq, 0);
    EXPECT_TRUE((*branches)[0].selected);
  }
  EXPECT_EQ(path_ids("n2"), (std::vector<std::string>{"n1", "n2"}));

  append("f1", "f-n1");
  append("f1", "f-n2");
  // The fork's path crosses into the parent thread.
  EXPECT_EQ(path_ids("f-n2"), (std::vector<std::string>{"n1", "n2", "f-n1", "f-n2"}));
  const ThreadRecord fork_after = get("f1");
  EXPECT_EQ(fork_after.leaf_node_id, "f-n2");
  // The parent did not change.
  const ThreadRecord parent_after = get("t1");
  EXPECT_EQ(parent_after.leaf_node_id, parent_before.leaf_node_id);
  EXPECT_EQ(parent_after.revision, parent_before.revision);
  auto tx = begin(TxMode::kRead);
  auto parent_nodes = repo_.nodes_of(*tx, "t1");
  ASSERT_TRUE(parent_nodes);
  EXPECT_EQ(parent_nodes->size(), 3u);
  auto node = repo_.get_node(*tx, "f-n1");
  ASSERT_TRUE(node);
  EXPECT_EQ(node->thread_id, "f1");
  EXPECT_EQ(node->parent_id, "n2");
  EXPECT_EQ(node->seq, 1);
}

TEST_F(ThreadRepositoryTest, ForkDefaultsToTheSourceLeafAndRejectsForeignNodes) {
  create("t1");
  create("t2");
  append("t1", "n1");
  append("t2", "other");
  auto tx = begin();
  auto fork = repo_.fork(*tx, "t1", "f1", std::nullopt, std::string("my fork"));
  ASSERT_TRUE(fork) << fork.error().to_string();
  EXPECT_EQ(fork->fork_node_id, "n1");
  EXPECT_EQ(fork->title, "my fork");
  auto foreign = repo_.fork(*tx, "t1", "f2", std::string("other"), std::nullopt);
  ASSERT_FALSE(foreign);
  EXPECT_EQ(foreign.error().code(), codes::kNodeNotInThread);
  auto missing = repo_.fork(*tx, "nope", "f3", std::nullopt, std::nullopt);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code(), codes::kThreadNotFound);
}

TEST_F(ThreadRepositoryTest, ForkOfAForkCrossesTwoGenerations) {
  create("t1");
  append("t1", "a1");
  append("t1", "a2");
  {
    auto tx = begin();
    ASSERT_TRUE(repo_.fork(*tx, "t1", "f1", std::string("a1"), std::nullopt));
    ASSERT_TRUE(tx->commit());
  }
  append("f1", "b1");
  {
    auto tx = begin();
    ASSERT_TRUE(repo_.fork(*tx, "f1", "f2", std::string("b1"), std::nullopt));
    ASSERT_TRUE(tx->commit());
  }
  append("f2", "c1");
  EXPECT_EQ(path_ids("c1"), (std::vector<std::string>{"a1", "b1", "c1"}));
  auto tx = begin(TxMode::kRead);
  const ThreadRecord f2 = *repo_.get(*tx, "f2");
  EXPECT_TRUE(*repo_.contains(*tx, f2, "a1"));
  EXPECT_TRUE(*repo_.contains(*tx, f2, "b1"));
  EXPECT_TRUE(*repo_.contains(*tx, f2, "c1"));
  EXPECT_FALSE(*repo_.contains(*tx, f2, "a2"));
}

TEST_F(ThreadRepositoryTest, Contains) {
  create("t1");
  create("t2");
  append("t1", "n1");
  append("t1", "n2");
  append("t1", "n3", /*parent=*/"n1");
  append("t2", "other");
  {
    auto tx = begin();
    ASSERT_TRUE(repo_.fork(*tx, "t1", "f1", std::string("n2"), std::nullopt));
    ASSERT_TRUE(tx->commit());
  }
  append("f1", "f-n1");
  auto tx = begin(TxMode::kRead);
  const ThreadRecord t1 = *repo_.get(*tx, "t1");
  const ThreadRecord f1 = *repo_.get(*tx, "f1");
  EXPECT_TRUE(*repo_.contains(*tx, t1, "n1"));
  EXPECT_TRUE(*repo_.contains(*tx, t1, "n2"));  // on another branch than the leaf: still in the tree
  EXPECT_TRUE(*repo_.contains(*tx, t1, "n3"));
  EXPECT_FALSE(*repo_.contains(*tx, t1, "other"));
  EXPECT_FALSE(*repo_.contains(*tx, t1, "f-n1"));  // the parent does not contain its fork's nodes
  EXPECT_FALSE(*repo_.contains(*tx, t1, "zz"));
  EXPECT_TRUE(*repo_.contains(*tx, f1, "f-n1"));
  EXPECT_TRUE(*repo_.contains(*tx, f1, "n2"));   // the fork point
  EXPECT_TRUE(*repo_.contains(*tx, f1, "n1"));   // above it
  EXPECT_FALSE(*repo_.contains(*tx, f1, "n3"));  // a parent node not on the inherited path
}

TEST_F(ThreadRepositoryTest, SetTitleAndTouchBumpTheRevision) {
  create("t1", "old");
  clock_.advance(milliseconds(3));
  auto tx = begin();
  auto titled = repo_.set_title(*tx, "t1", "new");
  ASSERT_TRUE(titled);
  EXPECT_EQ(titled->title, "new");
  EXPECT_EQ(titled->revision, 2);
  EXPECT_EQ(titled->updated_at, clock_.now_unix_ms());
  auto touched = repo_.touch(*tx, "t1");
  ASSERT_TRUE(touched);
  EXPECT_EQ(touched->revision, 3);
  EXPECT_FALSE(touched->leaf_node_id);
}

TEST_F(ThreadRepositoryTest, NodesOfListsOwnNodesAfterASeq) {
  create("t1");
  append("t1", "n1");
  append("t1", "n2");
  append("t1", "n3");
  auto tx = begin(TxMode::kRead);
  auto nodes = repo_.nodes_of(*tx, "t1", 1);
  ASSERT_TRUE(nodes);
  ASSERT_EQ(nodes->size(), 2u);
  EXPECT_EQ((*nodes)[0].id, "n2");
  EXPECT_EQ((*nodes)[1].id, "n3");
}

TEST_F(ThreadRepositoryTest, OversizedBodyIsPayloadTooLargeAndWritesNothing) {
  create("t1");
  append("t1", "n1");
  const ThreadRecord before = get("t1");
  auto tx = begin();
  const std::string big(ThreadRepository::kMaxNodeBodyBytes, 'x');
  auto node = repo_.append(*tx, new_node("big", "t1", {{"text", big}}));
  ASSERT_FALSE(node);
  EXPECT_EQ(node.error().code(), codes::kStorePayloadTooLarge);
  ASSERT_TRUE(tx->commit());

  const ThreadRecord after = get("t1");
  EXPECT_EQ(after.leaf_node_id, "n1");
  EXPECT_EQ(after.revision, before.revision);
  auto read = begin(TxMode::kRead);
  auto missing = repo_.get_node(*read, "big");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code(), codes::kNodeNotFound);
}

TEST_F(ThreadRepositoryTest, BodyJustUnderTheLimitIsAccepted) {
  create("t1");
  // {"text":"xxx..."} is 11 bytes of framing around the string.
  const std::string text(ThreadRepository::kMaxNodeBodyBytes - 11, 'x');
  auto tx = begin();
  auto node =
      repo_.append(*tx, new_node("big", "t1", {{"text", text}}, std::nullopt, NodeKind::kTurnContext));
  ASSERT_TRUE(node) << node.error().to_string();
  ASSERT_TRUE(tx->commit());
}

TEST_F(ThreadRepositoryTest, InvalidUtf8InABodyIsRejectedAndWritesNothing) {
  create("t1");
  const ThreadRecord before = get("t1");
  auto tx = begin();
  auto node = repo_.append(*tx, new_node("bad", "t1", {{"text", "caf\xc3"}}));
  ASSERT_FALSE(node);
  EXPECT_EQ(node.error().code(), codes::kJsonInvalidUtf8);
  auto key = repo_.append(*tx, new_node("bad2", "t1", {{"\xff", "x"}}));
  ASSERT_FALSE(key);
  EXPECT_EQ(key.error().code(), codes::kJsonInvalidUtf8);
  ASSERT_TRUE(tx->commit());

  const ThreadRecord after = get("t1");
  EXPECT_FALSE(after.leaf_node_id);
  EXPECT_EQ(after.revision, before.revision);
  auto read = begin(TxMode::kRead);
  auto nodes = repo_.nodes_of(*read, "t1");
  ASSERT_TRUE(nodes);
  EXPECT_TRUE(nodes->empty());
}

TEST_F(ThreadRepositoryTest, PathToUnknownNodeIsNodeNotFound) {
  auto tx = begin(TxMode::kRead);
  auto path = repo_.path_to(*tx, "zz");
  ASSERT_FALSE(path);
  EXPECT_EQ(path.error().code(), codes::kNodeNotFound);
}

TEST_F(ThreadRepositoryTest, AutomaticTitlesNeverReplaceAGivenOne) {
  {
    auto tx = begin();
    ASSERT_TRUE(repo_.create(*tx, "given", "My title", /*title_given=*/true));
    ASSERT_TRUE(repo_.create(*tx, "untitled", "New thread"));
    ASSERT_TRUE(tx->commit());
  }
  auto tx = begin();
  auto kept = repo_.set_title(*tx, "given", "Fallback");
  ASSERT_TRUE(kept) << kept.error().to_string();
  EXPECT_EQ(kept->title, "My title");
  EXPECT_EQ(kept->revision, 1) << "nothing changed";
  auto named = repo_.set_title(*tx, "untitled", "Fallback");
  ASSERT_TRUE(named) << named.error().to_string();
  EXPECT_EQ(named->title, "Fallback");
  // A fork with a title of its own keeps it; one without inherits the source's title and whether it was
  // given.
  auto fork_titled = repo_.fork(*tx, "untitled", "f1", std::nullopt, std::string("Fork"));
  auto fork_inherits = repo_.fork(*tx, "given", "f2", std::nullopt, std::nullopt);
  ASSERT_TRUE(fork_titled && fork_inherits);
  EXPECT_TRUE(fork_titled->title_given);
  EXPECT_TRUE(fork_inherits->title_given);
  EXPECT_EQ(repo_.set_title(*tx, "f1", "Auto")->title, "Fork");
  ASSERT_TRUE(tx->commit());
}

}  // namespace
}  // namespace keel
