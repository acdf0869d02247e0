// BrowserConnectionE2e and BrowserExit: BrowserConnection and call_script against a real headless Chromium
// and the test site (model_server/static_site.h serving tests/e2e/browser/pages on two ports): a tab opened
// and navigated, the main frame's snapshot assembled, keel's world in same-origin and cross-origin
// (out-of-process) frames, page globals invisible to the world, a crashed tab as a coded error while the
// browser keeps working, navigation failures as coded errors, a tab closed, and a killed browser failing
// pending and later calls with browser.crashed instead of hanging.
#include <gtest/gtest.h>
#include <signal.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "browser/browser_connection.h"
#include "browser/browser_errors.h"
#include "browser/browser_test_support.h"
#include "browser/call_script.h"
#include "browser/connection_test_support.h"
#include "browser/snapshot.h"
#include "model_server/static_site.h"

namespace keel::browser {
namespace {

namespace asio = boost::asio;
using nlohmann::json;
using testing::open_at;
using testing::TestBrowser;

constexpr std::chrono::seconds kStepTimeout{20};

// One browser, the test pages and one connection for the suite (connection_test_support.h).
class BrowserConnectionE2e : public testing::ConnectedBrowserSuite<BrowserConnectionE2e> {};

asio::awaitable<Result<json>> snapshot_frame(std::shared_ptr<BrowserConnection> connection, int64_t tab,
                                             std::string frame_id) {
  json args = json::object();
  ScriptOptions options;
  options.timeout = kStepTimeout;
  co_return co_await call_script(connection, tab, std::move(frame_id), "snapshot", std::move(args),
                                 std::move(options));
}

// The main frame's outline through call_script, assembled and rendered by snapshot.h.
asio::awaitable<Result<std::string>> render_main_frame(std::shared_ptr<BrowserConnection> connection,
                                                       int64_t tab) {
  const TabState* state = connection->tab(tab);
  if (state == nullptr || state->main_frame() == nullptr) co_return fail(codes::kInternal, "no main frame");
  const std::string main_frame = state->main_frame()->frame_id;
  Result<json> result = co_await snapshot_frame(connection, tab, main_frame);
  if (!result) co_return fail(result.error());
  Result<FrameOutline> outline = parse_frame_outline(*result);
  if (!outline) co_return fail(outline.error());
  FrameTree tree;
  tree.outline = *outline;
  RenderOptions render;
  render.title = outline->title;
  render.url = outline->url;
  render.tab_id = tab;
  co_return render_outline(merge_frames(tree), render).text;
}

asio::awaitable<Result<json>> open_and_render(std::shared_ptr<BrowserConnection> connection,
                                              std::string url) {
  Result<int64_t> tab = co_await open_at(connection, url);
  if (!tab) co_return fail(tab.error());
  Result<std::string> text = co_await render_main_frame(connection, *tab);
  if (!text) co_return fail(text.error());
  json out = {{"tab", *tab}, {"text", *text}, {"url", connection->tab(*tab)->main_frame()->url}};
  co_return out;
}

TEST_F(BrowserConnectionE2e, ANewTabNavigatesAndItsMainFrameSnapshotIsAssembled) {
  const std::string url = site_->origin(0) + "/forms.html";
  Result<json> out = browser().run(open_and_render(connection_, url));
  ASSERT_TRUE(out) << out.error().to_string();
  const std::string text = (*out)["text"];
  EXPECT_EQ((*out)["url"], url);
  EXPECT_NE(text.find("page \""), std::string::npos) << text;
  EXPECT_NE(text.find(url), std::string::npos) << text;
  EXPECT_NE(text.find("textbox"), std::string::npos) << text;
  EXPECT_NE(text.find(" e1 "), std::string::npos) << text;
}

// Waits for the five frames of iframes.html (main, same-origin, its nested frame, cross-origin, its nested
// frame) to have keel's world, then asks each world for its document's title and URL.
asio::awaitable<Result<json>> frames_and_worlds(std::shared_ptr<BrowserConnection> connection,
                                                std::string url) {
  Result<int64_t> tab = co_await open_at(connection, url);
  if (!tab) co_return fail(tab.error());
  const int64_t tab_id = *tab;
  BrowserConnection* raw = connection.get();
  std::function<bool()> all_worlds = [raw, tab_id] {
    const TabState* state = raw->tab(tab_id);
    if (state == nullptr || state->frames.size() < 5) return false;
    for (const auto& [id, frame] : state->frames) {
      if (frame.world_context_id == 0 || frame.url.empty() || frame.url == "about:blank") return false;
    }
    return true;
  };
  CancellationToken never_cancelled;
  Result<void> ready = co_await connection->wait_until(all_worlds, kStepTimeout, never_cancelled);
  json out = {{"tab", tab_id}, {"frames", json::array()}};
  if (!ready) out["waitError"] = ready.error().to_string();
  std::vector<FrameState> frames;
  for (const auto& [id, frame] : connection->tab(tab_id)->frames) frames.push_back(frame);
  for (const FrameState& frame : frames) {
    Result<json> result = co_await snapshot_frame(connection, tab_id, frame.frame_id);
    json entry = {{"oopif", frame.oopif}, {"url", frame.url}, {"main", frame.parent_frame_id.empty()}};
    if (result) {
      entry["title"] = (*result).value("title", "");
      entry["worldUrl"] = (*result).value("url", "");
    } else {
      entry["error"] = result.error().to_string();
    }
    out["frames"].push_back(entry);
  }
  co_return out;
}

TEST_F(BrowserConnectionE2e, SameAndCrossOriginFramesEachHaveKeelsWorldAndItAnswers) {
  const std::string url = site_->origin(0) + "/iframes.html?cross=" + std::to_string(site_->port(1));
  Result<json> out = browser().run(frames_and_worlds(connection_, url));
  ASSERT_TRUE(out) << out.error().to_string();
  ASSERT_FALSE(out->contains("waitError")) << out->dump(2);
  std::multiset<std::string> titles;
  int out_of_process = 0;
  for (const json& frame : (*out)["frames"]) {
    ASSERT_FALSE(frame.contains("error")) << frame.dump();
    EXPECT_EQ(frame["worldUrl"], frame["url"]) << frame.dump();
    titles.insert(frame["title"].get<std::string>());
    const std::string frame_url = frame["url"];
    if (frame_url.starts_with("http://localhost:") && frame_url.ends_with("/frames/cross.html")) {
      EXPECT_TRUE(frame["oopif"].get<bool>()) << frame.dump();
    }
    if (frame["oopif"].get<bool>()) ++out_of_process;
  }
  EXPECT_EQ(titles, (std::multiset<std::string>{"Frames", "Same-origin frame", "Nested frame",
                                                "Cross-origin frame", "Nested frame"}))
      << out->dump(2);
  EXPECT_EQ(out_of_process, 2) << "the cross-origin frame and the frame inside it run out of process\n"
                               << out->dump(2);
}

// Sets a global in the page's own world, then reads globals from both worlds.
asio::awaitable<Result<json>> globals_of_both_worlds(std::shared_ptr<BrowserConnection> connection,
                                                     std::string url) {
  Result<int64_t> tab = co_await open_at(connection, url);
  if (!tab) co_return fail(tab.error());
  json probe_args = json::object();
  ScriptOptions probe_options;
  const std::string main_frame = connection->tab(*tab)->main_frame()->frame_id;
  Result<json> probe = co_await call_script(connection, *tab, main_frame, "observeStart",
                                            std::move(probe_args), std::move(probe_options));
  if (!probe) co_return fail(probe.error());
  const TabState* state = connection->tab(*tab);
  const std::string session = state->session_id;
  const int64_t world = state->main_frame()->world_context_id;
  json in_page = {{"expression", "window.pageSecret = 42; typeof globalThis.__keel"},
                  {"returnByValue", true}};
  CallOptions page_options;
  page_options.timeout = kStepTimeout;
  Result<json> page =
      co_await connection->call("Runtime.evaluate", std::move(in_page), session, std::move(page_options));
  if (!page) co_return fail(page.error());
  json in_world = {
      {"functionDeclaration", "function () { return [typeof window.pageSecret, typeof globalThis.__keel]; }"},
      {"executionContextId", world},
      {"returnByValue", true}};
  CallOptions world_options;
  world_options.timeout = kStepTimeout;
  Result<json> keel_world = co_await connection->call("Runtime.callFunctionOn", std::move(in_world), session,
                                                      std::move(world_options));
  if (!keel_world) co_return fail(keel_world.error());
  json out = {{"pageSeesKeel", (*page)["result"]["value"]}, {"worldSees", (*keel_world)["result"]["value"]}};
  co_return out;
}

TEST_F(BrowserConnectionE2e, PageGlobalsAreInvisibleToKeelsWorldAndKeelIsInvisibleToThePage) {
  Result<json> out = browser().run(globals_of_both_worlds(connection_, site_->origin(0) + "/forms.html"));
  ASSERT_TRUE(out) << out.error().to_string();
  EXPECT_EQ((*out)["pageSeesKeel"], "undefined") << out->dump();
  EXPECT_EQ((*out)["worldSees"], (json::array({"undefined", "object"}))) << out->dump();
}

// A navigation to a closed port, one to a server that never answers, then a good one, then the tab closed.
asio::awaitable<Result<json>> navigation_outcomes(std::shared_ptr<BrowserConnection> connection,
                                                  std::string hanging_url, std::string good_url) {
  Result<int64_t> tab = co_await connection->create_tab(kStepTimeout);
  if (!tab) co_return fail(tab.error());
  const int64_t tab_id = *tab;
  CancellationToken never_cancelled;
  json out = json::object();
  Result<void> refused =
      co_await connection->navigate(tab_id, "http://127.0.0.1:1/", kStepTimeout, never_cancelled);
  out["refused"] = refused ? "ok" : refused.error().code();
  out["refusedText"] = refused ? "" : refused.error().message();
  Result<void> hanging =
      co_await connection->navigate(tab_id, hanging_url, std::chrono::milliseconds(1500), never_cancelled);
  out["hanging"] = hanging ? "ok" : hanging.error().code();
  Result<void> good = co_await connection->navigate(tab_id, good_url, kStepTimeout, never_cancelled);
  out["good"] = good ? "ok" : good.error().to_string();
  const TabState* state = connection->tab(tab_id);
  out["url"] = state != nullptr && state->main_frame() != nullptr ? state->main_frame()->url : "";
  Result<void> closed = co_await connection->close_tab(tab_id, kStepTimeout);
  out["close"] = closed ? "ok" : closed.error().to_string();
  BrowserConnection* raw = connection.get();
  std::function<bool()> gone = [raw, tab_id] { return raw->tab(tab_id) == nullptr; };
  Result<void> removed = co_await connection->wait_until(gone, kStepTimeout, never_cancelled);
  out["removed"] = removed ? "ok" : removed.error().to_string();
  co_return out;
}

TEST_F(BrowserConnectionE2e, NavigationFailuresAreCodedAndTheTabStaysUsableUntilClosed) {
  const std::string good = site_->origin(0) + "/forms.html";
  Result<json> out = browser().run(navigation_outcomes(connection_, site_->origin(0) + "/hang", good));
  ASSERT_TRUE(out) << out.error().to_string();
  EXPECT_EQ((*out)["refused"], codes::kBrowserNavigationFailed) << out->dump();
  EXPECT_NE((*out)["refusedText"].get<std::string>().find("net::ERR_"), std::string::npos) << out->dump();
  EXPECT_EQ((*out)["hanging"], codes::kBrowserCdpTimeout) << out->dump();
  EXPECT_TRUE(site_->wait_for_request("/hang", kStepTimeout));
  EXPECT_EQ((*out)["good"], "ok") << out->dump();
  EXPECT_EQ((*out)["url"], good) << out->dump();
  EXPECT_EQ((*out)["close"], "ok") << out->dump();
  EXPECT_EQ((*out)["removed"], "ok") << out->dump();
}

// Crashes a tab's renderer (Page.crash), then uses the crashed tab, an older tab and a new one.
asio::awaitable<Result<json>> crash_a_tab(std::shared_ptr<BrowserConnection> connection, std::string url) {
  Result<int64_t> survivor = co_await open_at(connection, url);
  if (!survivor) co_return fail(survivor.error());
  Result<int64_t> victim = co_await open_at(connection, url);
  if (!victim) co_return fail(victim.error());
  const int64_t victim_id = *victim;
  const std::string victim_frame = connection->tab(victim_id)->main_frame()->frame_id;
  const std::string victim_session = connection->tab(victim_id)->session_id;
  json no_params = json::object();
  CallOptions crash_options;
  crash_options.timeout = kStepTimeout;
  Result<json> crash =
      co_await connection->call("Page.crash", std::move(no_params), victim_session, std::move(crash_options));
  json out = {{"crashCall", crash ? "ok" : crash.error().code()}};
  BrowserConnection* raw = connection.get();
  std::function<bool()> crashed = [raw, victim_id] {
    const TabState* state = raw->tab(victim_id);
    return state != nullptr && state->crashed;
  };
  CancellationToken never_cancelled;
  Result<void> marked = co_await connection->wait_until(crashed, kStepTimeout, never_cancelled);
  out["marked"] = marked ? "ok" : marked.error().to_string();
  Result<json> script = co_await snapshot_frame(connection, victim_id, victim_frame);
  out["scriptOnCrashed"] = script ? "ok" : script.error().code();
  Result<void> navigation = co_await connection->navigate(victim_id, url, kStepTimeout, never_cancelled);
  out["navigateCrashed"] = navigation ? "ok" : navigation.error().code();
  Result<std::string> older = co_await render_main_frame(connection, *survivor);
  out["olderTab"] = older ? "ok" : older.error().to_string();
  Result<json> fresh = co_await open_and_render(connection, url);
  out["newTab"] = fresh ? "ok" : fresh.error().to_string();
  co_return out;
}

TEST_F(BrowserConnectionE2e, ACrashedTabIsACodedErrorAndTheBrowserKeepsWorking) {
  Result<json> out = browser().run(crash_a_tab(connection_, site_->origin(0) + "/forms.html"));
  ASSERT_TRUE(out) << out.error().to_string();
  EXPECT_EQ((*out)["crashCall"], codes::kBrowserTabCrashed) << out->dump();
  EXPECT_EQ((*out)["marked"], "ok") << out->dump();
  EXPECT_EQ((*out)["scriptOnCrashed"], codes::kBrowserTabCrashed) << out->dump();
  EXPECT_EQ((*out)["navigateCrashed"], codes::kBrowserTabCrashed) << out->dump();
  EXPECT_EQ((*out)["olderTab"], "ok") << out->dump();
  EXPECT_EQ((*out)["newTab"], "ok") << out->dump();
}

// Starts a page-script call that never ends by itself, kills the browser's process group, and reports the
// call's outcome and what later calls get.
asio::awaitable<json> kill_during_a_script(TestBrowser* browser) {
  ConnectionOptions connection_options;
  Result<std::shared_ptr<BrowserConnection>> started =
      co_await testing::connect(browser, std::move(connection_options));
  if (!started) co_return json{{"setup", started.error().to_string()}};
  std::shared_ptr<BrowserConnection> connection = *started;
  Result<int64_t> tab = co_await connection->create_tab(kStepTimeout);
  if (!tab) co_return json{{"setup", tab.error().to_string()}};
  const std::string frame = connection->tab(*tab)->main_frame()->frame_id;
  Result<json> warm = co_await snapshot_frame(connection, *tab, frame);  // the world exists from here on
  if (!warm) co_return json{{"setup", warm.error().to_string()}};
  json args = {{"text", "text that never appears"}, {"timeoutMs", 600000}};
  ScriptOptions options;
  options.timeout = std::chrono::minutes(5);  // far beyond the test: only the kill can end the call
  auto outcome = std::make_shared<std::optional<Result<json>>>();
  auto call_ended =
      std::make_shared<asio::steady_timer>(browser->executor(), asio::steady_timer::time_point::max());
  asio::co_spawn(browser->executor(),
                 call_script(connection, *tab, frame, "waitForText", std::move(args), std::move(options)),
                 [outcome, call_ended](const std::exception_ptr&, Result<json> result) {
                   *outcome = std::move(result);
                   call_ended->cancel();
                 });
  co_await asio::post(browser->executor(), asio::use_awaitable);  // the call is sent and waiting
  // Other sessions' setup may be in flight too; the script's call must be among them and still pending.
  const size_t in_flight = browser->client().stats().in_flight;
  const bool pending_at_kill = !outcome->has_value();
  browser->process().signal_group(SIGKILL);
  co_await browser->process().wait_exit();
  if (!outcome->has_value()) {
    boost::system::error_code ignored;
    co_await call_ended->async_wait(asio::redirect_error(asio::use_awaitable, ignored));
  }
  json out = {{"inFlightAtKill", in_flight}, {"pendingAtKill", pending_at_kill}};
  out["pending"] = (*outcome)->has_value() ? "ok" : (*outcome)->error().code();
  Result<json> later = co_await snapshot_frame(connection, *tab, frame);
  out["later"] = later ? "ok" : later.error().code();
  Result<int64_t> another = co_await connection->create_tab(kStepTimeout);
  out["createTab"] = another ? "ok" : another.error().code();
  out["exited"] = connection->exited().has_value();
  co_return out;
}

TEST(BrowserExit, AKilledBrowserFailsThePendingScriptAndLaterCallsWithCrashed) {
  auto launched = TestBrowser::launch();  // its own browser: this one is killed
  KEEL_SKIP_WITHOUT_CHROMIUM(launched);
  TestBrowser& browser = **launched;
  const json out = browser.run(kill_during_a_script(&browser));
  ASSERT_FALSE(out.contains("setup")) << out.dump();
  EXPECT_GE(out["inFlightAtKill"].get<size_t>(), 1U) << out.dump();
  EXPECT_EQ(out["pendingAtKill"], true) << out.dump();
  EXPECT_EQ(out["pending"], codes::kBrowserCrashed) << out.dump();
  EXPECT_EQ(out["later"], codes::kBrowserCrashed) << out.dump();
  EXPECT_EQ(out["createTab"], codes::kBrowserCrashed) << out.dump();
  EXPECT_EQ(out["exited"], true);
}

}  // namespace
}  // namespace keel::browser
