#include "mcp/auth/oauth_http_auth.h"

#include <gtest/gtest.h>

#include "mcp/auth/auth_errors.h"
#include "mcp/auth/fake_authorization_server.h"

namespace keel::mcp {
namespace {

using testing::FakeAuthorizationServer;
using testing::kRedirect;
using testing::kServer;

struct Fixture {
  Fixture() {
    OAuthHttpAuthOptions options;
    options.server_url = kServer;
    options.redirect_uri = kRedirect;
    options.fetch = server.fetch();
    options.authorizer = server.authorizer();
    options.on_grant = [this](const OAuthGrant& grant) { grants.push_back(grant.tokens.access_token); };
    options.now = [this] { return now; };
    auth = make_oauth_http_auth(std::move(options));
  }
  size_t token_requests() const { return server.token_forms.size(); }

  FakeAuthorizationServer server;
  std::vector<std::string> grants;
  std::chrono::steady_clock::time_point now;
  std::shared_ptr<McpHttpAuth> auth;
};

TEST(OAuthHttpAuth, HasNoTokenBeforeASignInAndSignsInOnA401) {
  Fixture f;
  EXPECT_EQ(f.auth->token().value(), "");
  ASSERT_TRUE(f.auth->on_challenge(401, R"(Bearer scope="tools")", ""));
  EXPECT_EQ(f.auth->token().value(), "at-1");
  EXPECT_EQ(find_param(f.server.authorization_query, "scope"), "tools");
  EXPECT_EQ(find_param(f.server.authorization_query, "resource"), kServer);
  EXPECT_EQ(find_param(f.server.authorization_query, "code_challenge_method"), "S256");
  EXPECT_EQ(f.grants, std::vector<std::string>{"at-1"});
}

TEST(OAuthHttpAuth, A401WithARefreshTokenOnHandRefreshesInsteadOfSigningIn) {
  Fixture f;
  ASSERT_TRUE(f.auth->on_challenge(401, "", ""));
  ASSERT_TRUE(f.auth->on_challenge(401, "Bearer", "at-1"));
  EXPECT_EQ(f.auth->token().value(), "at-2");
  ASSERT_EQ(f.token_requests(), 2u);
  EXPECT_EQ(find_param(f.server.token_forms[1], "grant_type"), "refresh_token");
}

TEST(OAuthHttpAuth, ARefusedRefreshFallsBackToASignIn) {
  Fixture f;
  f.server.refresh_reply = R"({"error":"invalid_grant"})";
  ASSERT_TRUE(f.auth->on_challenge(401, "", ""));
  f.server.refresh_reply = "not json";
  ASSERT_TRUE(f.auth->on_challenge(401, "", "at-1"));
  ASSERT_EQ(f.token_requests(), 3u);
  EXPECT_EQ(find_param(f.server.token_forms[2], "grant_type"), "authorization_code");
}

TEST(OAuthHttpAuth, AChallengeForATokenAlreadyReplacedOnlyAsksForARetry) {
  Fixture f;
  ASSERT_TRUE(f.auth->on_challenge(401, "", ""));
  ASSERT_TRUE(f.auth->on_challenge(401, "", ""));  // a request sent before the sign-in
  EXPECT_EQ(f.token_requests(), 1u);
}

TEST(OAuthHttpAuth, InsufficientScopeStepsUpWithTheUnionOfTheScopes) {
  Fixture f;
  ASSERT_TRUE(f.auth->on_challenge(401, R"(Bearer scope="tools")", ""));
  ASSERT_TRUE(
      f.auth->on_challenge(403, R"(Bearer error="insufficient_scope", scope="files:write tools")", "at-1"));
  EXPECT_EQ(find_param(f.server.authorization_query, "scope"), "tools files:write");
  EXPECT_EQ(find_param(f.server.token_forms.back(), "grant_type"), "authorization_code");
}

TEST(OAuthHttpAuth, A403ThatAsksForNoScopeIsDenied) {
  Fixture f;
  auto result = f.auth->on_challenge(403, R"(Bearer error="invalid_token")", "");
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code(), codes::kMcpAuthDenied);
  EXPECT_EQ(f.token_requests(), 0u);
}

TEST(OAuthHttpAuth, AnExpiredTokenIsRefreshedBeforeItIsSent) {
  Fixture g;
  g.server.refresh_reply = R"({"access_token":"at-2","token_type":"Bearer","expires_in":60})";
  ASSERT_TRUE(g.auth->on_challenge(401, "", ""));
  ASSERT_TRUE(g.auth->on_challenge(401, "", "at-1"));  // refreshed: at-2, 60 s
  EXPECT_EQ(g.auth->token().value(), "at-2");
  EXPECT_EQ(g.token_requests(), 2u);
  g.now += std::chrono::seconds(45);  // within the 30 s margin
  g.server.refresh_reply = R"({"access_token":"at-3","token_type":"Bearer"})";
  EXPECT_EQ(g.auth->token().value(), "at-3");
}

TEST(OAuthHttpAuth, ABadChallengeIsACodedError) {
  Fixture f;
  auto result = f.auth->on_challenge(401, R"(Bearer scope="unterminated)", "");
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code(), codes::kMcpAuthBadChallenge);
}

TEST(ScopeUnion, KeepsTheOrderAndDropsRepeats) {
  EXPECT_EQ(scope_union("a b", "b c"), "a b c");
  EXPECT_EQ(scope_union("", " x  y "), "x y");
  EXPECT_EQ(scope_union("", ""), "");
}

}  // namespace
}  // namespace keel::mcp
