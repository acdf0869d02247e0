// Tests for the wait tool (tools/builtin/wait_tool.h), driven by a manual scheduler that fires timers
// only when the test advances its time.
#include "tools/builtin/wait_tool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "keel/error_codes.h"
#include "keel/tool_registry.h"
#include "testing/simulated_time.h"

namespace keel::builtin {
namespace {

using std::chrono::milliseconds;

// What one call reported.
struct Recorder {
  std::mutex mu;
  std::vector<std::string> progress;
  std::vector<Result<ToolResult>> done;
  std::vector<std::string> events;  // "progress" / "done", in order

  ToolCallContext context(CancellationToken cancel = {}) {
    return ToolCallContext{"call-1", "thread-1", std::move(cancel), [this](ToolProgress p) {
                             std::lock_guard<std::mutex> lock(mu);
                             progress.push_back(p.text);
                             events.push_back("progress");
                           }};
  }
  std::function<void(Result<ToolResult>)> on_done() {
    return [this](Result<ToolResult> result) {
      std::lock_guard<std::mutex> lock(mu);
      done.push_back(std::move(result));
      events.push_back("done");
    };
  }
  size_t done_count() {
    std::lock_guard<std::mutex> lock(mu);
    return done.size();
  }
};

std::string text_of(const ToolResult& result) {
  return result.content.empty() ? "" : result.content.front().text;
}

TEST(WaitToolTest, ReportsProgressEverySecondAndCompletesAfterTheDelay) {
  testing::SimulatedTime scheduler;
  WaitTool tool(scheduler);
  Recorder recorder;
  tool.execute(recorder.context(), {{"seconds", 3}, {"reason", "build"}}, recorder.on_done());
  EXPECT_EQ(recorder.done_count(), 0u);

  scheduler.advance(milliseconds(999));
  EXPECT_TRUE(recorder.progress.empty());
  scheduler.advance(milliseconds(1));
  EXPECT_EQ(recorder.progress, (std::vector<std::string>{"waited 1 of 3 s"}));
  scheduler.advance(milliseconds(1000));
  EXPECT_EQ(recorder.progress, (std::vector<std::string>{"waited 1 of 3 s", "waited 2 of 3 s"}));
  EXPECT_EQ(recorder.done_count(), 0u);

  scheduler.advance(milliseconds(1000));
  ASSERT_EQ(recorder.done_count(), 1u);
  ASSERT_TRUE(recorder.done[0].has_value()) << recorder.done[0].error().to_string();
  EXPECT_EQ(text_of(*recorder.done[0]), "Waited 3 s.");
  EXPECT_EQ(recorder.done[0]->details.at("reason"), "build");
  EXPECT_EQ(scheduler.pending(), 0u);
  scheduler.advance(milliseconds(10000));
  EXPECT_EQ(recorder.done_count(), 1u);
}

TEST(WaitToolTest, FractionalSecondsCompleteAfterTheRemainder) {
  testing::SimulatedTime scheduler;
  WaitTool tool(scheduler);
  Recorder recorder;
  tool.execute(recorder.context(), {{"seconds", 1.25}}, recorder.on_done());
  scheduler.advance(milliseconds(1000));
  EXPECT_EQ(recorder.progress, (std::vector<std::string>{"waited 1 of 1.25 s"}));
  scheduler.advance(milliseconds(249));
  EXPECT_EQ(recorder.done_count(), 0u);
  scheduler.advance(milliseconds(1));
  ASSERT_EQ(recorder.done_count(), 1u);
  EXPECT_EQ(text_of(recorder.done[0].value()), "Waited 1.25 s.");
}

TEST(WaitToolTest, ZeroSecondsCompletesAtOnceWithoutATimer) {
  testing::SimulatedTime scheduler;
  WaitTool tool(scheduler);
  Recorder recorder;
  tool.execute(recorder.context(), {{"seconds", 0}}, recorder.on_done());
  ASSERT_EQ(recorder.done_count(), 1u);
  EXPECT_TRUE(recorder.done[0].has_value());
  EXPECT_EQ(scheduler.pending(), 0u);
}

TEST(WaitToolTest, CancellationMidWaitCompletesPromptlyWithCancelled) {
  testing::SimulatedTime scheduler;
  WaitTool tool(scheduler);
  Recorder recorder;
  CancellationSource source;
  tool.execute(recorder.context(source.token()), {{"seconds", 10}}, recorder.on_done());
  scheduler.advance(milliseconds(2500));
  EXPECT_EQ(recorder.progress.size(), 2u);

  source.cancel("user interrupt");
  ASSERT_EQ(recorder.done_count(), 1u);  // at once, not at the next tick
  ASSERT_FALSE(recorder.done[0].has_value());
  EXPECT_EQ(recorder.done[0].error().code(), codes::kCancelled);
  EXPECT_NE(recorder.done[0].error().message().find("user interrupt"), std::string::npos);
  EXPECT_EQ(scheduler.pending(), 0u);  // the pending timer was cancelled

  scheduler.advance(milliseconds(20000));
  EXPECT_EQ(recorder.done_count(), 1u);
  EXPECT_EQ(recorder.progress.size(), 2u);
}

TEST(WaitToolTest, AlreadyCancelledCallCompletesAtOnce) {
  testing::SimulatedTime scheduler;
  WaitTool tool(scheduler);
  Recorder recorder;
  CancellationSource source;
  source.cancel();
  tool.execute(recorder.context(source.token()), {{"seconds", 5}}, recorder.on_done());
  ASSERT_EQ(recorder.done_count(), 1u);
  EXPECT_EQ(recorder.done[0].error().code(), codes::kCancelled);
  EXPECT_EQ(scheduler.pending(), 0u);
}

TEST(WaitToolTest, CancelDuringAProgressReportIsDeliveredAfterIt) {
  testing::SimulatedTime scheduler;
  WaitTool tool(scheduler);
  Recorder recorder;
  CancellationSource source;
  ToolCallContext context = recorder.context(source.token());
  auto record = context.progress;
  context.progress = [&, record](ToolProgress p) {
    record(p);
    source.cancel();  // the engine interrupts while handling the report
    std::lock_guard<std::mutex> lock(recorder.mu);
    EXPECT_TRUE(recorder.done.empty()) << "done ran while progress was still running";
  };
  tool.execute(std::move(context), {{"seconds", 5}}, recorder.on_done());
  scheduler.advance(milliseconds(1000));
  ASSERT_EQ(recorder.done_count(), 1u);
  EXPECT_EQ(recorder.done[0].error().code(), codes::kCancelled);
  EXPECT_EQ(recorder.events, (std::vector<std::string>{"progress", "done"}));
  EXPECT_EQ(scheduler.pending(), 0u);
}

TEST(WaitToolTest, CancelRacingTheLastTimerCallsDoneExactlyOnce) {
  for (int round = 0; round < 200; ++round) {
    testing::SimulatedTime scheduler;
    WaitTool tool(scheduler);
    Recorder recorder;
    CancellationSource source;
    tool.execute(recorder.context(source.token()), {{"seconds", 1}}, recorder.on_done());
    std::atomic<bool> go{false};
    std::thread timer([&] {
      while (!go) std::this_thread::yield();
      scheduler.advance(milliseconds(1000));
    });
    std::thread canceller([&] {
      while (!go) std::this_thread::yield();
      source.cancel();
    });
    go = true;
    timer.join();
    canceller.join();
    ASSERT_EQ(recorder.done_count(), 1u) << "round " << round;
    EXPECT_EQ(scheduler.pending(), 0u);
  }
}

TEST(WaitToolTest, SchemaAllowsZeroToAnHour) {
  testing::SimulatedTime scheduler;
  WaitTool tool(scheduler);
  auto validator = compile_parameter_schema(tool.spec().parameters).value();
  EXPECT_TRUE(validator->validate({{"seconds", 0}}).has_value());
  EXPECT_TRUE(validator->validate({{"seconds", 3600}, {"reason", "deploy"}}).has_value());
  EXPECT_FALSE(validator->validate({{"seconds", 3601}}).has_value());
  EXPECT_FALSE(validator->validate({{"seconds", -1}}).has_value());
  EXPECT_FALSE(validator->validate({{"seconds", "10"}}).has_value());
  EXPECT_FALSE(validator->validate(nlohmann::json::object()).has_value());
  EXPECT_FALSE(validator->validate({{"seconds", 1}, {"until", "later"}}).has_value());
}

TEST(WaitToolTest, OutOfRangeSecondsAreRejectedEvenWithoutValidation) {
  testing::SimulatedTime scheduler;
  WaitTool tool(scheduler);
  Recorder recorder;
  tool.execute(recorder.context(), {{"seconds", 7200}}, recorder.on_done());
  ASSERT_EQ(recorder.done_count(), 1u);
  EXPECT_EQ(recorder.done[0].error().code(), codes::kInvalidArgument);
  EXPECT_EQ(scheduler.pending(), 0u);
}

}  // namespace
}  // namespace keel::builtin
