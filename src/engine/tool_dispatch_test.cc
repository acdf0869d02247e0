// How the engine runs tool calls (issue 14): on its own worker threads, never on the I/O threads that run
// every thread's turn, each call within a time budget. Whole turns through the DirectTransport.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

#include "engine/engine_errors.h"
#include "engine/engine_harness.h"
#include "engine/tool_workers.h"
#include "tools/builtin/builtin_tools.h"

namespace keel {
namespace {

using nlohmann::json;
using testing::EngineHarness;
using testing::HarnessOptions;
using testing::ScriptedResponse;

// A tool that blocks its worker thread until the test releases it, whatever its cancellation says (a tool
// stuck in a computation or a blocking call). Records whether its cancellation fired.
class StuckTool final : public AgentTool {
 public:
  StuckTool() : spec_(testing::simple_spec("stuck")) {}
  const ToolSpec& spec() const override { return spec_; }
  void execute(ToolCallContext context, json, std::function<void(Result<ToolResult>)> done) override {
    CancellationRegistration registration = context.cancel.on_cancel([this] { cancelled = true; });
    context.progress(ToolProgress{"stuck", nullptr});
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return released_; });
    lock.unlock();
    done(text_result("finally"));
  }
  void release() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      released_ = true;
    }
    cv_.notify_all();
  }
  std::atomic<bool> cancelled{false};

 private:
  ToolSpec spec_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool released_ = false;
};

// Releases the stuck tool when the test ends, pass or fail, so its thread does not outlive the test.
struct Release {
  std::shared_ptr<StuckTool> tool;
  ~Release() { tool->release(); }
};

std::vector<NodeRecord> results_of(EngineHarness& h, const std::string& thread) {
  std::vector<NodeRecord> out;
  for (const NodeRecord& node : h.path(thread)) {
    if (node.kind == NodeKind::kToolResult) out.push_back(node);
  }
  return out;
}

// Issue 14: `search_files` with these patterns overflowed the stack (the first) or never returned (the
// second) inside a backtracking matcher on the engine's I/O thread. Now the turn completes with their
// matches, and another thread's turn runs meanwhile.
TEST(ToolDispatchTest, PatternsThatDefeatABacktrackingMatcherCompleteTheTurn) {
  EngineHarness h;
  const auto root = h.dir.path() / "workspace";
  std::filesystem::create_directories(root);
  std::string abab;
  while (abab.size() < 4096) abab += "ab";
  {
    std::ofstream(root / "abab.txt") << abab << "\n" << abab << "c\n";
    std::ofstream(root / "aaa.txt") << std::string(100, 'a') << "!\n" << std::string(64, 'a') << "\n";
  }
  ASSERT_TRUE(builtin::register_builtin_tools(
      h.tools, {.workspace_root = root, .workspace_limits = {.max_file_bytes = 1 << 20}}));
  h.provider.push(ScriptedResponse::tool_calls(
      {{"s1", "search_files", json{{"pattern", "((((((((((a|b))))))))))*c"}, {"regex", true}}.dump()},
       {"s2", "search_files", json{{"pattern", "^(a|aa)+$"}, {"regex", true}}.dump()}}));
  h.provider.push(ScriptedResponse::text("searched"));
  h.start();
  const std::string thread = h.create_thread();
  AgentEvent done = h.run_turn(thread, "search");
  EXPECT_EQ(done.payload["stopReason"], "end") << done.payload.dump();
  const auto results = results_of(h, thread);
  ASSERT_EQ(results.size(), 2u);
  for (const NodeRecord& result : results) EXPECT_FALSE(result.body.value("isError", true)) << result.body;
  EXPECT_EQ(results[0].body["details"]["matches"].size(), 1u) << results[0].body;
  EXPECT_EQ(results[0].body["details"]["matches"][0]["path"], "abab.txt");
  EXPECT_EQ(results[1].body["details"]["matches"].size(), 1u) << results[1].body;
  EXPECT_EQ(results[1].body["details"]["matches"][0]["line"], 2);
  // The engine still serves another thread.
  h.provider.push(ScriptedResponse::text("still here"));
  const std::string other = h.create_thread();
  EXPECT_EQ(h.run_turn(other, "hello").payload["stopReason"], "end");
}

// A tool that never returns holds a worker, not the engine: another thread's turn runs to its end (with the
// engine's single I/O thread), an interrupt ends the stuck turn, and shutdown returns although the tool
// ignores its cancellation.
TEST(ToolDispatchTest, AStuckToolHoldsUpNeitherOtherThreadsNorInterruptNorShutdown) {
  HarnessOptions options;
  options.engine.io_threads = 1;
  options.engine.tool_shutdown_grace = std::chrono::milliseconds(0);
  EngineHarness h(options);
  auto stuck = std::make_shared<StuckTool>();
  Release release{stuck};
  ASSERT_TRUE(h.tools.register_tool(stuck));
  h.provider.push(ScriptedResponse::tool_calls({{"c1", "stuck", "{}"}}));
  h.start();
  const std::string blocked = h.create_thread();
  AgentEvent ack = h.request("turn.submit", {{"threadId", blocked}, {"input", "go"}});
  ASSERT_EQ(ack.type, "command.ack");
  h.wait_tool_progress(blocked);

  h.provider.push(ScriptedResponse::text("meanwhile"));
  const std::string other = h.create_thread();
  const size_t before = h.completes(other);
  h.send("turn.submit", {{"threadId", other}, {"input", "hi"}});
  const bool other_completed = h.log.wait_until([&](const std::vector<AgentEvent>& events) {
    size_t n = 0;
    for (const AgentEvent& e : events) n += e.type == "turn.complete" && e.thread_id == other;
    return n > before;
  });
  EXPECT_TRUE(other_completed) << "a stuck tool held up another thread's turn";
  if (!other_completed) stuck->release();  // let a broken engine go on, so the test ends

  AgentEvent interrupted = h.request("turn.interrupt", {{"threadId", blocked}});
  EXPECT_EQ(interrupted.type, "command.ack") << interrupted.payload.dump();
  EXPECT_EQ(h.wait_complete(blocked, 1).payload["stopReason"], "interrupted");
  EXPECT_TRUE(stuck->cancelled);
  h.stop();  // returns although the tool still blocks its worker
}

// The call's time budget ends a tool that does not return: the model gets a tool.timed_out error result,
// the call's cancellation fires, and the turn goes on.
TEST(ToolDispatchTest, ACallPastItsTimeBudgetEndsWithATimeoutAndIsCancelled) {
  HarnessOptions options;
  options.engine.tool_time_budget = std::chrono::milliseconds(5000);
  options.engine.tool_shutdown_grace = std::chrono::milliseconds(0);
  EngineHarness h(options);
  auto stuck = std::make_shared<StuckTool>();
  Release release{stuck};
  ASSERT_TRUE(h.tools.register_tool(stuck));
  h.provider.push(ScriptedResponse::tool_calls({{"c1", "stuck", "{}"}}));
  h.provider.push(ScriptedResponse::text("it timed out"));
  h.start();
  const std::string thread = h.create_thread();
  AgentEvent ack = h.request("turn.submit", {{"threadId", thread}, {"input", "go"}});
  ASSERT_EQ(ack.type, "command.ack");
  h.wait_tool_progress(thread);
  EXPECT_EQ(h.completes(thread), 0u);
  ASSERT_TRUE(h.clock.wait_scheduled(1));
  ASSERT_EQ(h.clock.delays(), std::vector<std::chrono::milliseconds>{std::chrono::milliseconds(5000)});
  h.clock.advance(std::chrono::milliseconds(4999));
  EXPECT_EQ(h.completes(thread), 0u);
  EXPECT_FALSE(stuck->cancelled);
  h.clock.advance(std::chrono::milliseconds(1));  // the budget ends, in no real time
  AgentEvent done = h.wait_complete(thread, 1);
  EXPECT_EQ(done.payload["stopReason"], "end") << done.payload.dump();
  EXPECT_TRUE(stuck->cancelled);
  const auto results = results_of(h, thread);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_TRUE(results[0].body.value("isError", false));
  EXPECT_EQ(results[0].body["details"]["code"], codes::kToolTimedOut) << results[0].body;
  // The tool finishing late changes nothing.
  stuck->release();
  h.stop();
  EXPECT_EQ(results_of(h, thread).size(), 1u);
}

// The wait tool asks for a budget that covers its wait, so the engine's default does not cut it short.
TEST(ToolDispatchTest, TheWaitToolsBudgetCoversItsWait) {
  HarnessOptions options;
  options.engine.tool_time_budget = std::chrono::milliseconds(1000);
  EngineHarness h(options);
  ASSERT_TRUE(builtin::register_builtin_tools(h.tools, {.scheduler = &h.clock}));
  h.provider.push(ScriptedResponse::tool_calls({{"w1", "wait", R"({"seconds": 30})"}}));
  h.provider.push(ScriptedResponse::text("waited"));
  h.start();
  const std::string thread = h.create_thread();
  h.send("turn.submit", {{"threadId", thread}, {"input", "wait"}});
  // The wait's first tick and the call's budget are armed; the budget is longer than the wait.
  ASSERT_TRUE(h.clock.wait_scheduled(2));
  const auto delays = h.clock.delays();
  EXPECT_GE(*std::max_element(delays.begin(), delays.end()), std::chrono::milliseconds(30000));
  h.stop();
}

// The pool: a job that never returns is abandoned; the next job still runs.
TEST(ToolWorkersTest, AnAbandonedJobFreesItsSlotAndShutdownDoesNotWaitForIt) {
  struct Shared {
    std::mutex mu;
    std::condition_variable cv;
    bool started = false;
    bool release = false;
    bool second_ran = false;
  };
  auto shared = std::make_shared<Shared>();  // the abandoned job may outlive this test's frame
  ToolWorkers workers(1);
  auto first = workers.post([shared] {
    std::unique_lock<std::mutex> lock(shared->mu);
    shared->started = true;
    shared->cv.notify_all();
    shared->cv.wait(lock, [&] { return shared->release; });
  });
  {
    std::unique_lock<std::mutex> lock(shared->mu);
    ASSERT_TRUE(shared->cv.wait_for(lock, std::chrono::seconds(30), [&] { return shared->started; }));
  }
  workers.post([shared] {
    std::lock_guard<std::mutex> lock(shared->mu);
    shared->second_ran = true;
    shared->cv.notify_all();
  });
  workers.abandon(first);
  {
    std::unique_lock<std::mutex> lock(shared->mu);
    EXPECT_TRUE(shared->cv.wait_for(lock, std::chrono::seconds(30), [&] { return shared->second_ran; }))
        << "the job after an abandoned one never ran";
  }
  EXPECT_EQ(workers.abandoned(), 1u);
  workers.shutdown(std::chrono::milliseconds(0));  // returns with the first job still blocked
  {
    std::lock_guard<std::mutex> lock(shared->mu);
    shared->release = true;
  }
  shared->cv.notify_all();
}

}  // namespace
}  // namespace keel
