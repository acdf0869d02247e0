// providers/wire/anthropic_messages_codec.h — Anthropic Messages (POST /v1/messages with stream: true).
//
// Request: `system` holds the system prompt; `messages` alternate user and assistant, so consecutive
// messages of one role are merged: a run of tool results becomes one user message of tool_result blocks
// (first, as the API requires, before any text that follows in the same turn). An assistant message is its
// thinking blocks, then text, then one tool_use block per call (input as a JSON object). Tool results carry
// text and image blocks and is_error; user images are base64 image blocks. Empty text blocks are left out
// (the API refuses them); an assistant message with neither text nor tool calls (a reply refused as a
// protocol error, a reasoning-only reply) is sent with the text kEmptyReplyText (codec_support.h), so its
// turn stays and the user turns around it are not joined. max_tokens is required and always set. A request
// that offers no tools while its history has tool_use blocks (tools turned off by the failure breaker)
// declares the tools the history names, with an open schema, and tool_choice none: the API refuses such a
// history without tool definitions.
//
// Reasoning sent back: thinking blocks return exactly as produced, {type: thinking, thinking, signature},
// and redacted_thinking blocks as {type: redacted_thinking, data}, from the block's provider_data, only to
// reasoning models. A reasoning block without an Anthropic signature (from another API, or cut off) is left
// out: the API verifies signatures and refuses thinking it did not sign.
//
// Stream: message_start (usage so far), then per content block content_block_start / _delta / _stop:
// text_delta -> text; thinking_delta -> reasoning, and at the block's stop a ReasoningDelta whose
// provider_data carries the accumulated signature_delta; redacted_thinking -> a ReasoningDelta with its
// data; tool_use -> ToolCallStart (dense index over the response's tool_use blocks), input_json_delta ->
// argument fragments, stop -> ToolCallEnd. message_delta carries stop_reason and cumulative usage;
// message_stop is the terminal event, where Usage and Finish are emitted. Usage: Anthropic counts cache reads
// and cache writes outside input_tokens, so input = input_tokens + cache_creation + cache_read and cached =
// cache_read. stop_reason: end_turn / stop_sequence / pause_turn -> end, tool_use -> tool_use, max_tokens and
// model_context_window_exceeded -> max_tokens, refusal -> content_filter, anything else -> error. ping is
// ignored; error events are coded errors (overloaded_error -> provider.overloaded, retryable, ...). Unknown
// event types, content block types and delta types are ignored: Anthropic documents that new ones appear.
#pragma once

#include <memory>

#include "providers/wire/wire_codec.h"

namespace keel::providers {

std::unique_ptr<WireCodec> make_anthropic_messages_codec();

}  // namespace keel::providers
