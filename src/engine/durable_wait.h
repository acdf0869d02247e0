// engine/durable_wait.h — a call that waits for a person or a timer (spec §5, §6.1).
//
// run_call() runs one call through the CallExecutor and, when it must wait for an approval or an interaction,
// suspends the run: one transaction writes the record and the run's waiting state with its pending tool,
// the request goes out, and the runner ends; the actor holds the wait until it is settled or withdrawn.
// Steers are still admitted; the continuation's first request takes them.
//
// continue_wait() is that continuation: the calls of the run's last response that have no result, read
// from the store; the waiting one is settled from its record (declined, re-verified and dispatched, or its
// claimed answer), then the others run. On the turn's strand only; coroutines take parameters by value.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <optional>
#include <vector>

#include "engine/call_executor.h"
#include "engine/turn.h"
#include "engine/turn_ending.h"
#include "engine/turn_journal.h"

namespace keel {

class DurableWait {
 public:
  // All must outlive this (they belong to one TurnRunner).
  DurableWait(Turn& turn, TurnJournal& journal, TurnEnding& ending, CallExecutor& calls)
      : turn_(turn), journal_(journal), ending_(ending), calls_(calls) {}

  // Runs `call` (CallExecutor::run); when it must wait, suspends the run. False when the turn ended or
  // waits.
  boost::asio::awaitable<bool> run_call(PlannedCall call, bool more_after,
                                        std::optional<CallDecision> decided, bool dispatch_recorded);
  // False when the turn ended or waits again.
  boost::asio::awaitable<bool> continue_wait();
  // The calls of the run's last response without a result, from the store.
  Result<std::vector<PlannedCall>> calls_without_results(Transaction& tx);

 private:
  boost::asio::awaitable<void> suspend(PlannedCall call, CallDecision decision);
  nlohmann::json approval_request(const PlannedCall& call, const CallDecision& decision) const;
  // A settled approval's call: refused when declined, when its tool or target changed since it was
  // approved, or when the gatekeeper now refuses it; otherwise run.
  boost::asio::awaitable<bool> run_approved(PlannedCall call, bool more_after, ApprovalRecord approval);
  // An answered interaction's call: claims the answer and writes the trusted result in one transaction.
  boost::asio::awaitable<bool> finish_interaction(PlannedCall call, bool more_after,
                                                  InteractionRecord interaction);

  Turn& turn_;
  TurnJournal& journal_;
  TurnEnding& ending_;
  CallExecutor& calls_;
};

}  // namespace keel
