#include "store/json_column.h"

#include "keel/error_codes.h"
#include "util/canonical_json.h"

namespace keel {

Result<std::string> encode_json_column(const nlohmann::json& value, size_t max_bytes) {
  std::string text = KEEL_TRY(canonical_json(value));
  if (text.size() > max_bytes) {
    return fail(codes::kStorePayloadTooLarge, "a JSON value of " + std::to_string(text.size()) +
                                                  " bytes exceeds the limit of " + std::to_string(max_bytes) +
                                                  " bytes");
  }
  return text;
}

Result<nlohmann::json> decode_json_column(const std::string& text, std::string_view what) {
  auto parsed = parse_json(text);
  if (!parsed) {
    return fail(codes::kStoreDecode, "the stored " + std::string(what) + " is not valid JSON (" +
                                         parsed.error().to_string() + ")");
  }
  return std::move(parsed).value();
}

Result<std::optional<nlohmann::json>> decode_optional_json_column(const std::optional<std::string>& text,
                                                                  std::string_view what) {
  if (!text) return std::optional<nlohmann::json>();
  return std::optional<nlohmann::json>(KEEL_TRY(decode_json_column(*text, what)));
}

}  // namespace keel
