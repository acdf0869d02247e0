// BrowserPixels: the L2 tools (browser_screenshot, browser_mouse, browser_keyboard, browser_drag) end to end
// in a real headless Chromium against the test pages on 127.0.0.1, called as the engine calls them
// (resolve_target_for, then execute with the decided target); and the interrupt cleanup of L2 input (held
// keys released, input session detached). One BrowserRuntime per suite; each test is its own agent thread.
#include <gtest/gtest.h>

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <thread>

#include "browser/browser_errors.h"
#include "browser/browser_runtime.h"
#include "browser/browser_test_support.h"
#include "browser/tools/register.h"
#include "browser/tools/tool_test_support.h"
#include "keel/tool_registry.h"
#include "model_server/static_site.h"

namespace keel::browser {
namespace {

using testing::call_tool;
using testing::kCallDeadline;
using testing::Outcome;
using testing::ref_of;
using testing::run_browser_op;

namespace asio = boost::asio;
using nlohmann::json;

// The first bytes of a base64 text, decoded (enough for a file's magic number).
std::string decode_prefix(const std::string& base64, size_t bytes) {
  static constexpr std::string_view kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  uint32_t buffer = 0;
  int bits = 0;
  for (char c : base64) {
    const size_t value = kAlphabet.find(c);
    if (value == std::string_view::npos) break;
    buffer = (buffer << 6) | static_cast<uint32_t>(value);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((buffer >> bits) & 0xff));
      if (out.size() == bytes) break;
    }
  }
  return out;
}

const std::string kPngMagic("\x89PNG\r\n\x1a\n", 8);

class BrowserPixels : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    model_server::StaticSiteOptions options;
    options.root = KEEL_BROWSER_PAGES;
    options.listeners = 2;
    Result<std::unique_ptr<model_server::StaticSite>> site = model_server::StaticSite::start(options);
    if (!site) {
      started_ = fail(site.error());
      return;
    }
    site_ = std::move(*site);
    RuntimeOptions runtime_options;
    runtime_options.navigation_timeout = std::chrono::seconds(10);
    runtime_ = BrowserRuntime::create(runtime_options);
    registry_ = std::make_unique<ToolRegistry>();
    started_ = register_browser_tools(*registry_, runtime_);
    if (!started_) return;
    // Launch now, so that a Chromium that cannot start is one clear skip (or failure) per test.
    Result<ToolResult> launched =
        run_op("launch", CancellationToken(),
               [](std::shared_ptr<BrowserThread>, CancellationToken) -> asio::awaitable<Result<ToolResult>> {
                 co_return ToolResult{};
               });
    started_ = launched ? Result<void>{} : Result<void>(fail(launched.error()));
  }
  static void TearDownTestSuite() {
    registry_.reset();
    runtime_.reset();
    site_.reset();
  }

  void SetUp() override {
    KEEL_SKIP_WITHOUT_CHROMIUM(started_);
    thread_ = ::testing::UnitTest::GetInstance()->current_test_info()->name();
  }

  static Result<ToolResult> run_op(const std::string& thread_id, CancellationToken cancel, BrowserOp op) {
    return run_browser_op(*runtime_, thread_id, std::move(cancel), std::move(op));
  }

  Outcome call(const std::string& tool, json params, CancellationToken cancel = {}) {
    return call_tool(*registry_, thread_, tool, std::move(params), std::move(cancel));
  }

  std::string page(const std::string& path, size_t listener = 0) {
    return site_->origin(listener) + "/" + path;
  }

  Outcome open_and_snapshot(const std::string& path) {
    Outcome opened = call("browser_navigate", {{"url", page(path)}});
    EXPECT_TRUE(opened.result) << opened.text();
    return call("browser_snapshot", json::object());
  }

  // The centre of a ref's box in a snapshot's details.
  static std::optional<std::pair<double, double>> centre_of(const Outcome& snapshot, const std::string& ref) {
    if (!snapshot.result) return std::nullopt;
    for (const json& box : snapshot.result->details.value("boxes", json::array())) {
      if (box.value("ref", "") == ref) {
        return std::make_pair(box.value("x", 0.0) + box.value("w", 0.0) / 2,
                              box.value("y", 0.0) + box.value("h", 0.0) / 2);
      }
    }
    return std::nullopt;
  }

  // The value of a JavaScript expression in this thread's current tab (main world), for checks.
  json evaluate(const std::string& expression) {
    json value;
    Result<ToolResult> ran =
        run_op(thread_, CancellationToken(),
               [expression, &value](std::shared_ptr<BrowserThread> thread,
                                    CancellationToken) -> asio::awaitable<Result<ToolResult>> {
                 std::shared_ptr<BrowserConnection> connection = thread->connection();
                 const TabState* tab = connection->tab(thread->current());
                 if (tab == nullptr) co_return fail(codes::kBrowserNoSuchTab, "no tab");
                 json params = {{"expression", expression}, {"returnByValue", true}};
                 CallOptions options;
                 Result<json> reply = co_await connection->call("Runtime.evaluate", std::move(params),
                                                                tab->session_id, options);
                 if (!reply) co_return fail(reply.error());
                 value = (*reply)["result"].value("value", json());
                 co_return ToolResult{};
               });
    EXPECT_TRUE(ran) << (ran ? "" : ran.error().message());
    return value;
  }

  std::string page_log() { return evaluate("document.getElementById('log').textContent").get<std::string>(); }

  static inline Result<void> started_ = fail(codes::kInternal, "the suite did not start");
  static inline std::unique_ptr<model_server::StaticSite> site_;
  static inline std::shared_ptr<BrowserRuntime> runtime_;
  static inline std::unique_ptr<ToolRegistry> registry_;
  std::string thread_;
};

TEST_F(BrowserPixels, ScreenshotOfTheCurrentTabIsAPngWithTheRefBoxesInView) {
  Outcome snapshot = open_and_snapshot("trusted.html");
  ASSERT_TRUE(snapshot.result) << snapshot.text();
  const std::string press = ref_of(snapshot.text(), "button \"Press me\"");
  ASSERT_NE(press, "") << snapshot.text();
  Outcome shot = call("browser_screenshot", json::object());
  ASSERT_TRUE(shot.result) << shot.text();
  const ContentBlock* image = shot.image();
  ASSERT_NE(image, nullptr) << shot.text();
  EXPECT_EQ(image->media_type, "image/png");
  EXPECT_EQ(decode_prefix(image->data_base64, 8), kPngMagic);
  const json& details = shot.result->details;
  EXPECT_EQ(details.value("png", ""), image->data_base64);
  bool has_press = false;
  for (const json& box : details.value("boxes", json::array())) has_press |= box.value("ref", "") == press;
  EXPECT_TRUE(has_press) << details["boxes"].dump();
  EXPECT_NE(shot.text().find("Screenshot of tab"), std::string::npos) << shot.text();
  // A ref's element alone, and the whole page.
  Outcome element = call("browser_screenshot", {{"ref", press}});
  ASSERT_TRUE(element.result) << element.text();
  ASSERT_NE(element.image(), nullptr);
  EXPECT_EQ(decode_prefix(element.image()->data_base64, 8), kPngMagic);
  EXPECT_LT(element.image()->data_base64.size(), image->data_base64.size());
  Outcome whole = call("browser_screenshot", {{"full_page", true}});
  ASSERT_TRUE(whole.result) << whole.text();
  EXPECT_NE(whole.text().find("the whole page"), std::string::npos) << whole.text();
}

TEST_F(BrowserPixels, ScreenshotOfABackgroundTabBringsItToFrontAndAnswers) {
  Outcome opened = call("browser_navigate", {{"url", page("trusted.html")}});
  ASSERT_TRUE(opened.result) << opened.text();
  const int64_t first = runtime_->view(thread_).current_tab;
  Outcome second = call("browser_new_tab", {{"url", page("overlay.html")}});
  ASSERT_TRUE(second.result) << second.text();
  ASSERT_NE(runtime_->view(thread_).current_tab, first);
  Outcome shot = call("browser_screenshot", {{"tab", first}});
  ASSERT_TRUE(shot.result) << shot.text();
  ASSERT_NE(shot.image(), nullptr);
  EXPECT_EQ(decode_prefix(shot.image()->data_base64, 8), kPngMagic);
  EXPECT_NE(shot.text().find("trusted.html"), std::string::npos) << shot.text();
}

TEST_F(BrowserPixels, AMouseClickAtAButtonsBoxIsATrustedClick) {
  Outcome snapshot = open_and_snapshot("trusted.html");
  ASSERT_TRUE(snapshot.result) << snapshot.text();
  std::optional<std::pair<double, double>> centre =
      centre_of(snapshot, ref_of(snapshot.text(), "button \"Press me\""));
  ASSERT_TRUE(centre) << snapshot.result->details.dump();
  Outcome clicked = call("browser_mouse", {{"action", "click"}, {"x", centre->first}, {"y", centre->second}});
  ASSERT_TRUE(clicked.result) << clicked.text();
  EXPECT_NE(clicked.text().find("button#press"), std::string::npos) << clicked.text();
  EXPECT_NE(page_log().find("clicked trusted=true detail=1"), std::string::npos) << page_log();
  Outcome twice =
      call("browser_mouse", {{"action", "double_click"}, {"x", centre->first}, {"y", centre->second}});
  ASSERT_TRUE(twice.result) << twice.text();
  EXPECT_NE(page_log().find("clicked trusted=true detail=2"), std::string::npos) << page_log();
}

TEST_F(BrowserPixels, KeyboardTypesTextAndKeysIntoTheFocusedField) {
  Outcome snapshot = open_and_snapshot("trusted.html");
  ASSERT_TRUE(snapshot.result) << snapshot.text();
  std::optional<std::pair<double, double>> field =
      centre_of(snapshot, ref_of(snapshot.text(), "textbox \"Field\""));
  ASSERT_TRUE(field) << snapshot.result->details.dump();
  ASSERT_TRUE(call("browser_mouse", {{"action", "click"}, {"x", field->first}, {"y", field->second}}).result);
  Outcome typed = call("browser_keyboard", {{"text", "hello"}});
  ASSERT_TRUE(typed.result) << typed.text();
  Outcome keys = call("browser_keyboard", {{"keys", json::array({"Shift+X", "Enter"})}});
  ASSERT_TRUE(keys.result) << keys.text();
  EXPECT_EQ(evaluate("document.getElementById('field').value"), "helloX");
  EXPECT_NE(page_log().find("keydown X trusted=true"), std::string::npos) << page_log();
  EXPECT_EQ(call("browser_keyboard", {{"keys", "Hyper+Q"}}).code(), codes::kBrowserUnknownKey);
  EXPECT_EQ(call("browser_keyboard", json::object()).code(), codes::kInvalidArgument);
}

TEST_F(BrowserPixels, DragMovesAnElementWithTrustedMouseEvents) {
  Outcome snapshot = open_and_snapshot("trusted.html");
  ASSERT_TRUE(snapshot.result) << snapshot.text();
  const std::string box = ref_of(snapshot.text(), "\"Drag box\"");
  ASSERT_NE(box, "") << snapshot.text();
  // The box is 60 x 60 at (40, 200): its centre goes to (300, 400), its corner to (270, 370).
  Outcome dragged = call("browser_drag", {{"from_ref", box}, {"to_x", 300}, {"to_y", 400}});
  ASSERT_TRUE(dragged.result) << dragged.text();
  EXPECT_NE(page_log().find("dropped at 270,370 trusted=true"), std::string::npos) << page_log();
  EXPECT_EQ(call("browser_drag", {{"from_ref", box}, {"to_x", 10}}).code(), codes::kInvalidArgument);
}

TEST_F(BrowserPixels, AnInterruptWhileAKeyIsDownReleasesItAndDetachesTheInputSession) {
  Outcome snapshot = open_and_snapshot("trusted.html");
  ASSERT_TRUE(snapshot.result) << snapshot.text();
  // A second agent thread watches the page's console (its ops run beside this thread's) and interrupts the
  // keyboard call once the page has the key down: its handler then keeps the page busy for 300 ms.
  CancellationSource interrupt;
  auto watching = std::make_shared<std::promise<void>>();
  std::future<void> subscribed = watching->get_future();
  std::string held_session;
  std::string test_thread = thread_;
  std::future<Result<ToolResult>> watcher = std::async(std::launch::async, [&, watching, test_thread] {
    return run_op(thread_ + "-watcher", CancellationToken(),
                  [&, watching, test_thread](std::shared_ptr<BrowserThread> thread,
                                             CancellationToken) -> asio::awaitable<Result<ToolResult>> {
                    auto seen = std::make_shared<asio::steady_timer>(co_await asio::this_coro::executor,
                                                                     std::chrono::seconds(30));
                    auto key_down = std::make_shared<bool>(false);
                    CdpClient::Subscription events =
                        thread->connection()->client().listen([seen, key_down](const CdpEvent& e) {
                          if (e.method != "Runtime.consoleAPICalled") return;
                          const json args = e.params.value("args", json::array());
                          if (!args.empty() && args[0].value("value", json()) == "keydown b") {
                            *key_down = true;
                            seen->cancel();
                          }
                        });
                    watching->set_value();
                    boost::system::error_code ignored;
                    co_await seen->async_wait(asio::redirect_error(asio::use_awaitable, ignored));
                    if (!*key_down) co_return fail(codes::kInternal, "the page never had the key down");
                    std::shared_ptr<BrowserThread> keyboard_thread = runtime_->thread_state(test_thread);
                    for (const auto& [tab, session] : keyboard_thread->input_sessions())
                      held_session = session.session_id;
                    interrupt.cancel("interrupt");
                    co_return ToolResult{};
                  });
  });
  subscribed.wait();
  Outcome pressed = call("browser_keyboard", {{"keys", "b"}}, interrupt.token());
  Result<ToolResult> watched = watcher.get();
  ASSERT_TRUE(watched) << watched.error().message();
  EXPECT_EQ(pressed.code(), codes::kCancelled) << pressed.text();
  ASSERT_NE(held_session, "");
  // The thread's next op runs after the cleanup: the key is up, the session gone.
  EXPECT_NE(page_log().find("keyup b"), std::string::npos) << page_log();
  bool detached = false;
  Result<ToolResult> checked = run_op(
      thread_, CancellationToken(),
      [&](std::shared_ptr<BrowserThread> thread, CancellationToken) -> asio::awaitable<Result<ToolResult>> {
        json params = {{"expression", "1"}};
        CallOptions options;
        Result<json> reply =
            co_await thread->connection()->call("Runtime.evaluate", std::move(params), held_session, options);
        detached = !reply && thread->input_sessions().empty();
        co_return ToolResult{};
      });
  ASSERT_TRUE(checked);
  EXPECT_TRUE(detached);
  // The next L2 call attaches a new session and works.
  EXPECT_TRUE(call("browser_keyboard", {{"text", "z"}}).result);
}

TEST_F(BrowserPixels, ATakeoverDetachesTheInputSessionAndHandsBackCleanly) {
  Outcome opened = call("browser_navigate", {{"url", page("trusted.html")}});
  ASSERT_TRUE(opened.result) << opened.text();
  ASSERT_TRUE(call("browser_keyboard", {{"text", "a"}}).result);
  std::string session;
  ASSERT_TRUE(run_op(
      thread_, CancellationToken(),
      [&](std::shared_ptr<BrowserThread> thread, CancellationToken) -> asio::awaitable<Result<ToolResult>> {
        for (const auto& [tab, input] : thread->input_sessions()) session = input.session_id;
        co_return ToolResult{};
      }));
  ASSERT_NE(session, "");
  // Another agent thread waits for the browser to say that session detached.
  auto watching = std::make_shared<std::promise<void>>();
  std::future<void> subscribed = watching->get_future();
  std::future<Result<ToolResult>> watcher = std::async(std::launch::async, [&, watching] {
    return run_op(
        thread_ + "-watcher", CancellationToken(),
        [&, watching](std::shared_ptr<BrowserThread> thread,
                      CancellationToken) -> asio::awaitable<Result<ToolResult>> {
          auto seen = std::make_shared<asio::steady_timer>(co_await asio::this_coro::executor,
                                                           std::chrono::seconds(30));
          auto detached = std::make_shared<bool>(false);
          CdpClient::Subscription events =
              thread->connection()->client().listen([seen, detached, session](const CdpEvent& e) {
                if (e.method == "Target.detachedFromTarget" && e.params.value("sessionId", "") == session) {
                  *detached = true;
                  seen->cancel();
                }
              });
          watching->set_value();
          boost::system::error_code ignored;
          co_await seen->async_wait(asio::redirect_error(asio::use_awaitable, ignored));
          if (!*detached) co_return fail(codes::kInternal, "the input session stayed attached");
          co_return ToolResult{};
        });
  });
  subscribed.wait();
  ASSERT_TRUE(runtime_->take_over(thread_));
  Result<ToolResult> watched = watcher.get();
  EXPECT_TRUE(watched) << watched.error().message();
  EXPECT_EQ(call("browser_keyboard", {{"text", "b"}}).code(), codes::kBrowserTakenOver);
  ASSERT_TRUE(runtime_->hand_back(thread_));
  EXPECT_TRUE(call("browser_keyboard", {{"text", "c"}}).result);
}

TEST_F(BrowserPixels, AMousePointOverACrossOriginFrameIsATargetChange) {
  Outcome opened =
      call("browser_navigate", {{"url", page("iframes.html?cross=" + std::to_string(site_->port(1)))}});
  ASSERT_TRUE(opened.result) << opened.text();
  // Until the cross-origin frame has committed its document (before, the point is over its blank start page).
  const std::string localhost = "http://localhost:" + std::to_string(site_->port(1));
  Result<ToolResult> loaded = run_op(thread_, CancellationToken(),
                                     [localhost](std::shared_ptr<BrowserThread> thread,
                                                 CancellationToken) -> asio::awaitable<Result<ToolResult>> {
                                       std::shared_ptr<BrowserConnection> connection = thread->connection();
                                       const int64_t tab_id = thread->current();
                                       std::function<bool()> committed = [connection, tab_id, localhost] {
                                         const TabState* tab = connection->tab(tab_id);
                                         if (tab == nullptr) return true;
                                         for (const auto& [id, frame] : tab->frames) {
                                           if (frame.origin == localhost) return true;
                                         }
                                         return false;
                                       };
                                       CancellationToken never;
                                       Result<void> done = co_await connection->wait_until(
                                           std::move(committed), std::chrono::seconds(20), never);
                                       if (!done) co_return fail(done.error());
                                       co_return ToolResult{};
                                     });
  ASSERT_TRUE(loaded) << loaded.error().message();
  const json cross = evaluate(
      "(() => { const r = document.getElementById('cross').getBoundingClientRect();"
      " return {x: r.x + r.width / 2, y: r.y + r.height / 2}; })()");
  ASSERT_TRUE(cross.is_object()) << cross.dump();
  Outcome refused = call("browser_mouse", {{"action", "click"}, {"x", cross["x"]}, {"y", cross["y"]}});
  EXPECT_EQ(refused.code(), codes::kBrowserTargetChanged) << refused.text();
  EXPECT_NE(refused.text().find("localhost"), std::string::npos) << refused.text();
  // A point of the top page itself is fine.
  const json top = evaluate(
      "(() => { const r = document.getElementById('top-button').getBoundingClientRect();"
      " return {x: r.x + r.width / 2, y: r.y + r.height / 2}; })()");
  Outcome clicked = call("browser_mouse", {{"action", "click"}, {"x", top["x"]}, {"y", top["y"]}});
  ASSERT_TRUE(clicked.result) << clicked.text();
  EXPECT_EQ(evaluate("document.getElementById('top-button').textContent"), "Top button clicked");
}

}  // namespace
}  // namespace keel::browser
