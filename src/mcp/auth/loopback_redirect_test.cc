#include "mcp/auth/loopback_redirect.h"

#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "mcp/auth/auth_errors.h"
#include "mcp/auth/http_fetch.h"

namespace keel::mcp {
namespace {

constexpr std::chrono::seconds kHangGuard{30};

TEST(LoopbackRedirect, ReturnsTheCallbackUrlAndAnswersOtherPathsWith404) {
  auto listener = LoopbackRedirectListener::open();
  ASSERT_TRUE(listener.has_value()) << listener.error().to_string();
  const std::string redirect_uri = (*listener)->redirect_uri();
  EXPECT_EQ(redirect_uri, "http://127.0.0.1:" + std::to_string((*listener)->port()) + "/callback");

  const HttpFetch fetch = make_http_fetch(std::make_shared<providers::CurlHttpClient>());
  auto browser = std::async(std::launch::async, [&] {
    auto stray = fetch(
        HttpCall{"GET", "http://127.0.0.1:" + std::to_string((*listener)->port()) + "/favicon.ico", {}, ""});
    auto callback = fetch(HttpCall{"GET", redirect_uri + "?code=c1&state=s1", {}, ""});
    return std::pair{std::move(stray), std::move(callback)};
  });
  auto url = (*listener)->wait(kHangGuard, CancellationToken());
  ASSERT_TRUE(url.has_value()) << url.error().to_string();
  EXPECT_EQ(*url, redirect_uri + "?code=c1&state=s1");
  auto [stray, callback] = browser.get();
  ASSERT_TRUE(stray.has_value()) << stray.error().to_string();
  EXPECT_EQ(stray->status, 404);
  ASSERT_TRUE(callback.has_value()) << callback.error().to_string();
  EXPECT_EQ(callback->status, 200);
  EXPECT_NE(callback->body.find("close this window"), std::string::npos);
}

TEST(LoopbackRedirect, CancellationEndsTheWaitWithADenial) {
  auto listener = LoopbackRedirectListener::open();
  ASSERT_TRUE(listener.has_value());
  CancellationSource cancel;
  const Authorizer authorize = make_loopback_authorizer(
      **listener,
      [&](const std::string& url) {
        EXPECT_EQ(url, "https://as/authorize");
        cancel.cancel();
      },
      kHangGuard, cancel.token());
  auto url = authorize("https://as/authorize", (*listener)->redirect_uri());
  ASSERT_FALSE(url.has_value());
  EXPECT_EQ(url.error().code(), codes::kMcpAuthDenied);
}

TEST(LoopbackRedirect, NobodyComingBackEndsWithADenialAfterTheTimeout) {
  auto listener = LoopbackRedirectListener::open();
  ASSERT_TRUE(listener.has_value());
  auto url = (*listener)->wait(std::chrono::milliseconds(1), CancellationToken());
  ASSERT_FALSE(url.has_value());
  EXPECT_EQ(url.error().code(), codes::kMcpAuthDenied);
}

}  // namespace
}  // namespace keel::mcp
