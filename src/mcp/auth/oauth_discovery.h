// mcp/auth/oauth_discovery.h — finding and checking the authorization of an MCP server over HTTP (MCP
// "Authorization": RFC 9728 protected-resource metadata, RFC 8414 / OpenID Connect discovery of the
// authorization server).
//
// The flow (mcp/auth/oauth_flow.h) asks these pure functions which documents to fetch, in which order, and
// whether what came back may be used:
//   - protected_resource_metadata_urls(): the `resource_metadata` URL of the 401's challenge when there is
//     one, else the well-known URL with the server's path inserted, then the one at the root;
//   - authorization_server_metadata_urls(): for an issuer with a path, RFC 8414 path-inserted, OpenID
//     path-inserted, OpenID path-appended; without a path, RFC 8414 then OpenID;
//   - parse_protected_resource_metadata(): the document's `resource` must be the server's canonical URI or
//     a prefix of it on a path-segment boundary (same origin); otherwise the metadata is for another
//     resource and is refused (a server must not send keel's token elsewhere);
//   - parse_authorization_server_metadata(): `issuer` must be exactly the issuer asked for, the
//     authorization and token endpoints must be http(s) URLs, and PKCE with S256 must be offered (MCP: a
//     client MUST refuse to go on without it);
//   - choose_scope(): the challenge's scope, else every scope the resource metadata lists, else none.
//
// Pure; thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "keel/error.h"
#include "mcp/auth/www_authenticate.h"

namespace keel::mcp {

struct ProtectedResourceMetadata {
  std::string resource;
  std::vector<std::string> authorization_servers;  // issuers, at least one
  std::vector<std::string> scopes_supported;
};

struct AuthorizationServerMetadata {
  std::string issuer;
  std::string authorization_endpoint;
  std::string token_endpoint;
  std::string registration_endpoint;  // "" when dynamic client registration is not offered
  std::vector<std::string> scopes_supported;
  std::vector<std::string> token_endpoint_auth_methods_supported;  // empty means client_secret_basic
  std::vector<std::string> grant_types_supported;
  bool client_id_metadata_document_supported = false;
  // RFC 9207: the authorization response carries `iss`, and keel must check it.
  bool authorization_response_iss_parameter_supported = false;
};

// Errors: mcp.auth_bad_url (the server URL or the challenge's metadata URL).
Result<std::vector<std::string>> protected_resource_metadata_urls(
    std::string_view server_url, const std::optional<BearerChallenge>& challenge);

// Errors: mcp.auth_bad_url.
Result<std::vector<std::string>> authorization_server_metadata_urls(std::string_view issuer);

// Errors: mcp.auth_bad_metadata (not an object, no resource, no authorization server, members of the wrong
// type), mcp.auth_resource_mismatch.
Result<ProtectedResourceMetadata> parse_protected_resource_metadata(const nlohmann::json& document,
                                                                    std::string_view server_url);

// Errors: mcp.auth_bad_metadata, mcp.auth_issuer_mismatch, mcp.auth_pkce_unsupported.
Result<AuthorizationServerMetadata> parse_authorization_server_metadata(const nlohmann::json& document,
                                                                        std::string_view expected_issuer);

// The scope to ask for: nullopt means the request names none.
std::optional<std::string> choose_scope(const std::optional<BearerChallenge>& challenge,
                                        const ProtectedResourceMetadata& resource);

}  // namespace keel::mcp
