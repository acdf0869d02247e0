// BrowserLaunch: keel's CDP client against a real headless Chromium — launch, version, a page target attached
// flattened, navigation with its events, errors from the browser, lone surrogates from a page, a call's
// timeout, and the browser killed in the middle of a call (a coded error, not a hang).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "browser/browser_errors.h"
#include "browser/browser_test_support.h"
#include "browser/cdp/event_waiter.h"
#include "browser/cdp/websocket_transport.h"

namespace keel::browser {
namespace {

namespace asio = boost::asio;
using nlohmann::json;
using testing::TestBrowser;

constexpr std::chrono::seconds kStepTimeout{20};

// A page target attached with flatten: its session id.
asio::awaitable<Result<std::string>> open_page(CdpClient* client) {
  json create = {{"url", "about:blank"}};
  CallOptions create_options;
  create_options.timeout = kStepTimeout;
  Result<json> created =
      co_await client->call("Target.createTarget", std::move(create), "", std::move(create_options));
  if (!created) co_return fail(created.error());
  json attach = {{"targetId", (*created)["targetId"]}, {"flatten", true}};
  CallOptions attach_options;
  attach_options.timeout = kStepTimeout;
  Result<json> attached =
      co_await client->call("Target.attachToTarget", std::move(attach), "", std::move(attach_options));
  if (!attached) co_return fail(attached.error());
  co_return (*attached)["sessionId"].get<std::string>();
}

class BrowserLaunch : public testing::BrowserSuite<BrowserLaunch> {};

TEST_F(BrowserLaunch, TheBrowserAnswersGetVersion) {
  const json& version = browser().version();
  EXPECT_NE(version.value("product", "").find("Chrome/"), std::string::npos) << version.dump();
  EXPECT_FALSE(version.value("protocolVersion", "").empty());
}

asio::awaitable<Result<json>> navigate_and_read_title(CdpClient* client) {
  Result<std::string> session = co_await open_page(client);
  if (!session) co_return fail(session.error());
  const std::string sid = *session;
  CallOptions enable_options;
  enable_options.timeout = kStepTimeout;
  json no_params = json::object();
  Result<json> enabled =
      co_await client->call("Page.enable", std::move(no_params), sid, std::move(enable_options));
  if (!enabled) co_return fail(enabled.error());
  // Subscribe first, then act, then wait: the load event cannot slip past.
  EventWaiter navigated(
      *client, [sid](const CdpEvent& e) { return e.session_id == sid && e.method == "Page.frameNavigated"; });
  EventWaiter loaded(
      *client, [sid](const CdpEvent& e) { return e.session_id == sid && e.method == "Page.loadEventFired"; });
  json navigate = {{"url", "data:text/html,<title>keel launch</title><p>hello</p>"}};
  CallOptions navigate_options;
  navigate_options.timeout = kStepTimeout;
  Result<json> navigation =
      co_await client->call("Page.navigate", std::move(navigate), sid, std::move(navigate_options));
  if (!navigation) co_return fail(navigation.error());
  CancellationToken never_cancelled;
  Result<CdpEvent> frame = co_await navigated.wait(kStepTimeout, never_cancelled);
  if (!frame) co_return fail(frame.error());
  Result<CdpEvent> load = co_await loaded.wait(kStepTimeout, never_cancelled);
  if (!load) co_return fail(load.error());
  json evaluate = {{"expression", "document.title"}, {"returnByValue", true}};
  CallOptions evaluate_options;
  evaluate_options.timeout = kStepTimeout;
  Result<json> title =
      co_await client->call("Runtime.evaluate", std::move(evaluate), sid, std::move(evaluate_options));
  if (!title) co_return fail(title.error());
  json out = {{"frameUrl", frame->params["frame"]["url"]}, {"title", (*title)["result"]["value"]}};
  co_return out;
}

TEST_F(BrowserLaunch, APageTargetAttachedFlattenedNavigatesAndItsEventsArrive) {
  Result<json> out = browser().run(navigate_and_read_title(&browser().client()));
  ASSERT_TRUE(out) << out.error().to_string();
  EXPECT_EQ((*out)["title"], "keel launch");
  EXPECT_TRUE((*out)["frameUrl"].get<std::string>().starts_with("data:text/html")) << out->dump();
}

asio::awaitable<Result<json>> call_unknown_method(CdpClient* client) {
  CallOptions options;
  options.timeout = kStepTimeout;
  json no_params = json::object();
  co_return co_await client->call("Keel.noSuchMethod", std::move(no_params), "", std::move(options));
}

TEST_F(BrowserLaunch, AnUnknownMethodIsCdpErrorWithTheBrowsersMessage) {
  Result<json> out = browser().run(call_unknown_method(&browser().client()));
  ASSERT_FALSE(out);
  EXPECT_EQ(out.error().code(), codes::kBrowserCdpError);
  EXPECT_NE(out.error().message().find("Keel.noSuchMethod"), std::string::npos) << out.error().message();
}

asio::awaitable<Result<json>> evaluate_on_new_page(CdpClient* client, std::string expression,
                                                   std::chrono::milliseconds timeout) {
  Result<std::string> session = co_await open_page(client);
  if (!session) co_return fail(session.error());
  json evaluate = {{"expression", std::move(expression)}, {"returnByValue", true}, {"awaitPromise", true}};
  CallOptions options;
  options.timeout = timeout;
  co_return co_await client->call("Runtime.evaluate", std::move(evaluate), *session, std::move(options));
}

asio::awaitable<size_t> repaired_messages(TestBrowser* browser) {
  co_return browser->client().stats().repaired;
}

TEST_F(BrowserLaunch, ALoneSurrogateFromThePageIsRepairedNotLost) {
  const size_t repaired_before = browser().run(repaired_messages(&browser()));
  Result<json> out = browser().run(evaluate_on_new_page(
      &browser().client(), "'a' + String.fromCharCode(0xD800) + 'b'", std::chrono::milliseconds(20'000)));
  ASSERT_TRUE(out) << out.error().to_string();
  EXPECT_EQ((*out)["result"]["value"],
            "a\xEF\xBF\xBD"
            "b");
  const size_t repaired_after = browser().run(repaired_messages(&browser()));
  EXPECT_GT(repaired_after, repaired_before);
}

TEST_F(BrowserLaunch, ACallWithoutAReplyEndsWithCdpTimeout) {
  Result<json> out = browser().run(
      evaluate_on_new_page(&browser().client(), "new Promise(() => {})", std::chrono::milliseconds(300)));
  ASSERT_FALSE(out);
  EXPECT_EQ(out.error().code(), codes::kBrowserCdpTimeout);
}

// Starts a never-answered call, kills the browser's process group while the call is in flight, and returns
// the call's outcome and the browser's wait status.
asio::awaitable<json> kill_mid_call(TestBrowser* browser) {
  CdpClient& client = browser->client();
  Result<std::string> session = co_await open_page(&client);
  if (!session) co_return json{{"setup", session.error().to_string()}};
  json evaluate = {{"expression", "new Promise(() => {})"}, {"awaitPromise", true}};
  CallOptions options;
  options.timeout = std::chrono::minutes(5);  // far beyond the test: only the kill can end the call
  auto outcome = std::make_shared<std::optional<Result<json>>>();
  // The call's end cancels this timer (a one-shot signal that never expires by itself).
  auto call_ended =
      std::make_shared<asio::steady_timer>(browser->executor(), asio::steady_timer::time_point::max());
  asio::co_spawn(browser->executor(),
                 client.call("Runtime.evaluate", std::move(evaluate), *session, std::move(options)),
                 [outcome, call_ended](const std::exception_ptr&, Result<json> result) {
                   *outcome = std::move(result);
                   call_ended->cancel();
                 });
  co_await asio::post(browser->executor(), asio::use_awaitable);  // the call is sent and waiting
  const size_t in_flight = client.stats().in_flight;
  browser->process().signal_group(SIGKILL);
  const int status = co_await browser->process().wait_exit();
  if (!outcome->has_value()) {
    boost::system::error_code ignored;
    co_await call_ended->async_wait(asio::redirect_error(asio::use_awaitable, ignored));
  }
  json out = {{"inFlightAtKill", in_flight},
              {"signal", WIFSIGNALED(status) ? WTERMSIG(status) : 0},
              {"clientClosed", client.closed()}};
  if (outcome->has_value()) {
    out["code"] = (*outcome)->has_value() ? "ok" : (*outcome)->error().code();
    if (!(*outcome)->has_value()) out["message"] = (*outcome)->error().message();
  }
  co_return out;
}

TEST_F(BrowserLaunch, TheBrowserKilledMidCallFailsTheCallWithDisconnected) {
  auto launched = TestBrowser::launch();  // its own browser: this one is killed
  KEEL_SKIP_WITHOUT_CHROMIUM(launched);
  TestBrowser& browser = **launched;
  const json out = browser.run(kill_mid_call(&browser));
  ASSERT_FALSE(out.contains("setup")) << out.dump();
  EXPECT_EQ(out["inFlightAtKill"], 1);
  EXPECT_EQ(out["signal"], SIGKILL);
  EXPECT_EQ(out["clientClosed"], true);
  EXPECT_EQ(out.value("code", ""), codes::kBrowserDisconnected) << out.dump();
}

// Attaches a second client over WebSocket (the browser's HTTP endpoint → /json/version → ws://), asks for its
// version, and checks that events arrive over it too.
asio::awaitable<json> attach_over_websocket(TestBrowser* browser) {
  // Chromium writes the port it bound and the browser's WebSocket path there before it serves CDP.
  std::ifstream active_port(browser->process().profile_dir() / "DevToolsActivePort");
  std::string port;
  std::getline(active_port, port);
  if (port.empty()) co_return json{{"setup", "no DevToolsActivePort in the profile"}};
  const std::string endpoint = "http://127.0.0.1:" + port;
  Result<std::unique_ptr<CdpTransport>> transport =
      co_await connect_websocket(browser->executor(), endpoint, size_t{64} << 20, std::chrono::seconds(20));
  if (!transport) co_return json{{"setup", transport.error().to_string()}};
  auto client = CdpClient::create(browser->executor(), std::move(*transport));
  client->start();
  json no_params = json::object();
  CallOptions version_options;
  version_options.timeout = kStepTimeout;
  Result<json> version =
      co_await client->call("Browser.getVersion", std::move(no_params), "", std::move(version_options));
  EventWaiter created(*client, [](const CdpEvent& e) { return e.method == "Target.targetCreated"; });
  json discover = {{"discover", true}};
  CallOptions discover_options;
  discover_options.timeout = kStepTimeout;
  Result<json> discovering = co_await client->call("Target.setDiscoverTargets", std::move(discover), "",
                                                   std::move(discover_options));
  CancellationToken never_cancelled;
  Result<CdpEvent> event = co_await created.wait(kStepTimeout, never_cancelled);
  json out = {{"product", version ? (*version).value("product", "") : version.error().to_string()},
              {"discovering", discovering ? "" : discovering.error().to_string()},
              {"event", event ? event->params["targetInfo"].value("type", "") : event.error().to_string()}};
  client->close(Error(codes::kBrowserDisconnected, "the test is done"));
  co_return out;
}

TEST_F(BrowserLaunch, AClientAttachesOverWebSocketToARunningBrowser) {
  std::vector<std::string> debugging_port = {"--remote-debugging-port=0",
                                             "--remote-debugging-address=127.0.0.1"};
  auto launched = TestBrowser::launch(std::move(debugging_port));  // its own browser, with a debugging port
  KEEL_SKIP_WITHOUT_CHROMIUM(launched);
  TestBrowser& browser = **launched;
  const json out = browser.run(attach_over_websocket(&browser));
  ASSERT_FALSE(out.contains("setup")) << out.dump();
  EXPECT_NE(out["product"].get<std::string>().find("Chrome/"), std::string::npos) << out.dump();
  EXPECT_EQ(out["discovering"], "") << out.dump();
  EXPECT_FALSE(out["event"].get<std::string>().empty()) << out.dump();
}

}  // namespace
}  // namespace keel::browser
