#include "testing/simulated_time.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

namespace keel::testing {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;

TEST(SimulatedTimeTest, ATaskRunsWhenTimeReachesItsDueTimeAndNotBefore) {
  SimulatedTime time;
  int runs = 0;
  auto task = time.schedule_after(hours(1), [&] { ++runs; });
  time.advance(hours(1) - milliseconds(1));
  EXPECT_EQ(runs, 0);
  EXPECT_EQ(time.pending(), 1u);
  time.advance(milliseconds(1));
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(time.pending(), 0u);
  time.advance(hours(5));
  EXPECT_EQ(runs, 1) << "a task runs once";
}

TEST(SimulatedTimeTest, TasksRunInDueOrderAndEachSeesItsOwnTime) {
  SimulatedTime time(1'000);
  std::vector<std::pair<std::string, int64_t>> seen;
  auto late = time.schedule_after(milliseconds(300), [&] { seen.emplace_back("late", time.now_unix_ms()); });
  auto early =
      time.schedule_after(milliseconds(100), [&] { seen.emplace_back("early", time.now_unix_ms()); });
  auto tie = time.schedule_after(milliseconds(100), [&] { seen.emplace_back("tie", time.now_unix_ms()); });
  time.advance(milliseconds(1'000));
  EXPECT_EQ(seen, (std::vector<std::pair<std::string, int64_t>>{
                      {"early", 1'100}, {"tie", 1'100}, {"late", 1'300}}));
  EXPECT_EQ(time.now_unix_ms(), 2'000);
}

TEST(SimulatedTimeTest, ATaskScheduledByATaskRunsInTheSameAdvanceWhenItFallsDue) {
  SimulatedTime time;
  std::unique_ptr<ScheduledTask> second;
  int steps = 0;
  auto first = time.schedule_after(milliseconds(10), [&] {
    ++steps;
    second = time.schedule_after(milliseconds(10), [&] { ++steps; });
  });
  time.advance(milliseconds(20));
  EXPECT_EQ(steps, 2);
}

TEST(SimulatedTimeTest, AZeroDelayRunsAtTheNextAdvanceNotInsideScheduleAfter) {
  SimulatedTime time;
  int runs = 0;
  auto task = time.schedule_after(milliseconds(0), [&] { ++runs; });
  EXPECT_EQ(runs, 0);
  time.advance(milliseconds(0));
  EXPECT_EQ(runs, 1);
}

TEST(SimulatedTimeTest, DestroyingTheHandleCancelsTheTask) {
  SimulatedTime time;
  int runs = 0;
  auto task = time.schedule_after(milliseconds(5), [&] { ++runs; });
  task.reset();
  time.advance(milliseconds(10));
  EXPECT_EQ(runs, 0);
  EXPECT_EQ(time.pending(), 0u);
}

TEST(SimulatedTimeTest, ATaskMayDestroyItsOwnHandle) {
  SimulatedTime time;
  std::unique_ptr<ScheduledTask> task;
  bool ran = false;
  task = time.schedule_after(milliseconds(1), [&] {
    task.reset();
    ran = true;
  });
  time.advance(milliseconds(1));
  EXPECT_TRUE(ran);
  EXPECT_EQ(task, nullptr);
}

TEST(SimulatedTimeTest, CancellingFromAnotherThreadWaitsForTheRunningCallback) {
  SimulatedTime time;
  std::mutex mu;
  std::condition_variable cv;
  bool entered = false;
  bool release = false;
  bool finished = false;
  auto task = time.schedule_after(milliseconds(1), [&] {
    std::unique_lock<std::mutex> lock(mu);
    entered = true;
    cv.notify_all();
    cv.wait(lock, [&] { return release; });
    finished = true;
  });
  std::thread advancer([&] { time.advance(milliseconds(1)); });
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return entered; });
    release = true;  // the callback can finish only after we let go of the lock below
  }
  cv.notify_all();
  task.reset();  // returns only after the callback returned
  {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_TRUE(finished);
  }
  advancer.join();
}

TEST(SimulatedTimeTest, WallClockCorrectionsFireNothing) {
  SimulatedTime time(5'000);
  int runs = 0;
  auto task = time.schedule_after(milliseconds(100), [&] { ++runs; });
  time.set_unix_ms(1'000'000);
  time.advance(milliseconds(0));
  EXPECT_EQ(runs, 0);
  EXPECT_EQ(time.now_unix_ms(), 1'000'000);
  const auto steady = time.steady_now();
  time.advance(milliseconds(100));
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(time.steady_now() - steady, milliseconds(100));
}

TEST(SimulatedTimeTest, WaitScheduledReturnsOnceAnotherThreadScheduled) {
  SimulatedTime time;
  std::unique_ptr<ScheduledTask> task;
  std::thread scheduler([&] { task = time.schedule_after(milliseconds(7), [] {}); });
  EXPECT_TRUE(time.wait_scheduled(1));
  scheduler.join();
  EXPECT_EQ(time.delays(), std::vector<milliseconds>{milliseconds(7)});
  EXPECT_EQ(time.scheduled(), 1u);
}

}  // namespace
}  // namespace keel::testing
