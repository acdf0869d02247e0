// mcp/mcp_stdio_server.h — keel's tools served to an MCP client (protocol revision 2025-11-25) over a pair
// of byte streams: newline-delimited JSON-RPC 2.0, one message per line, in on `in`, out on `out`. The
// output carries protocol messages only; diagnostics go to McpServerOptions::log.
//
// Methods: initialize (answered with the client's protocolVersion when it is 2025-11-25, 2025-06-18 or
// 2025-03-26, else with 2025-11-25), ping, tools/list (every tool at once, no cursor), tools/call (through
// the ToolBridge; its params._meta.progressToken gets notifications/progress for the tool's progress).
// Notifications: notifications/initialized, notifications/cancelled {requestId} (cancels that call's
// token; the cancelled call is not answered, as the MCP cancellation utility says); others are ignored.
//
// Concurrency: lines are read on the thread that calls run(); each tools/call runs on one of a few worker
// threads, so calls run at once and are answered in the order they finish, not the order they came. Every
// other method is answered at once, in order. At most max_calls_in_flight calls run at once; one more gets
// mcp.too_many_calls.
//
// Bad input never ends the server and never goes unanswered when it has an id (docs/mcp-server.md lists the
// codes; each JSON-RPC error carries keel's code in data.code): not JSON or not UTF-8 -32700
// rpc.parse_error; nesting deeper than 128 -32600 json.too_deep; not an object, a batch, no "2.0", a bad id
// or method -32600 rpc.invalid_request; a line over max_line_bytes -32600 rpc.message_too_large (the line
// is skipped to its end); an unknown method -32601 rpc.method_not_found; params of the wrong shape or an
// unknown tool -32602 rpc.invalid_params / tool.not_found; the id of a call still in flight -32600
// mcp.duplicate_id; a failure of keel itself -32603 internal.
//
// End of input (the client closed it, also in the middle of a line, which is then parsed as it is): every
// call read before it may finish within eof_grace and is answered; the calls still running then are
// cancelled and answered with -32000 `cancelled`, and run() returns. A tool that reports after that is not
// answered (the client is gone).
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>

#include "mcp/tool_bridge.h"

namespace keel::mcp {

inline constexpr char kLatestProtocolVersion[] = "2025-11-25";

struct McpServerOptions {
  std::string server_name = "keel";
  std::string server_version = "0.1.0";
  std::string instructions;  // initialize's `instructions` ("" = none)
  size_t max_line_bytes = size_t{4} << 20;
  size_t max_calls_in_flight = 64;
  size_t worker_threads = 4;
  std::chrono::milliseconds eof_grace = std::chrono::seconds(10);
  std::function<void(const std::string&)> log = nullptr;  // one diagnostic line; null = none
};

// The protocol revision initialize answers a client asking for `requested` with.
std::string negotiate_protocol_version(const std::string& requested);

class McpStdioServer {
 public:
  // `bridge` must outlive run().
  McpStdioServer(const ToolBridge& bridge, McpServerOptions options);
  ~McpStdioServer();
  McpStdioServer(const McpStdioServer&) = delete;
  McpStdioServer& operator=(const McpStdioServer&) = delete;

  // Serves until `in` ends and the calls are answered (above). Call once. `out` is written under a lock,
  // one whole line per message, flushed; it must outlive run() (nothing is written to it afterwards).
  void run(std::istream& in, std::ostream& out);

 private:
  struct Session;
  const ToolBridge& bridge_;
  McpServerOptions options_;
  std::shared_ptr<Session> session_;
};

}  // namespace keel::mcp
