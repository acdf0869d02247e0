// Tests of the §5.1 command units: receipts, replay, drift, rollback, and the commands themselves.
#include "store/commands.h"

#include <gtest/gtest.h>

#include "keel/error_codes.h"
#include "keel/sqlite_store.h"
#include "store/thread_repository.h"
#include "testing/manual_clock.h"
#include "testing/sequential_ids.h"
#include "testing/temp_dir.h"
#include "util/fail_points.h"

namespace keel {
namespace {

using nlohmann::json;

class CommandsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto opened = open_sqlite_store(SqliteStoreOptions{
        .path = dir_.file("keel.db"), .synchronous = Synchronous::kOff, .fail_points = &fail_points_});
    ASSERT_TRUE(opened) << opened.error().to_string();
    store_ = std::move(opened).value();
    commands_ = std::make_unique<StoreCommands>(*store_, clock_, ids_);
  }

  CommandResult run(const std::string& submission, const std::string& type, json payload) {
    const protocol::OpSpec* op = protocol::find_op(type);
    EXPECT_NE(op, nullptr) << type;
    auto result = commands_->execute(
        {"client-a", submission, op ? op->kind : protocol::OpKind::kInitialize, std::move(payload)});
    EXPECT_TRUE(result) << result.error().to_string();
    return result ? *result : CommandResult{};
  }

  std::string create_thread(const std::string& submission = "s-create") {
    return run(submission, "thread.create", {{"title", "t"}}).outcome.result["threadId"].get<std::string>();
  }

  int64_t count(const std::string& sql) {
    auto tx = store_->begin(TxMode::kRead);
    EXPECT_TRUE(tx);
    auto row = (*tx)->query_one(sql);
    EXPECT_TRUE(row && *row);
    return (*row)->integer(0);
  }

  NodeRecord append(const std::string& thread_id, NodeKind kind,
                    std::optional<std::string> parent = std::nullopt) {
    ThreadRepository threads(clock_);
    auto tx = store_->begin(TxMode::kWrite);
    EXPECT_TRUE(tx);
    json body = json::object();
    if (kind == NodeKind::kUserMessage || kind == NodeKind::kAssistantMessage) {
      body = {{"content", json::array({{{"type", "text"}, {"text", "x"}}})}};
      if (kind == NodeKind::kAssistantMessage)
        body["stopReason"] = "end", body["providerStopReason"] = "stop";
    }
    auto node = threads.append(**tx, {ids_.next_id(), thread_id, kind, body, std::nullopt, parent});
    EXPECT_TRUE(node) << node.error().to_string();
    EXPECT_TRUE((*tx)->commit());
    return *node;
  }

  testing::TempDir dir_;
  testing::ManualClock clock_;
  testing::SequentialIdSource ids_{"n"};
  FailPoints fail_points_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<StoreCommands> commands_;
};

TEST_F(CommandsTest, CreateThreadAcksWithTheNewThreadAndWritesOneReceipt) {
  CommandResult result = run("s1", "thread.create", {{"title", "Trip"}});
  EXPECT_TRUE(result.outcome.accepted);
  EXPECT_FALSE(result.replayed);
  EXPECT_TRUE(result.outcome.result["threadId"].is_string());
  EXPECT_EQ(count("SELECT count(*) FROM threads"), 1);
  EXPECT_EQ(count("SELECT count(*) FROM receipts"), 1);
}

TEST_F(CommandsTest, DuplicateSubmissionReplaysTheStoredOutcomeWithoutApplyingAgain) {
  CommandResult first = run("s1", "thread.create", {{"title", "Trip"}});
  CommandResult second = run("s1", "thread.create", {{"title", "Trip"}});
  EXPECT_TRUE(second.replayed);
  EXPECT_EQ(second.outcome.result, first.outcome.result);
  EXPECT_EQ(count("SELECT count(*) FROM threads"), 1);
  EXPECT_EQ(count("SELECT count(*) FROM receipts"), 1);
}

TEST_F(CommandsTest, DuplicateIsReplayedAfterTheStoreIsReopened) {
  CommandResult first = run("s1", "thread.create", {{"title", "Trip"}});
  commands_.reset();
  store_.reset();
  SetUp();
  CommandResult second = run("s1", "thread.create", {{"title", "Trip"}});
  EXPECT_TRUE(second.replayed);
  EXPECT_EQ(second.outcome.result, first.outcome.result);
}

TEST_F(CommandsTest, SameSubmissionIdWithADifferentPayloadIsRejectedAsConflict) {
  run("s1", "thread.create", {{"title", "Trip"}});
  auto drifted =
      commands_->execute({"client-a", "s1", protocol::OpKind::kThreadCreate, {{"title", "Other"}}});
  ASSERT_FALSE(drifted);
  EXPECT_EQ(drifted.error().code(), codes::kSubmissionConflict);
  EXPECT_EQ(count("SELECT count(*) FROM threads"), 1);
}

TEST_F(CommandsTest, SameSubmissionIdForAnotherCommandTypeIsRejectedAsConflict) {
  std::string thread_id = create_thread("s1");
  auto drifted =
      commands_->execute({"client-a", "s1", protocol::OpKind::kThreadDelete, {{"threadId", thread_id}}});
  ASSERT_FALSE(drifted);
  EXPECT_EQ(drifted.error().code(), codes::kSubmissionConflict);
}

TEST_F(CommandsTest, SubmissionIdsAreScopedByClient) {
  run("s1", "thread.create", {{"title", "Trip"}});
  auto other = commands_->execute({"client-b", "s1", protocol::OpKind::kThreadCreate, {{"title", "Other"}}});
  ASSERT_TRUE(other);
  EXPECT_FALSE(other->replayed);
  EXPECT_EQ(count("SELECT count(*) FROM threads"), 2);
}

TEST_F(CommandsTest, FingerprintExcludesTransportIdentityAndKeyOrder) {
  auto a = make_command_context("c", "s", "thread.create", {{"title", "x"}, {"b", 1}});
  auto b = make_command_context("c", "s", "thread.create",
                                json::parse(R"({"b":1.0,"submissionId":"s","clientId":"c","title":"x"})"));
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->fingerprint, b->fingerprint);
  auto c = make_command_context("c", "s", "thread.create", {{"title", "y"}, {"b", 1}});
  ASSERT_TRUE(c);
  EXPECT_NE(a->fingerprint, c->fingerprint);
}

TEST_F(CommandsTest, EmptyOrOverlongIdsAreInvalidArguments) {
  EXPECT_EQ(commands_->execute({"", "s", protocol::OpKind::kThreadCreate, json::object()}).error().code(),
            codes::kInvalidArgument);
  EXPECT_EQ(commands_->execute({"c", "", protocol::OpKind::kThreadCreate, json::object()}).error().code(),
            codes::kInvalidArgument);
  EXPECT_EQ(commands_
                ->execute({"c", std::string(kMaxCommandIdBytes + 1, 'x'), protocol::OpKind::kThreadCreate,
                           json::object()})
                .error()
                .code(),
            codes::kInvalidArgument);
  EXPECT_EQ(commands_->execute({"c", "s", protocol::OpKind::kTurnSubmit, json::object()}).error().code(),
            codes::kInvalidArgument);
  EXPECT_EQ(count("SELECT count(*) FROM receipts"), 0);
}

TEST_F(CommandsTest, FailedReceiptWriteRollsBackTheDomainChange) {
  fail_points_.arm("receipts.insert", FailPoints::Action::kError);
  auto failed = commands_->execute({"client-a", "s1", protocol::OpKind::kThreadCreate, {{"title", "Trip"}}});
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().code(), codes::kFailPoint);
  EXPECT_EQ(count("SELECT count(*) FROM threads"), 0);
  EXPECT_EQ(count("SELECT count(*) FROM receipts"), 0);
  // Nothing was recorded, so the same submission may be retried and now applies once.
  CommandResult retried = run("s1", "thread.create", {{"title", "Trip"}});
  EXPECT_FALSE(retried.replayed);
  EXPECT_EQ(count("SELECT count(*) FROM threads"), 1);
}

TEST_F(CommandsTest, FailedCommitRecordsNothingAndTheSubmissionCanBeRetried) {
  fail_points_.arm("store.commit", FailPoints::Action::kError);
  auto failed = commands_->execute({"client-a", "s1", protocol::OpKind::kThreadCreate, {{"title", "Trip"}}});
  ASSERT_FALSE(failed);
  EXPECT_EQ(count("SELECT count(*) FROM threads"), 0);
  EXPECT_TRUE(run("s1", "thread.create", {{"title", "Trip"}}).outcome.accepted);
}

TEST_F(CommandsTest, DeterministicRejectionIsRecordedAndReplayed) {
  CommandResult rejected = run("s1", "thread.delete", {{"threadId", "no-such-thread"}});
  EXPECT_FALSE(rejected.outcome.accepted);
  ASSERT_TRUE(rejected.outcome.rejection);
  EXPECT_EQ(rejected.outcome.rejection->code(), codes::kThreadNotFound);
  CommandResult again = run("s1", "thread.delete", {{"threadId", "no-such-thread"}});
  EXPECT_TRUE(again.replayed);
  EXPECT_EQ(again.outcome.rejection->code(), codes::kThreadNotFound);
}

TEST_F(CommandsTest, MalformedPayloadIsRejectedWithInvalidArgument) {
  CommandResult rejected = run("s1", "thread.selectBranch", {{"threadId", 42}});
  ASSERT_FALSE(rejected.outcome.accepted);
  EXPECT_EQ(rejected.outcome.rejection->code(), codes::kInvalidArgument);
  EXPECT_EQ(run("s2", "thread.create", json::array()).outcome.rejection->code(), codes::kInvalidArgument);
}

TEST_F(CommandsTest, ReceiptKeepsTheOutcomeButNeverThePayload) {
  std::string thread_id = create_thread();
  run("s-enq", "turn.enqueue", {{"threadId", thread_id}, {"input", "a-secret-payload-text"}});
  EXPECT_EQ(count("SELECT count(*) FROM receipts WHERE outcome LIKE '%a-secret-payload-text%'"), 0);
  EXPECT_EQ(count("SELECT count(*) FROM receipts WHERE command_type = 'turn.enqueue'"), 1);
}

TEST_F(CommandsTest, DeleteMarksTheThreadDeleted) {
  std::string thread_id = create_thread();
  CommandResult deleted = run("s-del", "thread.delete", {{"threadId", thread_id}});
  EXPECT_TRUE(deleted.outcome.accepted);
  EXPECT_EQ(count("SELECT deleted FROM threads"), 1);
  CommandResult enqueue = run("s-enq", "turn.enqueue", {{"threadId", thread_id}, {"input", "x"}});
  EXPECT_EQ(enqueue.outcome.rejection->code(), codes::kThreadDeleted);
}

TEST_F(CommandsTest, SetModelPersistsTheChoiceChecksTheRevisionAndAForkKeepsIt) {
  std::string thread_id = create_thread();
  CommandResult stale = run("s-stale", "thread.setModel",
                            {{"threadId", thread_id}, {"model", "fast"}, {"expectedRevision", 99}});
  ASSERT_FALSE(stale.outcome.accepted);
  EXPECT_EQ(stale.outcome.rejection->code(), codes::kRevisionConflict);
  CommandResult set = run("s-set", "thread.setModel", {{"threadId", thread_id}, {"model", "fast"}});
  ASSERT_TRUE(set.outcome.accepted);
  EXPECT_EQ(set.outcome.result["model"], "fast");
  EXPECT_EQ(count("SELECT count(*) FROM threads WHERE model = 'fast'"), 1);
  CommandResult forked = run("s-fork", "thread.fork", {{"threadId", thread_id}});
  ASSERT_TRUE(forked.outcome.accepted);
  EXPECT_EQ(count("SELECT count(*) FROM threads WHERE model = 'fast'"), 2);
  CommandResult created = run("s-create-slow", "thread.create", {{"model", "slow"}});
  ASSERT_TRUE(created.outcome.accepted);
  EXPECT_EQ(count("SELECT count(*) FROM threads WHERE model = 'slow'"), 1);
  CommandResult missing = run("s-missing", "thread.setModel", {{"threadId", thread_id}});
  ASSERT_FALSE(missing.outcome.accepted);
  EXPECT_EQ(missing.outcome.rejection->code(), codes::kInvalidArgument);
}

TEST_F(CommandsTest, EmptyForkAtAChosenNodeWritesNoNodes) {
  std::string thread_id = create_thread();
  NodeRecord first = append(thread_id, NodeKind::kUserMessage);
  append(thread_id, NodeKind::kAssistantMessage);
  CommandResult forked = run("s-fork", "thread.fork", {{"threadId", thread_id}, {"atNodeId", first.id}});
  ASSERT_TRUE(forked.outcome.accepted);
  EXPECT_EQ(forked.outcome.result["parentThreadId"], thread_id);
  EXPECT_EQ(forked.outcome.result["forkNodeId"], first.id);
  EXPECT_EQ(count("SELECT count(*) FROM nodes"), 2);
  EXPECT_EQ(count("SELECT count(*) FROM threads WHERE parent_thread_id IS NOT NULL"), 1);
}

TEST_F(CommandsTest, SelectBranchMovesTheLeafAndRefusesAStaleRevision) {
  std::string thread_id = create_thread();
  NodeRecord root = append(thread_id, NodeKind::kTurnContext);
  NodeRecord first = append(thread_id, NodeKind::kUserMessage);
  NodeRecord second = append(thread_id, NodeKind::kUserMessage, root.id);  // a sibling branch; leaf = second
  CommandResult stale = run("s-stale", "thread.selectBranch",
                            {{"threadId", thread_id}, {"leafNodeId", first.id}, {"expectedRevision", 1}});
  ASSERT_FALSE(stale.outcome.accepted);
  EXPECT_EQ(stale.outcome.rejection->code(), codes::kRevisionConflict);
  CommandResult selected =
      run("s-sel", "thread.selectBranch", {{"threadId", thread_id}, {"leafNodeId", first.id}});
  ASSERT_TRUE(selected.outcome.accepted) << selected.outcome.to_json().dump();
  auto tx = store_->begin(TxMode::kRead);
  ThreadRepository threads(clock_);
  EXPECT_EQ(threads.get(**tx, thread_id)->leaf_node_id, first.id);
  (void)second;
}

TEST_F(CommandsTest, SelectBranchToANodeWithChildrenIsRejected) {
  std::string thread_id = create_thread();
  NodeRecord root = append(thread_id, NodeKind::kTurnContext);
  append(thread_id, NodeKind::kUserMessage);
  CommandResult rejected =
      run("s-sel", "thread.selectBranch", {{"threadId", thread_id}, {"leafNodeId", root.id}});
  EXPECT_EQ(rejected.outcome.rejection->code(), codes::kNodeNotLeaf);
}

TEST_F(CommandsTest, NinthEnqueueIsRejectedAndTheRejectionReplays) {
  std::string thread_id = create_thread();
  for (int i = 0; i < 8; ++i) {
    CommandResult queued =
        run("s-q" + std::to_string(i), "turn.enqueue", {{"threadId", thread_id}, {"input", i}});
    ASSERT_TRUE(queued.outcome.accepted) << queued.outcome.to_json().dump();
    EXPECT_EQ(queued.outcome.result["queueLength"], i + 1);
  }
  CommandResult ninth = run("s-q9", "turn.enqueue", {{"threadId", thread_id}, {"input", 9}});
  ASSERT_FALSE(ninth.outcome.accepted);
  EXPECT_EQ(ninth.outcome.rejection->code(), codes::kQueueFull);
  EXPECT_EQ(count("SELECT count(*) FROM run_queue"), 8);
  // Even after a slot frees up, the same submission replays its rejection: one submission, one answer.
  std::string first_item = run("s-q0", "turn.enqueue", {{"threadId", thread_id}, {"input", 0}})
                               .outcome.result["itemId"]
                               .get<std::string>();
  run("s-rm", "queue.remove", {{"threadId", thread_id}, {"itemId", first_item}});
  CommandResult replay = run("s-q9", "turn.enqueue", {{"threadId", thread_id}, {"input", 9}});
  EXPECT_TRUE(replay.replayed);
  EXPECT_FALSE(replay.outcome.accepted);
  EXPECT_EQ(count("SELECT count(*) FROM run_queue"), 7);
}

TEST_F(CommandsTest, QueueUpdateAndRemoveChangeTheQueueAndBumpRevisions) {
  std::string thread_id = create_thread();
  auto a = run("s-a", "turn.enqueue", {{"threadId", thread_id}, {"input", "a"}}).outcome.result;
  auto b = run("s-b", "turn.enqueue", {{"threadId", thread_id}, {"input", "b"}}).outcome.result;
  CommandResult updated =
      run("s-u", "queue.update", {{"threadId", thread_id}, {"itemId", a["itemId"]}, {"input", "a2"}});
  ASSERT_TRUE(updated.outcome.accepted) << updated.outcome.to_json().dump();
  EXPECT_GT(updated.outcome.result["revision"].get<int64_t>(), b["revision"].get<int64_t>());
  CommandResult removed = run("s-r", "queue.remove", {{"threadId", thread_id}, {"itemId", a["itemId"]}});
  ASSERT_TRUE(removed.outcome.accepted);
  EXPECT_EQ(removed.outcome.result["queueLength"], 1);
  CommandResult missing = run("s-r2", "queue.remove", {{"threadId", thread_id}, {"itemId", "nope"}});
  EXPECT_EQ(missing.outcome.rejection->code(), codes::kQueueItemNotFound);
}

}  // namespace
}  // namespace keel
