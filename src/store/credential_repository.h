// store/credential_repository.h — rows of the `credentials` table: encrypted API keys (schema 2).
//
// The repository stores and returns what it is given and computes nothing: the nonce and ciphertext come
// encrypted from config/credential_vault (which owns the master key and libsodium), and the shape is
// canonical JSON describing the credential without its secret. Nothing here ever sees a plaintext key, so
// nothing here can log one; error messages name credential ids only.
//
// A credential row is versioned: put() creates version 1, replace_secret() swaps the nonce and ciphertext
// behind the same id and bumps the version, guarded by the version the caller read (a concurrent rotation
// in between is revision.conflict rather than a lost update).
//
// Methods run inside the caller's transaction. Errors: credential.not_found, credential.exists,
// revision.conflict, invalid_argument, store.payload_too_large, and any store error.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "keel/error.h"
#include "keel/store.h"

namespace keel::codes {
inline constexpr char kCredentialNotFound[] = "credential.not_found";
inline constexpr char kCredentialExists[] = "credential.exists";
}  // namespace keel::codes

namespace keel {

struct CredentialRow {
  std::string id;
  std::string provider_kind;  // "anthropic", "openai-chat", ...
  std::string shape;          // canonical JSON; never holds the secret
  std::string key_id;         // which master key encrypted it (a fingerprint, not the key)
  std::string nonce;          // bytes
  std::string ciphertext;     // bytes: the sealed secret and its authentication tag
  int64_t version = 1;
  int64_t created_at = 0;
  int64_t rotated_at = 0;
};

// What list() returns: everything but the nonce and ciphertext.
struct CredentialSummary {
  std::string id;
  std::string provider_kind;
  std::string shape;
  std::string key_id;
  int64_t version = 1;
  int64_t created_at = 0;
  int64_t rotated_at = 0;
};

class CredentialRepository {
 public:
  // Inserts `row` as version 1 (row.version is ignored). credential.exists when the id is taken;
  // invalid_argument for an empty id, nonce or ciphertext.
  Result<void> insert(Transaction& tx, const CredentialRow& row);

  // Replaces the sealed secret of credential `row.id` (key_id, nonce, ciphertext, rotated_at) if its stored
  // version is still `read_version`, and sets version = read_version + 1. credential.not_found when there
  // is no such row; revision.conflict when the version moved.
  Result<void> replace_secret(Transaction& tx, const CredentialRow& row, int64_t read_version);

  // credential.not_found when there is none.
  Result<CredentialRow> get(Transaction& tx, const std::string& id);

  // credential.not_found when there is none.
  Result<void> remove(Transaction& tx, const std::string& id);

  // Every credential, ordered by id.
  Result<std::vector<CredentialSummary>> list(Transaction& tx);
};

}  // namespace keel
