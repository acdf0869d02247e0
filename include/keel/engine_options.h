// keel/engine_options.h — how an engine is configured: the model it talks to, budgets, context
// compaction, threads and limits (EngineOptions, given to the EngineCore constructor of keel/engine.h).
// Plain values; every field has a usable default.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "keel/provider.h"

namespace keel {

// Keeping requests inside the model's context window (spec §1; src/engine/context_window.h).
struct CompactionSettings {
  bool enabled = true;
  // Compact once the request and its reserved reply would fill this fraction of the window.
  double threshold = 0.8;
  // The share of the window the kept tail may take; the rest of the history is summarized.
  double tail_fraction = 0.3;
  // The longest summary asked of the model, in tokens.
  int64_t summary_max_tokens = 2'000;
};

struct ModelSettings {
  std::string model = "default";
  std::string system_prompt = "You are keel, a careful assistant that uses tools to get work done.";
  bool tool_use = true;  // false: the run binds an empty registry (no tool schema is sent)
  bool vision = true;    // false: no screenshot tool; image inputs are refused before the provider call
  std::optional<int64_t> max_output_tokens;
  // The model's context window in tokens; 0 = unknown (requests are not checked against it).
  int64_t context_window_tokens = 0;
  nlohmann::json parameters = nlohmann::json::object();
  // From the configuration's price table: token.usage then reports what each response cost.
  std::optional<ModelPrice> price;
};

// How the engine reaches its model, as a run's environment snapshot records it (spec §5): recovery refuses a
// run whose transport or credential reference shape changed. The secret itself is never here; it may
// rotate behind the same reference.
struct ProviderTransport {
  std::string kind = "scripted";  // openai-chat | openai-responses | anthropic | scripted
  std::string base_url;
  std::string wire_format;
  std::string credential_id;     // the reference, e.g. "openai-main" ("" = none)
  std::string credential_shape;  // e.g. "api_key"
};

// The largest token budget a run takes (turn.submit's budgetTokens, run.resume's additionalBudgetTokens, and
// a budget raised by resumes, which saturates here). Far above any real turn, and small enough that adding
// two budgets can never overflow int64_t.
inline constexpr int64_t kMaxBudgetTokens = 1'000'000'000'000;

// A run's budget after run.resume adds `extra`: saturates at kMaxBudgetTokens; a missing or negative stored
// budget counts as 0.
int64_t raised_budget(std::optional<int64_t> budget, int64_t extra);

struct EngineOptions {
  ModelSettings model;
  ProviderTransport transport;
  // Title generation: a best-effort call to this model through `task_provider` on a thread's first turn.
  std::optional<std::string> task_model;
  std::optional<int64_t> default_budget_tokens;
  // Keeping requests inside the model's window (engine/context_window.h).
  CompactionSettings compaction;
  size_t max_tool_output_chars = 30000;
  int io_threads = 1;
  // Tool calls run on the engine's own worker threads, never on the I/O threads (engine/tool_workers.h):
  // at most this many at once.
  size_t tool_threads = 8;
  // How long one tool call may run before it ends with tool.timed_out and its cancellation fires, unless
  // the tool asks for more (AgentTool::time_budget: the wait tool asks for its wait).
  std::chrono::milliseconds tool_time_budget{std::chrono::minutes(10)};
  // At shutdown, how long the engine waits for tools still running (their turns have been interrupted)
  // before it leaves them behind on detached threads (engine/tool_workers.h).
  std::chrono::milliseconds tool_shutdown_grace{std::chrono::seconds(2)};
  // false: the constructor leaves the runs an earlier process left unfinished alone until recover(), so a
  // host can subscribe first and its clients see the recovered turns' events from their turn.start on. The
  // host must call recover() before it submits the first op (a thread whose run is not taken up yet looks
  // idle).
  bool recover_on_start = true;
  // Called once, on an engine thread, when the store has refused a write because it is poisoned (a failed
  // sync or commit, e.g. a full disk: it refuses every write until it is reopened), after every running
  // turn ended with an error event. The engine starts no turn from then on; the host should exit so that
  // a supervisor restarts it and recovery continues from what was synced (keel serve exits with 75).
  // Must return quickly and must not destroy the engine.
  std::function<void()> on_store_failed = nullptr;
};

}  // namespace keel
