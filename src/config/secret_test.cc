#include "config/secret.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <concepts>
#include <ostream>
#include <string>
#include <type_traits>
#include <utility>

namespace keel::config {
namespace {

template <typename T>
concept Streamable = requires(std::ostream& out, const T& value) { out << value; };

TEST(SecretTest, CannotBeStreamedFormattedCopiedOrConvertedToAString) {
  EXPECT_FALSE(Streamable<Secret>);
  EXPECT_FALSE((fmt::is_formattable<Secret>::value));
  EXPECT_FALSE(std::is_copy_constructible_v<Secret>);
  EXPECT_FALSE(std::is_copy_assignable_v<Secret>);
  EXPECT_FALSE((std::is_convertible_v<Secret, std::string>));
  EXPECT_FALSE((std::is_convertible_v<Secret, std::string_view>));
  EXPECT_TRUE(std::is_nothrow_move_constructible_v<Secret>);
}

TEST(SecretTest, GoogleTestPrintsNeitherTheBytesNorAnyPartOfThem) {
  const Secret secret = Secret::copy_of("sk-print-me-please-0123456789");
  const std::string printed = ::testing::PrintToString(secret);
  EXPECT_EQ(printed.find("print-me"), std::string::npos) << printed;
}

TEST(SecretTest, RevealGivesTheBytesIncludingNul) {
  const std::string bytes("a\0b", 3);
  const Secret secret = Secret::copy_of(bytes);
  EXPECT_EQ(secret.size(), 3u);
  EXPECT_EQ(secret.reveal(), bytes);
  EXPECT_EQ(secret.reveal_bytes().size(), 3u);
  EXPECT_TRUE(Secret().empty());
  EXPECT_EQ(Secret().reveal(), "");
}

TEST(SecretTest, TakeEmptiesTheSourceString) {
  std::string typed = "sk-typed-at-a-prompt";
  const Secret secret = Secret::take(typed);
  EXPECT_EQ(secret.reveal(), "sk-typed-at-a-prompt");
  EXPECT_TRUE(typed.empty());
}

TEST(SecretTest, MovingLeavesTheSourceEmpty) {
  Secret a = Secret::copy_of("key-a");
  Secret b = std::move(a);
  EXPECT_TRUE(a.empty());  // NOLINT(bugprone-use-after-move): the moved-from state is the contract
  EXPECT_EQ(b.reveal(), "key-a");
  Secret c = Secret::copy_of("key-c");
  c = std::move(b);
  EXPECT_TRUE(b.empty());  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(c.reveal(), "key-a");
}

TEST(SecretTest, ComparesByContentAndLength) {
  EXPECT_TRUE(Secret::copy_of("same") == Secret::copy_of("same"));
  EXPECT_FALSE(Secret::copy_of("same") == Secret::copy_of("sane"));
  EXPECT_FALSE(Secret::copy_of("same") == Secret::copy_of("same+"));
  EXPECT_TRUE(Secret() == Secret::copy_of(""));
  const Secret original = Secret::copy_of("cloned");
  EXPECT_TRUE(original.clone() == original);
}

TEST(SecretTest, ZeroedSecretIsWritable) {
  Secret secret = Secret::zeroed(4);
  EXPECT_EQ(secret.reveal(), std::string(4, '\0'));
  secret.writable_bytes()[1] = 'x';
  EXPECT_EQ(secret.reveal(), std::string("\0x\0\0", 4));
}

}  // namespace
}  // namespace keel::config
