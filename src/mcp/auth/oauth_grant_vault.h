// mcp/auth/oauth_grant_vault.h — an MCP server's OAuth grant (tokens, client, authorization server) kept
// encrypted in keel's credential vault (config/credential_vault.h), so a sign-in survives a restart.
//
// A grant is one credential of no model provider, sealed like an API key: its id is
// "mcp-oauth.<server id>.<16 hex digits of SHA-256(endpoint)>" (the server id reduced to the id's alphabet
// and 64 bytes), its shape {"kind":"mcp_oauth_grant","server":<id>,"issuer":<issuer>} (no secret), its secret
// the grant as JSON. A grant saved again rotates the credential (version + 1). The token's lifetime is not
// kept (expires_in is relative to when it was issued): a restored token is used until the server refuses
// it, and then refreshed (oauth_http_auth.h).
//
// Errors: the vault's and the store's (credential.*, store.*), and mcp.auth_bad_metadata for a stored grant
// that does not read back. Thread-safe as the store and the vault are.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "config/credential_vault.h"
#include "keel/error.h"
#include "keel/store.h"
#include "mcp/auth/oauth_flow.h"

namespace keel::mcp {

std::string oauth_grant_credential_id(std::string_view server_id, std::string_view endpoint);

// The grant as JSON (it holds its secrets: never log it), and back. Errors: mcp.auth_bad_metadata.
nlohmann::json oauth_grant_to_json(const OAuthGrant& grant);
Result<OAuthGrant> oauth_grant_from_json(const nlohmann::json& document);

class OAuthGrantVault {
 public:
  // `store` and `vault` must outlive this.
  OAuthGrantVault(Store& store, config::CredentialVault& vault) : store_(store), vault_(vault) {}

  // The grant saved for this server and endpoint; nullopt when none was.
  Result<std::optional<OAuthGrant>> load(std::string_view server_id, std::string_view endpoint) const;
  // Saves (or replaces) the grant for this server and endpoint, in a transaction of its own.
  Result<void> save(std::string_view server_id, std::string_view endpoint, const OAuthGrant& grant);

 private:
  Store& store_;
  config::CredentialVault& vault_;
};

}  // namespace keel::mcp
