// browser/browser_test_support.cc — see browser_test_support.h.
#include "browser/browser_test_support.h"

#include <chrono>
#include <cstdlib>
#include <string_view>

#include "browser/browser_errors.h"

namespace keel::browser::testing {

namespace asio = boost::asio;
using nlohmann::json;

namespace {
constexpr std::chrono::seconds kFirstReplyTimeout{20};
constexpr size_t kStderrTail = 2000;
}  // namespace

TestBrowser::TestBrowser() : work_(asio::make_work_guard(io_)), thread_([this] { io_.run(); }) {}

TestBrowser::~TestBrowser() {
  // Close the connection and kill the browser on the io thread, which owns them; then let the thread end.
  (void)run(stop(this));  // always true: it only sequences the teardown
  work_.reset();
  io_.stop();
  thread_.join();
}

asio::awaitable<bool> TestBrowser::stop(TestBrowser* browser) {
  if (browser->client_)
    browser->client_->close(Error(codes::kBrowserDisconnected, "the test browser stopped"));
  browser->client_.reset();
  browser->process_.reset();  // kills the group if it still runs, reaps it, removes its profile
  co_return true;
}

Result<std::unique_ptr<TestBrowser>> TestBrowser::launch(std::vector<std::string> extra_args) {
  LaunchSpec spec;
  spec.extra_args = std::move(extra_args);
  return launch_with(std::move(spec));
}

Result<std::unique_ptr<TestBrowser>> TestBrowser::launch_with(LaunchSpec spec) {
  std::unique_ptr<TestBrowser> browser(new TestBrowser());
  Result<json> version = browser->run(start(browser.get(), std::move(spec)));
  if (!version) return fail(version.error());
  browser->version_ = std::move(*version);
  return browser;
}

asio::awaitable<Result<json>> TestBrowser::start(TestBrowser* browser, LaunchSpec spec) {
  if (const char* executable = std::getenv("KEEL_CHROMIUM"); executable != nullptr && *executable != '\0') {
    spec.executable = executable;
  }
  auto process = BrowserProcess::launch(browser->io_.get_executor(), std::move(spec));
  if (!process) co_return fail(process.error());
  browser->process_ = std::move(*process);
  browser->client_ = CdpClient::create(browser->io_.get_executor(), browser->process_->take_transport());
  browser->client_->start();
  CallOptions options;
  options.timeout = kFirstReplyTimeout;
  json no_params = json::object();
  Result<json> version =
      co_await browser->client_->call("Browser.getVersion", std::move(no_params), "", std::move(options));
  if (!version) {
    co_return fail(version.error().with_context(
        "Chromium did not answer (stderr: " + browser->process_->stderr_tail(kStderrTail) + ")"));
  }
  co_return version;
}

bool chromium_required() {
  const char* required = std::getenv("KEEL_REQUIRE_CHROMIUM");
  return required != nullptr && std::string_view(required) == "1";
}

}  // namespace keel::browser::testing
