#include "config/credential_resolver.h"

#include <string>
#include <utility>

#include "config/config_errors.h"
#include "store/credential_repository.h"

namespace keel::config {
namespace {

// The reference as messages show it.
std::string shown(const CredentialRef& ref) {
  if (looks_like_secret(ref.name)) return "a credential reference that looks like a key (not shown)";
  return ref.source == CredentialRef::Source::kEnvironment ? "environment variable " + ref.name
                                                           : "credential " + ref.name;
}

}  // namespace

CredentialResolver::CredentialResolver(Store& store, const CredentialVault* vault, EnvLookup env)
    : store_(store), vault_(vault), env_(std::move(env)) {}

Result<std::optional<Secret>> CredentialResolver::resolve(const CredentialRef& ref) const {
  switch (ref.source) {
    case CredentialRef::Source::kNone:
      return std::optional<Secret>();
    case CredentialRef::Source::kEnvironment: {
      std::optional<std::string> value = env_ ? env_(ref.name) : std::nullopt;
      if (!value || value->empty()) {
        return fail(codes::kCredentialEnvMissing, shown(ref) + " is not set");
      }
      return std::optional<Secret>(Secret::take(*value));
    }
    case CredentialRef::Source::kStored:
      break;
  }
  if (vault_ == nullptr) {
    return fail(codes::kCredentialNotFound, shown(ref) + " cannot be read: no master key is available");
  }
  auto tx = KEEL_TRY(store_.begin(TxMode::kRead));
  Result<Secret> secret = vault_->get(*tx, ref.name);
  if (!secret) return std::unexpected(secret.error());
  return std::optional<Secret>(std::move(*secret));
}

Result<nlohmann::json> CredentialResolver::shape_of(const ProviderConfig& provider) const {
  switch (provider.credential.source) {
    case CredentialRef::Source::kNone:
      return nlohmann::json();
    case CredentialRef::Source::kEnvironment:
      return api_key_shape(provider.kind);
    case CredentialRef::Source::kStored:
      break;
  }
  if (vault_ == nullptr) {
    return fail(codes::kCredentialNotFound,
                shown(provider.credential) + " cannot be read: no master key is available");
  }
  auto tx = KEEL_TRY(store_.begin(TxMode::kRead));
  CredentialInfo info = KEEL_TRY(vault_->describe(*tx, provider.credential.name));
  return std::move(info.shape);
}

}  // namespace keel::config
