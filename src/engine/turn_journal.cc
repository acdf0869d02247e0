#include "engine/turn_journal.h"

#include <utility>

#include "engine/tool_output.h"
#include "engine/turn_ending.h"
#include "engine/wait_records.h"
#include "util/utf8.h"

namespace keel {

using nlohmann::json;

namespace {
const char kInterruptNotice[] =
    "The user interrupted the previous turn. Tools that were running may have partly run; check the current "
    "state before repeating an action.";
}  // namespace

Result<NodeRecord> TurnJournal::append(Transaction& tx, std::string id, NodeKind kind, json body) {
  return turn_.engine.threads().append(
      tx, make_node(std::move(id), turn_.thread_id(), turn_.run.id, kind, std::move(body)));
}

Events TurnJournal::item_events(const std::vector<NodeRecord>& nodes) const {
  Events out;
  for (const NodeRecord& node : nodes) out.push_back(events::item_complete(node, turn_.run.turn_id));
  return out;
}

Result<Events> TurnJournal::take_steers() {
  auto taken = turn_.engine.write([&](Transaction& tx) -> Result<std::vector<NodeRecord>> {
    std::vector<NodeRecord> nodes;
    KEEL_TRY(materialize_steers(tx, nodes));
    return nodes;
  });
  if (!taken) return std::unexpected(taken.error());
  turn_.follow(*taken);
  return item_events(*taken);
}

Result<Events> TurnJournal::append_compaction(const CompactionBody& body) {
  auto written = turn_.engine.write([&](Transaction& tx) -> Result<NodeRecord> {
    auto encoded = KEEL_TRY(encode_compaction(body));
    return append(tx, turn_.new_id(), NodeKind::kCompaction, std::move(encoded));
  });
  if (!written) return std::unexpected(written.error());
  turn_.follow(*written);
  return item_events({*written});
}

Result<json> TurnJournal::tool_call_body(const PlannedCall& call, const std::string& assistant_node_id) {
  json body = KEEL_TRY(encode_tool_call(ToolCallBody{.tool_call_id = call.tool_call_id,
                                                     .name = call.name,
                                                     .arguments = call.arguments,
                                                     .assistant_node_id = assistant_node_id}));
  if (call.original_id != call.tool_call_id) body["providerToolCallId"] = call.original_id;
  if (call.argument_error) body["argumentsText"] = utf8_sanitized(call.arguments_text);
  return body;
}

Result<Events> TurnJournal::commit_reply(const Reply& reply) {
  struct Written {
    NodeRecord assistant;
    std::vector<NodeRecord> extra;
    RunRecord run;
  };
  turn_.engine.crash_point("model.response.before_commit");
  auto written = turn_.engine.write([&](Transaction& tx) -> Result<Written> {
    Written w;
    w.assistant = KEEL_TRY(append(tx, reply.assistant_id, NodeKind::kAssistantMessage, reply.body));
    // Every call's stable node commits with the message that made it; a call then only needs its result
    // (and, when repeating it is not safe, its dispatch) written.
    for (const PlannedCall& call : reply.calls) {
      w.extra.push_back(KEEL_TRY(append(tx, call.call_node_id, NodeKind::kToolCall,
                                        KEEL_TRY(tool_call_body(call, reply.assistant_id)))));
      if (turn_.tools_off) {
        // Tools are off: each call still gets a result, so every provider accepts the history.
        auto result_body = KEEL_TRY(encode_tool_result(ToolResultBody{
            .tool_call_id = call.tool_call_id,
            .content = text_result("Not run: tools are disabled for the rest of this turn.").content,
            .is_error = true}));
        w.extra.push_back(
            KEEL_TRY(append(tx, call.result_node_id, NodeKind::kToolResult, std::move(result_body))));
      }
    }
    RunUpdate update;
    update.usage = usage_json(reply.total);
    // The run's cost so far is kept with its usage, so a client that reads the thread later shows it.
    if (turn_.model.price) (*update.usage)["costUsd"] = providers::cost_of(reply.total, *turn_.model.price);
    update.step_cursor = turn_.run.step_cursor + 1;
    update.provider_stop_reason = reply.provider_stop_reason;
    if (reply.dispatch) update.pending_tool = *reply.dispatch;
    if (reply.stop_reason) update.stop_reason = *reply.stop_reason;
    if (reply.tools_refused) {
      update.stop_reason = "error";
      update.error = reply.tools_refused->to_string();
    }
    w.run = KEEL_TRY(turn_.engine.runs().transition_from(tx, turn_.run, reply.next, update));
    return w;
  });
  if (!written) return std::unexpected(written.error());
  turn_.run = written->run;
  if (reply.next == RunState::kExecutingTool) turn_.unanswered = reply.calls;
  turn_.follow(written->assistant);
  turn_.follow(written->extra);
  Events out = item_events({written->assistant});
  for (events::Event& event : item_events(written->extra)) out.push_back(std::move(event));
  events::StepUsage usage{.step = reply.step_usage, .total = reply.total};
  if (turn_.model.price) {
    usage.step_cost_usd = providers::cost_of(reply.step_usage, *turn_.model.price);
    usage.total_cost_usd = providers::cost_of(reply.total, *turn_.model.price);
  }
  out.push_back(events::token_usage(turn_.run, usage));
  out.push_back(events::run_updated(turn_.run));
  return out;
}

PendingTool TurnJournal::dispatch_record(const PlannedCall& call) {
  return keel::dispatch_record(call.tool_call_id, call.name, call.call_node_id);
}

Result<void> TurnJournal::record_dispatch(const PlannedCall& call) {
  auto dispatched = turn_.engine.write([&](Transaction& tx) -> Result<RunRecord> {
    RunUpdate update;
    update.pending_tool = dispatch_record(call);
    return turn_.engine.runs().transition_from(tx, turn_.run, RunState::kExecutingTool, update);
  });
  if (!dispatched) return std::unexpected(dispatched.error());
  turn_.run = *dispatched;
  return {};
}

Result<Events> TurnJournal::append_result(const PlannedCall& call, const ResultBody& body,
                                          const std::vector<std::string>& notices, RunState after,
                                          bool announce_run) {
  std::vector<std::string> held = turn_.held_notices;
  auto written =
      turn_.engine.write([&](Transaction& tx) -> Result<std::pair<std::vector<NodeRecord>, RunRecord>> {
        std::vector<NodeRecord> nodes;
        nodes.push_back(KEEL_TRY(append(tx, call.result_node_id, NodeKind::kToolResult, KEEL_TRY(body(tx)))));
        held.insert(held.end(), notices.begin(), notices.end());
        if (after != RunState::kExecutingTool) {
          for (const std::string& text : std::exchange(held, {})) {
            auto notice = KEEL_TRY(encode_notice(NoticeBody{.text = text, .for_model = true}));
            nodes.push_back(KEEL_TRY(append(tx, turn_.new_id(), NodeKind::kNotice, std::move(notice))));
          }
        }
        RunUpdate update;
        update.clear_pending_tool = turn_.run.pending_tool.has_value();
        update.failure_streak = turn_.run.failure_streak;
        RunRecord run = KEEL_TRY(turn_.engine.runs().transition_from(tx, turn_.run, after, update));
        return std::make_pair(std::move(nodes), std::move(run));
      });
  // Held even when the write failed: the turn then ends, so nothing held matters any more.
  turn_.held_notices = std::move(held);
  if (!written) return std::unexpected(written.error());
  turn_.run = std::move(written->second);
  turn_.answered(call.tool_call_id);
  turn_.follow(written->first);
  Events out = item_events(written->first);
  if (announce_run) out.push_back(events::run_updated(turn_.run));
  return out;
}

Result<Events> TurnJournal::open_wait(Wait& wait) {
  const bool approval = wait.approval.has_value();
  struct Waiting {
    RunRecord run;
    std::optional<ApprovalRecord> approval;
    std::optional<InteractionRecord> interaction;
  };
  auto written = turn_.engine.write([&](Transaction& tx) -> Result<Waiting> {
    Waiting w;
    if (approval) {
      w.approval = KEEL_TRY(turn_.engine.interactions().create_approval(tx, *wait.approval));
    } else {
      w.interaction = KEEL_TRY(turn_.engine.interactions().create_interaction(tx, *wait.interaction));
    }
    RunUpdate update;
    update.pending_tool = wait.pending;
    w.run = KEEL_TRY(turn_.engine.runs().transition_from(
        tx, turn_.run, approval ? RunState::kWaitingApproval : RunState::kWaitingInteraction, update));
    return w;
  });
  if (!written) return std::unexpected(written.error());
  turn_.run = written->run;
  wait.approval = std::move(written->approval);
  wait.interaction = std::move(written->interaction);
  Events out{events::run_updated(turn_.run)};
  if (approval) {
    out.push_back(events::approval_request(*wait.approval, turn_.run));
  } else {
    out.push_back(events::interaction_request(*wait.interaction, turn_.run));
  }
  return out;
}

Result<Events> TurnJournal::back_to_model() {
  auto moved = turn_.engine.write([&](Transaction& tx) -> Result<RunRecord> {
    RunUpdate update;
    update.clear_pending_tool = turn_.run.pending_tool.has_value();
    return turn_.engine.runs().transition_from(tx, turn_.run, RunState::kStreamingModel, update);
  });
  if (!moved) return std::unexpected(moved.error());
  turn_.run = *moved;
  return Events{events::run_updated(turn_.run)};
}

Result<Events> TurnJournal::end(const Ending& ending) {
  auto written =
      turn_.engine.write([&](Transaction& tx) -> Result<std::pair<std::vector<NodeRecord>, RunRecord>> {
        std::vector<NodeRecord> nodes;
        RunUpdate update;
        RunState state = RunState::kFailed;
        switch (ending.kind) {
          case Ending::Kind::kBudgetPause:
            // Steers admitted before the pause go into the history now, so a new turn started instead of a
            // resume still shows them.
            KEEL_TRY(materialize_steers(tx, nodes));
            update.stop_reason = "budget_pause";
            state = RunState::kBudgetPaused;
            break;
          case Ending::Kind::kFailed:
            if (ending.reply) nodes.push_back(KEEL_TRY(turn_.engine.threads().append(tx, *ending.reply)));
            KEEL_TRY(answer_unanswered(tx, nodes, "The turn failed (" + ending.error->code() + ")",
                                       turn_.in_flight_call));
            KEEL_TRY(materialize_steers(tx, nodes));  // ACKed steers stay in the history (spec §3, early end)
            update.stop_reason = "error";
            update.error = ending.error->to_string();
            update.clear_pending_tool = turn_.run.pending_tool.has_value();
            state = RunState::kFailed;
            break;
          case Ending::Kind::kInterrupted: {
            if (!ending.partial_text.empty()) {
              // What the model had said before the interrupt stays in the history, marked as cut short.
              ContentBlock said;
              said.text = utf8_sanitized(ending.partial_text);
              said.text.resize(utf8_prefix_length(said.text, kMaxReplyBytes));
              auto body = KEEL_TRY(
                  encode_assistant_message(AssistantMessageBody{.content = {std::move(said)},
                                                                .stop_reason = AssistantStopReason::kEnd,
                                                                .provider_stop_reason = "interrupted"}));
              body["interrupted"] = true;
              nodes.push_back(
                  KEEL_TRY(append(tx, turn_.new_id(), NodeKind::kAssistantMessage, std::move(body))));
            }
            KEEL_TRY(answer_unanswered(tx, nodes, "Interrupted by the user", ending.in_flight_call));
            KEEL_TRY(materialize_steers(tx, nodes));  // at a safe leaf: after every call's result
            auto notice = KEEL_TRY(encode_notice(NoticeBody{.text = kInterruptNotice, .for_model = true}));
            nodes.push_back(KEEL_TRY(append(tx, turn_.new_id(), NodeKind::kNotice, std::move(notice))));
            update.stop_reason = "interrupted";
            update.clear_pending_tool = turn_.run.pending_tool.has_value();
            state = RunState::kInterrupted;
            break;
          }
        }
        RunRecord run = KEEL_TRY(turn_.engine.runs().transition_from(tx, turn_.run, state, update));
        return std::make_pair(std::move(nodes), std::move(run));
      });
  if (!written) return std::unexpected(written.error());
  turn_.run = written->second;
  turn_.unanswered.clear();
  turn_.follow(written->first);
  Events out = item_events(written->first);
  out.push_back(events::run_updated(turn_.run));
  return out;
}

Result<void> TurnJournal::materialize_steers(Transaction& tx, std::vector<NodeRecord>& out) {
  const RunRecord run = KEEL_TRY(turn_.engine.runs().get(tx, turn_.run.id));
  for (const SteerRecord& steer :
       KEEL_TRY(turn_.engine.runs().pending_steers_up_to(tx, turn_.run.id, run.next_admission_seq - 1))) {
    std::vector<ContentBlock> content = KEEL_TRY(content_from_json(steer.input));
    json body = KEEL_TRY(encode_user_message(
        UserMessageBody{.content = std::move(content), .steered = true, .steer_id = steer.id}));
    if (!steer.attachments.empty()) body["attachments"] = steer.attachments;
    NodeRecord node = KEEL_TRY(append(tx, turn_.new_id(), NodeKind::kUserMessage, std::move(body)));
    KEEL_TRY(turn_.engine.runs().mark_materialized(tx, steer.id, node.id));
    out.push_back(std::move(node));
  }
  return {};
}

Result<void> TurnJournal::answer_unanswered(Transaction& tx, std::vector<NodeRecord>& out,
                                            const std::string& why,
                                            const std::optional<std::string>& in_flight) {
  for (const PlannedCall& call : turn_.unanswered) {
    const bool running = in_flight && *in_flight == call.tool_call_id;
    const std::string text = running ? why + " before the tool finished; it may have partly run."
                                     : why + " before the tool ran; it was not run.";
    auto body = KEEL_TRY(encode_tool_result(ToolResultBody{
        .tool_call_id = call.tool_call_id, .content = text_result(text).content, .is_error = true}));
    body["interrupted"] = true;
    out.push_back(KEEL_TRY(append(tx, call.result_node_id, NodeKind::kToolResult, std::move(body))));
  }
  return {};
}

}  // namespace keel
