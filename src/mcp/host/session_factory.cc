// mcp/host/session_factory.cc — make_mcp_session_factory() (session_factory.h).
#include "mcp/host/session_factory.h"

#include "mcp/client/http_transport.h"
#include "mcp/client/session_open.h"
#include "mcp/client/stdio_transport.h"
#include "mcp/host/mcp_host_errors.h"
#include "mcp/host/server_log.h"

namespace keel::mcp {
namespace {

Result<std::unique_ptr<McpTransport>> http_transport_for(const McpServerSettings& server,
                                                         const McpBearerTokens& tokens) {
  HttpTransportOptions options;
  options.url = server.url;
  options.connect_timeout = server.connect_timeout;
  if (!server.credential.empty()) {
    if (!tokens) {
      return fail(codes::kMcpServerUnavailable,
                  "MCP server " + server.name + ": its credential cannot be read here (no credential store)");
    }
    options.bearer_token = [tokens, reference = server.credential,
                            name = server.name]() -> Result<std::string> {
      auto token = tokens(reference);
      if (!token) return std::unexpected(token.error().with_context("MCP server " + name + "'s credential"));
      if (!*token) {
        return fail(codes::kMcpServerUnavailable,
                    "MCP server " + name + ": its credential '" + reference + "' holds no token");
      }
      return std::move(**token);
    };
  }
  return make_http_transport(std::move(options));
}

// The events with the server's logging written to `log` first.
McpSessionEvents logged_events(McpSessionEvents events, const std::string& server,
                               std::shared_ptr<spdlog::logger> log) {
  auto server_log = std::make_shared<McpServerLog>(server, std::move(log));
  events.on_log = [server_log, next = std::move(events.on_log)](McpLogMessage message) {
    server_log->message(message);
    if (next) next(std::move(message));
  };
  events.on_problem = [server_log, next = std::move(events.on_problem)](const Error& problem, bool is_log) {
    if (is_log) {
      server_log->stderr_line(problem.message());
    } else {
      server_log->problem(problem);
    }
    if (next) next(problem, is_log);
  };
  return events;
}

}  // namespace

McpSessionFactory make_mcp_session_factory(McpBearerTokens tokens, std::shared_ptr<spdlog::logger> log) {
  return
      [tokens = std::move(tokens), log = std::move(log)](
          const McpServerSettings& server, McpSessionEvents events) -> Result<std::shared_ptr<McpSession>> {
        std::unique_ptr<McpTransport> transport;
        if (!server.url.empty()) {
          transport = KEEL_TRY(http_transport_for(server, tokens));
        } else {
          StdioServerSpec spec;
          spec.command = server.command;
          spec.args = server.args;
          spec.env = server.env;
          spec.cwd = server.cwd;
          transport = KEEL_TRY(make_stdio_transport(std::move(spec)));
        }
        McpClientOptions options;
        options.handshake_timeout = server.connect_timeout;
        if (log) {
          options.log_level = mcp_log_level(log->level());
          events = logged_events(std::move(events), server.name, log);
        }
        return open_mcp_session(std::move(transport), std::move(options), std::move(events));
      };
}

}  // namespace keel::mcp
