// engine/context_window.h — keeping every request inside the model's context window (spec §1, issue 7).
//
// Before each request the runner estimates its size. When the estimate plus the room reserved for the
// reply passes `threshold` of the window, the history is compacted: the oldest messages are summarized by
// the model, and a compaction node (store/node_body.h) persists the summary with the tail kept verbatim, so
// the next request — and a run resumed after a crash — starts from it. With compaction off, or when even
// the compacted request would not fit, the turn ends with context.window_exceeded instead of sending a
// request the provider would refuse.
//
// The estimate is deliberately simple and errs high: four bytes of text or JSON per token, plus a fixed cost
// per message and per image. Providers tokenize differently; a request the provider still refuses for size
// comes back as provider.context_too_long.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "keel/engine_options.h"
#include "keel/message.h"
#include "keel/provider.h"

namespace keel {

inline constexpr int64_t kTokensPerMessage = 4;
inline constexpr int64_t kTokensPerImage = 1'600;

int64_t estimate_tokens(const Message& message);
int64_t estimate_tokens(std::span<const Message> messages);
// The whole request: system prompt, messages and tool schemas.
int64_t estimate_request_tokens(const ProviderRequest& request);

// Whether `request` (with `reserved_output` tokens for the reply) passes the threshold of `window_tokens`.
// A window of 0 means unknown: never.
bool needs_compaction(const ProviderRequest& request, int64_t reserved_output, int64_t window_tokens,
                      double threshold);

// Where the kept tail starts: the earliest message such that the messages from it on fit `tail_budget`
// tokens, but always keeping the newest message, and never a tool result (a result is never separated from
// the call it answers). nullopt when nothing before the tail would be left to summarize (index 0):
// compaction cannot help.
std::optional<size_t> choose_kept_tail(std::span<const Message> messages, int64_t tail_budget);

// The request that asks the model to summarize `replaced`: one user message holding a plain-text transcript
// (tool calls and results rendered as text, so no provider pairing rule applies), bounded to `max_bytes`
// (the middle is cut when longer). Its span points into `transcript_holder`, which must outlive it.
ProviderRequest summary_request(std::span<const Message> replaced, const std::string& model,
                                int64_t summary_max_tokens, size_t max_bytes,
                                std::vector<Message>& transcript_holder);

}  // namespace keel
