// protocol/events.h — the payloads of the events the engine emits (docs/protocol.md, *Events*), one builder
// per payload shape.
//
// Each event type's payload is built here and nowhere else, so a shape has one owner: adding a field, or
// checking what a client receives, is one place to read. The builders are pure (no I/O, no clock) and take
// typed values; what they return is published as it is (EventBus::Draft has the same two fields). The
// JSON Schema in docs/protocol/ describes the same shapes; events_test.cc holds them to it.
//
// approval.request and interaction.request are built from their stored records by engine/wait_records.h
// (the same payload is re-sent after a restart); command.ack / command.rejected by the engine's op
// boundary.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "keel/error.h"
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

}  // namespace keel::events
