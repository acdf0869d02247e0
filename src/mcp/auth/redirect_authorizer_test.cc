#include "mcp/auth/redirect_authorizer.h"

#include <gtest/gtest.h>

#include "mcp/auth/auth_errors.h"

namespace keel::mcp {
namespace {

HttpFetch answering(int status, std::vector<std::pair<std::string, std::string>> headers) {
  return [status, headers](const HttpCall& call) -> Result<HttpReply> {
    EXPECT_EQ(call.method, "GET");
    return HttpReply{status, headers, ""};
  };
}

TEST(RedirectAuthorizer, TakesTheRedirectToKeel) {
  const Authorizer authorize =
      make_redirect_authorizer(answering(302, {{"location", "http://127.0.0.1:9/cb?code=c&state=s"}}));
  auto url = authorize("https://as/authorize?x=1", "http://127.0.0.1:9/cb");
  ASSERT_TRUE(url.has_value()) << url.error().to_string();
  EXPECT_EQ(*url, "http://127.0.0.1:9/cb?code=c&state=s");
}

TEST(RedirectAuthorizer, RefusesNoRedirectAndRedirectsElsewhere) {
  const struct {
    int status;
    std::vector<std::pair<std::string, std::string>> headers;
  } cases[] = {
      {200, {}},
      {302, {}},
      {302, {{"Location", "https://evil.example.com/cb?code=c"}}},
      {302, {{"Location", "http://127.0.0.1:9/cb.evil?code=c"}}},
      {302, {{"Location", "/cb?code=c"}}},
  };
  for (const auto& c : cases) {
    auto url = make_redirect_authorizer(answering(c.status, c.headers))("https://as/authorize",
                                                                        "http://127.0.0.1:9/cb");
    ASSERT_FALSE(url.has_value());
    EXPECT_EQ(url.error().code(), codes::kMcpAuthDenied);
  }
}

}  // namespace
}  // namespace keel::mcp
