// mcp/auth/www_authenticate.h — reading the Bearer challenge of a WWW-Authenticate header (RFC 9110 §11.6.1,
// RFC 6750 §3, RFC 9728 §5.1).
//
// A 401 or 403 from an MCP server names, in its Bearer challenge, where the protected-resource metadata is
// (`resource_metadata`), the scope the request needs (`scope`) and why it failed (`error`:
// invalid_token, insufficient_scope). The header may hold several challenges ("Basic realm=x, Bearer
// scope=...") and parameters as tokens or quoted strings with escapes; unknown parameters are ignored.
//
// Pure; thread-safe.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "keel/error.h"

namespace keel::mcp {

struct BearerChallenge {
  // Parameter names are lower-cased; values are unquoted and unescaped.
  std::map<std::string, std::string> params;

  std::optional<std::string> get(std::string_view name) const;
  std::optional<std::string> resource_metadata() const { return get("resource_metadata"); }
  std::optional<std::string> scope() const { return get("scope"); }
  std::optional<std::string> error() const { return get("error"); }
};

// The Bearer challenge of `header` (the scheme matched case-insensitively); nullopt when the header holds
// challenges of other schemes only. Errors: mcp.auth_bad_challenge (the header does not parse: an
// unterminated quoted string, a parameter without a value, a header over 8 KiB).
Result<std::optional<BearerChallenge>> parse_bearer_challenge(std::string_view header);

}  // namespace keel::mcp
