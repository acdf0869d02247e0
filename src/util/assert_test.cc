#include "util/assert.h"

#include <gtest/gtest.h>

namespace keel {
namespace {

int checked_half(int even) {
  KEEL_ASSERT(even % 2 == 0);
  return even / 2;
}

TEST(AssertDeathTest, AHoldingAssertionLetsTheCodeGoOn) { EXPECT_EQ(checked_half(8), 4); }

TEST(AssertDeathTest, AFailedAssertionAbortsNamingTheSiteAndTheCondition) {
  EXPECT_DEATH(checked_half(7), R"(assert_test\.cc:[0-9]+: KEEL_ASSERT\(even % 2 == 0\) failed)");
}

TEST(AssertDeathTest, ABugAbortsNamingTheSiteAndTheMessage) {
  EXPECT_DEATH(KEEL_BUG("the queue cannot be empty here"),
               R"(assert_test\.cc:[0-9]+: bug: the queue cannot be empty here)");
}

}  // namespace
}  // namespace keel
