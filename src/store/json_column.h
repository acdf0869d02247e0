// store/json_column.h — JSON values in TEXT columns: written canonically, read back with coded errors.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "keel/error.h"
#include "keel/store.h"

namespace keel {

// Canonical JSON text of `value`. Errors: json.invalid_utf8, json.non_finite_number, json.too_deep, and
// store.payload_too_large when the text exceeds `max_bytes`.
Result<std::string> encode_json_column(const nlohmann::json& value, size_t max_bytes = 8 * 1024 * 1024);

// Parses a JSON column. A value that does not parse means the database was damaged or written by
// something else: store.decode_failed, naming `what` (e.g. "nodes.body of node X").
Result<nlohmann::json> decode_json_column(const std::string& text, std::string_view what);
Result<std::optional<nlohmann::json>> decode_optional_json_column(const std::optional<std::string>& text,
                                                                  std::string_view what);

}  // namespace keel
