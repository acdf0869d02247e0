// engine/recovery.h — what a starting engine does with the runs an earlier process left unfinished
// (spec §5), run.resolveUncertain, and initialize's list of unfinished runs.
//
// At start every run that was executing is classified from the store:
//   - waiting_approval / waiting_interaction: the wait holds its thread again (Waits::restore_wait);
//   - queued / streaming_model / executing_tool with no dispatched call: it continues by itself from its
//     last checkpoint (a continuation runner finishes the calls without results, then calls the model; a
//     queued run without an environment snapshot resolves the current configuration, for the first time);
//   - a run whose row cannot be read (a state no keel state names, a damaged column), or that was left
//     unfinished under a newer turn of its thread, fails with the reason; the others recover as usual;
//   - a dispatched call without a result (Run.pendingTool written before the tool ran): by the tool's
//     recovery class — retry-safe runs again; inspect-first gets a result saying the outcome is unknown
//     and to inspect before retrying; never-retry moves the run to paused_uncertain until the person
//     chooses (run.resolveUncertain{retry | mark_done | fail}).
//   - a retry-safe call about to run again is counted first: its dispatch record, with
//     `recoveryAttempts`, commits before the continuation runs it. A call that recovery already ran
//     kMaxAttempts times without a result (each time the process died: it may be what kills it) is not
//     run again; the model gets an error result (tool.not_retried) and the run goes on. Otherwise a call
//     that crashes the process would crash every start after it.
// Interrupted, budget-paused and paused_uncertain runs wait for the person; unfinished_runs() lists them.
// A queue whose thread's last turn ended normally starts its front input, as it would have had the process
// lived past that turn's end (the end and the queue's start are two transactions).
//
// A run that goes on is handed to the TurnLauncher as a continuation, bound to the tool registry generation
// its dispatched call was classified with.
//
// Threads: recover_runs() on any thread, once per engine (EngineCore::Impl::recover), before any op is
// served; it reads the store there and posts each run's recovery onto its thread's strand.
// resolve_uncertain() on the actor's strand; unfinished_runs() on any thread. The context's members must
// outlive the Recovery, and a strand may run a posted recovery only while they live (the engine joins its
// io threads before its members go).
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/engine_replies.h"
#include "engine/store_writer.h"
#include "engine/thread_actor.h"
#include "engine/waits.h"
#include "keel/clock.h"
#include "keel/ids.h"
#include "keel/protocol.h"
#include "keel/tool_registry.h"
#include "protocol/op_params.h"
#include "store/interaction_repository.h"
#include "store/queue_repository.h"
#include "store/run_repository.h"
#include "store/thread_repository.h"

namespace keel {

// The engine's thread actors, as recovery reaches them (EngineCore::Impl).
class ThreadActors {
 public:
  // The thread's actor, made on first use. Any thread.
  virtual std::shared_ptr<ThreadActor> actor_for(const std::string& thread_id) = 0;
  // On the actor's strand, with no turn running: starts the thread's front queued input, if it has one.
  virtual void advance_queue(const std::shared_ptr<ThreadActor>& actor) = 0;

 protected:
  ~ThreadActors() = default;
};

// What recovery needs: the store and the repositories it reads and writes, ids and the clock for the nodes
// and receipts it writes, the live tool registry (to classify a dispatched call), the waits it restores,
// how to answer and publish, how a recovered run goes on, and the threads' actors.
struct RecoveryContext {
  StoreWriter& writer;
  const Clock& clock;
  IdSource& ids;
  ToolRegistry& tools;
  ThreadRepository& threads;
  RunRepository& runs;
  QueueRepository& queue;
  InteractionRepository& interactions;
  Waits& waits;
  EngineReplies& replies;
  TurnLauncher& launcher;
  ThreadActors& actors;
};

class Recovery {
 public:
  // How many times recovery runs a retry-safe call again when each run ended with the process dying.
  static constexpr int kMaxAttempts = 1;

  explicit Recovery(RecoveryContext context) : c_(context) {}

  // At start: classifies every run an earlier process left executing or waiting, fails the damaged ones,
  // and posts each other run's recovery, and each queue a completed turn left behind, onto its thread's
  // strand. A run recovery cannot write keeps its state; the next start classifies it again.
  void recover_runs();
  // run.resolveUncertain {threadId, runId?, resolution: retry | mark_done | fail}: a command unit; after
  // its commit the run goes on. Refusals: turn.busy, invalid_argument, run.not_found, run.not_uncertain,
  // and the command context's and the store's errors.
  // Malformed `params` are refused inside the command (recorded with the receipt).
  void resolve_uncertain(const std::shared_ptr<ThreadActor>& actor, const Op& op,
                         Result<protocol::RunResolveUncertainParams> params);
  // Every run that has not finished, for initialize (a front end offers "continue"): its ids, state,
  // whether run.resume takes it, and the approvals or interactions it waits for. [] when the store cannot
  // be read.
  nlohmann::json unfinished_runs();

 private:
  // On the actor's strand: a run that was executing, by its dispatched call's recovery class.
  void restore_running(const std::shared_ptr<ThreadActor>& actor, const RunRecord& run);
  // Before recovery runs a retry-safe call again: commits the attempt in the run's dispatch record, or,
  // when recovery already ran it kMaxAttempts times, its tool.not_retried result instead. Returns the run
  // as the continuation takes it up.
  Result<RunRecord> count_attempt(const RunRecord& run, const ToolRegistryGeneration& generation);
  // The run is the thread's active turn again and a continuation runner picks it up.
  void continue_recovered(const std::shared_ptr<ThreadActor>& actor, const RunRecord& run,
                          std::shared_ptr<const ToolRegistryGeneration> generation);

  RecoveryContext c_;
};

}  // namespace keel
