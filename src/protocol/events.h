// protocol/events.h — the payloads of the events the engine emits (docs/protocol.md, *Events*), one builder
// per payload shape.
//
// Each event type's payload is built here and nowhere else, so a shape has one owner: adding a field, or
// checking what a client receives, is one place to read. The builders are pure (no I/O, no clock) and take
// typed values; what they return is published as it is (EventBus::Draft has the same two fields). The
// JSON Schema in docs/protocol/ describes the same shapes; events_test.cc holds them to it.
//
// command.ack and command.rejected, the answer to an op, are built here too; the JSON-RPC layer turns them
// into a response (docs/protocol.md, *Responses*).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "keel/error.h"
#include "keel/protocol.h"
#include "keel/provider.h"
#include "store/records.h"

namespace keel::events {

// An event ready to publish: its type and payload.
struct Event {
  std::string type;
  nlohmann::json payload;
};

// {code, message}: how an Error travels in an event.
nlohmann::json error_payload(const Error& error);
// {inputTokens, outputTokens, cachedInputTokens, reasoningTokens, totalTokens[, costUsd]}.
nlohmann::json usage_payload(const TokenUsage& usage, std::optional<double> cost_usd = std::nullopt);

// run.updated {runId, state, revision}: the run as just committed.
Event run_updated(const RunRecord& run);
// run.updated {runId, state, revision, persisted: false, error}: a change of `run` could not be written;
// `run` is its last persisted state, which it keeps.
Event run_unpersisted(const RunRecord& run, const Error& error);

// turn.start {turnId, runId, resumed[, recovered: true]}.
Event turn_start(const RunRecord& run, bool resumed, bool recovered = false);

// How a turn ended, as turn.complete reports it.
struct TurnEnd {
  std::string turn_id{};
  std::string run_id{};
  std::string stop_reason{};  // end | max_tokens | content_filter | interrupted | budget_pause | error
  std::optional<std::string> provider_stop_reason{};
  bool may_be_incomplete = false;
  std::optional<Error> error{};
  bool unpersisted = false;  // not even the end could be written: persisted: false
  std::optional<TokenUsage> usage{};
  std::optional<int64_t> budget_tokens{};
};
// turn.complete {turnId, runId, stopReason, providerStopReason?, mayBeIncomplete?, error?, persisted?,
// usage?, budgetTokens?}.
Event turn_complete(const TurnEnd& end);

// item.start {itemId, kind: assistant_message, turnId}: the model's reply begins to stream.
Event reply_started(const std::string& item_id, const std::string& turn_id);
// item.start {itemId, kind: tool_result, turnId, toolCallId, name}: a call's tool begins to run.
Event tool_started(const std::string& item_id, const std::string& turn_id, const std::string& tool_call_id,
                   const std::string& name);
// item.delta {itemId, text} / {itemId, reasoning} / {itemId, toolProgress: {text, details}}.
Event text_delta(const std::string& item_id, const std::string& text);
Event reasoning_delta(const std::string& item_id, const std::string& text);
Event tool_progress(const std::string& item_id, const std::string& text, const nlohmann::json& details);
// item.complete {itemId, kind, turnId, node: {id, kind, body}}: a node committed.
Event item_complete(const NodeRecord& node, const std::string& turn_id);

// token.usage {turnId, runId, usage, total}: one request's usage and the run's total so far, each with
// costUsd when the model's price is known.
struct StepUsage {
  TokenUsage step{};
  TokenUsage total{};
  std::optional<double> step_cost_usd{};
  std::optional<double> total_cost_usd{};
};
Event token_usage(const RunRecord& run, const StepUsage& usage);

// thread.updated {threadId, title, revision}: the thread's title changed.
Event thread_titled(const ThreadRecord& thread);
// thread.updated after a store command (thread.create, delete, fork, selectBranch): the command's ACK
// result, {threadId, revision, ...} as store/commands.h lists it; after a turn.submit that made a branch,
// {threadId, leafNodeId, revision}.
Event thread_changed(const nlohmann::json& command_result);

// queue.list's and queue.updated's items: [{itemId, position, input, revision}].
nlohmann::json queue_items_payload(const std::vector<QueuedInput>& items);
// queue.updated {threadId, items, revision}: the thread's queue as just committed.
Event queue_updated(const ThreadRecord& thread, const std::vector<QueuedInput>& items);
// queue.updated {threadId, held: true, error}: the next queued input could not be started; the queue
// stays as it was.
Event queue_held(const std::string& thread_id, const Error& error);

// approval.request: the approval's stored request (engine/wait_records.h) with {approvalId, threadId, runId,
// turnId}; `resent: true` when re-sent to a client that connected later (initialize).
Event approval_request(const ApprovalRecord& approval, const RunRecord& run, bool resent = false);
// approval.resolved {approvalId, runId, decision, nodeId}: the ACK result of the approval.response that
// settled it; `node_id` is its approval_decision node.
Event approval_resolved(const std::string& approval_id, const std::string& run_id,
                        const std::string& decision, const std::string& node_id);
// interaction.request {interactionId, threadId, runId, turnId, kind, toolCallId, toolName, request
// [, dueAtMs][, resent: true]}: `request` is the tool's prompt.
Event interaction_request(const InteractionRecord& interaction, const RunRecord& run, bool resent = false);
// interaction.resolved {interactionId, runId[, fired: true]}: answered, or (fired) a timer fell due.
Event interaction_resolved(const std::string& interaction_id, const std::string& run_id, bool fired = false);

// run.uncertain {runId, turnId, toolCallId, name, offers: [retry, mark_done, fail]}: `run` paused because
// the never-retry call `tool_call_id` was running when keel stopped, so its outcome is unknown.
Event run_uncertain(const RunRecord& run, const std::string& tool_call_id, const std::string& name);

// policy.updated: the change a policy.* op committed, as the gatekeeper returned it (keel/gatekeeper.h).
Event policy_updated(const nlohmann::json& change);
// takeover.updated {threadId, target, holder[, details]}: who uses `target` for the thread now, "person"
// (takeover.start) or "agent" (takeover.end); details are the target's own answer (keel/takeover.h), when
// it gave an object.
Event takeover_updated(const std::string& thread_id, const std::string& target, bool person_holds,
                       const nlohmann::json& details);

// command.ack {clientId, submissionId, method, result, replayed}: `op` was accepted (its decision is
// persisted); `replayed`: answered from the submission's receipt.
Event command_ack(const Op& op, nlohmann::json result, bool replayed);
// command.rejected {clientId, submissionId, method, error}: `op` was refused.
Event command_rejected(const Op& op, const Error& error);

}  // namespace keel::events
