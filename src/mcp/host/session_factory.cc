// mcp/host/session_factory.cc — make_mcp_session_factory() (session_factory.h). Built only with the MCP
// client library (src/mcp/host/CMakeLists.txt).
#include "mcp/host/session_factory.h"

#include "mcp/client/session_open.h"
#include "mcp/client/stdio_transport.h"
#include "mcp/host/mcp_host_errors.h"

namespace keel::mcp {

McpSessionFactory make_mcp_session_factory() {
  return [](const McpServerSettings& server, McpSessionEvents events) -> Result<std::shared_ptr<McpSession>> {
    if (!server.url.empty()) {
      // TODO(lead): once the Streamable HTTP transport is merged, build it here from server.url, with the
      // bearer token resolved from server.credential (config/credential_resolver.h).
      return fail(
          codes::kMcpServerUnavailable,
          "MCP server " + server.name + ": Streamable HTTP servers are not supported by this build yet");
    }
    StdioServerSpec spec;
    spec.command = server.command;
    spec.args = server.args;
    spec.env = server.env;
    spec.cwd = server.cwd;
    std::unique_ptr<McpTransport> transport = KEEL_TRY(make_stdio_transport(std::move(spec)));
    McpClientOptions options;
    options.handshake_timeout = server.connect_timeout;
    return open_mcp_session(std::move(transport), std::move(options), std::move(events));
  };
}

}  // namespace keel::mcp
