// config/config_errors.h — error codes of configuration loading and credentials (stable; clients and tests
// match on them). The codes of the credentials table itself (credential.not_found, credential.exists) are
// in store/credential_repository.h.
//
// No message under these codes ever holds a secret or a configuration value other than a name (a provider,
// a model, a credential id, an environment variable): messages name files, lines, columns and key paths.
#pragma once

namespace keel::codes {

// Configuration (config/config_loader.h).
inline constexpr char kConfigParse[] = "config.parse";                 // not TOML, or a bad --set argument
inline constexpr char kConfigUnknownKey[] = "config.unknown_key";      // a key keel does not know
inline constexpr char kConfigBadValue[] = "config.bad_value";          // wrong type, bad enum, out of range
inline constexpr char kConfigMissingValue[] = "config.missing_value";  // a required key is absent
inline constexpr char kConfigMissingReference[] = "config.missing_reference";  // names what is not configured
inline constexpr char kConfigNotUtf8[] = "config.not_utf8";
inline constexpr char kConfigTooLarge[] = "config.too_large";
inline constexpr char kConfigReadFailed[] = "config.read_failed";

// Credentials (config/credential_vault.h, master_key.h, credential_resolver.h).
inline constexpr char kCredentialBadId[] = "credential.bad_id";  // empty, too long, bad characters
inline constexpr char kCredentialBadShape[] =
    "credential.bad_shape";  // not a small object, or holds the secret
inline constexpr char kCredentialBadSecret[] = "credential.bad_secret";  // empty or too long
inline constexpr char kCredentialTampered[] = "credential.tampered";     // authentication failed on decrypt
inline constexpr char kCredentialWrongMasterKey[] = "credential.wrong_master_key";  // sealed by another key
inline constexpr char kCredentialEnvMissing[] =
    "credential.env_missing";  // the named variable is unset/empty
inline constexpr char kCredentialCrypto[] = "credential.crypto_unavailable";      // libsodium failed to start
inline constexpr char kKeyFilePermissions[] = "credential.key_file_permissions";  // wider than 0600
inline constexpr char kKeyFileSize[] = "credential.key_file_size";                // not exactly one key
inline constexpr char kKeyFileUnsafe[] = "credential.key_file_unsafe";  // not a regular file, or not ours
inline constexpr char kKeyFileIo[] = "credential.key_file_io";          // cannot be read or created

}  // namespace keel::codes
