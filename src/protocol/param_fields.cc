#include "protocol/param_fields.h"

#include "keel/engine_options.h"
#include "keel/error_codes.h"

namespace keel::protocol {

using nlohmann::json;

namespace {

// The member, or nullptr when it is absent or null.
const json* member(const json& params, const char* key) {
  auto it = params.find(key);
  return it == params.end() || it->is_null() ? nullptr : &*it;
}

}  // namespace

Result<std::string> required_string(const json& params, const char* key) {
  const json* value = member(params, key);
  if (value == nullptr || !value->is_string() || value->get_ref<const std::string&>().empty()) {
    return fail(codes::kInvalidArgument, std::string("'") + key + "' must be a non-empty string");
  }
  return value->get<std::string>();
}

Result<std::optional<std::string>> optional_string(const json& params, const char* key) {
  const json* value = member(params, key);
  if (value == nullptr) return std::optional<std::string>();
  if (!value->is_string())
    return fail(codes::kInvalidArgument, std::string("'") + key + "' must be a string");
  return std::optional<std::string>(value->get<std::string>());
}

Result<std::optional<int64_t>> optional_integer(const json& params, const char* key) {
  const json* value = member(params, key);
  if (value == nullptr) return std::optional<int64_t>();
  if (!value->is_number_integer())
    return fail(codes::kInvalidArgument, std::string("'") + key + "' must be an integer");
  return std::optional<int64_t>(value->get<int64_t>());
}

Result<std::optional<bool>> optional_bool(const json& params, const char* key) {
  const json* value = member(params, key);
  if (value == nullptr) return std::optional<bool>();
  if (!value->is_boolean())
    return fail(codes::kInvalidArgument, std::string("'") + key + "' must be a boolean");
  return std::optional<bool>(value->get<bool>());
}

Result<std::optional<int64_t>> optional_budget(const json& params, const char* key) {
  const json* value = member(params, key);
  if (value == nullptr) return std::optional<int64_t>();
  // An integer above INT64_MAX parses as unsigned: compare before converting.
  const bool in_range = (value->is_number_unsigned() && value->get<uint64_t>() >= 1 &&
                         value->get<uint64_t>() <= static_cast<uint64_t>(kMaxBudgetTokens)) ||
                        (value->is_number_integer() && !value->is_number_unsigned() &&
                         value->get<int64_t>() >= 1 && value->get<int64_t>() <= kMaxBudgetTokens);
  if (!in_range) {
    return fail(codes::kInvalidArgument, std::string("'") + key + "' must be an integer from 1 to " +
                                             std::to_string(kMaxBudgetTokens));
  }
  return std::optional<int64_t>(value->get<int64_t>());
}

json member_or_null(const json& params, const char* key) {
  const json* value = member(params, key);
  return value == nullptr ? json() : *value;
}

}  // namespace keel::protocol
