#include "engine/durable_wait.h"

#include <algorithm>
#include <unordered_set>

#include "engine/engine_errors.h"
#include "engine/tool_output.h"
#include "engine/wait_records.h"
#include "store/node_body.h"

namespace keel {

namespace asio = boost::asio;
using nlohmann::json;

namespace {

// The call of a dispatch record the person chose to run again (run.resolveUncertain{retry}), or "".
std::string retried_call_of(const RunRecord& run) {
  const std::optional<PendingTool>& pending = run.pending_tool;
  return pending && pending->is_dispatch() && pending->retry_chosen ? pending->tool_call_id : std::string();
}

}  // namespace

asio::awaitable<bool> DurableWait::run_call(PlannedCall call, bool more_after,
                                            std::optional<CallDecision> decided, bool dispatch_recorded) {
  CallExecutor::Outcome outcome =
      co_await calls_.run(call, more_after, std::move(decided), dispatch_recorded);
  if (outcome.next != CallExecutor::Outcome::Next::kWaits) {
    co_return outcome.next == CallExecutor::Outcome::Next::kAnswered;
  }
  co_await suspend(std::move(call), std::move(outcome.decision));
  co_return false;
}

json DurableWait::approval_request(const PlannedCall& call, const CallDecision& decision) const {
  // What the call will do is computed now, before the approval is persisted, and stored with it: the
  // prompt shown again after a restart is the one shown first.
  const CallPreview preview = preview_call(*decision.tool->implementation, call.arguments, decision.target);
  // A target resolved from the workspace may name a file whose name is not UTF-8: stored as shown.
  return storable_json(approval_request_json(ApprovalSubject{.tool_call_id = call.tool_call_id,
                                                             .call_node_id = call.call_node_id,
                                                             .descriptor = decision.tool->descriptor.get(),
                                                             .arguments = &call.arguments,
                                                             .target = decision.target,
                                                             .verdict = decision.verdict,
                                                             .preview = &preview}));
}

asio::awaitable<void> DurableWait::suspend(PlannedCall call, CallDecision decision) {
  // Steers already admitted stay pending; the continuation's first request takes them.
  co_await turn_.wait_for_admissions(turn_.gate().hold());
  const bool approval = decision.ask;
  TurnJournal::Wait wait;
  wait.id = turn_.new_id();
  wait.pending = TurnJournal::dispatch_record(call);
  wait.pending.wait = PendingTool::Wait{.kind = approval ? WaitKind::kApproval : WaitKind::kInteraction,
                                        .id = wait.id,
                                        .held_notices = turn_.held_notices};
  if (approval) {
    ApprovalRecord record;
    record.id = wait.id;
    record.run_id = turn_.run.id;
    record.tool_call_id = call.tool_call_id;
    record.request = approval_request(call, decision);
    wait.approval = std::move(record);
  } else {
    const InteractionPlan& plan = *decision.interaction;
    InteractionRecord record;
    record.id = wait.id;
    record.run_id = turn_.run.id;
    record.kind = plan.kind;
    record.request = {{"toolCallId", call.tool_call_id},
                      {"toolName", call.name},
                      {"callNodeId", call.call_node_id},
                      {"prompt", plan.request}};
    if (plan.due_in_ms) record.due_at = turn_.engine.deps().clock->now_unix_ms() + *plan.due_in_ms;
    wait.interaction = std::move(record);
  }
  Result<Events> written = journal_.open_wait(wait);
  if (!written) {
    turn_.report_unpersisted(written.error());
    co_return;
  }
  HeldWait held;
  held.run_id = turn_.run.id;
  held.kind = approval ? WaitKind::kApproval : WaitKind::kInteraction;
  held.id = wait.id;
  held.tools = turn_.tools;  // the answer is checked, and the continuation bound, with this run's generation
  turn_.actor->hold(std::move(held));
  turn_.publish(std::move(*written));
  if (!approval && wait.interaction->due_at) turn_.engine.arm_timer(turn_.actor, *wait.interaction);
}

Result<std::vector<PlannedCall>> DurableWait::calls_without_results(Transaction& tx) {
  ThreadRecord thread = KEEL_TRY(turn_.engine.threads().get(tx, turn_.thread_id()));
  std::vector<PlannedCall> calls;
  if (!thread.leaf_node_id) return calls;
  // Back from the leaf to the run's last assistant message: its calls, and the results written since.
  std::unordered_set<std::string> answered_ids;
  std::vector<NodeRecord> call_nodes;
  std::optional<std::string> at = thread.leaf_node_id;
  while (at) {
    NodeRecord node = KEEL_TRY(turn_.engine.threads().get_node(tx, *at));
    if (node.kind == NodeKind::kAssistantMessage) break;
    if (node.kind == NodeKind::kToolResult) answered_ids.insert(node.body.value("toolCallId", ""));
    if (node.kind == NodeKind::kToolCall && node.run_id == turn_.run.id) call_nodes.push_back(node);
    at = node.parent_id;
  }
  std::reverse(call_nodes.begin(), call_nodes.end());
  for (const NodeRecord& node : call_nodes) {
    ToolCallBody body = KEEL_TRY(decode_tool_call(node.body));
    if (answered_ids.contains(body.tool_call_id)) continue;
    PlannedCall call;
    call.call_node_id = node.id;
    call.result_node_id = turn_.new_id();
    call.tool_call_id = body.tool_call_id;
    call.original_id = node.body.value("providerToolCallId", body.tool_call_id);
    call.name = body.name;
    call.arguments = body.arguments;
    if (node.body.contains("argumentsText")) {
      call.arguments_text = node.body.value("argumentsText", "");
      call.argument_error =
          Error(codes::kToolArgumentsNotJson,
                "the arguments are not a valid JSON object: " + call.arguments_text.substr(0, 200));
    }
    calls.push_back(std::move(call));
  }
  return calls;
}

asio::awaitable<bool> DurableWait::continue_wait() {
  turn_.gate().reopen();
  struct Pending {
    std::vector<PlannedCall> calls;
    std::optional<ApprovalRecord> approval;
    std::optional<InteractionRecord> interaction;
  };
  Result<Pending> loaded = [&]() -> Result<Pending> {
    auto tx = KEEL_TRY(turn_.engine.store().begin(TxMode::kRead));
    Pending p;
    turn_.run = KEEL_TRY(turn_.engine.runs().get(*tx, turn_.run.id));
    p.calls = KEEL_TRY(calls_without_results(*tx));
    const std::optional<PendingTool>& pending = turn_.run.pending_tool;
    if (pending && pending->waits_for(WaitKind::kApproval)) {
      p.approval = KEEL_TRY(turn_.engine.interactions().get_approval(*tx, pending->wait->id));
    } else if (pending && pending->waits_for(WaitKind::kInteraction)) {
      p.interaction = KEEL_TRY(turn_.engine.interactions().get_interaction(*tx, pending->wait->id));
    }
    KEEL_TRY(tx->commit());
    return p;
  }();
  if (!loaded) {
    co_await ending_.end_turn(Ending::failed(loaded.error()));
    co_return false;
  }
  turn_.unanswered = loaded->calls;
  // The breaker's notices the waiting runner held for the end of this response.
  if (const std::optional<PendingTool>& pending = turn_.run.pending_tool;
      pending && pending->wait && !pending->wait->held_notices.empty()) {
    const std::vector<std::string>& held = pending->wait->held_notices;
    turn_.held_notices.insert(turn_.held_notices.end(), held.begin(), held.end());
  } else if (turn_.tools_off && !loaded->calls.empty()) {
    // Tools went off during this response and the process stopped before its last result, where the
    // notice would have been written: it is written there now.
    turn_.held_notices.push_back(kToolsOffText);
  }
  if (turn_.cancel.is_cancelled()) {  // the wait was withdrawn: every open call is answered as interrupted
    co_await ending_.end_turn(Ending::interrupted());
    co_return false;
  }
  std::vector<PlannedCall> calls = loaded->calls;
  // run.resolveUncertain{retry}: the person chose to run this dispatched call again, which approves it.
  const std::string retried_call = retried_call_of(turn_.run);
  for (size_t i = 0; i < calls.size(); ++i) {
    const bool more_after = i + 1 < calls.size();
    const bool waited_on = i == 0 && (loaded->approval || loaded->interaction);
    bool goes_on = false;
    if (waited_on && loaded->approval) {
      goes_on = co_await run_approved(calls[i], more_after, *loaded->approval);
    } else if (waited_on) {
      goes_on = co_await finish_interaction(calls[i], more_after, *loaded->interaction);
    } else if (!retried_call.empty() && calls[i].tool_call_id == retried_call) {
      // Re-verified before dispatch as an approved call is (schema, target, the rules and host permissions
      // in force now; the tool's digest with the run's environment): a refusal still refuses it.
      std::optional<CallDecision> retried = calls_.decide(calls[i], /*approved=*/true);
      goes_on = co_await run_call(calls[i], more_after, std::move(retried), false);
    } else {
      goes_on = co_await run_call(calls[i], more_after, std::nullopt, false);
    }
    if (!goes_on) co_return false;
  }
  if (calls.empty() && turn_.run.state != RunState::kStreamingModel) {
    // Nothing was left to answer (the results committed before a restart): the run goes on to the model.
    Result<Events> moved = journal_.back_to_model();
    if (!turn_.publish_committed(std::move(moved))) co_return false;
  }
  co_return true;
}

asio::awaitable<bool> DurableWait::run_approved(PlannedCall call, bool more_after, ApprovalRecord approval) {
  CallDecision d;
  if (!approval.decision || !approval.decision->accepts()) {
    std::string refusal = "the user declined the call";
    if (approval.decision && approval.decision->reason && !approval.decision->reason->empty()) {
      refusal += ": " + *approval.decision->reason;
    }
    d.refusal = refusal + ". Do not repeat it; ask the user or choose another way.";
  } else {
    // Re-verified before dispatch (spec §6.1): the same tool, the same target, and a gatekeeper that still
    // does not refuse it under the rules and host permissions in force now.
    d = calls_.decide(call, /*approved=*/true);
    const json approved_tool = approval.request.value("tool", json::object());
    const ToolTarget approved_target = target_from_json(approval.request.value("target", json::object()));
    if (d.runs() && d.tool->descriptor->digest != approved_tool.value("digest", "")) {
      d.refusal = "the tool " + call.name +
                  " changed since it was approved; it was not run. Call it again to "
                  "ask for a new approval.";
    } else if (d.runs() && !(d.target == approved_target)) {
      d.refusal = "the call's target changed since it was approved (approved: " +
                  shown_json(target_json(approved_target)) + ", now: " + shown_json(target_json(d.target)) +
                  "); it was not run. Inspect the page again before deciding what to do.";
    } else if (d.ask) {
      d.ask = false;  // the person's approval is what the verdict asked for
      d.interaction = d.tool->implementation->plan_interaction(call.arguments);
    }
  }
  co_return co_await run_call(std::move(call), more_after, std::move(d), false);
}

asio::awaitable<bool> DurableWait::finish_interaction(PlannedCall call, bool more_after,
                                                      InteractionRecord interaction) {
  const RunState after = more_after ? RunState::kExecutingTool : RunState::kStreamingModel;
  const RegisteredTool* tool = turn_.tools->find(call.name);
  const json prompt = interaction.request.value("prompt", json::object());
  const size_t max_chars = turn_.engine.options().max_tool_output_chars;
  InteractionRepository& interactions = turn_.engine.interactions();
  Result<Events> settled = journal_.append_result(
      call,
      [&](Transaction& tx) -> Result<json> {
        // Claimed once, in the transaction that appends the result: exactly one continuation writes it.
        InteractionRecord claimed = KEEL_TRY(interactions.claim(tx, interaction.id));
        const json response = claimed.response.value_or(json::object());
        ToolResult result;
        if (tool != nullptr) {
          result = tool->implementation->complete_interaction(prompt, response);
        } else {
          result = text_result("The answer to " + call.name + " was: " + shown_json(response));
        }
        BoundedToolOutput bounded = bound_tool_output(std::move(result), max_chars);
        auto body = KEEL_TRY(encode_tool_result(ToolResultBody{.tool_call_id = call.tool_call_id,
                                                               .content = bounded.content,
                                                               .is_error = false,
                                                               .details = bounded.details}));
        body["interactionId"] = interaction.id;
        return body;
      },
      {}, after, /*announce_run=*/true);
  co_return turn_.publish_committed(std::move(settled));
}

}  // namespace keel
