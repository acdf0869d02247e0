// providers/wire/codec_support.h — the pieces the three wire codecs share: request checks against the
// model's capabilities, parameter pass-through, images as data URLs, and the errors their decoders report.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "keel/error.h"
#include "keel/message.h"
#include "keel/provider.h"
#include "providers/model_capabilities.h"
#include "providers/wire/json_tape.h"

namespace keel::providers {

// --- encoding ---

// provider.image_unsupported when a user message or tool result holds an image and !caps.vision;
// provider.tools_unsupported when tools are offered and !caps.tool_use.
Result<void> check_request(const ProviderRequest& request, const ModelCapabilities& caps);

// The output limit to request: the request's own, capped by the model's.
int64_t output_token_limit(const ProviderRequest& request, const ModelCapabilities& caps);

// Copies request.parameters into `body`. provider.reserved_parameter for a key in `reserved` (the codec
// sets those itself); invalid_argument when the parameters are not a JSON object.
Result<void> add_parameters(nlohmann::json& body, const nlohmann::json& parameters,
                            std::initializer_list<std::string_view> reserved);

// "data:image/png;base64,...".
std::string image_data_url(const ContentBlock& image);

// The text an assistant message with neither text nor tool calls is sent with (a reply that failed before
// any text, such as one refused as a protocol error, or one that was reasoning only): the APIs refuse an
// empty assistant turn (Anthropic; Responses refuses a reasoning item with nothing after it), and leaving
// the turn out would join the user turns around it into one, as if the model had never answered.
inline constexpr std::string_view kEmptyReplyText = "(no reply)";
// Whether `message` (an assistant message) has no text and no tool calls.
bool is_empty_reply(const Message& message);

// The text blocks of `content`, concatenated (reasoning and images left out).
std::string text_of(const std::vector<ContentBlock>& content);

bool has_image(const std::vector<ContentBlock>& content);

// The block's provider_data entry for `format_key` ("anthropic", "openai_responses") when it is an object;
// nullptr otherwise (no provider_data, or another API's).
const nlohmann::json* provider_entry(const ContentBlock& block, std::string_view format_key);

// --- decoding ---

// Parses an event's data as a JSON object. provider.bad_event_json otherwise.
Result<JsonValue> parse_event_object(JsonTape& tape, std::string_view data, std::string_view api);

Error protocol_error(std::string_view api, std::string_view what);
Error unknown_event_error(std::string_view api, std::string_view type);
Error truncated_error(std::string_view api, std::string_view missing);

// A token count: a non-negative integer (anything else counts 0), at most 2^40.
int64_t token_count(JsonValue value);

}  // namespace keel::providers
