// BrowserRestore: keel's restart recovery and persistent profiles end to end in a real headless Chromium,
// against the test pages served on 127.0.0.1 (docs/browser.md "Restart and profiles"). A keel restart is a
// BrowserRuntime destroyed and a new one created on the same state file and profile; a browser crash is its
// process group killed. Tools are called as the engine calls them (resolve_target_for, then execute).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <memory>
#include <regex>
#include <string>
#include <thread>

#include "browser/browser_errors.h"
#include "browser/browser_process.h"
#include "browser/browser_runtime.h"
#include "browser/browser_state_file.h"
#include "browser/browser_test_support.h"
#include "browser/tools/register.h"
#include "browser/tools/tool_test_support.h"
#include "keel/tool_registry.h"
#include "model_server/static_site.h"
#include "testing/temp_dir.h"

namespace keel::browser {
namespace {

using testing::call_tool;
using testing::kCallDeadline;
using testing::Outcome;
using testing::ref_of;
using testing::run_browser_op;

namespace fs = std::filesystem;
using nlohmann::json;

constexpr std::chrono::seconds kFileDeadline{20};

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Whether a process runs (a zombie has exited: only its parent's wait is missing).
bool running(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  const std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] != 'Z';
}

// One keel process's browser: the runtime and the tools over it. Stopping it (the destructor) is a keel
// shutdown: the runtime saves the state file and closes the browser.
struct Keel {
  std::shared_ptr<BrowserRuntime> runtime;
  std::unique_ptr<ToolRegistry> registry;

  Keel() = default;
  Keel(Keel&&) = default;
  Keel& operator=(Keel&&) = delete;
  ~Keel() {
    registry.reset();
    // The runtime must go on this thread: an operation's coroutine lets go of it just after answering.
    const auto deadline = std::chrono::steady_clock::now() + kCallDeadline;
    while (runtime && runtime.use_count() > 1 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::yield();
    }
    runtime.reset();
  }
};

class BrowserRestore : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    model_server::StaticSiteOptions options;
    options.root = KEEL_BROWSER_PAGES;
    Result<std::unique_ptr<model_server::StaticSite>> site = model_server::StaticSite::start(options);
    if (!site) {
      started_ = fail(site.error());
      return;
    }
    site_ = std::move(*site);
    // Whether Chromium starts at all: one clear skip (or failure) per test when it cannot.
    Keel probe = start(RuntimeOptions{});
    BrowserOp nothing = [](std::shared_ptr<BrowserThread>,
                           CancellationToken) -> boost::asio::awaitable<Result<ToolResult>> {
      co_return ToolResult{};
    };
    Result<ToolResult> result =
        run_browser_op(*probe.runtime, "launch", CancellationToken(), std::move(nothing));
    started_ = result ? Result<void>{} : Result<void>(fail(result.error()));
  }
  static void TearDownTestSuite() { site_.reset(); }

  void SetUp() override {
    KEEL_SKIP_WITHOUT_CHROMIUM(started_);
    thread_ = ::testing::UnitTest::GetInstance()->current_test_info()->name();
  }

  static Keel start(RuntimeOptions options) {
    options.navigation_timeout = std::chrono::seconds(10);
    Keel keel;
    keel.runtime = BrowserRuntime::create(std::move(options));
    keel.registry = std::make_unique<ToolRegistry>();
    Result<void> registered = register_browser_tools(*keel.registry, keel.runtime);
    EXPECT_TRUE(registered) << registered.error().to_string();
    return keel;
  }

  RuntimeOptions options(bool persistent_profile) const {
    RuntimeOptions options;
    options.state_file = dir_.path() / "browser" / "state.json";
    if (persistent_profile) options.launch.profile_dir = dir_.path() / "browser" / "profile";
    return options;
  }

  Outcome call(Keel& keel, const std::string& tool, json params) {
    return call_tool(*keel.registry, thread_, tool, std::move(params));
  }

  std::string page(const std::string& path) const { return site_->origin(0) + "/" + path; }

  // The state file as saved, once `ready` accepts it (writes are debounced); nullopt at the deadline.
  std::optional<BrowserState> saved_state(const std::function<bool(const BrowserState&)>& ready) const {
    const auto deadline = std::chrono::steady_clock::now() + kFileDeadline;
    while (std::chrono::steady_clock::now() < deadline) {
      Result<std::optional<BrowserState>> loaded = load_browser_state_file(options(false).state_file);
      if (loaded && *loaded && ready(**loaded)) return **loaded;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // a poll interval, not a synchronisation
    }
    return std::nullopt;
  }

  static inline Result<void> started_ = fail(codes::kInternal, "the suite did not start");
  static inline std::unique_ptr<model_server::StaticSite> site_;
  keel::testing::TempDir dir_;
  std::string thread_;
};

TEST_F(BrowserRestore, AfterAKeelRestartTheTabsAreReopenedAndOldRefsAreFromBeforeIt) {
  std::string buy;
  {
    Keel before = start(options(false));
    ASSERT_TRUE(call(before, "browser_navigate", {{"url", page("overlay.html")}}).result);
    const int64_t shop_tab = before.runtime->view(thread_).current_tab;
    Outcome snapshot = call(before, "browser_snapshot", json::object());
    ASSERT_TRUE(snapshot.result) << snapshot.text();
    buy = ref_of(snapshot.text(), "button \"Buy now\"");
    ASSERT_NE(buy, "") << snapshot.text();
    ASSERT_TRUE(call(before, "browser_new_tab", {{"url", page("forms.html")}}).result);
    ASSERT_TRUE(call(before, "browser_switch_tab", {{"tab", shop_tab}}).result);
  }  // keel stops: the runtime writes the state file and closes the browser

  Keel after = start(options(false));
  EXPECT_FALSE(after.runtime->state_file_error());
  // A ref from before the restart never clicks anything, and says why.
  Outcome old = call(after, "browser_click", {{"ref", buy}});
  EXPECT_EQ(old.code(), codes::kBrowserUnknownRef) << old.text();
  EXPECT_TRUE(contains(old.text(), "from before keel restarted")) << old.text();

  Outcome snapshot = call(after, "browser_snapshot", json::object());
  ASSERT_TRUE(snapshot.result) << snapshot.text();
  const std::string text = snapshot.text();
  EXPECT_TRUE(contains(text, "keel restarted")) << text;
  EXPECT_TRUE(contains(text, "relaunched")) << text;
  EXPECT_TRUE(contains(text, page("overlay.html"))) << text;
  EXPECT_TRUE(contains(text, page("forms.html"))) << text;
  EXPECT_TRUE(contains(text, "take a new snapshot")) << text;
  EXPECT_TRUE(contains(text, "cookies and logins from before the restart are gone")) << text;
  // The shop tab is current again, and its new refs are new strings that work.
  const std::string new_buy = ref_of(text, "button \"Buy now\"");
  ASSERT_NE(new_buy, "") << text;
  EXPECT_NE(new_buy, buy);
  EXPECT_EQ(call(after, "browser_click", {{"ref", new_buy}}).code(), codes::kBrowserElementCovered);
  // The notice comes once.
  Outcome tabs = call(after, "browser_list_tabs", json::object());
  ASSERT_TRUE(tabs.result) << tabs.text();
  EXPECT_FALSE(contains(tabs.text(), "keel restarted")) << tabs.text();
  EXPECT_TRUE(contains(tabs.text(), "forms.html")) << tabs.text();
}

TEST_F(BrowserRestore, AfterAKeelRestartEveryTabKeepsItsIdAndANewTabGetsAHigherOne) {
  int64_t shop = 0;
  int64_t login = 0;
  int64_t closed = 0;
  {
    Keel before = start(options(false));
    ASSERT_TRUE(call(before, "browser_navigate", {{"url", page("overlay.html")}}).result);
    shop = before.runtime->view(thread_).current_tab;
    ASSERT_TRUE(call(before, "browser_new_tab", {{"url", page("login.html")}}).result);
    login = before.runtime->view(thread_).current_tab;
    ASSERT_TRUE(call(before, "browser_new_tab", {{"url", page("forms.html")}}).result);
    closed = before.runtime->view(thread_).current_tab;
    ASSERT_TRUE(call(before, "browser_close_tab", {{"tab", closed}}).result);
    ASSERT_TRUE(call(before, "browser_switch_tab", {{"tab", shop}}).result);
  }
  ASSERT_LT(shop, login);
  ASSERT_LT(login, closed);

  Keel after = start(options(false));
  // `tab: login` still names the sign-in page, which is not the current tab.
  Outcome snapshot = call(after, "browser_snapshot", {{"tab", login}});
  ASSERT_TRUE(snapshot.result) << snapshot.text();
  const std::string text = snapshot.text();
  EXPECT_TRUE(contains(text, "under the same tab ids")) << text;
  EXPECT_TRUE(contains(text, "tab " + std::to_string(shop) + " (current): " + page("overlay.html"))) << text;
  EXPECT_TRUE(contains(text, "tab " + std::to_string(login) + ": " + page("login.html"))) << text;
  EXPECT_FALSE(contains(text, "was tab")) << text;
  EXPECT_TRUE(contains(text, "Not signed in")) << text;
  EXPECT_EQ(after.runtime->view(thread_).current_tab, shop);
  EXPECT_EQ(after.runtime->view(thread_).tabs.size(), 2u);
  const std::string sign_in = ref_of(text, "button \"Sign in\"");
  ASSERT_NE(sign_in, "") << text;
  Outcome clicked = call(after, "browser_click", {{"ref", sign_in}, {"tab", login}});
  ASSERT_TRUE(clicked.result) << clicked.text();
  Outcome found = call(after, "browser_find_text", {{"text", "Signed in as Grace"}, {"tab", login}});
  EXPECT_TRUE(contains(found.text(), "1 match")) << found.text();
  // The closed tab's id does not come back: a new tab gets an id above every old one.
  Outcome opened = call(after, "browser_new_tab", {{"url", page("forms.html")}});
  ASSERT_TRUE(opened.result) << opened.text();
  EXPECT_GT(after.runtime->view(thread_).current_tab, closed);
}

TEST_F(BrowserRestore, AfterABrowserKillEveryTabKeepsItsIdAndANewTabGetsAHigherOne) {
  Keel keel = start(options(false));
  ASSERT_TRUE(call(keel, "browser_navigate", {{"url", page("overlay.html")}}).result);
  const int64_t shop = keel.runtime->view(thread_).current_tab;
  ASSERT_TRUE(call(keel, "browser_new_tab", {{"url", page("login.html")}}).result);
  const int64_t login = keel.runtime->view(thread_).current_tab;
  ASSERT_TRUE(call(keel, "browser_switch_tab", {{"tab", shop}}).result);

  const int pid = keel.runtime->browser_pid();
  ASSERT_GT(pid, 0);
  ASSERT_EQ(::kill(-pid, SIGKILL), 0);
  Outcome snapshot = call(keel, "browser_snapshot", {{"tab", login}});
  if (snapshot.code() == codes::kBrowserCrashed) snapshot = call(keel, "browser_snapshot", {{"tab", login}});
  ASSERT_TRUE(snapshot.result) << snapshot.text();
  const std::string text = snapshot.text();
  EXPECT_TRUE(contains(text, "relaunched")) << text;
  EXPECT_TRUE(contains(text, "under the same tab ids")) << text;
  EXPECT_TRUE(contains(text, "tab " + std::to_string(login) + ": " + page("login.html"))) << text;
  EXPECT_TRUE(contains(text, "Not signed in")) << text;
  EXPECT_NE(keel.runtime->browser_pid(), pid);
  EXPECT_EQ(keel.runtime->view(thread_).current_tab, shop);
  const std::string sign_in = ref_of(text, "button \"Sign in\"");
  ASSERT_NE(sign_in, "") << text;
  Outcome clicked = call(keel, "browser_click", {{"ref", sign_in}, {"tab", login}});
  ASSERT_TRUE(clicked.result) << clicked.text();
  Outcome found = call(keel, "browser_find_text", {{"text", "Signed in as Grace"}, {"tab", login}});
  EXPECT_TRUE(contains(found.text(), "1 match")) << found.text();
  Outcome opened = call(keel, "browser_new_tab", {{"url", page("forms.html")}});
  ASSERT_TRUE(opened.result) << opened.text();
  EXPECT_GT(keel.runtime->view(thread_).current_tab, login);
  // The state file keeps the high-water mark for the next keel.
  const int64_t newest = keel.runtime->view(thread_).current_tab;
  EXPECT_TRUE(saved_state([newest](const BrowserState& state) { return state.tab_high_water >= newest; }))
      << "the state file never reached tab " << newest;
}

TEST_F(BrowserRestore, ASignInSurvivesAKeelRestartAndABrowserCrashInAPersistentProfile) {
  {
    Keel before = start(options(true));
    Outcome opened = call(before, "browser_navigate", {{"url", page("login.html")}});
    ASSERT_TRUE(opened.result) << opened.text();
    Outcome snapshot = call(before, "browser_snapshot", json::object());
    const std::string sign_in = ref_of(snapshot.text(), "button \"Sign in\"");
    ASSERT_NE(sign_in, "") << snapshot.text();
    ASSERT_TRUE(call(before, "browser_click", {{"ref", sign_in}}).result);
    ASSERT_TRUE(
        contains(call(before, "browser_find_text", {{"text", "Signed in as Grace"}}).text(), "1 match"));
  }  // keel stops; Chromium closes cleanly and writes its cookies to the profile

  Keel after = start(options(true));
  Outcome found = call(after, "browser_find_text", {{"text", "Signed in as Grace"}});
  ASSERT_TRUE(found.result) << found.text();
  EXPECT_TRUE(contains(found.text(), "keel restarted")) << found.text();
  EXPECT_TRUE(contains(found.text(), page("login.html"))) << found.text();
  EXPECT_FALSE(contains(found.text(), "cookies and logins from before the restart are gone")) << found.text();
  EXPECT_TRUE(contains(found.text(), "1 match")) << found.text();

  // The browser crashes; the next call relaunches it in the same profile and reopens the page.
  const int pid = after.runtime->browser_pid();
  ASSERT_GT(pid, 0);
  ASSERT_EQ(::kill(-pid, SIGKILL), 0);
  found = call(after, "browser_find_text", {{"text", "Signed in as Grace"}});
  if (found.code() == codes::kBrowserCrashed)
    found = call(after, "browser_find_text", {{"text", "Signed in as Grace"}});
  ASSERT_TRUE(found.result) << found.text();
  EXPECT_TRUE(contains(found.text(), "relaunched")) << found.text();
  EXPECT_TRUE(contains(found.text(), "1 match")) << found.text();
  EXPECT_NE(after.runtime->browser_pid(), pid);
}

TEST_F(BrowserRestore, WithATemporaryProfileTheSignInIsGoneAfterARestart) {
  {
    Keel before = start(options(false));
    ASSERT_TRUE(call(before, "browser_navigate", {{"url", page("login.html")}}).result);
    Outcome snapshot = call(before, "browser_snapshot", json::object());
    const std::string sign_in = ref_of(snapshot.text(), "button \"Sign in\"");
    ASSERT_NE(sign_in, "") << snapshot.text();
    ASSERT_TRUE(call(before, "browser_click", {{"ref", sign_in}}).result);
  }
  Keel after = start(options(false));
  Outcome found = call(after, "browser_find_text", {{"text", "Not signed in"}});
  ASSERT_TRUE(found.result) << found.text();
  EXPECT_TRUE(contains(found.text(), "cookies and logins from before the restart are gone")) << found.text();
  EXPECT_TRUE(contains(found.text(), "1 match")) << found.text();
}

TEST_F(BrowserRestore, ABrowserLeftBehindInTheProfileIsKilledAndTheProfileUsed) {
  const fs::path profile = options(true).launch.profile_dir;
  // A Chromium in the profile that no keel owns any more (as after keel was killed).
  boost::asio::io_context io;
  LaunchSpec spec;
  spec.profile_dir = profile;
  Result<std::unique_ptr<BrowserProcess>> leftover = BrowserProcess::launch(io.get_executor(), spec);
  ASSERT_TRUE(leftover) << leftover.error().to_string();
  const pid_t leftover_pid = (*leftover)->pid();
  const auto deadline = std::chrono::steady_clock::now() + kFileDeadline;
  std::error_code ec;
  while (!fs::is_symlink(profile / "SingletonLock", ec) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // a poll interval, not a synchronisation
  }
  ASSERT_TRUE(fs::is_symlink(profile / "SingletonLock", ec))
      << "the leftover browser never locked the profile";

  Keel keel = start(options(true));
  Outcome opened = call(keel, "browser_navigate", {{"url", page("login.html")}});
  ASSERT_TRUE(opened.result) << opened.text();
  EXPECT_FALSE(running(leftover_pid));
  EXPECT_NE(keel.runtime->browser_pid(), leftover_pid);
}

TEST_F(BrowserRestore, AProfileHeldByAnotherProgramIsRefusedAndNothingIsKilled) {
  const fs::path profile = options(true).launch.profile_dir;
  fs::create_directories(profile);
  char host[256] = {};
  ASSERT_EQ(::gethostname(host, sizeof host - 1), 0);
  // This test's process holds the lock: alive, and no Chromium of this profile.
  fs::create_symlink(std::string(host) + "-" + std::to_string(::getpid()), profile / "SingletonLock");
  Keel keel = start(options(true));
  Outcome opened = call(keel, "browser_navigate", {{"url", page("login.html")}});
  EXPECT_EQ(opened.code(), codes::kBrowserLaunchFailed) << opened.text();
  EXPECT_TRUE(contains(opened.text(), "is in use")) << opened.text();
  EXPECT_EQ(keel.runtime->browser_pid(), 0);
}

TEST_F(BrowserRestore, TheStateFileFollowsTheTabsWhileKeelRuns) {
  Keel keel = start(options(false));
  ASSERT_TRUE(call(keel, "browser_navigate", {{"url", page("overlay.html")}}).result);
  const auto at = [this](const std::string& url, const std::string& title) {
    return [this, url, title](const BrowserState& state) {
      auto thread = state.threads.find(thread_);
      return thread != state.threads.end() && thread->second.tabs.size() == 1 &&
             thread->second.tabs[0].url == url && thread->second.tabs[0].current &&
             thread->second.tabs[0].title == title;
    };
  };
  EXPECT_TRUE(saved_state(at(page("overlay.html"), "Overlay"))) << "the state file never named overlay.html";
  ASSERT_TRUE(call(keel, "browser_navigate", {{"url", page("forms.html")}}).result);
  EXPECT_TRUE(saved_state(at(page("forms.html"), "Forms"))) << "the state file never followed to forms.html";
  struct stat info {};
  ASSERT_EQ(::stat(options(false).state_file.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);
}

TEST_F(BrowserRestore, ADamagedStateFileIsReportedAndKeelStartsWithoutIt) {
  const fs::path file = options(false).state_file;
  fs::create_directories(file.parent_path());
  fs::permissions(file.parent_path(), fs::perms::owner_all, fs::perm_options::replace);
  {
    std::ofstream out(file);
    out << "{\"version\": 1, \"profile\": \"\", \"threads\": {\"t\": {\"tabs\": 7";
  }
  fs::permissions(file, fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::replace);
  std::vector<Error> reported;
  RuntimeOptions with_hook = options(false);
  with_hook.on_state_file_error = [&reported](const Error& error) { reported.push_back(error); };
  {
    Keel keel = start(with_hook);
    ASSERT_TRUE(keel.runtime->state_file_error());
    EXPECT_EQ(keel.runtime->state_file_error()->code(), codes::kBrowserStateFileDamaged);
    ASSERT_EQ(reported.size(), 1u);
    EXPECT_EQ(reported[0].code(), codes::kBrowserStateFileDamaged);
    Outcome opened = call(keel, "browser_navigate", {{"url", page("overlay.html")}});
    ASSERT_TRUE(opened.result) << opened.text();
    EXPECT_FALSE(contains(opened.text(), "keel restarted")) << opened.text();
  }
  // The next save replaced it.
  Result<std::optional<BrowserState>> loaded = load_browser_state_file(file);
  ASSERT_TRUE(loaded) << loaded.error().to_string();
  ASSERT_TRUE(*loaded);
  EXPECT_TRUE((*loaded)->threads.contains(thread_));
  EXPECT_EQ(reported.size(), 1u);
}

}  // namespace
}  // namespace keel::browser
