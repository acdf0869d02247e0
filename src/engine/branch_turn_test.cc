// Integration tests of "edit and resend": turn.submit{parentNodeId} puts the new turn under an earlier node,
// which starts a branch of the thread that the turn runs on (docs/protocol.md, Branches). The model's
// request holds that branch's history only; the old branch stays as it was and can be selected back; a run
// on the new branch that dies mid-turn is recovered on it; and a node where no turn can start is refused.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/engine_harness.h"
#include "keel/error_codes.h"
#include "util/fail_points.h"

namespace keel {
namespace {

using nlohmann::json;
using testing::EngineHarness;
using testing::HarnessOptions;
using testing::ScriptedResponse;

// "user: text" / "assistant: text" for each message of a model request, to compare histories whole.
std::vector<std::string> branch_transcript(const std::vector<Message>& messages) {
  std::vector<std::string> out;
  for (const Message& message : messages) {
    std::string text;
    for (const ContentBlock& block : message.content) {
      if (block.kind == ContentBlock::Kind::kText) text += block.text;
    }
    out.push_back(std::string(message.role == Role::kUser ? "user" : "assistant") + ": " + text);
  }
  return out;
}

std::vector<std::string> branch_node_texts(const json& nodes) {
  std::vector<std::string> out;
  for (const json& node : nodes) {
    if (node["kind"] != "user_message" && node["kind"] != "assistant_message") continue;
    std::string text;
    for (const json& block : node["body"]["content"]) {
      if (block.value("type", "") == "text") text += block.value("text", "");
    }
    out.push_back(text);
  }
  return out;
}

// The id of the node on the thread's path whose text (user or assistant message) is `text`.
std::string branch_node_with_text(EngineHarness& h, const std::string& thread, const std::string& text) {
  for (const NodeRecord& node : h.path(thread)) {
    if (node.kind != NodeKind::kUserMessage && node.kind != NodeKind::kAssistantMessage) continue;
    for (const json& block : node.body["content"]) {
      if (block.value("text", "") == text) return node.id;
    }
  }
  ADD_FAILURE() << "no node says '" << text << "'";
  return "";
}

json branch_submit(const std::string& thread, const std::string& input, json parent) {
  return {{"threadId", thread}, {"input", input}, {"parentNodeId", std::move(parent)}};
}

TEST(BranchTurnTest, ASubmitUnderAnEarlierNodeRunsOnANewBranchAndTheOldOneStaysSelectable) {
  EngineHarness h;
  h.provider.push(ScriptedResponse::text("first answer"));
  h.provider.push(ScriptedResponse::text("second answer"));
  h.provider.push(ScriptedResponse::text("edited answer"));
  h.provider.push(ScriptedResponse::text("third answer"));
  h.start();
  const std::string thread = h.create_thread();
  h.run_turn(thread, "first question");
  h.run_turn(thread, "second question");
  const std::string first_answer = branch_node_with_text(h, thread, "first answer");
  const std::string old_leaf = h.path(thread).back().id;
  const std::string old_turn_context = h.path(thread)[3].id;
  ASSERT_EQ(h.path(thread)[3].kind, NodeKind::kTurnContext);

  AgentEvent ack = h.request("turn.submit", branch_submit(thread, "second question, edited", first_answer));
  ASSERT_EQ(ack.type, "command.ack") << ack.payload.dump();
  const std::string user_node = ack.payload["result"]["userNodeId"];
  h.wait_complete(thread, 3);

  // The model saw the branch: the first exchange and the edited question, not the old second exchange.
  ASSERT_EQ(h.provider.requests().size(), 3u);
  EXPECT_EQ(branch_transcript(h.provider.requests()[2].messages),
            (std::vector<std::string>{"user: first question", "assistant: first answer",
                                      "user: second question, edited"}));
  // Every client hears that the thread moved to another branch, before the turn's own events.
  std::vector<AgentEvent> updates = h.log.of_type("thread.updated");
  auto moved = std::ranges::find_if(
      updates, [&](const AgentEvent& e) { return e.payload.value("leafNodeId", "") == user_node; });
  ASSERT_NE(moved, updates.end()) << "no thread.updated for the new branch";
  EXPECT_EQ(moved->thread_id, thread);
  EXPECT_TRUE(moved->payload["revision"].is_number_integer());

  AgentEvent read = h.request("thread.read", {{"threadId", thread}});
  EXPECT_EQ(branch_node_texts(read.payload["result"]["nodes"]),
            (std::vector<std::string>{"first question", "first answer", "second question, edited",
                                      "edited answer"}));
  AgentEvent listed = h.request("thread.branches", {{"threadId", thread}});
  const json& branches = listed.payload["result"]["branches"];
  ASSERT_EQ(branches.size(), 2u) << listed.payload.dump();
  EXPECT_EQ(listed.payload["result"]["selectedLeafNodeId"], branches[0]["leafNodeId"]);
  EXPECT_EQ(branches[0]["preview"], "edited answer");
  EXPECT_EQ(branches[1]["leafNodeId"], old_leaf);
  EXPECT_EQ(branches[1]["forkNodeId"], first_answer);
  EXPECT_EQ(branches[1]["firstNodeId"], old_turn_context);
  EXPECT_EQ(branches[1]["preview"], "second answer");

  // The old branch is intact: selected back, it reads as before and the next turn continues it.
  ASSERT_EQ(h.request("thread.selectBranch", {{"threadId", thread}, {"leafNodeId", old_leaf}}).type,
            "command.ack");
  AgentEvent back = h.request("thread.read", {{"threadId", thread}});
  EXPECT_EQ(branch_node_texts(back.payload["result"]["nodes"]),
            (std::vector<std::string>{"first question", "first answer", "second question", "second answer"}));
  h.run_turn(thread, "third question");
  EXPECT_EQ(
      branch_transcript(h.provider.requests()[3].messages),
      (std::vector<std::string>{"user: first question", "assistant: first answer", "user: second question",
                                "assistant: second answer", "user: third question"}));
  EXPECT_EQ(h.request("thread.branches", {{"threadId", thread}}).payload["result"]["branches"].size(), 2u);
}

TEST(BranchTurnTest, AnEmptyParentStartsTheTurnFromAnEmptyHistory) {
  EngineHarness h;
  h.provider.push(ScriptedResponse::text("first answer"));
  h.provider.push(ScriptedResponse::text("fresh answer"));
  h.start();
  const std::string thread = h.create_thread();
  h.run_turn(thread, "first question");
  const std::string old_root = h.path(thread).front().id;
  ASSERT_EQ(h.request("turn.submit", branch_submit(thread, "first question, edited", "")).type,
            "command.ack");
  h.wait_complete(thread, 2);
  EXPECT_EQ(branch_transcript(h.provider.requests()[1].messages),
            (std::vector<std::string>{"user: first question, edited"}));
  EXPECT_EQ(h.kinds(thread), (std::vector<std::string>{"turn_context", "user_message", "assistant_message"}));
  AgentEvent listed = h.request("thread.branches", {{"threadId", thread}});
  const json& branches = listed.payload["result"]["branches"];
  ASSERT_EQ(branches.size(), 2u) << listed.payload.dump();
  EXPECT_TRUE(branches[1]["forkNodeId"].is_null()) << "the two branches share no node";
  EXPECT_EQ(branches[1]["firstNodeId"], old_root);
  EXPECT_EQ(branches[1]["preview"], "first answer");
}

TEST(BranchTurnTest, ANodeWhereNoTurnCanStartIsRefusedAndChangesNothing) {
  EngineHarness h;
  h.provider.push(ScriptedResponse::text("answer"));
  h.provider.push(ScriptedResponse::text("other answer"));
  h.provider.push(ScriptedResponse::stall());
  h.start();
  const std::string thread = h.create_thread();
  const std::string other = h.create_thread();
  h.run_turn(thread, "question");
  h.run_turn(other, "other question");
  const std::vector<NodeRecord> path = h.path(thread);
  ASSERT_EQ(path.size(), 3u);
  const std::string turn_context = path[0].id;
  const std::string question = path[1].id;
  const std::string answer = path[2].id;
  const int64_t revision = h.request("thread.read", {{"threadId", thread}}).payload["result"]["revision"];
  auto refusal = [&](json parent) {
    AgentEvent answer_event = h.request("turn.submit", branch_submit(thread, "again", std::move(parent)));
    EXPECT_EQ(answer_event.type, "command.rejected") << answer_event.payload.dump();
    return answer_event.payload["error"].value("code", "");
  };
  EXPECT_EQ(refusal("no-such-node"), codes::kNodeNotFound);
  EXPECT_EQ(refusal(h.path(other).back().id), codes::kNodeNotInThread);
  EXPECT_EQ(refusal(question), codes::kInvalidArgument) << "a user message is inside its turn";
  EXPECT_EQ(refusal(turn_context), codes::kInvalidArgument) << "a turn's start is inside it";
  EXPECT_EQ(refusal(42), codes::kInvalidArgument);
  AgentEvent read = h.request("thread.read", {{"threadId", thread}});
  EXPECT_EQ(read.payload["result"]["revision"], revision) << "a refused submit writes nothing";
  EXPECT_EQ(read.payload["result"]["leafNodeId"], answer);
  EXPECT_EQ(h.provider.requests().size(), 2u);

  // Under the leaf it is an ordinary turn; while it runs, a branch is refused as any submit is.
  ASSERT_EQ(h.request("turn.submit", branch_submit(thread, "go on", answer)).type, "command.ack");
  ASSERT_TRUE(h.log.wait_until([&](const auto&) { return h.provider.requests().size() == 3; }));
  EXPECT_EQ(refusal(""), codes::kTurnBusy);
  ASSERT_EQ(h.request("turn.interrupt", {{"threadId", thread}}).type, "command.ack");
}

TEST(BranchTurnTest, ATurnOnANewBranchThatDiedMidStreamIsRecoveredOnThatBranch) {
  FailPoints fail_points;
  HarnessOptions options;
  options.fail_points = &fail_points;
  EngineHarness h(options);
  h.provider.push(ScriptedResponse::text("first answer"));
  h.provider.push(ScriptedResponse::text("second answer"));
  h.provider.push(ScriptedResponse::stall());
  h.start();
  const std::string thread = h.create_thread();
  h.run_turn(thread, "first question");
  h.run_turn(thread, "second question");
  const std::string first_answer = branch_node_with_text(h, thread, "first answer");
  const std::string old_leaf = h.path(thread).back().id;
  AgentEvent ack = h.request("turn.submit", branch_submit(thread, "second question, edited", first_answer));
  ASSERT_EQ(ack.type, "command.ack") << ack.payload.dump();
  const std::string run_id = ack.payload["result"]["runId"];
  ASSERT_TRUE(h.log.wait_until([&](const auto&) { return h.provider.requests().size() == 3; }));
  // The "crash": every store write fails from now on, then the engine is dropped.
  fail_points.arm("store.begin", FailPoints::Action::kError, 1, /*repeat=*/true);
  h.stop();
  fail_points.disarm_all();
  EXPECT_EQ(h.run(run_id).state, RunState::kStreamingModel);

  h.provider.push(ScriptedResponse::text("edited answer"));
  h.start();
  h.wait_run_state(run_id, RunState::kCompleted);
  ASSERT_EQ(h.provider.requests().size(), 4u);
  EXPECT_EQ(branch_transcript(h.provider.requests()[3].messages),
            (std::vector<std::string>{"user: first question", "assistant: first answer",
                                      "user: second question, edited"}));
  AgentEvent read = h.request("thread.read", {{"threadId", thread}});
  EXPECT_EQ(branch_node_texts(read.payload["result"]["nodes"]),
            (std::vector<std::string>{"first question", "first answer", "second question, edited",
                                      "edited answer"}));
  AgentEvent listed = h.request("thread.branches", {{"threadId", thread}});
  ASSERT_EQ(listed.payload["result"]["branches"].size(), 2u);
  EXPECT_EQ(listed.payload["result"]["branches"][1]["leafNodeId"], old_leaf);
}

}  // namespace
}  // namespace keel
