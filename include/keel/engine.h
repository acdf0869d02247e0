// keel/engine.h — EngineCore: runs agent turns for many threads at once. The embedding API: a program
// builds an engine from its dependencies (EngineDeps: a Store from keel/sqlite_store.h, a Provider, a
// ToolRegistry, a Gatekeeper, a Clock, an IdSource) and its options (keel/engine_options.h), then submits
// ops and subscribes to events (keel/protocol.h). docs/embedding.md shows a whole program.
//
// Each thread is owned by one ThreadActor (an Asio strand): everything that touches a thread — its ops,
// its turn loop, its events — runs serially there, while different threads run in parallel on the engine's
// io_context. The turn loop is a coroutine (engine/turn_runner.h) that follows spec §2; interrupt cancels
// the turn's CancellationSource, which reaches the provider request and the running tool at once.
//
// The engine knows its collaborators only through their interfaces: Store (through repositories), Provider,
// ToolRegistry/AgentTool, Gatekeeper, Clock, Scheduler, IdSource. Clients talk to it through an
// EngineTransport (DirectTransport in-process); answers and progress come back as AgentEvents
// (keel/protocol.h and docs/protocol.md).
//
// Durability: every step is a store transaction; an ACK, an event reporting a persisted fact, and
// turn.complete are published only after their transaction committed.
//
// Thread-safety: submit() and subscribe() may be called from any thread. The destructor interrupts running
// turns, waits for them to write their terminal state, and stops the engine's threads.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "keel/clock.h"
#include "keel/engine_options.h"
#include "keel/fail_points.h"
#include "keel/gatekeeper.h"
#include "keel/ids.h"
#include "keel/model_catalog.h"
#include "keel/protocol.h"
#include "keel/provider.h"
#include "keel/scheduler.h"
#include "keel/skills.h"
#include "keel/store.h"
#include "keel/takeover.h"
#include "keel/tool_registry.h"
#include "keel/transport.h"

namespace keel {

// Everything the engine uses but does not own. All must outlive the engine.
struct EngineDeps {
  Store* store = nullptr;
  // The model of an engine that runs one: with EngineOptions::model and ::transport it makes a one-model
  // catalogue, named after ModelSettings::model, used when `models` is null.
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
  // Optional: what a person may take over from the agent (keel/takeover.h), reached by takeover.start and
  // takeover.end; each outlives the engine and has its own name().
  std::vector<TakeoverTarget*> takeover_targets{};
  // Optional: the models threads may choose (thread.setModel, model.list) and their default, which threads
  // without a choice use; when set, turns use it instead of `provider` and EngineOptions::model/transport.
  // Must outlive the engine.
  const ModelCatalog* models = nullptr;
  // Optional: the skills runs may use (keel/skills.h). A run started while `tools` holds read_skill is told
  // of every skill and binds their digests in its snapshot; without a catalog runs have no skills, and
  // their snapshots are those of a keel without skills. Must outlive the engine.
  const SkillCatalog* skills = nullptr;
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
