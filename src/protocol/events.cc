#include "protocol/events.h"

namespace keel::events {

using nlohmann::json;

json error_payload(const Error& error) { return {{"code", error.code()}, {"message", error.message()}}; }

json usage_payload(const TokenUsage& usage, std::optional<double> cost_usd) {
  json payload = {{"inputTokens", usage.input_tokens},
                  {"outputTokens", usage.output_tokens},
                  {"cachedInputTokens", usage.cached_input_tokens},
                  {"reasoningTokens", usage.reasoning_tokens},
                  {"totalTokens", usage.total()}};
  if (cost_usd) payload["costUsd"] = *cost_usd;
  return payload;
}

Event run_updated(const RunRecord& run) {
  return {"run.updated", {{"runId", run.id}, {"state", to_string(run.state)}, {"revision", run.revision}}};
}

Event run_unpersisted(const RunRecord& run, const Error& error) {
  Event event = run_updated(run);
  event.payload["persisted"] = false;
  event.payload["error"] = error_payload(error);
  return event;
}

Event turn_start(const RunRecord& run, bool resumed, bool recovered) {
  json payload = {{"turnId", run.turn_id}, {"runId", run.id}, {"resumed", resumed}};
  if (recovered) payload["recovered"] = true;
  return {"turn.start", std::move(payload)};
}

Event turn_complete(const TurnEnd& end) {
  json payload = {{"turnId", end.turn_id}, {"runId", end.run_id}, {"stopReason", end.stop_reason}};
  if (end.provider_stop_reason) payload["providerStopReason"] = *end.provider_stop_reason;
  if (end.may_be_incomplete) payload["mayBeIncomplete"] = true;
  if (end.error) payload["error"] = error_payload(*end.error);
  if (end.unpersisted) payload["persisted"] = false;
  if (end.usage) payload["usage"] = usage_payload(*end.usage);
  if (end.budget_tokens) payload["budgetTokens"] = *end.budget_tokens;
  return {"turn.complete", std::move(payload)};
}

Event reply_started(const std::string& item_id, const std::string& turn_id) {
  return {"item.start", {{"itemId", item_id}, {"kind", "assistant_message"}, {"turnId", turn_id}}};
}

Event tool_started(const std::string& item_id, const std::string& turn_id, const std::string& tool_call_id,
                   const std::string& name) {
  return {"item.start",
          {{"itemId", item_id},
           {"kind", "tool_result"},
           {"turnId", turn_id},
           {"toolCallId", tool_call_id},
           {"name", name}}};
}

Event text_delta(const std::string& item_id, const std::string& text) {
  return {"item.delta", {{"itemId", item_id}, {"text", text}}};
}

Event reasoning_delta(const std::string& item_id, const std::string& text) {
  return {"item.delta", {{"itemId", item_id}, {"reasoning", text}}};
}

Event tool_progress(const std::string& item_id, const std::string& text, const json& details) {
  return {"item.delta", {{"itemId", item_id}, {"toolProgress", {{"text", text}, {"details", details}}}}};
}

Event item_complete(const NodeRecord& node, const std::string& turn_id) {
  const std::string kind(to_string(node.kind));
  return {"item.complete",
          {{"itemId", node.id},
           {"kind", kind},
           {"turnId", turn_id},
           {"node", {{"id", node.id}, {"kind", kind}, {"body", node.body}}}}};
}

Event token_usage(const RunRecord& run, const StepUsage& usage) {
  return {"token.usage",
          {{"turnId", run.turn_id},
           {"runId", run.id},
           {"usage", usage_payload(usage.step, usage.step_cost_usd)},
           {"total", usage_payload(usage.total, usage.total_cost_usd)}}};
}

Event thread_titled(const ThreadRecord& thread) {
  return {"thread.updated",
          {{"threadId", thread.id}, {"title", thread.title}, {"revision", thread.revision}}};
}

Event thread_changed(const json& command_result) { return {"thread.updated", command_result}; }

json queue_items_payload(const std::vector<QueuedInput>& items) {
  json list = json::array();
  for (const QueuedInput& item : items) {
    list.push_back({{"itemId", item.id},
                    {"position", item.position},
                    {"input", item.input},
                    {"revision", item.revision}});
  }
  return list;
}

Event queue_updated(const ThreadRecord& thread, const std::vector<QueuedInput>& items) {
  return {"queue.updated",
          {{"threadId", thread.id}, {"items", queue_items_payload(items)}, {"revision", thread.revision}}};
}

Event queue_held(const std::string& thread_id, const Error& error) {
  return {"queue.updated", {{"threadId", thread_id}, {"held", true}, {"error", error_payload(error)}}};
}

Event approval_request(const ApprovalRecord& approval, const RunRecord& run, bool resent) {
  json payload = approval.request;
  payload["approvalId"] = approval.id;
  payload["threadId"] = run.thread_id;
  payload["runId"] = run.id;
  payload["turnId"] = run.turn_id;
  if (resent) payload["resent"] = true;
  return {"approval.request", std::move(payload)};
}

Event approval_resolved(const std::string& approval_id, const std::string& run_id,
                        const std::string& decision, const std::string& node_id) {
  return {"approval.resolved",
          {{"approvalId", approval_id}, {"runId", run_id}, {"decision", decision}, {"nodeId", node_id}}};
}

Event interaction_request(const InteractionRecord& interaction, const RunRecord& run, bool resent) {
  json payload = {{"interactionId", interaction.id},
                  {"threadId", run.thread_id},
                  {"runId", run.id},
                  {"turnId", run.turn_id},
                  {"kind", to_string(interaction.kind)},
                  {"toolCallId", interaction.request.value("toolCallId", "")},
                  {"toolName", interaction.request.value("toolName", "")},
                  {"request", interaction.request.value("prompt", json::object())}};
  if (interaction.due_at) payload["dueAtMs"] = *interaction.due_at;
  if (resent) payload["resent"] = true;
  return {"interaction.request", std::move(payload)};
}

Event interaction_resolved(const std::string& interaction_id, const std::string& run_id, bool fired) {
  json payload = {{"interactionId", interaction_id}, {"runId", run_id}};
  if (fired) payload["fired"] = true;
  return {"interaction.resolved", std::move(payload)};
}

Event run_uncertain(const RunRecord& run, const std::string& tool_call_id, const std::string& name) {
  return {"run.uncertain",
          {{"runId", run.id},
           {"turnId", run.turn_id},
           {"toolCallId", tool_call_id},
           {"name", name},
           {"offers", {"retry", "mark_done", "fail"}}}};
}

Event policy_updated(const json& change) { return {"policy.updated", change}; }

Event takeover_updated(const std::string& thread_id, const std::string& target, bool person_holds,
                       const json& details) {
  json payload = {{"threadId", thread_id}, {"target", target}, {"holder", person_holds ? "person" : "agent"}};
  if (details.is_object()) payload["details"] = details;
  return {"takeover.updated", std::move(payload)};
}

Event command_ack(const Op& op, json result, bool replayed) {
  return {"command.ack",
          {{"clientId", op.client_id},
           {"submissionId", op.submission_id},
           {"method", op.method},
           {"result", std::move(result)},
           {"replayed", replayed}}};
}

Event command_rejected(const Op& op, const Error& error) {
  return {"command.rejected",
          {{"clientId", op.client_id},
           {"submissionId", op.submission_id},
           {"method", op.method},
           {"error", error_payload(error)}}};
}

}  // namespace keel::events
