// bench/bench_support.h — what the engine benchmarks share: a tool that does nothing, and percentiles.
#pragma once

#include <algorithm>
#include <functional>
#include <vector>

#include "keel/tool.h"

namespace keel::bench {

// A tool that answers at once, so a benchmark measures the engine around it.
class NoopTool final : public AgentTool {
 public:
  explicit NoopTool(ToolEffects effects = ToolEffects::kRead) {
    spec_.name = "noop";
    spec_.label = "No-op";
    spec_.description = "does nothing";
    spec_.parameters = {{"type", "object"}, {"properties", nlohmann::json::object()}};
    spec_.effects = effects;
  }
  const ToolSpec& spec() const override { return spec_; }
  void execute(ToolCallContext, nlohmann::json, std::function<void(Result<ToolResult>)> done) override {
    done(text_result("ok"));
  }

 private:
  ToolSpec spec_;
};

// The value below which a fraction `p` (0..1) of `values` falls (nearest rank); 0 for no values.
inline double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[std::min(values.size() - 1, static_cast<size_t>(p * static_cast<double>(values.size())))];
}

}  // namespace keel::bench
