// util/sha256.cc — SHA-256 through OpenSSL's EVP interface (the low-level SHA256() is deprecated in
// OpenSSL 3), and fingerprints over canonical JSON.
#include "util/sha256.h"

#include <openssl/evp.h>

#include <array>
#include <stdexcept>

#include "util/canonical_json.h"

namespace keel {

std::string sha256_hex(std::string_view bytes) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int digest_len = 0;
  // EVP_Digest only fails when OpenSSL itself is broken (no SHA-256 provider, allocation failure).
  // There is no sensible Result for that: every caller would have to treat it as fatal anyway.
  if (EVP_Digest(bytes.data(), bytes.size(), digest.data(), &digest_len, EVP_sha256(), nullptr) != 1 ||
      digest_len != 32) {
    throw std::runtime_error("OpenSSL EVP_Digest(SHA-256) failed");
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * digest_len);
  for (unsigned int i = 0; i < digest_len; ++i) {
    hex.push_back(kHex[digest[i] >> 4]);
    hex.push_back(kHex[digest[i] & 0x0f]);
  }
  return hex;
}

Result<std::string> json_fingerprint(const nlohmann::json& value) {
  std::string canonical = KEEL_TRY(canonical_json(value));
  return sha256_hex(canonical);
}

}  // namespace keel
