#include "util/random_hex.h"

#include <gtest/gtest.h>

#include <set>

namespace keel {
namespace {

TEST(RandomHex, GivesTwoLowerCaseHexDigitsPerByte) {
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{8}, size_t{32}}) {
    const std::string text = random_hex(bytes);
    EXPECT_EQ(text.size(), 2 * bytes);
    EXPECT_EQ(text.find_first_not_of("0123456789abcdef"), std::string::npos) << text;
  }
}

TEST(RandomHex, HundredTokensOf32BytesAreAllDifferent) {
  std::set<std::string> seen;
  for (int i = 0; i < 100; ++i) seen.insert(random_hex(32));
  EXPECT_EQ(seen.size(), 100u);
}

}  // namespace
}  // namespace keel
