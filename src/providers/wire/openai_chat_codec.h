// providers/wire/openai_chat_codec.h — OpenAI Chat Completions (POST /v1/chat/completions with stream: true),
// as OpenAI documents it and as OpenAI-compatible servers (llama.cpp server, vLLM, Ollama, DeepSeek, ...)
// speak it.
//
// Request: the system prompt as the first "system" message; user messages as a string, or as text and
// image_url parts (data URLs); an assistant message's text as `content` and its calls as `tool_calls`
// (arguments as JSON text), and kEmptyReplyText (codec_support.h) for one with neither text nor calls; each
// tool result as a "tool" message right after the calls. Tool messages carry
// text only, so the images of a run of tool results follow it in one user message that names their calls.
// stream_options.include_usage asks for the usage chunk. The output limit is `max_completion_tokens` for
// reasoning models (OpenAI's o-series refuse `max_tokens`) and `max_tokens` otherwise (what older
// compatible servers understand).
//
// Reasoning is not sent back by default: the format has no request field for it. OpenAI's models never
// return their reasoning here, and the servers that stream it as `reasoning_content` / `reasoning`
// (DeepSeek, vLLM, llama.cpp) documented that earlier reasoning is not part of the next prompt. DeepSeek's
// later thinking mode with tool calls refuses a follow-up without it:
// CodecOptions::chat_send_reasoning_content sends an assistant message's reasoning back as
// `reasoning_content` for such servers.
//
// Stream: `data: {chat.completion.chunk}` events, then `data: [DONE]` (the terminal event). Only choice 0 is
// read. delta.content (and delta.refusal) are text; delta.reasoning_content or delta.reasoning are reasoning
// (without provider_data); delta.tool_calls[] are assembled by their `index` (the first fragment of a call
// carries its id and name). Chat has no end-of-call event: calls end at finish_reason. finish_reason maps as
// stop -> end (content_filter after a refusal), tool_calls / function_call -> tool_use, length -> max_tokens,
// content_filter -> content_filter, anything else -> error, the raw word kept. The usage chunk (choices: [])
// may follow finish_reason, so Finish is emitted at [DONE]. `{"error": {...}}` in a chunk is an error event.
// "stop" after tool calls stays end, so the engine refuses the response before any tool runs (spec §2: tool
// calls with a stop reason other than tool_use are a protocol error). Some compatible servers do say "stop"
// after tool calls; CodecOptions::chat_stop_with_tool_calls_is_tool_use (the provider's
// `stop_with_tool_calls = "tool_use"`, docs/configuration.md) takes it as tool_use for them.
#pragma once

#include <memory>

#include "providers/wire/wire_codec.h"

namespace keel::providers {

std::unique_ptr<WireCodec> make_openai_chat_codec(CodecOptions options);

}  // namespace keel::providers
