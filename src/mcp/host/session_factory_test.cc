// mcp/host/session_factory_test.cc — the real session factory with keel's log: a stdio server
// (keel-mcp-test-server) is asked for the logger's level, and its notifications/message, stderr lines and a
// flood of messages reach the log naming the server, bounded; the caller's own events still see everything.
#include "mcp/host/session_factory.h"

#include <gtest/gtest.h>
#include <spdlog/logger.h>
#include <spdlog/sinks/ringbuffer_sink.h>

#include <condition_variable>
#include <future>
#include <mutex>

namespace keel::mcp {
namespace {

using nlohmann::json;
constexpr auto kBound = std::chrono::seconds(30);  // only bounds a hang

class SessionFactoryLogTest : public ::testing::Test {
 protected:
  SessionFactoryLogTest() {
    sink_->set_pattern("%l|%v");
    logger_ = std::make_shared<spdlog::logger>("test", sink_);
    logger_->set_level(spdlog::level::info);
  }
  ~SessionFactoryLogTest() override {
    if (session_) session_->close();
  }
  void open() {
    McpServerSettings settings;
    settings.name = "files";
    settings.command = KEEL_MCP_TEST_SERVER;
    settings.args = {"--mode=legacy", "--stderr-banner"};
    McpSessionEvents events;
    events.on_log = [this](McpLogMessage) { add([&] { ++messages_; }); };
    events.on_problem = [this](const Error& problem, bool is_log) {
      if (is_log) add([&] { stderr_lines_.push_back(problem.message()); });
    };
    auto opened = make_mcp_session_factory(nullptr, logger_)(settings, std::move(events));
    ASSERT_TRUE(opened.has_value()) << opened.error().to_string();
    session_ = *opened;
  }
  void call(const std::string& tool, json arguments) {
    McpCallRequest request;
    request.tool = tool;
    request.arguments = std::move(arguments);
    std::promise<Result<McpCallResult>> promise;
    session_->call_tool(std::move(request),
                        [&](Result<McpCallResult> r) { promise.set_value(std::move(r)); });
    auto future = promise.get_future();
    ASSERT_EQ(future.wait_for(kBound), std::future_status::ready);
    auto result = future.get();
    ASSERT_TRUE(result.has_value()) << result.error().to_string();
  }
  template <typename F>
  void add(F f) {
    {
      std::lock_guard lock(mu_);
      f();
    }
    cv_.notify_all();
  }
  template <typename Pred>
  bool wait_for(Pred pred) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, kBound, [&] { return pred(); });
  }
  // The log so far, a line each (the sink writes before the caller's event is called).
  std::string log() const {
    std::string out;
    for (const std::string& line : sink_->last_formatted()) out += line;
    return out;
  }

  std::mutex mu_;
  std::condition_variable cv_;
  int messages_ = 0;
  std::vector<std::string> stderr_lines_;
  // Thread-safe: the session's threads write while the test reads.
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> sink_ =
      std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(5000);
  std::shared_ptr<spdlog::logger> logger_;
  std::shared_ptr<McpSession> session_;
};

TEST_F(SessionFactoryLogTest, TheServerIsAskedForTheLoggersLevelAndItsStderrIsLogged) {
  open();
  ASSERT_TRUE(wait_for([&] {
    return std::ranges::find(stderr_lines_, "log level \"info\"") != stderr_lines_.end() &&
           std::ranges::find(stderr_lines_, "keel-mcp-test-server starting") != stderr_lines_.end();
  }));
  const std::string written = log();
  EXPECT_NE(written.find("info|MCP server files: log level \"info\"\n"), std::string::npos) << written;
  EXPECT_NE(written.find("info|MCP server files: keel-mcp-test-server starting\n"), std::string::npos)
      << written;
}

TEST_F(SessionFactoryLogTest, LogNotificationsAreWrittenAtTheirLevelAndBadOnesDoNotFail) {
  open();
  call("log", {{"params", {{"level", "error"}, {"logger", "db"}, {"data", "disk full"}}}});
  call("log", {{"params", 42}});
  call("log", {{"params", {{"level", "debug"}, {"data", "below the level"}}}});
  ASSERT_TRUE(wait_for([&] { return messages_ == 3; }));
  const std::string written = log();
  EXPECT_NE(written.find("error|MCP server files: [db] disk full\n"), std::string::npos) << written;
  EXPECT_NE(written.find("warning|MCP server files: (level ) \n"), std::string::npos) << written;
  EXPECT_EQ(written.find("below the level"), std::string::npos) << written;
}

TEST_F(SessionFactoryLogTest, AFloodOfLogNotificationsIsBoundedInTheLog) {
  open();
  call("flood", {{"count", 1000}});
  ASSERT_TRUE(wait_for([&] { return messages_ == 1000; }));  // the caller's events see every one
  const std::string written = log();
  size_t lines = 0;
  for (size_t at = written.find("[flood]"); at != std::string::npos; at = written.find("[flood]", at + 1))
    ++lines;
  EXPECT_GE(lines, 90U);   // the burst of 100, less what the stderr lines spent
  EXPECT_LT(lines, 200U);  // and no more than the rate adds while the flood lasts
}

}  // namespace
}  // namespace keel::mcp
