// Tests for keel/cancellation.h: every guarantee in the header comment, plus the re-entrancy cases a
// callback can create (destroying its own or another registration, registering, reading the token).
#include "keel/cancellation.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace keel {
namespace {

using std::chrono_literals::operator""ms;

// Spins until `condition` holds; fails the test (instead of hanging) after a generous timeout.
template <typename Condition>
bool eventually(Condition condition) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::yield();
  }
  return true;
}

// Runs `action` on a helper thread and aborts the test binary with a message if it has not finished
// within a generous deadline: a re-entrancy bug shows up as a deadlock, which should fail loudly rather
// than hang the suite until an outer timeout.
template <typename Action>
void without_deadlock(const char* what, Action action) {
  std::promise<void> done;
  std::future<void> finished = done.get_future();
  std::thread thread([&] {
    action();
    done.set_value();
  });
  if (finished.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    std::fprintf(stderr, "deadlock: %s did not finish within 10 s\n", what);
    std::abort();
  }
  thread.join();
}

TEST(CancellationTest, NewSourceAndItsTokensAreNotCancelled) {
  CancellationSource source;
  const CancellationToken token = source.token();
  EXPECT_FALSE(source.is_cancelled());
  EXPECT_FALSE(token.is_cancelled());
  EXPECT_EQ(token.reason(), "");
}

TEST(CancellationTest, CancelIsVisibleThroughEveryToken) {
  CancellationSource source;
  const CancellationToken before = source.token();
  source.cancel("user interrupt");
  const CancellationToken after = source.token();
  EXPECT_TRUE(source.is_cancelled());
  EXPECT_TRUE(before.is_cancelled());
  EXPECT_TRUE(after.is_cancelled());
  EXPECT_EQ(before.reason(), "user interrupt");
  EXPECT_EQ(after.reason(), "user interrupt");
}

TEST(CancellationTest, DefaultReasonIsCancelled) {
  CancellationSource source;
  source.cancel();
  EXPECT_EQ(source.token().reason(), "cancelled");
}

TEST(CancellationTest, FirstCancelReasonIsKept) {
  CancellationSource source;
  source.cancel("first");
  source.cancel("second");
  EXPECT_EQ(source.token().reason(), "first");
  EXPECT_TRUE(source.is_cancelled());
}

TEST(CancellationTest, CallbackRegisteredBeforeCancelRunsOnTheCancellingThread) {
  CancellationSource source;
  std::thread::id ran_on;
  int runs = 0;
  const CancellationRegistration registration = source.token().on_cancel([&] {
    ran_on = std::this_thread::get_id();
    ++runs;
  });
  EXPECT_EQ(runs, 0) << "registering must not run the callback";
  std::thread::id canceller;
  std::thread thread([&] {
    canceller = std::this_thread::get_id();
    source.cancel("stop");
  });
  thread.join();
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(ran_on, canceller);
}

TEST(CancellationTest, CallbacksHaveRunWhenCancelReturns) {
  CancellationSource source;
  std::vector<int> ran;
  std::vector<CancellationRegistration> registrations;
  for (int i = 0; i < 5; ++i) {
    registrations.push_back(source.token().on_cancel([&ran, i] { ran.push_back(i); }));
  }
  source.cancel();
  EXPECT_EQ(ran.size(), 5u);
}

TEST(CancellationTest, CallbackRunsExactlyOnceWhenCancelIsCalledRepeatedly) {
  CancellationSource source;
  int runs = 0;
  const CancellationRegistration registration = source.token().on_cancel([&] { ++runs; });
  source.cancel("a");
  source.cancel("b");
  source.cancel("c");
  EXPECT_EQ(runs, 1);
}

TEST(CancellationTest, ConcurrentCancelsRunEachCallbackOnceAndKeepOneReason) {
  for (int round = 0; round < 50; ++round) {
    CancellationSource source;
    std::atomic<int> runs{0};
    const CancellationRegistration registration = source.token().on_cancel([&] { ++runs; });
    std::vector<std::thread> threads;
    std::atomic<bool> go{false};
    for (int t = 0; t < 8; ++t) {
      threads.emplace_back([&, t] {
        while (!go.load()) std::this_thread::yield();
        source.cancel("reason " + std::to_string(t));
        EXPECT_TRUE(source.is_cancelled()) << "cancel() returned before the source was cancelled";
      });
    }
    go = true;
    for (std::thread& thread : threads) thread.join();
    EXPECT_EQ(runs.load(), 1);
    const std::string reason = source.token().reason();
    EXPECT_EQ(reason.rfind("reason ", 0), 0u) << reason;
    EXPECT_EQ(source.token().reason(), reason) << "the kept reason must not change";
  }
}

TEST(CancellationTest, CallbackRegisteredAfterCancelRunsAtOnceOnTheRegisteringThread) {
  CancellationSource source;
  source.cancel();
  std::thread::id ran_on;
  int runs = 0;
  const CancellationRegistration registration = source.token().on_cancel([&] {
    ran_on = std::this_thread::get_id();
    ++runs;
  });
  EXPECT_EQ(runs, 1) << "must have run before on_cancel returned";
  EXPECT_EQ(ran_on, std::this_thread::get_id());
  source.cancel();
  EXPECT_EQ(runs, 1) << "a later cancel() must not run it again";
}

TEST(CancellationTest, DestroyedRegistrationNeverRuns) {
  CancellationSource source;
  int runs = 0;
  {
    const CancellationRegistration registration = source.token().on_cancel([&] { ++runs; });
  }
  source.cancel();
  EXPECT_EQ(runs, 0);
}

TEST(CancellationTest, DestroyingOneRegistrationLeavesOthersRegistered) {
  CancellationSource source;
  int first = 0;
  int second = 0;
  std::optional<CancellationRegistration> a = source.token().on_cancel([&] { ++first; });
  const CancellationRegistration b = source.token().on_cancel([&] { ++second; });
  a.reset();
  source.cancel();
  EXPECT_EQ(first, 0);
  EXPECT_EQ(second, 1);
}

TEST(CancellationTest, DestroyingARegistrationAfterItsCallbackRanIsHarmless) {
  CancellationSource source;
  int runs = 0;
  std::optional<CancellationRegistration> registration = source.token().on_cancel([&] { ++runs; });
  source.cancel();
  registration.reset();
  EXPECT_EQ(runs, 1);
}

TEST(CancellationTest, MovedRegistrationKeepsTheCallbackRegistered) {
  CancellationSource source;
  int runs = 0;
  CancellationRegistration original = source.token().on_cancel([&] { ++runs; });
  std::optional<CancellationRegistration> moved(std::move(original));
  { const CancellationRegistration destroyed_moved_from = std::move(original); }  // empty: no effect
  source.cancel();
  EXPECT_EQ(runs, 1);
  moved.reset();
}

TEST(CancellationTest, MoveAssignmentUnregistersTheReplacedCallback) {
  CancellationSource source;
  int replaced_runs = 0;
  int kept_runs = 0;
  CancellationRegistration target = source.token().on_cancel([&] { ++replaced_runs; });
  target = source.token().on_cancel([&] { ++kept_runs; });
  source.cancel();
  EXPECT_EQ(replaced_runs, 0);
  EXPECT_EQ(kept_runs, 1);
}

TEST(CancellationTest, SelfMoveAssignmentKeepsTheRegistration) {
  CancellationSource source;
  int runs = 0;
  CancellationRegistration registration = source.token().on_cancel([&] { ++runs; });
  CancellationRegistration& alias = registration;
  registration = std::move(alias);
  source.cancel();
  EXPECT_EQ(runs, 1);
}

TEST(CancellationTest, RegistrationDestructorWaitsForCallbackRunningOnAnotherThread) {
  CancellationSource source;
  std::atomic<bool> started{false};
  std::atomic<bool> release{false};
  std::atomic<bool> finished{false};
  std::optional<CancellationRegistration> registration = source.token().on_cancel([&] {
    started = true;
    while (!release.load()) std::this_thread::yield();
    std::this_thread::sleep_for(20ms);  // widen the window in which a non-waiting destructor returns
    finished = true;
  });
  std::thread canceller([&] { source.cancel(); });
  ASSERT_TRUE(eventually([&] { return started.load(); }));

  std::atomic<bool> destructor_returned{false};
  bool finished_when_destructor_returned = false;
  std::thread destroyer([&] {
    registration.reset();
    finished_when_destructor_returned = finished.load();
    destructor_returned = true;
  });
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(destructor_returned.load()) << "destructor returned while the callback was still running";
  release = true;
  destroyer.join();
  canceller.join();
  EXPECT_TRUE(finished_when_destructor_returned);
}

TEST(CancellationTest, RegistrationDestructorDoesNotWaitForOtherRunningCallbacks) {
  CancellationSource source;
  std::atomic<bool> started{false};
  std::atomic<bool> release{false};
  std::optional<CancellationRegistration> idle;
  const CancellationRegistration blocking = source.token().on_cancel([&] {
    started = true;
    while (!release.load()) std::this_thread::yield();
  });
  int idle_runs = 0;
  idle = source.token().on_cancel([&] { ++idle_runs; });  // registered later, so it runs later
  std::thread canceller([&] { source.cancel(); });
  ASSERT_TRUE(eventually([&] { return started.load(); }));
  idle.reset();  // its callback is not running: must return without waiting for `blocking`
  release = true;
  canceller.join();
  EXPECT_EQ(idle_runs, 0);
}

TEST(CancellationTest, CallbackMayDestroyItsOwnRegistration) {
  CancellationSource source;
  std::optional<CancellationRegistration> registration;
  int runs = 0;
  registration = source.token().on_cancel([&] {
    ++runs;
    registration.reset();  // must not wait for itself
  });
  without_deadlock("cancel()", [&] { source.cancel(); });
  EXPECT_EQ(runs, 1);
  EXPECT_FALSE(registration.has_value());
}

TEST(CancellationTest, CallbackMayDestroyAnotherPendingRegistration) {
  CancellationSource source;
  std::optional<CancellationRegistration> second;
  int second_runs = 0;
  const CancellationRegistration first = source.token().on_cancel([&] { second.reset(); });
  second = source.token().on_cancel([&] { ++second_runs; });
  without_deadlock("cancel()", [&] { source.cancel(); });
  EXPECT_EQ(second_runs, 0);
}

TEST(CancellationTest, CallbackMayUseTheTokenAndRegisterMoreCallbacks) {
  CancellationSource source;
  const CancellationToken token = source.token();
  std::string seen_reason;
  bool seen_cancelled = false;
  int nested_runs = 0;
  std::optional<CancellationRegistration> nested;
  const CancellationRegistration outer = token.on_cancel([&] {
    seen_reason = token.reason();
    seen_cancelled = token.is_cancelled();
    nested = token.on_cancel([&] { ++nested_runs; });  // already cancelled: runs right here
  });
  without_deadlock("cancel()", [&] { source.cancel("why"); });
  EXPECT_EQ(seen_reason, "why");
  EXPECT_TRUE(seen_cancelled);
  EXPECT_EQ(nested_runs, 1);
}

TEST(CancellationTest, CallbackMayCancelTheSourceAgain) {
  CancellationSource source;
  int runs = 0;
  const CancellationRegistration registration = source.token().on_cancel([&] {
    ++runs;
    source.cancel("again");
  });
  without_deadlock("cancel()", [&] { source.cancel("once"); });
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(source.token().reason(), "once");
}

// Captured state is destroyed without the state's lock held, so its destructor may use the token.
struct UsesTokenOnDestruction {
  CancellationToken token;
  std::string* reason_seen;
  ~UsesTokenOnDestruction() { *reason_seen = token.reason() + "|destroyed"; }
};

TEST(CancellationTest, CapturedStateOfAnUnregisteredCallbackMayUseTheTokenWhenDestroyed) {
  CancellationSource source;
  std::string seen;
  auto captured = std::make_shared<UsesTokenOnDestruction>(UsesTokenOnDestruction{source.token(), &seen});
  std::optional<CancellationRegistration> registration =
      source.token().on_cancel([captured = std::move(captured)] {});
  without_deadlock("registration destructor", [&] { registration.reset(); });
  EXPECT_EQ(seen, "|destroyed");
}

TEST(CancellationTest, CapturedStateOfARunCallbackIsReleasedBeforeCancelReturns) {
  CancellationSource source;
  std::string seen;
  auto captured = std::make_shared<UsesTokenOnDestruction>(UsesTokenOnDestruction{source.token(), &seen});
  const CancellationRegistration registration = source.token().on_cancel([captured = std::move(captured)] {});
  without_deadlock("cancel()", [&] { source.cancel("done"); });
  EXPECT_EQ(seen, "done|destroyed");
}

TEST(CancellationTest, TokenStaysValidAndUncancelledAfterTheSourceIsDestroyed) {
  CancellationToken token;
  int runs = 0;
  std::optional<CancellationRegistration> registration;
  {
    CancellationSource source;
    token = source.token();
    registration = token.on_cancel([&] { ++runs; });
  }
  EXPECT_FALSE(token.is_cancelled());
  EXPECT_EQ(token.reason(), "");
  const CancellationRegistration late = token.on_cancel([&] { ++runs; });
  registration.reset();
  EXPECT_EQ(runs, 0);
}

TEST(CancellationTest, TokenOfACancelledSourceStaysCancelledAfterTheSourceIsDestroyed) {
  CancellationToken token;
  {
    CancellationSource source;
    token = source.token();
    source.cancel("gone");
  }
  EXPECT_TRUE(token.is_cancelled());
  EXPECT_EQ(token.reason(), "gone");
  int runs = 0;
  const CancellationRegistration registration = token.on_cancel([&] { ++runs; });
  EXPECT_EQ(runs, 1);
}

TEST(CancellationTest, DefaultTokenIsNeverCancelledAndNeverRunsCallbacks) {
  const CancellationToken token;
  EXPECT_FALSE(token.is_cancelled());
  EXPECT_EQ(token.reason(), "");
  int runs = 0;
  {
    const CancellationRegistration registration = token.on_cancel([&] { ++runs; });
  }
  EXPECT_EQ(runs, 0);
}

TEST(CancellationTest, DefaultRegistrationIsHarmlessToDestroyAndMove) {
  CancellationRegistration a;
  CancellationRegistration b(std::move(a));
  a = std::move(b);
}

TEST(CancellationTest, ConcurrentRegistrationAndCancelRunEachLiveCallbackExactlyOnce) {
  constexpr int kThreads = 8;
  constexpr int kPerThread = 200;
  for (int round = 0; round < 10; ++round) {
    CancellationSource source;
    const CancellationToken token = source.token();
    std::vector<std::atomic<int>> kept_runs(kThreads * kPerThread);
    std::vector<std::atomic<int>> dropped_runs(kThreads * kPerThread);
    std::vector<std::thread> threads;
    std::atomic<int> ready{0};
    std::atomic<bool> cancel_returned{false};
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        std::vector<CancellationRegistration> kept;
        ++ready;
        for (int i = 0; i < kPerThread; ++i) {
          const size_t slot = static_cast<size_t>(t * kPerThread + i);
          kept.push_back(token.on_cancel([&kept_runs, slot] { ++kept_runs[slot]; }));
          // A registration destroyed right away: its callback may run at most once, and not after the
          // destructor returned.
          {
            const CancellationRegistration dropped =
                token.on_cancel([&dropped_runs, slot] { ++dropped_runs[slot]; });
          }
          const int dropped_after_destruction = dropped_runs[slot].load();
          std::this_thread::yield();
          EXPECT_EQ(dropped_runs[slot].load(), dropped_after_destruction) << "ran after its destructor";
        }
        // `kept` stays alive until cancel() has run every callback registered before it.
        while (!cancel_returned.load()) std::this_thread::yield();
        for (int i = 0; i < kPerThread; ++i) {
          EXPECT_EQ(kept_runs[static_cast<size_t>(t * kPerThread + i)].load(), 1);
        }
      });
    }
    while (ready.load() < kThreads) std::this_thread::yield();
    source.cancel();
    cancel_returned = true;
    for (std::thread& thread : threads) thread.join();
    for (const auto& runs : dropped_runs) EXPECT_LE(runs.load(), 1);
  }
}

TEST(CancellationTest, MovedFromSourceBehavesAsNeverCancelled) {
  CancellationSource source;
  CancellationSource moved = std::move(source);
  // The moved-from source must not crash; this is the state a defaulted move leaves behind.
  source.cancel();  // NOLINT(bugprone-use-after-move): exercising the moved-from state on purpose
  EXPECT_FALSE(source.is_cancelled());
  EXPECT_FALSE(source.token().is_cancelled());
  EXPECT_FALSE(moved.is_cancelled());
}

TEST(CancellationDeathTest, ThrowingCallbackTerminates) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        CancellationSource source;
        const CancellationRegistration registration =
            source.token().on_cancel([] { throw std::runtime_error("callbacks must not throw"); });
        source.cancel();
      },
      "");
}

}  // namespace
}  // namespace keel
