#include "store/interaction_repository.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "keel/error_codes.h"
#include "keel/store.h"
#include "store/run_repository.h"
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

class InteractionRepositoryTest : public testing::StoreTest {
 protected:
  void SetUp() override {
    reopen();
    auto tx = begin();
    must(threads_.create(*tx, "t1", "first"));
    for (const char* id : {"r1", "r2"}) {
      RunRecord run;
      run.id = id;
      run.thread_id = "t1";
      run.turn_id = std::string("turn-") + id;
      run.state = RunState::kWaitingApproval;
      must(runs_.create(*tx, run));
    }
    must(tx->commit());
  }

  static ApprovalRecord approval(std::string id, std::string run_id = "r1") {
    ApprovalRecord a;
    a.tool_call_id = "call-" + id;
    a.id = std::move(id);
    a.run_id = std::move(run_id);
    a.request =
        json{{"tool", "browser_click"}, {"params", {{"ref", "e1"}}}, {"origin", "https://example.com"}};
    return a;
  }

  static InteractionRecord interaction(std::string id, InteractionKind kind = InteractionKind::kAskUser,
                                       std::string run_id = "r1",
                                       std::optional<int64_t> due_at = std::nullopt) {
    InteractionRecord i;
    i.id = std::move(id);
    i.run_id = std::move(run_id);
    i.kind = kind;
    i.request = json{{"question", "which one?"}};
    i.due_at = due_at;
    return i;
  }

  static ApprovalAnswer declined() {
    return ApprovalAnswer{.choice = ApprovalChoice::kDecline, .reason = "not now"};
  }

  static std::vector<std::string> ids(const std::vector<InteractionRecord>& records) {
    std::vector<std::string> out;
    for (const InteractionRecord& r : records) out.push_back(r.id);
    return out;
  }

  RunRepository runs_{clock_};
  InteractionRepository repo_{clock_};
};

// ---- approvals ----

TEST_F(InteractionRepositoryTest, ApprovalIsCreatedPendingWithItsFullRequest) {
  {
    auto tx = begin();
    ApprovalRecord created = must(repo_.create_approval(*tx, approval("a1")));
    EXPECT_EQ(created.state, ApprovalState::kPending);
    EXPECT_EQ(created.created_at, clock_.now_unix_ms());
    clock_.advance(1ms);
    must(repo_.create_approval(*tx, approval("a2")));
    must(repo_.create_approval(*tx, approval("a3", "r2")));
    must(tx->commit());
  }
  reopen();
  auto tx = begin(TxMode::kRead);
  ApprovalRecord got = must(repo_.get_approval(*tx, "a1"));
  EXPECT_EQ(got.run_id, "r1");
  EXPECT_EQ(got.tool_call_id, "call-a1");
  EXPECT_EQ(got.request, approval("a1").request);
  EXPECT_EQ(got.state, ApprovalState::kPending);
  EXPECT_FALSE(got.decision);
  EXPECT_FALSE(got.decided_at);
  std::vector<ApprovalRecord> pending = must(repo_.pending_approvals_for_run(*tx, "r1"));
  ASSERT_EQ(pending.size(), 2u);
  EXPECT_EQ(pending[0].id, "a1");
  EXPECT_EQ(pending[1].id, "a2");
  EXPECT_EQ(code_of(repo_.get_approval(*tx, "missing")), codes::kApprovalNotFound);
}

TEST_F(InteractionRepositoryTest, ApprovalCreationIsValidated) {
  auto tx = begin();
  ApprovalRecord decided = approval("a1");
  decided.state = ApprovalState::kDecided;
  EXPECT_EQ(code_of(repo_.create_approval(*tx, decided)), codes::kInvalidArgument);
  ApprovalRecord with_decision = approval("a2");
  with_decision.decision = ApprovalAnswer{.choice = ApprovalChoice::kAccept};
  EXPECT_EQ(code_of(repo_.create_approval(*tx, with_decision)), codes::kInvalidArgument);
  EXPECT_EQ(code_of(repo_.create_approval(*tx, approval("a3", "missing"))), codes::kRunNotFound);
  EXPECT_EQ(code_of(repo_.create_approval(*tx, approval(""))), codes::kInvalidArgument);
  must(repo_.create_approval(*tx, approval("a4")));
  EXPECT_EQ(code_of(repo_.create_approval(*tx, approval("a4"))), codes::kStoreConstraint);
}

TEST_F(InteractionRepositoryTest, DecideOnlyFromPendingAndASecondDecideKeepsTheFirst) {
  {
    auto tx = begin();
    must(repo_.create_approval(*tx, approval("a1")));
    must(tx->commit());
  }
  clock_.advance(10ms);
  const int64_t decided_at = clock_.now_unix_ms();
  const ApprovalAnswer for_site{.choice = ApprovalChoice::kAcceptForSite, .remember = "session"};
  {
    auto tx = begin();
    ApprovalDecision first = must(repo_.decide(*tx, "a1", for_site));
    EXPECT_FALSE(first.already_settled);
    EXPECT_EQ(first.approval.state, ApprovalState::kDecided);
    EXPECT_EQ(first.approval.decision, for_site);
    EXPECT_EQ(first.approval.decided_at, decided_at);
    EXPECT_TRUE(must(repo_.pending_approvals_for_run(*tx, "r1")).empty());
    must(tx->commit());
  }
  clock_.advance(10ms);
  auto tx = begin();
  ApprovalDecision second = must(repo_.decide(*tx, "a1", declined()));
  EXPECT_TRUE(second.already_settled);
  EXPECT_EQ(second.approval.decision, for_site) << "the first decision stands";
  EXPECT_EQ(second.approval.decided_at, decided_at);
  ApprovalRecord stored = must(repo_.get_approval(*tx, "a1"));
  EXPECT_EQ(stored.decision, for_site);
  auto row = must(tx->query_one("SELECT decision FROM approvals WHERE id = 'a1'"));
  EXPECT_EQ(row->text(0), R"({"decision":"acceptForSite","remember":"session"})") << "the stored shape";
  EXPECT_EQ(stored.decided_at, decided_at);
  EXPECT_EQ(code_of(repo_.decide(*tx, "missing", declined())), codes::kApprovalNotFound);
}

TEST_F(InteractionRepositoryTest, RolledBackDecisionLeavesTheApprovalPending) {
  {
    auto tx = begin();
    must(repo_.create_approval(*tx, approval("a1")));
    must(tx->commit());
  }
  {
    auto tx = begin();
    must(repo_.decide(*tx, "a1", ApprovalAnswer{.choice = ApprovalChoice::kAccept}));
    must(repo_.create_approval(*tx, approval("a2")));
    tx->rollback();
  }
  auto tx = begin();
  EXPECT_EQ(must(repo_.get_approval(*tx, "a1")).state, ApprovalState::kPending);
  EXPECT_EQ(code_of(repo_.get_approval(*tx, "a2")), codes::kApprovalNotFound);
  EXPECT_FALSE(must(repo_.decide(*tx, "a1", declined())).already_settled);
}

TEST_F(InteractionRepositoryTest, DamagedApprovalRequestIsADecodeFailure) {
  auto tx = begin();
  must(repo_.create_approval(*tx, approval("a1")));
  must(tx->execute("UPDATE approvals SET request = 'nope' WHERE id = 'a1'"));
  EXPECT_EQ(code_of(repo_.get_approval(*tx, "a1")), codes::kStoreDecode);
  EXPECT_EQ(code_of(repo_.pending_approvals_for_run(*tx, "r1")), codes::kStoreDecode);
}

// ---- interactions ----

TEST_F(InteractionRepositoryTest, InteractionMovesWaitingAnsweredClaimed) {
  {
    auto tx = begin();
    InteractionRecord created = must(repo_.create_interaction(*tx, interaction("i1")));
    EXPECT_EQ(created.claim_state, ClaimState::kWaiting);
    EXPECT_EQ(created.created_at, clock_.now_unix_ms());
    must(tx->commit());
  }
  clock_.advance(5ms);
  {
    auto tx = begin();
    EXPECT_EQ(code_of(repo_.claim(*tx, "i1")), codes::kInteractionNotAnswered);
    InteractionAnswer answered = must(repo_.answer(*tx, "i1", json{{"text", "the second"}}));
    EXPECT_FALSE(answered.already_settled);
    EXPECT_EQ(answered.interaction.claim_state, ClaimState::kAnswered);
    EXPECT_EQ(answered.interaction.response, (json{{"text", "the second"}}));
    EXPECT_EQ(answered.interaction.updated_at, clock_.now_unix_ms());
    must(tx->commit());
  }
  reopen();
  {
    auto tx = begin();
    InteractionRecord claimed = must(repo_.claim(*tx, "i1"));
    EXPECT_EQ(claimed.claim_state, ClaimState::kClaimed);
    EXPECT_EQ(claimed.response, (json{{"text", "the second"}}));
    must(tx->commit());
  }
  auto tx = begin();
  EXPECT_EQ(code_of(repo_.claim(*tx, "i1")), codes::kInteractionAlreadyClaimed) << "claimed exactly once";
  InteractionRecord stored = must(repo_.get_interaction(*tx, "i1"));
  EXPECT_EQ(stored.claim_state, ClaimState::kClaimed);
  EXPECT_EQ(stored.kind, InteractionKind::kAskUser);
  EXPECT_EQ(stored.request, (json{{"question", "which one?"}}));
  EXPECT_EQ(code_of(repo_.claim(*tx, "missing")), codes::kInteractionNotFound);
  EXPECT_EQ(code_of(repo_.get_interaction(*tx, "missing")), codes::kInteractionNotFound);
  EXPECT_EQ(code_of(repo_.answer(*tx, "missing", json{})), codes::kInteractionNotFound);
}

TEST_F(InteractionRepositoryTest, SecondClaimInTheSameTransactionIsRefused) {
  auto tx = begin();
  must(repo_.create_interaction(*tx, interaction("i1")));
  must(repo_.answer(*tx, "i1", json{{"text", "yes"}}));
  must(repo_.claim(*tx, "i1"));
  EXPECT_EQ(code_of(repo_.claim(*tx, "i1")), codes::kInteractionAlreadyClaimed);
}

TEST_F(InteractionRepositoryTest, RolledBackClaimCanBeClaimedAgain) {
  {
    auto tx = begin();
    must(repo_.create_interaction(*tx, interaction("i1")));
    must(repo_.answer(*tx, "i1", json{{"text", "yes"}}));
    must(tx->commit());
  }
  {
    auto tx = begin();
    must(repo_.claim(*tx, "i1"));
    tx->rollback();
  }
  auto tx = begin();
  EXPECT_EQ(must(repo_.get_interaction(*tx, "i1")).claim_state, ClaimState::kAnswered);
  EXPECT_EQ(must(repo_.claim(*tx, "i1")).claim_state, ClaimState::kClaimed);
}

TEST_F(InteractionRepositoryTest, SecondAnswerKeepsTheFirstResponse) {
  auto tx = begin();
  must(repo_.create_interaction(*tx, interaction("i1")));
  must(repo_.answer(*tx, "i1", json{{"text", "first"}}));
  InteractionAnswer again = must(repo_.answer(*tx, "i1", json{{"text", "second"}}));
  EXPECT_TRUE(again.already_settled);
  EXPECT_EQ(again.interaction.response, (json{{"text", "first"}}));
  EXPECT_EQ(again.interaction.claim_state, ClaimState::kAnswered);
  must(repo_.claim(*tx, "i1"));
  InteractionAnswer after_claim = must(repo_.answer(*tx, "i1", json{{"text", "first"}}));
  EXPECT_TRUE(after_claim.already_settled);
  EXPECT_EQ(after_claim.interaction.claim_state, ClaimState::kClaimed);
  EXPECT_EQ(must(repo_.get_interaction(*tx, "i1")).response, (json{{"text", "first"}}));
}

TEST_F(InteractionRepositoryTest, WaitingAndAnsweredForRun) {
  auto tx = begin();
  must(repo_.create_interaction(*tx, interaction("i1")));
  clock_.advance(1ms);
  must(repo_.create_interaction(*tx, interaction("i2", InteractionKind::kElicitation)));
  clock_.advance(1ms);
  must(repo_.create_interaction(*tx, interaction("i3")));
  must(repo_.create_interaction(*tx, interaction("other", InteractionKind::kAskUser, "r2")));
  must(repo_.answer(*tx, "i2", json{{"action", "accept"}}));
  EXPECT_EQ(ids(must(repo_.waiting_for_run(*tx, "r1"))), (std::vector<std::string>{"i1", "i3"}));
  EXPECT_EQ(ids(must(repo_.answered_for_run(*tx, "r1"))), (std::vector<std::string>{"i2"}));
  must(repo_.claim(*tx, "i2"));
  EXPECT_TRUE(must(repo_.answered_for_run(*tx, "r1")).empty());
  EXPECT_EQ(ids(must(repo_.waiting_for_run(*tx, "r2"))), (std::vector<std::string>{"other"}));
}

TEST_F(InteractionRepositoryTest, DueTimersAreWaitingTimersWhoseTimeHasCome) {
  const int64_t now = clock_.now_unix_ms();
  auto tx = begin();
  must(repo_.create_interaction(*tx, interaction("late", InteractionKind::kTimer, "r1", now + 2000)));
  must(repo_.create_interaction(*tx, interaction("soon", InteractionKind::kTimer, "r1", now + 1000)));
  must(repo_.create_interaction(*tx, interaction("past", InteractionKind::kTimer, "r2", now - 5)));
  must(repo_.create_interaction(*tx, interaction("fired", InteractionKind::kTimer, "r1", now - 10)));
  must(repo_.create_interaction(*tx, interaction("question", InteractionKind::kAskUser, "r1", now - 10)));
  must(repo_.answer(*tx, "fired", json{{"fired_at", now}}));

  EXPECT_EQ(ids(must(repo_.due_timers(*tx, now))), (std::vector<std::string>{"past"}));
  clock_.advance(1000ms);
  EXPECT_EQ(ids(must(repo_.due_timers(*tx, clock_.now_unix_ms()))),
            (std::vector<std::string>{"past", "soon"}));
  EXPECT_EQ(ids(must(repo_.due_timers(*tx, now + 5000))), (std::vector<std::string>{"past", "soon", "late"}));
  EXPECT_EQ(ids(must(repo_.waiting_timers(*tx))), (std::vector<std::string>{"past", "soon", "late"}));
  EXPECT_EQ(must(repo_.get_interaction(*tx, "soon")).due_at, now + 1000);
}

TEST_F(InteractionRepositoryTest, InteractionCreationIsValidated) {
  auto tx = begin();
  EXPECT_EQ(code_of(repo_.create_interaction(*tx, interaction("i1", InteractionKind::kTimer))),
            codes::kInvalidArgument)
      << "a timer needs due_at";
  InteractionRecord answered = interaction("i3");
  answered.claim_state = ClaimState::kAnswered;
  EXPECT_EQ(code_of(repo_.create_interaction(*tx, answered)), codes::kInvalidArgument);
  InteractionRecord with_response = interaction("i4");
  with_response.response = json{{"text", "x"}};
  EXPECT_EQ(code_of(repo_.create_interaction(*tx, with_response)), codes::kInvalidArgument);
  EXPECT_EQ(code_of(repo_.create_interaction(*tx, interaction("i5", InteractionKind::kAskUser, "missing"))),
            codes::kRunNotFound);
  EXPECT_EQ(code_of(repo_.create_interaction(*tx, interaction(""))), codes::kInvalidArgument);
}

TEST_F(InteractionRepositoryTest, RolledBackInteractionLeavesNothing) {
  {
    auto tx = begin();
    must(repo_.create_interaction(*tx, interaction("i1")));
    must(repo_.answer(*tx, "i1", json{{"text", "yes"}}));
    tx->rollback();
  }
  auto tx = begin(TxMode::kRead);
  EXPECT_EQ(code_of(repo_.get_interaction(*tx, "i1")), codes::kInteractionNotFound);
  EXPECT_TRUE(must(repo_.waiting_for_run(*tx, "r1")).empty());
}

// Stored text no keel value names (a damaged row, or one a newer keel wrote) is a coded error, never a crash.
TEST_F(InteractionRepositoryTest, AStoredStateOrKindNoKeelWritesIsADecodeFailure) {
  auto tx = begin();
  must(repo_.create_approval(*tx, approval("a1")));
  must(repo_.create_interaction(*tx, interaction("i1")));
  must(tx->execute("UPDATE approvals SET state = 'maybe' WHERE id = 'a1'"));
  EXPECT_EQ(code_of(repo_.get_approval(*tx, "a1")), codes::kStoreDecode);
  must(tx->execute(
      R"(UPDATE approvals SET state = 'decided', decision = '{"decision":"deny"}' WHERE id = 'a1')"));
  EXPECT_EQ(code_of(repo_.get_approval(*tx, "a1")), codes::kStoreDecode);
  must(tx->execute("UPDATE interactions SET kind = 'alarm' WHERE id = 'i1'"));
  EXPECT_EQ(code_of(repo_.get_interaction(*tx, "i1")), codes::kStoreDecode);
  must(tx->execute("UPDATE interactions SET kind = 'ask_user', claim_state = 'gone' WHERE id = 'i1'"));
  EXPECT_EQ(code_of(repo_.get_interaction(*tx, "i1")), codes::kStoreDecode);
  EXPECT_EQ(code_of(repo_.claim(*tx, "i1")), codes::kStoreDecode);
}

TEST_F(InteractionRepositoryTest, DamagedResponseIsADecodeFailure) {
  auto tx = begin();
  must(repo_.create_interaction(*tx, interaction("i1")));
  must(repo_.answer(*tx, "i1", json{{"text", "yes"}}));
  must(tx->execute("UPDATE interactions SET response = '{\"text\":' WHERE id = 'i1'"));
  EXPECT_EQ(code_of(repo_.get_interaction(*tx, "i1")), codes::kStoreDecode);
  EXPECT_EQ(code_of(repo_.claim(*tx, "i1")), codes::kStoreDecode);
}

}  // namespace
}  // namespace keel
