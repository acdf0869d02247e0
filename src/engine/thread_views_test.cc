#include "engine/thread_views.h"

#include <gtest/gtest.h>

namespace keel {
namespace {

using nlohmann::json;

std::vector<std::string> keys_of(const json& object) {
  std::vector<std::string> keys;
  for (const auto& [key, value] : object.items()) keys.push_back(key);
  return keys;
}

TEST(ThreadViewsTest, AThreadEntryHasThreadListsFieldsAndNullsForWhatIsMissing) {
  ThreadRecord thread;
  thread.id = "t1";
  thread.title = "a title";
  thread.revision = 3;
  thread.updated_at = 42;
  thread.created_at = 7;
  const json entry = thread_entry_json(thread);
  EXPECT_EQ(keys_of(entry), (std::vector<std::string>{"leafNodeId", "parentThreadId", "revision", "threadId",
                                                      "title", "updatedAt"}));
  EXPECT_TRUE(entry["leafNodeId"].is_null());
  EXPECT_TRUE(entry["parentThreadId"].is_null());
  thread.leaf_node_id = "n9";
  thread.parent_thread_id = "t0";
  EXPECT_EQ(thread_entry_json(thread)["leafNodeId"], "n9");
  EXPECT_EQ(thread_entry_json(thread)["parentThreadId"], "t0");
}

TEST(ThreadViewsTest, ARunSummaryNamesItsStateAndStopReason) {
  RunRecord run;
  run.id = "r1";
  run.turn_id = "u1";
  run.state = RunState::kBudgetPaused;
  run.stop_reason = "budget";
  run.usage = {{"inputTokens", 5}};
  EXPECT_EQ(run_summary_json(run), (json{{"runId", "r1"},
                                         {"turnId", "u1"},
                                         {"state", "budget_paused"},
                                         {"stopReason", "budget"},
                                         {"usage", {{"inputTokens", 5}}}}));
}

TEST(ThreadViewsTest, ANodeHasTheProtocolsKeys) {
  NodeRecord node;
  node.id = "n1";
  node.kind = NodeKind::kUserMessage;
  node.body = {{"content", json::array()}};
  node.created_at = 9;
  EXPECT_EQ(node_json(node), (json{{"id", "n1"},
                                   {"kind", "user_message"},
                                   {"runId", nullptr},
                                   {"body", {{"content", json::array()}}},
                                   {"createdAt", 9}}));
}

}  // namespace
}  // namespace keel
