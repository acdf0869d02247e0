// BrowserGuard: the navigation guard's decisions on what a real headless Chromium pauses with a browser-wide
// `Fetch.enable{Document}` — the URL forms Chromium canonicalizes (short IPv4, upper case, trailing dot,
// a non-ASCII host in punycode) reach decide_paused_request as origins util/origin.h reads, a denied one is
// failed with BlockedByClient, and the error page it leaves passes check_committed_url.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "browser/browser_test_support.h"
#include "browser/cdp/event_waiter.h"
#include "browser/origin_guard.h"

namespace keel::browser {
namespace {

namespace asio = boost::asio;
using nlohmann::json;
using testing::TestBrowser;

constexpr std::chrono::seconds kStepTimeout{20};

class OneOriginPolicy : public OriginPolicy {
 public:
  bool allows_navigation(const std::string& thread_id, const std::string& origin) const override {
    return thread_id == "t1" && origin == "http://127.0.0.1:9";
  }
};

asio::awaitable<Result<json>> send(CdpClient* client, std::string method, json params, std::string session) {
  CallOptions options;
  options.timeout = kStepTimeout;
  co_return co_await client->call(std::move(method), std::move(params), std::move(session),
                                  std::move(options));
}

// For each URL: the page sets location.href to it; the paused request is decided and failed (port 9 has no
// server: the test needs no network); then the committed error page is checked. Returns one object per URL.
asio::awaitable<Result<json>> navigate_through_guard(CdpClient* client, std::vector<std::string> urls) {
  json pattern = {{"urlPattern", "*"}, {"resourceType", "Document"}};
  json patterns = {{"patterns", json::array({pattern})}};
  Result<json> fetch = co_await send(client, "Fetch.enable", std::move(patterns), "");
  if (!fetch) co_return fail(fetch.error());
  json create = {{"url", "about:blank"}};
  Result<json> created = co_await send(client, "Target.createTarget", std::move(create), "");
  if (!created) co_return fail(created.error());
  json attach = {{"targetId", (*created)["targetId"]}, {"flatten", true}};
  Result<json> attached = co_await send(client, "Target.attachToTarget", std::move(attach), "");
  if (!attached) co_return fail(attached.error());
  const std::string sid = (*attached)["sessionId"].get<std::string>();
  json no_params = json::object();
  Result<json> enabled = co_await send(client, "Page.enable", std::move(no_params), sid);
  if (!enabled) co_return fail(enabled.error());

  const OneOriginPolicy policy;
  CancellationToken never_cancelled;
  json out = json::array();
  for (const std::string& url : urls) {
    EventWaiter paused(*client, [](const CdpEvent& e) { return e.method == "Fetch.requestPaused"; });
    EventWaiter committed(*client, [sid](const CdpEvent& e) {
      return e.session_id == sid && e.method == "Page.frameNavigated";
    });
    json go = {{"expression", "location.href = " + json(url).dump()}};
    Result<json> went = co_await send(client, "Runtime.evaluate", std::move(go), sid);
    if (!went) co_return fail(went.error());
    Result<CdpEvent> request = co_await paused.wait(kStepTimeout, never_cancelled);
    if (!request) co_return fail(request.error());
    PausedDocumentRequest guarded;
    guarded.url = request->params["request"].value("url", "");
    guarded.redirect = request->params.contains("redirectedRequestId");
    const GuardDecision decision = decide_paused_request(guarded, "t1", policy);
    json answer = {{"requestId", request->params["requestId"]}, {"errorReason", "BlockedByClient"}};
    Result<json> failed = co_await send(client, "Fetch.failRequest", std::move(answer), "");
    if (!failed) co_return fail(failed.error());
    Result<CdpEvent> frame = co_await committed.wait(kStepTimeout, never_cancelled);
    if (!frame) co_return fail(frame.error());
    const std::string committed_url = frame->params["frame"].value("url", "");
    const GuardDecision after = check_committed_url(committed_url, FrameKind::kMainFrame, "t1", policy);
    out.push_back({{"asked", url},
                   {"paused", guarded.url},
                   {"allowed", decision.allowed},
                   {"origin", decision.origin},
                   {"committed", committed_url},
                   {"committedAllowed", after.allowed}});
  }
  co_return out;
}

class BrowserGuard : public testing::BrowserSuite<BrowserGuard> {};

TEST_F(BrowserGuard, PausedDocumentRequestsAreDecidedOnCanonicalOrigins) {
  std::vector<std::string> urls = {"http://127.1:9/a", "http://0x7f.0.0.1:9/b", "HTTP://EVIL.Example.:80/c",
                                   "http://bücher.example/d"};
  Result<json> out = browser().run(navigate_through_guard(&browser().client(), std::move(urls)));
  ASSERT_TRUE(out) << out.error().to_string();
  ASSERT_EQ(out->size(), 4u) << out->dump(1);
  const json& r = *out;
  EXPECT_EQ(r[0]["paused"], "http://127.0.0.1:9/a") << r[0].dump();
  EXPECT_TRUE(r[0]["allowed"].get<bool>()) << r[0].dump();
  EXPECT_EQ(r[0]["origin"], "http://127.0.0.1:9");
  EXPECT_EQ(r[1]["paused"], "http://127.0.0.1:9/b") << r[1].dump();
  EXPECT_TRUE(r[1]["allowed"].get<bool>()) << r[1].dump();
  EXPECT_FALSE(r[2]["allowed"].get<bool>()) << r[2].dump();
  EXPECT_EQ(r[2]["origin"], "http://evil.example") << r[2].dump();
  EXPECT_FALSE(r[3]["allowed"].get<bool>()) << r[3].dump();
  EXPECT_EQ(r[3]["origin"], "http://xn--bcher-kva.example") << r[3].dump();
  for (const json& each : r) {
    EXPECT_TRUE(each["committed"].get<std::string>().starts_with("chrome-error:")) << each.dump();
    EXPECT_TRUE(each["committedAllowed"].get<bool>()) << each.dump();
  }
}

}  // namespace
}  // namespace keel::browser
