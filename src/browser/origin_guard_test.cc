#include "browser/origin_guard.h"

#include <gtest/gtest.h>

#include <set>
#include <utility>
#include <vector>

#include "browser/browser_errors.h"

namespace keel::browser {
namespace {

// Allows the origins it was given, per thread, and records every question.
class FakePolicy : public OriginPolicy {
 public:
  explicit FakePolicy(std::set<std::pair<std::string, std::string>> allowed) : allowed_(std::move(allowed)) {}
  bool allows_navigation(const std::string& thread_id, const std::string& origin) const override {
    asked.emplace_back(thread_id, origin);
    return allowed_.contains({thread_id, origin});
  }
  mutable std::vector<std::pair<std::string, std::string>> asked;

 private:
  std::set<std::pair<std::string, std::string>> allowed_;
};

FakePolicy shop_only() {
  return FakePolicy({{"t1", "https://shop.example"}, {"t1", "http://127.0.0.1:8731"}});
}

PausedDocumentRequest paused(std::string url, bool redirect = false,
                             FrameKind frame = FrameKind::kMainFrame) {
  PausedDocumentRequest request;
  request.url = std::move(url);
  request.redirect = redirect;
  request.frame = frame;
  return request;
}

TEST(RequestedNavigationTest, HttpAndHttpsGiveTheCanonicalOrigin) {
  const auto https = requested_navigation("HTTPS://Shop.Example:443/cart?x=1#top");
  ASSERT_TRUE(https) << https.error().to_string();
  ASSERT_TRUE(https->origin);
  EXPECT_EQ(https->origin->to_string(), "https://shop.example");
  EXPECT_EQ(https->url, "HTTPS://Shop.Example:443/cart?x=1#top");
  const auto local = requested_navigation("http://127.0.0.1:8731/index.html");
  ASSERT_TRUE(local);
  EXPECT_EQ(local->origin->to_string(), "http://127.0.0.1:8731");
  EXPECT_EQ(local->origin->port, 8731);
  const auto ipv6 = requested_navigation("http://[0:0::1]:80/");
  ASSERT_TRUE(ipv6);
  EXPECT_EQ(ipv6->origin->to_string(), "http://[::1]");
}

TEST(RequestedNavigationTest, AboutBlankIsAllowedWithoutAnOrigin) {
  for (const char* url : {"about:blank", "ABOUT:blank", "about:blank#x"}) {
    const auto navigation = requested_navigation(url);
    ASSERT_TRUE(navigation) << url;
    EXPECT_FALSE(navigation->origin) << url;
  }
}

TEST(RequestedNavigationTest, RefusesEverySchemeButHttpHttpsAndAboutBlank) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"data:text/html,<h1>hi</h1>", "scheme"},
      {"DATA:text/html;base64,PGgxPg==", "scheme"},
      {"javascript:alert(1)", "scheme"},
      {"file:///etc/passwd", "scheme"},
      {"filesystem:https://shop.example/temporary/x", "scheme"},
      {"chrome://settings", "scheme"},
      {"chrome-extension://abcdef/page.html", "scheme"},
      {"chrome-untrusted://terminal/", "scheme"},
      {"view-source:https://shop.example/", "scheme"},
      {"devtools://devtools/bundled/inspector.html", "scheme"},
      {"blob:https://shop.example/2c5e1b6c", "scheme"},
      {"ftp://files.example/x", "scheme"},
      {"mailto:someone@example.com", "scheme"},
      {"ws://127.0.0.1:9222/devtools/browser/x", "websocket"},
      {"wss://chat.example/socket", "websocket"},
      {"about:settings", "about_page"},
      {"about:srcdoc", "about_page"},
      {"about:blankx", "about_page"},
  };
  for (const auto& [url, rule] : cases) {
    const auto navigation = requested_navigation(url);
    ASSERT_FALSE(navigation) << url;
    EXPECT_EQ(navigation.error().code(), codes::kBrowserNavigationRefused) << url;
    EXPECT_NE(navigation.error().message().find("(rule " + rule), std::string::npos)
        << url << ": " << navigation.error().message();
  }
}

TEST(RequestedNavigationTest, RefusesUrlsWhoseOriginCannotBeNamedOneWay) {
  // Each is a second spelling of an origin (or of no origin) that a rule written for the first would miss.
  for (const char* url :
       {"http://127.1/", "http://0x7f.0.0.1/", "http://2130706433/", "http://010.0.0.1/",
        "https://shop.example@evil.example/", "https://bücher.example/", "https://%65vil.example/",
        "https://evil.example\\@shop.example/", "https://shop.example:99999/", "https:// shop.example/",
        "shop.example/cart", "localhost:8080", "", "//shop.example/", "https:shop.example"}) {
    const auto navigation = requested_navigation(url);
    ASSERT_FALSE(navigation) << url;
    EXPECT_EQ(navigation.error().code(), codes::kBrowserNavigationRefused) << url;
    EXPECT_NE(navigation.error().message().find("(rule bad_url"), std::string::npos)
        << url << ": " << navigation.error().message();
  }
}

TEST(RequestedNavigationTest, TheMessageIsPrintableAndBounded) {
  const std::string huge = "data:text/html," + std::string(100'000, 'x') + "\n\x01\xff";
  const auto navigation = requested_navigation(huge);
  ASSERT_FALSE(navigation);
  EXPECT_LT(navigation.error().message().size(), 600u);
  for (char c : navigation.error().message()) {
    const auto byte = static_cast<unsigned char>(c);
    EXPECT_TRUE(byte >= 0x20 && byte < 0x7f) << static_cast<int>(byte);
  }
  const auto control = requested_navigation("javascript:\nalert(1)");
  ASSERT_FALSE(control);
  EXPECT_NE(control.error().message().find("javascript:?alert(1)"), std::string::npos)
      << control.error().message();
}

TEST(PausedRequestTest, ContinuesAnAllowedOriginAndAsksForTheRightThread) {
  const FakePolicy policy = shop_only();
  const GuardDecision decision = decide_paused_request(paused("https://shop.example/cart"), "t1", policy);
  EXPECT_TRUE(decision.allowed);
  EXPECT_EQ(decision.origin, "https://shop.example");
  ASSERT_EQ(policy.asked.size(), 1u);
  EXPECT_EQ(policy.asked[0], std::make_pair(std::string("t1"), std::string("https://shop.example")));

  // The same origin for another thread is that thread's policy's business.
  const GuardDecision other = decide_paused_request(paused("https://shop.example/cart"), "t2", policy);
  EXPECT_FALSE(other.allowed);
  EXPECT_EQ(other.rule, RefusalRule::kOriginDenied);
}

TEST(PausedRequestTest, FailsADeniedOriginNamingTheOriginAndTheRule) {
  const FakePolicy policy = shop_only();
  const GuardDecision decision =
      decide_paused_request(paused("https://evil.example/steal?x=1"), "t1", policy);
  ASSERT_FALSE(decision.allowed);
  EXPECT_EQ(decision.rule, RefusalRule::kOriginDenied);
  EXPECT_EQ(decision.origin, "https://evil.example");
  EXPECT_EQ(decision.url, "https://evil.example/steal?x=1");
  const Error error = decision.error();
  EXPECT_EQ(error.code(), codes::kBrowserNavigationRefused);
  EXPECT_EQ(error.message(),
            "navigation to https://evil.example/steal?x=1 refused (rule origin_denied, origin "
            "https://evil.example): a page's document: the policy does not allow https://evil.example for "
            "this thread (no host permission, or a rule denies it)");
}

TEST(PausedRequestTest, ARedirectHopToADeniedOriginIsFailedAndSaysItWasARedirect) {
  const FakePolicy policy = shop_only();
  const GuardDecision hop = decide_paused_request(paused("https://evil.example/", true), "t1", policy);
  ASSERT_FALSE(hop.allowed);
  EXPECT_NE(hop.reason.find("a redirect hop"), std::string::npos) << hop.reason;
  // A hop within allowed origins goes on.
  const GuardDecision fine = decide_paused_request(paused("http://127.0.0.1:8731/next", true), "t1", policy);
  EXPECT_TRUE(fine.allowed);
}

TEST(PausedRequestTest, AnIframeDocumentIsDecidedLikeAPage) {
  const FakePolicy policy = shop_only();
  const GuardDecision frame = decide_paused_request(
      paused("http://localhost:9000/frame.html", false, FrameKind::kSubframe), "t1", policy);
  ASSERT_FALSE(frame.allowed);
  EXPECT_EQ(frame.origin, "http://localhost:9000");
  EXPECT_NE(frame.reason.find("an iframe's document"), std::string::npos) << frame.reason;
}

TEST(PausedRequestTest, DefaultPortsAndCaseDoNotChangeTheOriginAskedAbout) {
  const FakePolicy policy = shop_only();
  EXPECT_TRUE(decide_paused_request(paused("https://SHOP.example.:443/"), "t1", policy).allowed);
  EXPECT_FALSE(decide_paused_request(paused("https://shop.example:8443/"), "t1", policy).allowed);
  EXPECT_FALSE(decide_paused_request(paused("http://shop.example/"), "t1", policy).allowed);
  EXPECT_FALSE(decide_paused_request(paused("https://shop.example.evil.example/"), "t1", policy).allowed);
}

TEST(PausedRequestTest, NothingButHttpAndHttpsIsLetThrough) {
  const FakePolicy policy = shop_only();
  for (const char* url : {"about:blank", "data:text/html,x", "file:///etc/passwd", "ws://127.0.0.1:8731/",
                          "blob:https://shop.example/1", "chrome://version"}) {
    const GuardDecision decision = decide_paused_request(paused(url), "t1", policy);
    EXPECT_FALSE(decision.allowed) << url;
  }
  EXPECT_TRUE(policy.asked.empty()) << "the policy is asked only about web origins";
}

TEST(CommittedUrlTest, AllowsWhatAFrameMayShowAfterACommit) {
  const FakePolicy policy = shop_only();
  EXPECT_TRUE(check_committed_url("https://shop.example/", FrameKind::kMainFrame, "t1", policy).allowed);
  EXPECT_TRUE(check_committed_url("about:blank", FrameKind::kMainFrame, "t1", policy).allowed);
  EXPECT_TRUE(
      check_committed_url("chrome-error://chromewebdata/", FrameKind::kMainFrame, "t1", policy).allowed);
  EXPECT_TRUE(check_committed_url("about:srcdoc", FrameKind::kSubframe, "t1", policy).allowed);
  EXPECT_TRUE(check_committed_url("data:text/html,<p>x</p>", FrameKind::kSubframe, "t1", policy).allowed);
  const GuardDecision blob =
      check_committed_url("blob:https://shop.example/2c5e1b6c", FrameKind::kMainFrame, "t1", policy);
  EXPECT_TRUE(blob.allowed);
  EXPECT_EQ(blob.origin, "https://shop.example");
}

TEST(CommittedUrlTest, RefusesWhatNoNavigationMayLeaveAMainFrameOn) {
  const FakePolicy policy = shop_only();
  const std::vector<std::pair<std::string, RefusalRule>> cases = {
      {"data:text/html,<p>phish</p>", RefusalRule::kScheme},
      {"file:///etc/passwd", RefusalRule::kScheme},
      {"chrome://settings/", RefusalRule::kScheme},
      {"about:srcdoc", RefusalRule::kAboutPage},
      {"blob:https://evil.example/1", RefusalRule::kOriginDenied},
      {"blob:null/5c1d", RefusalRule::kOpaqueBlob},
      {"blob:file:///x", RefusalRule::kOpaqueBlob},
      {"https://evil.example/", RefusalRule::kOriginDenied},
  };
  for (const auto& [url, rule] : cases) {
    const GuardDecision decision = check_committed_url(url, FrameKind::kMainFrame, "t1", policy);
    EXPECT_FALSE(decision.allowed) << url;
    EXPECT_EQ(decision.rule, rule) << url << ": " << decision.reason;
  }
  // A subframe may not show a denied origin or a file either.
  EXPECT_FALSE(check_committed_url("https://evil.example/", FrameKind::kSubframe, "t1", policy).allowed);
  EXPECT_FALSE(check_committed_url("file:///etc/passwd", FrameKind::kSubframe, "t1", policy).allowed);
}

TEST(RefusalRuleTest, EveryRuleHasItsOwnName) {
  std::set<std::string_view> names;
  for (RefusalRule rule : {RefusalRule::kBadUrl, RefusalRule::kScheme, RefusalRule::kWebSocket,
                           RefusalRule::kAboutPage, RefusalRule::kOpaqueBlob, RefusalRule::kOriginDenied}) {
    names.insert(refusal_rule_name(rule));
  }
  EXPECT_EQ(names.size(), 6u);
}

}  // namespace
}  // namespace keel::browser
