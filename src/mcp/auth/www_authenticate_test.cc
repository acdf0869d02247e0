#include "mcp/auth/www_authenticate.h"

#include <gtest/gtest.h>

#include <vector>

#include "mcp/auth/auth_errors.h"

namespace keel::mcp {
namespace {

TEST(BearerChallenge, ReadsQuotedAndTokenParameters) {
  auto challenge = parse_bearer_challenge(
      R"(Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource", scope="files:read files:write", error=insufficient_scope)");
  ASSERT_TRUE(challenge.has_value()) << challenge.error().to_string();
  ASSERT_TRUE(challenge->has_value());
  EXPECT_EQ((*challenge)->resource_metadata(),
            "https://mcp.example.com/.well-known/oauth-protected-resource");
  EXPECT_EQ((*challenge)->scope(), "files:read files:write");
  EXPECT_EQ((*challenge)->error(), "insufficient_scope");
}

TEST(BearerChallenge, FindsBearerAmongOtherSchemesCaseInsensitively) {
  auto challenge = parse_bearer_challenge(R"(Basic realm="x", Newauth abc==, bEaReR Scope="a", realm=y)");
  ASSERT_TRUE(challenge.has_value()) << challenge.error().to_string();
  ASSERT_TRUE(challenge->has_value());
  EXPECT_EQ((*challenge)->scope(), "a");
  EXPECT_EQ((*challenge)->get("REALM"), "y");
  EXPECT_FALSE((*challenge)->resource_metadata().has_value());
}

TEST(BearerChallenge, UnescapesQuotedPairs) {
  auto challenge = parse_bearer_challenge(R"(Bearer error_description="say \"hi\" \\ now")");
  ASSERT_TRUE(challenge.has_value());
  ASSERT_TRUE(challenge->has_value());
  EXPECT_EQ((*challenge)->get("error_description"), R"(say "hi" \ now)");
}

TEST(BearerChallenge, ABareBearerHasNoParameters) {
  auto challenge = parse_bearer_challenge("Bearer");
  ASSERT_TRUE(challenge.has_value());
  ASSERT_TRUE(challenge->has_value());
  EXPECT_TRUE((*challenge)->params.empty());
}

TEST(BearerChallenge, OtherSchemesOnlyGiveNone) {
  auto challenge = parse_bearer_challenge(R"(Basic realm="files", Digest nonce="1")");
  ASSERT_TRUE(challenge.has_value());
  EXPECT_FALSE(challenge->has_value());
}

TEST(BearerChallenge, TheFirstOfARepeatedParameterWins) {
  auto challenge = parse_bearer_challenge(R"(Bearer scope="a", scope="b")");
  ASSERT_TRUE(challenge.has_value());
  ASSERT_TRUE(challenge->has_value());
  EXPECT_EQ((*challenge)->scope(), "a");
}

TEST(BearerChallenge, MalformedHeadersAreCodedErrors) {
  for (const std::string& header :
       std::vector<std::string>{R"(Bearer scope="unterminated)", "Bearer scope=", "Bearer scope=,",
                                std::string("Bearer scope=") + std::string(9000, 'a')}) {
    auto challenge = parse_bearer_challenge(header);
    ASSERT_FALSE(challenge.has_value()) << header;
    EXPECT_EQ(challenge.error().code(), codes::kMcpAuthBadChallenge) << header;
  }
}

}  // namespace
}  // namespace keel::mcp
