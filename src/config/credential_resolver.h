// config/credential_resolver.h — a provider's credential reference → the Secret a request needs.
//
// A reference is either a credential id (decrypted from the credentials table through the vault) or the
// name of an environment variable (config `api_key_env`). Errors name the reference, never the value:
//   - credential.not_found: no such stored credential (or no vault, when no master key is available);
//   - credential.env_missing: the variable is unset or empty;
//   - credential.tampered, credential.wrong_master_key, and store errors from the vault.
// A reference that looks like a key itself (config validation refuses those) is not repeated either.
//
// shape_of() gives what a run's snapshot records about the credential: the stored shape, or the usual API
// key shape of the provider's kind for a variable. The secret may rotate behind a reference; the shape
// must not (recovery refuses a run whose credential shape drifted).
//
// Each call that reads the table opens its own read transaction: do not call it while this thread holds a
// transaction on the same store (store.nested_transaction). Thread-safe if the vault and env lookup are.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>

#include "config/config.h"
#include "config/credential_vault.h"
#include "config/environment.h"
#include "config/secret.h"
#include "keel/error.h"
#include "keel/store.h"

namespace keel::config {

class CredentialResolver {
 public:
  // `store` and `vault` must outlive the resolver; `vault` may be null (then stored references fail).
  CredentialResolver(Store& store, const CredentialVault* vault, EnvLookup env);

  // The secret behind `ref`; nullopt for CredentialRef::Source::kNone (a local server without a key).
  Result<std::optional<Secret>> resolve(const CredentialRef& ref) const;

  // The shape a snapshot records for `provider`'s credential; null for a provider without one.
  Result<nlohmann::json> shape_of(const ProviderConfig& provider) const;

 private:
  Store& store_;
  const CredentialVault* vault_;
  EnvLookup env_;
};

}  // namespace keel::config
