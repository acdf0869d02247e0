#include "engine/thread_admission.h"

#include <gtest/gtest.h>

#include "engine/engine_errors.h"

namespace keel {
namespace {

using State = ThreadActivity::State;

std::string refusal(const ThreadActivity& activity, std::string_view method) {
  auto accepted = thread_accepts(activity, method);
  return accepted ? "" : accepted.error().code();
}

ThreadActivity waiting_for_approval() {
  ThreadActivity activity;
  activity.state = State::kWaiting;
  activity.wait_kind = WaitKind::kApproval;
  activity.wait_id = "a1";
  return activity;
}

TEST(ThreadAdmissionTest, AnIdleThreadAcceptsEveryMethod) {
  for (const char* method :
       {"turn.submit", "thread.delete", "thread.selectBranch", "thread.fork", "run.resume"}) {
    EXPECT_EQ(refusal(ThreadActivity{}, method), "") << method;
  }
}

TEST(ThreadAdmissionTest, ARunningTurnKeepsItsHistoryFromDeleteAndSelectBranch) {
  ThreadActivity running;
  running.state = State::kRunning;
  EXPECT_EQ(refusal(running, "thread.delete"), codes::kThreadBusy);
  EXPECT_EQ(refusal(running, "thread.selectBranch"), codes::kThreadBusy);
  EXPECT_EQ(refusal(running, "thread.fork"), "");
  EXPECT_EQ(refusal(running, "turn.steer"), "");
}

TEST(ThreadAdmissionTest, AWaitingThreadTakesOnlyWhatSettlesTheWaitOrTheQueue) {
  const ThreadActivity waiting = waiting_for_approval();
  for (const char* method : {"turn.enqueue", "turn.input", "turn.interrupt", "approval.response",
                             "interaction.response", "queue.update", "queue.remove", "policy.setMode"}) {
    EXPECT_EQ(refusal(waiting, method), "") << method;
  }
  for (const char* method : {"turn.submit", "thread.fork", "thread.delete", "run.resume", "queue.start"}) {
    EXPECT_EQ(refusal(waiting, method), codes::kThreadWaiting) << method;
  }
  EXPECT_NE(thread_accepts(waiting, "thread.delete").error().message().find("an approval (a1)"),
            std::string::npos);
}

TEST(ThreadAdmissionTest, AStrandedThreadTakesOnlyAnInterrupt) {
  ThreadActivity stranded;
  stranded.stranded = Error(codes::kTurnUnpersisted, "no end recorded");
  EXPECT_EQ(refusal(stranded, "turn.submit"), codes::kTurnUnpersisted);
  EXPECT_EQ(refusal(stranded, "thread.delete"), codes::kTurnUnpersisted);
  EXPECT_EQ(refusal(stranded, "turn.interrupt"), "");
}

TEST(ThreadAdmissionTest, RecoveryHoldsAWaitingRunRunsAnExecutingOneAndLeavesTheRestIdle) {
  RunRecord run;
  run.state = RunState::kWaitingInteraction;
  run.pending_tool = dispatch_record("c1", "ask_user", "n1");
  run.pending_tool->wait = PendingTool::Wait{.kind = WaitKind::kInteraction, .id = "i1"};
  ThreadActivity waiting = activity_after_recovery(run);
  EXPECT_EQ(waiting.state, State::kWaiting);
  EXPECT_EQ(waiting.wait_kind, WaitKind::kInteraction);
  EXPECT_EQ(waiting.wait_id, "i1");
  run.state = RunState::kWaitingApproval;
  run.pending_tool->wait = PendingTool::Wait{.kind = WaitKind::kApproval, .id = "a1"};
  EXPECT_EQ(activity_after_recovery(run).wait_kind, WaitKind::kApproval);
  EXPECT_EQ(activity_after_recovery(run).wait_id, "a1");
  for (RunState state : {RunState::kQueued, RunState::kStreamingModel, RunState::kExecutingTool}) {
    run.state = state;
    EXPECT_EQ(activity_after_recovery(run).state, State::kRunning) << to_string(state);
  }
  for (RunState state : {RunState::kCompleted, RunState::kInterrupted, RunState::kBudgetPaused,
                         RunState::kPausedUncertain, RunState::kFailed}) {
    run.state = state;
    EXPECT_EQ(activity_after_recovery(run).state, State::kIdle) << to_string(state);
  }
}

}  // namespace
}  // namespace keel
