// providers/wire/openai_responses_codec.h — OpenAI Responses (POST /v1/responses with stream: true).
//
// Request: the system prompt as `instructions`; the history as `input` items: user messages with input_text
// and input_image (data URL) parts; an assistant message as its reasoning items, then its text as an
// assistant message, then one function_call item per call (call_id, name, arguments as JSON text); each
// tool result as a function_call_output item whose output is the text, or input_text and input_image parts
// when the result has images. An assistant message with neither text nor tool calls is sent as the text
// kEmptyReplyText (codec_support.h): the API refuses a reasoning item with nothing after it, and the turn
// must not vanish. Tools are function tools with strict: false (the API's default is strict,
// which refuses ordinary JSON Schemas). `store: false`: keel keeps the history itself and sends all of it.
//
// Reasoning sent back: because nothing is stored at OpenAI, a reasoning item can only be sent back with its
// `encrypted_content`, which is why a reasoning model's request asks for `include:
// ["reasoning.encrypted_content"]` (caps.reasoning). A reasoning block is sent back as {type: reasoning, id,
// summary, encrypted_content} from its provider_data, only to reasoning models; one without encrypted
// content is left out (its id alone would point at nothing).
//
// Stream: typed events, the SSE event name repeating the data's `type`. output_item.added opens an item
// (function_call: ToolCallStart with call_id and name), output_text.delta / refusal.delta are text,
// reasoning_summary_text.delta and reasoning_text.delta are reasoning (summary parts separated by a blank
// line), function_call_arguments.delta are argument fragments, output_item.done ends a call or carries a
// reasoning item's encrypted content (a ReasoningDelta with provider_data). Terminal events:
// response.completed (stop: tool_use when the response has calls, else end), response.incomplete
// (incomplete_details.reason: max_output_tokens -> max_tokens, content_filter -> content_filter, else error),
// response.failed and error (coded errors). Other response.* events (the API adds them over time: web
// search, annotations, ...) are ignored; types outside response.* and error are provider.unknown_event.
#pragma once

#include <memory>

#include "providers/wire/wire_codec.h"

namespace keel::providers {

std::unique_ptr<WireCodec> make_openai_responses_codec();

}  // namespace keel::providers
