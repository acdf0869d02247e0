// engine/turn_runner.h — the turn loop (spec §1, §2): one coroutine per running turn, on its thread's strand.
//
//   step():
//     interrupted?           -> end_turn(interrupted)
//     over the token budget? -> end_turn(budget pause)
//     steer cutoff (spec §3): the steers admitted so far go onto the leaf
//     request = ModelStep::prepare_request()       (the session context; compaction when it would not fit)
//     reply   = ModelStep::stream_reply(request)   (item.start, item.delta)
//     calls   = CallExecutor::plan(reply)
//     the turn-end race (spec §3): a reply that would end the turn waits for the admissions in flight; a
//       steer admitted meanwhile buys one more request
//     TurnJournal::commit_reply  (assistant_message + tool_call nodes + usage + step cursor [+ the end])
//     item.complete, token.usage, run.updated; the reply ends the turn -> turn.complete
//     per call: DurableWait::run_call -> CallExecutor::run (decide; a result at once, a durable wait, or
//       dispatch record + execute + result)
//
// Every event that reports a persisted fact is published after its transaction committed (TurnJournal);
// turn.complete is published last. Interrupt (the turn's cancellation) wakes the loop wherever it waits; it
// then writes a partial reply, a result for a call in flight, a notice for the model, and the interrupted
// state (TurnEnding). The collaborators share one Turn and live exactly as long as the runner.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <memory>

#include "engine/call_executor.h"
#include "engine/durable_wait.h"
#include "engine/model_step.h"
#include "engine/turn.h"
#include "engine/turn_ending.h"
#include "engine/turn_journal.h"

namespace keel {

class TurnRunner : public std::enable_shared_from_this<TurnRunner> {
 public:
  // `continuing`: the run waited durably (an approval or an interaction) and its wait was settled or
  // withdrawn; the runner first finishes the calls of its last response, then goes on with the loop.
  // `generation`: the tool registry generation the caller already took (recovery, a held wait), which the
  // runner verifies the run's environment against and binds its tools from; null = the current one.
  TurnRunner(EngineCore::Impl& engine, std::shared_ptr<ThreadActor> actor, RunRecord run,
             CancellationToken cancel, bool continuing,
             std::shared_ptr<const ToolRegistryGeneration> generation)
      : turn_(engine, std::move(actor), std::move(run), std::move(cancel), continuing,
              std::move(generation)) {}
  TurnRunner(const TurnRunner&) = delete;
  TurnRunner& operator=(const TurnRunner&) = delete;

  // Runs the turn to its end. Whatever fails inside — a write the store refuses, an exception — the turn
  // ends: failed with the reason when that can be written, otherwise visibly unpersisted with its thread
  // taking no new work (TurnEnding::end_after_failure).
  boost::asio::awaitable<void> run();
  // The run as this runner last wrote it.
  const RunRecord& last_run() const { return turn_.run; }
  // Publishes what the outbox holds; run() does so before every suspension, the completion handler at the
  // end.
  void flush_events() { turn_.flush_events(); }

 private:
  boost::asio::awaitable<void> run_turn();
  // Each returns false when the turn has ended (its terminal state written and published) or waits.
  boost::asio::awaitable<bool> step();
  // Spec §3's cutoff.
  boost::asio::awaitable<bool> take_steers();
  // Whether the run's pending set holds a steer (a read: a turn's first cutoff checks the stored set once,
  // and most often finds it empty).
  bool has_pending_steers();
  // The reply committed with what it moves; then the turn completes, asks again, or runs its calls.
  boost::asio::awaitable<bool> settle_reply(AssembledResponse response, std::string assistant_id,
                                            TokenUsage used);

  // Loads the run's environment; a continuing run's is verified against the current transport and tools
  // first (spec §5). Errors end the run as failed, with the reason.
  Result<void> load_environment();
  std::shared_ptr<const ToolRegistryGeneration> bind_tools();

  Turn turn_;
  TurnJournal journal_{turn_};
  TurnEnding ending_{turn_, journal_};
  ModelStep model_{turn_, journal_, ending_};
  CallExecutor calls_{turn_, journal_, ending_};
  DurableWait waits_{turn_, journal_, ending_, calls_};
};

}  // namespace keel
