#include "util/thread_scheduler.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

namespace keel {
namespace {

using namespace std::chrono_literals;

TEST(ThreadSchedulerTest, TasksRunOnceInTheOrderTheyFallDue) {
  ThreadScheduler scheduler;
  std::mutex mu;
  std::vector<int> order;
  std::promise<void> last;
  auto record = [&](int n) {
    std::lock_guard<std::mutex> guard(mu);
    order.push_back(n);
  };
  auto later = scheduler.schedule_after(30ms, [&] {
    record(3);
    last.set_value();
  });
  auto sooner = scheduler.schedule_after(10ms, [&] { record(2); });
  auto now = scheduler.schedule_after(0ms, [&] { record(1); });
  last.get_future().wait();
  std::lock_guard<std::mutex> guard(mu);
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
}

TEST(ThreadSchedulerTest, DestroyingTheHandleBeforeItIsDueCancelsTheTask) {
  ThreadScheduler scheduler;
  std::atomic<bool> ran{false};
  auto task = scheduler.schedule_after(20ms, [&] { ran = true; });
  task.reset();
  std::promise<void> marker;
  auto after = scheduler.schedule_after(40ms, [&] { marker.set_value(); });
  marker.get_future().wait();
  EXPECT_FALSE(ran);
}

TEST(ThreadSchedulerTest, CancellingTheTaskTheThreadWaitsForLetsTheNextOneRun) {
  // The scheduler waits for the earliest task; cancelling exactly that one must not disturb the wait.
  ThreadScheduler scheduler;
  std::atomic<bool> ran{false};
  auto waited_for = scheduler.schedule_after(50ms, [&] { ran = true; });
  std::this_thread::sleep_for(10ms);  // the thread is now waiting for it
  waited_for.reset();
  std::promise<void> next;
  auto later = scheduler.schedule_after(5ms, [&] { next.set_value(); });
  next.get_future().wait();
  EXPECT_FALSE(ran);
}

TEST(ThreadSchedulerTest, ATaskMayDropItsOwnHandleFromItsCallback) {
  ThreadScheduler scheduler;
  std::unique_ptr<ScheduledTask> self;
  std::promise<void> done;
  std::mutex mu;
  {
    std::lock_guard<std::mutex> guard(mu);
    self = scheduler.schedule_after(0ms, [&] {
      std::lock_guard<std::mutex> inner(mu);
      self.reset();
      done.set_value();
    });
  }
  done.get_future().wait();
  std::lock_guard<std::mutex> guard(mu);
  EXPECT_EQ(self, nullptr);
}

// A retrying model exchange is kept alive by its own retry callback and owns that callback's handle: when
// the callback was the last owner, the handle goes with the callback, on the scheduler's thread, after the
// callback returned. The scheduler must not hold its lock then.
TEST(ThreadSchedulerTest, ACallbackMayOwnItsOwnHandleAndBeItsLastOwner) {
  ThreadScheduler scheduler;
  struct Owner {
    std::unique_ptr<ScheduledTask> handle;
    std::promise<void> destroyed;
    ~Owner() {
      handle.reset();
      destroyed.set_value();
    }
  };
  auto owner = std::make_shared<Owner>();
  std::future<void> destroyed = owner->destroyed.get_future();
  std::promise<void> armed;
  std::shared_future<void> armed_future = armed.get_future().share();
  owner->handle = scheduler.schedule_after(0ms, [owner, armed_future] { armed_future.wait(); });
  owner.reset();  // the callback now holds the only reference
  armed.set_value();
  destroyed.wait();
  // The scheduler still runs tasks afterwards.
  std::promise<void> ran;
  auto next = scheduler.schedule_after(0ms, [&] { ran.set_value(); });
  ran.get_future().wait();
}

}  // namespace
}  // namespace keel
