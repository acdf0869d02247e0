// mcp/client/session_open.h — opening an MCP client session over a transport.
//
// open_mcp_session() starts the transport, chooses the protocol generation the server speaks by the
// version probe of the MCP specification (a 2026-07-28 server/discover first; a recognised modern answer
// means the stateless generation, anything else or silence means initialize with the newest older revision
// keel speaks, accepting a lower one the server answers with when keel speaks it too) and completes the
// handshake. It blocks the calling thread for at most options.handshake_timeout; call it from a thread that
// may block (mcp/host runs it on its own).
//
// Errors: mcp.handshake_timed_out, mcp.version_unsupported (no revision in common), mcp.bad_response,
// mcp.rpc_error, mcp.server_exited, and the transport's start() errors. On error the transport is closed.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "keel/clock.h"
#include "keel/error.h"
#include "mcp/client/mcp_session.h"
#include "mcp/client/mcp_transport.h"

namespace keel::mcp {

struct McpClientOptions {
  std::string client_name = "keel";
  std::string client_version = "0.1.0";
  std::chrono::milliseconds handshake_timeout = std::chrono::seconds(30);
  // Bounds on what the server may send: tools over max_tools are refused (mcp.too_many_tools), a message
  // over max_message_bytes is refused by the transport.
  size_t max_tools = 1000;
  size_t max_message_bytes = size_t{16} << 20;
  // How long the server/discover probe waits before deciding the server is of the older generation
  // (bounded by handshake_timeout). Legacy servers that ignore unknown methods cost this much at start.
  std::chrono::milliseconds probe_timeout = std::chrono::seconds(5);
  // tools/list pages beyond this many fail with mcp.too_many_tools (a server looping on its cursor).
  size_t max_tool_pages = 100;
  // Each tools/list page must arrive within this.
  std::chrono::milliseconds list_timeout = std::chrono::seconds(60);
  // The MCP logging level asked of a server that declares the `logging` capability ("debug" .. "emergency";
  // "": none asked, the server's default stands). Sent as logging/setLevel right after the handshake of the
  // older generation, without waiting for its answer: a refusal or silence is reported through on_problem
  // and changes nothing else. (The 2026-07-28 generation has no session to set a level on.)
  std::string log_level;
  // Deadlines of calls are measured on this clock (null: the system clock). The handshake's own timeouts
  // are real time.
  std::shared_ptr<const Clock> clock;
};

Result<std::shared_ptr<McpSession>> open_mcp_session(std::unique_ptr<McpTransport> transport,
                                                     McpClientOptions options, McpSessionEvents events);

}  // namespace keel::mcp
