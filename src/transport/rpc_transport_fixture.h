// transport/rpc_transport_fixture.h — test support: a whole engine (asking gatekeeper, scripted model) served
// over a real transport (stdio over a socketpair or pipes, or loopback WebSocket), with clients to drive it.
// Every message a client received is checked against the protocol schema when the test ends.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "engine/engine_harness.h"
#include "policy/policy_gatekeeper.h"
#include "transport/protocol_schema.h"
#include "transport/rpc_test_client.h"
#include "transport/stdio_server.h"
#include "transport/websocket_server.h"

namespace keel::testing {

enum class TransportKind { kStdioSocket, kStdioPipes, kWebSocket };

inline std::string transport_name(const ::testing::TestParamInfo<TransportKind>& info) {
  switch (info.param) {
    case TransportKind::kStdioSocket:
      return "StdioSocketpair";
    case TransportKind::kStdioPipes:
      return "StdioPipes";
    case TransportKind::kWebSocket:
      return "WebSocket";
  }
  return "Unknown";
}

inline constexpr char kTestToken[] = "test-token-0123456789";
inline constexpr size_t kTestMaxMessage = 64 * 1024;

class RpcTransportFixture : public ::testing::TestWithParam<TransportKind> {
 protected:
  void SetUp() override {
    auto gate = PolicyGatekeeper::open(h.store(), h.clock, h.ids, PolicyMode::kAskWrites);
    ASSERT_TRUE(gate) << gate.error().to_string();
    gatekeeper_ = std::move(gate).value();
    h.set_gatekeeper(gatekeeper_.get());
    h.start();
    session_options_.limits.max_message_bytes = kTestMaxMessage;
    if (GetParam() == TransportKind::kWebSocket) {
      WebSocketServerOptions options;
      options.token = kTestToken;
      options.session = session_options_;
      auto server = WebSocketServer::start(*h.transport, options);
      ASSERT_TRUE(server) << server.error().to_string();
      ws_ = std::move(server).value();
    }
  }

  void TearDown() override {
    auto schema = ProtocolSchema::load();
    ASSERT_TRUE(schema) << schema.error().to_string();
    for (auto& client : clients_) {
      EXPECT_TRUE(client->unparsable().empty()) << "the server sent something that is not JSON";
      for (const std::string& violation :
           schema->check_server_messages(client->received(), client->methods()))
        ADD_FAILURE() << "schema: " << violation;
    }
    for (auto& stdio : stdio_) stdio->server->stop();
    for (auto& stdio : stdio_) {
      if (stdio->thread.joinable()) stdio->thread.join();
      for (int fd : stdio->fds) ::close(fd);  // the clients' readers see the end
    }
    clients_.clear();
    stdio_.clear();
    if (ws_) ws_->stop();
    h.stop();
  }

  // A new client connected through the transport under test.
  RpcTestClient& connect() {
    switch (GetParam()) {
      case TransportKind::kWebSocket:
        clients_.push_back(std::make_unique<WsTestClient>(ws_->port(), kTestToken));
        break;
      case TransportKind::kStdioSocket: {
        int pair[2];
        EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
        start_stdio(pair[1], pair[1], {pair[1]});
        clients_.push_back(std::make_unique<FdTestClient>(pair[0], pair[0]));
        break;
      }
      case TransportKind::kStdioPipes: {
        int to_server[2];
        int to_client[2];
        EXPECT_EQ(::pipe2(to_server, O_CLOEXEC), 0);
        EXPECT_EQ(::pipe2(to_client, O_CLOEXEC), 0);
        start_stdio(to_server[0], to_client[1], {to_server[0], to_client[1]});
        clients_.push_back(std::make_unique<FdTestClient>(to_client[0], to_server[1]));
        break;
      }
    }
    return *clients_.back();
  }

  std::string create_thread(RpcTestClient& client) {
    auto response = client.command("thread.create", {{"title", "rpc"}});
    EXPECT_TRUE(response.contains("result")) << response.dump();
    return response["result"].value("threadId", "");
  }

  struct Stdio {
    std::unique_ptr<StdioServer> server;
    std::thread thread;
    std::string ended;
    std::vector<int> fds;
  };

  EngineHarness h;
  RpcSessionOptions session_options_;
  std::unique_ptr<WebSocketServer> ws_;
  std::vector<std::unique_ptr<Stdio>> stdio_;
  std::vector<std::unique_ptr<RpcTestClient>> clients_;

 private:
  void start_stdio(int in_fd, int out_fd, std::vector<int> fds) {
    auto stdio = std::make_unique<Stdio>();
    RpcSessionOptions options = session_options_;
    options.connection_id = "stdio-" + std::to_string(stdio_.size() + 1);
    stdio->server = std::make_unique<StdioServer>(*h.transport, in_fd, out_fd, options);
    stdio->fds = std::move(fds);
    Stdio* raw = stdio.get();
    stdio->thread = std::thread([raw] { raw->ended = raw->server->run(); });
    stdio_.push_back(std::move(stdio));
  }

  std::unique_ptr<PolicyGatekeeper> gatekeeper_;
};

}  // namespace keel::testing
