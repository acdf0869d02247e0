#include "mcp/auth/oauth_url.h"

#include <gtest/gtest.h>

#include "mcp/auth/auth_errors.h"

namespace keel::mcp {
namespace {

TEST(OAuthUrl, SplitsAndLowerCasesAUrl) {
  auto url = parse_http_url("HTTPS://MCP.Example.com:443/Api/MCP?x=1#frag");
  ASSERT_TRUE(url.has_value()) << url.error().to_string();
  EXPECT_EQ(url->scheme, "https");
  EXPECT_EQ(url->host, "mcp.example.com");
  EXPECT_EQ(url->port, "");
  EXPECT_EQ(url->path, "/Api/MCP");
  EXPECT_EQ(url->query, "x=1");
  EXPECT_EQ(url->to_string(), "https://mcp.example.com/Api/MCP?x=1");
  EXPECT_EQ(url->origin(), "https://mcp.example.com");
}

TEST(OAuthUrl, KeepsANonDefaultPort) {
  auto url = parse_http_url("http://127.0.0.1:8123");
  ASSERT_TRUE(url.has_value());
  EXPECT_EQ(url->origin(), "http://127.0.0.1:8123");
  EXPECT_EQ(url->path, "/");
}

TEST(OAuthUrl, RefusesWhatIsNotAnAbsoluteHttpUrl) {
  for (const char* text :
       {"", "mcp.example.com/x", "ftp://h/x", "https://user:pw@h/x", "file:///etc/passwd"}) {
    auto url = parse_http_url(text);
    ASSERT_FALSE(url.has_value()) << text;
    EXPECT_EQ(url.error().code(), codes::kMcpAuthBadUrl) << text;
  }
}

TEST(OAuthUrl, AnErrorNeverRepeatsTheQuery) {
  auto url = parse_http_url("ftp://h/x?code=secret-code");
  ASSERT_FALSE(url.has_value());
  EXPECT_EQ(url.error().message().find("secret-code"), std::string::npos) << url.error().message();
}

TEST(OAuthUrl, CanonicalResourceDropsTrailingSlashQueryAndFragment) {
  EXPECT_EQ(canonical_resource_uri("https://MCP.example.com/"), "https://mcp.example.com");
  EXPECT_EQ(canonical_resource_uri("https://mcp.example.com:443/mcp/?a=b#c"), "https://mcp.example.com/mcp");
  EXPECT_EQ(canonical_resource_uri("http://127.0.0.1:9000/mcp"), "http://127.0.0.1:9000/mcp");
}

TEST(OAuthUrl, FormEncodingRoundTrips) {
  const QueryParams params = {{"redirect_uri", "http://127.0.0.1:5000/cb?x=1"},
                              {"scope", "a b+c"},
                              {"empty", ""},
                              {"utf8", "\xc3\xa9"}};
  const std::string encoded = form_encode(params);
  EXPECT_EQ(encoded,
            "redirect_uri=http%3A%2F%2F127.0.0.1%3A5000%2Fcb%3Fx%3D1&scope=a%20b%2Bc&empty=&utf8=%C3%A9");
  EXPECT_EQ(form_decode(encoded), params);
  EXPECT_EQ(form_decode("a=1+2&b&c=%zz&&d=%41"),
            (QueryParams{{"a", "1 2"}, {"b", ""}, {"c", "%zz"}, {"d", "A"}}));
  EXPECT_EQ(find_param(params, "scope"), "a b+c");
  EXPECT_FALSE(find_param(params, "nope").has_value());
}

TEST(OAuthUrl, WithQueryKeepsTheExistingParameters) {
  auto url = with_query("https://as.example.com/authorize?tenant=7", {{"state", "s 1"}});
  ASSERT_TRUE(url.has_value());
  EXPECT_EQ(*url, "https://as.example.com/authorize?tenant=7&state=s%201");
}

}  // namespace
}  // namespace keel::mcp
