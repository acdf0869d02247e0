// browser/browser_test_support.h — a real Chromium for the browser test suites (CTest label browser).
//
// One TestBrowser per gtest suite (start it in SetUpTestSuite, keep it in a static of the fixture): a launch
// costs 1-2 s here, and keel_browser_test() in cmake/KeelBrowserTest.cmake runs each suite as its own CTest
// test under RESOURCE_LOCK chromium. When Chromium cannot start, the suite's tests skip with the reason and
// the tail of Chromium's stderr; with KEEL_REQUIRE_CHROMIUM=1 in the environment (scripts/test.sh sets it,
// and setup.sh installs Chromium) they fail instead, so a broken install cannot hide behind skips.
//
// The browser's process, client and every coroutine run on the TestBrowser's own io thread; run() hands it a
// coroutine and waits for its result. Tests wait on events with deadlines (EventWaiter, call timeouts),
// never by sleeping.
#pragma once

#include <gtest/gtest.h>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <future>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "browser/browser_process.h"
#include "browser/cdp/cdp_client.h"
#include "keel/error.h"

namespace keel::browser::testing {

class TestBrowser {
 public:
  // Starts Chromium (with `extra_args` added to keel's) and waits (up to 20 s) for its first reply,
  // Browser.getVersion.
  static Result<std::unique_ptr<TestBrowser>> launch(std::vector<std::string> extra_args = {});
  // The same with a whole launch spec (headed, window size, ...); KEEL_CHROMIUM still names the executable.
  static Result<std::unique_ptr<TestBrowser>> launch_with(LaunchSpec spec);
  ~TestBrowser();
  TestBrowser(const TestBrowser&) = delete;
  TestBrowser& operator=(const TestBrowser&) = delete;

  // Runs `work` on the browser's io thread and returns its result (never call it from that thread).
  template <typename T>
  T run(boost::asio::awaitable<T> work) {
    std::future<T> done = boost::asio::co_spawn(io_, std::move(work), boost::asio::use_future);
    return done.get();
  }

  // Use these only on the io thread (inside run()).
  CdpClient& client() { return *client_; }
  BrowserProcess& process() { return *process_; }
  boost::asio::any_io_executor executor() { return io_.get_executor(); }

  // Browser.getVersion's result.
  const nlohmann::json& version() const { return version_; }

 private:
  TestBrowser();
  static boost::asio::awaitable<Result<nlohmann::json>> start(TestBrowser* browser, LaunchSpec spec);
  static boost::asio::awaitable<bool> stop(TestBrowser* browser);

  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
  std::thread thread_;
  std::unique_ptr<BrowserProcess> process_;
  std::shared_ptr<CdpClient> client_;
  nlohmann::json version_;
};

// True when KEEL_REQUIRE_CHROMIUM=1: a browser that cannot start is a failure, not a skip.
bool chromium_required();

}  // namespace keel::browser::testing

// In a browser fixture's SetUp(), with the suite's Result<std::unique_ptr<TestBrowser>>: skips the test when
// Chromium could not start, or fails it when KEEL_REQUIRE_CHROMIUM=1.
#define KEEL_SKIP_WITHOUT_CHROMIUM(launched)                                                             \
  do {                                                                                                   \
    if (!(launched)) {                                                                                   \
      if (::keel::browser::testing::chromium_required()) {                                               \
        FAIL() << "Chromium cannot start (KEEL_REQUIRE_CHROMIUM=1): " << (launched).error().to_string(); \
      }                                                                                                  \
      GTEST_SKIP() << "Chromium cannot start: " << (launched).error().to_string();                       \
    }                                                                                                    \
  } while (false)

namespace keel::browser::testing {

// A fixture base: one Chromium for the suite, launched in SetUpTestSuite and stopped after its last test; a
// test skips (or fails under KEEL_REQUIRE_CHROMIUM=1) when it could not start. `Suite` is the fixture class
// itself, so that every suite gets its own statics and its own browser.
template <typename Suite>
class BrowserSuite : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { launched_.emplace(TestBrowser::launch()); }
  static void TearDownTestSuite() { launched_.reset(); }
  void SetUp() override { KEEL_SKIP_WITHOUT_CHROMIUM(*launched_); }
  static TestBrowser& browser() { return *launched_->value(); }

  inline static std::optional<Result<std::unique_ptr<TestBrowser>>> launched_;
};

}  // namespace keel::browser::testing
