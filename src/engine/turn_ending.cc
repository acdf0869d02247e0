#include "engine/turn_ending.h"

#include "engine/engine_errors.h"

namespace keel {

boost::asio::awaitable<void> TurnEnding::end_turn(Ending ending) {
  co_await turn_.wait_for_admissions(turn_.gate().stop());
  Result<Events> written = journal_.end(ending);
  if (!turn_.publish_committed(std::move(written))) co_return;
  events::TurnEnd end{.turn_id = turn_.run.turn_id, .run_id = turn_.run.id};
  switch (ending.kind) {
    case Ending::Kind::kBudgetPause:
      end.stop_reason = "budget_pause";
      end.usage = ending.used;
      end.budget_tokens = turn_.run.budget_tokens;
      break;
    case Ending::Kind::kFailed:
      end.stop_reason = "error";
      end.error = ending.error;
      break;
    case Ending::Kind::kInterrupted:
      end.stop_reason = "interrupted";
      break;
  }
  turn_.publish(events::turn_complete(end));
}

boost::asio::awaitable<void> TurnEnding::end_after_failure(Error cause) {
  turn_.failed_write.reset();
  co_await end_turn(Ending::failed(std::move(cause)));
  if (!turn_.failed_write) co_return;
  // Not even the failure could be written (the store refuses every write, say).
  const Error why = *turn_.failed_write;
  turn_.actor->mark_stranded(
      Error(codes::kTurnUnpersisted,
            "turn " + turn_.run.turn_id + " could not record its end (" + why.to_string() +
                "); the thread takes no new work until keel restarts and recovers the run"));
  turn_.publish(events::run_unpersisted(turn_.run, why));
  turn_.publish(events::turn_complete({.turn_id = turn_.run.turn_id,
                                       .run_id = turn_.run.id,
                                       .stop_reason = "error",
                                       .error = why,
                                       .unpersisted = true}));
}

}  // namespace keel
