// engine/call_executor.h — a response's tool calls, from the provider's text to a committed result
// (spec §2, §4, §6.1).
//
// plan() gives each call a thread-unique id and stable node ids and parses its arguments; decide() is the
// one place the engine decides whether a call runs (unknown tool, bad arguments, a target that cannot be
// shown, the gatekeeper's verdict, an interaction instead of execution); run() commits a result at once,
// reports that the call must wait durably (engine/durable_wait.h), or records its dispatch when running it
// twice is not safe, executes it on the engine's tool workers and commits its result. On the turn's strand
// only; coroutines take their parameters by value.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/response_assembler.h"
#include "engine/turn.h"
#include "engine/turn_ending.h"
#include "engine/turn_journal.h"

namespace keel {

// What the engine decided about a call before running it: a result to give at once (unknown tool, bad
// arguments), a refusal, a durable wait, or the tool to run.
struct CallDecision {
  std::optional<Error> immediate_error;
  std::optional<std::string> refusal;
  const RegisteredTool* tool = nullptr;  // of the turn's registry generation, which outlives the turn
  ToolTarget target;
  GateVerdict verdict;
  bool ask = false;                            // a person must approve it first
  std::optional<InteractionPlan> interaction;  // it waits for an answer or a timer instead of executing
  bool runs() const { return !immediate_error && !refusal; }
  bool waits() const { return runs() && (ask || interaction); }
  bool executes() const { return runs() && !ask && !interaction; }
  // Running it twice is not safe: that it was dispatched must be durable before it runs.
  bool needs_dispatch_record() const {
    return executes() && tool->descriptor->recovery != ToolRecovery::kRetrySafe;
  }
};

class CallExecutor {
 public:
  // All three must outlive this (they belong to one TurnRunner).
  CallExecutor(Turn& turn, TurnJournal& journal, TurnEnding& ending)
      : turn_(turn), journal_(journal), ending_(ending) {}

  std::vector<PlannedCall> plan(const AssembledResponse& response);
  // `approved`: a person accepted the call (or chose to retry it), so a verdict that asks lets it run.
  CallDecision decide(const PlannedCall& call, bool approved = false) const;

  // How a call's run() ended.
  struct Outcome {
    enum class Next { kAnswered, kEnded, kWaits } next = Next::kEnded;
    CallDecision decision{};  // kWaits: what it waits for
  };
  // `more_after`: another call of the same response follows this one. `decided`: the decision already
  // taken (a response's first call, before its assistant message committed; a settled approval);
  // `dispatch_recorded`: its dispatch committed with that message.
  boost::asio::awaitable<Outcome> run(PlannedCall call, bool more_after, std::optional<CallDecision> decided,
                                      bool dispatch_recorded);

 private:
  boost::asio::awaitable<bool> execute(PlannedCall call, RunState after, CallDecision decision);

  Turn& turn_;
  TurnJournal& journal_;
  TurnEnding& ending_;
};

}  // namespace keel
