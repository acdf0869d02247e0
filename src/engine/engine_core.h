// engine/engine_core.h — EngineCore: runs agent turns for many threads at once.
//
// Each thread is owned by one ThreadActor (an Asio strand): everything that touches a thread — its ops,
// its turn loop, its events — runs serially there, while different threads run in parallel on the engine's
// io_context. The turn loop is a coroutine (engine/turn_runner.h) that follows spec §2; interrupt cancels
// the turn's CancellationSource, which reaches the provider request and the running tool at once.
//
// The engine knows its collaborators only through their interfaces: Store (through repositories), Provider,
// ToolRegistry/AgentTool, Gatekeeper, Clock, IdSource. Clients talk to it through an EngineTransport
// (DirectTransport in-process); answers and progress come back as AgentEvents (keel/protocol.h and
// docs/protocol.md).
//
// Durability: every step is a store transaction; an ACK, an event reporting a persisted fact, and
// turn.complete are published only after their transaction committed.
//
// Thread-safety: submit() and subscribe() may be called from any thread. The destructor interrupts running
// turns, waits for them to write their terminal state, and stops the engine's threads.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "engine/context_window.h"
#include "keel/clock.h"
#include "keel/ids.h"
#include "keel/protocol.h"
#include "keel/provider.h"
#include "keel/scheduler.h"
#include "keel/store.h"
#include "keel/tool_registry.h"
#include "keel/transport.h"
#include "policy/gatekeeper.h"
#include "providers/model_capabilities.h"

namespace keel {

class FailPoints;

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
  std::optional<providers::ModelPrice> price;
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

// Everything the engine uses but does not own. All must outlive the engine.
struct EngineDeps {
  Store* store = nullptr;
  Provider* provider = nullptr;
  Provider* task_provider = nullptr;  // optional
  ToolRegistry* tools = nullptr;
  Gatekeeper* gatekeeper = nullptr;
  const Clock* clock = nullptr;
  IdSource* ids = nullptr;
  // Optional: named points where crash tests kill the process between a step's side effect and its
  // transaction (docs/architecture.md lists them). Only the crash action is meaningful there.
  FailPoints* fail_points = nullptr;
  // Optional: the source of every timer the engine arms (durable timers of set_timer, tool calls' time
  // budgets) and that scheduler() hands to tools that wait, injected like the clock; tests pass a
  // testing::SimulatedTime as both and move time by hand. Callbacks may run on any thread (the engine only
  // posts from them). Default: timers on the engine's io_context.
  Scheduler* scheduler = nullptr;
};

class EngineCore {
 public:
  EngineCore(EngineDeps deps, EngineOptions options);
  ~EngineCore();
  EngineCore(const EngineCore&) = delete;
  EngineCore& operator=(const EngineCore&) = delete;

  // Accepts an op; its answer arrives as command.ack / command.rejected. Never blocks on the op's work.
  void submit(Op op);
  [[nodiscard]] std::unique_ptr<EventSubscription> subscribe(std::function<void(const AgentEvent&)> callback);
  // Classifies and takes up every run an earlier process left unfinished (docs/protocol.md, Recovery). The
  // constructor does it unless EngineOptions::recover_on_start is false; it is done once, later calls
  // return at once.
  void recover();

  // The engine's timers (EngineDeps::scheduler, else timers on its io_context), for the wait tool and
  // other tools that wait. Valid for the engine's lifetime; a task may be destroyed from inside its own
  // callback.
  Scheduler& scheduler();

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace keel
