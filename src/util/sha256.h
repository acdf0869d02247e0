// util/sha256.h — SHA-256 (OpenSSL) and fingerprints over canonical JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "keel/error.h"

namespace keel {

// Lowercase hex SHA-256 of `bytes` (64 characters).
std::string sha256_hex(std::string_view bytes);

// SHA-256 of canonical_json(value), as lowercase hex. Fails exactly when canonical_json fails.
Result<std::string> json_fingerprint(const nlohmann::json& value);

}  // namespace keel
