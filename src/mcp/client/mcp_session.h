// mcp/client/mcp_session.h — McpSession: keel's view of one connected MCP server (a client session).
//
// A session is opened over a transport (mcp_transport.h) by open_mcp_session() (session_open.h), which
// runs the version probe and handshake of the revision the server speaks (2025-03-26 .. 2025-11-25:
// initialize / notifications/initialized; 2026-07-28: server/discover and per-request _meta) and returns
// only once the server can be called. Everything after that is the same for both generations:
//   - list_tools() fetches every page of tools/list;
//   - call_tool() sends tools/call with a fresh progressToken, reports notifications/progress through
//     the request's on_progress (each one also restarts the call's idle timeout; max_total still bounds
//     the whole call), and on cancellation or timeout sends notifications/cancelled and completes with
//     `cancelled` or mcp.call_timed_out;
//   - the server's notifications (tools/list_changed, message) and the end of the channel reach
//     McpSessionEvents.
//
// Threading: every method may be called from any thread; `done` callbacks and events run on the
// session's transport thread (or its timer thread for a timeout, or the thread that cancelled or closed),
// never under a lock of the session's, and must not block for long. A completion callback is called exactly
// once, also when the session closes first (mcp.server_exited, mcp.transport_closed). on_progress may still
// run once while a call is being cancelled from another thread.
#pragma once

#include <chrono>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "keel/cancellation.h"
#include "keel/error.h"

namespace keel::mcp {

// What the server said about itself when the session opened.
struct McpServerInfo {
  std::string protocol_version;  // the negotiated revision: "2025-11-25", "2026-07-28", ...
  std::string name;              // serverInfo.name ("" when absent)
  std::string version;           // serverInfo.version
  std::string instructions;      // "" when none
  nlohmann::json capabilities = nlohmann::json::object();
};

// One entry of tools/list, as the server sent it (untrusted: nothing here is checked yet beyond its
// shape; mcp/host decides what becomes a keel tool).
struct McpToolInfo {
  std::string name;
  std::string title;  // "" when absent (annotations.title is in `annotations`)
  std::string description;
  nlohmann::json input_schema = nlohmann::json::object();
  std::optional<nlohmann::json> output_schema;
  nlohmann::json annotations = nlohmann::json::object();  // readOnlyHint, destructiveHint, ...
  nlohmann::json meta = nlohmann::json::object();         // _meta
};

struct McpProgress {
  double progress = 0;
  std::optional<double> total;
  std::string message;
};

struct McpCallRequest {
  std::string tool;  // the server's name for it
  nlohmann::json arguments = nlohmann::json::object();
  CancellationToken cancel;
  std::function<void(McpProgress)> on_progress;  // may be null
  // No message about the call (result or progress) for this long ends it with mcp.call_timed_out.
  std::chrono::milliseconds idle_timeout = std::chrono::seconds(60);
  // The call never runs longer than this, progress or not.
  std::chrono::milliseconds max_total = std::chrono::minutes(10);
};

// A CallToolResult, as the server sent it. isError results are results, not errors: the model sees them.
struct McpCallResult {
  nlohmann::json content = nlohmann::json::array();  // the content blocks, unconverted
  std::optional<nlohmann::json> structured_content;
  bool is_error = false;
  nlohmann::json meta = nlohmann::json::object();
};

struct McpLogMessage {
  std::string level;  // debug, info, notice, warning, error, critical, alert, emergency
  std::string logger;
  nlohmann::json data;
};

// What the server tells the client unasked. Every member may be null.
struct McpSessionEvents {
  std::function<void()> on_tools_changed;  // notifications/tools/list_changed
  std::function<void(McpLogMessage)> on_log;
  // The session ended by itself (server exited, channel lost); not called for close(). Pending calls have
  // failed with the same reason.
  std::function<void(const Error& reason)> on_closed;
  // Something wrong the session survived (stray output, an unexpected response id, a malformed tools/list
  // entry that was skipped), or, with is_log, a line the server wrote on stderr (mcp.server_log).
  std::function<void(const Error& problem, bool is_log)> on_problem;
};

class McpSession {
 public:
  virtual ~McpSession() = default;

  virtual const McpServerInfo& server_info() const = 0;
  // Every page of tools/list, in the server's order. Errors: mcp.rpc_error (the server's JSON-RPC error,
  // its code and message in the text), mcp.bad_response (not a ListToolsResult), mcp.too_many_tools,
  // mcp.call_timed_out, mcp.server_exited / mcp.transport_closed.
  virtual void list_tools(std::function<void(Result<std::vector<McpToolInfo>>)> done) = 0;
  // tools/call. Errors as list_tools, and `cancelled` when request.cancel fired first.
  virtual void call_tool(McpCallRequest request, std::function<void(Result<McpCallResult>)> done) = 0;
  // Ends the session and its transport; pending calls complete with mcp.transport_closed. Idempotent.
  virtual void close() = 0;
};

}  // namespace keel::mcp
