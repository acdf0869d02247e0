// keel serve when its store stops accepting writes (issue 14, point 14): a failed sync poisons the store
// (it refuses every write until reopened), as a full disk does. The server must not run on refusing
// everything with its turn hanging: it ends the turn and exits with 75 for a supervisor; started again on
// the same data directory (space is back), it recovers the turn and takes new ones.
#include <fstream>

#include "serve_fixture.h"

namespace keel::e2e {
namespace {

using nlohmann::json;

using ServeStoreFailureTest = ServeFixture;

json list_files_call() {
  return {{"type", "tool_calls"},
          {"calls", json::array({{{"id", "c1"}, {"name", "list_files"}, {"arguments", json::object()}}})}};
}

TEST_F(ServeStoreFailureTest, AFailedSyncEndsTheServerWithStatus75AndARestartRecoversTheTurn) {
  std::ofstream(workspace_ / "notes.txt") << "a note\n";
  start_model({{"responses",
                json::array({response(std::nullopt, json::array({list_files_call()})),
                             response(std::nullopt, json::array({text_step("listed after the restart")})),
                             response(std::nullopt, json::array({text_step("a new turn")}))})}});
  // Syncs: 1 the engine's event epoch at start, 2 thread.create, 3 turn.submit, 4 the model's reply with its
  // call, 5 the call's result: from the fifth on every sync fails, as on a full disk.
  extra_environment_ = {"KEEL_FAILPOINTS=store.sync.before=error@5*"};
  auto first = serve_stdio();
  ASSERT_NE(first.client, nullptr);
  const std::string thread = create_thread(*first.client);
  const std::string turn = submit(*first.client, thread, "list the workspace");
  ASSERT_FALSE(turn.empty());
  const std::optional<int> status = first.process->wait_exit();
  ASSERT_TRUE(status.has_value()) << "keel serve kept running on a store that refuses every write";
  EXPECT_EQ(*status, 75) << first.process->err();
  EXPECT_NE(first.process->err().find("the store refuses writes"), std::string::npos) << first.process->err();

  extra_environment_.clear();
  auto second = serve_stdio();
  ASSERT_NE(second.client, nullptr);
  auto init = second.client->request("initialize", {{"subscribe", true}});
  ASSERT_TRUE(init.contains("result")) << init.dump();
  auto complete = second.client->wait_event(thread, "turn.complete");
  EXPECT_EQ(complete["payload"]["turnId"], turn);
  EXPECT_EQ(complete["payload"]["stopReason"], "end") << complete.dump();
  const std::string next = submit(*second.client, thread, "and now?");
  ASSERT_FALSE(next.empty());
  auto again = second.client->wait_event(thread, "turn.complete", 2);
  EXPECT_EQ(again["payload"]["turnId"], next);
  EXPECT_EQ(again["payload"]["stopReason"], "end") << again.dump();
  auto read = second.client->request("thread.read", {{"threadId", thread}});
  ASSERT_TRUE(read.contains("result")) << read.dump();
  size_t results = 0;
  for (const json& node : read["result"]["nodes"]) results += node["kind"] == "tool_result";
  EXPECT_EQ(results, 1u) << read.dump();
}

}  // namespace
}  // namespace keel::e2e
