// mcp/client/mcp_transport.h — McpTransport: the channel between keel's MCP client and one server.
//
// A transport moves whole JSON-RPC messages: send() hands one message (request, notification or response)
// to the server, and every message the server sends arrives, parsed, through Handlers::on_message. It knows
// nothing of the protocol's methods; the session (mcp_session.h) does. Two implementations:
//   - stdio (stdio_transport.h): a spawned server process, newline-delimited JSON on its stdin/stdout;
//   - Streamable HTTP (http_transport.h): each message POSTed, replies as JSON or an SSE stream.
//
// Threading: handlers are called from the transport's own thread(s), one at a time (never concurrently
// with each other), and never after close() has returned. send() and close() may be called from any
// thread, also from inside a handler.
//
// Errors are values with mcp.* codes; bad input from the server (a line that is not JSON, a message that
// is not an object) is reported through on_problem and skipped: it never ends the transport by itself.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "keel/error.h"

namespace keel::mcp {

class McpTransport {
 public:
  struct Handlers {
    // One inbound message, a JSON object. Never null once start() succeeded.
    std::function<void(nlohmann::json message)> on_message;
    // Something wrong that the transport survived (stray output, an oversized line, a log line on stderr
    // when `is_log` is true). May be null.
    std::function<void(const Error& problem, bool is_log)> on_problem;
    // The channel ended (process exited, stream closed, session gone): called at most once, and no
    // message follows it. The error says why (mcp.server_exited, mcp.session_expired, ...). May be null.
    std::function<void(const Error& reason)> on_closed;
  };

  virtual ~McpTransport() = default;

  // Opens the channel (spawns the process; for HTTP nothing is sent yet). Call once.
  virtual Result<void> start(Handlers handlers) = 0;
  // Queues one message. mcp.transport_closed once the channel ended; mcp.message_too_large over the
  // transport's bound. A successful send says nothing about whether the server read it.
  virtual Result<void> send(const nlohmann::json& message) = 0;
  // Ends the channel (stdio: close stdin, then SIGTERM, then SIGKILL to the process group; HTTP: DELETE
  // the session). Idempotent. Blocks until no handler runs any more.
  virtual void close() = 0;
  // The session tells the transport the revision it negotiated, once the handshake is done, and again
  // when it changes: Streamable HTTP sends it as the MCP-Protocol-Version header of every later request.
  // Default: nothing to do (stdio).
  virtual void set_protocol_version(std::string version) { (void)version; }
  // The handshake of a revision with sessions (before 2026-07-28) is done: a transport whose server can only
  // send unasked messages (list_changed, logs) on a channel of their own opens it now. Streamable HTTP: the
  // standalone GET stream. Default: nothing to do (stdio's stdout carries everything).
  virtual void open_server_stream() {}
  // What identifies the server for people and for the tool binding: the command line, or the URL.
  virtual std::string endpoint() const = 0;
};

}  // namespace keel::mcp
