// mcp/auth/pkce.cc — PKCE on OpenSSL (base64, SHA-256, random bytes).
#include "mcp/auth/pkce.h"

#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include <vector>

namespace keel::mcp {

std::string base64url(std::string_view bytes) {
  // EVP_EncodeBlock writes standard base64 with padding and a terminating NUL: 4 characters per 3 bytes.
  std::vector<unsigned char> out(4 * ((bytes.size() + 2) / 3) + 1);
  const int written = EVP_EncodeBlock(out.data(), reinterpret_cast<const unsigned char*>(bytes.data()),
                                      static_cast<int>(bytes.size()));
  std::string text(reinterpret_cast<const char*>(out.data()), static_cast<size_t>(written));
  while (!text.empty() && text.back() == '=') text.pop_back();
  for (char& c : text) {
    if (c == '+') c = '-';
    if (c == '/') c = '_';
  }
  return text;
}

std::string pkce_challenge(std::string_view verifier) {
  std::array<unsigned char, SHA256_DIGEST_LENGTH> digest{};
  SHA256(reinterpret_cast<const unsigned char*>(verifier.data()), verifier.size(), digest.data());
  return base64url(std::string_view(reinterpret_cast<const char*>(digest.data()), digest.size()));
}

PkcePair make_pkce(const std::array<uint8_t, 32>& entropy) {
  PkcePair pair;
  pair.verifier = base64url(std::string_view(reinterpret_cast<const char*>(entropy.data()), entropy.size()));
  pair.challenge = pkce_challenge(pair.verifier);
  return pair;
}

Result<std::array<uint8_t, 32>> random_entropy() {
  std::array<uint8_t, 32> bytes{};
  if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1) {
    return std::unexpected(Error("internal", "the system's random number generator failed"));
  }
  return bytes;
}

}  // namespace keel::mcp
