// model_server/history_rules.h — the shape a request's conversation must have for each model API, checked
// the way the real APIs refuse a malformed history (HTTP 400), so that tests against the scripted server
// catch a history keel builds wrongly instead of passing where the real API would not.
//
// The rules, per API (a violation names the message or item by its index):
//   OpenAI Chat Completions (`messages`): an assistant message with `tool_calls` is followed at once by one
//     `tool` message per call (any order) before any other message, and the conversation does not end
//     before they all came; a `tool` message answers an unanswered call of that assistant message; an
//     assistant message has a `content` or `tool_calls`.
//   OpenAI Responses (`input`): a `function_call_output` answers an earlier `function_call` by call_id,
//     once; every `function_call` has its output; no message item comes between a run of function calls and
//     the last of their outputs.
//   Anthropic Messages (`messages`): the first message is the user's and the roles alternate; every
//     message has content and no text block is empty; an assistant message with `tool_use` blocks is
//     followed by a user message that opens with one `tool_result` block per call (tool_result blocks come
//     before any other block), and a tool_result answers a tool_use of the assistant message right before;
//     a history with tool_use blocks comes with `tools`.
// keel's encoders are stricter than the APIs in places (they always alternate, always group the results),
// and the rules hold them to that, so a regression shows up here first.
//
// Pure computation; any thread.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "model_server/wire_encoder.h"

namespace keel::model_server {

// The first rule the request body's conversation breaks, as the API's error message would say it;
// nullopt when it has none.
std::optional<std::string> history_violation(Api api, const nlohmann::json& body);

}  // namespace keel::model_server
