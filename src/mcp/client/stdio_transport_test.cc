// mcp/client/stdio_transport_test.cc — the stdio transport against keel-mcp-test-server and small shell
// programs: messages both ways, stray output, stderr as logs, oversized lines, the server's exit, shutdown.
#include "mcp/client/stdio_transport.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <vector>

#include "keel/error_codes.h"
#include "mcp/mcp_errors.h"

namespace keel::mcp {
namespace {

using nlohmann::json;
constexpr auto kBound = std::chrono::seconds(30);  // only bounds a hang

// Collects what a transport delivers; wait_for() blocks until a predicate over it holds.
class Inbox {
 public:
  McpTransport::Handlers handlers() {
    McpTransport::Handlers h;
    h.on_message = [this](json message) { add([&] { messages_.push_back(std::move(message)); }); };
    h.on_problem = [this](const Error& problem, bool is_log) {
      add([&] { (is_log ? logs_ : problems_).push_back(problem); });
    };
    h.on_closed = [this](const Error& reason) { add([&] { closed_.push_back(reason); }); };
    return h;
  }
  template <typename Pred>
  bool wait_for(Pred pred) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, kBound, [&] { return pred(*this); });
  }
  std::vector<json> messages_;
  std::vector<Error> problems_;
  std::vector<Error> logs_;
  std::vector<Error> closed_;

 private:
  template <typename F>
  void add(F f) {
    {
      std::lock_guard lock(mu_);
      f();
    }
    cv_.notify_all();
  }
  std::mutex mu_;
  std::condition_variable cv_;
};

std::unique_ptr<McpTransport> test_server(std::vector<std::string> args = {}) {
  StdioServerSpec spec;
  spec.command = KEEL_MCP_TEST_SERVER;
  spec.args = std::move(args);
  spec.shutdown_grace = std::chrono::milliseconds(200);
  auto transport = make_stdio_transport(std::move(spec));
  EXPECT_TRUE(transport.has_value());
  return std::move(*transport);
}

std::unique_ptr<McpTransport> shell(const std::string& script, size_t max_line_bytes = size_t{16} << 20) {
  StdioServerSpec spec;
  spec.command = "/bin/sh";
  spec.args = {"-c", script};
  spec.max_line_bytes = max_line_bytes;
  spec.shutdown_grace = std::chrono::milliseconds(200);
  return std::move(*make_stdio_transport(std::move(spec)));
}

const json kPing = {{"jsonrpc", "2.0"}, {"id", 1}, {"method", "ping"}};

TEST(StdioTransport, AnEmptyCommandIsRefused) {
  auto transport = make_stdio_transport(StdioServerSpec{});
  ASSERT_FALSE(transport.has_value());
  EXPECT_EQ(transport.error().code(), codes::kInvalidArgument);
}

TEST(StdioTransport, AMissingProgramIsASpawnFailure) {
  Inbox inbox;  // outlives the transport, whose handlers point at it
  StdioServerSpec spec;
  spec.command = "/nonexistent/keel-no-such-server";
  auto transport = std::move(*make_stdio_transport(std::move(spec)));
  Result<void> started = transport->start(inbox.handlers());
  ASSERT_FALSE(started.has_value());
  EXPECT_EQ(started.error().code(), codes::kMcpSpawnFailed);
}

TEST(StdioTransport, ARequestGetsItsResponse) {
  Inbox inbox;  // outlives the transport, whose handlers point at it
  auto transport = test_server();
  ASSERT_TRUE(transport->start(inbox.handlers()).has_value());
  ASSERT_TRUE(transport->send(kPing).has_value());
  ASSERT_TRUE(inbox.wait_for([](const Inbox& in) { return !in.messages_.empty(); }));
  EXPECT_EQ(inbox.messages_[0], (json{{"jsonrpc", "2.0"}, {"id", 1}, {"result", json::object()}}));
  transport->close();
  EXPECT_TRUE(inbox.closed_.empty());  // keel closed it: no on_closed
}

TEST(StdioTransport, AStrayLineOnStdoutIsReportedAndSkipped) {
  Inbox inbox;  // outlives the transport, whose handlers point at it
  auto transport = test_server({"--garbage-at-start"});
  ASSERT_TRUE(transport->start(inbox.handlers()).has_value());
  ASSERT_TRUE(transport->send(kPing).has_value());
  ASSERT_TRUE(inbox.wait_for([](const Inbox& in) { return !in.messages_.empty(); }));
  ASSERT_EQ(inbox.problems_.size(), 2u);
  for (const Error& problem : inbox.problems_) EXPECT_EQ(problem.code(), codes::kMcpStrayOutput);
  EXPECT_EQ(inbox.messages_[0]["id"], 1);
}

TEST(StdioTransport, StderrLinesAreLogsNotErrors) {
  Inbox inbox;  // outlives the transport, whose handlers point at it
  auto transport = test_server({"--stderr-banner"});
  ASSERT_TRUE(transport->start(inbox.handlers()).has_value());
  ASSERT_TRUE(inbox.wait_for([](const Inbox& in) { return !in.logs_.empty(); }));
  EXPECT_EQ(inbox.logs_[0].code(), codes::kMcpServerLog);
  EXPECT_EQ(inbox.logs_[0].message(), "keel-mcp-test-server starting");
  EXPECT_TRUE(inbox.problems_.empty());
}

TEST(StdioTransport, ALineOverTheBoundIsReportedAndTheNextOneStillArrives) {
  Inbox inbox;  // outlives the transport, whose handlers point at it
  auto transport = shell(
      "head -c 5000 /dev/zero | tr '\\0' x; echo; echo '{\"jsonrpc\":\"2.0\",\"method\":\"after\"}'; cat "
      ">/dev/null",
      1000);
  ASSERT_TRUE(transport->start(inbox.handlers()).has_value());
  ASSERT_TRUE(inbox.wait_for([](const Inbox& in) { return !in.messages_.empty(); }));
  ASSERT_EQ(inbox.problems_.size(), 1u);
  EXPECT_EQ(inbox.problems_[0].code(), codes::kMcpMessageTooLarge);
  EXPECT_EQ(inbox.messages_[0]["method"], "after");
}

TEST(StdioTransport, ASendOverTheBoundIsRefused) {
  Inbox inbox;  // outlives the transport, whose handlers point at it
  auto transport = shell("cat >/dev/null", 100);
  ASSERT_TRUE(transport->start(inbox.handlers()).has_value());
  Result<void> sent = transport->send(json{{"data", std::string(200, 'y')}});
  ASSERT_FALSE(sent.has_value());
  EXPECT_EQ(sent.error().code(), codes::kMcpMessageTooLarge);
}

TEST(StdioTransport, TheServersExitIsReportedOnceWithItsStatus) {
  Inbox inbox;  // outlives the transport, whose handlers point at it
  auto transport = shell("exit 7");
  ASSERT_TRUE(transport->start(inbox.handlers()).has_value());
  ASSERT_TRUE(inbox.wait_for([](const Inbox& in) { return !in.closed_.empty(); }));
  EXPECT_EQ(inbox.closed_[0].code(), codes::kMcpServerExited);
  Result<void> sent = transport->send(kPing);
  ASSERT_FALSE(sent.has_value());
  EXPECT_EQ(sent.error().code(), codes::kMcpServerExited);
  transport->close();
  EXPECT_EQ(inbox.closed_.size(), 1u);
}

TEST(StdioTransport, CloseKillsAServerThatIgnoresEndOfInputAndItsChildren) {
  Inbox inbox;  // outlives the transport, whose handlers point at it
  // The server ignores SIGTERM and leaves a child behind that holds its stdout: close() still returns.
  auto transport = shell("trap '' TERM; sleep 1000 & while :; do sleep 1; done");
  ASSERT_TRUE(transport->start(inbox.handlers()).has_value());
  const auto started = std::chrono::steady_clock::now();
  transport->close();
  EXPECT_LT(std::chrono::steady_clock::now() - started, kBound);
  EXPECT_TRUE(inbox.closed_.empty());
}

TEST(StdioTransport, TheServerSeesOnlyItsStandardDescriptors) {
  Inbox inbox;  // outlives the transport, whose handlers point at it
  // ls of /proc/self/fd from the server's shell: 0, 1, 2, and the descriptor ls itself opens.
  auto transport = shell("ls /proc/self/fd | tr '\\n' ' ' >&2; echo >&2; cat >/dev/null");
  ASSERT_TRUE(transport->start(inbox.handlers()).has_value());
  ASSERT_TRUE(inbox.wait_for([](const Inbox& in) { return !in.logs_.empty(); }));
  EXPECT_EQ(inbox.logs_[0].message(), "0 1 2 3 ");
}

TEST(StdioTransport, TheEnvironmentAndWorkingDirectoryAreTheSpecs) {
  Inbox inbox;  // outlives the transport, whose handlers point at it
  StdioServerSpec spec;
  spec.command = "/bin/sh";
  spec.args = {"-c", "echo \"$KEEL_MCP_TEST_VALUE $(pwd)\" >&2; cat >/dev/null"};
  spec.env = {{"KEEL_MCP_TEST_VALUE", "hello"}};
  spec.cwd = "/";
  auto transport = std::move(*make_stdio_transport(std::move(spec)));
  ASSERT_TRUE(transport->start(inbox.handlers()).has_value());
  ASSERT_TRUE(inbox.wait_for([](const Inbox& in) { return !in.logs_.empty(); }));
  EXPECT_EQ(inbox.logs_[0].message(), "hello /");
}

}  // namespace
}  // namespace keel::mcp
