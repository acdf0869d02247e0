#include "mcp/auth/oauth_requests.h"

#include <gtest/gtest.h>

#include "mcp/auth/auth_errors.h"

namespace keel::mcp {
namespace {

AuthorizationServerMetadata server() {
  AuthorizationServerMetadata metadata;
  metadata.issuer = "https://auth.example.com";
  metadata.authorization_endpoint = "https://auth.example.com/authorize";
  metadata.token_endpoint = "https://auth.example.com/token";
  return metadata;
}

std::string header(const FormRequest& request, std::string_view name) {
  for (const auto& [key, value] : request.headers) {
    if (key == name) return value;
  }
  return "";
}

TEST(OAuthRequests, TheAuthorizationUrlCarriesPkceStateAndResource) {
  AuthorizationParams params{"http://127.0.0.1:4000/callback", "https://mcp.example.com/mcp", "read write",
                             "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM", "st4te"};
  auto url = build_authorization_url(server(), OAuthClient{"client-1", "", "none"}, params);
  ASSERT_TRUE(url.has_value()) << url.error().to_string();
  auto parsed = parse_http_url(*url);
  ASSERT_TRUE(parsed.has_value());
  const QueryParams query = form_decode(parsed->query);
  EXPECT_EQ(find_param(query, "response_type"), "code");
  EXPECT_EQ(find_param(query, "client_id"), "client-1");
  EXPECT_EQ(find_param(query, "redirect_uri"), "http://127.0.0.1:4000/callback");
  EXPECT_EQ(find_param(query, "code_challenge"), "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
  EXPECT_EQ(find_param(query, "code_challenge_method"), "S256");
  EXPECT_EQ(find_param(query, "state"), "st4te");
  EXPECT_EQ(find_param(query, "resource"), "https://mcp.example.com/mcp");
  EXPECT_EQ(find_param(query, "scope"), "read write");
  params.scope.reset();
  url = build_authorization_url(server(), OAuthClient{"client-1", "", "none"}, params);
  ASSERT_TRUE(url.has_value());
  EXPECT_EQ(url->find("scope="), std::string::npos);
}

TEST(OAuthRequests, TheRedirectGivesTheCodeWhenStateAndIssuerMatch) {
  auto code = read_authorization_response(
      "http://127.0.0.1:4000/callback?code=abc&state=s1&iss=https%3A%2F%2Fauth.example.com", "s1", server());
  ASSERT_TRUE(code.has_value()) << code.error().to_string();
  EXPECT_EQ(*code, "abc");
}

TEST(OAuthRequests, AForgedOrMixedUpRedirectIsRefused) {
  AuthorizationServerMetadata promising = server();
  promising.authorization_response_iss_parameter_supported = true;
  const struct {
    const char* url;
    const AuthorizationServerMetadata metadata;
  } cases[] = {
      {"http://127.0.0.1/cb?code=abc&state=other", server()},
      {"http://127.0.0.1/cb?code=abc", server()},
      {"http://127.0.0.1/cb?code=abc&state=s1&iss=https%3A%2F%2Fevil.example.com", server()},
      {"http://127.0.0.1/cb?code=abc&state=s1", promising},
  };
  for (const auto& c : cases) {
    auto code = read_authorization_response(c.url, "s1", c.metadata);
    ASSERT_FALSE(code.has_value()) << c.url;
    EXPECT_EQ(code.error().code(), codes::kMcpAuthStateMismatch) << c.url;
    EXPECT_EQ(code.error().message().find("abc"), std::string::npos) << code.error().message();
  }
}

TEST(OAuthRequests, AnErrorRedirectIsADenial) {
  auto code = read_authorization_response(
      "http://127.0.0.1/cb?error=access_denied&error_description=no+thanks&state=s1", "s1", server());
  ASSERT_FALSE(code.has_value());
  EXPECT_EQ(code.error().code(), codes::kMcpAuthDenied);
  EXPECT_NE(code.error().message().find("access_denied: no thanks"), std::string::npos);
  code = read_authorization_response("http://127.0.0.1/cb?state=s1", "s1", server());
  ASSERT_FALSE(code.has_value());
  EXPECT_EQ(code.error().code(), codes::kMcpAuthTokenFailed);
}

TEST(OAuthRequests, TheCodeGrantAuthenticatesThePublicClientInTheBody) {
  const FormRequest request =
      token_request(server(), OAuthClient{"client-1", "", "none"}, "https://mcp.example.com/mcp",
                    AuthorizationCodeGrant{"the-code", "the-verifier", "http://127.0.0.1/cb"});
  EXPECT_EQ(request.url, "https://auth.example.com/token");
  EXPECT_EQ(header(request, "Content-Type"), "application/x-www-form-urlencoded");
  EXPECT_EQ(header(request, "Authorization"), "");
  const QueryParams form = form_decode(request.body);
  EXPECT_EQ(find_param(form, "grant_type"), "authorization_code");
  EXPECT_EQ(find_param(form, "code"), "the-code");
  EXPECT_EQ(find_param(form, "code_verifier"), "the-verifier");
  EXPECT_EQ(find_param(form, "redirect_uri"), "http://127.0.0.1/cb");
  EXPECT_EQ(find_param(form, "resource"), "https://mcp.example.com/mcp");
  EXPECT_EQ(find_param(form, "client_id"), "client-1");
  EXPECT_FALSE(find_param(form, "client_secret").has_value());
}

TEST(OAuthRequests, ClientSecretBasicGoesInTheHeaderAndPostInTheBody) {
  const FormRequest basic = token_request(server(), OAuthClient{"id:1", "s3cr&t", "client_secret_basic"}, "r",
                                          RefreshGrant{"rt", std::nullopt});
  // base64("id%3A1:s3cr%26t")
  EXPECT_EQ(header(basic, "Authorization"), "Basic aWQlM0ExOnMzY3IlMjZ0");
  EXPECT_FALSE(find_param(form_decode(basic.body), "client_secret").has_value());
  EXPECT_EQ(find_param(form_decode(basic.body), "grant_type"), "refresh_token");
  EXPECT_EQ(find_param(form_decode(basic.body), "refresh_token"), "rt");
  const FormRequest post = token_request(server(), OAuthClient{"id", "sec", "client_secret_post"}, "r",
                                         RefreshGrant{"rt", std::string("read")});
  const QueryParams form = form_decode(post.body);
  EXPECT_EQ(find_param(form, "client_id"), "id");
  EXPECT_EQ(find_param(form, "client_secret"), "sec");
  EXPECT_EQ(find_param(form, "scope"), "read");
  EXPECT_EQ(find_param(form, "resource"), "r");
}

TEST(OAuthRequests, ATokenResponseIsRead) {
  auto tokens = read_token_response(
      200,
      R"({"access_token":"at","token_type":"bearer","expires_in":3600,"refresh_token":"rt","scope":"read"})");
  ASSERT_TRUE(tokens.has_value()) << tokens.error().to_string();
  EXPECT_EQ(tokens->access_token, "at");
  EXPECT_EQ(tokens->refresh_token, "rt");
  EXPECT_EQ(tokens->scope, "read");
  EXPECT_EQ(tokens->expires_in, std::chrono::seconds(3600));
}

TEST(OAuthRequests, UnusableTokenResponsesAreCodedErrorsWithoutTheToken) {
  const struct {
    int status;
    const char* body;
    const char* says;
  } cases[] = {
      {400, R"({"error":"invalid_grant","error_description":"code expired"})", "invalid_grant: code expired"},
      {500, "<html>", "500"},
      {200, "not json", "not a JSON object"},
      {200, R"({"token_type":"Bearer"})", "no access_token"},
      {200, R"({"access_token":"secret-at","token_type":"mac"})", "not Bearer"},
      {200, R"({"access_token":"secret-at"})", "no token_type"},
  };
  for (const auto& c : cases) {
    auto tokens = read_token_response(c.status, c.body);
    ASSERT_FALSE(tokens.has_value()) << c.body;
    EXPECT_EQ(tokens.error().code(), codes::kMcpAuthTokenFailed);
    EXPECT_NE(tokens.error().message().find(c.says), std::string::npos) << tokens.error().message();
    EXPECT_EQ(tokens.error().message().find("secret-at"), std::string::npos) << tokens.error().message();
  }
}

TEST(OAuthRequests, DynamicRegistrationAsksForAPublicNativeClient) {
  const auto body = registration_request("keel", "http://127.0.0.1:4000/callback", std::string("read"));
  EXPECT_EQ(body["redirect_uris"], nlohmann::json::array({"http://127.0.0.1:4000/callback"}));
  EXPECT_EQ(body["token_endpoint_auth_method"], "none");
  EXPECT_EQ(body["application_type"], "native");
  EXPECT_EQ(body["scope"], "read");

  auto client = read_registration_response(201, R"({"client_id":"c1","client_secret":"s1"})");
  ASSERT_TRUE(client.has_value());
  EXPECT_EQ(client->client_id, "c1");
  EXPECT_EQ(client->token_endpoint_auth_method, "client_secret_basic");
  client = read_registration_response(201, R"({"client_id":"c2","token_endpoint_auth_method":"none"})");
  ASSERT_TRUE(client.has_value());
  EXPECT_EQ(client->token_endpoint_auth_method, "none");
  for (const auto& [status, response] : {std::pair{400, R"({"error":"invalid_redirect_uri"})"},
                                         std::pair{201, R"({"client_secret":"x"})"}, std::pair{201, "[]"}}) {
    auto refused = read_registration_response(status, response);
    ASSERT_FALSE(refused.has_value()) << response;
    EXPECT_EQ(refused.error().code(), codes::kMcpAuthTokenFailed);
  }
}

}  // namespace
}  // namespace keel::mcp
