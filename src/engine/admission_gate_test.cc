#include "engine/admission_gate.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>

namespace keel {
namespace {

using Refusal = AdmissionGate::Refusal;

class AdmissionGateTest : public ::testing::Test {
 protected:
  void open_turn(const std::string& turn, TurnKind kind = TurnKind::kUser) {
    gate_.open(turn, "run-" + turn, kind, boost::asio::make_strand(io_), lifetime_);
  }
  boost::asio::io_context io_;
  std::shared_ptr<IoLifetime> lifetime_ = std::make_shared<IoLifetime>();
  AdmissionGate gate_;
};

TEST_F(AdmissionGateTest, WithNoTurnRunningEverySteerIsRefused) {
  EXPECT_EQ(gate_.try_admit("t1").refusal, Refusal::kNoTurnRunning);
  open_turn("t1");
  gate_.close();
  EXPECT_EQ(gate_.try_admit("t1").refusal, Refusal::kNoTurnRunning);
}

TEST_F(AdmissionGateTest, ASteerForAnotherTurnOrANonSteerableTurnIsRefused) {
  open_turn("t1");
  AdmissionGate::Decision other = gate_.try_admit("t0");
  EXPECT_EQ(other.refusal, Refusal::kOtherTurnRunning);
  EXPECT_EQ(other.running_turn_id, "t1");
  open_turn("t2", TurnKind::kTitle);
  EXPECT_EQ(gate_.try_admit("t2").refusal, Refusal::kNotSteerable);
  EXPECT_EQ(gate_.started(), 0u) << "refusals take no ticket";
}

TEST_F(AdmissionGateTest, TicketsTakenBeforeStopAreWaitedForAndLaterSteersAreRefused) {
  open_turn("t1");
  EXPECT_TRUE(gate_.take_admitted()) << "a new turn reads its stored pending set once";
  AdmissionGate::Decision first = gate_.try_admit("t1");
  ASSERT_EQ(first.refusal, Refusal::kNone);
  EXPECT_EQ(first.run_id, "run-t1");
  AdmissionGate::Decision second = gate_.try_admit("t1");
  ASSERT_EQ(second.refusal, Refusal::kNone);

  const uint64_t waited_for = gate_.stop();
  EXPECT_EQ(waited_for, 2u);
  EXPECT_EQ(gate_.try_admit("t1").refusal, Refusal::kEnding) << "after stop: turn.ended";
  EXPECT_FALSE(gate_.answered(waited_for));
  gate_.answer(first.generation, true);
  EXPECT_FALSE(gate_.answered(waited_for));
  gate_.answer(second.generation, false);  // e.g. a transaction that failed: answered, not admitted
  EXPECT_TRUE(gate_.answered(waited_for));
  EXPECT_TRUE(gate_.admitted_since_cutoff());
  EXPECT_TRUE(gate_.take_admitted());
  EXPECT_FALSE(gate_.take_admitted()) << "taken by the cutoff";

  gate_.reopen();  // the turn went on for the steer: it admits again
  EXPECT_EQ(gate_.try_admit("t1").refusal, Refusal::kNone);
}

// Issue 14 point 6a: the interrupt closes the gate when it is decided; the runner, which sees the
// interrupt only later, may still decide to go on for a steer (reopen) without admitting any again.
TEST_F(AdmissionGateTest, AnInterruptRefusesLaterSteersEvenAfterTheRunnerReopens) {
  open_turn("t1");
  (void)gate_.take_admitted();
  AdmissionGate::Decision before = gate_.try_admit("t1");
  ASSERT_EQ(before.refusal, Refusal::kNone);
  EXPECT_EQ(gate_.interrupt(), 1u) << "the ticket taken before is still waited for";
  EXPECT_EQ(gate_.try_admit("t1").refusal, Refusal::kInterrupted);
  EXPECT_FALSE(gate_.steerable());
  gate_.reopen();
  EXPECT_EQ(gate_.try_admit("t1").refusal, Refusal::kInterrupted);
  EXPECT_FALSE(gate_.steerable());
  open_turn("t1");  // the runner's start for the same turn changes nothing
  EXPECT_EQ(gate_.try_admit("t1").refusal, Refusal::kInterrupted);
  gate_.answer(before.generation, true);
  EXPECT_TRUE(gate_.answered(1));
  gate_.close();
  open_turn("t1");  // the interrupted turn resumed (run.resume): it admits again
  EXPECT_EQ(gate_.try_admit("t1").refusal, Refusal::kNone);
}

// Issue 14 point 20: a durable wait does not close the gate.
TEST_F(AdmissionGateTest, AHeldWaitStillAdmitsSteers) {
  open_turn("t1");
  (void)gate_.take_admitted();
  EXPECT_EQ(gate_.hold(), 0u);
  EXPECT_TRUE(gate_.steerable());
  AdmissionGate::Decision during = gate_.try_admit("t1");
  ASSERT_EQ(during.refusal, Refusal::kNone);
  gate_.answer(during.generation, true);
  EXPECT_TRUE(gate_.admitted_since_cutoff()) << "the continuation's first cutoff takes it";
}

TEST_F(AdmissionGateTest, OpeningAgainForTheOpenTurnKeepsItsTickets) {
  open_turn("t1");
  (void)gate_.take_admitted();
  AdmissionGate::Decision ticket = gate_.try_admit("t1");
  ASSERT_EQ(ticket.refusal, Refusal::kNone);
  open_turn("t1");  // the runner's start, after the turn's ACK already opened the gate
  EXPECT_FALSE(gate_.answered(gate_.started())) << "the ticket is still waited for";
  gate_.answer(ticket.generation, true);
  EXPECT_TRUE(gate_.answered(gate_.started()));
  EXPECT_TRUE(gate_.admitted_since_cutoff()) << "its steer is known to the runner";
}

TEST_F(AdmissionGateTest, AnAnswerForAnEarlierTurnChangesNothing) {
  open_turn("t1");
  AdmissionGate::Decision stale = gate_.try_admit("t1");
  ASSERT_EQ(stale.refusal, Refusal::kNone);
  gate_.close();
  open_turn("t2");
  (void)gate_.take_admitted();
  AdmissionGate::Decision current = gate_.try_admit("t2");
  gate_.answer(stale.generation, true);
  EXPECT_FALSE(gate_.answered(gate_.started())) << "t2's ticket is still open";
  EXPECT_FALSE(gate_.admitted_since_cutoff());
  gate_.answer(current.generation, true);
  EXPECT_TRUE(gate_.answered(gate_.started()));
  EXPECT_TRUE(gate_.admitted_since_cutoff());
}

}  // namespace
}  // namespace keel
