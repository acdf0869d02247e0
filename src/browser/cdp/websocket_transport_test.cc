// The WebSocket attach transport refuses endpoints it must never reach before any I/O, and reports a loopback
// port where nothing listens as browser.attach_failed. (Attaching to a real Chromium: BrowserLaunch suite.)
#include "browser/cdp/websocket_transport.h"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <optional>
#include <string>

#include "browser/browser_errors.h"

namespace keel::browser {
namespace {

namespace asio = boost::asio;

Result<std::unique_ptr<CdpTransport>> connect(std::string endpoint) {
  asio::io_context io;
  std::optional<Result<std::unique_ptr<CdpTransport>>> outcome;
  asio::co_spawn(io,
                 connect_websocket(io.get_executor(), std::move(endpoint), 1 << 20, std::chrono::seconds(10)),
                 [&](const std::exception_ptr& error, Result<std::unique_ptr<CdpTransport>> result) {
                   if (error) std::rethrow_exception(error);
                   outcome = std::move(result);
                 });
  io.run();
  EXPECT_TRUE(outcome.has_value());
  return std::move(*outcome);
}

TEST(WebSocketTransportTest, EndpointsOffThisMachineOrWithOtherSchemesAreRefused) {
  for (const char* endpoint : {"ws://example.com:9222/devtools/browser/x", "http://10.0.0.1:9222",
                               "wss://127.0.0.1:9222/devtools/browser/x", "https://localhost:9222",
                               "file:///tmp/x", "127.0.0.1:9222", "", "ws://127.1:9222/x"}) {
    auto result = connect(endpoint);
    ASSERT_FALSE(result) << endpoint;
    EXPECT_EQ(result.error().code(), codes::kBrowserAttachFailed) << endpoint;
  }
}

TEST(WebSocketTransportTest, ALoopbackPortWithNothingListeningIsAttachFailed) {
  // A port that was free a moment ago: bind one, note it, close it.
  asio::io_context io;
  asio::ip::tcp::acceptor acceptor(io, asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  const unsigned short port = acceptor.local_endpoint().port();
  acceptor.close();
  for (const std::string scheme : {"http://", "ws://"}) {
    auto result = connect(scheme + "127.0.0.1:" + std::to_string(port) + "/devtools/browser/x");
    ASSERT_FALSE(result);
    EXPECT_EQ(result.error().code(), codes::kBrowserAttachFailed);
  }
}

}  // namespace
}  // namespace keel::browser
