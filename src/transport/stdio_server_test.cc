// What only the stdio transport does: a session that ends with its input, stop() from another thread, and
// a line over the bound discarded without losing the next one.
#include "transport/stdio_server.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

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
  client->send_raw(std::string(5000, 'x') + "\n" + R"({"jsonrpc":"2.0","id":1,"method":"thread.list"})" +
                   "\r");
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

// Issue 14, point 10: requests read before the end of the input are answered before run() returns (it used to
// stop the writer at once, so `echo '{...}' | keel serve --stdio` printed nothing).
TEST_F(StdioServerTest, RequestsReadBeforeTheEndOfInputAreAnsweredBeforeRunReturns) {
  std::string batch = "[";
  for (int i = 1; i <= 20; ++i) {
    if (i > 1) batch += ",";
    batch += R"({"jsonrpc":"2.0","id":)" + std::to_string(i) + R"(,"method":"thread.list"})";
  }
  batch += "]";
  const std::string input =
      std::string(R"({"jsonrpc":"2.0","id":"init","method":"initialize","params":{}})") + "\n" + batch +
      "\n" + R"({"jsonrpc":"2.0","id":"last","method":"thread.list"})" + "\n";
  ASSERT_EQ(::write(fds[0], input.data(), input.size()), static_cast<ssize_t>(input.size()));
  ASSERT_EQ(::shutdown(fds[0], SHUT_WR), 0);  // the end of the input, with the answers still to come
  thread.join();
  EXPECT_EQ(ended, "eof");
  // Everything run() wrote is buffered in the socket now.
  std::string output;
  char chunk[65536];
  ssize_t n = 0;
  while ((n = ::recv(fds[0], chunk, sizeof chunk, MSG_DONTWAIT)) > 0)
    output.append(chunk, static_cast<size_t>(n));
  std::vector<json> answers;
  size_t start = 0;
  for (size_t end = output.find('\n'); end != std::string::npos;
       start = end + 1, end = output.find('\n', start)) {
    answers.push_back(json::parse(output.substr(start, end - start)));
  }
  bool init = false;
  bool batch_answered = false;
  bool last = false;
  for (const json& answer : answers) {
    if (answer.is_array()) {
      batch_answered = answer.size() == 20;
      continue;
    }
    if (!answer.contains("id")) continue;  // an event
    init = init || (answer["id"] == "init" && answer.contains("result"));
    last = last || (answer["id"] == "last" && answer.contains("result"));
  }
  EXPECT_TRUE(init) << output;
  EXPECT_TRUE(batch_answered) << output;
  EXPECT_TRUE(last) << output;
}

// Issue 14, point 15: O_NONBLOCK is a flag of the open file description, shared with the shell or parent that
// handed keel its stdin and stdout; run() must give both descriptors their flags back.
TEST(StdioServerFlagsTest, RunRestoresTheDescriptorsStatusFlags) {
  EngineHarness h;
  h.start();
  int in[2] = {-1, -1};
  int out[2] = {-1, -1};
  ASSERT_EQ(::pipe2(in, O_CLOEXEC), 0);
  ASSERT_EQ(::pipe2(out, O_CLOEXEC), 0);
  const int in_flags = ::fcntl(in[0], F_GETFL);
  const int out_flags = ::fcntl(out[1], F_GETFL);
  ASSERT_EQ(out_flags & O_NONBLOCK, 0);
  {
    StdioServer server(*h.transport, in[0], out[1]);
    const std::string line = std::string(R"({"jsonrpc":"2.0","id":1,"method":"thread.list"})") + "\n";
    ASSERT_EQ(::write(in[1], line.data(), line.size()), static_cast<ssize_t>(line.size()));
    ::close(in[1]);
    EXPECT_EQ(server.run(), "eof");
  }
  EXPECT_EQ(::fcntl(in[0], F_GETFL), in_flags);
  EXPECT_EQ(::fcntl(out[1], F_GETFL), out_flags) << "stdout was left O_NONBLOCK";
  std::string output(4096, '\0');
  const ssize_t n = ::read(out[0], output.data(), output.size());
  ASSERT_GT(n, 0);
  EXPECT_EQ(json::parse(output.substr(0, output.find('\n')))["id"], 1);
  ::close(in[0]);
  ::close(out[0]);
  ::close(out[1]);
  h.stop();
}

}  // namespace
}  // namespace keel
