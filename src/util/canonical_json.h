// util/canonical_json.h — the one canonical JSON encoding of keel, and parsing with coded errors.
//
// Every fingerprint and digest in keel is SHA-256 over this encoding, never over ad-hoc strings, so two
// values that mean the same thing hash the same everywhere:
//   - object keys sorted by their UTF-8 bytes (= Unicode code point order); duplicate keys cannot occur;
//   - no insignificant whitespace;
//   - one number format: integers (and floating values that are integral with magnitude below 2^53) are
//     written as plain decimal integers; other finite numbers in the shortest form that round-trips
//     (nlohmann's Grisu2); NaN and infinities are rejected (json.non_finite_number);
//   - strings must be valid UTF-8 (json.invalid_utf8); they are written with the minimal escapes of
//     RFC 8259 (", \, and control characters), everything else as raw UTF-8;
//   - nesting deeper than kMaxJsonDepth is rejected (json.too_deep);
//   - parse_json refuses an object with a repeated key (json.parse), so two texts that differ only in a
//     repeated key can never share a fingerprint.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "keel/error.h"

namespace keel {

inline constexpr int kMaxJsonDepth = 128;

// Encodes `value` canonically.
Result<std::string> canonical_json(const nlohmann::json& value);

// Parses JSON text. Errors: json.parse (syntax, with the byte offset), json.invalid_utf8,
// json.too_deep.
Result<nlohmann::json> parse_json(std::string_view text);

}  // namespace keel
