#include "mcp/auth/oauth_discovery.h"

#include <gtest/gtest.h>

#include "mcp/auth/auth_errors.h"

namespace keel::mcp {
namespace {

using nlohmann::json;

std::optional<BearerChallenge> challenge_with(std::map<std::string, std::string> params) {
  return BearerChallenge{std::move(params)};
}

json server_metadata(const std::string& issuer) {
  return {{"issuer", issuer},
          {"authorization_endpoint", issuer + "/authorize"},
          {"token_endpoint", issuer + "/token"},
          {"code_challenge_methods_supported", {"plain", "S256"}}};
}

TEST(OAuthDiscovery, ResourceMetadataUrlsStartWithTheChallengesHint) {
  auto urls = protected_resource_metadata_urls(
      "https://mcp.example.com/public/mcp",
      challenge_with({{"resource_metadata", "https://mcp.example.com/meta.json"}}));
  ASSERT_TRUE(urls.has_value());
  EXPECT_EQ(*urls, (std::vector<std::string>{
                       "https://mcp.example.com/meta.json",
                       "https://mcp.example.com/.well-known/oauth-protected-resource/public/mcp",
                       "https://mcp.example.com/.well-known/oauth-protected-resource"}));
}

TEST(OAuthDiscovery, ResourceMetadataAtTheRootWhenTheServerHasNoPath) {
  auto urls = protected_resource_metadata_urls("http://127.0.0.1:7000/", std::nullopt);
  ASSERT_TRUE(urls.has_value());
  EXPECT_EQ(*urls, (std::vector<std::string>{"http://127.0.0.1:7000/.well-known/oauth-protected-resource"}));
}

TEST(OAuthDiscovery, AChallengeWithABadMetadataUrlIsRefused) {
  auto urls =
      protected_resource_metadata_urls("https://h/mcp", challenge_with({{"resource_metadata", "nope"}}));
  ASSERT_FALSE(urls.has_value());
  EXPECT_EQ(urls.error().code(), codes::kMcpAuthBadUrl);
}

TEST(OAuthDiscovery, AuthorizationServerUrlsFollowTheSpecificationsOrder) {
  auto with_path = authorization_server_metadata_urls("https://auth.example.com/tenant1");
  ASSERT_TRUE(with_path.has_value());
  EXPECT_EQ(*with_path, (std::vector<std::string>{
                            "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
                            "https://auth.example.com/.well-known/openid-configuration/tenant1",
                            "https://auth.example.com/tenant1/.well-known/openid-configuration"}));
  auto root = authorization_server_metadata_urls("https://auth.example.com");
  ASSERT_TRUE(root.has_value());
  EXPECT_EQ(*root,
            (std::vector<std::string>{"https://auth.example.com/.well-known/oauth-authorization-server",
                                      "https://auth.example.com/.well-known/openid-configuration"}));
}

TEST(OAuthDiscovery, ResourceMetadataForTheServerOrAParentIsAccepted) {
  const json document = {{"resource", "https://mcp.example.com/api"},
                         {"authorization_servers", {"https://auth.example.com"}},
                         {"scopes_supported", {"read", "write"}}};
  auto metadata = parse_protected_resource_metadata(document, "https://mcp.example.com/api/mcp");
  ASSERT_TRUE(metadata.has_value()) << metadata.error().to_string();
  EXPECT_EQ(metadata->authorization_servers, std::vector<std::string>{"https://auth.example.com"});
  EXPECT_EQ(choose_scope(std::nullopt, *metadata), "read write");
  EXPECT_TRUE(parse_protected_resource_metadata(document, "https://mcp.example.com/api/").has_value());
}

TEST(OAuthDiscovery, ResourceMetadataForAnotherResourceIsRefused) {
  for (const char* resource : {"https://evil.example.com/api", "https://mcp.example.com/apiary",
                               "http://mcp.example.com/api", "https://mcp.example.com/api/mcp/deeper"}) {
    const json document = {{"resource", resource}, {"authorization_servers", {"https://auth.example.com"}}};
    auto metadata = parse_protected_resource_metadata(document, "https://mcp.example.com/api/mcp");
    ASSERT_FALSE(metadata.has_value()) << resource;
    EXPECT_EQ(metadata.error().code(), codes::kMcpAuthResourceMismatch) << resource;
  }
}

TEST(OAuthDiscovery, MalformedResourceMetadataIsACodedError) {
  for (const json& document :
       {json::array(), json{{"authorization_servers", {"https://a"}}}, json{{"resource", "https://h/mcp"}},
        json{{"resource", "https://h/mcp"}, {"authorization_servers", json::array()}},
        json{{"resource", "https://h/mcp"}, {"authorization_servers", {1}}},
        json{{"resource", 5}, {"authorization_servers", {"https://a"}}}}) {
    auto metadata = parse_protected_resource_metadata(document, "https://h/mcp");
    ASSERT_FALSE(metadata.has_value()) << document.dump();
    EXPECT_EQ(metadata.error().code(), codes::kMcpAuthBadMetadata) << document.dump();
  }
}

TEST(OAuthDiscovery, ScopeComesFromTheChallengeFirstAndIsOmittedWhenNothingNamesOne) {
  ProtectedResourceMetadata resource;
  resource.scopes_supported = {"a", "b"};
  EXPECT_EQ(choose_scope(challenge_with({{"scope", "c"}}), resource), "c");
  EXPECT_EQ(choose_scope(challenge_with({}), resource), "a b");
  EXPECT_FALSE(choose_scope(challenge_with({}), ProtectedResourceMetadata{}).has_value());
}

TEST(OAuthDiscovery, AuthorizationServerMetadataIsRead) {
  json document = server_metadata("https://auth.example.com");
  document["registration_endpoint"] = "https://auth.example.com/register";
  document["token_endpoint_auth_methods_supported"] = {"client_secret_post"};
  document["authorization_response_iss_parameter_supported"] = true;
  auto metadata = parse_authorization_server_metadata(document, "https://auth.example.com");
  ASSERT_TRUE(metadata.has_value()) << metadata.error().to_string();
  EXPECT_EQ(metadata->token_endpoint, "https://auth.example.com/token");
  EXPECT_EQ(metadata->registration_endpoint, "https://auth.example.com/register");
  EXPECT_EQ(metadata->token_endpoint_auth_methods_supported, std::vector<std::string>{"client_secret_post"});
  EXPECT_TRUE(metadata->authorization_response_iss_parameter_supported);
  EXPECT_FALSE(metadata->client_id_metadata_document_supported);
}

TEST(OAuthDiscovery, AnIssuerOtherThanTheOneAskedForIsRefused) {
  auto metadata = parse_authorization_server_metadata(server_metadata("https://auth.example.com/"),
                                                      "https://auth.example.com");
  ASSERT_FALSE(metadata.has_value());
  EXPECT_EQ(metadata.error().code(), codes::kMcpAuthIssuerMismatch);
}

TEST(OAuthDiscovery, AServerWithoutS256IsRefused) {
  json document = server_metadata("https://a");
  document["code_challenge_methods_supported"] = {"plain"};
  auto metadata = parse_authorization_server_metadata(document, "https://a");
  ASSERT_FALSE(metadata.has_value());
  EXPECT_EQ(metadata.error().code(), codes::kMcpAuthPkceUnsupported);
  document.erase("code_challenge_methods_supported");
  metadata = parse_authorization_server_metadata(document, "https://a");
  ASSERT_FALSE(metadata.has_value());
  EXPECT_EQ(metadata.error().code(), codes::kMcpAuthPkceUnsupported);
}

TEST(OAuthDiscovery, AnEndpointThatIsNotAnHttpUrlIsRefused) {
  json document = server_metadata("https://a");
  document["token_endpoint"] = "javascript:alert(1)";
  auto metadata = parse_authorization_server_metadata(document, "https://a");
  ASSERT_FALSE(metadata.has_value());
  EXPECT_EQ(metadata.error().code(), codes::kMcpAuthBadMetadata);
}

}  // namespace
}  // namespace keel::mcp
