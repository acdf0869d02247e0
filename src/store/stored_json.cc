#include "store/stored_json.h"

#include <algorithm>

#include "keel/error_codes.h"

namespace keel::stored_json {

using nlohmann::json;

Error damaged(std::string_view what, std::string_view why) {
  return Error(codes::kStoreDecode, std::string(what) + " is damaged: " + std::string(why));
}

Result<void> expect_object_with_keys(const json& value, std::initializer_list<std::string_view> known,
                                     std::string_view what) {
  if (!value.is_object()) return std::unexpected(damaged(what, "not a JSON object"));
  for (const auto& [key, unused] : value.items()) {
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      return std::unexpected(damaged(what, "unknown key '" + key + "'"));
    }
  }
  return {};
}

Result<std::string> string_field(const json& value, const char* key, std::string_view what) {
  const auto it = value.find(key);
  if (it == value.end() || !it->is_string()) {
    return std::unexpected(damaged(what, std::string("'") + key + "' is not a string"));
  }
  return it->get<std::string>();
}

Result<std::optional<std::string>> optional_string_field(const json& value, const char* key,
                                                         std::string_view what) {
  const auto it = value.find(key);
  if (it == value.end()) return std::optional<std::string>();
  if (!it->is_string()) return std::unexpected(damaged(what, std::string("'") + key + "' is not a string"));
  return std::optional<std::string>(it->get<std::string>());
}

}  // namespace keel::stored_json
