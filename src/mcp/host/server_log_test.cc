// mcp/host/server_log_test.cc — McpServerLog: a server's log notifications, stderr lines and problems in
// keel's log at the right level and naming the server, bounded in size and rate, never failing on bad
// params; and the MCP level asked for a logger's level.
#include "mcp/host/server_log.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>

#include <sstream>

#include "mcp/client/mcp_results.h"
#include "testing/manual_clock.h"

namespace keel::mcp {
namespace {

using nlohmann::json;

class ServerLogTest : public ::testing::Test {
 protected:
  ServerLogTest() {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out_);
    sink->set_pattern("%l|%v");
    logger_ = std::make_shared<spdlog::logger>("test", std::move(sink));
    logger_->set_level(spdlog::level::trace);
  }
  std::unique_ptr<McpServerLog> make(McpServerLogOptions options = {}) {
    return std::make_unique<McpServerLog>("files", logger_, clock_, options);
  }
  std::vector<std::string> lines() const {
    std::vector<std::string> out;
    std::istringstream in(out_.str());
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
  }
  static McpLogMessage message(std::string level, json data, std::string logger = "") {
    return McpLogMessage{std::move(level), std::move(logger), std::move(data)};
  }

  std::ostringstream out_;
  std::shared_ptr<spdlog::logger> logger_;
  std::shared_ptr<testing::ManualClock> clock_ = std::make_shared<testing::ManualClock>();
};

TEST_F(ServerLogTest, EveryMcpLevelIsWrittenAtItsSpdlogLevelNamingTheServer) {
  auto log = make();
  for (const char* level : {"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"})
    log->message(message(level, std::string("a ") + level + " message", "db"));
  EXPECT_EQ(lines(), (std::vector<std::string>{
                         "debug|MCP server files: [db] a debug message",
                         "info|MCP server files: [db] a info message",
                         "info|MCP server files: [db] a notice message",
                         "warning|MCP server files: [db] a warning message",
                         "error|MCP server files: [db] a error message",
                         "critical|MCP server files: [db] a critical message",
                         "critical|MCP server files: [db] a alert message",
                         "critical|MCP server files: [db] a emergency message",
                     }));
}

TEST_F(ServerLogTest, DataThatIsNotAStringIsWrittenAsJson) {
  make()->message(message("info", json{{"rows", 3}}));
  EXPECT_EQ(lines(), std::vector<std::string>{"info|MCP server files: {\"rows\":3}"});
}

TEST_F(ServerLogTest, BadParamsAreLoggedAtWarnWithoutFailing) {
  auto log = make();
  for (const json& params : {json(), json(42), json::array({1, 2}), json{{"level", 7}, {"data", nullptr}},
                             json{{"level", "verbose"}, {"logger", json::object()}, {"data", "x"}}})
    log->message(parse_log_message(params));
  const std::vector<std::string> written = lines();
  ASSERT_EQ(written.size(), 5U);
  EXPECT_EQ(written[0], "warning|MCP server files: (level ) ");
  EXPECT_EQ(written[4], "warning|MCP server files: (level verbose) x");
}

TEST_F(ServerLogTest, LongLinesAreCutOnACharacterBoundaryAndControlCharactersBecomeSpaces) {
  McpServerLogOptions options;
  options.max_line_bytes = 10;
  auto log = make(options);
  log->stderr_line("line one\nline two");
  log->stderr_line("123456789\xC3\xA9xyz");  // é is bytes 10 and 11: cut before it
  const std::vector<std::string> written = lines();
  ASSERT_EQ(written.size(), 2U);
  EXPECT_EQ(written[0], "info|MCP server files: line one l ... (7 more bytes cut)");
  EXPECT_EQ(written[1], "info|MCP server files: 123456789 ... (5 more bytes cut)");
}

TEST_F(ServerLogTest, AFloodIsCutToTheBurstAndTheDroppedLinesAreCounted) {
  McpServerLogOptions options;
  options.burst = 5;
  options.per_second = 2;
  auto log = make(options);
  for (int i = 0; i < 100; ++i) log->message(message("info", i));
  EXPECT_EQ(lines().size(), 5U);
  clock_->advance(std::chrono::seconds(1));  // two more lines' worth
  log->message(message("error", "after the flood"));
  log->message(message("error", "and one more"));
  log->message(message("error", "dropped"));
  const std::vector<std::string> written = lines();
  ASSERT_EQ(written.size(), 8U);
  EXPECT_EQ(written[5], "warning|MCP server files: 95 log lines dropped (over 2 a second)");
  EXPECT_EQ(written[6], "error|MCP server files: after the flood");
  EXPECT_EQ(written[7], "error|MCP server files: and one more");
  log.reset();  // what was dropped since is reported at the end
  EXPECT_EQ(lines().back(), "warning|MCP server files: 1 more log lines dropped (over 2 a second)");
}

TEST_F(ServerLogTest, LinesBelowTheLoggersLevelDoNotSpendTheBudget) {
  logger_->set_level(spdlog::level::warn);
  McpServerLogOptions options;
  options.burst = 2;
  options.per_second = 1;
  auto log = make(options);
  for (int i = 0; i < 50; ++i) log->message(message("debug", i));
  log->stderr_line("chatter");
  log->message(message("error", "first"));
  log->problem(Error("mcp.stray_output", "the server wrote text on stdout"));
  EXPECT_EQ(lines(), (std::vector<std::string>{
                         "error|MCP server files: first",
                         "warning|MCP server files: mcp.stray_output: the server wrote text on stdout",
                     }));
}

TEST_F(ServerLogTest, TheLevelAskedOfAServerFollowsTheLoggersLevel) {
  EXPECT_EQ(mcp_log_level(spdlog::level::trace), "debug");
  EXPECT_EQ(mcp_log_level(spdlog::level::debug), "debug");
  EXPECT_EQ(mcp_log_level(spdlog::level::info), "info");
  EXPECT_EQ(mcp_log_level(spdlog::level::warn), "warning");
  EXPECT_EQ(mcp_log_level(spdlog::level::err), "error");
  EXPECT_EQ(mcp_log_level(spdlog::level::critical), "critical");
  EXPECT_EQ(mcp_log_level(spdlog::level::off), "emergency");
}

}  // namespace
}  // namespace keel::mcp
