// mcp/client/mcp_session_impl.h — the McpSession behind open_mcp_session(): a transport, the JSON-RPC core
// over it, and what the handshake chose (generation, revision, server info).
//
// open_mcp_session() (session_open.cc) builds one, starts it, runs the probe and handshake through
// request_blocking() and finally calls become_ready(). Its callbacks capture the shared Context, never the
// session itself, so the session may be dropped from inside one of them.
#pragma once

#include <atomic>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "mcp/client/jsonrpc_client.h"
#include "mcp/client/mcp_session.h"
#include "mcp/client/mcp_transport.h"
#include "mcp/client/session_open.h"

namespace keel::mcp {

class McpSessionImpl final : public McpSession {
 public:
  McpSessionImpl(std::unique_ptr<McpTransport> transport, McpClientOptions options, McpSessionEvents events);
  ~McpSessionImpl() override;
  McpSessionImpl(const McpSessionImpl&) = delete;
  McpSessionImpl& operator=(const McpSessionImpl&) = delete;

  // Starts the transport with handlers that feed the core.
  Result<void> start();
  // A request the handshake waits for (real time, at most `timeout`). errors_as_values as in
  // RpcRequestOptions.
  Result<nlohmann::json> request_blocking(const std::string& method, nlohmann::json params,
                                          std::chrono::milliseconds timeout, bool cancel_on_timeout,
                                          bool errors_as_values);
  Result<void> notify(const std::string& method, nlohmann::json params);
  // The per-request _meta of the 2026-07-28 generation (protocolVersion, clientCapabilities, clientInfo).
  nlohmann::json modern_meta() const;
  nlohmann::json client_info() const;
  // The handshake is done: later requests carry the modern _meta when `modern`.
  void become_ready(McpServerInfo info, bool modern);
  // Sends logging/setLevel without waiting: an error answer or none is reported through on_problem.
  void request_log_level(std::string level);

  const McpServerInfo& server_info() const override { return info_; }
  void list_tools(std::function<void(Result<std::vector<McpToolInfo>>)> done) override;
  void call_tool(McpCallRequest request, std::function<void(Result<McpCallResult>)> done) override;
  void close() override;

  // What callbacks share (outlives the session while a request is in flight).
  struct Context {
    std::shared_ptr<JsonRpcClient> core;
    McpClientOptions options;
    McpSessionEvents events;
    nlohmann::json meta;  // merged into every request's params._meta (empty for the older generation)
    bool check_param_headers = false;  // 2026-07-28: tools with invalid x-mcp-header declarations are dropped
    void problem(const Error& error, bool is_log) const {
      if (events.on_problem) events.on_problem(error, is_log);
    }
  };

 private:
  std::shared_ptr<Context> context_;
  std::unique_ptr<McpTransport> transport_;
  McpServerInfo info_;
  std::atomic<bool> closed_{false};
};

}  // namespace keel::mcp
