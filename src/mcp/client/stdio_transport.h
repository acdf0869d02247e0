// mcp/client/stdio_transport.h — the stdio transport (McpTransport over a spawned server process).
//
// The server is started with posix_spawn in a process group of its own, with every descriptor but its
// stdin, stdout and stderr closed (keel's own descriptors are close-on-exec). Messages are one JSON
// object per line on its stdin/stdout. A stdout line that is not a JSON object is reported through
// on_problem (mcp.stray_output) and skipped; each stderr line is reported as a log (is_log = true), never as
// an error. close() closes the server's stdin, waits `shutdown_grace`, then sends SIGTERM and finally SIGKILL
// to the process group, and reaps the process.
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "keel/error.h"
#include "mcp/client/mcp_transport.h"

namespace keel::mcp {

struct StdioServerSpec {
  std::string command;  // a path, or a name looked up on PATH
  std::vector<std::string> args;
  // Added to (and overriding) keel's own environment for the server.
  std::map<std::string, std::string> env;
  std::filesystem::path cwd;  // empty: keel's working directory
  size_t max_line_bytes = size_t{16} << 20;
  std::chrono::milliseconds shutdown_grace = std::chrono::seconds(2);
};

// Does not spawn yet (start() does). Errors: invalid_argument (empty command).
Result<std::unique_ptr<McpTransport>> make_stdio_transport(StdioServerSpec spec);

}  // namespace keel::mcp
