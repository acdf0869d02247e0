// What only the WebSocket transport does: the token check before the upgrade, many clients at once.
#include "transport/websocket_server.h"

#include <gtest/gtest.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>

#include "engine/engine_harness.h"
#include "transport/rpc_test_client.h"

namespace keel {
namespace {

namespace beast = boost::beast;
using nlohmann::json;
using testing::EngineHarness;
using testing::ScriptedResponse;
using testing::WsTestClient;

// Tries the upgrade with `header_token` (Authorization: Bearer) and `target`; returns the HTTP status.
unsigned upgrade_status(uint16_t port, const std::string& header_token, const std::string& target) {
  boost::asio::io_context io;
  beast::websocket::stream<boost::asio::ip::tcp::socket> ws(io);
  boost::asio::ip::tcp::resolver resolver(io);
  boost::asio::connect(ws.next_layer(), resolver.resolve("127.0.0.1", std::to_string(port)));
  ws.set_option(beast::websocket::stream_base::decorator([header_token](beast::websocket::request_type& r) {
    if (!header_token.empty()) r.set(beast::http::field::authorization, "Bearer " + header_token);
  }));
  beast::websocket::response_type response;
  beast::error_code error;
  ws.handshake(response, "127.0.0.1", target, error);
  return response.result_int();
}

class WebSocketServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    h.start();
    WebSocketServerOptions options;
    options.token = "s3cret";
    auto started = WebSocketServer::start(*h.transport, options);
    ASSERT_TRUE(started) << started.error().to_string();
    server = std::move(started).value();
  }
  void TearDown() override {
    server->stop();
    h.stop();
  }
  EngineHarness h;
  std::unique_ptr<WebSocketServer> server;
};

TEST_F(WebSocketServerTest, WrongOrMissingTokenGetsHttp401BeforeTheUpgrade) {
  EXPECT_EQ(upgrade_status(server->port(), "", "/"), 401u);
  EXPECT_EQ(upgrade_status(server->port(), "wrong", "/"), 401u);
  EXPECT_EQ(upgrade_status(server->port(), "", "/?token=wrong"), 401u);
  EXPECT_EQ(upgrade_status(server->port(), "s3cret", "/"), 101u);
  EXPECT_EQ(upgrade_status(server->port(), "", "/rpc?x=1&token=s3cret"), 101u);
  // The engine is untouched and still serves a proper client.
  WsTestClient client(server->port(), "s3cret");
  EXPECT_TRUE(client.request("thread.list").contains("result"));
}

TEST_F(WebSocketServerTest, ServerWithoutTokenIsRefusedUnlessAllowedOnPurpose) {
  auto refused = WebSocketServer::start(*h.transport, {});
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), "invalid_argument");
  WebSocketServerOptions open;
  open.allow_without_token = true;
  auto allowed = WebSocketServer::start(*h.transport, open);
  ASSERT_TRUE(allowed) << allowed.error().to_string();
  EXPECT_EQ(upgrade_status((*allowed)->port(), "", "/"), 101u);
}

TEST_F(WebSocketServerTest, ManyClientsWatchingOneThreadSeeTheSameOrderedEvents) {
  std::vector<std::unique_ptr<WsTestClient>> clients;
  for (int i = 0; i < 6; ++i) clients.push_back(std::make_unique<WsTestClient>(server->port(), "s3cret"));
  for (auto& client : clients) ASSERT_TRUE(client->request("thread.list").contains("result"));
  EXPECT_EQ(server->client_count(), 6u);
  auto created = clients[0]->command("thread.create", {{"title", "shared"}});
  const std::string thread = created["result"]["threadId"];
  for (int turn = 1; turn <= 3; ++turn) {
    h.provider.push(ScriptedResponse::text("reply " + std::to_string(turn)));
    auto submitted = clients[turn]->command("turn.submit", {{"threadId", thread}, {"input", "go"}});
    ASSERT_TRUE(submitted.contains("result")) << submitted.dump();
    for (auto& client : clients) client->wait_event(thread, "turn.complete", static_cast<size_t>(turn));
  }
  const auto reference = clients[0]->events(thread);
  EXPECT_FALSE(reference.empty());
  for (auto& client : clients) EXPECT_EQ(client->events(thread), reference);
  clients.clear();
  for (int i = 0; i < 3000 && server->client_count() != 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(server->client_count(), 0u);
}

}  // namespace
}  // namespace keel
