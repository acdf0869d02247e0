// The three input paths of spec §3 as the thread's actor serves them: turn.steer (and turn.input, which
// steers, enqueues or starts a turn as the thread's state allows), turn.enqueue with the queue that starts
// the next turn when one ends normally, and queue.start for a queue held after an interrupted, paused or
// failed turn. The queue ops run on the thread's strand, as the turn's runner does. A steer does not: it
// is admitted on the admissions thread (steer_admission.h), where the actor's AdmissionGate linearizes it
// with the runner's decision that the turn is over, so a steer is either in the turn or refused.
//
// Each op is one command transaction (receipts.h): a duplicate submission replays its answer, whichever
// path the thread's state would take now.
#include "engine/engine_errors.h"
#include "engine/engine_impl.h"
#include "store/node_body.h"

namespace keel {

using nlohmann::json;

namespace {

void merge_into(json& result, const json& extra) {
  for (auto& [key, value] : extra.items()) result[key] = value;
}

}  // namespace

void EngineCore::Impl::steer_turn(const std::shared_ptr<ThreadActor>& actor, const Op& op,
                                  protocol::TurnSteerParams params) {
  const std::string& thread_id = actor->thread_id;
  auto request = steer_admission_.request(op, std::move(params.expected_turn_id), params.input,
                                          std::move(params.attachments), json::object());
  if (!request) return reject(op, thread_id, request.error());
  steer_admission_.begin(actor, std::move(*request));
}

void EngineCore::Impl::enqueue_input(const std::shared_ptr<ThreadActor>& actor, const Op& op,
                                     const json& input, json result_extra) {
  const std::string& thread_id = actor->thread_id;
  auto content = turn_admission_.input(input);
  if (!content) return reject(op, thread_id, content.error());
  auto context = make_command_context(op.client_id, op.submission_id, op.method, op.params);
  if (!context) return reject(op, thread_id, context.error());
  auto outcome = run_command(store(), *deps_.clock, *context, [&](Transaction& tx) -> Result<json> {
    json result = KEEL_TRY(commands_.apply(tx, protocol::TurnEnqueueParams{thread_id, input}));
    merge_into(result, result_extra);
    return result;
  });
  if (!outcome) return reject(op, thread_id, outcome.error());
  if (!outcome->outcome.accepted) return reject(op, thread_id, *outcome->outcome.rejection);
  ack(op, thread_id, outcome->outcome.result, outcome->replayed);
  if (outcome->replayed) return;
  publish_queue(thread_id);
  // Enqueued just after a turn ended normally (or on a thread that never ran one): the queue is not held,
  // so the input runs now rather than waiting for a turn that will not come.
  if (!actor->turn() && queue_runs_on(thread_id)) advance_queue(actor);
}

bool EngineCore::Impl::queue_runs_on(const std::string& thread_id) {
  auto tx = store().begin(TxMode::kRead);
  if (!tx) return false;
  auto latest = runs_.latest_for_thread(**tx, thread_id);
  (void)(*tx)->commit();  // a read: its commit only ends the snapshot, what was read stands
  return latest && (!*latest || (*latest)->state == RunState::kCompleted);
}

void EngineCore::Impl::route_input(const std::shared_ptr<ThreadActor>& actor, const Op& op,
                                   protocol::TurnInputParams params) {
  const std::string& thread_id = actor->thread_id;
  const ActiveTurn* turn = actor->turn();
  if (!turn) {
    protocol::TurnSubmitParams submit{std::move(params.input), params.budget_tokens, std::nullopt};
    return submit_turn(actor, op, std::move(submit), {{"action", "started"}});
  }
  const bool steerable = actor->gate().steerable();
  if (!steerable || turn->turn_kind != TurnKind::kUser) {
    const std::string reason = steerable ? "this turn cannot be steered; the input runs next"
                                         : "the turn is ending; the input runs next";
    return enqueue_input(actor, op, params.input, {{"action", "enqueued"}, {"reason", reason}});
  }
  auto request = steer_admission_.request(op, turn->turn_id, params.input, std::move(params.attachments),
                                          {{"action", "steered"}});
  if (!request) return reject(op, thread_id, request.error());
  steer_admission_.begin(actor, std::move(*request));
}

void EngineCore::Impl::start_queued(const std::shared_ptr<ThreadActor>& actor, const Op& op) {
  const std::string& thread_id = actor->thread_id;
  if (actor->turn()) {
    return reject(op, thread_id,
                  Error(codes::kTurnBusy, "a turn is running; the queue continues when it ends"));
  }
  auto context = make_command_context(op.client_id, op.submission_id, op.method, op.params);
  if (!context) return reject(op, thread_id, context.error());
  std::optional<AdmittedTurn> admitted;
  auto outcome = run_command(store(), *deps_.clock, *context, [&](Transaction& tx) -> Result<json> {
    auto front = KEEL_TRY(queue_.pop_front(tx, thread_id));
    if (!front) return fail(codes::kQueueEmpty, "thread " + thread_id + " has no queued input to start");
    auto content = KEEL_TRY(turn_admission_.input(front->input));
    admitted = KEEL_TRY(turn_admission_.admit(tx, thread_id, content, options_.default_budget_tokens));
    return json{{"turnId", admitted->run.turn_id}, {"runId", admitted->run.id}, {"itemId", front->id}};
  });
  if (!outcome) return reject(op, thread_id, outcome.error());
  if (!outcome->outcome.accepted) return reject(op, thread_id, *outcome->outcome.rejection);
  if (!outcome->replayed && admitted) actor->open_gate(admitted->run);
  ack(op, thread_id, outcome->outcome.result, outcome->replayed);
  if (outcome->replayed || !admitted) return;
  publish_queue(thread_id);
  announce_turn(actor, *admitted);
}

void EngineCore::Impl::advance_queue(const std::shared_ptr<ThreadActor>& actor) {
  const std::string& thread_id = actor->thread_id;
  std::optional<AdmittedTurn> admitted;
  auto started = write([&](Transaction& tx) -> Result<void> {
    auto front = KEEL_TRY(queue_.pop_front(tx, thread_id));
    if (!front) return {};
    auto content = KEEL_TRY(turn_admission_.input(front->input));
    admitted = KEEL_TRY(turn_admission_.admit(tx, thread_id, content, options_.default_budget_tokens));
    return {};
  });
  if (!started) {
    // The queue stays as it was; the user can start it (queue.start) or change it.
    publish_event(thread_id, events::queue_held(thread_id, started.error()));
    return;
  }
  if (!admitted) return;
  publish_queue(thread_id);
  announce_turn(actor, *admitted);
}

}  // namespace keel
