// BrowserHeaded: `[browser] headless = false` launches a real headed Chromium. The suite starts its own X
// server (Xvfb, which setup.sh installs) and launches keel's Chromium with a window on it: the browser must
// answer, say it is not headless, and render a page at the window's size.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "browser/browser_errors.h"
#include "browser/browser_test_support.h"

extern char** environ;  // NOLINT(readability-redundant-declaration): posix_spawnp passes it on

namespace keel::browser {
namespace {

namespace asio = boost::asio;
using nlohmann::json;
using testing::TestBrowser;

constexpr std::chrono::seconds kHeadedCallTimeout{20};

// An X server of the test's own on a free display (Xvfb -displayfd), killed by pid when destroyed.
class XServer {
 public:
  static Result<std::unique_ptr<XServer>> start() {
    std::array<int, 2> pipe_fds{};
    if (pipe2(pipe_fds.data(), O_CLOEXEC) != 0) return fail(codes::kBrowserLaunchFailed, "pipe failed");
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 3);  // dup2 clears CLOEXEC on fd 3
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
    std::vector<std::string> args = {"Xvfb", "-displayfd",  "3",         "-screen",
                                     "0",    "1280x800x24", "-nolisten", "tcp"};
    std::vector<char*> argv;
    for (std::string& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    pid_t pid = 0;
    const int spawned = posix_spawnp(&pid, "Xvfb", &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    close(pipe_fds[1]);
    if (spawned != 0) {
      close(pipe_fds[0]);
      return fail(codes::kBrowserLaunchFailed, "cannot start Xvfb (is the xvfb package installed?)");
    }
    auto server = std::make_unique<XServer>(pid);
    // Xvfb writes the display number and a newline once it accepts clients (or exits, closing the pipe).
    std::string number;
    char c = 0;
    while (read(pipe_fds[0], &c, 1) == 1 && c != '\n') number += c;
    close(pipe_fds[0]);
    if (number.empty()) return fail(codes::kBrowserLaunchFailed, "Xvfb did not report a display");
    server->display_ = ":" + number;
    return server;
  }
  explicit XServer(pid_t pid) : pid_(pid) {}
  ~XServer() {
    kill(pid_, SIGTERM);
    int status = 0;
    waitpid(pid_, &status, 0);
  }
  XServer(const XServer&) = delete;
  XServer& operator=(const XServer&) = delete;

  const std::string& display() const { return display_; }

 private:
  pid_t pid_;
  std::string display_;
};

// A page target at `url`, attached flattened, and a screenshot of it: the PNG's width and height.
asio::awaitable<Result<std::array<int64_t, 2>>> screenshot_size(CdpClient* client, std::string url) {
  CallOptions options;
  options.timeout = kHeadedCallTimeout;
  json create = {{"url", url}};
  Result<json> created = co_await client->call("Target.createTarget", std::move(create), "", options);
  if (!created) co_return fail(created.error());
  json attach = {{"targetId", (*created)["targetId"]}, {"flatten", true}};
  Result<json> attached = co_await client->call("Target.attachToTarget", std::move(attach), "", options);
  if (!attached) co_return fail(attached.error());
  const std::string session = (*attached)["sessionId"].get<std::string>();
  json format = {{"format", "png"}};
  Result<json> shot = co_await client->call("Page.captureScreenshot", std::move(format), session, options);
  if (!shot) co_return fail(shot.error());
  if (!shot->contains("data") || (*shot)["data"].get<std::string>().empty()) {
    co_return fail(codes::kBrowserCdpError, "an empty screenshot");
  }
  // A new window has no size until the window manager maps it, which on a loaded machine can come after
  // the page loaded: the page waits for its first non-empty size (a resize event or a frame), bounded by the
  // call's timeout, instead of reading 0x0 too early.
  json expression = {{"expression",
                      "new Promise(done => { const check = () => innerWidth > 0 && innerHeight > 0"
                      " ? done([innerWidth, innerHeight]) : requestAnimationFrame(check);"
                      " addEventListener('resize', check); check(); })"},
                     {"awaitPromise", true},
                     {"returnByValue", true}};
  Result<json> viewport = co_await client->call("Runtime.evaluate", std::move(expression), session, options);
  if (!viewport) co_return fail(viewport.error());
  const json& size = (*viewport)["result"]["value"];
  co_return std::array<int64_t, 2>{size[0].get<int64_t>(), size[1].get<int64_t>()};
}

class BrowserHeaded : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    Result<std::unique_ptr<XServer>> x = XServer::start();
    if (!x) {
      launched_.emplace(fail(x.error()));
      return;
    }
    x_ = std::move(*x);
    // The browser inherits keel's environment, as it does in a person's desktop session. This suite is a
    // process of its own (one CTest test per suite), so setting DISPLAY here reaches no other test.
    setenv("DISPLAY", x_->display().c_str(), 1);
    LaunchSpec spec;
    spec.headless = false;
    spec.window_size = "900,700";
    launched_.emplace(TestBrowser::launch_with(std::move(spec)));
  }
  static void TearDownTestSuite() {
    launched_.reset();
    x_.reset();
  }
  void SetUp() override { KEEL_SKIP_WITHOUT_CHROMIUM(*launched_); }
  static TestBrowser& browser() { return *launched_->value(); }

  inline static std::unique_ptr<XServer> x_;
  inline static std::optional<Result<std::unique_ptr<TestBrowser>>> launched_;
};

TEST_F(BrowserHeaded, HeadlessFalseLaunchesAWindowedBrowserThatRendersPages) {
  // A headless Chromium names itself HeadlessChrome in its product and user agent; a windowed one does not.
  const std::string product = browser().version().value("product", "");
  const std::string agent = browser().version().value("userAgent", "");
  EXPECT_NE(product.find("Chrome/"), std::string::npos) << product;
  EXPECT_EQ(product.find("Headless"), std::string::npos) << product;
  EXPECT_EQ(agent.find("Headless"), std::string::npos) << agent;

  Result<std::array<int64_t, 2>> size =
      browser().run(screenshot_size(&browser().client(), "data:text/html,<h1>a window</h1>"));
  ASSERT_TRUE(size) << size.error().to_string();
  // The page's viewport is the window's inside, so at most the 900x700 window and not the 1280x800 screen.
  EXPECT_GT((*size)[0], 0);
  EXPECT_LE((*size)[0], 900);
  EXPECT_GT((*size)[1], 0);
  EXPECT_LE((*size)[1], 700);
}

}  // namespace
}  // namespace keel::browser
