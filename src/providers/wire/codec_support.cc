#include "providers/wire/codec_support.h"

#include <algorithm>

#include "keel/error_codes.h"
#include "providers/provider_errors.h"
#include "providers/wire/provider_error_mapping.h"

namespace keel::providers {

Result<void> check_request(const ProviderRequest& request, const ModelCapabilities& caps) {
  if (!request.tools.empty() && !caps.tool_use) {
    return fail(codes::kProviderToolsUnsupported,
                "the model '" + request.model + "' is configured without tool use, but tools were offered");
  }
  if (caps.vision) return {};
  for (size_t i = 0; i < request.messages.size(); ++i) {
    const Message& message = request.messages[i];
    if (message.role != Role::kAssistant && has_image(message.content)) {
      return fail(codes::kProviderImageUnsupported, "the model '" + request.model +
                                                        "' does not accept images (message " +
                                                        std::to_string(i) + " has one)");
    }
  }
  return {};
}

int64_t output_token_limit(const ProviderRequest& request, const ModelCapabilities& caps) {
  return std::min(request.max_output_tokens.value_or(caps.max_output_tokens), caps.max_output_tokens);
}

Result<void> add_parameters(nlohmann::json& body, const nlohmann::json& parameters,
                            std::initializer_list<std::string_view> reserved) {
  if (parameters.is_null()) return {};
  if (!parameters.is_object()) {
    return fail(codes::kInvalidArgument, "the model parameters must be a JSON object");
  }
  for (const auto& [key, value] : parameters.items()) {
    if (std::find(reserved.begin(), reserved.end(), key) != reserved.end()) {
      return fail(codes::kProviderReservedParameter,
                  "the parameter '" + key + "' is set by keel's wire codec and cannot be passed through");
    }
    body[key] = value;
  }
  return {};
}

std::string image_data_url(const ContentBlock& image) {
  return "data:" + image.media_type + ";base64," + image.data_base64;
}

bool is_empty_reply(const Message& message) {
  return message.tool_calls.empty() && text_of(message.content).empty();
}

std::string text_of(const std::vector<ContentBlock>& content) {
  std::string text;
  for (const ContentBlock& block : content) {
    if (block.kind == ContentBlock::Kind::kText) text += block.text;
  }
  return text;
}

bool has_image(const std::vector<ContentBlock>& content) {
  return std::any_of(content.begin(), content.end(),
                     [](const ContentBlock& b) { return b.kind == ContentBlock::Kind::kImage; });
}

const nlohmann::json* provider_entry(const ContentBlock& block, std::string_view format_key) {
  if (!block.provider_data.is_object()) return nullptr;
  auto it = block.provider_data.find(format_key);
  if (it == block.provider_data.end() || !it->is_object()) return nullptr;
  return &*it;
}

Result<JsonValue> parse_event_object(JsonTape& tape, std::string_view data, std::string_view api) {
  auto parsed = tape.parse(data);
  if (!parsed) return fail(parsed.error().with_context(std::string(api) + " event"));
  if (!parsed->is_object()) {
    return fail(codes::kProviderBadEventJson, std::string(api) + " event: the data is not a JSON object");
  }
  return parsed;
}

Error protocol_error(std::string_view api, std::string_view what) {
  return Error(codes::kProviderProtocolError, std::string(api) + " stream: " + std::string(what));
}

Error unknown_event_error(std::string_view api, std::string_view type) {
  return Error(codes::kProviderUnknownEvent, std::string(api) + " stream: an event of unknown type '" +
                                                 sanitize_provider_message(type, 80) + "'");
}

Error truncated_error(std::string_view api, std::string_view missing) {
  return Error(codes::kProviderStreamTruncated,
               std::string(api) + " stream ended before " + std::string(missing), /*retryable=*/true);
}

int64_t token_count(JsonValue value) {
  // Bounded far above any real count, so sums of counts (Anthropic's input) cannot overflow.
  constexpr int64_t kMax = int64_t{1} << 40;
  return std::clamp<int64_t>(value.int64().value_or(0), 0, kMax);
}

}  // namespace keel::providers
