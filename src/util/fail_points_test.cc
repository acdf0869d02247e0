// Tests for util/fail_points.h: arming, nth/repeat semantics, hit counting, the KEEL_FAILPOINTS spec
// grammar, the crash action (death tests) and the hold action (released through a FIFO). Behaviour differs by
// build: without KEEL_FAILPOINTS_ENABLED, hit() must always succeed and count nothing.
#include "util/fail_points.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "keel/error_codes.h"
#include "testing/temp_dir.h"

namespace keel {
namespace {

using Action = FailPoints::Action;

// Sets an environment variable for one scope and restores the previous value (tests are single-threaded
// when they touch the environment).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value == nullptr) {
      ::unsetenv(name);
    } else {
      ::setenv(name, value, 1);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// --- spec parsing (every build) ---

TEST(FailPointsSpecTest, AcceptsEmptySpecs) {
  FailPoints points;
  for (const char* spec : {"", "   ", ";", " ; ;; ", "\t"}) {
    EXPECT_TRUE(points.arm_from_spec(spec).has_value()) << "'" << spec << "'";
  }
}

TEST(FailPointsSpecTest, RejectsMalformedEntriesNamingThem) {
  for (const char* bad : {"a",
                          "=error",
                          "= error",
                          "a=",
                          "a=boom",
                          "a=Error",
                          "a=error@",
                          "a=error@0",
                          "a=error@x",
                          "a=error@-1",
                          "a=error@+2",
                          "a=error*@2",
                          "a=error**",
                          "a=errorx",
                          "a=error crash",
                          "a b=error",
                          "a@=error",
                          "a*=error",
                          "a=error@99999999999999999999999",
                          "a=hold",
                          "a=hold:",
                          "a=hold@0:/f",
                          "a=holdx:/f",
                          "a=hold*x:/f"}) {
    SCOPED_TRACE(bad);
    FailPoints points;
    const Result<void> armed = points.arm_from_spec(std::string("ok=error;") + bad + ";ok2=crash");
    ASSERT_FALSE(armed.has_value());
    EXPECT_EQ(armed.error().code(), codes::kInvalidArgument);
    EXPECT_NE(armed.error().message().find(std::string("'") + bad + "'"), std::string::npos)
        << armed.error().message();
  }
}

// --- enabled builds ---
#ifdef KEEL_FAILPOINTS_ENABLED

TEST(FailPointsTest, UnarmedPointSucceedsAndCountsHits) {
  FailPoints points;
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(points.hit("store.commit").has_value());
  EXPECT_EQ(points.hits("store.commit"), 3u);
  EXPECT_EQ(points.hits("never.hit"), 0u);
}

TEST(FailPointsTest, ArmedErrorReturnsFailpointTriggered) {
  FailPoints points;
  points.arm("receipts.insert", Action::kError);
  const Result<void> result = points.hit("receipts.insert");
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.error().code(), codes::kFailPoint);
  EXPECT_NE(result.error().message().find("receipts.insert"), std::string::npos) << result.error().message();
}

TEST(FailPointsTest, ErrorTriggersOnceThenDisarmsByDefault) {
  FailPoints points;
  points.arm("p", Action::kError);
  EXPECT_FALSE(points.hit("p").has_value());
  EXPECT_TRUE(points.hit("p").has_value());
  EXPECT_TRUE(points.hit("p").has_value());
}

TEST(FailPointsTest, NthSkipsTheEarlierHits) {
  FailPoints points;
  points.arm("p", Action::kError, 3);
  EXPECT_TRUE(points.hit("p").has_value());
  EXPECT_TRUE(points.hit("p").has_value());
  EXPECT_FALSE(points.hit("p").has_value());
  EXPECT_TRUE(points.hit("p").has_value());
}

TEST(FailPointsTest, NthCountsFromWhenThePointWasArmed) {
  FailPoints points;
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(points.hit("p").has_value());
  points.arm("p", Action::kError, 2);
  EXPECT_TRUE(points.hit("p").has_value());
  EXPECT_FALSE(points.hit("p").has_value());
}

TEST(FailPointsTest, NthZeroTriggersOnTheNextHit) {
  FailPoints points;
  points.arm("p", Action::kError, 0);
  EXPECT_FALSE(points.hit("p").has_value());
}

TEST(FailPointsTest, RepeatKeepsTriggeringFromTheNthHitOn) {
  FailPoints points;
  points.arm("p", Action::kError, 2, /*repeat=*/true);
  EXPECT_TRUE(points.hit("p").has_value());
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(points.hit("p").has_value());
}

TEST(FailPointsTest, ArmingOnePointLeavesOthersAlone) {
  FailPoints points;
  points.arm("a", Action::kError, 1, true);
  EXPECT_TRUE(points.hit("b").has_value());
  EXPECT_TRUE(points.hit("a.b").has_value());
  EXPECT_FALSE(points.hit("a").has_value());
}

TEST(FailPointsTest, RearmingReplacesThePreviousArming) {
  FailPoints points;
  points.arm("p", Action::kError, 1);
  points.arm("p", Action::kError, 3);
  EXPECT_TRUE(points.hit("p").has_value());
  EXPECT_TRUE(points.hit("p").has_value());
  EXPECT_FALSE(points.hit("p").has_value());
}

TEST(FailPointsTest, DisarmStopsOnePoint) {
  FailPoints points;
  points.arm("a", Action::kError, 1, true);
  points.arm("b", Action::kError, 1, true);
  points.disarm("a");
  points.disarm("not.armed");
  EXPECT_TRUE(points.hit("a").has_value());
  EXPECT_FALSE(points.hit("b").has_value());
}

TEST(FailPointsTest, DisarmAllStopsEveryPointButKeepsHitCounts) {
  FailPoints points;
  points.arm("a", Action::kError, 1, true);
  points.arm("b", Action::kCrash, 1, true);
  EXPECT_FALSE(points.hit("a").has_value());
  points.disarm_all();
  EXPECT_TRUE(points.hit("a").has_value());
  EXPECT_TRUE(points.hit("b").has_value());
  EXPECT_EQ(points.hits("a"), 2u);
  EXPECT_EQ(points.hits("b"), 1u);
}

TEST(FailPointsTest, HitsCountTriggeredAndUntriggeredHits) {
  FailPoints points;
  points.arm("p", Action::kError, 2);
  EXPECT_TRUE(points.hit("p").has_value());
  EXPECT_FALSE(points.hit("p").has_value());  // triggers
  EXPECT_TRUE(points.hit("p").has_value());
  EXPECT_EQ(points.hits("p"), 3u);
}

TEST(FailPointsTest, NamesSeenAreTheHitNamesSorted) {
  FailPoints points;
  points.arm("armed.never.hit", Action::kError);
  EXPECT_TRUE(points.hit("store.commit.before_sync").has_value());
  EXPECT_TRUE(points.hit("receipts.insert").has_value());
  EXPECT_TRUE(points.hit("store.commit.before_sync").has_value());
  EXPECT_TRUE(points.hit("a").has_value());
  EXPECT_EQ(points.names_seen(),
            (std::vector<std::string>{"a", "receipts.insert", "store.commit.before_sync"}));
}

TEST(FailPointsTest, ConcurrentHitsAreCountedExactlyAndTriggerOnce) {
  FailPoints points;
  constexpr int kThreads = 8;
  constexpr int kPerThread = 1000;
  points.arm("p", Action::kError, 4321);
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kPerThread; ++i) {
        if (!points.hit("p")) ++errors;
        (void)points.hits("p");
        (void)points.names_seen();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(points.hits("p"), static_cast<uint64_t>(kThreads * kPerThread));
  EXPECT_EQ(errors.load(), 1);
}

TEST(FailPointsSpecTest, ArmsEveryEntryOfASpec) {
  FailPoints points;
  ASSERT_TRUE(points.arm_from_spec("a=error;b=error@2;c=error*;d=error@2*").has_value());
  EXPECT_FALSE(points.hit("a").has_value());
  EXPECT_TRUE(points.hit("a").has_value());

  EXPECT_TRUE(points.hit("b").has_value());
  EXPECT_FALSE(points.hit("b").has_value());
  EXPECT_TRUE(points.hit("b").has_value());

  EXPECT_FALSE(points.hit("c").has_value());
  EXPECT_FALSE(points.hit("c").has_value());

  EXPECT_TRUE(points.hit("d").has_value());
  EXPECT_FALSE(points.hit("d").has_value());
  EXPECT_FALSE(points.hit("d").has_value());
}

TEST(FailPointsSpecTest, ToleratesWhitespaceAroundEveryToken) {
  FailPoints points;
  ASSERT_TRUE(points.arm_from_spec("  a = error @ 2 * ;\tb=error ;  ").has_value());
  EXPECT_TRUE(points.hit("a").has_value());
  EXPECT_FALSE(points.hit("a").has_value());
  EXPECT_FALSE(points.hit("a").has_value());
  EXPECT_FALSE(points.hit("b").has_value());
}

TEST(FailPointsSpecTest, LaterEntryForTheSameNameWins) {
  FailPoints points;
  ASSERT_TRUE(points.arm_from_spec("p=error;p=error@2").has_value());
  EXPECT_TRUE(points.hit("p").has_value());
  EXPECT_FALSE(points.hit("p").has_value());
}

TEST(FailPointsSpecTest, MalformedSpecArmsNothing) {
  FailPoints points;
  ASSERT_FALSE(points.arm_from_spec("a=error;b=boom").has_value());
  EXPECT_TRUE(points.hit("a").has_value());
}

TEST(FailPointsEnvTest, ArmsFromKeelFailpoints) {
  const ScopedEnv env("KEEL_FAILPOINTS", "x=error@2");
  FailPoints points;
  ASSERT_TRUE(points.arm_from_env().has_value());
  EXPECT_TRUE(points.hit("x").has_value());
  EXPECT_FALSE(points.hit("x").has_value());
}

TEST(FailPointsEnvTest, UnsetVariableArmsNothing) {
  const ScopedEnv env("KEEL_FAILPOINTS", nullptr);
  FailPoints points;
  ASSERT_TRUE(points.arm_from_env().has_value());
  EXPECT_TRUE(points.hit("x").has_value());
}

TEST(FailPointsEnvTest, MalformedVariableIsInvalidArgumentNamingTheEntry) {
  const ScopedEnv env("KEEL_FAILPOINTS", "x=error;y=explode");
  FailPoints points;
  const Result<void> armed = points.arm_from_env();
  ASSERT_FALSE(armed.has_value());
  EXPECT_EQ(armed.error().code(), codes::kInvalidArgument);
  EXPECT_NE(armed.error().message().find("KEEL_FAILPOINTS"), std::string::npos) << armed.error().message();
  EXPECT_NE(armed.error().message().find("'y=explode'"), std::string::npos) << armed.error().message();
  EXPECT_TRUE(points.hit("x").has_value()) << "nothing is armed from a malformed spec";
}

// --- hold action ---

// A FIFO in a fresh directory, as a test that holds keel makes one.
class FailPointsHoldTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(::mkfifo(fifo_.c_str(), 0600), 0) << fifo_; }

  // The test's end of the FIFO: opening it waits until a hold has opened the other end, so when this
  // returns the hold has started. -1 on failure.
  int open_release_end() const { return ::open(fifo_.c_str(), O_WRONLY | O_CLOEXEC); }

  // Hits `name` on a thread of its own; the future says when hit() returned and what it returned.
  std::future<Result<void>> hit_on_a_thread(FailPoints& points, std::string name) {
    std::packaged_task<Result<void>()> task([&points, name] { return points.hit(name); });
    std::future<Result<void>> returned = task.get_future();
    hitters_.emplace_back(std::move(task));
    return returned;
  }

  void TearDown() override {
    for (std::thread& hitter : hitters_) hitter.join();
  }

  keel::testing::TempDir dir_;
  std::string fifo_ = dir_.file("release");
  std::vector<std::thread> hitters_;
};

bool has_returned(const std::future<Result<void>>& hit) {
  return hit.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

TEST_F(FailPointsHoldTest, AHoldBlocksTheHittingThreadUntilAByteIsWrittenToItsFifo) {
  FailPoints points;
  points.arm("turn.complete.before", Action::kHold, 1, false, fifo_);
  std::future<Result<void>> hit = hit_on_a_thread(points, "turn.complete.before");
  const int release = open_release_end();
  ASSERT_GE(release, 0);
  // The hold has opened the FIFO and waits for a byte: it has not returned, and only its thread waits.
  EXPECT_FALSE(has_returned(hit));
  EXPECT_EQ(points.hits("turn.complete.before"), 1u);
  EXPECT_TRUE(points.hit("another.point").has_value());
  EXPECT_FALSE(has_returned(hit));
  ASSERT_EQ(::write(release, "x", 1), 1);
  const Result<void> returned = hit.get();
  EXPECT_TRUE(returned.has_value()) << returned.error().to_string();
  ::close(release);
  // Armed once: the next hit passes.
  EXPECT_FALSE(points.holds_next("turn.complete.before"));
  EXPECT_TRUE(points.hit("turn.complete.before").has_value());
}

TEST_F(FailPointsHoldTest, ClosingTheFifoWithoutWritingReleasesTheHoldToo) {
  FailPoints points;
  points.arm("p", Action::kHold, 1, false, fifo_);
  std::future<Result<void>> hit = hit_on_a_thread(points, "p");
  const int release = open_release_end();
  ASSERT_GE(release, 0);
  EXPECT_FALSE(has_returned(hit));
  ::close(release);
  EXPECT_TRUE(hit.get().has_value());
}

TEST_F(FailPointsHoldTest, AHoldWhoseFifoCannotBeOpenedFailsAtOnceNamingIt) {
  FailPoints points;
  const std::string missing = dir_.file("no-such-fifo");
  points.arm("p", Action::kHold, 1, false, missing);
  const Result<void> hit = points.hit("p");
  ASSERT_FALSE(hit.has_value());
  EXPECT_EQ(hit.error().code(), codes::kFailPoint);
  EXPECT_NE(hit.error().message().find(missing), std::string::npos) << hit.error().message();
}

TEST_F(FailPointsHoldTest, HoldsNextIsTrueOnlyWhenTheNextHitHolds) {
  FailPoints points;
  EXPECT_FALSE(points.holds_next("p"));
  points.arm("e", Action::kError);
  EXPECT_FALSE(points.holds_next("e"));
  points.arm("p", Action::kHold, 2, false, fifo_);
  EXPECT_FALSE(points.holds_next("p"));
  EXPECT_TRUE(points.hit("p").has_value());  // the first hit passes
  EXPECT_TRUE(points.holds_next("p"));
  points.disarm("p");
  EXPECT_FALSE(points.holds_next("p"));
}

TEST_F(FailPointsHoldTest, ASpecArmsAHoldBesideAnErrorAndARepeatedHoldHoldsEveryHit) {
  FailPoints points;
  ASSERT_TRUE(points.arm_from_spec("e=error; h = hold@2* : " + fifo_ + " ").has_value());
  EXPECT_FALSE(points.hit("e").has_value());  // the error is unchanged
  EXPECT_TRUE(points.hit("h").has_value());   // hit 1 passes
  for (int hold = 0; hold < 2; ++hold) {
    SCOPED_TRACE(hold);
    ASSERT_TRUE(points.holds_next("h"));
    std::future<Result<void>> hit = hit_on_a_thread(points, "h");
    const int release = open_release_end();
    ASSERT_GE(release, 0);
    EXPECT_FALSE(has_returned(hit));
    ASSERT_EQ(::write(release, "\n", 1), 1);
    EXPECT_TRUE(hit.get().has_value());
    ::close(release);
  }
}

// --- crash action (death tests run the statement in a child process; a hit armed to crash never returns,
// so they drop hit()'s result with (void)) ---

class FailPointsDeathTest : public ::testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

TEST_F(FailPointsDeathTest, CrashKillsTheProcessWithSigkill) {
  EXPECT_EXIT(
      {
        FailPoints points;
        points.arm("store.commit.before_sync", Action::kCrash);
        (void)points.hit("store.commit.before_sync");
        std::fprintf(stderr, "survived\n");
        std::_Exit(0);
      },
      ::testing::KilledBySignal(SIGKILL), "");
}

TEST_F(FailPointsDeathTest, CrashRunsNoDestructors) {
  struct Loud {
    ~Loud() { std::fprintf(stderr, "destructor"); }
  };
  EXPECT_EXIT(
      {
        FailPoints points;
        points.arm("p", Action::kCrash);
        std::fprintf(stderr, "before");
        const Loud loud;
        (void)points.hit("p");
      },
      ::testing::KilledBySignal(SIGKILL), "^before$");
}

TEST_F(FailPointsDeathTest, CrashWaitsForTheNthHit) {
  EXPECT_EXIT(
      {
        FailPoints points;
        points.arm("p", Action::kCrash, 3);
        (void)points.hit("p");
        (void)points.hit("p");
        std::fprintf(stderr, "survived two hits");
        (void)points.hit("p");
        std::fprintf(stderr, " and the third");
        std::_Exit(0);
      },
      ::testing::KilledBySignal(SIGKILL), "^survived two hits$");
}

TEST_F(FailPointsDeathTest, CrashArmedFromSpecKillsOnItsHit) {
  EXPECT_EXIT(
      {
        FailPoints points;
        if (!points.arm_from_spec("other=error; store.commit.before_sync = crash @2").has_value()) {
          std::_Exit(3);
        }
        (void)points.hit("store.commit.before_sync");
        std::fprintf(stderr, "first hit survived");
        (void)points.hit("store.commit.before_sync");
        std::_Exit(0);
      },
      ::testing::KilledBySignal(SIGKILL), "^first hit survived$");
}

TEST_F(FailPointsDeathTest, CrashArmedFromEnvironmentKills) {
  EXPECT_EXIT(
      {
        ::setenv("KEEL_FAILPOINTS", "boundary=crash", 1);
        FailPoints points;
        if (!points.arm_from_env().has_value()) std::_Exit(3);
        (void)points.hit("boundary");
        std::_Exit(0);
      },
      ::testing::KilledBySignal(SIGKILL), "");
}

// --- builds without fail points ---
#else

TEST(FailPointsDisabledTest, HitAlwaysSucceedsEvenWhenArmed) {
  FailPoints points;
  points.arm("p", Action::kError, 1, true);
  points.arm("c", Action::kCrash);
  ASSERT_TRUE(points.arm_from_spec("q=error*").has_value());
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(points.hit("p").has_value());
    EXPECT_TRUE(points.hit("c").has_value());
    EXPECT_TRUE(points.hit("q").has_value());
  }
}

TEST(FailPointsDisabledTest, AnArmedHoldNeitherHoldsNorSaysItWould) {
  FailPoints points;
  points.arm("h", Action::kHold, 1, true, "/no/such/fifo");
  EXPECT_FALSE(points.holds_next("h"));
  EXPECT_TRUE(points.hit("h").has_value());
}

TEST(FailPointsDisabledTest, HitsAreNotCounted) {
  FailPoints points;
  EXPECT_TRUE(points.hit("p").has_value());
  EXPECT_EQ(points.hits("p"), 0u);
  EXPECT_TRUE(points.names_seen().empty());
}

TEST(FailPointsDisabledTest, EnvironmentIsIgnored) {
  const ScopedEnv env("KEEL_FAILPOINTS", "p=crash");
  FailPoints points;
  EXPECT_TRUE(points.arm_from_env().has_value());
  EXPECT_TRUE(points.hit("p").has_value());
}

#endif  // KEEL_FAILPOINTS_ENABLED

}  // namespace
}  // namespace keel
