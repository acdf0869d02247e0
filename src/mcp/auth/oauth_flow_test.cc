#include "mcp/auth/oauth_flow.h"

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "mcp/auth/auth_errors.h"
#include "mcp/auth/fake_authorization_server.h"
#include "mcp/auth/oauth_url.h"
#include "mcp/auth/pkce.h"

namespace keel::mcp {
namespace {

using testing::FakeAuthorizationServer;
using testing::kIssuer;
using testing::kRedirect;
using testing::kServer;

using nlohmann::json;

SignInOptions options() {
  SignInOptions out;
  out.redirect_uri = kRedirect;
  out.state = "state-123";
  out.pkce_entropy.fill(7);
  return out;
}

TEST(OAuthFlow, SignsInWithDynamicRegistrationPkceAndTheResource) {
  FakeAuthorizationServer server;
  auto grant = sign_in(kServer, std::nullopt, options(), server.fetch(), server.authorizer());
  ASSERT_TRUE(grant.has_value()) << grant.error().to_string();
  EXPECT_EQ(grant->tokens.access_token, "at-1");
  EXPECT_EQ(grant->client.client_id, "dyn-client");
  EXPECT_EQ(grant->resource, kServer);
  EXPECT_EQ(server.registration["redirect_uris"], json::array({kRedirect}));
  EXPECT_EQ(find_param(server.authorization_query, "resource"), kServer);
  EXPECT_EQ(find_param(server.authorization_query, "scope"), "tools");
  ASSERT_EQ(server.token_forms.size(), 1u);
  EXPECT_EQ(find_param(server.token_forms[0], "resource"), kServer);
  EXPECT_EQ(find_param(server.token_forms[0], "client_id"), "dyn-client");
  // The path-inserted resource metadata was found first; the root one was never needed.
  EXPECT_EQ(server.calls.front(), "GET https://mcp.example.com/.well-known/oauth-protected-resource/mcp");
}

TEST(OAuthFlow, TheChallengesMetadataUrlAndScopeAreUsed) {
  FakeAuthorizationServer server;
  server.documents_["https://mcp.example.com/custom-meta"] =
      server.documents_["https://mcp.example.com/.well-known/oauth-protected-resource/mcp"];
  const BearerChallenge challenge{
      {{"resource_metadata", "https://mcp.example.com/custom-meta"}, {"scope", "narrow"}}};
  auto grant = sign_in(kServer, challenge, options(), server.fetch(), server.authorizer());
  ASSERT_TRUE(grant.has_value()) << grant.error().to_string();
  EXPECT_EQ(server.calls.front(), "GET https://mcp.example.com/custom-meta");
  EXPECT_EQ(find_param(server.authorization_query, "scope"), "narrow");
}

TEST(OAuthFlow, FallsBackToTheRootMetadataAndToOpenIdDiscovery) {
  FakeAuthorizationServer server;
  server.documents_["https://mcp.example.com/.well-known/oauth-protected-resource"] =
      server.documents_["https://mcp.example.com/.well-known/oauth-protected-resource/mcp"];
  server.documents_.erase("https://mcp.example.com/.well-known/oauth-protected-resource/mcp");
  server.documents_[std::string(kIssuer) + "/.well-known/openid-configuration"] =
      server.documents_[std::string(kIssuer) + "/.well-known/oauth-authorization-server"];
  server.documents_.erase(std::string(kIssuer) + "/.well-known/oauth-authorization-server");
  auto grant = sign_in(kServer, std::nullopt, options(), server.fetch(), server.authorizer());
  ASSERT_TRUE(grant.has_value()) << grant.error().to_string();
  EXPECT_EQ(grant->tokens.access_token, "at-1");
}

TEST(OAuthFlow, APreregisteredClientSkipsRegistration) {
  FakeAuthorizationServer server;
  SignInOptions with_client = options();
  with_client.preregistered = OAuthClient{"my-client", "my-secret", "client_secret_post"};
  auto grant = sign_in(kServer, std::nullopt, with_client, server.fetch(), server.authorizer());
  ASSERT_TRUE(grant.has_value()) << grant.error().to_string();
  EXPECT_TRUE(server.registration.is_null());
  EXPECT_EQ(find_param(server.token_forms[0], "client_secret"), "my-secret");
}

TEST(OAuthFlow, NoRegistrationAndNoClientIsACodedError) {
  FakeAuthorizationServer server;
  server.documents_[std::string(kIssuer) + "/.well-known/oauth-authorization-server"].erase(
      "registration_endpoint");
  auto grant = sign_in(kServer, std::nullopt, options(), server.fetch(), server.authorizer());
  ASSERT_FALSE(grant.has_value());
  EXPECT_EQ(grant.error().code(), codes::kMcpAuthTokenFailed);
}

TEST(OAuthFlow, AForgedRedirectNeverReachesTheTokenEndpoint) {
  FakeAuthorizationServer server;
  server.forge_state = true;
  auto grant = sign_in(kServer, std::nullopt, options(), server.fetch(), server.authorizer());
  ASSERT_FALSE(grant.has_value());
  EXPECT_EQ(grant.error().code(), codes::kMcpAuthStateMismatch);
  EXPECT_TRUE(server.token_forms.empty());
}

TEST(OAuthFlow, TheResourceParameterIsTheIdentifierExactlyAsTheMetadataPublishesIt) {
  FakeAuthorizationServer server;
  server.documents_["https://mcp.example.com/.well-known/oauth-protected-resource"] =
      server.documents_["https://mcp.example.com/.well-known/oauth-protected-resource/mcp"];
  server.documents_.erase("https://mcp.example.com/.well-known/oauth-protected-resource/mcp");
  server.documents_["https://mcp.example.com/.well-known/oauth-protected-resource"]["resource"] =
      "https://mcp.example.com";
  auto grant = sign_in(kServer, std::nullopt, options(), server.fetch(), server.authorizer());
  ASSERT_TRUE(grant.has_value()) << grant.error().to_string();
  EXPECT_EQ(grant->resource, "https://mcp.example.com");
  EXPECT_EQ(find_param(server.authorization_query, "resource"), "https://mcp.example.com");
  EXPECT_EQ(find_param(server.token_forms[0], "resource"), "https://mcp.example.com");
}

TEST(OAuthFlow, MetadataForAnotherResourceStopsTheFlow) {
  FakeAuthorizationServer server;
  server.documents_["https://mcp.example.com/.well-known/oauth-protected-resource/mcp"]["resource"] =
      "https://other.example.com/mcp";
  auto grant = sign_in(kServer, std::nullopt, options(), server.fetch(), server.authorizer());
  ASSERT_FALSE(grant.has_value());
  EXPECT_EQ(grant.error().code(), codes::kMcpAuthResourceMismatch);
  EXPECT_TRUE(server.authorization_query.empty());
}

TEST(OAuthFlow, NoMetadataAnywhereIsACodedError) {
  FakeAuthorizationServer server;
  server.documents_.clear();
  auto grant = sign_in(kServer, std::nullopt, options(), server.fetch(), server.authorizer());
  ASSERT_FALSE(grant.has_value());
  EXPECT_EQ(grant.error().code(), codes::kMcpAuthBadMetadata);
}

TEST(OAuthFlow, RefreshKeepsTheRefreshTokenWhenTheServerDoesNotRotateIt) {
  FakeAuthorizationServer server;
  auto grant = sign_in(kServer, std::nullopt, options(), server.fetch(), server.authorizer());
  ASSERT_TRUE(grant.has_value());
  auto refreshed = refresh(*grant, server.fetch());
  ASSERT_TRUE(refreshed.has_value()) << refreshed.error().to_string();
  EXPECT_EQ(refreshed->tokens.access_token, "at-2");
  EXPECT_EQ(refreshed->tokens.refresh_token, "rt-1");
  EXPECT_EQ(find_param(server.token_forms.back(), "grant_type"), "refresh_token");
  EXPECT_EQ(find_param(server.token_forms.back(), "resource"), kServer);

  server.refresh_reply = R"({"access_token":"at-3","token_type":"Bearer","refresh_token":"rt-2"})";
  refreshed = refresh(*grant, server.fetch());
  ASSERT_TRUE(refreshed.has_value());
  EXPECT_EQ(refreshed->tokens.refresh_token, "rt-2");
}

TEST(OAuthFlow, RefreshWithoutARefreshTokenAsksForANewSignIn) {
  OAuthGrant grant;
  auto refreshed = refresh(grant, [](const HttpCall&) -> Result<HttpReply> {
    return HttpReply{500, {}, ""};
  });
  ASSERT_FALSE(refreshed.has_value());
  EXPECT_EQ(refreshed.error().code(), codes::kMcpAuthTokenFailed);
}

}  // namespace
}  // namespace keel::mcp
