#include "providers/http/retry_policy.h"

#include <gtest/gtest.h>

#include "testing/manual_clock.h"

namespace keel::providers {
namespace {

using std::chrono::milliseconds;

class RetryPolicyTest : public ::testing::Test {
 protected:
  RetryPolicy policy(double random_value, RetryOptions options = {}) {
    return RetryPolicy(options, &clock_, [random_value] { return random_value; });
  }
  static FailedAttempt status(int code, int attempt = 1) {
    FailedAttempt failure;
    failure.attempt = attempt;
    failure.http_status = code;
    return failure;
  }
  testing::ManualClock clock_{784111777000};  // Sun, 06 Nov 1994 08:49:37 GMT
};

TEST_F(RetryPolicyTest, BackoffDoublesPerAttemptUpToTheCap) {
  RetryOptions options;
  options.max_attempts = 10;
  options.base_delay = milliseconds(100);
  options.max_delay = milliseconds(1000);
  // A random value just under 1 shows the ceiling of the jitter window.
  const RetryPolicy p = policy(0.999999, options);
  EXPECT_EQ(p.decide(status(503, 1)).delay, milliseconds(99));
  EXPECT_EQ(p.decide(status(503, 2)).delay, milliseconds(199));
  EXPECT_EQ(p.decide(status(503, 3)).delay, milliseconds(399));
  EXPECT_EQ(p.decide(status(503, 4)).delay, milliseconds(799));
  EXPECT_EQ(p.decide(status(503, 5)).delay, milliseconds(999));
  EXPECT_EQ(p.decide(status(503, 9)).delay, milliseconds(999));
}

TEST_F(RetryPolicyTest, FullJitterScalesTheWholeWindow) {
  RetryOptions options;
  options.base_delay = milliseconds(1000);
  EXPECT_EQ(policy(0.0, options).decide(status(500)).delay, milliseconds(0));
  EXPECT_EQ(policy(0.25, options).decide(status(500)).delay, milliseconds(250));
  EXPECT_EQ(policy(0.5, options).decide(status(500, 2)).delay, milliseconds(1000));
}

TEST_F(RetryPolicyTest, SeededRandomStaysInsideTheWindowAndReplays) {
  const uint64_t seed = 20240601;
  SCOPED_TRACE("seed " + std::to_string(seed));
  RetryOptions options;
  options.max_attempts = 100;
  const RetryPolicy a(options, &clock_, RetryPolicy::seeded_random(seed));
  const RetryPolicy b(options, &clock_, RetryPolicy::seeded_random(seed));
  for (int attempt = 1; attempt < 20; ++attempt) {
    const RetryDecision decision = a.decide(status(502, attempt));
    ASSERT_TRUE(decision.retry);
    EXPECT_GE(decision.delay.count(), 0);
    EXPECT_LT(decision.delay, options.max_delay);
    EXPECT_EQ(decision.delay, b.decide(status(502, attempt)).delay);
  }
}

TEST_F(RetryPolicyTest, StopsAfterMaxAttempts) {
  RetryOptions options;
  options.max_attempts = 3;
  EXPECT_TRUE(policy(0.5, options).decide(status(503, 2)).retry);
  const RetryDecision last = policy(0.5, options).decide(status(503, 3));
  EXPECT_FALSE(last.retry);
  EXPECT_NE(last.reason.find("3 attempts"), std::string::npos);
}

TEST_F(RetryPolicyTest, NeverRetriesOnceOutputWasStreamed) {
  FailedAttempt failure = status(529);
  failure.output_streamed = true;
  failure.retry_after = "1";
  EXPECT_FALSE(policy(0.5).decide(failure).retry);
  FailedAttempt dropped;
  dropped.transport_retryable = true;
  dropped.output_streamed = true;
  EXPECT_FALSE(policy(0.5).decide(dropped).retry);
}

TEST_F(RetryPolicyTest, RetriesTheRetryableStatusesOnly) {
  for (int code : {408, 409, 429, 500, 502, 503, 504, 529}) {
    EXPECT_TRUE(policy(0.5).decide(status(code)).retry) << code;
  }
  for (int code : {400, 401, 403, 404, 413, 422}) {
    const RetryDecision decision = policy(0.5).decide(status(code));
    EXPECT_FALSE(decision.retry) << code;
    EXPECT_NE(decision.reason.find(std::to_string(code)), std::string::npos);
  }
}

TEST_F(RetryPolicyTest, RetriesTransportFailuresByTheirRetryableFlag) {
  FailedAttempt failure;
  failure.transport_retryable = true;
  EXPECT_TRUE(policy(0.5).decide(failure).retry);
  failure.transport_retryable = false;
  EXPECT_FALSE(policy(0.5).decide(failure).retry);
}

TEST_F(RetryPolicyTest, RetriesAnOverloadedErrorInsideA200Stream) {
  FailedAttempt failure;
  failure.overloaded = true;
  failure.retry_after = "3";
  const RetryDecision decision = policy(0.5).decide(failure);
  EXPECT_TRUE(decision.retry);
  EXPECT_EQ(decision.delay, milliseconds(3000));
}

TEST_F(RetryPolicyTest, HonoursRetryAfterSeconds) {
  FailedAttempt failure = status(429);
  failure.retry_after = " 7 ";
  const RetryDecision decision = policy(0.0).decide(failure);
  EXPECT_TRUE(decision.retry);
  EXPECT_EQ(decision.delay, milliseconds(7000));
}

TEST_F(RetryPolicyTest, HonoursRetryAfterAsAnHttpDateAgainstTheClock) {
  FailedAttempt failure = status(503);
  failure.retry_after = "Sun, 06 Nov 1994 08:50:07 GMT";  // 30 s after the clock
  EXPECT_EQ(policy(0.0).decide(failure).delay, milliseconds(30'000));
  clock_.advance(milliseconds(10'000));
  EXPECT_EQ(policy(0.0).decide(failure).delay, milliseconds(20'000));
}

TEST_F(RetryPolicyTest, ADateInThePastMeansNow) {
  FailedAttempt failure = status(503);
  failure.retry_after = "Sun, 06 Nov 1994 08:00:00 GMT";
  const RetryDecision decision = policy(0.9).decide(failure);
  EXPECT_TRUE(decision.retry);
  EXPECT_EQ(decision.delay, milliseconds(0));
}

TEST_F(RetryPolicyTest, CapsTheServersDelay) {
  RetryOptions options;
  options.max_retry_after = milliseconds(5000);
  FailedAttempt failure = status(429);
  failure.retry_after = "3600";
  EXPECT_EQ(policy(0.0, options).decide(failure).delay, milliseconds(5000));
}

TEST_F(RetryPolicyTest, PrefersRetryAfterMs) {
  FailedAttempt failure = status(429);
  failure.retry_after = "2";
  failure.retry_after_ms = "1500.4";
  EXPECT_EQ(policy(0.0).decide(failure).delay, milliseconds(1501));
}

TEST_F(RetryPolicyTest, FallsBackToBackoffForAnUnreadableRetryAfter) {
  RetryOptions options;
  options.base_delay = milliseconds(1000);
  FailedAttempt failure = status(429);
  failure.retry_after = "soon";
  failure.retry_after_ms = "-5";
  const RetryDecision decision = policy(0.5, options).decide(failure);
  EXPECT_TRUE(decision.retry);
  EXPECT_EQ(decision.delay, milliseconds(500));
  EXPECT_EQ(decision.reason, "backoff");
}

TEST_F(RetryPolicyTest, IgnoresRetryAfterOnStatusesThatDoNotNameADelay) {
  RetryOptions options;
  options.base_delay = milliseconds(1000);
  FailedAttempt failure = status(408);
  failure.retry_after = "30";
  EXPECT_EQ(policy(0.5, options).decide(failure).delay, milliseconds(500));
}

}  // namespace
}  // namespace keel::providers
