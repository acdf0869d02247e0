// config/credential_vault.h — API keys (and MCP servers' OAuth grants) encrypted at rest in the store's
// `credentials` table.
//
// Each secret is sealed with XChaCha20-Poly1305 (libsodium's IETF AEAD) under the master key, with a fresh
// random 24-byte nonce per seal. The associated data binds the ciphertext to its row: credential id,
// version, provider kind, shape and master key id. A ciphertext copied to another id, a shape edited in
// the database, or a row rolled back to an older version's secret therefore fails to open
// (credential.tampered) instead of yielding a key for the wrong purpose.
//
// The *shape* is what run snapshots may keep about a credential, e.g.
// {"kind":"api_key","provider":"anthropic","header":"x-api-key"}: a small JSON object, stored as canonical
// JSON, that must never contain the secret (put() refuses one that does). Rotation replaces the secret
// behind the same id and shape and bumps the version, so a run's snapshot still matches after a rotation.
//
// Secrets never appear in errors: messages name credential ids and nothing else. Methods run inside the
// caller's transaction. Errors: credential.bad_id, credential.bad_shape, credential.bad_secret,
// credential.exists, credential.not_found, credential.tampered, credential.wrong_master_key,
// revision.conflict, store.decode_failed (a damaged row), and any store error.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "config/master_key.h"
#include "config/secret.h"
#include "keel/clock.h"
#include "keel/error.h"
#include "keel/store.h"
#include "store/credential_repository.h"  // CredentialRow

namespace keel::config {

// A credential without its secret: what list() shows and what a snapshot may record.
struct CredentialInfo {
  std::string id;
  // The model provider the credential is for; none for a credential of no model provider (an MCP server's
  // OAuth grant, mcp/auth/oauth_grant_vault.h).
  std::optional<ProviderKind> provider = ProviderKind::kOpenAiChat;
  nlohmann::json shape;
  int64_t version = 1;
  int64_t created_at = 0;
  int64_t rotated_at = 0;
};

// The usual shape of an API key for `kind`: {"kind":"api_key","provider":...,"header":...}, with
// "scheme":"bearer" for the OpenAI kinds (Authorization: Bearer) and header x-api-key for Anthropic.
nlohmann::json api_key_shape(ProviderKind kind);

class CredentialVault {
 public:
  static constexpr size_t kMaxIdBytes = 128;
  static constexpr size_t kMaxSecretBytes = 16 * 1024;
  static constexpr size_t kMaxShapeBytes = 1024;

  // `clock` must outlive the vault.
  CredentialVault(MasterKey key, const Clock& clock);

  // Stores a new credential (version 1). The id has 1 to 128 letters, digits, '.', '_' or '-'; the shape
  // is a JSON object of at most 1 KiB that does not contain the secret. `provider` none: a credential of no
  // model provider (its provider kind is stored as "").
  Result<CredentialInfo> put(Transaction& tx, const std::string& id, std::optional<ProviderKind> provider,
                             const nlohmann::json& shape, const Secret& secret);
  // Seals `secret` behind existing credential `id` (same shape and provider), version + 1.
  Result<CredentialInfo> rotate(Transaction& tx, const std::string& id, const Secret& secret);
  // Decrypts credential `id`.
  Result<Secret> get(Transaction& tx, const std::string& id) const;
  // The credential without its secret.
  Result<CredentialInfo> describe(Transaction& tx, const std::string& id) const;
  Result<void> remove(Transaction& tx, const std::string& id);
  // Every credential, by id, never a secret.
  Result<std::vector<CredentialInfo>> list(Transaction& tx) const;

 private:
  // Sets row.nonce and row.ciphertext: `secret` sealed under the row's associated data.
  Result<void> seal(CredentialRow& row, const Secret& secret) const;
  Result<Secret> open(const CredentialRow& row) const;

  MasterKey key_;
  const Clock& clock_;
};

}  // namespace keel::config
