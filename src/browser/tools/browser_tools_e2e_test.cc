// BrowserTools: the browser_* tools end to end in a real headless Chromium, against the test pages served
// on 127.0.0.1 — called as the engine calls them (resolve_target_for, then execute with the decided target),
// without an engine. One BrowserRuntime per suite; each test is its own agent thread (own tabs and refs).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <csignal>
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

using nlohmann::json;

// Denies one origin (the site's third listener, as localhost), allows every other.
class DenyOne final : public OriginPolicy {
 public:
  explicit DenyOne(std::string denied) : denied_(std::move(denied)) {}
  bool allows_navigation(const std::string&, const std::string& origin) const override {
    return origin != denied_;
  }

 private:
  std::string denied_;
};

class BrowserTools : public ::testing::Test {
 protected:
  // One runtime, one browser and one site for the suite; the first operation launches Chromium.
  static void SetUpTestSuite() {
    model_server::StaticSiteOptions options;
    options.root = KEEL_BROWSER_PAGES;
    options.listeners = 3;  // the third is the origin the policy denies
    Result<std::unique_ptr<model_server::StaticSite>> site = model_server::StaticSite::start(options);
    if (!site) {
      started_ = fail(site.error());
      return;
    }
    site_ = std::move(*site);
    RuntimeOptions runtime_options;
    runtime_options.policy = std::make_shared<DenyOne>(site_->origin(2, "localhost"));
    runtime_options.navigation_timeout = std::chrono::seconds(3);  // the never-loading page waits this long
    runtime_ = BrowserRuntime::create(runtime_options);
    registry_ = std::make_unique<ToolRegistry>();
    started_ = register_browser_tools(*registry_, runtime_);
    if (!started_) return;
    // Launch now, so that a Chromium that cannot start is one clear skip (or failure) per test.
    BrowserOp nothing = [](std::shared_ptr<BrowserThread>,
                           CancellationToken) -> boost::asio::awaitable<Result<ToolResult>> {
      co_return ToolResult{};
    };
    Result<ToolResult> result = run_browser_op(*runtime_, "launch", CancellationToken(), std::move(nothing));
    started_ = result ? Result<void>{} : Result<void>(fail(result.error()));
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

  static inline Result<void> started_ = fail(codes::kInternal, "the suite did not start");
  static inline std::unique_ptr<model_server::StaticSite> site_;
  static inline std::shared_ptr<BrowserRuntime> runtime_;
  static inline std::unique_ptr<ToolRegistry> registry_;
  std::string thread_;
};

TEST_F(BrowserTools, SnapshotOfAFormNamesItsFieldsWithRefs) {
  Outcome snapshot = open_and_snapshot("forms.html");
  ASSERT_TRUE(snapshot.result) << snapshot.text();
  EXPECT_NE(ref_of(snapshot.text(), "textbox \"Full name\""), "") << snapshot.text();
  EXPECT_NE(ref_of(snapshot.text(), "checkbox \"I accept the terms\""), "") << snapshot.text();
  EXPECT_EQ(snapshot.result->details.value("kind", ""), "browser.snapshot");
}

TEST_F(BrowserTools, TypingAndSubmittingNavigatesAndMakesOldRefsStale) {
  Outcome snapshot = open_and_snapshot("forms.html");
  ASSERT_TRUE(snapshot.result) << snapshot.text();
  const std::string name = ref_of(snapshot.text(), "textbox \"Full name\"");
  const std::string email = ref_of(snapshot.text(), "textbox \"Email\"");
  ASSERT_NE(name, "");
  ASSERT_NE(email, "");
  Outcome typed = call("browser_type", {{"ref", name}, {"text", "Grace Hopper"}});
  ASSERT_TRUE(typed.result) << typed.text();
  EXPECT_NE(typed.text().find("Typed into " + name), std::string::npos) << typed.text();
  json field = {{"ref", email}, {"value", "g@example.org"}};
  json fields = json::array();
  fields.push_back(field);
  Outcome filled = call("browser_fill_form", {{"fields", fields}});
  ASSERT_TRUE(filled.result) << filled.text();
  // Submitting needs the required fields; the report tells whether the page navigated.
  Outcome submitted = call("browser_type", {{"ref", email}, {"text", "g@example.org"}, {"submit", true}});
  ASSERT_TRUE(submitted.result) << submitted.text();
  Outcome again = call("browser_click", {{"ref", name}});
  if (submitted.text().find("navigated") != std::string::npos) {
    EXPECT_EQ(again.code(), codes::kBrowserStaleRef) << again.text();
  } else {
    EXPECT_TRUE(again.result) << again.text();
  }
}

TEST_F(BrowserTools, ClickOnACoveredElementIsRefusedAndNamesTheCover) {
  Outcome snapshot = open_and_snapshot("overlay.html");
  ASSERT_TRUE(snapshot.result) << snapshot.text();
  const std::string buy = ref_of(snapshot.text(), "button \"Buy now\"");
  ASSERT_NE(buy, "") << snapshot.text();
  Outcome clicked = call("browser_click", {{"ref", buy}});
  EXPECT_EQ(clicked.code(), codes::kBrowserElementCovered) << clicked.text();
  Outcome text = call("browser_find_text", {{"text", "Not bought"}});
  EXPECT_NE(text.text().find("1 match"), std::string::npos) << text.text();
  const std::string accept = ref_of(snapshot.text(), "button \"Accept cookies\"");
  ASSERT_NE(accept, "");
  Outcome accepted = call("browser_click", {{"ref", accept}});
  ASSERT_TRUE(accepted.result) << accepted.text();
  EXPECT_NE(accepted.text().find("removed"), std::string::npos) << accepted.text();
  Outcome bought = call("browser_click", {{"ref", buy}});
  ASSERT_TRUE(bought.result) << bought.text();
  EXPECT_NE(call("browser_find_text", {{"text", "Bought"}}).text().find("match"), std::string::npos);
}

TEST_F(BrowserTools, RefsThatNeverExistedAreUnknownBeforeAnythingRuns) {
  Outcome snapshot = open_and_snapshot("overlay.html");
  ASSERT_TRUE(snapshot.result) << snapshot.text();
  EXPECT_EQ(call("browser_click", {{"ref", "e9999"}}).code(), codes::kBrowserUnknownRef);
  EXPECT_EQ(call("browser_click", {{"ref", "button"}}).code(), codes::kBrowserUnknownRef);
}

TEST_F(BrowserTools, NavigationToSchemesWithoutAnOriginIsRefused) {
  for (const char* url : {"data:text/html,<h1>x</h1>", "javascript:alert(1)", "file:///etc/passwd",
                          "chrome://settings", "blob:null/abc"}) {
    EXPECT_EQ(call("browser_navigate", {{"url", url}}).code(), codes::kBrowserNavigationRefused) << url;
  }
}

TEST_F(BrowserTools, ABigPageGivesABoundedSnapshotWithANotice) {
  Outcome snapshot = open_and_snapshot("big5000.html");
  ASSERT_TRUE(snapshot.result) << snapshot.text();
  EXPECT_LE(snapshot.text().size(), 13'000u);
  EXPECT_NE(snapshot.text().find("more refs"), std::string::npos) << snapshot.text().substr(0, 400);
  Outcome full = call("browser_snapshot", {{"mode", "full"}, {"max_chars", 200000}});
  ASSERT_TRUE(full.result) << full.text();
  EXPECT_GT(full.text().size(), snapshot.text().size());
}

TEST_F(BrowserTools, CrossOriginFramesAreInTheSnapshotAndTheirRefsWork) {
  Outcome opened =
      call("browser_navigate", {{"url", page("iframes.html?cross=" + std::to_string(site_->port(1)))}});
  ASSERT_TRUE(opened.result) << opened.text();
  Outcome waited = call("browser_wait_for", {{"timeout_ms", 2000}});
  ASSERT_TRUE(waited.result) << waited.text();
  Outcome snapshot = call("browser_snapshot", json::object());
  ASSERT_TRUE(snapshot.result) << snapshot.text();
  std::regex framed("(f[0-9]+e[0-9]+) button");
  std::smatch match;
  const std::string text = snapshot.text();
  ASSERT_TRUE(std::regex_search(text, match, framed)) << text;
  Outcome clicked = call("browser_click", {{"ref", match[1].str()}});
  EXPECT_TRUE(clicked.result) << clicked.text();
}

TEST_F(BrowserTools, AnInterruptEndsAWaitThatWouldRunForHalfAMinute) {
  Outcome opened = open_and_snapshot("overlay.html");
  ASSERT_TRUE(opened.result);
  CancellationSource interrupt;
  std::atomic<bool> returned = false;
  std::thread canceller([&] {
    // Cancel once the wait runs (the runtime reports the thread busy), as an interrupt would.
    while (!runtime_->busy(thread_) && !returned) std::this_thread::yield();
    interrupt.cancel("interrupt");
  });
  // Without the interrupt this wait would end after 30 s with "it did not happen", a success.
  Outcome waited =
      call("browser_wait_for", {{"text", "never appears"}, {"timeout_ms", 30000}}, interrupt.token());
  returned = true;
  canceller.join();
  EXPECT_EQ(waited.code(), codes::kCancelled) << waited.text();
  // The thread's next call runs normally.
  EXPECT_TRUE(call("browser_list_tabs", json::object()).result);
}

TEST_F(BrowserTools, AKilledBrowserIsRelaunchedAndTheTabReopened) {
  Outcome snapshot = open_and_snapshot("overlay.html");
  ASSERT_TRUE(snapshot.result) << snapshot.text();
  const std::string buy = ref_of(snapshot.text(), "button \"Buy now\"");
  const int pid = runtime_->browser_pid();
  ASSERT_GT(pid, 0);
  ASSERT_EQ(::kill(-pid, SIGKILL), 0);
  // The call in flight (or the next one) learns that the browser died; then it is relaunched.
  Outcome after = call("browser_snapshot", json::object());
  if (!after.result) {
    EXPECT_EQ(after.code(), codes::kBrowserCrashed) << after.text();
    after = call("browser_snapshot", json::object());
  }
  ASSERT_TRUE(after.result) << after.text();
  EXPECT_NE(after.text().find("relaunched"), std::string::npos) << after.text();
  EXPECT_NE(after.text().find("overlay.html"), std::string::npos) << after.text();
  EXPECT_NE(runtime_->browser_pid(), pid);
  // A ref from before the relaunch never clicks anything.
  Outcome old = call("browser_click", {{"ref", buy}});
  EXPECT_FALSE(old.result);
}

TEST_F(BrowserTools, ACrashedTabIsReopenedAtItsLastUrlByTheNextCall) {
  Outcome snapshot = open_and_snapshot("overlay.html");
  ASSERT_TRUE(snapshot.result) << snapshot.text();
  const std::string buy = ref_of(snapshot.text(), "button \"Buy now\"");
  const int64_t tab = runtime_->view(thread_).current_tab;
  // Crash the tab's renderer as a broken page would (Page.crash never answers).
  BrowserOp crash = [tab](std::shared_ptr<BrowserThread> thread,
                          CancellationToken) -> boost::asio::awaitable<Result<ToolResult>> {
    const TabState* state = thread->connection()->tab(tab);
    if (state == nullptr) co_return fail(codes::kBrowserNoSuchTab, "no tab");
    thread->connection()->client().notify("Page.crash", json::object(), state->session_id);
    co_return ToolResult{};
  };
  ASSERT_TRUE(run_browser_op(*runtime_, thread_, CancellationToken(), std::move(crash)));
  const auto deadline = std::chrono::steady_clock::now() + kCallDeadline;
  while (!runtime_->view(thread_).tabs[tab].crashed && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  ASSERT_TRUE(runtime_->view(thread_).tabs[tab].crashed);
  Outcome after = call("browser_snapshot", json::object());
  ASSERT_TRUE(after.result) << after.text();
  EXPECT_NE(after.text().find("had crashed; it was reopened under the same id"), std::string::npos)
      << after.text();
  EXPECT_NE(after.text().find("overlay.html"), std::string::npos) << after.text();
  // The replacement is the same tab to the model: same id, still current, the page's content.
  EXPECT_EQ(runtime_->view(thread_).current_tab, tab);
  EXPECT_FALSE(runtime_->view(thread_).tabs[tab].crashed);
  EXPECT_NE(after.text().find("Buy now"), std::string::npos) << after.text();
  EXPECT_FALSE(call("browser_click", {{"ref", buy}}).result);
}

TEST_F(BrowserTools, APopupOpenedByAClickIsReportedAndBelongsToTheThread) {
  Outcome snapshot = open_and_snapshot("popup.html");
  ASSERT_TRUE(snapshot.result) << snapshot.text();
  const std::string link = ref_of(snapshot.text(), "button \"Open a popup window\"");
  ASSERT_NE(link, "") << snapshot.text();
  Outcome clicked = call("browser_click", {{"ref", link}});
  ASSERT_TRUE(clicked.result) << clicked.text();
  std::smatch match;
  const std::string report = clicked.text();
  std::regex new_tab("New tab: tab ([0-9]+) ");
  ASSERT_TRUE(std::regex_search(report, match, new_tab)) << report;
  Outcome switched = call("browser_switch_tab", {{"tab", std::stoi(match[1].str())}});
  ASSERT_TRUE(switched.result) << switched.text();
  Outcome list = call("browser_list_tabs", json::object());
  EXPECT_NE(list.text().find("popup-target.html?via=window.open"), std::string::npos) << list.text();
}

TEST_F(BrowserTools, ARefTakenBeforeThePageNavigatedByItselfIsStaleNotAClickOnTheNewPage) {
  Outcome opened = call("browser_navigate", {{"url", page("self-navigate.html?ms=400")}});
  ASSERT_TRUE(opened.result) << opened.text();
  Outcome snapshot = call("browser_snapshot", json::object());
  ASSERT_TRUE(snapshot.result) << snapshot.text();
  const std::string button = ref_of(snapshot.text(), "button \"Continue\"");
  ASSERT_NE(button, "") << snapshot.text();
  Outcome arrived = call("browser_wait_for", {{"text", "A different page"}, {"timeout_ms", 10000}});
  Outcome clicked = call("browser_click", {{"ref", button}});
  if (call("browser_list_tabs", json::object()).text().find("self-navigate-target") != std::string::npos) {
    EXPECT_FALSE(clicked.result) << clicked.text();
    EXPECT_TRUE(clicked.code() == codes::kBrowserStaleRef || clicked.code() == codes::kBrowserTargetChanged)
        << clicked.text();
  } else {
    ADD_FAILURE() << "the page did not navigate: " << arrived.text();
  }
}

TEST_F(BrowserTools, APageThatNeverFinishesLoadingIsUsableAndTheCallReturns) {
  Outcome opened = call("browser_navigate", {{"url", page("never-loads.html")}});
  // DOMContentLoaded comes; the load event never does: the navigation returns without waiting for it.
  ASSERT_TRUE(opened.result) << opened.text();
  Outcome snapshot = call("browser_snapshot", json::object());
  ASSERT_TRUE(snapshot.result) << snapshot.text();
  const std::string button = ref_of(snapshot.text(), "button \"Try me\"");
  ASSERT_NE(button, "");
  Outcome clicked = call("browser_click", {{"ref", button}});
  ASSERT_TRUE(clicked.result) << clicked.text();
  Outcome hang = call("browser_navigate", {{"url", site_->origin() + "/hang"}});
  EXPECT_EQ(hang.code(), codes::kBrowserNavigationFailed) << hang.text();
  EXPECT_TRUE(call("browser_navigate", {{"url", page("overlay.html")}}).result);
}

TEST_F(BrowserTools, ANoopenerLinkOpensATabThatLoads) {
  Outcome snapshot = open_and_snapshot("popup.html");
  ASSERT_TRUE(snapshot.result) << snapshot.text();
  const std::string link = ref_of(snapshot.text(), "link \"Open in a new tab\"");
  ASSERT_NE(link, "") << snapshot.text();
  Outcome clicked = call("browser_click", {{"ref", link}});
  ASSERT_TRUE(clicked.result) << clicked.text();
  EXPECT_NE(clicked.text().find("popup-target.html?via=link (browser_switch_tab"), std::string::npos)
      << clicked.text();
}

TEST_F(BrowserTools, ADialogOpenedByAClickBlocksPageToolsUntilAnswered) {
  Outcome snapshot = open_and_snapshot("dialogs.html");
  ASSERT_TRUE(snapshot.result) << snapshot.text();
  const std::string confirm = ref_of(snapshot.text(), "button \"Show confirm\"");
  ASSERT_NE(confirm, "") << snapshot.text();
  Outcome clicked = call("browser_click", {{"ref", confirm}});
  ASSERT_TRUE(clicked.result) << clicked.text();
  EXPECT_NE(clicked.text().find("Dialog: confirm \"Delete the draft?\" is open"), std::string::npos)
      << clicked.text();
  Outcome blocked = call("browser_snapshot", json::object());
  EXPECT_EQ(blocked.code(), codes::kBrowserModalOpen) << blocked.text();
  EXPECT_NE(blocked.text().find("browser_handle_dialog"), std::string::npos) << blocked.text();
  EXPECT_TRUE(call("browser_list_tabs", json::object()).result);                 // not blocked
  Outcome no_chooser = call("browser_upload_file", {{"paths", json::array()}});  // a dialog is not a chooser
  EXPECT_EQ(no_chooser.code(), codes::kBrowserNoModal) << no_chooser.text();
  EXPECT_NE(no_chooser.text().find("browser_click"), std::string::npos) << no_chooser.text();
  Outcome answered = call("browser_handle_dialog", {{"accept", false}});
  ASSERT_TRUE(answered.result) << answered.text();
  Outcome no_dialog = call("browser_handle_dialog", {{"accept", true}});
  EXPECT_EQ(no_dialog.code(), codes::kBrowserNoModal);
  EXPECT_NE(no_dialog.text().find("no dialog is open on tab"), std::string::npos) << no_dialog.text();
  Outcome result = call("browser_find_text", {{"text", "confirm: false"}});
  EXPECT_NE(result.text().find("1 match"), std::string::npos) << result.text();
}

TEST_F(BrowserTools, APromptIsAnsweredWithText) {
  Outcome snapshot = open_and_snapshot("dialogs.html");
  ASSERT_TRUE(snapshot.result) << snapshot.text();
  const std::string prompt = ref_of(snapshot.text(), "button \"Show prompt\"");
  ASSERT_TRUE(call("browser_click", {{"ref", prompt}}).result);
  Outcome answered = call("browser_handle_dialog", {{"accept", true}, {"prompt_text", "Grace"}});
  ASSERT_TRUE(answered.result) << answered.text();
  Outcome result = call("browser_find_text", {{"text", "prompt: \"Grace\""}});
  EXPECT_NE(result.text().find("1 match"), std::string::npos) << result.text();
}

TEST_F(BrowserTools, AnEndlessAlertLoopIsDismissedAndTheTabStaysUsable) {
  // The page shows alerts forever from its load event: each answer opens the next.
  Outcome opened = call("browser_navigate", {{"url", page("alert-loop.html")}});
  ASSERT_TRUE(opened.result) << opened.text();
  std::string reports = opened.text();
  for (int i = 0; i < 6 && runtime_->view(thread_).tabs[runtime_->view(thread_).current_tab].modal != "";
       ++i) {
    Outcome answered = call("browser_handle_dialog", {{"accept", true}});
    if (!answered.result) break;  // keel dismissed the rest itself
    reports += "\n" + answered.text();
  }
  EXPECT_NE(reports.find("Dialog loop"), std::string::npos) << reports;
  Outcome snapshot = call("browser_snapshot", json::object());
  EXPECT_TRUE(snapshot.result) << snapshot.text();
  EXPECT_TRUE(call("browser_navigate", {{"url", page("overlay.html")}}).result);
}

TEST_F(BrowserTools, ARedirectToADeniedOriginIsStoppedByTheGuard) {
  const std::string denied = site_->origin(2, "localhost") + "/overlay.html";
  const std::string url = site_->origin() + "/redirect?to=" + denied;
  Outcome opened = call("browser_navigate", {{"url", url}});
  EXPECT_EQ(opened.code(), codes::kBrowserNavigationRefused) << opened.text();
  EXPECT_NE(opened.text().find("localhost"), std::string::npos) << opened.text();
  Outcome tabs = call("browser_list_tabs", json::object());
  EXPECT_EQ(tabs.text().find("overlay.html"), std::string::npos) << tabs.text();
}

TEST_F(BrowserTools, ARefOfAnotherTabIsRefusedWithTheTabItBelongsTo) {
  Outcome snapshot = open_and_snapshot("overlay.html");
  ASSERT_TRUE(snapshot.result) << snapshot.text();
  const std::string buy = ref_of(snapshot.text(), "button \"Buy now\"");
  ASSERT_TRUE(call("browser_new_tab", {{"url", page("forms.html")}}).result);
  Outcome clicked = call("browser_click", {{"ref", buy}});
  EXPECT_EQ(clicked.code(), codes::kBrowserWrongTab) << clicked.text();
}

TEST_F(BrowserTools, AFiftyThousandElementPageGivesABoundedSnapshot) {
  Outcome snapshot = open_and_snapshot("huge50k.html");
  ASSERT_TRUE(snapshot.result) << snapshot.text();
  EXPECT_LE(snapshot.text().size(), 13'000u);
  EXPECT_FALSE(ref_of(snapshot.text(), "").empty()) << snapshot.text().substr(0, 400);
}

}  // namespace
}  // namespace keel::browser
