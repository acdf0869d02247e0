// What only the stdio transport does: a session that ends with its input, stop() from another thread, and
// a line over the bound discarded without losing the next one.
#include "transport/stdio_server.h"

#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "engine/engine_harness.h"
#include "transport/rpc_test_client.h"

namespace keel {
namespace {

using nlohmann::json;
using testing::EngineHarness;
using testing::FdTestClient;

class StdioServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    h.start();
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
    RpcSessionOptions options;
    options.limits.max_message_bytes = 1024;
    server = std::make_unique<StdioServer>(*h.transport, fds[1], fds[1], options);
    thread = std::thread([this] { ended = server->run(); });
  }
  void TearDown() override {
    server->stop();
    if (thread.joinable()) thread.join();
    ::close(fds[1]);
    client.reset();
    h.stop();
  }
  EngineHarness h;
  int fds[2] = {-1, -1};
  std::unique_ptr<StdioServer> server;
  std::thread thread;
  std::string ended;
  std::unique_ptr<FdTestClient> client;
};

TEST_F(StdioServerTest, OverlongLineIsDiscardedAndTheNextLineIsServed) {
  client = std::make_unique<FdTestClient>(fds[0], fds[0]);
  // Over the bound and split across writes, with a CRLF line after it.
  client->send_raw(std::string(5000, 'x') + "\n" + R"({"jsonrpc":"2.0","id":1,"method":"thread.list"})" + "\r");
  auto response = client->wait_response(1);
  EXPECT_TRUE(response.contains("result")) << response.dump();
  const auto all = client->received();
  ASSERT_FALSE(all.empty());
  EXPECT_EQ(all.front()["error"]["data"]["code"], "rpc.message_too_large");
}

TEST_F(StdioServerTest, RunEndsWhenTheInputEnds) {
  client = std::make_unique<FdTestClient>(fds[0], fds[0]);
  EXPECT_TRUE(client->request("thread.list").contains("result"));
  client->disconnect();
  thread.join();
  EXPECT_EQ(ended, "eof");
}

TEST_F(StdioServerTest, StopEndsRunFromAnotherThread) {
  client = std::make_unique<FdTestClient>(fds[0], fds[0]);
  server->stop();
  thread.join();
  EXPECT_EQ(ended, "stopped");
}

}  // namespace
}  // namespace keel
