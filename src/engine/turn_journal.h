// engine/turn_journal.h — the only code of a turn that appends nodes and moves its run.
//
// Each method is one write transaction (spec §2: a step's facts commit together or not at all). After the
// commit it updates the Turn (its run, the calls still unanswered, the actor's context following the new
// nodes) and returns the events those commits imply, in the order a client must see them; the caller
// publishes them. On an error nothing was committed and nothing of the Turn changed; the caller reports it
// (Turn::report_unpersisted) and unwinds. On the turn's strand only.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/turn.h"
#include "store/node_body.h"

namespace keel {

struct Ending;
using Events = std::vector<events::Event>;

class TurnJournal {
 public:
  // `turn` must outlive the journal (both belong to one TurnRunner).
  explicit TurnJournal(Turn& turn) : turn_(turn) {}

  // Spec §3's cutoff: the run's admitted, not yet materialized steers go onto the leaf as steered user
  // messages, in admission order, and are marked taken.
  Result<Events> take_steers();
  // Spec §1: the compaction node the next request starts from.
  Result<Events> append_compaction(const CompactionBody& body);

  // A model reply and what it moves: the assistant message, every call's stable tool_call node (and, with
  // tools off, its "not run" result), the run's usage, step cursor and next state.
  struct Reply {
    std::string assistant_id{};
    nlohmann::json body{};  // the encoded assistant message
    std::vector<PlannedCall> calls{};
    TokenUsage step_usage{};
    TokenUsage total{};
    std::string provider_stop_reason{};
    std::optional<PendingTool> dispatch{};     // the first call's dispatch record, when it needs one
    std::optional<std::string> stop_reason{};  // the reply ends the turn
    std::optional<Error> tools_refused{};      // it ends the turn failed (turn.tools_disabled)
    RunState next = RunState::kStreamingModel;
  };
  // Events: item.complete for each node, token.usage, run.updated.
  Result<Events> commit_reply(const Reply& reply);

  // The call is about to run and running it twice is not safe: its dispatch is durable first.
  Result<void> record_dispatch(const PlannedCall& call);
  // What a call's dispatch record in the run's pending tool holds.
  static PendingTool dispatch_record(const PlannedCall& call);

  // Builds the result's body inside the transaction (it may claim an interaction's answer there).
  using ResultBody = std::function<Result<nlohmann::json>(Transaction&)>;
  // The call's tool_result node and the run moved to `after` with its streak and without its pending
  // tool. The failure breaker's `notices` are held until the response's last result (`after` is not
  // executing_tool) and written after it: a user message between the results of one response's calls is
  // a history OpenAI Chat and Anthropic refuse. Events: item.complete for each node, then run.updated
  // when `announce_run`.
  Result<Events> append_result(const PlannedCall& call, const ResultBody& body,
                               const std::vector<std::string>& notices, RunState after, bool announce_run);

  // A durable wait (spec §5, §6.1): its approval or interaction record and the run waiting with `pending`
  // as its pending tool. Events: run.updated, then approval.request or interaction.request.
  struct Wait {
    std::string id;
    std::optional<ApprovalRecord> approval;  // built by the caller without id/run; set when it is one
    std::optional<InteractionRecord> interaction;
    PendingTool pending;
  };
  Result<Events> open_wait(Wait& wait);
  // A continuation with nothing left to answer: the run goes back to the model. Events: run.updated.
  Result<Events> back_to_model();

  // The terminal transaction of a turn that ends early (engine/turn_ending.h). Events: item.complete for
  // each node, run.updated.
  Result<Events> end(const Ending& ending);

 private:
  Result<void> materialize_steers(Transaction& tx, std::vector<NodeRecord>& out);
  // Results for every call whose tool_call committed without one, so every provider accepts the history.
  // `in_flight`: the call that was running (it may have partly run); the others never started.
  Result<void> answer_unanswered(Transaction& tx, std::vector<NodeRecord>& out, const std::string& why,
                                 const std::optional<std::string>& in_flight);
  Result<NodeRecord> append(Transaction& tx, std::string id, NodeKind kind, nlohmann::json body);
  // The tool_call node's body, with what the provider sent when it was replaced or unusable.
  static Result<nlohmann::json> tool_call_body(const PlannedCall& call, const std::string& assistant_node_id);
  Events item_events(const std::vector<NodeRecord>& nodes) const;

  Turn& turn_;
};

}  // namespace keel
