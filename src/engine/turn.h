// engine/turn.h — the state one running turn shares among its collaborators (engine/turn_runner.h).
//
// A Turn is the runner's memory of its run: the run as last committed, the tools it binds, the calls of the
// current response still without a result, and the events waiting to go out. It belongs to one TurnRunner
// and is touched only on its thread's strand, by the runner and the collaborators it owns (ModelStep,
// CallExecutor, DurableWait, TurnJournal, TurnEnding), which all live exactly as long as the runner.
//
// Events wait in the outbox until the coroutine next suspends or the turn ends, then go out together: the
// events of one step's commits cost a subscriber one wake-up, not one each. Nothing else runs on the
// strand while the coroutine runs, so no other event of this thread can come between.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/engine_impl.h"
#include "protocol/events.h"

namespace keel {

// The failure breaker (spec §1): a reminder after 3 failed calls in a row, tools off after 5.
inline constexpr int kFailuresBeforeReminder = 3;
inline constexpr int kFailuresBeforeToolsOff = 5;
inline constexpr char kReminderText[] =
    "The last 3 tool calls failed. Step back: re-read what the tools returned and change your approach "
    "instead of repeating the same call.";
inline constexpr char kToolsOffText[] =
    "5 tool calls in a row failed, so tools are now disabled for this turn. Give your final reply to the "
    "user with what you know, and say what did not work.";
// What one reply and one call's arguments may take, so that their nodes fit the store's 4 MiB node limit
// with room for the rest of the body. A larger reply ends the turn with provider.reply_too_large; larger
// arguments get the result tool.arguments_too_large and the call does not run.
inline constexpr size_t kMaxReplyBytes = 3 * 1024 * 1024;
inline constexpr size_t kMaxToolArgumentsBytes = 2 * 1024 * 1024;
// How much of a refused reply or of unusable arguments is kept for the record.
inline constexpr size_t kKeptPrefixBytes = 64 * 1024;

// One tool call of a response, after its id was made thread-unique.
struct PlannedCall {
  std::string call_node_id;    // the stable tool_call node, written with the assistant message
  std::string result_node_id;  // reserved for its tool_result
  std::string tool_call_id;
  std::string original_id;
  std::string name;
  std::string arguments_text;
  nlohmann::json arguments = nlohmann::json::object();
  std::optional<Error> argument_error;  // not JSON / not an object
};

// JSON as text for a message: bytes that are not UTF-8 (a file name from the disk) are shown as U+FFFD
// instead of throwing.
std::string shown_json(const nlohmann::json& value);
NewNode make_node(std::string id, const std::string& thread_id, const std::string& run_id, NodeKind kind,
                  nlohmann::json body);
TokenUsage usage_from_json(const nlohmann::json& j);
nlohmann::json usage_json(const TokenUsage& u);

struct Turn {
  Turn(EngineCore::Impl& engine_in, std::shared_ptr<ThreadActor> actor_in, RunRecord run_in,
       CancellationToken cancel_in, bool continuing_in,
       std::shared_ptr<const ToolRegistryGeneration> generation_in)
      : engine(engine_in),
        actor(std::move(actor_in)),
        run(std::move(run_in)),
        cancel(std::move(cancel_in)),
        continuing(continuing_in),
        generation(std::move(generation_in)) {}

  const std::string& thread_id() const { return actor->thread_id; }
  std::string new_id() { return engine.deps().ids->next_id(); }
  AdmissionGate& gate() { return actor->gate(); }

  void publish(events::Event event) { outbox.push_back({std::move(event.type), std::move(event.payload)}); }
  void publish(std::vector<events::Event> events) {
    for (events::Event& event : events) publish(std::move(event));
  }
  // Publishes what the outbox holds: before every real suspension, and at the end of the turn.
  void flush_events() {
    if (!outbox.empty()) engine.publish_all(thread_id(), std::exchange(outbox, {}));
  }
  // Before the coroutine waits on an inbox: the events go out, unless input is already on its way (a tool
  // that finished at once, a provider that sent a burst), in which case the coroutine does not really block
  // and the events go out with the next batch — one subscriber wake-up instead of several, with no added
  // delay. A bounded outbox still goes out, so a long burst cannot hold events back.
  void flush_before_waiting(bool input_queued);

  // Spec §3's barrier: waits until the steer admissions holding tickets up to `ticket` have answered
  // (later ones do not delay it); costs nothing when they all have. The ticket says what the turn is
  // doing: gate().stop() (the turn ends), gate().hold() (it waits durably), gate().started() (a cutoff).
  boost::asio::awaitable<void> wait_for_admissions(uint64_t ticket);

  // The engine's fail point `name` (keel/fail_points.h), passed on the turn's strand. Armed to hold, it
  // holds the turn, not the strand: the events so far go out, the hold blocks a tool worker, and the
  // coroutine waits for it to be released, so the thread's ops (a steer, an enqueue, an interrupt's answer)
  // are handled while the turn holds. Armed to crash, it crashes; an armed error is ignored, as at the
  // engine's crash points.
  boost::asio::awaitable<void> pass_fail_point(std::string name);

  // Feeds nodes this runner just committed to the actor's context.
  void follow(const NodeRecord& node) {
    if (context_current && !actor->context().extend(node)) context_current = false;
  }
  void follow(const std::vector<NodeRecord>& nodes) {
    for (const NodeRecord& node : nodes) follow(node);
  }
  // The call has its result: no longer in flight, no longer unanswered.
  void answered(const std::string& tool_call_id);
  // The failure breaker: updates the streak for one result and returns the notices it raised.
  std::vector<std::string> count_result(bool failed, bool refused);
  // A write of the turn failed: the turn stops admitting and unwinds (each caller returns "ended"); the
  // runner then ends the turn with this error (the first one).
  void report_unpersisted(const Error& error);
  // A journal commit's outcome (turn_journal.h): its events go to the outbox, or its failure is reported as
  // above. Returns whether it committed.
  bool publish_committed(Result<std::vector<events::Event>> committed);

  EngineCore::Impl& engine;
  std::shared_ptr<ThreadActor> actor;
  RunRecord run;  // as this runner last committed it
  CancellationToken cancel;
  // The run waited durably (an approval or an interaction) and its wait was settled or withdrawn.
  const bool continuing = false;
  // The one registry generation the run's environment is verified against and its tools are bound from.
  std::shared_ptr<const ToolRegistryGeneration> generation;
  std::shared_ptr<const ToolRegistryGeneration> tools;
  bool tools_off = false;
  // What the run executes with: its environment snapshot's model settings and tools (the engine's default
  // model for a run that has none), and the provider of the catalogue's model its snapshot names.
  ModelSettings model;
  Provider* provider = nullptr;
  std::optional<std::vector<std::string>> snapshot_tools;
  std::vector<PlannedCall> unanswered;  // calls of the current response whose result is not written yet
  // The call whose tool is running or whose result is not written yet (a failed write answers it as
  // "may have partly run").
  std::optional<std::string> in_flight_call;
  // The breaker's notices raised by results of the current response, written after its last result; kept
  // in a durable wait's pending tool (PendingTool::Wait::held_notices) so the continuation writes them.
  std::vector<std::string> held_notices;
  // While a turn runs only its runner appends to the thread (ops that move the leaf are refused), so the
  // actor's context follows the runner's own commits without reading them back; a node that does not
  // continue the cached path clears this and the next request builds from the store.
  bool context_current = false;
  // The first write of the turn the store refused; the runner ends the turn with it.
  std::optional<Error> failed_write;
  std::vector<EventBus::Draft> outbox;
};

}  // namespace keel
