#include "mcp/auth/oauth_grant_vault.h"

#include <gtest/gtest.h>

#include "config/master_key.h"
#include "mcp/auth/auth_errors.h"
#include "testing/store_test.h"

namespace keel::mcp {
namespace {

using keel::testing::must;

constexpr char kEndpoint[] = "https://mcp.example.com/mcp";

OAuthGrant sample_grant(const std::string& access_token) {
  OAuthGrant grant;
  grant.resource = kEndpoint;
  grant.server.issuer = "https://auth.example.com";
  grant.server.authorization_endpoint = "https://auth.example.com/authorize";
  grant.server.token_endpoint = "https://auth.example.com/token";
  grant.server.scopes_supported = {"tools", "files:read"};
  grant.server.authorization_response_iss_parameter_supported = true;
  grant.client = {"dyn-client", "dyn-secret", "client_secret_post"};
  grant.tokens.access_token = access_token;
  grant.tokens.refresh_token = "rt-1";
  grant.tokens.scope = "tools";
  grant.tokens.expires_in = std::chrono::seconds(3600);
  return grant;
}

class OAuthGrantVaultTest : public keel::testing::StoreTest {
 protected:
  void SetUp() override { reopen(); }
  config::CredentialVault vault_{must(config::MasterKey::generate()), clock_};
};

TEST_F(OAuthGrantVaultTest, ASavedGrantIsReadBackAfterARestartWithoutItsLifetime) {
  {
    OAuthGrantVault grants(*store_, vault_);
    must(grants.save("docs", kEndpoint, sample_grant("at-1")));
  }
  reopen();
  OAuthGrantVault grants(*store_, vault_);
  const std::optional<OAuthGrant> loaded = must(grants.load("docs", kEndpoint));
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->resource, kEndpoint);
  EXPECT_EQ(loaded->server.token_endpoint, "https://auth.example.com/token");
  EXPECT_EQ(loaded->server.scopes_supported, (std::vector<std::string>{"tools", "files:read"}));
  EXPECT_TRUE(loaded->server.authorization_response_iss_parameter_supported);
  EXPECT_EQ(loaded->client.client_secret, "dyn-secret");
  EXPECT_EQ(loaded->client.token_endpoint_auth_method, "client_secret_post");
  EXPECT_EQ(loaded->tokens.access_token, "at-1");
  EXPECT_EQ(loaded->tokens.refresh_token, "rt-1");
  EXPECT_EQ(loaded->tokens.expires_in, std::nullopt);
}

TEST_F(OAuthGrantVaultTest, SavingAgainReplacesTheGrantAndKeysDifferByServerAndEndpoint) {
  OAuthGrantVault grants(*store_, vault_);
  must(grants.save("docs", kEndpoint, sample_grant("at-1")));
  must(grants.save("docs", kEndpoint, sample_grant("at-2")));
  EXPECT_EQ(must(grants.load("docs", kEndpoint))->tokens.access_token, "at-2");
  EXPECT_EQ(must(grants.load("docs", "https://mcp.example.com/other")), std::nullopt);
  EXPECT_EQ(must(grants.load("wiki", kEndpoint)), std::nullopt);
  auto tx = begin(TxMode::kRead);
  const config::CredentialInfo info =
      must(vault_.describe(*tx, oauth_grant_credential_id("docs", kEndpoint)));
  EXPECT_EQ(info.version, 2);
  EXPECT_EQ(info.provider, std::nullopt);
  EXPECT_EQ(info.shape["kind"], "mcp_oauth_grant");
  EXPECT_EQ(info.shape.dump().find("at-2"), std::string::npos);
}

TEST(OAuthGrantCredentialId, IsInTheVaultsAlphabetAndNamesTheServer) {
  const std::string id = oauth_grant_credential_id("my server/ü", kEndpoint);
  EXPECT_TRUE(id.starts_with("mcp-oauth.my_server___."));
  EXPECT_EQ(id.size(), std::string("mcp-oauth.my_server___.").size() + 16);
  EXPECT_NE(id, oauth_grant_credential_id("my server/ü", "https://mcp.example.com/other"));
}

TEST(OAuthGrantJson, AGrantWithoutTokensDoesNotReadBack) {
  EXPECT_EQ(oauth_grant_from_json(nlohmann::json::object()).error().code(), codes::kMcpAuthBadMetadata);
  nlohmann::json document = oauth_grant_to_json(sample_grant("at-1"));
  document["tokens"]["access_token"] = 7;
  EXPECT_EQ(oauth_grant_from_json(document).error().code(), codes::kMcpAuthBadMetadata);
}

}  // namespace
}  // namespace keel::mcp
