#include "store/run_repository.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "keel/error_codes.h"
#include "keel/store.h"
#include "store/thread_repository.h"
#include "testing/manual_clock.h"
#include "testing/store_test.h"
#include "testing/temp_dir.h"

namespace keel {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

using testing::code_of;
using testing::must;

class RunRepositoryTest : public testing::StoreTest {
 protected:
  void SetUp() override {
    reopen();
    auto tx = begin();
    must(threads_.create(*tx, "t1", "first"));
    must(threads_.create(*tx, "t2", "second"));
    must(tx->commit());
  }

  RunRecord run(std::string id, std::string thread_id = "t1", RunState state = RunState::kQueued) {
    RunRecord r;
    r.id = std::move(id);
    r.thread_id = std::move(thread_id);
    r.turn_id = "turn-" + r.id;
    r.state = state;
    return r;
  }

  // Creates a run in its own committed transaction.
  RunRecord create_committed(RunRecord record) {
    auto tx = begin();
    RunRecord created = must(runs_.create(*tx, std::move(record)));
    must(tx->commit());
    return created;
  }

  PreparedToolCallRecord call(std::string id, std::string run_id) {
    PreparedToolCallRecord c;
    c.tool_call_id = std::move(id);
    c.run_id = std::move(run_id);
    c.tool_name = "browser_click";
    c.descriptor_digest = "sha256:abc";
    c.params = json{{"ref", "e12"}};
    return c;
  }

  // A call waiting for approval `approval_id`, as a run's pending tool.
  static PendingTool approval_wait(std::string call_id, std::string approval_id) {
    PendingTool pending = dispatch_record(std::move(call_id), "write_file", "n1");
    pending.wait = PendingTool::Wait{.kind = WaitKind::kApproval, .id = std::move(approval_id)};
    return pending;
  }

  RunRepository runs_{clock_};
};

// ---- runs ----

TEST_F(RunRepositoryTest, CreateStoresEveryFieldAndAssignsRevisionAndTimestamps) {
  RunRecord r = run("r1");
  r.turn_kind = TurnKind::kUser;
  r.state = RunState::kStreamingModel;
  r.snapshot_id = "snap-1";
  r.step_cursor = 3;
  r.pending_tool = dispatch_record("c1", "write_file", "n1");
  r.pending_tool->recovery_attempts = 1;
  r.revision = 42;            // assigned by the repository
  r.next_admission_seq = 99;  // assigned by the repository
  r.stop_reason = "x";
  r.provider_stop_reason = "tool_use";
  r.usage = json{{"input_tokens", 10}, {"output_tokens", 5}};
  r.budget_tokens = 1000;
  r.failure_streak = 2;
  r.error = "e";
  RunRecord created = create_committed(r);
  EXPECT_EQ(created.revision, 1);
  EXPECT_EQ(created.next_admission_seq, 1);
  EXPECT_EQ(created.created_at, clock_.now_unix_ms());
  EXPECT_EQ(created.updated_at, clock_.now_unix_ms());

  auto tx = begin(TxMode::kRead);
  RunRecord got = must(runs_.get(*tx, "r1"));
  EXPECT_EQ(got.thread_id, "t1");
  EXPECT_EQ(got.turn_id, "turn-r1");
  EXPECT_EQ(got.turn_kind, TurnKind::kUser);
  EXPECT_EQ(got.state, RunState::kStreamingModel);
  EXPECT_EQ(got.snapshot_id, "snap-1");
  EXPECT_EQ(got.step_cursor, 3);
  EXPECT_EQ(got.pending_tool, r.pending_tool);
  EXPECT_EQ(got.revision, 1);
  EXPECT_EQ(got.stop_reason, "x");
  EXPECT_EQ(got.provider_stop_reason, "tool_use");
  EXPECT_EQ(got.usage, (json{{"input_tokens", 10}, {"output_tokens", 5}}));
  EXPECT_EQ(got.budget_tokens, 1000);
  EXPECT_EQ(got.failure_streak, 2);
  EXPECT_EQ(got.next_admission_seq, 1);
  EXPECT_EQ(got.error, "e");
  EXPECT_EQ(got.created_at, created.created_at);
}

TEST_F(RunRepositoryTest, CreateNeedsALiveThreadAndANonTerminalState) {
  auto tx = begin();
  EXPECT_EQ(code_of(runs_.create(*tx, run("r1", "nope"))), codes::kThreadNotFound);
  must(threads_.mark_deleted(*tx, "t2"));
  EXPECT_EQ(code_of(runs_.create(*tx, run("r2", "t2"))), codes::kThreadDeleted);
  EXPECT_EQ(code_of(runs_.create(*tx, run("r3", "t1", RunState::kCompleted))), codes::kInvalidArgument);
  EXPECT_EQ(code_of(runs_.create(*tx, run("", "t1"))), codes::kInvalidArgument);
  must(runs_.create(*tx, run("r4")));
  EXPECT_EQ(code_of(runs_.create(*tx, run("r4"))), codes::kStoreConstraint);
}

TEST_F(RunRepositoryTest, GetOfAnUnknownRunIsNotFound) {
  auto tx = begin(TxMode::kRead);
  EXPECT_EQ(code_of(runs_.get(*tx, "missing")), codes::kRunNotFound);
}

TEST_F(RunRepositoryTest, ListByThreadIsOldestFirstAndLatestIsTheNewest) {
  create_committed(run("b"));
  clock_.advance(1ms);
  create_committed(run("a"));
  clock_.advance(1ms);
  create_committed(run("c", "t2"));
  auto tx = begin(TxMode::kRead);
  std::vector<RunRecord> listed = must(runs_.list_by_thread(*tx, "t1"));
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[0].id, "b");
  EXPECT_EQ(listed[1].id, "a");
  auto latest = must(runs_.latest_for_thread(*tx, "t1"));
  ASSERT_TRUE(latest);
  EXPECT_EQ(latest->id, "a");
  auto none = must(runs_.latest_for_thread(*tx, "no-thread"));
  EXPECT_FALSE(none);
}

TEST_F(RunRepositoryTest, TransitionFromTheCallersCopyWritesItOrFollowsARowThatMovedOn) {
  RunRecord mine = create_committed(run("r1", "t1", RunState::kStreamingModel));
  auto tx = begin();
  // The copy is current: the transition applies to it.
  mine = must(runs_.transition_from(*tx, mine, RunState::kExecutingTool, {.step_cursor = 1}));
  EXPECT_EQ(mine.revision, 2);
  EXPECT_EQ(must(runs_.get(*tx, "r1")).state, RunState::kExecutingTool);
  // An admitted steer moves the row on (revision and admission sequence): the stale copy still
  // transitions, from the stored row, and keeps what the steer changed.
  must(runs_.admit_steer(*tx, "r1", "s1", json{{"text", "hi"}}));
  RunRecord moved = must(runs_.transition_from(*tx, mine, RunState::kStreamingModel, {.step_cursor = 2}));
  EXPECT_EQ(moved.revision, 4);
  RunRecord stored = must(runs_.get(*tx, "r1"));
  EXPECT_EQ(stored.state, RunState::kStreamingModel);
  EXPECT_EQ(stored.step_cursor, 2);
  EXPECT_EQ(stored.next_admission_seq, 2) << "the steer's admission is not undone";
  // A transition the stored state does not allow is refused, whatever the copy says.
  must(runs_.transition(*tx, "r1", std::nullopt, RunState::kCompleted, {.stop_reason = "end"}));
  auto refused = runs_.transition_from(*tx, moved, RunState::kExecutingTool);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), codes::kRunInvalidTransition);
  must(tx->commit());
}

TEST_F(RunRepositoryTest, ListInStatesFindsRunsForRecovery) {
  create_committed(run("q"));
  create_committed(run("s", "t1", RunState::kStreamingModel));
  create_committed(run("w", "t2", RunState::kWaitingApproval));
  {
    auto tx = begin();
    must(runs_.transition(*tx, "s", std::nullopt, RunState::kCompleted, {.stop_reason = "end"}));
    must(tx->commit());
  }
  auto tx = begin(TxMode::kRead);
  auto active =
      must(runs_.list_in_states(*tx, {RunState::kQueued, RunState::kStreamingModel, RunState::kExecutingTool,
                                      RunState::kWaitingApproval, RunState::kWaitingInteraction}));
  ASSERT_EQ(active.size(), 2u);
  EXPECT_EQ(active[0].id, "q");
  EXPECT_EQ(active[1].id, "w");
  auto completed = must(runs_.list_in_states(*tx, {RunState::kCompleted}));
  ASSERT_EQ(completed.size(), 1u);
  EXPECT_EQ(completed[0].id, "s");
  EXPECT_TRUE(must(runs_.list_in_states(*tx, {})).empty());
}

TEST_F(RunRepositoryTest, TransitionBumpsRevisionAndAppliesTheUpdate) {
  create_committed(run("r1"));
  clock_.advance(5ms);
  auto tx = begin();
  RunRecord started =
      must(runs_.transition(*tx, "r1", 1, RunState::kStreamingModel, {.snapshot_id = "snap"}));
  EXPECT_EQ(started.revision, 2);
  EXPECT_EQ(started.state, RunState::kStreamingModel);
  EXPECT_EQ(started.snapshot_id, "snap");
  EXPECT_EQ(started.updated_at, clock_.now_unix_ms());

  RunRecord checkpoint = must(runs_.transition(
      *tx, "r1", 2, RunState::kStreamingModel,
      {.provider_stop_reason = "tool_use", .step_cursor = 1, .usage = json{{"input_tokens", 7}}}));
  EXPECT_EQ(checkpoint.revision, 3);
  RunRecord waiting =
      must(runs_.transition(*tx, "r1", 3, RunState::kWaitingApproval,
                            {.pending_tool = approval_wait("c1", "a1"), .failure_streak = 1}));
  EXPECT_EQ(waiting.revision, 4);
  must(tx->commit());

  auto read = begin(TxMode::kRead);
  RunRecord got = must(runs_.get(*read, "r1"));
  EXPECT_EQ(got.revision, 4);
  EXPECT_EQ(got.state, RunState::kWaitingApproval);
  EXPECT_EQ(got.snapshot_id, "snap");
  EXPECT_EQ(got.provider_stop_reason, "tool_use");
  EXPECT_EQ(got.step_cursor, 1);
  EXPECT_EQ(got.usage, (json{{"input_tokens", 7}}));
  EXPECT_EQ(got.pending_tool, approval_wait("c1", "a1"));
  EXPECT_EQ(got.failure_streak, 1);
}

TEST_F(RunRepositoryTest, PendingToolIsClearedOnRequestAndCannotBeSetAndClearedAtOnce) {
  create_committed(run("r1", "t1", RunState::kStreamingModel));
  auto tx = begin();
  must(runs_.transition(*tx, "r1", std::nullopt, RunState::kWaitingApproval,
                        {.pending_tool = approval_wait("c1", "a1")}));
  EXPECT_EQ(
      code_of(runs_.transition(*tx, "r1", std::nullopt, RunState::kExecutingTool,
                               {.pending_tool = approval_wait("c2", "a2"), .clear_pending_tool = true})),
      codes::kInvalidArgument);
  RunRecord executing =
      must(runs_.transition(*tx, "r1", std::nullopt, RunState::kExecutingTool, {.clear_pending_tool = true}));
  EXPECT_FALSE(executing.pending_tool);
  EXPECT_FALSE(must(runs_.get(*tx, "r1")).pending_tool);
}

TEST_F(RunRepositoryTest, StaleRevisionIsAConflictAndChangesNothing) {
  create_committed(run("r1"));
  auto tx = begin();
  must(runs_.transition(*tx, "r1", 1, RunState::kStreamingModel));
  auto stale = runs_.transition(*tx, "r1", 1, RunState::kExecutingTool);
  EXPECT_EQ(code_of(stale), codes::kRevisionConflict);
  RunRecord got = must(runs_.get(*tx, "r1"));
  EXPECT_EQ(got.state, RunState::kStreamingModel);
  EXPECT_EQ(got.revision, 2);
  // The revision is checked before the move: a stale caller learns it is stale, not that the move is bad.
  EXPECT_EQ(code_of(runs_.transition(*tx, "r1", 1, RunState::kQueued)), codes::kRevisionConflict);
  EXPECT_EQ(code_of(runs_.transition(*tx, "missing", std::nullopt, RunState::kFailed)), codes::kRunNotFound);
}

TEST_F(RunRepositoryTest, CompletedAndFailedRunsNeverMoveAgain) {
  create_committed(run("done", "t1", RunState::kStreamingModel));
  create_committed(run("broken", "t1", RunState::kStreamingModel));
  auto tx = begin();
  must(runs_.transition(*tx, "done", std::nullopt, RunState::kCompleted, {.stop_reason = "end"}));
  must(runs_.transition(*tx, "broken", std::nullopt, RunState::kFailed, {.error = "provider.http_500"}));
  for (RunState to :
       {RunState::kQueued, RunState::kStreamingModel, RunState::kExecutingTool, RunState::kWaitingApproval,
        RunState::kWaitingInteraction, RunState::kCompleted, RunState::kInterrupted, RunState::kBudgetPaused,
        RunState::kPausedUncertain, RunState::kFailed}) {
    EXPECT_EQ(code_of(runs_.transition(*tx, "done", std::nullopt, to)), codes::kRunInvalidTransition)
        << to_string(to);
    EXPECT_EQ(code_of(runs_.transition(*tx, "broken", std::nullopt, to)), codes::kRunInvalidTransition)
        << to_string(to);
  }
  EXPECT_EQ(must(runs_.get(*tx, "done")).revision, 2);
}

TEST_F(RunRepositoryTest, PausedRunsResumeOnlyThroughTheDocumentedMoves) {
  struct Case {
    RunState paused;
    const char* reason;
  };
  for (Case c : {Case{RunState::kInterrupted, "interrupted"}, Case{RunState::kBudgetPaused, "budget_pause"},
                 Case{RunState::kPausedUncertain, "uncertain"}}) {
    const std::string id = std::string("r-") + std::string(to_string(c.paused));
    create_committed(run(id, "t1", RunState::kStreamingModel));
    auto tx = begin();
    if (c.paused == RunState::kPausedUncertain) {
      must(runs_.transition(*tx, id, std::nullopt, RunState::kExecutingTool));
    }
    must(runs_.transition(*tx, id, std::nullopt, c.paused, {.stop_reason = c.reason, .error = "why"}));
    EXPECT_EQ(code_of(runs_.transition(*tx, id, std::nullopt, RunState::kCompleted)),
              codes::kRunInvalidTransition);
    EXPECT_EQ(code_of(runs_.transition(*tx, id, std::nullopt, RunState::kFailed)),
              codes::kRunInvalidTransition);
    EXPECT_EQ(code_of(runs_.transition(*tx, id, std::nullopt, c.paused)), codes::kRunInvalidTransition);
    EXPECT_EQ(code_of(runs_.transition(*tx, id, std::nullopt, RunState::kWaitingApproval)),
              codes::kRunInvalidTransition);
    RunRecord resumed = must(runs_.transition(*tx, id, std::nullopt, RunState::kStreamingModel));
    EXPECT_EQ(resumed.state, RunState::kStreamingModel);
    EXPECT_FALSE(resumed.stop_reason) << "the stop being left no longer describes the run";
    EXPECT_FALSE(resumed.error);
    RunRecord stored = must(runs_.get(*tx, id));
    EXPECT_FALSE(stored.stop_reason);
    EXPECT_FALSE(stored.error);
    must(tx->commit());
  }
  // A retry of an uncertain write re-dispatches the tool.
  EXPECT_TRUE(RunRepository::can_transition(RunState::kPausedUncertain, RunState::kExecutingTool));
  EXPECT_FALSE(RunRepository::can_transition(RunState::kInterrupted, RunState::kExecutingTool));
}

TEST_F(RunRepositoryTest, TransitionTableFollowsTheStateMachine) {
  using S = RunState;
  EXPECT_TRUE(RunRepository::can_transition(S::kQueued, S::kStreamingModel));
  EXPECT_TRUE(RunRepository::can_transition(S::kQueued, S::kInterrupted));
  EXPECT_FALSE(RunRepository::can_transition(S::kQueued, S::kCompleted));
  EXPECT_FALSE(RunRepository::can_transition(S::kQueued, S::kExecutingTool));
  EXPECT_TRUE(RunRepository::can_transition(S::kStreamingModel, S::kStreamingModel));
  EXPECT_TRUE(RunRepository::can_transition(S::kStreamingModel, S::kCompleted));
  EXPECT_FALSE(RunRepository::can_transition(S::kStreamingModel, S::kQueued));
  EXPECT_TRUE(RunRepository::can_transition(S::kExecutingTool, S::kStreamingModel));
  EXPECT_TRUE(RunRepository::can_transition(S::kExecutingTool, S::kPausedUncertain));
  EXPECT_FALSE(RunRepository::can_transition(S::kExecutingTool, S::kCompleted));
  EXPECT_TRUE(RunRepository::can_transition(S::kWaitingApproval, S::kExecutingTool));
  EXPECT_TRUE(RunRepository::can_transition(S::kWaitingApproval, S::kStreamingModel));
  EXPECT_FALSE(RunRepository::can_transition(S::kWaitingApproval, S::kCompleted));
  EXPECT_FALSE(RunRepository::can_transition(S::kWaitingApproval, S::kWaitingInteraction));
  EXPECT_TRUE(RunRepository::can_transition(S::kWaitingInteraction, S::kStreamingModel));
  EXPECT_TRUE(RunRepository::can_transition(S::kWaitingInteraction, S::kInterrupted));
  EXPECT_FALSE(RunRepository::can_transition(S::kWaitingInteraction, S::kBudgetPaused));

  create_committed(run("r1"));
  auto tx = begin();
  EXPECT_EQ(code_of(runs_.transition(*tx, "r1", 1, RunState::kCompleted)), codes::kRunInvalidTransition);
  EXPECT_EQ(must(runs_.get(*tx, "r1")).revision, 1) << "a refused move changes nothing";
}

TEST_F(RunRepositoryTest, RolledBackTransactionLeavesNothing) {
  {
    auto tx = begin();
    must(runs_.create(*tx, run("r1")));
    must(runs_.transition(*tx, "r1", 1, RunState::kStreamingModel));
    must(runs_.admit_steer(*tx, "r1", "s1", json{{"text", "hi"}}));
    must(runs_.prepare(*tx, call("c1", "r1")));
    tx->rollback();
  }
  auto tx = begin(TxMode::kRead);
  EXPECT_EQ(code_of(runs_.get(*tx, "r1")), codes::kRunNotFound);
  EXPECT_EQ(code_of(runs_.get_steer(*tx, "s1")), codes::kSteerNotFound);
  EXPECT_EQ(code_of(runs_.get_tool_call(*tx, "c1")), codes::kToolCallNotFound);
}

TEST_F(RunRepositoryTest, DamagedJsonColumnIsADecodeFailure) {
  create_committed(run("r1"));
  {
    auto tx = begin();
    must(tx->execute("UPDATE runs SET usage = ? WHERE id = ?", {"{not json", "r1"}));
    must(tx->commit());
  }
  auto tx = begin();
  EXPECT_EQ(code_of(runs_.get(*tx, "r1")), codes::kStoreDecode);
  EXPECT_EQ(code_of(runs_.list_by_thread(*tx, "t1")), codes::kStoreDecode);
  must(tx->execute("UPDATE runs SET usage = '{}', state = 'sleeping' WHERE id = ?", {"r1"}));
  EXPECT_EQ(code_of(runs_.get(*tx, "r1")), codes::kStoreDecode);
}

// Stored text no keel value names (a damaged row, or one a newer keel wrote) is a coded error, never a crash.
TEST_F(RunRepositoryTest, AStoredTurnKindOrPendingToolNoKeelWritesIsADecodeFailure) {
  create_committed(run("r1"));
  auto tx = begin();
  must(tx->execute("UPDATE runs SET turn_kind = 'chore' WHERE id = 'r1'"));
  EXPECT_EQ(code_of(runs_.get(*tx, "r1")), codes::kStoreDecode);
  must(tx->execute("UPDATE runs SET turn_kind = 'user' WHERE id = 'r1'"));
  for (const char* damaged :
       {"[1]", R"({"toolCallId":"c1"})", R"({"toolCallId":"c1","name":"x","nodeId":"n","approvalId":7})"}) {
    must(tx->execute("UPDATE runs SET pending_tool = ? WHERE id = 'r1'", {damaged}));
    EXPECT_EQ(code_of(runs_.get(*tx, "r1")), codes::kStoreDecode) << damaged;
    EXPECT_EQ(code_of(runs_.list_by_thread(*tx, "t1")), codes::kStoreDecode) << damaged;
  }
}

// The pending tool column holds exactly the JSON earlier versions wrote, and reads it back.
TEST_F(RunRepositoryTest, PendingToolColumnKeepsItsStoredShape) {
  create_committed(run("r1", "t1", RunState::kStreamingModel));
  auto tx = begin();
  must(runs_.transition(*tx, "r1", std::nullopt, RunState::kWaitingApproval,
                        {.pending_tool = approval_wait("c1", "a1")}));
  auto row = must(tx->query_one("SELECT pending_tool FROM runs WHERE id = 'r1'"));
  ASSERT_TRUE(row);
  EXPECT_EQ(row->text(0), R"({"approvalId":"a1","name":"write_file","nodeId":"n1","toolCallId":"c1"})");
  const std::string earlier =
      R"({"heldNotices":["tools are off"],"interactionId":"i1","name":"ask_user","nodeId":"n2","toolCallId":"c2"})";
  must(tx->execute("UPDATE runs SET pending_tool = ? WHERE id = 'r1'", {earlier}));
  RunRecord read = must(runs_.get(*tx, "r1"));
  ASSERT_TRUE(read.pending_tool && read.pending_tool->waits_for(WaitKind::kInteraction));
  EXPECT_EQ(read.pending_tool->wait->held_notices, (std::vector<std::string>{"tools are off"}));
  must(runs_.transition_from(*tx, read, RunState::kWaitingApproval));  // written back as read
  EXPECT_EQ(must(tx->query_one("SELECT pending_tool FROM runs WHERE id = 'r1'"))->text(0), earlier);
}

TEST_F(RunRepositoryTest, UnstoppedRunsIncludeRowsInAStateNoKeelStateNamesAndCanBeMarkedDamaged) {
  create_committed(run("r1", "t1", RunState::kStreamingModel));
  create_committed(run("r2", "t1", RunState::kStreamingModel));
  create_committed(run("r3", "t2", RunState::kWaitingApproval));
  {
    auto tx = begin();
    must(runs_.transition(*tx, "r2", std::nullopt, RunState::kCompleted));
    must(tx->execute("UPDATE runs SET state = 'sleeping' WHERE id = ?", {"r3"}));
    must(tx->commit());
  }
  {
    auto tx = begin(TxMode::kRead);
    EXPECT_EQ(must(runs_.unstopped_run_ids(*tx)), (std::vector<std::string>{"r1", "r3"}));
  }
  auto tx = begin();
  must(runs_.mark_damaged(*tx, "r3", "the state 'sleeping' is not one keel knows"));
  RunRecord failed = must(runs_.get(*tx, "r3"));
  EXPECT_EQ(failed.state, RunState::kFailed);
  EXPECT_EQ(failed.error, "the state 'sleeping' is not one keel knows");
  EXPECT_EQ(must(runs_.unstopped_run_ids(*tx)), (std::vector<std::string>{"r1"}));
}

// ---- steers ----

TEST_F(RunRepositoryTest, AdmissionSequenceIsIncreasingAndUniquePerRun) {
  create_committed(run("r1", "t1", RunState::kStreamingModel));
  create_committed(run("r2", "t2", RunState::kStreamingModel));
  std::vector<int64_t> seqs;
  for (int i = 0; i < 5; ++i) {
    auto tx = begin();
    SteerRecord s = must(
        runs_.admit_steer(*tx, "r1", "s" + std::to_string(i), json{{"text", i}}, json::array({"node-a"})));
    EXPECT_EQ(s.state, SteerState::kPending);
    EXPECT_FALSE(s.node_id);
    seqs.push_back(s.admission_seq);
    if (i == 2) {  // another run's admissions do not take r1's numbers
      EXPECT_EQ(must(runs_.admit_steer(*tx, "r2", "other", json{{"text", "x"}})).admission_seq, 1);
    }
    must(tx->commit());
  }
  EXPECT_EQ(seqs, (std::vector<int64_t>{1, 2, 3, 4, 5}));

  auto tx = begin(TxMode::kRead);
  RunRecord r1 = must(runs_.get(*tx, "r1"));
  EXPECT_EQ(r1.next_admission_seq, 6);
  EXPECT_EQ(r1.revision, 6) << "each admission changes the run row and bumps its revision";
  std::vector<SteerRecord> pending = must(runs_.pending_steers(*tx, "r1"));
  ASSERT_EQ(pending.size(), 5u);
  for (size_t i = 0; i < pending.size(); ++i) {
    EXPECT_EQ(pending[i].admission_seq, static_cast<int64_t>(i + 1));
    EXPECT_EQ(pending[i].input, (json{{"text", i}}));
    EXPECT_EQ(pending[i].attachments, json::array({"node-a"}));
  }
}

TEST_F(RunRepositoryTest, AdmissionSequenceContinuesAcrossAReopen) {
  create_committed(run("r1", "t1", RunState::kStreamingModel));
  {
    auto tx = begin();
    must(runs_.admit_steer(*tx, "r1", "s1", json{{"text", "a"}}));
    must(runs_.admit_steer(*tx, "r1", "s2", json{{"text", "b"}}));
    must(tx->commit());
  }
  reopen();
  auto tx = begin();
  EXPECT_EQ(must(runs_.admit_steer(*tx, "r1", "s3", json{{"text", "c"}})).admission_seq, 3);
  must(tx->commit());
  reopen();
  auto read = begin(TxMode::kRead);
  std::vector<SteerRecord> pending = must(runs_.pending_steers(*read, "r1"));
  ASSERT_EQ(pending.size(), 3u);
  EXPECT_EQ(pending[0].id, "s1");
  EXPECT_EQ(pending[1].id, "s2");
  EXPECT_EQ(pending[2].id, "s3");
  EXPECT_EQ(pending[2].admission_seq, 3);
}

TEST_F(RunRepositoryTest, RolledBackAdmissionGivesItsNumberBack) {
  create_committed(run("r1", "t1", RunState::kStreamingModel));
  {
    auto tx = begin();
    EXPECT_EQ(must(runs_.admit_steer(*tx, "r1", "lost", json{{"text", "a"}})).admission_seq, 1);
    tx->rollback();
  }
  auto tx = begin();
  EXPECT_EQ(code_of(runs_.get_steer(*tx, "lost")), codes::kSteerNotFound);
  EXPECT_EQ(must(runs_.get(*tx, "r1")).next_admission_seq, 1);
  EXPECT_EQ(must(runs_.admit_steer(*tx, "r1", "kept", json{{"text", "b"}})).admission_seq, 1);
}

TEST_F(RunRepositoryTest, RetriedAdmissionReturnsTheFirstAndADifferentOneConflicts) {
  create_committed(run("r1", "t1", RunState::kStreamingModel));
  create_committed(run("r2", "t2", RunState::kStreamingModel));
  auto tx = begin();
  SteerRecord first = must(runs_.admit_steer(*tx, "r1", "s1", json{{"text", "a"}}));
  SteerRecord again = must(runs_.admit_steer(*tx, "r1", "s1", json{{"text", "a"}}));
  EXPECT_EQ(again.admission_seq, first.admission_seq);
  EXPECT_EQ(must(runs_.get(*tx, "r1")).next_admission_seq, 2) << "a retry takes no new number";
  EXPECT_EQ(code_of(runs_.admit_steer(*tx, "r1", "s1", json{{"text", "b"}})), codes::kSteerIdConflict);
  EXPECT_EQ(code_of(runs_.admit_steer(*tx, "r2", "s1", json{{"text", "a"}})), codes::kSteerIdConflict);
  EXPECT_EQ(code_of(runs_.admit_steer(*tx, "r1", "", json{{"text", "a"}})), codes::kInvalidArgument);
  EXPECT_EQ(code_of(runs_.admit_steer(*tx, "missing", "s9", json{{"text", "a"}})), codes::kRunNotFound);
}

TEST_F(RunRepositoryTest, TerminalAndNonUserRunsAcceptNoSteers) {
  RunRecord title = run("title", "t1", RunState::kStreamingModel);
  title.turn_kind = TurnKind::kTitle;
  create_committed(title);
  create_committed(run("done", "t2", RunState::kStreamingModel));
  auto tx = begin();
  must(runs_.transition(*tx, "done", std::nullopt, RunState::kInterrupted));
  EXPECT_EQ(code_of(runs_.admit_steer(*tx, "title", "s1", json{{"text", "a"}})), codes::kRunNotSteerable);
  EXPECT_EQ(code_of(runs_.admit_steer(*tx, "done", "s2", json{{"text", "a"}})), codes::kRunNotSteerable);
  EXPECT_EQ(must(runs_.get(*tx, "done")).next_admission_seq, 1);
}

TEST_F(RunRepositoryTest, CutoffAndMaterialization) {
  create_committed(run("r1", "t1", RunState::kStreamingModel));
  auto tx = begin();
  for (int i = 1; i <= 4; ++i) must(runs_.admit_steer(*tx, "r1", "s" + std::to_string(i), json{{"text", i}}));
  const int64_t cutoff = must(runs_.get(*tx, "r1")).next_admission_seq - 1;
  EXPECT_EQ(cutoff, 4);
  must(runs_.admit_steer(*tx, "r1", "late", json{{"text", "late"}}));  // after the cutoff

  std::vector<SteerRecord> upto2 = must(runs_.pending_steers_up_to(*tx, "r1", 2));
  ASSERT_EQ(upto2.size(), 2u);
  EXPECT_EQ(upto2[0].id, "s1");
  EXPECT_EQ(upto2[1].id, "s2");

  std::vector<SteerRecord> batch = must(runs_.pending_steers_up_to(*tx, "r1", cutoff));
  ASSERT_EQ(batch.size(), 4u);
  for (const SteerRecord& s : batch) {
    SteerRecord m = must(runs_.mark_materialized(*tx, s.id, "node-" + s.id));
    EXPECT_EQ(m.state, SteerState::kMaterialized);
    EXPECT_EQ(m.node_id, "node-" + s.id);
  }
  std::vector<SteerRecord> left = must(runs_.pending_steers(*tx, "r1"));
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].id, "late");
  EXPECT_EQ(left[0].admission_seq, 5);
  EXPECT_TRUE(must(runs_.pending_steers_up_to(*tx, "r1", cutoff)).empty());

  // Idempotent for the same node; another node is refused; unknown steers are not found.
  EXPECT_EQ(must(runs_.mark_materialized(*tx, "s1", "node-s1")).node_id, "node-s1");
  EXPECT_EQ(code_of(runs_.mark_materialized(*tx, "s1", "node-x")), codes::kSteerAlreadyMaterialized);
  EXPECT_EQ(code_of(runs_.mark_materialized(*tx, "nope", "node-x")), codes::kSteerNotFound);
  must(tx->commit());

  auto read = begin(TxMode::kRead);
  SteerRecord s1 = must(runs_.get_steer(*read, "s1"));
  EXPECT_EQ(s1.state, SteerState::kMaterialized);
  EXPECT_EQ(s1.node_id, "node-s1");
}

// ---- prepared tool calls ----

TEST_F(RunRepositoryTest, PreparedCallRoundTripsAndMovesForwardOnly) {
  create_committed(run("r1", "t1", RunState::kExecutingTool));
  auto tx = begin();
  PreparedToolCallRecord c = call("c1", "r1");
  c.node_id = "n1";
  c.target = json{{"tab_id", 3}};
  PreparedToolCallRecord prepared = must(runs_.prepare(*tx, c));
  EXPECT_EQ(prepared.dispatch_state, DispatchState::kPrepared);
  EXPECT_EQ(prepared.created_at, clock_.now_unix_ms());

  PreparedToolCallRecord got = must(runs_.get_tool_call(*tx, "c1"));
  EXPECT_EQ(got.run_id, "r1");
  EXPECT_EQ(got.node_id, "n1");
  EXPECT_EQ(got.tool_name, "browser_click");
  EXPECT_EQ(got.descriptor_digest, "sha256:abc");
  EXPECT_EQ(got.params, (json{{"ref", "e12"}}));
  EXPECT_EQ(got.target, (json{{"tab_id", 3}}));

  EXPECT_EQ(code_of(runs_.set_dispatch_state(*tx, "c1", DispatchState::kPrepared)),
            codes::kToolCallInvalidTransition);
  clock_.advance(2ms);
  PreparedToolCallRecord dispatched = must(runs_.set_dispatch_state(*tx, "c1", DispatchState::kDispatched));
  EXPECT_EQ(dispatched.dispatch_state, DispatchState::kDispatched);
  EXPECT_EQ(dispatched.updated_at, clock_.now_unix_ms());
  EXPECT_EQ(code_of(runs_.set_dispatch_state(*tx, "c1", DispatchState::kDispatched)),
            codes::kToolCallInvalidTransition)
      << "a second dispatch is refused";
  EXPECT_EQ(code_of(runs_.set_dispatch_state(*tx, "c1", DispatchState::kPrepared)),
            codes::kToolCallInvalidTransition);
  must(runs_.set_dispatch_state(*tx, "c1", DispatchState::kSettled));
  for (DispatchState to : {DispatchState::kPrepared, DispatchState::kDispatched, DispatchState::kSettled}) {
    EXPECT_EQ(code_of(runs_.set_dispatch_state(*tx, "c1", to)), codes::kToolCallInvalidTransition);
  }
  EXPECT_EQ(must(runs_.get_tool_call(*tx, "c1")).dispatch_state, DispatchState::kSettled);
  EXPECT_EQ(code_of(runs_.set_dispatch_state(*tx, "missing", DispatchState::kDispatched)),
            codes::kToolCallNotFound);
}

TEST_F(RunRepositoryTest, RefusedCallSettlesWithoutDispatch) {
  create_committed(run("r1", "t1", RunState::kExecutingTool));
  auto tx = begin();
  must(runs_.prepare(*tx, call("c1", "r1")));
  EXPECT_EQ(must(runs_.set_dispatch_state(*tx, "c1", DispatchState::kSettled)).dispatch_state,
            DispatchState::kSettled);
}

TEST_F(RunRepositoryTest, PrepareValidatesItsInput) {
  create_committed(run("r1", "t1", RunState::kExecutingTool));
  auto tx = begin();
  PreparedToolCallRecord dispatched = call("c1", "r1");
  dispatched.dispatch_state = DispatchState::kDispatched;
  EXPECT_EQ(code_of(runs_.prepare(*tx, dispatched)), codes::kInvalidArgument);
  EXPECT_EQ(code_of(runs_.prepare(*tx, call("c2", "missing"))), codes::kRunNotFound);
  EXPECT_EQ(code_of(runs_.prepare(*tx, call("", "r1"))), codes::kInvalidArgument);
  must(runs_.prepare(*tx, call("c3", "r1")));
  EXPECT_EQ(code_of(runs_.prepare(*tx, call("c3", "r1"))), codes::kStoreConstraint);
}

TEST_F(RunRepositoryTest, UnsettledForRunListsPreparedAndDispatchedCallsOldestFirst) {
  create_committed(run("r1", "t1", RunState::kExecutingTool));
  create_committed(run("r2", "t2", RunState::kExecutingTool));
  {
    auto tx = begin();
    must(runs_.prepare(*tx, call("c-b", "r1")));
    clock_.advance(1ms);
    must(runs_.prepare(*tx, call("c-a", "r1")));
    clock_.advance(1ms);
    must(runs_.prepare(*tx, call("c-settled", "r1")));
    must(runs_.prepare(*tx, call("c-other", "r2")));
    must(runs_.set_dispatch_state(*tx, "c-a", DispatchState::kDispatched));
    must(runs_.set_dispatch_state(*tx, "c-settled", DispatchState::kDispatched));
    must(runs_.set_dispatch_state(*tx, "c-settled", DispatchState::kSettled));
    must(tx->commit());
  }
  reopen();
  auto tx = begin(TxMode::kRead);
  std::vector<PreparedToolCallRecord> unsettled = must(runs_.unsettled_for_run(*tx, "r1"));
  ASSERT_EQ(unsettled.size(), 2u);
  EXPECT_EQ(unsettled[0].tool_call_id, "c-b");
  EXPECT_EQ(unsettled[0].dispatch_state, DispatchState::kPrepared);
  EXPECT_EQ(unsettled[1].tool_call_id, "c-a");
  EXPECT_EQ(unsettled[1].dispatch_state, DispatchState::kDispatched);
}

}  // namespace
}  // namespace keel
