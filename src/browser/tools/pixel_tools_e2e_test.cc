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

  // The origin of iframes.html's cross-origin frame (the site's second listener).
  std::string cross_origin() const { return "http://localhost:" + std::to_string(site_->port(1)); }

  // Opens iframes.html with its cross-origin frame and waits until that frame and the one nested in it have
  // committed their documents (before, a point over it is over its blank start page).
  void open_frames_page() {
    Outcome opened =
        call("browser_navigate", {{"url", page("iframes.html?cross=" + std::to_string(site_->port(1)))}});
    ASSERT_TRUE(opened.result) << opened.text();
    wait_for_cross_origin_frame();
  }

  void wait_for_cross_origin_frame() {
    const std::string localhost = cross_origin();
    Result<ToolResult> loaded = run_op(thread_, CancellationToken(),
                                       [localhost](std::shared_ptr<BrowserThread> thread,
                                                   CancellationToken) -> asio::awaitable<Result<ToolResult>> {
                                         std::shared_ptr<BrowserConnection> connection = thread->connection();
                                         const int64_t tab_id = thread->current();
                                         std::function<bool()> committed = [connection, tab_id, localhost] {
                                           const TabState* tab = connection->tab(tab_id);
                                           if (tab == nullptr) return true;
                                           // The cross-origin frame and the frame nested in it.
                                           size_t frames = 0;
                                           for (const auto& [id, frame] : tab->frames) {
                                             if (frame.origin == localhost) ++frames;
                                           }
                                           return frames >= 2;
                                         };
                                         CancellationToken never;
                                         Result<void> done = co_await connection->wait_until(
                                             std::move(committed), std::chrono::seconds(20), never);
                                         if (!done) co_return fail(done.error());
                                         co_return ToolResult{};
                                       });
    ASSERT_TRUE(loaded) << loaded.error().message();
  }

  // The value of an expression in the document of the out-of-process frame whose URL contains `url_part`
  // (through that frame's own session, main world), for checks.
  json evaluate_in_frame(const std::string& url_part, const std::string& expression) {
    json value;
    Result<ToolResult> ran =
        run_op(thread_, CancellationToken(),
               [url_part, expression, &value](std::shared_ptr<BrowserThread> thread,
                                              CancellationToken) -> asio::awaitable<Result<ToolResult>> {
                 std::shared_ptr<BrowserConnection> connection = thread->connection();
                 const TabState* tab = connection->tab(thread->current());
                 if (tab == nullptr) co_return fail(codes::kBrowserNoSuchTab, "no tab");
                 std::string session;
                 for (const auto& [id, frame] : tab->frames) {
                   if (frame.url.find(url_part) != std::string::npos) session = frame.session_id;
                 }
                 if (session.empty()) co_return fail(codes::kInternal, "no frame at " + url_part);
                 json params = {{"expression", expression}, {"returnByValue", true}};
                 CallOptions options;
                 Result<json> reply =
                     co_await connection->call("Runtime.evaluate", std::move(params), session, options);
                 if (!reply) co_return fail(reply.error());
                 value = (*reply)["result"].value("value", json());
                 co_return ToolResult{};
               });
    EXPECT_TRUE(ran) << (ran ? "" : ran.error().message());
    return value;
  }

  // The target the gatekeeper would decide a call on.
  Result<ToolTarget> target_of(const std::string& tool, const json& params) {
    return registry_->snapshot()->find(tool)->implementation->resolve_target_for(ToolScope{thread_, "call"},
                                                                                 params);
  }

  // Executes a call with a decided target given by the test (as if approved for that target).
  Outcome call_decided(const std::string& tool, json params, ToolTarget decided) {
    ToolCallContext context;
    context.tool_call_id = "call";
    context.thread_id = thread_;
    context.progress = [](ToolProgress) {};
    context.target = std::move(decided);
    auto done = std::make_shared<std::promise<Result<ToolResult>>>();
    std::future<Result<ToolResult>> finished = done->get_future();
    registry_->snapshot()->find(tool)->implementation->execute(
        context, std::move(params),
        [done](Result<ToolResult> result) { done->set_value(std::move(result)); });
    Outcome outcome;
    if (finished.wait_for(kCallDeadline) != std::future_status::ready) {
      ADD_FAILURE() << tool << " did not answer";
      return outcome;
    }
    outcome.result = finished.get();
    return outcome;
  }

  // A ref's box in a result's details (nullopt when it has none).
  static std::optional<json> box_of(const Outcome& outcome, const std::string& ref) {
    if (!outcome.result) return std::nullopt;
    for (const json& box : outcome.result->details.value("boxes", json::array())) {
      if (box.value("ref", "") == ref) return box;
    }
    return std::nullopt;
  }

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
  ASSERT_NO_FATAL_FAILURE(open_frames_page());
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

TEST_F(BrowserPixels, AnL2ActionAtARefInACrossOriginFrameIsDecidedForThatFrame) {
  ASSERT_NO_FATAL_FAILURE(open_frames_page());
  Outcome snapshot = call("browser_snapshot", json::object());
  ASSERT_TRUE(snapshot.result) << snapshot.text();
  const std::string button = ref_of(snapshot.text(), "button \"Cross-origin button\"");
  // The nested frame's button inside the cross-origin frame (the same-origin frame has one too, listed
  // first).
  const std::string cross_part =
      snapshot.text().substr(snapshot.text().find("iframe \"Cross-origin frame\""));
  const std::string nested = ref_of(cross_part, "button \"Nested button\"");
  const std::string top = ref_of(snapshot.text(), "button \"Top button\"");
  ASSERT_NE(button, "") << snapshot.text();
  ASSERT_NE(top, "") << snapshot.text();
  // The gatekeeper decides a click at that ref for the frame's site, not for the top page's.
  const json click = {{"action", "click"}, {"ref", button}};
  Result<ToolTarget> target = target_of("browser_mouse", click);
  ASSERT_TRUE(target) << target.error().message();
  EXPECT_EQ(target->origin.value_or(""), cross_origin());
  const std::string top_origin = site_->origin(0);
  Result<ToolTarget> point_target = target_of("browser_mouse", {{"action", "click"}, {"x", 1}, {"y", 1}});
  ASSERT_TRUE(point_target);
  EXPECT_EQ(point_target->origin.value_or(""), top_origin);
  // Decided (approved) for the top page only: refused, nothing clicked.
  ToolTarget top_only = *point_target;
  Outcome refused = call_decided("browser_mouse", click, top_only);
  EXPECT_EQ(refused.code(), codes::kBrowserTargetChanged) << refused.text();
  EXPECT_EQ(evaluate_in_frame("frames/cross.html", "document.getElementById('cross-button').textContent"),
            "Cross-origin button");
  // Decided for the frame's site: a trusted click there.
  Outcome clicked = call("browser_mouse", click);
  ASSERT_TRUE(clicked.result) << clicked.text();
  EXPECT_EQ(evaluate_in_frame("frames/cross.html", "document.getElementById('cross-button').textContent"),
            "Cross-origin button clicked");
  // The frame nested in the cross-origin frame (same site as it) works the same way.
  ASSERT_NE(nested, "") << snapshot.text();
  Result<ToolTarget> nested_target = target_of("browser_mouse", {{"action", "click"}, {"ref", nested}});
  ASSERT_TRUE(nested_target);
  EXPECT_EQ(nested_target->origin.value_or(""), cross_origin());
  Outcome inner = call("browser_mouse", {{"action", "click"}, {"ref", nested}});
  ASSERT_TRUE(inner.result) << inner.text();
  Outcome after = call("browser_snapshot", json::object());
  EXPECT_NE(after.text().find("Nested button clicked at localhost:" + std::to_string(site_->port(1))),
            std::string::npos)
      << after.text();
  // A drag decided for the top page cannot drop into the cross-origin frame.
  Outcome dropped = call("browser_drag", {{"from_ref", top}, {"to_ref", button}});
  EXPECT_EQ(dropped.code(), codes::kBrowserTargetChanged) << dropped.text();
}

TEST_F(BrowserPixels, KeysForAFocusedCrossOriginFrameAreRefusedUnlessTheCallNamesItsElement) {
  ASSERT_NO_FATAL_FAILURE(open_frames_page());
  Outcome snapshot = call("browser_snapshot", json::object());
  ASSERT_TRUE(snapshot.result) << snapshot.text();
  const std::string input = ref_of(snapshot.text(), "textbox \"Cross-origin input\"");
  ASSERT_NE(input, "") << snapshot.text();
  // The page moves the focus into the cross-origin frame: keys decided for the top page would land there.
  evaluate("document.getElementById('cross').focus()");
  ASSERT_EQ(evaluate("document.activeElement.id"), "cross");
  Outcome refused = call("browser_keyboard", {{"text", "stolen"}});
  EXPECT_EQ(refused.code(), codes::kBrowserTargetChanged) << refused.text();
  EXPECT_NE(refused.text().find(cross_origin()), std::string::npos) << refused.text();
  EXPECT_EQ(evaluate_in_frame("frames/cross.html", "document.querySelector('input').value"), "");
  // Naming the element: decided for the frame's site, focused, typed into.
  const json typed_params = {{"ref", input}, {"text", "hello"}};
  Result<ToolTarget> target = target_of("browser_keyboard", typed_params);
  ASSERT_TRUE(target) << target.error().message();
  EXPECT_EQ(target->origin.value_or(""), cross_origin());
  Outcome typed = call("browser_keyboard", typed_params);
  ASSERT_TRUE(typed.result) << typed.text();
  Outcome keys = call("browser_keyboard", {{"ref", input}, {"keys", "Shift+X"}});
  ASSERT_TRUE(keys.result) << keys.text();
  EXPECT_EQ(evaluate_in_frame("frames/cross.html", "document.querySelector('input').value"), "helloX");
  // The same ref with a call decided for the top page: refused.
  Result<ToolTarget> top = target_of("browser_keyboard", {{"text", "x"}});
  ASSERT_TRUE(top);
  EXPECT_EQ(call_decided("browser_keyboard", typed_params, *top).code(), codes::kBrowserTargetChanged);
  // Focus back in the top page: keys without a ref go there again.
  evaluate("document.getElementById('top-button').focus()");
  EXPECT_TRUE(call("browser_keyboard", {{"keys", "Enter"}}).result);
  EXPECT_EQ(evaluate("document.getElementById('top-button').textContent"), "Top button clicked");
}

TEST_F(BrowserPixels, DragDropsAnHtml5DraggableAndMovesAPointerSlider) {
  Outcome snapshot = open_and_snapshot("drag.html");
  ASSERT_TRUE(snapshot.result) << snapshot.text();
  const json apple = evaluate(
      "(() => { const r = document.getElementById('apple').getBoundingClientRect();"
      " return {x: r.x + r.width / 2, y: r.y + r.height / 2}; })()");
  const json basket = evaluate(
      "(() => { const r = document.getElementById('basket').getBoundingClientRect();"
      " return {x: r.x + r.width / 2, y: r.y + r.height / 2}; })()");
  ASSERT_TRUE(apple.is_object() && basket.is_object());
  Outcome dropped =
      call("browser_drag",
           {{"from_x", apple["x"]}, {"from_y", apple["y"]}, {"to_x", basket["x"]}, {"to_y", basket["y"]}});
  ASSERT_TRUE(dropped.result) << dropped.text();
  EXPECT_NE(dropped.text().find("HTML5 drag and drop"), std::string::npos) << dropped.text();
  EXPECT_NE(page_log().find("dropped apple into basket trusted=true"), std::string::npos) << page_log();
  EXPECT_NE(page_log().find("dragend apple move"), std::string::npos) << page_log();
  EXPECT_EQ(evaluate("document.getElementById('apple').parentElement.id"), "basket");
  // The slider starts no HTML5 drag: mouse events move it (to three quarters of its 400 px track).
  const std::string slider = ref_of(snapshot.text(), "slider \"Volume\"");
  ASSERT_NE(slider, "") << snapshot.text();
  const json track = evaluate(
      "(() => { const r = document.getElementById('track').getBoundingClientRect();"
      " return {x: r.x + r.width * 0.75, y: r.y + r.height / 2}; })()");
  Outcome slid = call("browser_drag", {{"from_ref", slider}, {"to_x", track["x"]}, {"to_y", track["y"]}});
  ASSERT_TRUE(slid.result) << slid.text();
  EXPECT_NE(slid.text().find("mouse events"), std::string::npos) << slid.text();
  EXPECT_NE(page_log().find("slider at 75 trusted=true"), std::string::npos) << page_log();
  // A second HTML5 drag works too (the first left nothing behind).
  const json banana = evaluate(
      "(() => { const r = document.getElementById('banana').getBoundingClientRect();"
      " return {x: r.x + r.width / 2, y: r.y + r.height / 2}; })()");
  Outcome again =
      call("browser_drag",
           {{"from_x", banana["x"]}, {"from_y", banana["y"]}, {"to_x", basket["x"]}, {"to_y", basket["y"]}});
  ASSERT_TRUE(again.result) << again.text();
  EXPECT_NE(page_log().find("dropped banana into basket trusted=true"), std::string::npos) << page_log();
}

TEST_F(BrowserPixels, ScreenshotBoxesAreComputedAtTheScreenshotNotTakenFromTheLastSnapshot) {
  Outcome snapshot = open_and_snapshot("long-list.html");
  ASSERT_TRUE(snapshot.result) << snapshot.text();
  const std::string row5 = ref_of(snapshot.text(), "button \"Mark row 5\"");
  const std::string row6 = ref_of(snapshot.text(), "button \"Mark row 6\"");
  const std::string row7 = ref_of(snapshot.text(), "button \"Mark row 7\"");
  ASSERT_NE(row5, "") << snapshot.text();
  std::optional<json> before = box_of(snapshot, row5);
  ASSERT_TRUE(before) << snapshot.result->details.dump();
  // Scrolled by 100 px, one row removed, one hidden: the screenshot's boxes say so.
  evaluate(
      "window.scrollBy(0, 100); document.getElementById('row-6').remove();"
      " document.getElementById('row-7').style.display = 'none'; true");
  Outcome shot = call("browser_screenshot", json::object());
  ASSERT_TRUE(shot.result) << shot.text();
  std::optional<json> now = box_of(shot, row5);
  ASSERT_TRUE(now) << shot.result->details.dump();
  const json rect = evaluate(
      "(() => { const r = document.querySelector('#row-5 button').getBoundingClientRect();"
      " return {x: r.x, y: r.y, w: r.width, h: r.height}; })()");
  EXPECT_NEAR((*now)["y"].get<double>(), rect["y"].get<double>(), 1.0);
  EXPECT_NEAR((*now)["x"].get<double>(), rect["x"].get<double>(), 1.0);
  EXPECT_NEAR((*now)["y"].get<double>(), (*before)["y"].get<double>() - 100, 1.0);
  EXPECT_FALSE(box_of(shot, row6)) << "a removed element keeps no box";
  EXPECT_GE(shot.result->details.value("dropped_refs", 0), 1);
  bool hidden_named = false;
  for (const json& entry : shot.result->details.value("unboxed", json::array())) {
    hidden_named |= entry.value("ref", "") == row7;
  }
  EXPECT_TRUE(hidden_named) << shot.result->details.value("unboxed", json::array()).dump();
}

TEST_F(BrowserPixels, ScreenshotBoxesOfRefsInFramesAreInTheMainViewport) {
  ASSERT_NO_FATAL_FAILURE(open_frames_page());
  Outcome snapshot = call("browser_snapshot", json::object());
  ASSERT_TRUE(snapshot.result) << snapshot.text();
  const std::string button = ref_of(snapshot.text(), "button \"Cross-origin button\"");
  ASSERT_NE(button, "") << snapshot.text();
  // The page moves the frame after the snapshot: the screenshot's box follows it.
  evaluate("document.getElementById('cross').style.marginLeft = '70px'; true");
  Outcome shot = call("browser_screenshot", json::object());
  ASSERT_TRUE(shot.result) << shot.text();
  std::optional<json> box = box_of(shot, button);
  ASSERT_TRUE(box) << shot.result->details.dump();
  // The frame's content box in the top page plus the button's box in the frame.
  const json frame = evaluate(
      "(() => { const f = document.getElementById('cross'); const r = f.getBoundingClientRect();"
      " const s = getComputedStyle(f);"
      " return {x: r.x + parseFloat(s.borderLeftWidth) + parseFloat(s.paddingLeft),"
      "         y: r.y + parseFloat(s.borderTopWidth) + parseFloat(s.paddingTop)}; })()");
  const json inner =
      evaluate_in_frame("frames/cross.html",
                        "(() => { const r = document.getElementById('cross-button').getBoundingClientRect();"
                        " return {x: r.x, y: r.y}; })()");
  ASSERT_TRUE(frame.is_object() && inner.is_object());
  EXPECT_NEAR((*box)["x"].get<double>(), frame["x"].get<double>() + inner["x"].get<double>(), 1.5);
  EXPECT_NEAR((*box)["y"].get<double>(), frame["y"].get<double>() + inner["y"].get<double>(), 1.5);
}

}  // namespace
}  // namespace keel::browser
