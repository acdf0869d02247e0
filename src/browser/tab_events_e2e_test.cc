// BrowserTabEvents and BrowserDownloadsDenied: what a tab's events tell BrowserConnection, against a real
// headless Chromium and the test site (model_server/static_site.h serving tests/e2e/browser/pages on two
// ports; the guard allows only the first): JavaScript dialogs set and clear the modal state (and fail a page
// command that was waiting), an endless alert loop is dismissed by keel and the tab stays usable, a file
// chooser gets a real file, a popup names its opener, console errors, exceptions and failed requests are
// logged, downloads are recorded (or denied), and the navigation guard blocks a redirect hop, a navigation
// the page starts itself and a cross-origin iframe.
#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_future.hpp>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <optional>
#include <string>

#include "browser/browser_connection.h"
#include "browser/browser_errors.h"
#include "browser/browser_test_support.h"
#include "browser/connection_test_support.h"
#include "browser/origin_guard.h"
#include "model_server/static_site.h"

namespace keel::browser {
namespace {

namespace asio = boost::asio;
using nlohmann::json;
using testing::open_at;
using testing::TestBrowser;

constexpr std::chrono::seconds kStepTimeout{20};

// Allows the pages of one origin (the site's first listener) and nothing else.
class OneOriginPolicy : public OriginPolicy {
 public:
  explicit OneOriginPolicy(std::string origin) : origin_(std::move(origin)) {}
  bool allows_navigation(const std::string&, const std::string& origin) const override {
    return origin == origin_;
  }

 private:
  std::string origin_;
};

// Runs `expression` in the tab's main world (as if the user did it: userGesture), awaiting a promise.
asio::awaitable<Result<json>> evaluate(std::shared_ptr<BrowserConnection> connection, int64_t tab,
                                       std::string expression) {
  const TabState* state = connection->tab(tab);
  if (state == nullptr) co_return fail(codes::kBrowserNoSuchTab, "no tab");
  const std::string session = state->session_id;
  json params = {{"expression", std::move(expression)},
                 {"userGesture", true},
                 {"awaitPromise", true},
                 {"returnByValue", true}};
  CallOptions options;
  options.timeout = kStepTimeout;
  Result<json> reply =
      co_await connection->call("Runtime.evaluate", std::move(params), session, std::move(options));
  if (!reply) co_return fail(reply.error());
  if (reply->contains("exceptionDetails")) co_return fail(codes::kBrowserBadScriptResult, reply->dump());
  co_return (*reply)["result"].value("value", json());
}

// The text of #id once it is no longer `initial` (a MutationObserver in the page; no polling from here).
std::string text_change(const std::string& id, const std::string& initial) {
  return "new Promise((resolve) => { const el = document.getElementById(" + json(id).dump() +
         "); const check = () => { if (el.textContent !== " + json(initial).dump() +
         ") { resolve(el.textContent); return true; } return false; }; if (!check()) new "
         "MutationObserver(check)"
         ".observe(el, {childList: true, characterData: true, subtree: true}); })";
}

std::string click(const std::string& id) {
  return "document.getElementById(" + json(id).dump() + ").click()";
}

asio::awaitable<Result<void>> wait_for(std::shared_ptr<BrowserConnection> connection,
                                       std::function<bool()> ready) {
  CancellationToken never_cancelled;
  co_return co_await connection->wait_until(std::move(ready), kStepTimeout, never_cancelled);
}

// Clicks a button that opens a dialog: the click's own command is failed by the dialog (modal_open) instead
// of hanging, and the tab's modal state names the dialog. Returns the modal state.
asio::awaitable<Result<ModalState>> open_dialog(std::shared_ptr<BrowserConnection> connection, int64_t tab,
                                                std::string button) {
  Result<json> clicked = co_await evaluate(connection, tab, click(button));
  if (clicked) co_return fail(codes::kInternal, "the click returned while its dialog should block it");
  if (clicked.error().code() != codes::kBrowserModalOpen) co_return fail(clicked.error());
  const TabState* state = connection->tab(tab);
  if (state == nullptr || !state->modal) co_return fail(codes::kInternal, "modal_open without a modal state");
  co_return *state->modal;
}

class BrowserTabEvents : public testing::ConnectedBrowserSuite<BrowserTabEvents> {
 protected:
  static void SetUpTestSuite() {
    if (!launch_and_serve()) return;
    downloads_ = std::filesystem::temp_directory_path() / ("keel-tab-events-" + std::to_string(getpid()));
    std::filesystem::create_directories(downloads_);
    policy_ = std::make_shared<OneOriginPolicy>(site_->origin(0));
    ConnectionOptions options;
    options.download_dir = downloads_;
    std::shared_ptr<const OriginPolicy> policy = policy_;
    options.navigation_guard = [policy](int64_t, const PausedDocumentRequest& request) {
      return decide_paused_request(request, "t1", *policy);
    };
    options.commit_check = [policy](int64_t, std::string_view url, FrameKind frame) {
      return check_committed_url(url, frame, "t1", *policy);
    };
    connect_with(std::move(options));
  }
  static void TearDownTestSuite() {
    ConnectedBrowserSuite::TearDownTestSuite();
    std::error_code ignored;
    std::filesystem::remove_all(downloads_, ignored);
  }
  static std::string page(const std::string& path) { return site_->origin(0) + "/" + path; }
  // Another origin and site (localhost, the second listener): the guard denies it.
  static std::string denied(const std::string& path) { return site_->origin(1, "localhost") + "/" + path; }

  inline static std::shared_ptr<OneOriginPolicy> policy_;
  inline static std::filesystem::path downloads_;
};

asio::awaitable<Result<json>> answer_each_dialog(std::shared_ptr<BrowserConnection> connection,
                                                 std::string url) {
  Result<int64_t> tab = co_await open_at(connection, std::move(url));
  if (!tab) co_return fail(tab.error());
  json out = json::object();
  struct Case {
    std::string button;
    bool accept;
    std::string text;
  };
  const std::vector<Case> cases = {{"alert", true, ""}, {"confirm", true, ""}, {"prompt", true, "Grace"}};
  for (const Case& each : cases) {
    const std::string button = each.button;
    const bool accept = each.accept;
    const std::string text = each.text;
    Result<ModalState> modal = co_await open_dialog(connection, *tab, button);
    if (!modal) co_return fail(modal.error());
    Result<void> handled = co_await connection->handle_dialog(*tab, accept, text, kStepTimeout);
    if (!handled) co_return fail(handled.error());
    const bool cleared = !connection->tab(*tab)->modal.has_value();
    Result<json> result =
        co_await evaluate(connection, *tab, "document.getElementById('result').textContent");
    if (!result) co_return fail(result.error());
    out[button] = {{"type", modal->dialog_type},
                   {"message", modal->message},
                   {"default", modal->default_prompt},
                   {"cleared", cleared},
                   {"result", *result}};
  }
  co_return out;
}

TEST_F(BrowserTabEvents, AlertConfirmAndPromptSetTheModalStateAndHandleDialogClearsIt) {
  Result<json> out = browser().run(answer_each_dialog(connection_, page("dialogs.html")));
  ASSERT_TRUE(out) << out.error().to_string();
  const json& r = *out;
  EXPECT_EQ(r["alert"]["type"], "alert") << r.dump(1);
  EXPECT_EQ(r["alert"]["message"], "Hello from an alert");
  EXPECT_EQ(r["alert"]["result"], "alert closed");
  EXPECT_EQ(r["confirm"]["type"], "confirm");
  EXPECT_EQ(r["confirm"]["message"], "Delete the draft?");
  EXPECT_EQ(r["confirm"]["result"], "confirm: true");
  EXPECT_EQ(r["prompt"]["type"], "prompt");
  EXPECT_EQ(r["prompt"]["default"], "Ada");
  EXPECT_EQ(r["prompt"]["result"], "prompt: \"Grace\"");
  for (const char* each : {"alert", "confirm", "prompt"}) EXPECT_TRUE(r[each]["cleared"].get<bool>()) << each;
}

asio::awaitable<Result<int64_t>> arm_beforeunload(std::shared_ptr<BrowserConnection> connection,
                                                  std::string url) {
  Result<int64_t> tab = co_await open_at(connection, std::move(url));
  if (!tab) co_return fail(tab.error());
  Result<json> armed = co_await evaluate(connection, *tab, click("arm-beforeunload"));
  if (!armed) co_return fail(armed.error());
  co_return *tab;
}

asio::awaitable<Result<json>> leave_through_beforeunload(std::shared_ptr<BrowserConnection> connection,
                                                         int64_t tab) {
  std::function<bool()> ready1 = [connection, tab] {
    const TabState* state = connection->tab(tab);
    return state != nullptr && state->modal.has_value();
  };
  Result<void> modal = co_await wait_for(connection, std::move(ready1));
  if (!modal) co_return fail(modal.error());
  const ModalState opened = *connection->tab(tab)->modal;
  Result<void> handled = co_await connection->handle_dialog(tab, true, "", kStepTimeout);
  if (!handled) co_return fail(handled.error());
  co_return json{{"type", opened.dialog_type}, {"cleared", !connection->tab(tab)->modal.has_value()}};
}

TEST_F(BrowserTabEvents, BeforeunloadHoldsTheNavigationUntilHandleDialogAcceptsIt) {
  Result<int64_t> tab = browser().run(arm_beforeunload(connection_, page("dialogs.html")));
  ASSERT_TRUE(tab) << tab.error().to_string();
  // The navigation waits for the dialog; it runs on the browser's thread while this thread answers it.
  CancellationToken never_cancelled;
  std::future<Result<void>> navigation = asio::co_spawn(
      browser().executor(),
      connection_->navigate(*tab, page("form-result.html"), kStepTimeout, never_cancelled), asio::use_future);
  Result<json> out = browser().run(leave_through_beforeunload(connection_, *tab));
  ASSERT_TRUE(out) << out.error().to_string();
  EXPECT_EQ((*out)["type"], "beforeunload");
  EXPECT_TRUE((*out)["cleared"].get<bool>());
  Result<void> navigated = navigation.get();
  ASSERT_TRUE(navigated) << navigated.error().to_string();
}

asio::awaitable<Result<json>> survive_alert_loop(std::shared_ptr<BrowserConnection> connection,
                                                 std::string url, std::string next) {
  Result<int64_t> opened = co_await open_at(connection, std::move(url));
  if (!opened) co_return fail(codes::kInternal, "opening: " + opened.error().to_string());
  const int64_t tab = *opened;
  // The first three are the model's to answer; the ones after come faster than 3 a second.
  for (int i = 0; i < 3; ++i) {
    std::function<bool()> ready2 = [connection, tab] {
      const TabState* state = connection->tab(tab);
      return state != nullptr && state->modal.has_value();
    };
    Result<void> modal = co_await wait_for(connection, std::move(ready2));
    if (!modal) {
      const TabState* state = connection->tab(tab);
      co_return fail(codes::kInternal, "dialog " + std::to_string(i) + ": " + modal.error().to_string() +
                                           " opened " + std::to_string(state->modals_opened) + " dismissed " +
                                           std::to_string(state->auto_dismissed_dialogs) + " url " +
                                           state->url);
    }
    Result<void> handled = co_await connection->handle_dialog(tab, true, "", kStepTimeout);
    if (!handled) {
      const TabState* state = connection->tab(tab);
      co_return fail(codes::kInternal, "handling " + std::to_string(i) + ": " + handled.error().to_string() +
                                           " opened " + std::to_string(state->modals_opened) + " dismissed " +
                                           std::to_string(state->auto_dismissed_dialogs));
    }
  }
  std::function<bool()> ready3 = [connection, tab] {
    const TabState* state = connection->tab(tab);
    return state != nullptr && state->auto_dismissed_dialogs >= 20;
  };
  Result<void> dismissed = co_await wait_for(connection, std::move(ready3));
  if (!dismissed) co_return fail(codes::kInternal, "auto-dismissing: " + dismissed.error().to_string());
  // The dialogs no longer hold anything up; what is left is a page script that never ends, which keel stops
  // like any runaway script (call_script's timeout does the same). The page then answers again.
  const std::string session = connection->tab(tab)->session_id;
  CallOptions options;
  options.timeout = kStepTimeout;
  json no_params = json::object();
  Result<json> terminated = co_await connection->call("Runtime.terminateExecution", std::move(no_params),
                                                      session, std::move(options));
  if (!terminated) co_return fail(codes::kInternal, "terminating: " + terminated.error().to_string());
  Result<json> count = co_await evaluate(connection, tab, "document.getElementById('count').textContent");
  if (!count) co_return fail(codes::kInternal, "reading the page: " + count.error().to_string());
  CancellationToken never_cancelled;
  Result<void> navigated = co_await connection->navigate(tab, next, kStepTimeout, never_cancelled);
  if (!navigated) co_return fail(codes::kInternal, "navigating away: " + navigated.error().to_string());
  const TabState* state = connection->tab(tab);
  co_return json{{"count", *count},
                 {"dismissed", state->auto_dismissed_dialogs},
                 {"modal", state->modal.has_value()},
                 {"url", state->url}};
}

TEST_F(BrowserTabEvents, AnEndlessAlertLoopIsDismissedByKeelAndTheTabStaysUsable) {
  Result<json> out =
      browser().run(survive_alert_loop(connection_, page("alert-loop.html"), page("index.html")));
  ASSERT_TRUE(out) << out.error().to_string();
  EXPECT_FALSE((*out)["modal"].get<bool>());
  EXPECT_GE((*out)["dismissed"].get<int64_t>(), 20);
  // The three answered by the caller and at least the 20 keel dismissed were shown.
  const std::string count = (*out)["count"];
  EXPECT_TRUE(count.ends_with(" alerts shown")) << count;
  EXPECT_GE(std::stoi(count), 23) << count;
  EXPECT_EQ((*out)["url"], page("index.html"));
}

asio::awaitable<Result<json>> choose_file(std::shared_ptr<BrowserConnection> connection, std::string url,
                                          std::string file) {
  Result<int64_t> tab = co_await open_at(connection, std::move(url));
  if (!tab) co_return fail(tab.error());
  Result<json> clicked = co_await evaluate(connection, *tab, click("single"));
  if (!clicked) co_return fail(clicked.error());
  std::function<bool()> ready4 = [connection, t = *tab] {
    const TabState* state = connection->tab(t);
    return state != nullptr && state->modal && state->modal->kind == ModalState::Kind::kFileChooser;
  };
  Result<void> opened = co_await wait_for(connection, std::move(ready4));
  if (!opened) co_return fail(opened.error());
  const ModalState chooser = *connection->tab(*tab)->modal;
  std::vector<std::string> files = {file};
  Result<void> set = co_await connection->set_chooser_files(*tab, files, kStepTimeout);
  if (!set) co_return fail(set.error());
  const bool cleared = !connection->tab(*tab)->modal.has_value();
  Result<json> chosen = co_await evaluate(connection, *tab, text_change("chosen", "Nothing chosen"));
  if (!chosen) co_return fail(chosen.error());
  co_return json{{"multiple", chooser.multiple},
                 {"node", chooser.backend_node_id},
                 {"cleared", cleared},
                 {"chosen", *chosen}};
}

TEST_F(BrowserTabEvents, AFileChooserTakesARealFileThroughSetChooserFiles) {
  const std::filesystem::path file = downloads_ / "upload-me.txt";
  {
    std::ofstream out(file);
    out << "twelve bytes";
  }
  Result<json> out = browser().run(choose_file(connection_, page("file-input.html"), file.string()));
  ASSERT_TRUE(out) << out.error().to_string();
  EXPECT_FALSE((*out)["multiple"].get<bool>());
  EXPECT_GT((*out)["node"].get<int64_t>(), 0);
  EXPECT_TRUE((*out)["cleared"].get<bool>());
  EXPECT_EQ((*out)["chosen"], "single: upload-me.txt (12 bytes)");
}

asio::awaitable<Result<json>> open_popup(std::shared_ptr<BrowserConnection> connection, std::string url) {
  Result<int64_t> tab = co_await open_at(connection, std::move(url));
  if (!tab) co_return fail(tab.error());
  Result<json> clicked = co_await evaluate(connection, *tab, click("open-window"));
  if (!clicked) co_return fail(clicked.error());
  auto popup = std::make_shared<int64_t>(0);
  std::function<bool()> ready5 = [connection, opener = *tab, popup] {
    for (int64_t id : connection->tab_ids()) {
      const TabState* state = connection->tab(id);
      if (state->opener_tab == opener && state->title == "Popup target" &&
          state->url.find("popup-target.html") != std::string::npos)
        *popup = id;
    }
    return *popup != 0;
  };
  Result<void> appeared = co_await wait_for(connection, std::move(ready5));
  if (!appeared) {
    std::string tabs;
    for (int64_t id : connection->tab_ids()) {
      const TabState* state = connection->tab(id);
      tabs += " [tab " + std::to_string(id) + " opener " + std::to_string(state->opener_tab) + " \"" +
              state->title + "\" " + state->url + "]";
    }
    co_return fail(codes::kInternal, appeared.error().to_string() + tabs);
  }
  const TabState* state = connection->tab(*popup);
  co_return json{{"url", state->url}, {"title", state->title}};
}

TEST_F(BrowserTabEvents, APopupBecomesATabThatNamesItsOpener) {
  Result<json> out = browser().run(open_popup(connection_, page("popup.html")));
  ASSERT_TRUE(out) << out.error().to_string();
  EXPECT_EQ((*out)["url"], page("popup-target.html?via=window.open"));
  EXPECT_EQ((*out)["title"], "Popup target");
}

asio::awaitable<Result<json>> make_trouble(std::shared_ptr<BrowserConnection> connection, std::string url) {
  Result<int64_t> tab = co_await open_at(connection, std::move(url));
  if (!tab) co_return fail(tab.error());
  Result<json> done =
      co_await evaluate(connection, *tab,
                        "console.error('boom', 42); setTimeout(() => { throw new TypeError('kaboom'); }, 0);"
                        "const img = new Image(); img.src = 'http://127.0.0.1:9/missing.png';"
                        "fetch('http://127.0.0.1:9/api').catch(() => {}); 1");
  if (!done) co_return fail(done.error());
  const int64_t t = *tab;
  std::function<bool()> ready6 = [connection, t] {
    const TabState* state = connection->tab(t);
    bool error = false, exception = false, image = false, fetch = false;
    for (const ConsoleEntry& entry : state->console) {
      error = error || (entry.level == "error" && entry.text == "boom 42");
      exception =
          exception || (entry.level == "error" && entry.text.find("TypeError: kaboom") != std::string::npos);
    }
    for (const NetworkEntry& entry : state->network) {
      image = image || (entry.resource_type == "Image" && !entry.failure.empty());
      fetch = fetch || (entry.resource_type == "Fetch" && !entry.failure.empty());
    }
    return error && exception && image && fetch;
  };
  Result<void> logged = co_await wait_for(connection, std::move(ready6));
  if (!logged) co_return fail(logged.error());
  const TabState* state = connection->tab(t);
  json network = json::array();
  for (const NetworkEntry& entry : state->network) {
    network.push_back({{"type", entry.resource_type},
                       {"url", entry.url},
                       {"status", entry.status},
                       {"failure", entry.failure}});
  }
  co_return json{{"network", network}, {"status", state->http_status}};
}

TEST_F(BrowserTabEvents, ConsoleErrorsExceptionsAndFailedRequestsAreLogged) {
  Result<json> out = browser().run(make_trouble(connection_, page("index.html")));
  ASSERT_TRUE(out) << out.error().to_string();
  EXPECT_EQ((*out)["status"], 200) << out->dump(1);
  const json& network = (*out)["network"];
  ASSERT_FALSE(network.empty());
  EXPECT_EQ(network[0]["type"], "Document") << network.dump(1);
  EXPECT_EQ(network[0]["status"], 200);
  // Port 9 is one Chromium refuses to connect to (net::ERR_UNSAFE_PORT): a failure without any network.
  bool image = false;
  for (const json& entry : network) {
    image = image || (entry["url"].get<std::string>().ends_with("/missing.png") &&
                      entry["failure"].get<std::string>().starts_with("net::ERR_"));
  }
  EXPECT_TRUE(image) << network.dump(1);
}

asio::awaitable<Result<json>> download(std::shared_ptr<BrowserConnection> connection, std::string url,
                                       std::string link) {
  Result<int64_t> tab = co_await open_at(connection, std::move(url));
  if (!tab) co_return fail(tab.error());
  Result<json> clicked = co_await evaluate(connection, *tab, click(link));
  if (!clicked) co_return fail(clicked.error());
  const int64_t t = *tab;
  std::function<bool()> ready7 = [connection, t] {
    const TabState* state = connection->tab(t);
    return !state->downloads.empty() && state->downloads.back().state != "inProgress";
  };
  Result<void> ended = co_await wait_for(connection, std::move(ready7));
  if (!ended) co_return fail(ended.error());
  const DownloadEntry entry = connection->tab(t)->downloads.back();
  co_return json{{"guid", entry.guid},
                 {"name", entry.suggested_filename},
                 {"state", entry.state},
                 {"received", entry.received_bytes},
                 {"url", entry.url}};
}

TEST_F(BrowserTabEvents, ADownloadIsRecordedAndSavedUnderItsGuid) {
  Result<json> out = browser().run(download(connection_, page("download.html"), "csv"));
  ASSERT_TRUE(out) << out.error().to_string();
  EXPECT_EQ((*out)["name"], "monthly-report.csv") << out->dump();
  EXPECT_EQ((*out)["state"], "completed");
  const std::filesystem::path saved = downloads_ / (*out)["guid"].get<std::string>();
  ASSERT_TRUE(std::filesystem::exists(saved)) << saved;
  EXPECT_EQ(std::filesystem::file_size(saved), static_cast<uintmax_t>((*out)["received"].get<int64_t>()));
}

json blocked_list(const TabState& state) {
  json out = json::array();
  for (const BlockedNavigation& each : state.blocked) {
    out.push_back({{"url", each.url}, {"reason", each.reason}, {"frame", each.frame_id}});
  }
  return out;
}

asio::awaitable<Result<void>> blocked_at_least(std::shared_ptr<BrowserConnection> connection, int64_t tab,
                                               size_t count) {
  std::function<bool()> ready8 = [connection, tab, count] {
    const TabState* state = connection->tab(tab);
    return state != nullptr && state->blocked.size() >= count;
  };
  co_return co_await wait_for(connection, std::move(ready8));
}

asio::awaitable<Result<json>> try_to_leave(std::shared_ptr<BrowserConnection> connection, std::string start,
                                           std::string redirect, std::string denied_url, std::string frames) {
  Result<int64_t> opened = co_await open_at(connection, start);
  if (!opened) co_return fail(opened.error());
  const int64_t tab = *opened;
  json out = json::object();
  CancellationToken never_cancelled;
  // 1. A redirect from an allowed page to the denied origin: the hop is blocked.
  Result<void> redirected = co_await connection->navigate(tab, redirect, kStepTimeout, never_cancelled);
  out["redirect"] = redirected ? std::string("navigated") : redirected.error().code();
  Result<void> first = co_await blocked_at_least(connection, tab, 1);
  if (!first) co_return fail(first.error());
  // 2. The page sends itself to the denied origin.
  Result<void> back = co_await connection->navigate(tab, start, kStepTimeout, never_cancelled);
  if (!back) co_return fail(back.error());
  Result<json> sent =
      co_await evaluate(connection, tab, "location.href = " + json(denied_url).dump() + "; 1");
  if (!sent) co_return fail(sent.error());
  Result<void> second = co_await blocked_at_least(connection, tab, 2);
  if (!second) co_return fail(second.error());
  // 3. A cross-origin iframe of an allowed page.
  Result<void> framed = co_await connection->navigate(tab, frames, kStepTimeout, never_cancelled);
  if (!framed) co_return fail(framed.error());
  Result<void> third = co_await blocked_at_least(connection, tab, 3);
  if (!third) co_return fail(third.error());
  const TabState* state = connection->tab(tab);
  out["blocked"] = blocked_list(*state);
  out["target"] = state->target_id;
  json failures = json::array();
  for (const NetworkEntry& entry : state->network) {
    if (entry.failure.starts_with("blocked by keel")) failures.push_back(entry.url);
  }
  out["failures"] = failures;
  co_return out;
}

TEST_F(BrowserTabEvents, TheGuardBlocksARedirectHopAPageInitiatedNavigationAndAnIframeToADeniedOrigin) {
  const std::string denied_url = denied("index.html");
  const std::string redirect = page("redirect?to=" + denied_url);
  const std::string frames = page("iframes.html?cross=" + std::to_string(site_->port(1)));
  Result<json> out =
      browser().run(try_to_leave(connection_, page("index.html"), redirect, denied_url, frames));
  ASSERT_TRUE(out) << out.error().to_string();
  const json& blocked = (*out)["blocked"];
  ASSERT_EQ(blocked.size(), 3u) << out->dump(1);
  EXPECT_EQ(blocked[0]["url"], denied_url);
  EXPECT_NE(blocked[0]["reason"].get<std::string>().find("redirect hop"), std::string::npos) << blocked[0];
  EXPECT_EQ(blocked[0]["frame"], (*out)["target"]);
  EXPECT_EQ(blocked[1]["url"], denied_url);
  EXPECT_EQ(blocked[1]["frame"], (*out)["target"]);
  EXPECT_EQ(blocked[2]["url"], denied("frames/cross.html"));
  EXPECT_NE(blocked[2]["frame"], (*out)["target"]) << "the iframe's own frame";
  EXPECT_EQ((*out)["failures"].size(), 3u) << out->dump(1);
  // Nothing of the denied origin was served.
  for (const std::string& target : site_->requests()) {
    EXPECT_EQ(target.find("frames/cross.html"), std::string::npos) << target;
  }
}

// Downloads with no download directory: denied, nothing saved.
class BrowserDownloadsDenied : public testing::ConnectedBrowserSuite<BrowserDownloadsDenied> {};

TEST_F(BrowserDownloadsDenied, ADownloadIsCanceledWhenThereIsNoDownloadDirectory) {
  Result<json> out = browser().run(download(connection_, site_->origin(0) + "/download.html", "csv"));
  ASSERT_TRUE(out) << out.error().to_string();
  EXPECT_EQ((*out)["state"], "canceled") << out->dump();
  EXPECT_EQ((*out)["name"], "monthly-report.csv");
}

}  // namespace
}  // namespace keel::browser
