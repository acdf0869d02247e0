// engine/recovery.cc — Recovery (engine/recovery.h): unfinished runs taken over at start (spec §5),
// run.resolveUncertain, and initialize's list of unfinished runs.
#include "engine/recovery.h"

#include <boost/asio/post.hpp>
#include <optional>
#include <set>
#include <string>

#include "engine/engine_errors.h"
#include "store/node_body.h"
#include "store/receipts.h"

namespace keel {

namespace asio = boost::asio;
using nlohmann::json;

namespace {

// A dispatch record: Run.pendingTool naming a call that was started, not a wait.
bool is_dispatch(const std::optional<PendingTool>& pending) { return pending && pending->is_dispatch(); }

// The call of the run's last response that has no result yet (calls run in order, so it is the one that
// was running when the process died), if any.
Result<std::optional<NodeRecord>> first_unanswered_call(Transaction& tx, ThreadRepository& threads,
                                                        const RunRecord& run) {
  ThreadRecord thread = KEEL_TRY(threads.get(tx, run.thread_id));
  std::optional<NodeRecord> first;
  std::set<std::string> answered;
  std::optional<std::string> at = thread.leaf_node_id;
  while (at) {
    NodeRecord node = KEEL_TRY(threads.get_node(tx, *at));
    if (node.kind == NodeKind::kAssistantMessage) break;
    if (node.kind == NodeKind::kToolResult) answered.insert(node.body.value("toolCallId", ""));
    // Walking back: the last one seen is the earliest.
    if (node.kind == NodeKind::kToolCall && node.run_id == run.id &&
        !answered.contains(node.body.value("toolCallId", ""))) {
      first = node;
    }
    at = node.parent_id;
  }
  return first;
}

// A tool_result the engine writes for a call on the run's behalf (recovery, the person's resolution).
NewNode result_node(std::string id, const RunRecord& run, json body) {
  NewNode node;
  node.id = std::move(id);
  node.thread_id = run.thread_id;
  node.run_id = run.id;
  node.kind = NodeKind::kToolResult;
  node.body = std::move(body);
  return node;
}

}  // namespace

void Recovery::recover_runs() {
  auto tx = c_.writer.store().begin(TxMode::kRead);
  if (!tx) return;
  auto ids = c_.runs.unstopped_run_ids(**tx);
  if (!ids) return;
  std::vector<std::string> queues_to_start;
  if (auto queued = c_.queue.threads_with_items(**tx)) {
    for (const std::string& thread_id : *queued) {
      auto latest = c_.runs.latest_for_thread(**tx, thread_id);
      if (latest && *latest && (*latest)->state == RunState::kCompleted) queues_to_start.push_back(thread_id);
    }
  }
  std::vector<RunRecord> runs;
  std::vector<std::pair<std::string, std::string>> damaged;  // run id, why
  for (const std::string& id : *ids) {
    auto run = c_.runs.get(**tx, id);
    if (!run) {
      damaged.emplace_back(id, "the run's row cannot be read (" + run.error().to_string() + ")");
      continue;
    }
    // A run left unfinished under a newer turn of its thread (an earlier keel let the thread go on after
    // the run's end failed to be written) is failed, never continued: continuing it would append its
    // calls, results or an approved write after the newer history.
    auto latest = c_.runs.latest_for_thread(**tx, run->thread_id);
    if (latest && *latest && (*latest)->id != run->id) {
      damaged.emplace_back(id, "the run was left unfinished and its thread has a newer turn (" +
                                   (*latest)->turn_id + "); it is not continued into that history");
      continue;
    }
    runs.push_back(std::move(*run));
  }
  (void)(*tx)->commit();  // a read: its commit only ends the snapshot, what was read stands
  // A damaged run fails with the reason; the others recover as usual.
  for (const auto& [id, why] : damaged) {
    // A wait of a failed run is not asked again (resend_waits lists waiting runs only) and its answer is
    // refused as expired. A refused write leaves the run as it is (write() stops the engine when the store
    // is poisoned): it is not continued, and the next start classifies it again.
    (void)c_.writer.write(
        [&](Transaction& wtx) { return c_.runs.mark_damaged(wtx, id, "recovery: " + why); });
  }
  for (RunRecord& run : runs) {
    auto actor = c_.actors.actor_for(run.thread_id);
    asio::post(actor->strand, [this, actor, run = std::move(run)] {
      if (activity_after_recovery(run).state == ThreadActivity::State::kWaiting) {
        c_.waits.restore_wait(actor, run);
      } else {
        restore_running(actor, run);
      }
    });
  }
  for (const std::string& thread_id : queues_to_start) {
    auto actor = c_.actors.actor_for(thread_id);
    asio::post(actor->strand, [this, actor] {
      if (!actor->turn()) c_.actors.advance_queue(actor);
    });
  }
}

void Recovery::restore_running(const std::shared_ptr<ThreadActor>& actor, const RunRecord& run) {
  if (actor->turn()) return;
  // One generation for classifying the dispatched call, verifying the run's environment and binding its
  // tools (spec §4): the continuation runner gets this one, not whatever the registry holds by then.
  std::shared_ptr<const ToolRegistryGeneration> generation = c_.tools.snapshot();
  RunRecord current = run;
  const std::optional<PendingTool>& pending = run.pending_tool;
  // A call the person chose to retry (run.resolveUncertain) was not dispatched again yet: its continuation
  // replaces this record by a new dispatch record before it runs the call. So it continues, as retried.
  const bool retry_chosen = is_dispatch(pending) && pending->retry_chosen;
  if (is_dispatch(pending) && !retry_chosen) {
    const RegisteredTool* tool = generation->find(pending->name);
    // A tool that is gone cannot say it is safe to repeat: treat it as never-retry.
    const ToolRecovery recovery = tool ? tool->descriptor->recovery : ToolRecovery::kNeverRetry;
    if (recovery == ToolRecovery::kNeverRetry) {
      auto paused = c_.writer.write([&](Transaction& tx) -> Result<RunRecord> {
        RunUpdate update;
        update.stop_reason = "uncertain";
        return c_.runs.transition(tx, run.id, run.revision, RunState::kPausedUncertain, update);
      });
      if (!paused) return;  // the run keeps its state; the next start classifies it again
      c_.replies.publish_event(run.thread_id, events::run_updated(*paused));
      c_.replies.publish_event(run.thread_id,
                               events::run_uncertain(*paused, pending->tool_call_id, pending->name));
      return;
    }
    if (recovery == ToolRecovery::kInspectFirst) {
      auto answered = c_.writer.write([&](Transaction& tx) -> Result<RunRecord> {
        auto body = KEEL_TRY(encode_tool_result(ToolResultBody{
            .tool_call_id = pending->tool_call_id,
            .content = text_result("keel stopped while this call was running, so its outcome is unknown. "
                                   "Inspect the current state before calling it again.")
                           .content,
            .is_error = true}));
        body["uncertain"] = true;
        KEEL_TRY(c_.threads.append(tx, result_node(c_.ids.next_id(), run, std::move(body))));
        RunUpdate update;
        update.clear_pending_tool = true;
        return c_.runs.transition(tx, run.id, run.revision, RunState::kExecutingTool, update);
      });
      if (!answered) return;
      current = *answered;
    }
    // retry-safe: the continuation runs the call again, counted below.
  }
  auto counted = count_attempt(current, *generation);
  if (!counted) return;  // the run keeps its state; the next start classifies it again
  continue_recovered(actor, *counted, std::move(generation));
}

Result<RunRecord> Recovery::count_attempt(const RunRecord& run, const ToolRegistryGeneration& generation) {
  auto read = c_.writer.store().begin(TxMode::kRead);
  if (!read) return std::unexpected(std::move(read).error());
  auto call = first_unanswered_call(**read, c_.threads, run);
  (void)(*read)->commit();  // a read: its commit only ends the snapshot, what was read stands
  if (!call) return std::unexpected(std::move(call).error());
  if (!*call) return run;  // nothing was running: the run goes on to the model
  const NodeRecord& node = **call;
  const std::string tool_call_id = node.body.value("toolCallId", "");
  const std::string name = node.body.value("name", "");
  const RegisteredTool* tool = generation.find(name);
  // Only a retry-safe call may have run without a dispatch record; the others never started (theirs
  // commits before they run) or were decided above.
  if (tool == nullptr || tool->descriptor->recovery != ToolRecovery::kRetrySafe) return run;
  const std::optional<PendingTool>& pending = run.pending_tool;
  const int attempts = is_dispatch(pending) && pending->tool_call_id == tool_call_id
                           ? pending->recovery_attempts.value_or(0)
                           : 0;
  return c_.writer.write([&](Transaction& tx) -> Result<RunRecord> {
    if (attempts < kMaxAttempts) {
      RunUpdate update;
      update.pending_tool = dispatch_record(tool_call_id, name, node.id);
      update.pending_tool->recovery_attempts = attempts + 1;
      return c_.runs.transition(tx, run.id, run.revision, RunState::kExecutingTool, update);
    }
    auto body = KEEL_TRY(encode_tool_result(ToolResultBody{
        .tool_call_id = tool_call_id,
        .content = text_result("keel stopped while this call was running, " + std::to_string(attempts + 1) +
                               " times in a row, so it was not run again: it may be what stops keel. Do not "
                               "repeat it as it was; change the call (for example a simpler pattern or a "
                               "smaller input) or do without it.")
                       .content,
        .is_error = true,
        .details = json{{"code", codes::kToolNotRetried}, {"recoveryAttempts", attempts}}}));
    body["notRetried"] = true;
    KEEL_TRY(c_.threads.append(tx, result_node(c_.ids.next_id(), run, std::move(body))));
    RunUpdate update;
    update.clear_pending_tool = run.pending_tool.has_value();
    return c_.runs.transition(tx, run.id, run.revision, RunState::kExecutingTool, update);
  });
}

void Recovery::continue_recovered(const std::shared_ptr<ThreadActor>& actor, const RunRecord& run,
                                  std::shared_ptr<const ToolRegistryGeneration> generation) {
  CancellationToken cancel = actor->begin_turn(run);
  actor->context().invalidate();
  c_.replies.publish_event(run.thread_id, events::turn_start(run, /*resumed=*/true, /*recovered=*/true));
  if (c_.launcher.stopping()) actor->cancel_turn("the engine is shutting down");
  c_.launcher.continue_turn(actor, run, std::move(cancel), std::move(generation));
}

void Recovery::resolve_uncertain(const std::shared_ptr<ThreadActor>& actor, const Op& op,
                                 Result<protocol::RunResolveUncertainParams> params) {
  const std::string& thread_id = actor->thread_id;
  if (actor->turn()) {
    return c_.replies.reject(op, thread_id, Error(codes::kTurnBusy, "a turn is running on this thread"));
  }
  auto context = make_command_context(op.client_id, op.submission_id, op.method, op.params);
  if (!context) return c_.replies.reject(op, thread_id, context.error());
  std::optional<RunRecord> resolved;
  auto outcome = run_command(c_.writer.store(), c_.clock, *context, [&](Transaction& tx) -> Result<json> {
    resolved.reset();
    if (!params) return std::unexpected(params.error());
    const std::string resolution(protocol::to_string(params->resolution));
    RunRecord run;
    if (params->run_id) {
      run = KEEL_TRY(c_.runs.get(tx, *params->run_id));
      if (run.thread_id != thread_id) {
        return fail(codes::kRunNotFound, "run " + run.id + " is not a run of thread " + thread_id);
      }
    } else {
      auto latest = KEEL_TRY(c_.runs.latest_for_thread(tx, thread_id));
      if (!latest) return fail(codes::kRunNotFound, "thread " + thread_id + " has no run");
      run = std::move(*latest);
    }
    const std::optional<PendingTool>& pending = run.pending_tool;
    if (run.state != RunState::kPausedUncertain || !is_dispatch(pending)) {
      return fail(codes::kRunNotUncertain, "run " + run.id + " is " + std::string(to_string(run.state)) +
                                               "; only a paused_uncertain run can be resolved");
    }
    if (resolution == "retry") {
      // The person's choice to run the call again is its approval: the continuation re-verifies it (tool,
      // target, rules and host permissions now) as it does an approved call, and does not ask again.
      RunUpdate update;
      PendingTool retried = *pending;
      retried.retry_chosen = true;
      update.pending_tool = std::move(retried);
      resolved = KEEL_TRY(c_.runs.transition_from(tx, run, RunState::kExecutingTool, update));
    } else {
      const bool done = resolution == "mark_done";
      auto body = KEEL_TRY(encode_tool_result(ToolResultBody{
          .tool_call_id = pending->tool_call_id,
          .content =
              text_result(done ? "The user confirmed that this call took effect (keel had stopped while "
                                 "it ran)."
                               : "The user marked this call as failed: it did not take effect (keel had "
                                 "stopped while it ran).")
                  .content,
          .is_error = !done}));
      body["resolution"] = resolution;
      KEEL_TRY(c_.threads.append(tx, result_node(c_.ids.next_id(), run, std::move(body))));
      RunUpdate update;
      update.clear_pending_tool = true;
      resolved = KEEL_TRY(c_.runs.transition_from(tx, run, RunState::kStreamingModel, update));
    }
    return json{{"runId", run.id}, {"turnId", run.turn_id}, {"resolution", resolution}};
  });
  if (!outcome) return c_.replies.reject(op, thread_id, outcome.error());
  if (!outcome->outcome.accepted) return c_.replies.reject(op, thread_id, *outcome->outcome.rejection);
  c_.replies.ack(op, thread_id, outcome->outcome.result, outcome->replayed);
  if (outcome->replayed || !resolved) return;
  c_.replies.publish_event(thread_id, events::run_updated(*resolved));
  continue_recovered(actor, *resolved, c_.tools.snapshot());
}

json Recovery::unfinished_runs() {
  json out = json::array();
  auto tx = c_.writer.store().begin(TxMode::kRead);
  if (!tx) return out;
  auto runs = c_.runs.list_in_states(
      **tx, {RunState::kStreamingModel, RunState::kExecutingTool, RunState::kWaitingApproval,
             RunState::kWaitingInteraction, RunState::kInterrupted, RunState::kBudgetPaused,
             RunState::kPausedUncertain});
  if (!runs) return out;
  for (const RunRecord& run : *runs) {
    json entry = {
        {"threadId", run.thread_id},
        {"runId", run.id},
        {"turnId", run.turn_id},
        {"state", to_string(run.state)},
        {"canContinue", run.state == RunState::kInterrupted || run.state == RunState::kBudgetPaused}};
    // What the run waits for, so a front end can mark it before (or without) the re-sent requests.
    if (run.state == RunState::kWaitingApproval) {
      json approvals = json::array();
      if (auto pending = c_.interactions.pending_approvals_for_run(**tx, run.id)) {
        for (const ApprovalRecord& approval : *pending) approvals.push_back(approval.id);
      }
      entry["pendingApprovals"] = std::move(approvals);
    } else if (run.state == RunState::kWaitingInteraction) {
      json waiting = json::array();
      if (auto open = c_.interactions.waiting_for_run(**tx, run.id)) {
        for (const InteractionRecord& interaction : *open) {
          waiting.push_back({{"interactionId", interaction.id}, {"kind", to_string(interaction.kind)}});
        }
      }
      entry["pendingInteractions"] = std::move(waiting);
    }
    out.push_back(std::move(entry));
  }
  (void)(*tx)->commit();  // a read: its commit only ends the snapshot, what was read stands
  return out;
}

}  // namespace keel
