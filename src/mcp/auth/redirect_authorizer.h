// mcp/auth/redirect_authorizer.h — an Authorizer for authorization servers that consent without a person:
// it requests the authorization URL itself and takes the redirect the server answers with.
//
// For servers that grant automatically (the MCP conformance suite's test authorization server, a server whose
// session keel's HTTP client already holds) and for tests. The answer must be a redirect (301, 302, 303, 307
// or 308) whose Location starts with the redirect URI; a relative or foreign Location is refused, so the flow
// never reads a code meant for someone else.
#pragma once

#include "mcp/auth/oauth_flow.h"

namespace keel::mcp {

// Errors: mcp.auth_denied (no redirect, or one to somewhere else), the fetch's errors.
Authorizer make_redirect_authorizer(HttpFetch fetch);

}  // namespace keel::mcp
