// mcp/client/session_test.cc — open_mcp_session and McpSession over the stdio transport against
// keel-mcp-test-server: both generations, the probe's fallbacks, tools/list pages, tools/call with progress,
// cancellation and timeouts, and every fault the server can be told to commit (each one a coded error, and
// the session goes on).
#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <future>
#include <mutex>

#include "keel/cancellation.h"
#include "keel/error_codes.h"
#include "mcp/client/session_open.h"
#include "mcp/client/stdio_transport.h"
#include "mcp/mcp_errors.h"

namespace keel::mcp {
namespace {

using nlohmann::json;
constexpr auto kSessionBound = std::chrono::seconds(30);  // only bounds a hang

// What a session reports unasked, and a way to wait for it.
struct Observed {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<Error> problems;
  std::vector<Error> logs;
  std::vector<McpLogMessage> messages;
  std::vector<Error> closed;
  int tools_changed = 0;

  McpSessionEvents events() {
    McpSessionEvents e;
    e.on_problem = [this](const Error& problem, bool is_log) {
      add([&] { (is_log ? logs : problems).push_back(problem); });
    };
    e.on_log = [this](McpLogMessage message) { add([&] { messages.push_back(std::move(message)); }); };
    e.on_closed = [this](const Error& reason) { add([&] { closed.push_back(reason); }); };
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
    return cv.wait_for(lock, kSessionBound, [&] { return pred(); });
  }
};

class SessionTest : public ::testing::Test {
 protected:
  ~SessionTest() override {
    if (session_) session_->close();
  }
  Result<std::shared_ptr<McpSession>> open(std::vector<std::string> args, McpClientOptions options = {}) {
    StdioServerSpec spec;
    spec.command = KEEL_MCP_TEST_SERVER;
    spec.args = std::move(args);
    spec.shutdown_grace = std::chrono::milliseconds(200);
    spec.max_line_bytes = 1 << 20;
    return open_mcp_session(std::move(*make_stdio_transport(std::move(spec))), options, observed_.events());
  }
  void open_ok(std::vector<std::string> args, McpClientOptions options = {}) {
    auto opened = open(std::move(args), options);
    ASSERT_TRUE(opened.has_value()) << opened.error().to_string();
    session_ = *opened;
  }
  Result<McpCallResult> call(const std::string& tool, json arguments = json::object(),
                             std::function<void(McpCallRequest&)> adjust = nullptr) {
    McpCallRequest request;
    request.tool = tool;
    request.arguments = std::move(arguments);
    request.idle_timeout = kSessionBound;
    if (adjust) adjust(request);
    std::promise<Result<McpCallResult>> promise;
    auto future = promise.get_future();
    session_->call_tool(std::move(request),
                        [&](Result<McpCallResult> r) { promise.set_value(std::move(r)); });
    if (future.wait_for(kSessionBound * 2) != std::future_status::ready)
      return fail("test.hang", "no completion");
    return future.get();
  }
  Result<std::vector<McpToolInfo>> tools() {
    std::promise<Result<std::vector<McpToolInfo>>> promise;
    auto future = promise.get_future();
    session_->list_tools([&](Result<std::vector<McpToolInfo>> r) { promise.set_value(std::move(r)); });
    if (future.wait_for(kSessionBound) != std::future_status::ready)
      return fail("test.hang", "no completion");
    return future.get();
  }
  static std::string text_of(const McpCallResult& result) { return result.content.at(0).value("text", ""); }

  Observed observed_;  // outlives the session, whose events point at it
  std::shared_ptr<McpSession> session_;
};

TEST_F(SessionTest, AModernServerIsSpokenToStatelesslyWithMetaOnEveryRequest) {
  open_ok({"--mode=modern"});
  EXPECT_EQ(session_->server_info().protocol_version, "2026-07-28");
  EXPECT_EQ(session_->server_info().name, "keel-mcp-test-server");
  EXPECT_EQ(session_->server_info().instructions, "a broken server for tests");
  // The server refuses a request without the modern _meta, so these succeeding shows it is sent.
  auto listed = tools();
  ASSERT_TRUE(listed.has_value()) << listed.error().to_string();
  auto echoed = call("echo", {{"text", "hi"}});
  ASSERT_TRUE(echoed.has_value()) << echoed.error().to_string();
  EXPECT_EQ(text_of(*echoed), "hi");
  EXPECT_FALSE(echoed->is_error);
}

TEST_F(SessionTest, AServerThatAnswersBothIsSpokenToInTheModernGeneration) {
  open_ok({"--mode=both"});
  EXPECT_EQ(session_->server_info().protocol_version, "2026-07-28");
}

TEST_F(SessionTest, ALegacyServerRefusingDiscoverGetsInitialize) {
  open_ok({"--mode=legacy"});
  EXPECT_EQ(session_->server_info().protocol_version, "2025-11-25");
  EXPECT_EQ(session_->server_info().capabilities["tools"]["listChanged"], true);
  // The server refuses tools/* before notifications/initialized.
  auto echoed = call("echo", {{"text", "legacy"}});
  ASSERT_TRUE(echoed.has_value()) << echoed.error().to_string();
  EXPECT_EQ(text_of(*echoed), "legacy");
}

TEST_F(SessionTest, ASilentProbeFallsBackToInitializeAfterTheProbeTimeout) {
  McpClientOptions options;
  options.probe_timeout = std::chrono::milliseconds(300);
  open_ok({"--mode=silent"}, options);
  EXPECT_EQ(session_->server_info().protocol_version, "2025-11-25");
}

TEST_F(SessionTest, AnOlderRevisionTheServerAnswersWithIsAccepted) {
  open_ok({"--mode=legacy", "--initialize-version=2025-03-26"});
  EXPECT_EQ(session_->server_info().protocol_version, "2025-03-26");
}

TEST_F(SessionTest, ARevisionKeelDoesNotSpeakIsRefused) {
  auto opened = open({"--mode=legacy", "--initialize-version=2024-11-05"});
  ASSERT_FALSE(opened.has_value());
  EXPECT_EQ(opened.error().code(), codes::kMcpVersionUnsupported);
}

TEST_F(SessionTest, ToolsListFollowsEveryPage) {
  open_ok({"--tools=40", "--page-size=7"});
  auto listed = tools();
  ASSERT_TRUE(listed.has_value()) << listed.error().to_string();
  ASSERT_EQ(listed->size(), 57u);
  EXPECT_EQ((*listed)[0].name, "echo");
  EXPECT_EQ((*listed)[0].annotations["readOnlyHint"], true);
  EXPECT_TRUE((*listed)[1].output_schema.has_value());
  EXPECT_EQ(listed->back().name, "t39");
}

TEST_F(SessionTest, TooManyToolsIsAnError) {
  McpClientOptions options;
  options.max_tools = 20;
  open_ok({"--tools=40", "--page-size=7"}, options);
  auto listed = tools();
  ASSERT_FALSE(listed.has_value());
  EXPECT_EQ(listed.error().code(), codes::kMcpTooManyTools);
}

TEST_F(SessionTest, StructuredContentAndIsErrorAreResults) {
  open_ok({});
  auto added = call("add", {{"a", 2}, {"b", 3}});
  ASSERT_TRUE(added.has_value());
  ASSERT_TRUE(added->structured_content.has_value());
  EXPECT_EQ((*added->structured_content)["sum"], 5);
  auto failed = call("fail");
  ASSERT_TRUE(failed.has_value());
  EXPECT_TRUE(failed->is_error);
}

TEST_F(SessionTest, ProgressReachesTheCallerInOrder) {
  open_ok({});
  std::vector<McpProgress> progress;
  auto result = call("progress", {{"steps", 4}}, [&](McpCallRequest& request) {
    request.on_progress = [&](McpProgress p) { progress.push_back(std::move(p)); };
  });
  ASSERT_TRUE(result.has_value()) << result.error().to_string();
  ASSERT_EQ(progress.size(), 4u);
  EXPECT_EQ(progress[3].progress, 4);
  EXPECT_EQ(progress[3].total, 4);
  EXPECT_EQ(progress[0].message, "step");
}

TEST_F(SessionTest, CancellingACallTellsTheServerAndCompletesWithCancelled) {
  open_ok({});
  CancellationSource source;
  std::promise<Result<McpCallResult>> promise;
  auto future = promise.get_future();
  McpCallRequest request;
  request.tool = "slow";
  request.cancel = source.token();
  session_->call_tool(std::move(request), [&](Result<McpCallResult> r) { promise.set_value(std::move(r)); });
  source.cancel("user interrupt");
  ASSERT_EQ(future.wait_for(kSessionBound), std::future_status::ready);
  auto result = future.get();
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.error().code(), codes::kCancelled);
  // The server logs the notifications/cancelled it got on stderr.
  ASSERT_TRUE(observed_.wait_for([&] {
    for (const Error& log : observed_.logs)
      if (log.message().find("cancelled") == 0 && log.message().find("user interrupt") != std::string::npos)
        return true;
    return false;
  }));
}

TEST_F(SessionTest, ACallWithoutAnswerTimesOutAndTheSessionGoesOn) {
  open_ok({});
  auto result = call("hang", json::object(),
                     [](McpCallRequest& request) { request.idle_timeout = std::chrono::milliseconds(200); });
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.error().code(), codes::kMcpCallTimedOut);
  auto echoed = call("echo", {{"text", "still here"}});
  ASSERT_TRUE(echoed.has_value());
  EXPECT_EQ(text_of(*echoed), "still here");
}

TEST_F(SessionTest, AServerDyingMidCallFailsTheCallAndClosesTheSession) {
  open_ok({});
  auto result = call("die");
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.error().code(), codes::kMcpServerExited);
  ASSERT_TRUE(observed_.wait_for([&] { return !observed_.closed.empty(); }));
  EXPECT_EQ(observed_.closed[0].code(), codes::kMcpServerExited);
  auto after = call("echo");
  ASSERT_FALSE(after.has_value());
  EXPECT_EQ(after.error().code(), codes::kMcpServerExited);
}

TEST_F(SessionTest, StrayAndBrokenOutputIsReportedAndTheCallStillSucceeds) {
  open_ok({"--garbage-at-start"});
  for (const char* tool : {"stray", "garbage"}) {
    auto result = call(tool);
    ASSERT_TRUE(result.has_value()) << tool << ": " << result.error().to_string();
  }
  std::lock_guard lock(observed_.mu);
  ASSERT_GE(observed_.problems.size(), 4u);
  for (const Error& problem : observed_.problems) EXPECT_EQ(problem.code(), codes::kMcpStrayOutput);
}

TEST_F(SessionTest, UnknownAndDuplicateResponseIdsAreReportedAndIgnored) {
  open_ok({});
  auto unknown = call("unknown_id");
  ASSERT_TRUE(unknown.has_value());
  EXPECT_EQ(text_of(*unknown), "after unknown id");
  auto dup = call("dup");
  ASSERT_TRUE(dup.has_value());
  EXPECT_EQ(text_of(*dup), "first");
  ASSERT_TRUE(observed_.wait_for([&] { return observed_.problems.size() >= 2; }));
  for (const Error& problem : observed_.problems) EXPECT_EQ(problem.code(), codes::kMcpUnexpectedResponse);
}

TEST_F(SessionTest, AFloodOfLogNotificationsIsDeliveredAndTheCallCompletes) {
  open_ok({});
  auto result = call("flood", {{"count", 5000}});
  ASSERT_TRUE(result.has_value());
  std::lock_guard lock(observed_.mu);
  EXPECT_EQ(observed_.messages.size(), 5000u);
  EXPECT_EQ(observed_.messages.back().logger, "flood");
}

TEST_F(SessionTest, AnOversizedResultIsDroppedAndItsCallTimesOut) {
  open_ok({});
  auto result = call("big", {{"bytes", 2 << 20}},
                     [](McpCallRequest& request) { request.idle_timeout = std::chrono::milliseconds(500); });
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.error().code(), codes::kMcpCallTimedOut);
  ASSERT_TRUE(observed_.wait_for([&] { return !observed_.problems.empty(); }));
  EXPECT_EQ(observed_.problems[0].code(), codes::kMcpMessageTooLarge);
  auto echoed = call("echo", {{"text", "after"}});
  ASSERT_TRUE(echoed.has_value());
}

TEST_F(SessionTest, ListChangedReachesTheEvents) {
  open_ok({});
  ASSERT_TRUE(call("change").has_value());
  ASSERT_TRUE(observed_.wait_for([&] { return observed_.tools_changed == 1; }));
}

TEST_F(SessionTest, TheServersPingIsAnswered) {
  open_ok({"--mode=legacy"});
  auto result = call("ping_client");
  ASSERT_TRUE(result.has_value());
  EXPECT_EQ(text_of(*result), "the client answered ping");
}

TEST_F(SessionTest, TheConfiguredLogLevelIsAskedOfAServerWithTheLoggingCapability) {
  McpClientOptions options;
  options.log_level = "warning";
  open_ok({"--mode=legacy"}, options);
  ASSERT_TRUE(observed_.wait_for([&] {
    return std::ranges::any_of(observed_.logs,
                               [](const Error& log) { return log.message() == "log level \"warning\""; });
  }));
  std::lock_guard lock(observed_.mu);
  EXPECT_TRUE(observed_.problems.empty());
}

// keel declares no elicitation capability: a server that elicits anyway gets a JSON-RPC error at once
// (method not found, naming the method), so its tool call goes on instead of hanging.
TEST_F(SessionTest, AnElicitationRequestIsAnsweredWithMethodNotFound) {
  open_ok({"--mode=legacy"});
  auto result = call("elicit");
  ASSERT_TRUE(result.has_value()) << result.error().to_string();
  const json answer = json::parse(text_of(*result));
  EXPECT_EQ(answer["id"], "srv-elicit");
  EXPECT_FALSE(answer.contains("result"));
  EXPECT_EQ(answer["error"]["code"], -32601) << answer.dump();
  EXPECT_NE(answer["error"]["message"].get<std::string>().find("elicitation/create"), std::string::npos);
}

TEST_F(SessionTest, ClosingFailsPendingCallsWithTransportClosed) {
  open_ok({});
  std::promise<Result<McpCallResult>> promise;
  auto future = promise.get_future();
  McpCallRequest request;
  request.tool = "hang";
  session_->call_tool(std::move(request), [&](Result<McpCallResult> r) { promise.set_value(std::move(r)); });
  session_->close();
  ASSERT_EQ(future.wait_for(kSessionBound), std::future_status::ready);
  EXPECT_EQ(future.get().error().code(), codes::kMcpTransportClosed);
  EXPECT_TRUE(observed_.closed.empty());
}

TEST_F(SessionTest, AServerThatDiesDuringTheHandshakeIsAnError) {
  auto opened = open({"--no-such-flag"});  // the server exits with status 2 at once
  ASSERT_FALSE(opened.has_value());
  EXPECT_EQ(opened.error().code(), codes::kMcpServerExited);
}

}  // namespace
}  // namespace keel::mcp
