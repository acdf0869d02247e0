// mcp/auth/oauth_requests.cc — building and reading the OAuth flow's messages.
#include "mcp/auth/oauth_requests.h"

#include <cctype>

#include "mcp/auth/auth_errors.h"
#include "mcp/auth/pkce.h"

namespace keel::mcp {
namespace {

using nlohmann::json;

constexpr size_t kMaxResponseBytes = 64 * 1024;

// An OAuth error response's `error` and `error_description`, for a message (both are the server's words,
// cut short; neither is a secret).
std::string oauth_error_text(const json& body) {
  std::string text;
  if (body.is_object()) {
    if (auto it = body.find("error"); it != body.end() && it->is_string()) text = it->get<std::string>();
    if (auto it = body.find("error_description"); it != body.end() && it->is_string()) {
      text += (text.empty() ? "" : ": ") + it->get<std::string>();
    }
  }
  if (text.size() > 300) text.resize(300);
  return text.empty() ? "no OAuth error in the response" : text;
}

json parse_json_body(std::string_view body) {
  if (body.size() > kMaxResponseBytes) return json();
  return json::parse(body, nullptr, /*allow_exceptions=*/false);
}

void add_client_auth(FormRequest& request, QueryParams& form, const OAuthClient& client) {
  if (client.token_endpoint_auth_method == "client_secret_basic") {
    // RFC 6749 §2.3.1: each part form-encoded before the Basic encoding.
    const std::string id = form_encode({{"", client.client_id}}).substr(1);
    const std::string secret = form_encode({{"", client.client_secret}}).substr(1);
    const std::string pair = id + ":" + secret;
    // base64url() is URL-safe without padding; Basic wants the standard alphabet with padding.
    std::string standard = base64url(pair);
    for (char& c : standard) {
      if (c == '-') c = '+';
      if (c == '_') c = '/';
    }
    while (standard.size() % 4 != 0) standard.push_back('=');
    request.headers.emplace_back("Authorization", "Basic " + standard);
  } else if (client.token_endpoint_auth_method == "client_secret_post") {
    form.emplace_back("client_id", client.client_id);
    form.emplace_back("client_secret", client.client_secret);
  } else {
    form.emplace_back("client_id", client.client_id);
  }
}

FormRequest form_request(const AuthorizationServerMetadata& server) {
  FormRequest request;
  request.url = server.token_endpoint;
  request.headers = {{"Content-Type", "application/x-www-form-urlencoded"}, {"Accept", "application/json"}};
  return request;
}

}  // namespace

Result<std::string> build_authorization_url(const AuthorizationServerMetadata& server,
                                            const OAuthClient& client, const AuthorizationParams& params) {
  QueryParams query = {{"response_type", "code"},
                       {"client_id", client.client_id},
                       {"redirect_uri", params.redirect_uri},
                       {"code_challenge", params.code_challenge},
                       {"code_challenge_method", "S256"},
                       {"state", params.state},
                       {"resource", params.resource}};
  if (params.scope) query.emplace_back("scope", *params.scope);
  return with_query(server.authorization_endpoint, query);
}

Result<std::string> read_authorization_response(std::string_view redirect_url,
                                                std::string_view expected_state,
                                                const AuthorizationServerMetadata& server) {
  auto url = parse_http_url(redirect_url);
  if (!url) return std::unexpected(url.error());
  const QueryParams params = form_decode(url->query);
  const auto state = find_param(params, "state");
  // The state is checked before anything else is believed: a redirect without it was not caused by keel.
  if (!state || *state != expected_state) {
    return std::unexpected(Error(codes::kMcpAuthStateMismatch,
                                 "the authorization response does not carry the state this sign-in sent"));
  }
  const auto iss = find_param(params, "iss");
  if (iss ? *iss != server.issuer : server.authorization_response_iss_parameter_supported) {
    return std::unexpected(Error(codes::kMcpAuthStateMismatch,
                                 iss ? "the authorization response comes from issuer '" +
                                           iss->substr(0, 200) + "', not from '" + server.issuer + "'"
                                     : "the authorization response names no issuer although '" +
                                           server.issuer + "' promised one (RFC 9207)"));
  }
  if (const auto error = find_param(params, "error")) {
    std::string text = *error;
    if (const auto description = find_param(params, "error_description")) text += ": " + *description;
    if (text.size() > 300) text.resize(300);
    return std::unexpected(Error(codes::kMcpAuthDenied, "the authorization server refused: " + text));
  }
  const auto code = find_param(params, "code");
  if (!code || code->empty()) {
    return std::unexpected(Error(codes::kMcpAuthTokenFailed, "the authorization response carries no code"));
  }
  return *code;
}

FormRequest token_request(const AuthorizationServerMetadata& server, const OAuthClient& client,
                          std::string_view resource, const AuthorizationCodeGrant& grant) {
  FormRequest request = form_request(server);
  QueryParams form = {{"grant_type", "authorization_code"},
                      {"code", grant.code},
                      {"code_verifier", grant.code_verifier},
                      {"redirect_uri", grant.redirect_uri},
                      {"resource", std::string(resource)}};
  add_client_auth(request, form, client);
  request.body = form_encode(form);
  return request;
}

FormRequest token_request(const AuthorizationServerMetadata& server, const OAuthClient& client,
                          std::string_view resource, const RefreshGrant& grant) {
  FormRequest request = form_request(server);
  QueryParams form = {{"grant_type", "refresh_token"},
                      {"refresh_token", grant.refresh_token},
                      {"resource", std::string(resource)}};
  if (grant.scope) form.emplace_back("scope", *grant.scope);
  add_client_auth(request, form, client);
  request.body = form_encode(form);
  return request;
}

Result<OAuthTokens> read_token_response(int status, std::string_view body) {
  const json parsed = parse_json_body(body);
  if (status < 200 || status >= 300) {
    return std::unexpected(
        Error(codes::kMcpAuthTokenFailed,
              "the token endpoint answered " + std::to_string(status) + ": " + oauth_error_text(parsed)));
  }
  if (!parsed.is_object()) {
    return std::unexpected(Error(codes::kMcpAuthTokenFailed, "the token response is not a JSON object"));
  }
  OAuthTokens tokens;
  const auto access = parsed.find("access_token");
  if (access == parsed.end() || !access->is_string() || access->get<std::string>().empty()) {
    return std::unexpected(Error(codes::kMcpAuthTokenFailed, "the token response has no access_token"));
  }
  const auto type = parsed.find("token_type");
  if (type == parsed.end() || !type->is_string()) {
    return std::unexpected(Error(codes::kMcpAuthTokenFailed, "the token response has no token_type"));
  }
  std::string type_name = type->get<std::string>();
  for (char& c : type_name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (type_name != "bearer") {
    return std::unexpected(
        Error(codes::kMcpAuthTokenFailed, "the token type '" + type_name.substr(0, 40) + "' is not Bearer"));
  }
  tokens.access_token = access->get<std::string>();
  if (auto it = parsed.find("refresh_token"); it != parsed.end() && it->is_string()) {
    tokens.refresh_token = it->get<std::string>();
  }
  if (auto it = parsed.find("scope"); it != parsed.end() && it->is_string())
    tokens.scope = it->get<std::string>();
  if (auto it = parsed.find("expires_in");
      it != parsed.end() && it->is_number() && it->get<double>() > 0 && it->get<double>() < 1e9) {
    tokens.expires_in = std::chrono::seconds(static_cast<int64_t>(it->get<double>()));
  }
  return tokens;
}

json registration_request(std::string_view client_name, std::string_view redirect_uri,
                          const std::optional<std::string>& scope) {
  json body = {{"client_name", client_name},
               {"redirect_uris", json::array({redirect_uri})},
               {"grant_types", json::array({"authorization_code", "refresh_token"})},
               {"response_types", json::array({"code"})},
               {"token_endpoint_auth_method", "none"},
               {"application_type", "native"}};
  if (scope) body["scope"] = *scope;
  return body;
}

Result<OAuthClient> read_registration_response(int status, std::string_view body) {
  const json parsed = parse_json_body(body);
  if (status < 200 || status >= 300) {
    return std::unexpected(
        Error(codes::kMcpAuthTokenFailed,
              "client registration answered " + std::to_string(status) + ": " + oauth_error_text(parsed)));
  }
  if (!parsed.is_object()) {
    return std::unexpected(
        Error(codes::kMcpAuthTokenFailed, "the registration response is not a JSON object"));
  }
  OAuthClient client;
  const auto id = parsed.find("client_id");
  if (id == parsed.end() || !id->is_string() || id->get<std::string>().empty()) {
    return std::unexpected(Error(codes::kMcpAuthTokenFailed, "the registration response has no client_id"));
  }
  client.client_id = id->get<std::string>();
  if (auto it = parsed.find("client_secret"); it != parsed.end() && it->is_string()) {
    client.client_secret = it->get<std::string>();
  }
  if (auto it = parsed.find("token_endpoint_auth_method"); it != parsed.end() && it->is_string()) {
    client.token_endpoint_auth_method = it->get<std::string>();
  } else {
    client.token_endpoint_auth_method = client.client_secret.empty() ? "none" : "client_secret_basic";
  }
  return client;
}

}  // namespace keel::mcp
