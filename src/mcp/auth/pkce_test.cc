#include "mcp/auth/pkce.h"

#include <gtest/gtest.h>

namespace keel::mcp {
namespace {

TEST(Pkce, MatchesTheExampleOfRfc7636AppendixB) {
  const std::array<uint8_t, 32> entropy = {116, 24,  223, 180, 151, 153, 224, 37,  79,  250, 96,
                                           125, 216, 173, 187, 186, 22,  212, 37,  77,  105, 214,
                                           191, 240, 91,  88,  5,   88,  83,  132, 141, 121};
  const PkcePair pair = make_pkce(entropy);
  EXPECT_EQ(pair.verifier, "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk");
  EXPECT_EQ(pair.challenge, "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
}

TEST(Pkce, Base64UrlUsesTheUrlAlphabetWithoutPadding) {
  EXPECT_EQ(base64url(""), "");
  EXPECT_EQ(base64url("f"), "Zg");
  EXPECT_EQ(base64url("fo"), "Zm8");
  EXPECT_EQ(base64url("foo"), "Zm9v");
  EXPECT_EQ(base64url(std::string("\xfb\xff", 2)), "-_8");
}

TEST(Pkce, RandomVerifiersDifferAndHaveTheLengthRfc7636Asks) {
  auto first = random_entropy();
  auto second = random_entropy();
  ASSERT_TRUE(first.has_value());
  ASSERT_TRUE(second.has_value());
  EXPECT_NE(*first, *second);
  const PkcePair pair = make_pkce(*first);
  EXPECT_EQ(pair.verifier.size(), 43u);
  EXPECT_EQ(pair.challenge, pkce_challenge(pair.verifier));
}

}  // namespace
}  // namespace keel::mcp
