// protocol/param_fields.h — reading one member of an op's params, for the decoders of store_params.h and
// op_params.h.
//
// Each reader answers the member's value or a deterministic invalid_argument naming the member, so every
// decoder words the same mistake the same way. An absent member and a null one are the same (docs/
// protocol.md: a null parameter is an absent one). Pure functions, thread-safe.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "keel/error.h"

namespace keel::protocol {

// A non-empty string.
Result<std::string> required_string(const nlohmann::json& params, const char* key);
Result<std::optional<std::string>> optional_string(const nlohmann::json& params, const char* key);
Result<std::optional<int64_t>> optional_integer(const nlohmann::json& params, const char* key);
Result<std::optional<bool>> optional_bool(const nlohmann::json& params, const char* key);
// A budget of tokens: an integer from 1 to kMaxBudgetTokens (keel/engine_options.h).
Result<std::optional<int64_t>> optional_budget(const nlohmann::json& params, const char* key);
// The member as it is, null when absent: for a value whose check belongs to its user (a turn's input, an
// interaction's response).
nlohmann::json member_or_null(const nlohmann::json& params, const char* key);

}  // namespace keel::protocol
