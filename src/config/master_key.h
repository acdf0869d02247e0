// config/master_key.h — the key that seals stored credentials, kept in a file of its own.
//
// The master key is 32 random bytes in a file (default <data_dir>/master.key; KEEL_MASTER_KEY_FILE or
// credentials.master_key_file point elsewhere). load_or_create() creates it when it is missing — mode
// 0600, written to a temporary file and linked into place, so two processes starting at once agree on one
// key — and refuses a file it should not trust:
//   - credential.key_file_permissions: group or others may read or write it (anything wider than 0600);
//   - credential.key_file_size: not exactly 32 bytes;
//   - credential.key_file_unsafe: not a regular file (a symlink is not followed), or owned by another user;
//   - credential.key_file_io: it cannot be read or created (the message names the path and the OS error).
// The key_id is a fingerprint (keyed BLAKE2b of a fixed label), stored with each credential so that a
// credential sealed under another key is reported as such instead of as tampered.
#pragma once

#include <filesystem>
#include <string>

#include "config/secret.h"
#include "keel/error.h"

namespace keel::config {

class MasterKey {
 public:
  static constexpr size_t kBytes = 32;

  // Reads the key file, creating it (and its directory, mode 0700) when it does not exist.
  static Result<MasterKey> load_or_create(const std::filesystem::path& path);
  // Reads the key file; a missing file is credential.key_file_io.
  static Result<MasterKey> load(const std::filesystem::path& path);
  // A fresh random key that lives only in memory (tests, benchmarks).
  static Result<MasterKey> generate();

  const Secret& key() const { return key_; }
  const std::string& key_id() const { return key_id_; }

 private:
  explicit MasterKey(Secret key);

  Secret key_;
  std::string key_id_;
};

// Starts libsodium (idempotent, thread-safe). credential.crypto_unavailable when it cannot.
Result<void> ensure_sodium();

}  // namespace keel::config
