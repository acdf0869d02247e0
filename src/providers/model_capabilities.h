// providers/model_capabilities.h — what a configured model can do, and what it costs.
//
// Configuration fills these in (per model); the wire codecs read them to decide what they may send (images
// only with vision, tools only with tool use, reasoning items only to reasoning models), and the engine uses
// the window and output limits to keep every request inside what the provider accepts.
#pragma once

#include <cstdint>
#include <optional>

#include "keel/provider.h"

namespace keel::providers {

struct ModelCapabilities {
  bool tool_use = true;
  bool vision = false;
  bool reasoning = false;
  int64_t context_window_tokens = 128'000;
  int64_t max_output_tokens = 4'096;
};

using keel::ModelPrice;  // keel/provider.h

// The cost of one response's usage at `price`, in US dollars. Cached input tokens are counted inside
// input_tokens (as every provider reports them) and charged at the cached price; reasoning tokens are
// counted inside output_tokens and charged at the reasoning price.
inline double cost_of(const TokenUsage& usage, const ModelPrice& price) {
  const double cached = static_cast<double>(usage.cached_input_tokens);
  const double fresh_input = static_cast<double>(usage.input_tokens) - cached;
  const double reasoning = static_cast<double>(usage.reasoning_tokens);
  const double plain_output = static_cast<double>(usage.output_tokens) - reasoning;
  const double per_token = 1e-6;
  return per_token * (fresh_input * price.input_per_million +
                      cached * price.cached_input_per_million.value_or(price.input_per_million) +
                      plain_output * price.output_per_million +
                      reasoning * price.reasoning_output_per_million.value_or(price.output_per_million));
}

}  // namespace keel::providers
