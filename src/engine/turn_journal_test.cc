// Tests for TurnJournal (engine/turn_journal.h): each method's one transaction, what it changes of the
// Turn, and the events it returns for what it committed.
#include "engine/turn_journal.h"

#include <gtest/gtest.h>

#include "engine/turn_fixture.h"

namespace keel {
namespace {

using nlohmann::json;
using Types = std::vector<std::string>;

class TurnJournalTest : public testing::TurnFixture {
 protected:
  std::vector<PlannedCall> plan_two() {
    AssembledResponse response;
    response.tool_calls = {asked("c1", "echo", R"({"text":"a"})"), asked("c2", "echo", R"({"text":"b"})")};
    return on_strand([&] { return calls().plan(response); });
  }
  Result<Events> commit(const TurnJournal::Reply& reply) {
    return on_strand([&] { return journal().commit_reply(reply); });
  }
};

TEST_F(TurnJournalTest, AReplysEventsAreItsCommittedNodesThenUsageThenTheRun) {
  const std::vector<PlannedCall> planned = plan_two();
  TurnJournal::Reply reply = reply_with(planned);
  reply.dispatch = TurnJournal::dispatch_record(planned[0]);
  Result<Events> events = commit(reply);
  ASSERT_TRUE(events) << events.error().to_string();

  EXPECT_EQ(types_of(*events),
            (Types{"item.complete", "item.complete", "item.complete", "token.usage", "run.updated"}));
  const std::vector<NodeRecord> stored = path();
  ASSERT_EQ(stored.size(), 4u);  // the user message, then what this reply committed
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ((*events)[i].payload.value("itemId", ""), stored[i + 1].id) << "event " << i;
  }
  EXPECT_EQ(stored[1].kind, NodeKind::kAssistantMessage);
  EXPECT_EQ(stored[2].id, planned[0].call_node_id);
  EXPECT_EQ(stored[3].id, planned[1].call_node_id);

  const RunRecord run = stored_run();
  EXPECT_EQ(run.state, RunState::kExecutingTool);
  EXPECT_EQ(run.step_cursor, 1);
  EXPECT_EQ(run.pending_tool, TurnJournal::dispatch_record(planned[0]));
  EXPECT_EQ((*events)[4].payload.value("state", ""), "executing_tool");
  EXPECT_EQ((*events)[4].payload.value("revision", int64_t{0}), run.revision);
  EXPECT_EQ(turn().run.revision, run.revision) << "the turn holds the run as committed";
  EXPECT_EQ(turn().unanswered.size(), 2u) << "both calls wait for their result";
}

TEST_F(TurnJournalTest, AFailedCommitReportsTheErrorAndLeavesTheRunAndTheHistoryAsTheyWere) {
  const RunRecord before = stored_run();
  const size_t nodes_before = path().size();
  const std::vector<PlannedCall> planned = plan_two();
  fail_points.arm("store.commit", FailPoints::Action::kError);

  Result<Events> events = commit(reply_with(planned));

  ASSERT_FALSE(events.has_value());
  EXPECT_EQ(events.error().code(), codes::kFailPoint);
  EXPECT_EQ(turn().run.revision, before.revision);
  EXPECT_EQ(turn().run.state, RunState::kStreamingModel);
  EXPECT_TRUE(turn().unanswered.empty());
  EXPECT_EQ(stored_run().revision, before.revision);
  EXPECT_EQ(stored_run().state, RunState::kStreamingModel);
  EXPECT_EQ(path().size(), nodes_before);
}

TEST_F(TurnJournalTest, AFailedDispatchRecordLeavesTheRunWithoutOne) {
  const std::vector<PlannedCall> planned = commit_calls({asked("c1", "write_note")});
  const RunRecord before = stored_run();
  fail_points.arm("store.commit", FailPoints::Action::kError);

  Result<void> recorded = on_strand([&] { return journal().record_dispatch(planned[0]); });

  ASSERT_FALSE(recorded.has_value());
  EXPECT_EQ(turn().run.revision, before.revision);
  EXPECT_FALSE(turn().run.pending_tool.has_value());
  EXPECT_FALSE(stored_run().pending_tool.has_value());
}

TEST_F(TurnJournalTest, WithToolsOffEveryCallCommitsWithANotRunResult) {
  turn().tools_off = true;
  const std::vector<PlannedCall> planned = plan_two();
  TurnJournal::Reply reply = reply_with(planned);
  reply.next = RunState::kFailed;
  reply.tools_refused = Error("turn.tools_disabled", "tools are off");

  Result<Events> events = commit(reply);
  ASSERT_TRUE(events) << events.error().to_string();

  EXPECT_EQ(types_of(*events), (Types{"item.complete", "item.complete", "item.complete", "item.complete",
                                      "item.complete", "token.usage", "run.updated"}));
  const std::vector<NodeRecord> stored = path();
  ASSERT_EQ(stored.size(), 6u);
  EXPECT_EQ(stored[3].id, planned[0].result_node_id);
  EXPECT_TRUE(stored[3].body.value("isError", false));
  EXPECT_EQ(stored[5].id, planned[1].result_node_id);
  const RunRecord run = stored_run();
  EXPECT_EQ(run.state, RunState::kFailed);
  EXPECT_EQ(run.stop_reason, "error");
}

TEST_F(TurnJournalTest, TheBreakersNoticesWaitForTheResponsesLastResult) {
  const std::vector<PlannedCall> planned = commit_calls({asked("c1", "echo"), asked("c2", "echo")});
  auto result_of = [](const PlannedCall& call) {
    return [id = call.tool_call_id](Transaction&) -> Result<json> {
      return encode_tool_result(ToolResultBody{.tool_call_id = id, .content = text_result("ok").content});
    };
  };

  Result<Events> first = on_strand([&] {
    return journal().append_result(planned[0], result_of(planned[0]), {"a notice"}, RunState::kExecutingTool,
                                   /*announce_run=*/false);
  });
  ASSERT_TRUE(first) << first.error().to_string();
  EXPECT_EQ(types_of(*first), (Types{"item.complete"})) << "no notice between one response's results";
  EXPECT_EQ(turn().held_notices, (std::vector<std::string>{"a notice"}));

  Result<Events> last = on_strand([&] {
    return journal().append_result(planned[1], result_of(planned[1]), {}, RunState::kStreamingModel,
                                   /*announce_run=*/true);
  });
  ASSERT_TRUE(last) << last.error().to_string();
  EXPECT_EQ(types_of(*last), (Types{"item.complete", "item.complete", "run.updated"}));
  const std::vector<NodeRecord> stored = path();
  ASSERT_GE(stored.size(), 2u);
  EXPECT_EQ(stored[stored.size() - 2].id, planned[1].result_node_id);
  EXPECT_EQ(stored.back().kind, NodeKind::kNotice);
  EXPECT_EQ(stored.back().body.value("text", ""), "a notice");
  EXPECT_TRUE(turn().held_notices.empty());
  EXPECT_TRUE(turn().unanswered.empty());
  EXPECT_EQ(stored_run().state, RunState::kStreamingModel);
}

TEST_F(TurnJournalTest, AdmittedSteersBecomeSteeredMessagesInAdmissionOrderOnce) {
  ASSERT_TRUE(engine().write([&](Transaction& tx) -> Result<void> {
    KEEL_TRY(engine().runs().admit_steer(tx, kRunId, "steer-1",
                                         json::array({{{"type", "text"}, {"text", "one"}}})));
    KEEL_TRY(engine().runs().admit_steer(tx, kRunId, "steer-2",
                                         json::array({{{"type", "text"}, {"text", "two"}}})));
    return {};
  }));

  Result<Events> taken = on_strand([&] { return journal().take_steers(); });
  ASSERT_TRUE(taken) << taken.error().to_string();
  EXPECT_EQ(types_of(*taken), (Types{"item.complete", "item.complete"}));
  const std::vector<NodeRecord> stored = path();
  ASSERT_EQ(stored.size(), 3u);
  EXPECT_EQ(stored[1].body.value("steerId", ""), "steer-1");
  EXPECT_EQ(stored[2].body.value("steerId", ""), "steer-2");
  EXPECT_EQ((*taken)[1].payload.value("itemId", ""), stored[2].id);

  Result<Events> again = on_strand([&] { return journal().take_steers(); });
  ASSERT_TRUE(again) << again.error().to_string();
  EXPECT_TRUE(again->empty());
  EXPECT_EQ(path().size(), 3u);
}

TEST_F(TurnJournalTest, OpeningAWaitCommitsItsApprovalWithTheWaitingRunThenAnnouncesBoth) {
  const std::vector<PlannedCall> planned = commit_calls({asked("c1", "write_note")});
  TurnJournal::Wait wait;
  wait.id = "approval-1";
  wait.pending = TurnJournal::dispatch_record(planned[0]);
  wait.pending.wait = PendingTool::Wait{.kind = WaitKind::kApproval, .id = wait.id};
  ApprovalRecord record;
  record.id = wait.id;
  record.run_id = kRunId;
  record.tool_call_id = planned[0].tool_call_id;
  record.request = {{"toolCallId", planned[0].tool_call_id}};
  wait.approval = record;

  Result<Events> opened = on_strand([&] { return journal().open_wait(wait); });
  ASSERT_TRUE(opened) << opened.error().to_string();

  EXPECT_EQ(types_of(*opened), (Types{"run.updated", "approval.request"}));
  EXPECT_EQ((*opened)[0].payload.value("state", ""), "waiting_approval");
  const RunRecord run = stored_run();
  EXPECT_EQ(run.state, RunState::kWaitingApproval);
  EXPECT_EQ(run.pending_tool, wait.pending);
  ASSERT_TRUE(wait.approval.has_value());
  EXPECT_GT(wait.approval->created_at, 0) << "the journal hands back the approval as stored";
}

TEST_F(TurnJournalTest, AnInterruptAnswersEveryOpenCallSayingWhichOneMayHavePartlyRun) {
  const std::vector<PlannedCall> planned = commit_calls({asked("c1", "echo"), asked("c2", "echo")});

  Result<Events> ended =
      on_strand([&] { return journal().end(Ending::interrupted("", planned[0].tool_call_id)); });
  ASSERT_TRUE(ended) << ended.error().to_string();

  EXPECT_EQ(types_of(*ended), (Types{"item.complete", "item.complete", "item.complete", "run.updated"}));
  const std::vector<NodeRecord> stored = path();
  ASSERT_GE(stored.size(), 3u);
  const NodeRecord& first = stored[stored.size() - 3];
  const NodeRecord& second = stored[stored.size() - 2];
  EXPECT_EQ(first.id, planned[0].result_node_id);
  EXPECT_NE(first.body.dump().find("may have partly run"), std::string::npos) << first.body.dump();
  EXPECT_EQ(second.id, planned[1].result_node_id);
  EXPECT_NE(second.body.dump().find("it was not run"), std::string::npos) << second.body.dump();
  EXPECT_EQ(stored.back().kind, NodeKind::kNotice);
  EXPECT_EQ(stored_run().state, RunState::kInterrupted);
  EXPECT_TRUE(turn().unanswered.empty());
}

}  // namespace
}  // namespace keel
