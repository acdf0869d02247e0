// mcp/host/server_log.h — McpServerLog: what an MCP server logs, written to keel's log (spdlog).
//
// Three things a server says reach keel's log through it, each line naming the server ("MCP server NAME"):
//   - its notifications/message (levels debug .. emergency, mapped to spdlog's: debug -> debug, info and
//     notice -> info, warning -> warn, error -> err, critical, alert and emergency -> critical; a level
//     MCP does not define is logged at warn, naming it), with the message's `logger` and `data` (a string
//     as it is, anything else as JSON);
//   - the lines a stdio server writes on stderr (info);
//   - what the session survived (stray output, unexpected response ids: warn, with the error code).
// A server must not be able to fill keel's log: every line is cut at options.max_line_bytes (on a UTF-8
// character boundary, the cut said), control characters become spaces (a line stays one line), and lines
// pass a token bucket (options.burst at once, options.per_second sustained). What the bucket drops is
// counted and reported (warn) before the next line that passes, and when the McpServerLog is destroyed.
// Lines below the logger's level are dropped before the bucket, so debug chatter never crowds out errors.
//
// Thread-safe: the session calls it from its transport's threads.
#pragma once

#include <spdlog/logger.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "keel/clock.h"
#include "keel/error.h"
#include "mcp/client/mcp_session.h"

namespace keel::mcp {

struct McpServerLogOptions {
  size_t max_line_bytes = 2048;
  double burst = 100;      // lines at once
  double per_second = 20;  // lines a second, sustained
};

class McpServerLog {
 public:
  // `clock` null: the system clock.
  McpServerLog(std::string server, std::shared_ptr<spdlog::logger> logger,
               std::shared_ptr<const Clock> clock = nullptr, McpServerLogOptions options = {});
  ~McpServerLog();
  McpServerLog(const McpServerLog&) = delete;
  McpServerLog& operator=(const McpServerLog&) = delete;

  void message(const McpLogMessage& message);  // a notifications/message
  void stderr_line(std::string_view line);     // a line of a stdio server's stderr
  void problem(const Error& problem);          // something the session survived

 private:
  void write(spdlog::level::level_enum level, std::string text);

  const std::string server_;
  const std::shared_ptr<spdlog::logger> logger_;
  const std::shared_ptr<const Clock> clock_;
  const McpServerLogOptions options_;
  std::mutex mu_;
  double tokens_;
  std::chrono::steady_clock::time_point refilled_;
  size_t dropped_ = 0;
};

// The MCP logging level (logging/setLevel) that matches a logger's level: trace and debug -> "debug",
// info -> "info", warn -> "warning", err -> "error", critical -> "critical", off -> "emergency".
std::string mcp_log_level(spdlog::level::level_enum level);

// spdlog's level for an MCP level; nullopt for a level MCP does not define.
std::optional<spdlog::level::level_enum> spdlog_level(std::string_view mcp_level);

}  // namespace keel::mcp
