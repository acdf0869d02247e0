// keel::Result is std::expected<T, Error> with [[nodiscard]] (include/keel/error.h): these tests hold that it
// still behaves exactly like the std::expected it derives from. That ignoring one fails to compile is
// tested by tests/nodiscard/.
#include "keel/error.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <type_traits>

namespace keel {
namespace {

static_assert(std::is_base_of_v<std::expected<std::string, Error>, Result<std::string>>);
static_assert(sizeof(Result<std::string>) == sizeof(std::expected<std::string, Error>),
              "Result adds no state to std::expected");
static_assert(std::is_nothrow_move_constructible_v<Result<std::string>>);

Result<int> parsed(int value) { return value; }
Result<int> refused() { return fail("command.rejected", "no", false); }
Result<void> busy() { return fail("store.busy", "locked", true); }

std::expected<int, Error> plain_expected(bool ok) {
  if (ok) return 7;
  return std::unexpected(Error("store.busy", "locked", true));
}

TEST(ResultTest, HoldsAValueOrAnErrorLikeStdExpected) {
  Result<int> value = parsed(3);
  ASSERT_TRUE(value.has_value());
  EXPECT_EQ(*value, 3);
  EXPECT_EQ(value.value_or(9), 3);

  Result<int> error = refused();
  ASSERT_FALSE(error.has_value());
  EXPECT_EQ(error.error().code(), "command.rejected");
  EXPECT_FALSE(error.error().retryable());
  EXPECT_EQ(error.value_or(9), 9);
}

TEST(ResultTest, ConvertsFromAPlainStdExpectedKeepingValueAndError) {
  Result<int> value = plain_expected(true);
  ASSERT_TRUE(value.has_value());
  EXPECT_EQ(*value, 7);

  Result<int> error = plain_expected(false);
  ASSERT_FALSE(error.has_value());
  EXPECT_EQ(error.error(), Error("store.busy", "locked", true));
}

TEST(ResultTest, AssignsValuesErrorsAndPlainExpecteds) {
  Result<int> r = parsed(1);
  r = fail("command.rejected", "no");
  ASSERT_FALSE(r.has_value());
  r = 5;
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(*r, 5);
  r = plain_expected(false);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), "store.busy");
}

TEST(ResultTest, VoidResultIsSuccessByDefaultAndCarriesAnError) {
  Result<void> ok;
  EXPECT_TRUE(ok.has_value());
  Result<void> failed = busy();
  ASSERT_FALSE(failed.has_value());
  EXPECT_TRUE(failed.error().retryable());
}

TEST(ResultTest, HoldsMoveOnlyValues) {
  Result<std::unique_ptr<int>> owned = std::make_unique<int>(4);
  ASSERT_TRUE(owned.has_value());
  std::unique_ptr<int> taken = std::move(owned).value();
  EXPECT_EQ(*taken, 4);
}

Result<int> sum_of_parsed(Result<int> a, Result<int> b) {
  int x = KEEL_TRY(std::move(a));
  int y = KEEL_TRY(std::move(b));
  return x + y;
}

Result<void> save_twice() {
  KEEL_TRY(busy());
  return fail("never.reached", "the first failure returns");
}

TEST(ResultTest, KeelTryYieldsValuesAndPropagatesTheFirstError) {
  Result<int> sum = sum_of_parsed(parsed(2), parsed(3));
  ASSERT_TRUE(sum.has_value());
  EXPECT_EQ(*sum, 5);

  Result<int> failed = sum_of_parsed(refused(), plain_expected(false));
  ASSERT_FALSE(failed.has_value());
  EXPECT_EQ(failed.error().code(), "command.rejected");

  Result<void> saved = save_twice();
  ASSERT_FALSE(saved.has_value());
  EXPECT_EQ(saved.error().code(), "store.busy");
}

TEST(ErrorTest, WithContextPrefixesTheMessageAndKeepsCodeAndRetryable) {
  Error e = Error("store.busy", "locked", true).with_context("opening /x.db");
  EXPECT_EQ(e.code(), "store.busy");
  EXPECT_EQ(e.message(), "opening /x.db: locked");
  EXPECT_TRUE(e.retryable());
  EXPECT_EQ(e.to_string(), "store.busy: opening /x.db: locked");
}

}  // namespace
}  // namespace keel
