// BrowserAttach: keel attached to a Chromium that a person runs (RuntimeOptions::attach; docs/browser.md
// "Attach to a running browser"). Each test starts that browser itself, as a person would, with
// --remote-debugging-port=0, opens the person's tab with a second, plain CDP client, and then lets a
// BrowserRuntime attach: keel works in its own tabs through the tools, while the person's tabs are neither
// listed, paused nor guarded, and keel's shutdown leaves the browser and the person's tabs running.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_future.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "browser/browser_errors.h"
#include "browser/browser_process.h"
#include "browser/browser_runtime.h"
#include "browser/browser_test_support.h"
#include "browser/cdp/cdp_client.h"
#include "browser/cdp/websocket_transport.h"
#include "browser/tools/register.h"
#include "browser/tools/tool_test_support.h"
#include "keel/tool_registry.h"
#include "model_server/static_site.h"
#include "testing/temp_dir.h"

extern char** environ;

namespace keel::browser {
namespace {

namespace asio = boost::asio;
namespace fs = std::filesystem;
using nlohmann::json;
using testing::call_tool;
using testing::kCallDeadline;
using testing::Outcome;
using testing::ref_of;
using testing::run_browser_op;

constexpr std::chrono::seconds kPersonStepTimeout{15};

bool has_text(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A Chromium "the person" started with a DevTools port, and the person's own CDP client to it.
class PersonsBrowser {
 public:
  static Result<std::unique_ptr<PersonsBrowser>> start() {
    std::unique_ptr<PersonsBrowser> browser(new PersonsBrowser());
    Result<void> spawned = browser->spawn();
    if (!spawned) return fail(spawned.error());
    std::future<Result<std::unique_ptr<CdpTransport>>> connecting =
        asio::co_spawn(browser->io_,
                       connect_websocket(browser->io_.get_executor(), browser->endpoint(), size_t{64} << 20,
                                         std::chrono::seconds(20)),
                       asio::use_future);
    Result<std::unique_ptr<CdpTransport>> transport = connecting.get();
    if (!transport) return fail(transport.error());
    browser->client_ = CdpClient::create(browser->io_.get_executor(), std::move(*transport));
    browser->client_->start();
    return browser;
  }

  ~PersonsBrowser() {
    asio::post(io_, [this] {
      if (client_) client_->close(Error(codes::kCancelled, "the test is over"));
      client_.reset();
    });
    work_.reset();
    thread_.join();
    kill_now();
  }
  PersonsBrowser(const PersonsBrowser&) = delete;
  PersonsBrowser& operator=(const PersonsBrowser&) = delete;

  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
  pid_t pid() const { return pid_; }

  // Whether the browser process still runs (not exited, not a zombie).
  bool alive() {
    if (pid_ <= 0) return false;
    int status = 0;
    return waitpid(pid_, &status, WNOHANG) == 0;
  }

  // SIGKILL to the browser's whole process group, and its exit reaped.
  void kill_now() {
    if (pid_ <= 0) return;
    ::kill(-pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = 0;
  }

  // A command through the person's client (browser-level when `session` is "").
  Result<json> call(std::string method, json params, std::string session = "") {
    CallOptions options;
    options.timeout = kPersonStepTimeout;
    std::future<Result<json>> reply =
        asio::co_spawn(io_, client_->call(std::move(method), std::move(params), std::move(session), options),
                       asio::use_future);
    return reply.get();
  }

  // The page targets the browser has, as Target.getTargets lists them.
  std::vector<json> pages() {
    std::vector<json> out;
    Result<json> targets = call("Target.getTargets", json::object());
    if (!targets) return out;
    for (const json& info : (*targets)["targetInfos"]) {
      if (info.value("type", "") == "page") out.push_back(info);
    }
    return out;
  }

  // Opens a tab of the person's at `url`, attaches the person's client to it and waits for its load event;
  // {target id, session id}.
  Result<std::pair<std::string, std::string>> open_tab(const std::string& url) {
    Result<json> created = call("Target.createTarget", {{"url", url}});
    if (!created) return fail(created.error());
    const std::string target = (*created)["targetId"].get<std::string>();
    Result<json> attached = call("Target.attachToTarget", {{"targetId", target}, {"flatten", true}});
    if (!attached) return fail(attached.error());
    const std::string session = (*attached)["sessionId"].get<std::string>();
    Result<std::string> loaded = loaded_url(session);
    if (!loaded) return fail(loaded.error());
    return std::make_pair(target, session);
  }

  // The tab's URL once its document has loaded (a tab waiting for a debugger never answers: cdp_timeout).
  Result<std::string> loaded_url(const std::string& session) {
    json params = {{"expression",
                    "new Promise(done => document.readyState === 'complete' ? done(location.href) : "
                    "addEventListener('load', () => done(location.href)))"},
                   {"awaitPromise", true},
                   {"returnByValue", true}};
    Result<json> reply = call("Runtime.evaluate", std::move(params), session);
    if (!reply) return fail(reply.error());
    return (*reply)["result"].value("value", "");
  }

  // Navigates the person's tab and returns the URL it loaded.
  Result<std::string> navigate(const std::string& session, const std::string& url) {
    json params = {{"expression", "location.href = " + json(url).dump() + "; true"}};
    Result<json> started = call("Runtime.evaluate", std::move(params), session);
    if (!started) return fail(started.error());
    const auto deadline = std::chrono::steady_clock::now() + kPersonStepTimeout;
    for (;;) {
      // Each evaluation waits for its document's load; the old document's may answer before it goes.
      Result<std::string> loaded = loaded_url(session);
      if (loaded && *loaded == url) return loaded;
      if (std::chrono::steady_clock::now() >= deadline) {
        return fail(codes::kBrowserCdpTimeout, "the person's tab did not load " + url);
      }
    }
  }

 private:
  PersonsBrowser() : work_(asio::make_work_guard(io_)), thread_([this] { io_.run(); }) {}

  Result<void> spawn() {
    const fs::path profile = dir_.path() / "profile";
    fs::create_directories(profile);
    const std::string executable = resolve_chromium_executable("/usr/bin/chromium").string();
    std::vector<std::string> args = {executable,
                                     "--headless",
                                     "--no-sandbox",
                                     "--disable-gpu",
                                     "--no-first-run",
                                     "--no-default-browser-check",
                                     "--disable-background-networking",
                                     "--disable-component-update",
                                     "--disable-sync",
                                     "--disable-quic",
                                     "--remote-debugging-port=0",
                                     "--remote-debugging-address=127.0.0.1",
                                     "--user-data-dir=" + profile.string(),
                                     "about:blank"};
    std::vector<char*> argv;
    for (std::string& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    const std::string log = (dir_.path() / "stderr.txt").string();
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 2, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attributes, 0);  // its own group, killed whole at the end
    const int spawned = posix_spawn(&pid_, executable.c_str(), &actions, &attributes, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    if (spawned != 0) {
      pid_ = 0;
      return fail(codes::kBrowserLaunchFailed, "cannot start " + executable);
    }
    // Chromium writes the port it picked to DevToolsActivePort once it listens.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < deadline && alive()) {
      std::ifstream in(profile / "DevToolsActivePort");
      int port = 0;
      if (in >> port && port > 0) {
        port_ = port;
        return {};
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // a poll interval, not a synchronisation
    }
    std::ifstream err(log);
    const std::string tail((std::istreambuf_iterator<char>(err)), std::istreambuf_iterator<char>());
    return fail(codes::kBrowserLaunchFailed, "Chromium wrote no DevToolsActivePort: " +
                                                 tail.substr(tail.size() > 800 ? tail.size() - 800 : 0));
  }

  keel::testing::TempDir dir_;
  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  std::thread thread_;
  std::shared_ptr<CdpClient> client_;
  pid_t pid_ = 0;
  int port_ = 0;
};

// Denies one origin (the site's third listener, as localhost), allows every other.
class DenyThirdListener final : public OriginPolicy {
 public:
  explicit DenyThirdListener(std::string denied) : denied_(std::move(denied)) {}
  bool allows_navigation(const std::string&, const std::string& origin) const override {
    return origin != denied_;
  }

 private:
  std::string denied_;
};

// A keel process attached to the person's browser: the runtime and the tools over it. Destroying it is a
// keel shutdown.
struct AttachedKeel {
  std::shared_ptr<BrowserRuntime> runtime;
  std::unique_ptr<ToolRegistry> registry;

  void stop() {
    registry.reset();
    // The runtime must go on this thread: an operation's coroutine lets go of it just after answering.
    const auto deadline = std::chrono::steady_clock::now() + kCallDeadline;
    while (runtime && runtime.use_count() > 1 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::yield();
    }
    runtime.reset();
  }
  ~AttachedKeel() { stop(); }
};

class BrowserAttach : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    model_server::StaticSiteOptions options;
    options.root = KEEL_BROWSER_PAGES;
    options.listeners = 3;  // the third is the origin keel's policy denies
    Result<std::unique_ptr<model_server::StaticSite>> site = model_server::StaticSite::start(options);
    ASSERT_TRUE(site) << site.error().to_string();
    site_ = std::move(*site);
  }
  static void TearDownTestSuite() { site_.reset(); }

  void SetUp() override {
    ASSERT_NE(site_, nullptr);
    Result<std::unique_ptr<PersonsBrowser>> started = PersonsBrowser::start();
    KEEL_SKIP_WITHOUT_CHROMIUM(started);
    person_ = std::move(*started);
    thread_ = ::testing::UnitTest::GetInstance()->current_test_info()->name();
  }
  void TearDown() override {
    keel_.stop();
    person_.reset();  // kills the person's browser
  }

  void attach(bool own_context, std::string endpoint = "") {
    RuntimeOptions options;
    AttachSpec spec;
    spec.endpoint = endpoint.empty() ? person_->endpoint() : std::move(endpoint);
    spec.own_context = own_context;
    options.attach = spec;
    options.policy = std::make_shared<DenyThirdListener>(denied_origin());
    options.navigation_timeout = std::chrono::seconds(30);  // longer than any step here: a kill ends a wait
    keel_.runtime = BrowserRuntime::create(std::move(options));
    keel_.registry = std::make_unique<ToolRegistry>();
    Result<void> registered = register_browser_tools(*keel_.registry, keel_.runtime);
    ASSERT_TRUE(registered) << registered.error().to_string();
  }

  Outcome call(const std::string& tool, json params) {
    return call_tool(*keel_.registry, thread_, tool, std::move(params));
  }

  // The browser context of keel's tabs, as the runtime's connection knows it ("" = the default one).
  std::string keel_context() {
    BrowserOp read = [](std::shared_ptr<BrowserThread> thread,
                        CancellationToken) -> boost::asio::awaitable<Result<ToolResult>> {
      ToolResult result;
      ContentBlock block;
      block.text = thread->connection()->browser_context_id();
      result.content.push_back(block);
      co_return result;
    };
    Result<ToolResult> result = run_browser_op(*keel_.runtime, thread_, CancellationToken(), std::move(read));
    EXPECT_TRUE(result) << result.error().to_string();
    return result && !result->content.empty() ? result->content.front().text : "";
  }

  // The target of the page at a URL containing `part` (null when there is none).
  json page_at(const std::string& part) {
    for (const json& info : person_->pages()) {
      if (has_text(info.value("url", ""), part)) return info;
    }
    return nullptr;
  }

  std::string page(const std::string& path, size_t listener = 0) const {
    return site_->origin(listener) + "/" + path;
  }
  std::string denied_origin() const { return site_->origin(2, "localhost"); }

  static inline std::unique_ptr<model_server::StaticSite> site_;
  std::unique_ptr<PersonsBrowser> person_;
  AttachedKeel keel_;
  std::string thread_;
};

TEST_F(BrowserAttach, KeelWorksInItsOwnContextAndLeavesThePersonsTabsAlone) {
  auto persons_tab = person_->open_tab(page("login.html"));
  ASSERT_TRUE(persons_tab) << persons_tab.error().to_string();
  const std::string person_session = persons_tab->second;
  attach(/*own_context=*/true);

  Outcome opened = call("browser_navigate", {{"url", page("never-loads.html")}});
  ASSERT_TRUE(opened.result) << opened.text();
  Outcome snapshot = call("browser_snapshot", json::object());
  ASSERT_TRUE(snapshot.result) << snapshot.text();
  const std::string button = ref_of(snapshot.text(), "button \"Try me\"");
  ASSERT_NE(button, "") << snapshot.text();
  Outcome clicked = call("browser_click", {{"ref", button}});
  ASSERT_TRUE(clicked.result) << clicked.text();
  Outcome after = call("browser_snapshot", json::object());
  EXPECT_TRUE(has_text(after.text(), "Still works")) << after.text();

  // keel lists only its own tab.
  Outcome tabs = call("browser_list_tabs", json::object());
  ASSERT_TRUE(tabs.result) << tabs.text();
  EXPECT_TRUE(has_text(tabs.text(), "never-loads.html")) << tabs.text();
  EXPECT_FALSE(has_text(tabs.text(), "login.html")) << tabs.text();

  // keel's tab is in a context of its own, not the person's.
  const std::string context = keel_context();
  EXPECT_NE(context, "");
  const json keels_page = page_at("never-loads.html");
  const json persons_page = page_at("login.html");
  ASSERT_TRUE(keels_page.is_object());
  ASSERT_TRUE(persons_page.is_object());
  EXPECT_EQ(keels_page.value("browserContextId", ""), context);
  EXPECT_NE(persons_page.value("browserContextId", ""), context);

  // The person's tab was not navigated and still works normally, even on the origin keel's guard denies
  // (keel's guard holds only keel's sessions), and a tab the person opens now runs at once (nothing makes
  // it wait for a debugger).
  Result<std::string> moved = person_->navigate(person_session, denied_origin() + "/forms.html");
  EXPECT_TRUE(moved) << moved.error().to_string();
  auto new_tab = person_->open_tab(page("dialogs.html"));
  EXPECT_TRUE(new_tab) << new_tab.error().to_string();
  Outcome still = call("browser_list_tabs", json::object());
  EXPECT_FALSE(has_text(still.text(), "forms.html")) << still.text();
  EXPECT_FALSE(has_text(still.text(), "dialogs.html")) << still.text();

  // keel's shutdown: its context and tab are gone; the browser and the person's tabs stay.
  keel_.stop();
  EXPECT_TRUE(person_->alive());
  EXPECT_TRUE(page_at("never-loads.html").is_null());
  EXPECT_TRUE(page_at("forms.html").is_object());
  EXPECT_TRUE(page_at("dialogs.html").is_object());
  Result<json> contexts = person_->call("Target.getBrowserContexts", json::object());
  ASSERT_TRUE(contexts) << contexts.error().to_string();
  for (const json& id : (*contexts)["browserContextIds"]) EXPECT_NE(id.get<std::string>(), context);
}

TEST_F(BrowserAttach, InTheDefaultContextKeelClosesOnlyItsOwnTabsAtShutdown) {
  auto persons_tab = person_->open_tab(page("login.html"));
  ASSERT_TRUE(persons_tab) << persons_tab.error().to_string();
  attach(/*own_context=*/false);
  Outcome opened = call("browser_navigate", {{"url", page("forms.html")}});
  ASSERT_TRUE(opened.result) << opened.text();
  EXPECT_EQ(keel_context(), "");
  const json keels_page = page_at("forms.html");
  const json persons_page = page_at("login.html");
  ASSERT_TRUE(keels_page.is_object());
  ASSERT_TRUE(persons_page.is_object());
  // The person's profile: the same context as the person's tab.
  EXPECT_EQ(keels_page.value("browserContextId", ""), persons_page.value("browserContextId", ""));
  Outcome tabs = call("browser_list_tabs", json::object());
  EXPECT_FALSE(has_text(tabs.text(), "login.html")) << tabs.text();

  keel_.stop();
  EXPECT_TRUE(person_->alive());
  EXPECT_TRUE(page_at("forms.html").is_null());
  EXPECT_TRUE(page_at("login.html").is_object());
  Result<std::string> reloaded = person_->navigate(persons_tab->second, page("overlay.html"));
  EXPECT_TRUE(reloaded) << reloaded.error().to_string();
}

TEST_F(BrowserAttach, TheNavigationGuardHoldsInKeelsTabsAndTheirPopups) {
  attach(/*own_context=*/true);
  const std::string denied = denied_origin() + "/overlay.html";
  Outcome refused = call("browser_navigate", {{"url", page("redirect?to=" + denied)}});
  EXPECT_EQ(refused.code(), codes::kBrowserNavigationRefused) << refused.text();
  EXPECT_TRUE(has_text(refused.text(), "localhost")) << refused.text();

  // A popup a keel tab opens is keel's too (adopted, listed, and guarded).
  Outcome opened = call("browser_navigate", {{"url", page("popup.html")}});
  ASSERT_TRUE(opened.result) << opened.text();
  Outcome snapshot = call("browser_snapshot", json::object());
  const std::string open_window = ref_of(snapshot.text(), "button \"Open a popup window\"");
  ASSERT_NE(open_window, "") << snapshot.text();
  Outcome clicked = call("browser_click", {{"ref", open_window}});
  ASSERT_TRUE(clicked.result) << clicked.text();
  Outcome tabs = call("browser_list_tabs", json::object());
  EXPECT_TRUE(has_text(tabs.text(), "popup-target.html?via=window.open")) << tabs.text();
}

TEST_F(BrowserAttach, NothingListeningIsAnAttachFailureNamingTheEndpoint) {
  // A port nothing listens on: bound, then closed again.
  asio::io_context io;
  asio::ip::tcp::acceptor probe(io, asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  const std::string endpoint = "http://127.0.0.1:" + std::to_string(probe.local_endpoint().port());
  probe.close();
  attach(/*own_context=*/true, endpoint);
  Outcome opened = call("browser_navigate", {{"url", page("index.html")}});
  EXPECT_EQ(opened.code(), codes::kBrowserAttachFailed) << opened.text();
  EXPECT_TRUE(has_text(opened.text(), endpoint)) << opened.text();
  EXPECT_TRUE(person_->alive());
}

TEST_F(BrowserAttach, ABrowserKilledMidCallFailsThatCallAndTheNextSaysItIsGone) {
  attach(/*own_context=*/true);
  Outcome opened = call("browser_navigate", {{"url", page("index.html")}});
  ASSERT_TRUE(opened.result) << opened.text();
  // A navigation to a server that never answers waits (30 s) until the browser is killed under it.
  std::future<Outcome> hanging = std::async(std::launch::async, [this] {
    return call("browser_navigate", {{"url", page("hang")}});
  });
  ASSERT_TRUE(site_->wait_for_request("/hang", std::chrono::seconds(20)));
  const std::string endpoint = person_->endpoint();
  person_->kill_now();
  Outcome killed = hanging.get();
  EXPECT_EQ(killed.code(), codes::kBrowserCrashed) << killed.text();
  Outcome next = call("browser_snapshot", json::object());
  EXPECT_EQ(next.code(), codes::kBrowserAttachFailed) << next.text();
  EXPECT_TRUE(has_text(next.text(), endpoint)) << next.text();
}

}  // namespace
}  // namespace keel::browser
