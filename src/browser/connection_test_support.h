// browser/connection_test_support.h — fixtures for the browser suites that drive a real Chromium through
// keel's BrowserConnection: one browser, one StaticSite serving the test pages (tests/e2e/browser/pages) on
// two origins, and one connection per suite, plus the small coroutines every such suite needs.
//
// Header-only so that a suite compiles it with its own KEEL_BROWSER_PAGES (cmake/KeelBrowserTest.cmake).
// `Suite` is the fixture class itself, so that every suite gets its own statics and its own browser.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "browser/browser_connection.h"
#include "browser/browser_test_support.h"
#include "keel/cancellation.h"
#include "model_server/static_site.h"

namespace keel::browser::testing {

inline constexpr std::chrono::seconds kConnectionStepTimeout{20};

// A BrowserConnection started on `browser`'s client (run it on the browser's thread).
inline boost::asio::awaitable<Result<std::shared_ptr<BrowserConnection>>> connect(TestBrowser* browser,
                                                                                  ConnectionOptions options) {
  co_return co_await BrowserConnection::start(browser->client().shared_from_this(), std::move(options));
}

// Drops the connection on the browser's thread (its subscriptions are released there).
inline boost::asio::awaitable<bool> release(std::shared_ptr<BrowserConnection>* connection) {
  connection->reset();
  co_return true;
}

// A new tab navigated to `url`: its id.
inline boost::asio::awaitable<Result<int64_t>> open_at(std::shared_ptr<BrowserConnection> connection,
                                                       std::string url) {
  Result<int64_t> tab = co_await connection->create_tab(kConnectionStepTimeout);
  if (!tab) co_return fail(tab.error());
  CancellationToken never_cancelled;
  Result<void> navigated =
      co_await connection->navigate(*tab, std::move(url), kConnectionStepTimeout, never_cancelled);
  if (!navigated) co_return fail(navigated.error());
  co_return *tab;
}

// A suite's browser (as BrowserSuite's) with the test pages served and a connection to the browser. A suite
// that needs its own connection options defines SetUpTestSuite() as launch_and_serve(), then
// connect_with(options).
template <typename Suite>
class ConnectedBrowserSuite : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (launch_and_serve()) connect_with(ConnectionOptions{});
  }
  static void TearDownTestSuite() {
    if (connection_) browser().run(release(&connection_));
    site_.reset();
    launched_.reset();
  }
  void SetUp() override {
    KEEL_SKIP_WITHOUT_CHROMIUM(*launched_);
    ASSERT_NE(site_, nullptr);
    ASSERT_NE(connection_, nullptr);
  }

  // Launches the browser and serves the pages on two listeners (two origins, so that a frame of the second
  // runs out of process). False when either failed (the tests then skip or fail in SetUp()).
  static bool launch_and_serve() {
    launched_.emplace(TestBrowser::launch());
    if (!*launched_) return false;
    model_server::StaticSiteOptions site_options;
    site_options.root = KEEL_BROWSER_PAGES;
    site_options.listeners = 2;
    auto site = model_server::StaticSite::start(site_options);
    EXPECT_TRUE(site) << site.error().to_string();
    if (!site) return false;
    site_ = std::move(*site);
    return true;
  }
  static void connect_with(ConnectionOptions options) {
    auto connection = browser().run(connect(&browser(), std::move(options)));
    ASSERT_TRUE(connection) << connection.error().to_string();
    connection_ = *connection;
  }
  static TestBrowser& browser() { return *launched_->value(); }

  inline static std::optional<Result<std::unique_ptr<TestBrowser>>> launched_;
  inline static std::unique_ptr<model_server::StaticSite> site_;
  inline static std::shared_ptr<BrowserConnection> connection_;
};

}  // namespace keel::browser::testing
