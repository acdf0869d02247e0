// mcp/auth/oauth_grant_vault.cc — see oauth_grant_vault.h.
#include "mcp/auth/oauth_grant_vault.h"

#include <openssl/sha.h>

#include <array>
#include <utility>

#include "config/secret.h"
#include "mcp/auth/auth_errors.h"
#include "store/credential_repository.h"

namespace keel::mcp {
namespace {

using nlohmann::json;

constexpr size_t kMaxServerIdBytes = 64;

json strings(const std::vector<std::string>& values) { return json(values); }

template <class T>
bool read(const json& object, const char* name, T& out) {
  const auto it = object.find(name);
  if (it == object.end()) return true;  // absent: the default
  try {
    out = it->get<T>();
  } catch (const json::exception&) {
    return false;
  }
  return true;
}

}  // namespace

std::string oauth_grant_credential_id(std::string_view server_id, std::string_view endpoint) {
  std::string id = "mcp-oauth.";
  for (const char c : server_id.substr(0, kMaxServerIdBytes)) {
    const bool allowed =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    id.push_back(allowed ? c : '_');
  }
  std::array<unsigned char, SHA256_DIGEST_LENGTH> digest{};
  SHA256(reinterpret_cast<const unsigned char*>(endpoint.data()), endpoint.size(), digest.data());
  static constexpr char kHex[] = "0123456789abcdef";
  id.push_back('.');
  for (size_t i = 0; i < 8; ++i) {
    id.push_back(kHex[digest[i] >> 4]);
    id.push_back(kHex[digest[i] & 15]);
  }
  return id;
}

json oauth_grant_to_json(const OAuthGrant& grant) {
  const AuthorizationServerMetadata& s = grant.server;
  return json{{"resource", grant.resource},
              {"server",
               {{"issuer", s.issuer},
                {"authorization_endpoint", s.authorization_endpoint},
                {"token_endpoint", s.token_endpoint},
                {"registration_endpoint", s.registration_endpoint},
                {"scopes_supported", strings(s.scopes_supported)},
                {"token_endpoint_auth_methods_supported", strings(s.token_endpoint_auth_methods_supported)},
                {"grant_types_supported", strings(s.grant_types_supported)},
                {"client_id_metadata_document_supported", s.client_id_metadata_document_supported},
                {"authorization_response_iss_parameter_supported",
                 s.authorization_response_iss_parameter_supported}}},
              {"client",
               {{"client_id", grant.client.client_id},
                {"client_secret", grant.client.client_secret},
                {"token_endpoint_auth_method", grant.client.token_endpoint_auth_method}}},
              {"tokens",
               {{"access_token", grant.tokens.access_token},
                {"refresh_token", grant.tokens.refresh_token},
                {"scope", grant.tokens.scope}}}};
}

Result<OAuthGrant> oauth_grant_from_json(const json& document) {
  OAuthGrant grant;
  const auto bad = [] { return fail(codes::kMcpAuthBadMetadata, "a stored OAuth grant does not read back"); };
  if (!document.is_object() || !document.contains("server") || !document["server"].is_object() ||
      !document.contains("client") || !document["client"].is_object() || !document.contains("tokens") ||
      !document["tokens"].is_object()) {
    return bad();
  }
  const json& s = document["server"];
  const json& c = document["client"];
  const json& t = document["tokens"];
  AuthorizationServerMetadata& server = grant.server;
  const bool ok =
      read(document, "resource", grant.resource) && read(s, "issuer", server.issuer) &&
      read(s, "authorization_endpoint", server.authorization_endpoint) &&
      read(s, "token_endpoint", server.token_endpoint) &&
      read(s, "registration_endpoint", server.registration_endpoint) &&
      read(s, "scopes_supported", server.scopes_supported) &&
      read(s, "token_endpoint_auth_methods_supported", server.token_endpoint_auth_methods_supported) &&
      read(s, "grant_types_supported", server.grant_types_supported) &&
      read(s, "client_id_metadata_document_supported", server.client_id_metadata_document_supported) &&
      read(s, "authorization_response_iss_parameter_supported",
           server.authorization_response_iss_parameter_supported) &&
      read(c, "client_id", grant.client.client_id) && read(c, "client_secret", grant.client.client_secret) &&
      read(c, "token_endpoint_auth_method", grant.client.token_endpoint_auth_method) &&
      read(t, "access_token", grant.tokens.access_token) &&
      read(t, "refresh_token", grant.tokens.refresh_token) && read(t, "scope", grant.tokens.scope);
  if (!ok || grant.tokens.access_token.empty() || server.token_endpoint.empty()) return bad();
  return grant;
}

Result<std::optional<OAuthGrant>> OAuthGrantVault::load(std::string_view server_id,
                                                        std::string_view endpoint) const {
  const std::string id = oauth_grant_credential_id(server_id, endpoint);
  auto tx = KEEL_TRY(store_.begin(TxMode::kRead));
  Result<config::Secret> secret = vault_.get(*tx, id);
  if (!secret) {
    if (secret.error().code() == codes::kCredentialNotFound) return std::optional<OAuthGrant>();
    return std::unexpected(secret.error());
  }
  const nlohmann::json parsed = nlohmann::json::parse(secret->reveal(), nullptr, /*allow_exceptions=*/false);
  return std::optional<OAuthGrant>(KEEL_TRY(oauth_grant_from_json(parsed)));
}

Result<void> OAuthGrantVault::save(std::string_view server_id, std::string_view endpoint,
                                   const OAuthGrant& grant) {
  const std::string id = oauth_grant_credential_id(server_id, endpoint);
  const config::Secret secret = config::Secret::copy_of(oauth_grant_to_json(grant).dump());
  auto tx = KEEL_TRY(store_.begin(TxMode::kWrite));
  Result<config::CredentialInfo> existing = vault_.describe(*tx, id);
  if (existing) {
    KEEL_TRY(vault_.rotate(*tx, id, secret));
  } else if (existing.error().code() == codes::kCredentialNotFound) {
    const nlohmann::json shape = {
        {"kind", "mcp_oauth_grant"}, {"server", std::string(server_id)}, {"issuer", grant.server.issuer}};
    KEEL_TRY(vault_.put(*tx, id, std::nullopt, shape, secret));
  } else {
    return std::unexpected(existing.error());
  }
  return tx->commit();
}

}  // namespace keel::mcp
