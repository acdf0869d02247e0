// BrowserProcess without Chromium: the argument list, the choice of executable, and a stand-in "browser"
// (a shell script that echoes fd 3 to fd 4) to check the pipe wiring, the exit watch and the group kill.
#include "browser/browser_process.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <filesystem>
#include <fstream>
#include <optional>

#include "browser/browser_errors.h"
#include "browser/cdp/cdp_client.h"

namespace keel::browser {
namespace {

namespace asio = boost::asio;
namespace fs = std::filesystem;

bool has(const std::vector<std::string>& args, const std::string& arg) {
  return std::find(args.begin(), args.end(), arg) != args.end();
}

TEST(ChromiumArgsTest, HeadlessPipeAndTheProfileAreAlwaysThere) {
  LaunchSpec spec;
  spec.no_sandbox = false;
  const auto args = chromium_args(spec, "/tmp/p");
  EXPECT_TRUE(has(args, "--headless"));
  EXPECT_TRUE(has(args, "--remote-debugging-pipe"));
  EXPECT_TRUE(has(args, "--user-data-dir=/tmp/p"));
  EXPECT_TRUE(has(args, "--window-size=1280,800"));
  EXPECT_TRUE(has(args, "--disable-background-networking"));
  EXPECT_FALSE(has(args, "--no-sandbox"));
  EXPECT_FALSE(has(args, "--disable-dev-shm-usage"));
  EXPECT_EQ(args.back(), "about:blank");
}

TEST(ChromiumArgsTest, SandboxHeadedDevShmAndExtraArgsFollowTheSpec) {
  LaunchSpec spec;
  spec.headless = false;
  spec.no_sandbox = true;
  spec.disable_dev_shm = true;
  spec.window_size = "800,600";
  spec.extra_args = {"--lang=de"};
  const auto args = chromium_args(spec, "/p");
  EXPECT_FALSE(has(args, "--headless"));
  EXPECT_TRUE(has(args, "--no-sandbox"));
  EXPECT_TRUE(has(args, "--disable-dev-shm-usage"));
  EXPECT_TRUE(has(args, "--window-size=800,600"));
  ASSERT_GE(args.size(), 2u);
  EXPECT_EQ(args[args.size() - 2], "--lang=de");  // the page to open stays last
}

class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "keel-process-test-XXXXXX").string();
    path_ = ::mkdtemp(pattern.data());
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

TEST(ResolveChromiumExecutableTest, TheDebianWrapperIsReplacedByTheRealBinaryWhenItExists) {
  TempDir dir;
  const fs::path real = dir.path() / "chromium";
  EXPECT_EQ(resolve_chromium_executable("/usr/bin/chromium", real), "/usr/bin/chromium");  // absent
  std::ofstream(real) << "binary";
  EXPECT_EQ(resolve_chromium_executable("/usr/bin/chromium", real), real);
  EXPECT_EQ(resolve_chromium_executable("/opt/chrome/chrome", real), "/opt/chrome/chrome");
}

TEST(BrowserProcessTest, AMissingExecutableIsLaunchFailed) {
  asio::io_context io;
  LaunchSpec spec;
  spec.executable = "/nonexistent/keel-no-browser";
  auto launched = BrowserProcess::launch(io.get_executor(), spec);
  ASSERT_FALSE(launched);
  EXPECT_EQ(launched.error().code(), codes::kBrowserLaunchFailed);
  EXPECT_NE(launched.error().message().find("/nonexistent/keel-no-browser"), std::string::npos);
}

// A stand-in browser: echoes every byte of fd 3 to fd 4, so a CDP message comes back as it was sent.
fs::path write_echo_browser(const fs::path& dir) {
  const fs::path script = dir / "echo-browser";
  std::ofstream(script) << "#!/bin/sh\nexec cat <&3 >&4\n";
  fs::permissions(script, fs::perms::owner_all);
  return script;
}

// Sends one command through the stand-in browser (its echo carries the command's id, so it reads as the
// reply), then kills the browser's group and waits for its exit.
asio::awaitable<Result<nlohmann::json>> echo_then_kill(CdpClient* client, BrowserProcess* process) {
  nlohmann::json params = {{"greeting", "hello"}};
  CallOptions options;
  options.timeout = std::chrono::seconds(20);
  Result<nlohmann::json> echoed =
      co_await client->call("Echo.hello", std::move(params), "", std::move(options));
  process->signal_group(SIGKILL);
  const int status = co_await process->wait_exit();
  (void)status;  // read by the test through exit_status()
  co_return echoed;
}

TEST(BrowserProcessTest, TheChildTalksOnFds3And4AndItsGroupKillIsSeenAsExitAndEndOfStream) {
  ::signal(SIGPIPE, SIG_IGN);
  TempDir dir;
  asio::io_context io;
  LaunchSpec spec;
  spec.executable = write_echo_browser(dir.path());
  auto launched = BrowserProcess::launch(io.get_executor(), spec);
  ASSERT_TRUE(launched) << launched.error().to_string();
  std::unique_ptr<BrowserProcess> process = std::move(*launched);
  const fs::path profile = process->profile_dir();
  EXPECT_TRUE(fs::is_directory(profile));
  EXPECT_EQ(::getpgid(process->pid()), process->pid()) << "the browser leads its own process group";

  auto client = CdpClient::create(io.get_executor(), process->take_transport());
  client->start();
  std::optional<Error> closed;
  auto on_close = client->on_close([&](const Error& why) { closed = why; });
  std::optional<Result<nlohmann::json>> echoed;
  asio::co_spawn(io, echo_then_kill(client.get(), process.get()),
                 [&](const std::exception_ptr& error, Result<nlohmann::json> result) {
                   if (error) std::rethrow_exception(error);
                   echoed = std::move(result);
                 });
  io.run();  // ends once the exit was seen and the pipe reached its end
  ASSERT_TRUE(echoed.has_value());
  ASSERT_TRUE(*echoed) << echoed->error().to_string();
  ASSERT_TRUE(closed.has_value());
  EXPECT_EQ(closed->code(), codes::kBrowserDisconnected);
  const std::optional<int> status = process->exit_status();
  ASSERT_TRUE(status.has_value());
  ASSERT_TRUE(WIFSIGNALED(*status));
  EXPECT_EQ(WTERMSIG(*status), SIGKILL);
  EXPECT_EQ(BrowserProcess::describe_status(*status), "was killed by signal 9");
  process.reset();
  EXPECT_FALSE(fs::exists(profile)) << "the temporary profile goes with the process";
}

TEST(BrowserProcessTest, TerminateEndsTheProcessAndTheDestructorOfARunningOneKillsIt) {
  TempDir dir;
  asio::io_context io;
  LaunchSpec spec;
  spec.executable = write_echo_browser(dir.path());
  auto first = BrowserProcess::launch(io.get_executor(), spec);
  ASSERT_TRUE(first) << first.error().to_string();
  std::optional<int> status;
  asio::co_spawn(io, (*first)->terminate(std::chrono::milliseconds(5'000)),
                 [&](const std::exception_ptr&, int wait_status) { status = wait_status; });
  io.run();
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(WIFSIGNALED(*status) && WTERMSIG(*status) == SIGTERM)
      << BrowserProcess::describe_status(*status);

  auto second = BrowserProcess::launch(io.get_executor(), spec);
  ASSERT_TRUE(second) << second.error().to_string();
  const pid_t pid = (*second)->pid();
  second->reset();
  EXPECT_EQ(::kill(pid, 0), -1) << "destroyed while running: killed and reaped";
}

}  // namespace
}  // namespace keel::browser
