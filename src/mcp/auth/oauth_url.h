// mcp/auth/oauth_url.h — the URL work of the OAuth flow, on libcurl's URL API (curl_url), so keel parses and
// builds URLs the way its HTTP client will read them.
//
// Pure functions over values; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "keel/error.h"

namespace keel::mcp {

// An absolute http(s) URL, split. scheme and host are lower-case; port is "" for the scheme's default;
// path is never empty ("/" at least); query has no leading '?' ("" when none); the fragment is dropped.
struct HttpUrl {
  std::string scheme;
  std::string host;
  std::string port;
  std::string path;
  std::string query;

  // scheme://host[:port]
  std::string origin() const;
  // The whole URL again, without the fragment.
  std::string to_string() const;
};

using QueryParams = std::vector<std::pair<std::string, std::string>>;

// Errors: mcp.auth_bad_url (not a URL, not http or https, userinfo in it).
Result<HttpUrl> parse_http_url(std::string_view text);

// The canonical URI of an MCP server, for the `resource` parameter (RFC 8707; MCP "Canonical Server URI"):
// lower-case scheme and host, the default port left out, no fragment, no query, and no trailing '/' unless
// the path is only "/" (then it is left out too: "https://mcp.example.com").
Result<std::string> canonical_resource_uri(std::string_view server_url);

// application/x-www-form-urlencoded, in the given order.
std::string form_encode(const QueryParams& params);
// The pairs of a query string or form body, decoded ('+' is a space). A pair without '=' has value "".
QueryParams form_decode(std::string_view text);
// The first value of `name` in `params`.
std::optional<std::string> find_param(const QueryParams& params, std::string_view name);

// `url` with `params` appended to its query (existing parameters are kept). Errors: mcp.auth_bad_url.
Result<std::string> with_query(std::string_view url, const QueryParams& params);

}  // namespace keel::mcp
