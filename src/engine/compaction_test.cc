// Compaction (spec §1, the context window; engine/context_window.h): a request that would pass the window's
// threshold first has the history summarized into a compaction node, which later requests and a restarted
// engine start from; with compaction off, or when the summary fails, the turn ends with a coded error and
// no oversized request is sent.
#include <gtest/gtest.h>

#include "engine/engine_errors.h"
#include "engine/engine_harness.h"
#include "store/session_context.h"

namespace keel {
namespace {

using nlohmann::json;
using testing::EngineHarness;
using testing::ScriptedResponse;

// A window of 1,000 tokens, 100 kept for the reply, compaction at 80%; no tools, so only messages count.
testing::HarnessOptions small_window(bool compaction = true) {
  testing::HarnessOptions options;
  options.engine.model.context_window_tokens = 1000;
  options.engine.model.max_output_tokens = 100;
  options.engine.model.tool_use = false;
  options.engine.compaction.enabled = compaction;
  return options;
}

// About 300 tokens of input.
std::string big_input(const std::string& tag) { return tag + ": " + std::string(1200, 'x'); }

std::string text_of(const Message& message) {
  std::string text;
  for (const ContentBlock& block : message.content) text += block.text;
  return text;
}

class CompactionTest : public ::testing::Test {
 protected:
  explicit CompactionTest(bool compaction = true) : h(small_window(compaction)) {}
  void SetUp() override {
    h.start();
    thread = h.create_thread();
    // Two turns fit: about 620 tokens and the reply's 100, under 800.
    h.provider.push(ScriptedResponse::text("one"));
    h.run_turn(thread, big_input("first"));
    h.provider.push(ScriptedResponse::text("two"));
    h.run_turn(thread, big_input("second"));
  }
  EngineHarness h;
  std::string thread;
};

TEST_F(CompactionTest, AnOversizedRequestIsPrecededByASummaryThatLaterRequestsStartFrom) {
  h.provider.push(ScriptedResponse::text("SUMMARY: the user sent two large inputs, answered one and two."));
  h.provider.push(ScriptedResponse::text("three"));
  AgentEvent done = h.run_turn(thread, big_input("third"));
  EXPECT_EQ(done.payload["stopReason"], "end") << done.payload.dump();

  auto requests = h.provider.requests();
  ASSERT_EQ(requests.size(), 4u);
  // The summary request: the replaced history as a transcript, no tools.
  EXPECT_NE(requests[2].system_prompt.find("compress"), std::string::npos);
  ASSERT_EQ(requests[2].messages.size(), 1u);
  EXPECT_NE(text_of(requests[2].messages[0]).find("User: first"), std::string::npos);
  EXPECT_NE(text_of(requests[2].messages[0]).find("Assistant: two"), std::string::npos);
  EXPECT_EQ(text_of(requests[2].messages[0]).find("third"), std::string::npos);  // the new input is kept
  // The turn's request: the summary, then the kept tail (the new input).
  ASSERT_EQ(requests[3].messages.size(), 2u);
  EXPECT_NE(text_of(requests[3].messages[0]).find("SUMMARY: the user sent"), std::string::npos);
  EXPECT_EQ(text_of(requests[3].messages[1]), big_input("third"));

  // Persisted as a node of the turn, announced like any other.
  const std::vector<std::string> kinds = h.kinds(thread);
  EXPECT_EQ(std::count(kinds.begin(), kinds.end(), "compaction"), 1);
  bool announced = false;
  for (const AgentEvent& event : h.log.of_type("item.complete"))
    announced |= event.payload["kind"] == "compaction";
  EXPECT_TRUE(announced);

  // The next turn starts from the compacted history too, and so does a restarted engine.
  h.provider.push(ScriptedResponse::text("four"));
  h.run_turn(thread, "short");
  requests = h.provider.requests();
  ASSERT_EQ(requests.size(), 5u);
  ASSERT_EQ(requests[4].messages.size(), 4u);
  EXPECT_NE(text_of(requests[4].messages[0]).find("SUMMARY"), std::string::npos);
  h.stop();
  const std::vector<NodeRecord> path = h.path(thread);
  SessionContextBuilder fresh;
  auto tx = h.store().begin(TxMode::kRead);
  ASSERT_TRUE(tx);
  auto rebuilt = fresh.build(**tx, path.back().id);
  ASSERT_TRUE(rebuilt) << rebuilt.error().to_string();
  ASSERT_EQ(rebuilt->size(), 5u);  // summary, third, three, short, four
  EXPECT_NE(text_of((*rebuilt)[0]).find("SUMMARY"), std::string::npos);
  EXPECT_EQ(text_of((*rebuilt)[3]), "short");
  EXPECT_EQ(text_of((*rebuilt)[4]), "four");
}

TEST_F(CompactionTest, AFailedSummaryEndsTheTurnWithACodedErrorAndCompactsNothing) {
  h.provider.push(ScriptedResponse::failure(Error("provider.overloaded", "busy", true)));
  AgentEvent done = h.run_turn(thread, big_input("third"));
  EXPECT_EQ(done.payload["error"]["code"], codes::kContextCompactionFailed) << done.payload.dump();
  EXPECT_NE(done.payload["error"]["message"].get<std::string>().find("provider.overloaded"),
            std::string::npos);
  EXPECT_EQ(h.provider.requests().size(), 3u);  // no oversized request went out
  const std::vector<std::string> kinds = h.kinds(thread);
  EXPECT_EQ(std::count(kinds.begin(), kinds.end(), "compaction"), 0);
}

class CompactionOffTest : public CompactionTest {
 protected:
  CompactionOffTest() : CompactionTest(/*compaction=*/false) {}
};

TEST_F(CompactionOffTest, AnOversizedRequestEndsTheTurnWithWindowExceededAndIsNotSent) {
  AgentEvent done = h.run_turn(thread, big_input("third"));
  EXPECT_EQ(done.payload["error"]["code"], codes::kContextWindowExceeded) << done.payload.dump();
  EXPECT_NE(done.payload["error"]["message"].get<std::string>().find("1000-token window"), std::string::npos);
  EXPECT_EQ(h.provider.requests().size(), 2u);
  // The input is persisted; a later, smaller thread state could still go on (nothing is lost).
  const std::vector<NodeRecord> path = h.path(thread);
  bool kept = false;
  for (const NodeRecord& node : path) {
    kept |= node.kind == NodeKind::kUserMessage && node.body["content"][0]["text"] == big_input("third");
  }
  EXPECT_TRUE(kept);
}

}  // namespace
}  // namespace keel
