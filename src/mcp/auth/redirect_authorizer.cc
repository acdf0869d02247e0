// mcp/auth/redirect_authorizer.cc — consent by following one redirect.
#include "mcp/auth/redirect_authorizer.h"

#include <cctype>

#include "mcp/auth/auth_errors.h"

namespace keel::mcp {
namespace {

bool same_header_name(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  }
  return true;
}

}  // namespace

Authorizer make_redirect_authorizer(HttpFetch fetch) {
  return [fetch = std::move(fetch)](const std::string& authorization_url,
                                    const std::string& redirect_uri) -> Result<std::string> {
    auto reply = fetch(HttpCall{"GET", authorization_url, {}, ""});
    if (!reply) return std::unexpected(reply.error());
    const int status = reply->status;
    const bool redirect = status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
    if (!redirect) {
      return std::unexpected(
          Error(codes::kMcpAuthDenied,
                "the authorization endpoint answered " + std::to_string(status) + " instead of a redirect"));
    }
    for (const auto& [name, value] : reply->headers) {
      if (!same_header_name(name, "Location")) continue;
      // The redirect URI itself, or it followed by its query: never a URI that merely begins the same way.
      if (value.starts_with(redirect_uri) &&
          (value.size() == redirect_uri.size() || value[redirect_uri.size()] == '?')) {
        return value;
      }
      return std::unexpected(
          Error(codes::kMcpAuthDenied, "the authorization endpoint redirected somewhere other than keel"));
    }
    return std::unexpected(
        Error(codes::kMcpAuthDenied, "the authorization endpoint's redirect has no Location"));
  };
}

}  // namespace keel::mcp
