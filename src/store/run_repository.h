// store/run_repository.h — runs, their pending steers, and their prepared tool calls.
//
// A run is one turn of a thread. It follows the state machine of docs/architecture.md §4:
//
//   queued -> streaming_model <-> executing_tool / waiting_approval / waiting_interaction
//   ending in completed, interrupted, budget_paused, paused_uncertain or failed.
//
// Every transition is one call of transition() inside the caller's write transaction and bumps the run's
// revision. The run's revision counts changes of its `runs` row: transition() and admit_steer() (which
// advances next_admission_seq) bump it; changes to steers and prepared tool calls, which have rows of
// their own, do not.
//
// Steers (spec §3): admit_steer() writes a steer into the run's durable pending set and assigns it the
// run's next admission sequence number in the same transaction, so sequence numbers are unique and
// increasing per run, whatever order transactions commit in and across restarts. The loop takes a cutoff
// (the run's next_admission_seq - 1) and materializes pending_steers_up_to(cutoff) in sequence order.
//
// Prepared tool calls (spec §4, §5) give a tool call a stable identity before it is dispatched; their
// dispatch_state only moves forward: prepared -> dispatched -> settled (prepared -> settled for a call that
// was never dispatched, e.g. refused). A dispatched call that is not settled after a crash has an unknown
// outcome (paused_uncertain).
//
// Methods take a Transaction and hold no state between calls apart from the injected clock, so one
// repository may serve every thread. Errors: run.not_found, thread.not_found, thread.deleted,
// revision.conflict, run.invalid_transition, run.not_steerable, steer.not_found, steer.id_conflict,
// steer.already_materialized, tool_call.not_found, tool_call.invalid_transition, invalid_argument,
// store.decode_failed (a damaged row: a state, turn kind or pending tool no keel writes),
// store.payload_too_large, store.constraint (a duplicate id), and any
// store error.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "keel/clock.h"
#include "keel/error.h"
#include "keel/store.h"
#include "store/records.h"

namespace keel {

// The columns a transition may change besides the state. Unset fields keep their stored value.
struct RunUpdate {
  // Set when the environment is resolved (queued -> streaming_model).
  std::optional<std::string> snapshot_id = std::nullopt;
  std::optional<std::string> stop_reason = std::nullopt;
  std::optional<std::string> provider_stop_reason = std::nullopt;
  std::optional<std::string> error = std::nullopt;
  std::optional<int64_t> step_cursor = std::nullopt;
  std::optional<PendingTool> pending_tool = std::nullopt;
  bool clear_pending_tool = false;  // writes NULL; invalid_argument together with pending_tool
  std::optional<nlohmann::json> usage = std::nullopt;
  std::optional<int> failure_streak = std::nullopt;
  std::optional<int64_t> budget_tokens = std::nullopt;  // e.g. raised by run.resume
};

class RunRepository {
 public:
  // Largest JSON column of a run, steer or prepared tool call, in bytes of canonical JSON.
  static constexpr size_t kMaxJsonBytes = 4 * 1024 * 1024;

  // `clock` must outlive the repository.
  explicit RunRepository(const Clock& clock) : clock_(clock) {}

  // ---- runs ----

  // Inserts `run` for a live thread. The repository assigns revision 1, next_admission_seq 1 and both
  // timestamps; every other field is stored as given. A run starts in a non-terminal state (usually
  // queued or streaming_model); a terminal one is invalid_argument.
  Result<RunRecord> create(Transaction& tx, RunRecord run);
  // run.not_found when there is none.
  Result<RunRecord> get(Transaction& tx, const std::string& run_id);
  // The thread's runs, oldest first.
  Result<std::vector<RunRecord>> list_by_thread(Transaction& tx, const std::string& thread_id);
  // The thread's most recently created run; nullopt when it has none.
  Result<std::optional<RunRecord>> latest_for_thread(Transaction& tx, const std::string& thread_id);
  // Ids of every run that has not stopped — whatever its row says, so a run whose state no keel state
  // names is found too (recovery), oldest first. Stopped: completed, failed, interrupted, budget_paused,
  // paused_uncertain.
  Result<std::vector<std::string>> unstopped_run_ids(Transaction& tx);
  // Marks a run whose row cannot be read or whose state cannot be reached as failed, with `reason`,
  // without decoding the row (recovery; nothing else of the run is touched).
  Result<void> mark_damaged(Transaction& tx, const std::string& run_id, const std::string& reason);
  // Every run in one of `states`, oldest first (recovery: e.g. all non-terminal runs).
  Result<std::vector<RunRecord>> list_in_states(Transaction& tx, const std::vector<RunState>& states);

  // Moves the run to `to`, applies `update` and bumps the revision. When `expected_revision` is given and
  // differs from the stored one: revision.conflict (checked first). Allowed moves (run.invalid_transition
  // otherwise):
  //   queued            -> streaming_model, interrupted, failed
  //   streaming_model   -> streaming_model (a checkpoint), executing_tool, waiting_approval,
  //                        waiting_interaction, completed, interrupted, budget_paused, paused_uncertain,
  //                        failed
  //   executing_tool    -> executing_tool, streaming_model, waiting_approval, waiting_interaction,
  //                        interrupted, budget_paused, paused_uncertain, failed
  //   waiting_approval  -> waiting_approval, executing_tool, streaming_model, interrupted, failed
  //   waiting_interaction -> waiting_interaction, executing_tool, streaming_model, interrupted, failed
  //   interrupted, budget_paused -> streaming_model (the user continues)
  //   paused_uncertain  -> streaming_model (mark_done / fail: the model gets the tool result),
  //                        executing_tool (retry)
  //   completed, failed -> nothing
  // Leaving interrupted/budget_paused/paused_uncertain clears stop_reason and error unless `update` sets
  // them (they described the stop being left).
  Result<RunRecord> transition(Transaction& tx, const std::string& run_id,
                               std::optional<int64_t> expected_revision, RunState to,
                               const RunUpdate& update = {});
  // As transition(), from `current`, the caller's copy of the run, without reading the row when that copy
  // is still the stored one (same revision): a runner that wrote the run last knows it. When the row has
  // moved on (an admitted steer bumps the revision), it reads the row and transitions from that.
  Result<RunRecord> transition_from(Transaction& tx, const RunRecord& current, RunState to,
                                    const RunUpdate& update = {});
  // Whether transition() allows `from` -> `to`.
  static bool can_transition(RunState from, RunState to);

  // ---- steers ----

  // Admits a pending steer into the run: assigns the run's next_admission_seq (and advances it, bumping
  // the run's revision) in the caller's transaction. The run must be steerable: a TurnKind::kUser turn, not
  // terminal (run.not_steerable). Admitting the same steer id again with the same run, input and
  // attachments returns the stored steer unchanged (a retried admission); with anything else:
  // steer.id_conflict.
  Result<SteerRecord> admit_steer(Transaction& tx, const std::string& run_id, std::string steer_id,
                                  nlohmann::json input, nlohmann::json attachments = nlohmann::json::array());
  // steer.not_found when there is none.
  Result<SteerRecord> get_steer(Transaction& tx, const std::string& steer_id);
  // The run's pending steers in admission order.
  Result<std::vector<SteerRecord>> pending_steers(Transaction& tx, const std::string& run_id);
  // The run's pending steers with admission_seq <= max_seq, in admission order (the cutoff).
  Result<std::vector<SteerRecord>> pending_steers_up_to(Transaction& tx, const std::string& run_id,
                                                        int64_t max_seq);
  // Marks a pending steer materialized as `node_id`. Idempotent for the same node; a steer already
  // materialized as another node: steer.already_materialized.
  Result<SteerRecord> mark_materialized(Transaction& tx, const std::string& steer_id,
                                        const std::string& node_id);

  // ---- prepared tool calls ----

  // Inserts a tool call in state prepared (any other dispatch_state is invalid_argument) for an existing
  // run; the repository sets both timestamps. A duplicate tool_call_id: store.constraint.
  Result<PreparedToolCallRecord> prepare(Transaction& tx, PreparedToolCallRecord call);
  // tool_call.not_found when there is none.
  Result<PreparedToolCallRecord> get_tool_call(Transaction& tx, const std::string& tool_call_id);
  // Moves the call forward: prepared -> dispatched, prepared -> settled, dispatched -> settled. Anything
  // else (backwards, or to its current state): tool_call.invalid_transition.
  Result<PreparedToolCallRecord> set_dispatch_state(Transaction& tx, const std::string& tool_call_id,
                                                    DispatchState to);
  // The run's calls that are prepared or dispatched, oldest first.
  Result<std::vector<PreparedToolCallRecord>> unsettled_for_run(Transaction& tx, const std::string& run_id);

 private:
  // Applies the transition to `run` and writes it if the stored revision is still run.revision; nullopt
  // when it is not (nothing written).
  Result<std::optional<RunRecord>> apply_transition(Transaction& tx, RunRecord run, RunState to,
                                                    const RunUpdate& update);
  const Clock& clock_;
};

}  // namespace keel
