// mcp/auth/oauth_flow.cc — the authorization-code flow over an injected HTTP fetch.
#include "mcp/auth/oauth_flow.h"

#include <nlohmann/json.hpp>

#include "mcp/auth/auth_errors.h"
#include "mcp/auth/oauth_url.h"
#include "mcp/auth/pkce.h"

namespace keel::mcp {
namespace {

using nlohmann::json;

constexpr size_t kMaxDocumentBytes = 256 * 1024;

// The first candidate whose answer is a JSON document `accept` takes. A candidate that fails to fetch,
// answers non-2xx or is not JSON is skipped; a document `accept` refuses ends the search with that error
// (a metadata document that exists but is wrong must not be papered over by a later one).
template <typename T, typename Accept>
Result<T> first_document(const std::vector<std::string>& urls, const HttpFetch& fetch, std::string_view what,
                         Accept accept) {
  std::optional<Error> last;
  for (const std::string& url : urls) {
    auto reply = fetch(HttpCall{"GET", url, {{"Accept", "application/json"}}, ""});
    if (!reply) {
      last = reply.error();
      continue;
    }
    if (reply->status < 200 || reply->status >= 300 || reply->body.size() > kMaxDocumentBytes) {
      last = Error(codes::kMcpAuthBadMetadata,
                   std::string(what) + ": " + url + " answered " + std::to_string(reply->status));
      continue;
    }
    const json document = json::parse(reply->body, nullptr, /*allow_exceptions=*/false);
    if (document.is_discarded()) {
      last = Error(codes::kMcpAuthBadMetadata, std::string(what) + ": " + url + " is not JSON");
      continue;
    }
    return accept(document);
  }
  return std::unexpected(
      last.value_or(Error(codes::kMcpAuthBadMetadata, std::string(what) + ": nowhere to look")));
}

Result<HttpReply> post(const HttpFetch& fetch, const FormRequest& request) {
  HttpCall call{"POST", request.url, request.headers, request.body};
  return fetch(call);
}

}  // namespace

Result<OAuthGrant> sign_in(const std::string& server_url, const std::optional<BearerChallenge>& challenge,
                           const SignInOptions& options, const HttpFetch& fetch,
                           const Authorizer& authorizer) {
  auto resource_uri = canonical_resource_uri(server_url);
  if (!resource_uri) return std::unexpected(resource_uri.error());
  auto resource_urls = protected_resource_metadata_urls(server_url, challenge);
  if (!resource_urls) return std::unexpected(resource_urls.error());
  auto resource = first_document<ProtectedResourceMetadata>(
      *resource_urls, fetch, "protected resource metadata",
      [&](const json& document) { return parse_protected_resource_metadata(document, server_url); });
  if (!resource) return std::unexpected(resource.error());
  // The `resource` parameter is the identifier exactly as the metadata publishes it (checked above to be the
  // server or a parent path of it on its origin): a pathless one must not gain a "/" on the way.
  *resource_uri = resource->resource;

  const std::string& issuer = resource->authorization_servers.front();
  auto server_urls = authorization_server_metadata_urls(issuer);
  if (!server_urls) return std::unexpected(server_urls.error());
  auto server = first_document<AuthorizationServerMetadata>(
      *server_urls, fetch, "authorization server metadata",
      [&](const json& document) { return parse_authorization_server_metadata(document, issuer); });
  if (!server) return std::unexpected(server.error());

  const std::optional<std::string> scope = choose_scope(challenge, *resource);
  OAuthClient client;
  if (options.preregistered) {
    client = *options.preregistered;
  } else if (!server->registration_endpoint.empty()) {
    HttpCall call{"POST",
                  server->registration_endpoint,
                  {{"Content-Type", "application/json"}, {"Accept", "application/json"}},
                  registration_request(options.client_name, options.redirect_uri, scope).dump()};
    auto reply = fetch(call);
    if (!reply) return std::unexpected(reply.error());
    auto registered = read_registration_response(reply->status, reply->body);
    if (!registered) return std::unexpected(registered.error());
    client = std::move(*registered);
  } else {
    return std::unexpected(Error(codes::kMcpAuthTokenFailed,
                                 "the authorization server '" + issuer +
                                     "' offers no client registration and no client id is configured"));
  }

  const PkcePair pkce = make_pkce(options.pkce_entropy);
  auto authorization_url = build_authorization_url(
      *server, client,
      AuthorizationParams{options.redirect_uri, *resource_uri, scope, pkce.challenge, options.state});
  if (!authorization_url) return std::unexpected(authorization_url.error());
  auto redirected = authorizer(*authorization_url, options.redirect_uri);
  if (!redirected) return std::unexpected(redirected.error());
  auto code = read_authorization_response(*redirected, options.state, *server);
  if (!code) return std::unexpected(code.error());

  auto reply = post(fetch, token_request(*server, client, *resource_uri,
                                         AuthorizationCodeGrant{*code, pkce.verifier, options.redirect_uri}));
  if (!reply) return std::unexpected(reply.error());
  auto tokens = read_token_response(reply->status, reply->body);
  if (!tokens) return std::unexpected(tokens.error());
  return OAuthGrant{std::move(*resource_uri), std::move(*server), std::move(client), std::move(*tokens)};
}

Result<OAuthGrant> refresh(OAuthGrant grant, const HttpFetch& fetch) {
  if (grant.tokens.refresh_token.empty()) {
    return std::unexpected(
        Error(codes::kMcpAuthTokenFailed, "the sign-in holds no refresh token: sign in again"));
  }
  auto reply = post(fetch, token_request(grant.server, grant.client, grant.resource,
                                         RefreshGrant{grant.tokens.refresh_token, std::nullopt}));
  if (!reply) return std::unexpected(reply.error());
  auto tokens = read_token_response(reply->status, reply->body);
  if (!tokens) return std::unexpected(tokens.error());
  // A server that does not rotate refresh tokens omits it; the old one stays valid (OAuth 2.1 §4.3.3).
  if (tokens->refresh_token.empty()) tokens->refresh_token = std::move(grant.tokens.refresh_token);
  grant.tokens = std::move(*tokens);
  return grant;
}

}  // namespace keel::mcp
