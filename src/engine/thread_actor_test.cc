#include "engine/thread_actor.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>

#include "engine/engine_errors.h"

namespace keel {
namespace {

using State = ThreadActivity::State;

class ThreadActorTest : public ::testing::Test {
 protected:
  static RunRecord run(const std::string& turn) {
    RunRecord r;
    r.id = "run-" + turn;
    r.turn_id = turn;
    r.turn_kind = TurnKind::kUser;
    return r;
  }
  static HeldWait approval(const std::string& id) {
    HeldWait wait;
    wait.run_id = "run-t1";
    wait.kind = WaitKind::kApproval;
    wait.id = id;
    return wait;
  }
  boost::asio::io_context io_;
  ThreadActor actor_{"thread-1", boost::asio::make_strand(io_), std::make_shared<IoLifetime>()};
};

TEST_F(ThreadActorTest, ATurnOpensTheGateAndFinishingItClosesTheGateAndFreesTheThread) {
  EXPECT_EQ(actor_.activity().state, State::kIdle);
  CancellationToken cancel = actor_.begin_turn(run("t1"));
  EXPECT_EQ(actor_.activity().state, State::kRunning);
  ASSERT_NE(actor_.turn(), nullptr);
  EXPECT_EQ(actor_.turn()->run_id, "run-t1");
  EXPECT_EQ(actor_.gate().try_admit("t1").refusal, AdmissionGate::Refusal::kNone);
  EXPECT_FALSE(cancel.is_cancelled());
  actor_.finish();
  EXPECT_EQ(actor_.turn(), nullptr);
  EXPECT_EQ(actor_.activity().state, State::kIdle);
  EXPECT_EQ(actor_.gate().try_admit("t1").refusal, AdmissionGate::Refusal::kNoTurnRunning);
}

// A broken invariant of the actor is a bug: it stops the process naming the site and what broke.
using ThreadActorDeathTest = ThreadActorTest;

TEST_F(ThreadActorDeathTest, ASecondTurnOnABusyThreadIsABug) {
  (void)actor_.begin_turn(run("t1"));
  EXPECT_DEATH((void)actor_.begin_turn(run("t2")),
               R"(thread_actor\.cc:[0-9]+: bug: ThreadActor: begin_turn on a thread that has a turn)");
  EXPECT_EQ(actor_.turn()->turn_id, "t1");
}

TEST_F(ThreadActorDeathTest, FinishingATurnAWaitHoldsIsABug) {
  (void)actor_.begin_turn(run("t1"));
  actor_.hold(approval("a1"));
  EXPECT_DEATH(actor_.finish(), "bug: ThreadActor: finish while a wait holds the thread")
      << "a held turn is not over";
  EXPECT_TRUE(actor_.holds("a1"));
}

TEST_F(ThreadActorDeathTest, ASecondWaitOnAHeldThreadIsABug) {
  (void)actor_.begin_turn(run("t1"));
  actor_.hold(approval("a1"));
  EXPECT_DEATH(actor_.hold(approval("a2")), "bug: ThreadActor: hold while a wait already holds the thread");
  EXPECT_TRUE(actor_.holds("a1"));
}

TEST_F(ThreadActorDeathTest, AWaitNeedsATurn) {
  EXPECT_DEATH(actor_.hold(approval("a1")), "bug: ThreadActor: hold without a turn");
  EXPECT_EQ(actor_.held(), nullptr);
}

TEST_F(ThreadActorDeathTest, AnInterruptNeedsATurn) {
  EXPECT_DEATH(actor_.interrupt("interrupted by the user"), "bug: ThreadActor: interrupt without a turn");
  EXPECT_DEATH(actor_.defer_interrupt(Op{"turn.interrupt", "c", "s1", nlohmann::json::object()}),
               "bug: ThreadActor: an interrupt deferred without a turn");
}

TEST_F(ThreadActorDeathTest, AWaitTimerNeedsAHeldWait) {
  (void)actor_.begin_turn(run("t1"));
  EXPECT_DEATH(actor_.set_wait_timer(nullptr), "bug: ThreadActor: a wait timer without a held wait");
}

TEST_F(ThreadActorTest, AHeldWaitIsTheThreadsWaitingFactUntilReleased) {
  (void)actor_.begin_turn(run("t1"));
  actor_.hold(approval("a1"));
  const ThreadActivity waiting = actor_.activity();
  EXPECT_EQ(waiting.state, State::kWaiting);
  EXPECT_EQ(waiting.wait_kind, WaitKind::kApproval);
  EXPECT_EQ(waiting.wait_id, "a1");
  EXPECT_TRUE(actor_.holds("a1"));
  EXPECT_FALSE(actor_.holds("a2"));
  std::optional<HeldWait> released = actor_.release();
  ASSERT_TRUE(released.has_value());
  EXPECT_EQ(released->id, "a1");
  EXPECT_EQ(actor_.activity().state, State::kRunning) << "the continuation runs the turn on";
  EXPECT_FALSE(actor_.release().has_value());
}

TEST_F(ThreadActorTest, AnInterruptRefusesSteersAndCancelsTheTurnInOneStep) {
  CancellationToken cancel = actor_.begin_turn(run("t1"));
  actor_.interrupt("interrupted by the user");
  EXPECT_TRUE(cancel.is_cancelled());
  EXPECT_EQ(actor_.gate().try_admit("t1").refusal, AdmissionGate::Refusal::kInterrupted);
  actor_.gate().reopen();
  EXPECT_EQ(actor_.gate().try_admit("t1").refusal, AdmissionGate::Refusal::kInterrupted);
}

TEST_F(ThreadActorTest, DeferredInterruptsAreTakenOnce) {
  (void)actor_.begin_turn(run("t1"));
  EXPECT_FALSE(actor_.has_interrupts());
  actor_.defer_interrupt(Op{"turn.interrupt", "c", "s1", nlohmann::json::object()});
  EXPECT_TRUE(actor_.has_interrupts());
  EXPECT_EQ(actor_.take_interrupts().size(), 1u);
  EXPECT_FALSE(actor_.has_interrupts());
}

TEST_F(ThreadActorTest, AStrandedThreadReportsItsErrorInItsActivity) {
  actor_.mark_stranded(Error(codes::kTurnUnpersisted, "could not record its end"));
  ASSERT_TRUE(actor_.activity().stranded.has_value());
  EXPECT_EQ(actor_.activity().stranded->code(), codes::kTurnUnpersisted);
}

}  // namespace
}  // namespace keel
