#include "store/run_repository.h"

#include <utility>

#include "keel/error_codes.h"
#include "store/json_column.h"

namespace keel {
namespace {

constexpr char kRunColumns[] =
    "id, thread_id, turn_id, turn_kind, state, snapshot_id, step_cursor, pending_tool, revision, "
    "stop_reason, "
    "provider_stop_reason, usage, budget_tokens, failure_streak, next_admission_seq, error, created_at, "
    "updated_at";
constexpr char kSteerColumns[] = "id, run_id, admission_seq, input, attachments, state, node_id, created_at";
constexpr char kToolCallColumns[] =
    "tool_call_id, run_id, node_id, tool_name, descriptor_digest, params, target, dispatch_state, "
    "created_at, "
    "updated_at";

Result<std::optional<PendingTool>> decode_pending_tool_column(const std::optional<std::string>& text,
                                                              const std::string& run_id) {
  const std::string what = "pending_tool of run " + run_id;
  auto value = KEEL_TRY(decode_optional_json_column(text, what));
  if (!value) return std::optional<PendingTool>();
  return std::optional<PendingTool>(KEEL_TRY(decode_pending_tool(*value, what)));
}

Result<std::optional<std::string>> encode_pending_tool_column(const std::optional<PendingTool>& pending,
                                                              size_t max_bytes) {
  if (!pending) return std::optional<std::string>();
  return std::optional<std::string>(
      KEEL_TRY(encode_json_column(KEEL_TRY(encode_pending_tool(*pending)), max_bytes)));
}

Result<RunRecord> run_from_row(const SqlRow& row) {
  RunRecord r;
  r.id = row.text(0);
  r.thread_id = row.text(1);
  r.turn_id = row.text(2);
  r.turn_kind = KEEL_TRY(parse_turn_kind(row.text(3)));
  r.state = KEEL_TRY(parse_run_state(row.text(4)));
  r.snapshot_id = row.optional_text(5);
  r.step_cursor = row.integer(6);
  r.pending_tool = KEEL_TRY(decode_pending_tool_column(row.optional_text(7), r.id));
  r.revision = row.integer(8);
  r.stop_reason = row.optional_text(9);
  r.provider_stop_reason = row.optional_text(10);
  r.usage = KEEL_TRY(decode_json_column(row.text(11), "usage of run " + r.id));
  r.budget_tokens = row.optional_integer(12);
  r.failure_streak = static_cast<int>(row.integer(13));
  r.next_admission_seq = row.integer(14);
  r.error = row.optional_text(15);
  r.created_at = row.integer(16);
  r.updated_at = row.integer(17);
  return r;
}

Result<std::vector<RunRecord>> runs_from_rows(const std::vector<SqlRow>& rows) {
  std::vector<RunRecord> runs;
  runs.reserve(rows.size());
  for (const SqlRow& row : rows) runs.push_back(KEEL_TRY(run_from_row(row)));
  return runs;
}

Result<SteerRecord> steer_from_row(const SqlRow& row) {
  SteerRecord s;
  s.id = row.text(0);
  s.run_id = row.text(1);
  s.admission_seq = row.integer(2);
  s.input = KEEL_TRY(decode_json_column(row.text(3), "input of steer " + s.id));
  s.attachments = KEEL_TRY(decode_json_column(row.text(4), "attachments of steer " + s.id));
  s.state = KEEL_TRY(parse_steer_state(row.text(5)));
  s.node_id = row.optional_text(6);
  s.created_at = row.integer(7);
  return s;
}

Result<std::vector<SteerRecord>> steers_from_rows(const std::vector<SqlRow>& rows) {
  std::vector<SteerRecord> steers;
  steers.reserve(rows.size());
  for (const SqlRow& row : rows) steers.push_back(KEEL_TRY(steer_from_row(row)));
  return steers;
}

Result<PreparedToolCallRecord> tool_call_from_row(const SqlRow& row) {
  PreparedToolCallRecord c;
  c.tool_call_id = row.text(0);
  c.run_id = row.text(1);
  c.node_id = row.optional_text(2);
  c.tool_name = row.text(3);
  c.descriptor_digest = row.text(4);
  c.params = KEEL_TRY(decode_json_column(row.text(5), "params of tool call " + c.tool_call_id));
  c.target =
      KEEL_TRY(decode_optional_json_column(row.optional_text(6), "target of tool call " + c.tool_call_id));
  c.dispatch_state = KEEL_TRY(parse_dispatch_state(row.text(7)));
  c.created_at = row.integer(8);
  c.updated_at = row.integer(9);
  return c;
}

Result<std::optional<std::string>> encode_optional(const std::optional<nlohmann::json>& value,
                                                   size_t max_bytes) {
  if (!value) return std::optional<std::string>();
  return std::optional<std::string>(KEEL_TRY(encode_json_column(*value, max_bytes)));
}

}  // namespace

// ---- runs ----

Result<RunRecord> RunRepository::create(Transaction& tx, RunRecord run) {
  if (run.id.empty() || run.turn_id.empty()) {
    return fail(codes::kInvalidArgument, "a run needs an id and a turn id");
  }
  if (is_terminal(run.state)) {
    return fail(codes::kInvalidArgument, "run " + run.id + " cannot be created in the terminal state " +
                                             std::string(to_string(run.state)));
  }
  auto thread = KEEL_TRY(tx.query_one("SELECT deleted FROM threads WHERE id = ?", {run.thread_id}));
  if (!thread) return fail(codes::kThreadNotFound, "no thread " + run.thread_id);
  if (thread->integer(0) != 0) return fail(codes::kThreadDeleted, "thread " + run.thread_id + " was deleted");

  std::optional<std::string> pending_tool =
      KEEL_TRY(encode_pending_tool_column(run.pending_tool, kMaxJsonBytes));
  std::string usage = KEEL_TRY(encode_json_column(run.usage, kMaxJsonBytes));
  const int64_t now = clock_.now_unix_ms();
  run.revision = 1;
  run.next_admission_seq = 1;
  run.created_at = now;
  run.updated_at = now;
  KEEL_TRY(tx.execute(
      "INSERT INTO runs (" + std::string(kRunColumns) +
          ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
      {run.id, run.thread_id, run.turn_id, to_string(run.turn_kind), to_string(run.state), run.snapshot_id,
       run.step_cursor, pending_tool, run.revision, run.stop_reason, run.provider_stop_reason, usage,
       run.budget_tokens, run.failure_streak, run.next_admission_seq, run.error, now, now}));
  return run;
}

Result<RunRecord> RunRepository::get(Transaction& tx, const std::string& run_id) {
  auto row =
      KEEL_TRY(tx.query_one("SELECT " + std::string(kRunColumns) + " FROM runs WHERE id = ?", {run_id}));
  if (!row) return fail(codes::kRunNotFound, "no run " + run_id);
  return run_from_row(*row);
}

Result<std::vector<RunRecord>> RunRepository::list_by_thread(Transaction& tx, const std::string& thread_id) {
  auto rows = KEEL_TRY(tx.query(
      "SELECT " + std::string(kRunColumns) + " FROM runs WHERE thread_id = ? ORDER BY created_at, id",
      {thread_id}));
  return runs_from_rows(rows);
}

Result<std::optional<RunRecord>> RunRepository::latest_for_thread(Transaction& tx,
                                                                  const std::string& thread_id) {
  auto row =
      KEEL_TRY(tx.query_one("SELECT " + std::string(kRunColumns) +
                                " FROM runs WHERE thread_id = ? ORDER BY created_at DESC, id DESC LIMIT 1",
                            {thread_id}));
  if (!row) return std::optional<RunRecord>();
  return std::optional<RunRecord>(KEEL_TRY(run_from_row(*row)));
}

Result<std::vector<RunRecord>> RunRepository::list_in_states(Transaction& tx,
                                                             const std::vector<RunState>& states) {
  if (states.empty()) return std::vector<RunRecord>();
  std::string sql = "SELECT " + std::string(kRunColumns) + " FROM runs WHERE state IN (";
  std::vector<SqlValue> params;
  params.reserve(states.size());
  for (RunState state : states) {
    sql += params.empty() ? "?" : ", ?";
    params.emplace_back(to_string(state));
  }
  sql += ") ORDER BY created_at, id";
  auto rows = KEEL_TRY(tx.query(sql, std::span<const SqlValue>(params)));
  return runs_from_rows(rows);
}

Result<std::vector<std::string>> RunRepository::unstopped_run_ids(Transaction& tx) {
  auto rows = KEEL_TRY(tx.query(
      "SELECT id FROM runs WHERE state NOT IN ('completed', 'failed', 'interrupted', 'budget_paused', "
      "'paused_uncertain') ORDER BY created_at, id",
      {}));
  std::vector<std::string> ids;
  ids.reserve(rows.size());
  for (const SqlRow& row : rows) ids.push_back(row.text(0));
  return ids;
}

Result<void> RunRepository::mark_damaged(Transaction& tx, const std::string& run_id,
                                         const std::string& reason) {
  KEEL_TRY(tx.execute(
      "UPDATE runs SET state = 'failed', stop_reason = 'error', error = ?, revision = revision + 1, "
      "updated_at = ? WHERE id = ?",
      {reason, clock_.now_unix_ms(), run_id}));
  return {};
}

bool RunRepository::can_transition(RunState from, RunState to) {
  using S = RunState;
  switch (from) {
    case S::kQueued:
      return to == S::kStreamingModel || to == S::kInterrupted || to == S::kFailed;
    case S::kStreamingModel:
      return to != S::kQueued;
    case S::kExecutingTool:
      return to != S::kQueued && to != S::kCompleted;
    case S::kWaitingApproval:
    case S::kWaitingInteraction:
      return to == from || to == S::kExecutingTool || to == S::kStreamingModel || to == S::kInterrupted ||
             to == S::kFailed;
    case S::kInterrupted:
    case S::kBudgetPaused:
      return to == S::kStreamingModel;
    case S::kPausedUncertain:
      return to == S::kStreamingModel || to == S::kExecutingTool;
    case S::kCompleted:
    case S::kFailed:
      return false;
  }
  return false;
}

Result<RunRecord> RunRepository::transition(Transaction& tx, const std::string& run_id,
                                            std::optional<int64_t> expected_revision, RunState to,
                                            const RunUpdate& update) {
  RunRecord run = KEEL_TRY(get(tx, run_id));
  if (expected_revision && *expected_revision != run.revision) {
    return fail(codes::kRevisionConflict, "run " + run_id + " is at revision " +
                                              std::to_string(run.revision) + ", not " +
                                              std::to_string(*expected_revision));
  }
  auto applied = KEEL_TRY(apply_transition(tx, std::move(run), to, update));
  if (!applied)
    return fail(codes::kRevisionConflict, "run " + run_id + " changed while it was being updated");
  return std::move(*applied);
}

Result<RunRecord> RunRepository::transition_from(Transaction& tx, const RunRecord& current, RunState to,
                                                 const RunUpdate& update) {
  if (auto applied = KEEL_TRY(apply_transition(tx, current, to, update))) return std::move(*applied);
  // The stored row moved on (another writer bumped its revision): transition from what is stored.
  return transition(tx, current.id, std::nullopt, to, update);
}

Result<std::optional<RunRecord>> RunRepository::apply_transition(Transaction& tx, RunRecord run, RunState to,
                                                                 const RunUpdate& update) {
  if (update.pending_tool && update.clear_pending_tool) {
    return fail(codes::kInvalidArgument, "a run update cannot both set and clear pending_tool");
  }
  if (!can_transition(run.state, to)) {
    return fail(codes::kRunInvalidTransition, "run " + run.id + " cannot move from " +
                                                  std::string(to_string(run.state)) + " to " +
                                                  std::string(to_string(to)));
  }
  if (is_terminal(run.state)) {  // a resumption: the stop being left no longer describes the run
    run.stop_reason.reset();
    run.error.reset();
  }
  run.state = to;
  if (update.snapshot_id) run.snapshot_id = update.snapshot_id;
  if (update.stop_reason) run.stop_reason = update.stop_reason;
  if (update.provider_stop_reason) run.provider_stop_reason = update.provider_stop_reason;
  if (update.error) run.error = update.error;
  if (update.step_cursor) run.step_cursor = *update.step_cursor;
  if (update.pending_tool) run.pending_tool = update.pending_tool;
  if (update.clear_pending_tool) run.pending_tool.reset();
  if (update.usage) run.usage = *update.usage;
  if (update.failure_streak) run.failure_streak = *update.failure_streak;
  if (update.budget_tokens) run.budget_tokens = update.budget_tokens;

  std::optional<std::string> pending_tool =
      KEEL_TRY(encode_pending_tool_column(run.pending_tool, kMaxJsonBytes));
  std::string usage = KEEL_TRY(encode_json_column(run.usage, kMaxJsonBytes));
  const int64_t now = clock_.now_unix_ms();
  const int64_t changed = KEEL_TRY(tx.execute(
      "UPDATE runs SET state = ?, snapshot_id = ?, step_cursor = ?, pending_tool = ?, stop_reason = ?, "
      "provider_stop_reason = ?, usage = ?, failure_streak = ?, budget_tokens = ?, error = ?, "
      "revision = revision + 1, updated_at = ? WHERE id = ? AND revision = ?",
      {to_string(run.state), run.snapshot_id, run.step_cursor, pending_tool, run.stop_reason,
       run.provider_stop_reason, usage, run.failure_streak, run.budget_tokens, run.error, now, run.id,
       run.revision}));
  if (changed != 1) return std::optional<RunRecord>();
  run.revision += 1;
  run.updated_at = now;
  return std::optional<RunRecord>(std::move(run));
}

// ---- steers ----

Result<SteerRecord> RunRepository::admit_steer(Transaction& tx, const std::string& run_id,
                                               std::string steer_id, nlohmann::json input,
                                               nlohmann::json attachments) {
  if (steer_id.empty()) return fail(codes::kInvalidArgument, "a steer needs an id");
  std::string input_text = KEEL_TRY(encode_json_column(input, kMaxJsonBytes));
  std::string attachments_text = KEEL_TRY(encode_json_column(attachments, kMaxJsonBytes));

  auto existing = KEEL_TRY(
      tx.query_one("SELECT " + std::string(kSteerColumns) + " FROM steers WHERE id = ?", {steer_id}));
  if (existing) {
    SteerRecord steer = KEEL_TRY(steer_from_row(*existing));
    if (steer.run_id == run_id && existing->text(3) == input_text && existing->text(4) == attachments_text) {
      return steer;  // a retried admission: the first one stands
    }
    return fail(codes::kSteerIdConflict,
                "steer " + steer.id + " was already admitted to run " + steer.run_id + " with other content");
  }

  RunRecord run = KEEL_TRY(get(tx, run_id));
  if (run.turn_kind != TurnKind::kUser || is_terminal(run.state)) {
    return fail(codes::kRunNotSteerable, "run " + run_id + " (" + std::string(to_string(run.turn_kind)) +
                                             ", " + std::string(to_string(run.state)) +
                                             ") does not accept steers");
  }
  const int64_t now = clock_.now_unix_ms();
  const int64_t seq = run.next_admission_seq;
  // Advance the counter first, guarded by its old value: the sequence number is ours within this
  // transaction, and the UNIQUE (run_id, admission_seq) constraint backs it up.
  const int64_t changed = KEEL_TRY(tx.execute(
      "UPDATE runs SET next_admission_seq = next_admission_seq + 1, revision = revision + 1, updated_at = ? "
      "WHERE id = ? AND next_admission_seq = ?",
      {now, run_id, seq}));
  if (changed != 1) {
    return fail(codes::kRevisionConflict, "run " + run_id + " admitted another steer concurrently");
  }
  KEEL_TRY(tx.execute(
      "INSERT INTO steers (" + std::string(kSteerColumns) + ") VALUES (?, ?, ?, ?, ?, ?, NULL, ?)",
      {steer_id, run_id, seq, input_text, attachments_text, to_string(SteerState::kPending), now}));
  return SteerRecord{std::move(steer_id),  run_id,       seq, std::move(input), std::move(attachments),
                     SteerState::kPending, std::nullopt, now};
}

Result<SteerRecord> RunRepository::get_steer(Transaction& tx, const std::string& steer_id) {
  auto row = KEEL_TRY(
      tx.query_one("SELECT " + std::string(kSteerColumns) + " FROM steers WHERE id = ?", {steer_id}));
  if (!row) return fail(codes::kSteerNotFound, "no steer " + steer_id);
  return steer_from_row(*row);
}

Result<std::vector<SteerRecord>> RunRepository::pending_steers(Transaction& tx, const std::string& run_id) {
  auto rows = KEEL_TRY(tx.query("SELECT " + std::string(kSteerColumns) +
                                    " FROM steers WHERE run_id = ? AND state = ? ORDER BY admission_seq",
                                {run_id, to_string(SteerState::kPending)}));
  return steers_from_rows(rows);
}

Result<std::vector<SteerRecord>> RunRepository::pending_steers_up_to(Transaction& tx,
                                                                     const std::string& run_id,
                                                                     int64_t max_seq) {
  auto rows = KEEL_TRY(tx.query(
      "SELECT " + std::string(kSteerColumns) +
          " FROM steers WHERE run_id = ? AND state = ? AND admission_seq <= ? ORDER BY admission_seq",
      {run_id, to_string(SteerState::kPending), max_seq}));
  return steers_from_rows(rows);
}

Result<SteerRecord> RunRepository::mark_materialized(Transaction& tx, const std::string& steer_id,
                                                     const std::string& node_id) {
  if (node_id.empty()) return fail(codes::kInvalidArgument, "a materialized steer needs a node id");
  SteerRecord steer = KEEL_TRY(get_steer(tx, steer_id));
  if (steer.state == SteerState::kMaterialized) {
    if (steer.node_id == node_id) return steer;
    return fail(codes::kSteerAlreadyMaterialized,
                "steer " + steer_id + " was already materialized as node " + steer.node_id.value_or("?"));
  }
  KEEL_TRY(tx.execute("UPDATE steers SET state = ?, node_id = ? WHERE id = ?",
                      {to_string(SteerState::kMaterialized), node_id, steer_id}));
  steer.state = SteerState::kMaterialized;
  steer.node_id = node_id;
  return steer;
}

// ---- prepared tool calls ----

Result<PreparedToolCallRecord> RunRepository::prepare(Transaction& tx, PreparedToolCallRecord call) {
  if (call.tool_call_id.empty() || call.tool_name.empty()) {
    return fail(codes::kInvalidArgument, "a prepared tool call needs an id and a tool name");
  }
  if (call.dispatch_state != DispatchState::kPrepared) {
    return fail(codes::kInvalidArgument, "tool call " + call.tool_call_id +
                                             " must be prepared before it is " +
                                             std::string(to_string(call.dispatch_state)));
  }
  KEEL_TRY(get(tx, call.run_id));
  std::string params = KEEL_TRY(encode_json_column(call.params, kMaxJsonBytes));
  std::optional<std::string> target = KEEL_TRY(encode_optional(call.target, kMaxJsonBytes));
  const int64_t now = clock_.now_unix_ms();
  call.created_at = now;
  call.updated_at = now;
  KEEL_TRY(tx.execute("INSERT INTO prepared_tool_calls (" + std::string(kToolCallColumns) +
                          ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                      {call.tool_call_id, call.run_id, call.node_id, call.tool_name, call.descriptor_digest,
                       params, target, to_string(call.dispatch_state), now, now}));
  return call;
}

Result<PreparedToolCallRecord> RunRepository::get_tool_call(Transaction& tx,
                                                            const std::string& tool_call_id) {
  auto row = KEEL_TRY(tx.query_one(
      "SELECT " + std::string(kToolCallColumns) + " FROM prepared_tool_calls WHERE tool_call_id = ?",
      {tool_call_id}));
  if (!row) return fail(codes::kToolCallNotFound, "no prepared tool call " + tool_call_id);
  return tool_call_from_row(*row);
}

Result<PreparedToolCallRecord> RunRepository::set_dispatch_state(Transaction& tx,
                                                                 const std::string& tool_call_id,
                                                                 DispatchState to) {
  PreparedToolCallRecord call = KEEL_TRY(get_tool_call(tx, tool_call_id));
  // The enum is declared in dispatch order; a call only moves forward.
  if (static_cast<int>(to) <= static_cast<int>(call.dispatch_state)) {
    return fail(codes::kToolCallInvalidTransition, "tool call " + tool_call_id + " cannot move from " +
                                                       std::string(to_string(call.dispatch_state)) + " to " +
                                                       std::string(to_string(to)));
  }
  const int64_t now = clock_.now_unix_ms();
  KEEL_TRY(
      tx.execute("UPDATE prepared_tool_calls SET dispatch_state = ?, updated_at = ? WHERE tool_call_id = ?",
                 {to_string(to), now, tool_call_id}));
  call.dispatch_state = to;
  call.updated_at = now;
  return call;
}

Result<std::vector<PreparedToolCallRecord>> RunRepository::unsettled_for_run(Transaction& tx,
                                                                             const std::string& run_id) {
  auto rows = KEEL_TRY(tx.query("SELECT " + std::string(kToolCallColumns) +
                                    " FROM prepared_tool_calls WHERE run_id = ? AND dispatch_state <> ? "
                                    "ORDER BY created_at, tool_call_id",
                                {run_id, to_string(DispatchState::kSettled)}));
  std::vector<PreparedToolCallRecord> calls;
  calls.reserve(rows.size());
  for (const SqlRow& row : rows) calls.push_back(KEEL_TRY(tool_call_from_row(row)));
  return calls;
}

}  // namespace keel
