// mcp/auth/oauth_discovery.cc — discovery URLs and the checks on the two metadata documents.
#include "mcp/auth/oauth_discovery.h"

#include "mcp/auth/auth_errors.h"
#include "mcp/auth/oauth_url.h"

namespace keel::mcp {
namespace {

using nlohmann::json;

constexpr char kResourceWellKnown[] = "/.well-known/oauth-protected-resource";
constexpr char kOauthWellKnown[] = "/.well-known/oauth-authorization-server";
constexpr char kOpenIdWellKnown[] = "/.well-known/openid-configuration";
constexpr size_t kMaxListEntries = 64;

Error bad_metadata(std::string_view document, std::string_view why) {
  return Error(codes::kMcpAuthBadMetadata, std::string(document) + ": " + std::string(why));
}

// The path of `url` without trailing slashes ("" for the root).
std::string trimmed_path(const HttpUrl& url) {
  std::string path = url.path;
  while (!path.empty() && path.back() == '/') path.pop_back();
  return path;
}

Result<std::string> string_member(const json& document, std::string_view name, std::string_view what,
                                  bool required) {
  const auto it = document.find(name);
  if (it == document.end() || it->is_null()) {
    if (required) return std::unexpected(bad_metadata(what, "no '" + std::string(name) + "'"));
    return std::string();
  }
  if (!it->is_string())
    return std::unexpected(bad_metadata(what, "'" + std::string(name) + "' is not a string"));
  return it->get<std::string>();
}

Result<std::vector<std::string>> string_list(const json& document, std::string_view name,
                                             std::string_view what) {
  std::vector<std::string> out;
  const auto it = document.find(name);
  if (it == document.end() || it->is_null()) return out;
  if (!it->is_array())
    return std::unexpected(bad_metadata(what, "'" + std::string(name) + "' is not an array"));
  for (const json& entry : *it) {
    if (!entry.is_string()) {
      return std::unexpected(bad_metadata(what, "'" + std::string(name) + "' holds something not a string"));
    }
    if (out.size() == kMaxListEntries) break;  // a longer list is cut, not refused: only its start is needed
    out.push_back(entry.get<std::string>());
  }
  return out;
}

Result<std::string> endpoint_member(const json& document, std::string_view name, bool required) {
  auto value = string_member(document, name, "authorization server metadata", required);
  if (!value || value->empty()) return value;
  if (auto url = parse_http_url(*value); !url) {
    return std::unexpected(
        bad_metadata("authorization server metadata", "'" + std::string(name) + "' is not an http(s) URL"));
  }
  return value;
}

bool contains(const std::vector<std::string>& list, std::string_view value) {
  for (const std::string& entry : list) {
    if (entry == value) return true;
  }
  return false;
}

}  // namespace

Result<std::vector<std::string>> protected_resource_metadata_urls(
    std::string_view server_url, const std::optional<BearerChallenge>& challenge) {
  auto server = parse_http_url(server_url);
  if (!server) return std::unexpected(server.error());
  std::vector<std::string> urls;
  if (challenge) {
    if (auto hinted = challenge->resource_metadata()) {
      auto parsed = parse_http_url(*hinted);
      if (!parsed) return std::unexpected(parsed.error());
      urls.push_back(parsed->to_string());
    }
  }
  const std::string path = trimmed_path(*server);
  if (!path.empty()) urls.push_back(server->origin() + kResourceWellKnown + path);
  urls.push_back(server->origin() + kResourceWellKnown);
  return urls;
}

Result<std::vector<std::string>> authorization_server_metadata_urls(std::string_view issuer) {
  auto url = parse_http_url(issuer);
  if (!url) return std::unexpected(url.error());
  const std::string path = trimmed_path(*url);
  const std::string origin = url->origin();
  if (path.empty()) return std::vector<std::string>{origin + kOauthWellKnown, origin + kOpenIdWellKnown};
  return std::vector<std::string>{origin + kOauthWellKnown + path, origin + kOpenIdWellKnown + path,
                                  origin + path + kOpenIdWellKnown};
}

Result<ProtectedResourceMetadata> parse_protected_resource_metadata(const json& document,
                                                                    std::string_view server_url) {
  constexpr std::string_view kWhat = "protected resource metadata";
  if (!document.is_object()) return std::unexpected(bad_metadata(kWhat, "not a JSON object"));
  ProtectedResourceMetadata out;
  auto resource = string_member(document, "resource", kWhat, /*required=*/true);
  if (!resource) return std::unexpected(resource.error());
  auto servers = string_list(document, "authorization_servers", kWhat);
  if (!servers) return std::unexpected(servers.error());
  if (servers->empty()) return std::unexpected(bad_metadata(kWhat, "no authorization server"));
  auto scopes = string_list(document, "scopes_supported", kWhat);
  if (!scopes) return std::unexpected(scopes.error());

  auto canonical_server = canonical_resource_uri(server_url);
  if (!canonical_server) return std::unexpected(canonical_server.error());
  auto canonical_resource = canonical_resource_uri(*resource);
  if (!canonical_resource) {
    return std::unexpected(Error(codes::kMcpAuthResourceMismatch,
                                 "the protected resource metadata names a resource that is not a URL"));
  }
  // The resource is the server itself or a parent of it: "https://h/api" covers "https://h/api/mcp", never
  // "https://h/apiary" and never another origin.
  const std::string& server_uri = *canonical_server;
  const std::string& resource_uri = *canonical_resource;
  const bool covers = server_uri == resource_uri ||
                      (server_uri.size() > resource_uri.size() && server_uri.starts_with(resource_uri) &&
                       server_uri[resource_uri.size()] == '/');
  if (!covers) {
    return std::unexpected(
        Error(codes::kMcpAuthResourceMismatch,
              "the protected resource metadata is for '" + resource_uri + "', not for '" + server_uri + "'"));
  }
  out.resource = std::move(*resource);
  out.authorization_servers = std::move(*servers);
  out.scopes_supported = std::move(*scopes);
  return out;
}

Result<AuthorizationServerMetadata> parse_authorization_server_metadata(const json& document,
                                                                        std::string_view expected_issuer) {
  constexpr std::string_view kWhat = "authorization server metadata";
  if (!document.is_object()) return std::unexpected(bad_metadata(kWhat, "not a JSON object"));
  AuthorizationServerMetadata out;
  auto issuer = string_member(document, "issuer", kWhat, /*required=*/true);
  if (!issuer) return std::unexpected(issuer.error());
  // RFC 8414 §3.3: identical, character for character, to the issuer the well-known URL was built from.
  if (*issuer != expected_issuer) {
    return std::unexpected(
        Error(codes::kMcpAuthIssuerMismatch,
              "the metadata's issuer '" + *issuer + "' is not '" + std::string(expected_issuer) + "'"));
  }
  out.issuer = std::move(*issuer);
  auto authorization = endpoint_member(document, "authorization_endpoint", /*required=*/true);
  if (!authorization) return std::unexpected(authorization.error());
  auto token = endpoint_member(document, "token_endpoint", /*required=*/true);
  if (!token) return std::unexpected(token.error());
  auto registration = endpoint_member(document, "registration_endpoint", /*required=*/false);
  if (!registration) return std::unexpected(registration.error());
  out.authorization_endpoint = std::move(*authorization);
  out.token_endpoint = std::move(*token);
  out.registration_endpoint = std::move(*registration);

  auto scopes = string_list(document, "scopes_supported", kWhat);
  auto auth_methods = string_list(document, "token_endpoint_auth_methods_supported", kWhat);
  auto grants = string_list(document, "grant_types_supported", kWhat);
  auto challenge_methods = string_list(document, "code_challenge_methods_supported", kWhat);
  for (const auto* list : {&scopes, &auth_methods, &grants, &challenge_methods}) {
    if (!*list) return std::unexpected(list->error());
  }
  if (!contains(*challenge_methods, "S256")) {
    return std::unexpected(Error(codes::kMcpAuthPkceUnsupported,
                                 "the authorization server '" + out.issuer +
                                     "' does not offer PKCE with S256 (code_challenge_methods_supported)"));
  }
  out.scopes_supported = std::move(*scopes);
  out.token_endpoint_auth_methods_supported = std::move(*auth_methods);
  out.grant_types_supported = std::move(*grants);
  for (const auto& [name, flag] :
       {std::pair{"client_id_metadata_document_supported", &out.client_id_metadata_document_supported},
        std::pair{"authorization_response_iss_parameter_supported",
                  &out.authorization_response_iss_parameter_supported}}) {
    const auto it = document.find(name);
    if (it != document.end() && it->is_boolean()) *flag = it->get<bool>();
  }
  return out;
}

std::optional<std::string> choose_scope(const std::optional<BearerChallenge>& challenge,
                                        const ProtectedResourceMetadata& resource) {
  if (challenge) {
    if (auto scope = challenge->scope(); scope && !scope->empty()) return scope;
  }
  if (resource.scopes_supported.empty()) return std::nullopt;
  std::string joined;
  for (const std::string& scope : resource.scopes_supported) {
    if (!joined.empty()) joined.push_back(' ');
    joined += scope;
  }
  return joined;
}

}  // namespace keel::mcp
