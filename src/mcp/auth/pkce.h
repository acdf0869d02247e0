// mcp/auth/pkce.h — Proof Key for Code Exchange with S256 (RFC 7636), and the flow's `state`.
//
// The verifier is 43 characters of base64url over 32 random bytes (RFC 7636 §4.1's recommendation); the
// challenge is base64url(SHA-256(verifier)) without padding. The random bytes come from the caller, so a
// test can fix them and the flow takes them from random_entropy().
//
// Pure; thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "keel/error.h"

namespace keel::mcp {

// base64url without padding (RFC 4648 §5).
std::string base64url(std::string_view bytes);

struct PkcePair {
  std::string verifier;
  std::string challenge;  // S256
};

// The verifier made from `entropy`, and its S256 challenge.
PkcePair make_pkce(const std::array<uint8_t, 32>& entropy);
// The S256 challenge of a verifier.
std::string pkce_challenge(std::string_view verifier);
// 32 bytes from OpenSSL's CSPRNG. Errors: internal (the generator failed).
Result<std::array<uint8_t, 32>> random_entropy();

}  // namespace keel::mcp
