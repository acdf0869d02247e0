// engine/turn_ending.h — the one way a turn ends early: a budget pause, a failure, an interrupt (spec §1,
// §3 early end, §5.1).
//
// end_turn() stops admitting steers, waits for the admissions already initiated, then commits the terminal
// state in one transaction (TurnJournal::end): the reply kept for the record, a result for every call
// without one, every ACKed steer materialized, the interrupt's notice for the model. Its events go out,
// turn.complete last. When that write fails the turn is reported unpersisted (Turn::report_unpersisted) and
// the runner ends it through end_after_failure(). On the turn's strand only.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <optional>
#include <string>

#include "engine/turn.h"
#include "engine/turn_journal.h"

namespace keel {

struct Ending {
  enum class Kind { kBudgetPause, kFailed, kInterrupted };
  Kind kind = Kind::kFailed;
  std::optional<Error> error{};                 // kFailed: why
  std::optional<NewNode> reply{};               // kFailed: what the model said, kept for the record
  std::string partial_text{};                   // kInterrupted: what the model had said so far
  std::optional<std::string> in_flight_call{};  // kInterrupted: the call whose tool was running
  TokenUsage used{};                            // kBudgetPause: the run's usage, reported with the pause

  static Ending budget_pause(TokenUsage used) { return {.kind = Kind::kBudgetPause, .used = used}; }
  static Ending failed(Error error, std::optional<NewNode> reply = std::nullopt) {
    return {.kind = Kind::kFailed, .error = std::move(error), .reply = std::move(reply)};
  }
  static Ending interrupted(std::string partial_text = "", std::optional<std::string> in_flight_call = {}) {
    return {.kind = Kind::kInterrupted,
            .partial_text = std::move(partial_text),
            .in_flight_call = std::move(in_flight_call)};
  }
};

class TurnEnding {
 public:
  // Both must outlive this (all belong to one TurnRunner).
  TurnEnding(Turn& turn, TurnJournal& journal) : turn_(turn), journal_(journal) {}

  boost::asio::awaitable<void> end_turn(Ending ending);
  // The single ending path after a failed write or an exception (issue 14): the turn ends failed with
  // `cause` (open calls answered, ACKed steers kept); when even that cannot be written, nothing of the end is
  // persisted, so the run keeps its last persisted state for recovery after a restart, the thread is
  // stranded (it refuses new work: turn.unpersisted) so nothing is built on top of it, and clients get
  // turn.complete{stopReason: "error", persisted: false}.
  boost::asio::awaitable<void> end_after_failure(Error cause);

 private:
  Turn& turn_;
  TurnJournal& journal_;
};

}  // namespace keel
