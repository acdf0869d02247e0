// cli/mcp_sessions.cc — mcp_session_factory() (mcp_sessions.h).
#include "cli/mcp_sessions.h"

#include "mcp/host/session_factory.h"

namespace keel::cli {

mcp::McpSessionFactory mcp_session_factory() {
#if defined(KEEL_MCP_CLIENT)
  return mcp::make_mcp_session_factory();
#else
  // TODO(lead): goes away once the MCP client library is merged (src/mcp/host/CMakeLists.txt builds
  // keel_mcp_session_factory and src/cli/CMakeLists.txt defines KEEL_MCP_CLIENT).
  return mcp::unavailable_session_factory();
#endif
}

}  // namespace keel::cli
