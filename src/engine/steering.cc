// The three input paths of spec §3 as the thread's actor serves them: turn.steer (and turn.input, which
// steers, enqueues or starts a turn as the thread's state allows), turn.enqueue with the queue that starts
// the next turn when one ends normally, and queue.start for a queue held after an interrupted, paused or
// failed turn. The queue ops run on the thread's strand, as the turn's runner does. A steer does not: it
// is admitted on the admissions thread, and the actor's AdmissionGate (admission_gate.h) linearizes it
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

void EngineCore::Impl::begin_admission(const std::shared_ptr<ThreadActor>& actor, SteerRequest request) {
  auto shared = std::make_shared<SteerRequest>(std::move(request));
  boost::asio::post(admissions_, [this, actor, shared] {
    const SteerRequest& r = *shared;
    const std::string& thread_id = actor->thread_id;
    // Atomic with the runner's decision that the turn is over (AdmissionGate): a ticket, or a refusal.
    const AdmissionGate::Decision decision = actor->gate->try_admit(r.expected_turn_id);
    using Refusal = AdmissionGate::Refusal;
    auto outcome = run_command(store(), *deps_.clock, r.context, [&](Transaction& tx) -> Result<json> {
      switch (decision.refusal) {
        case Refusal::kOtherTurnRunning:
          return fail(codes::kSteerTurnMismatch, "turn " + r.expected_turn_id + " is not the running turn (" +
                                                     decision.running_turn_id + "); nothing was admitted");
        case Refusal::kNoTurnRunning:
          for (const RunRecord& run : KEEL_TRY(runs_.list_by_thread(tx, thread_id))) {
            if (run.turn_id == r.expected_turn_id) {
              return fail(codes::kTurnEnded, "turn " + r.expected_turn_id + " has ended (" +
                                                 std::string(to_string(run.state)) +
                                                 "); enqueue the input to run it as the next turn");
            }
          }
          return fail(codes::kSteerTurnMismatch, "thread " + thread_id + " has no turn " +
                                                     r.expected_turn_id + "; nothing was admitted");
        case Refusal::kEnding:
          return fail(codes::kTurnEnded, "turn " + r.expected_turn_id +
                                             " is ending; enqueue the input to run it as the next turn");
        case Refusal::kNotSteerable:
          return fail(codes::kRunNotSteerable, "a " + decision.turn_kind + " turn cannot be steered");
        case Refusal::kInterrupted:
          return fail(codes::kTurnEnded, "turn " + r.expected_turn_id +
                                             " was interrupted; enqueue the input to run it as the next turn");
        case Refusal::kNone:
          break;
      }
      // Attachment refs point at nodes or runs that exist; they are kept with the steer and its message.
      for (const json& ref : r.attachments) {
        const bool is_node = ref.contains("nodeId");
        const std::string id = ref[is_node ? "nodeId" : "runId"].get<std::string>();
        std::optional<Error> missing;
        if (is_node) {
          if (auto node = threads_.get_node(tx, id); !node) missing = node.error();
        } else {
          if (auto run = runs_.get(tx, id); !run) missing = run.error();
        }
        if (missing) {
          if (missing->code() != codes::kNodeNotFound && missing->code() != codes::kRunNotFound)
            return fail(*missing);
          return fail(codes::kAttachmentNotFound,
                      std::string("attachment ") + (is_node ? "node " : "run ") + id + " does not exist");
        }
      }
      SteerRecord steer = KEEL_TRY(runs_.admit_steer(tx, decision.run_id, deps_.ids->next_id(),
                                                     content_to_json(r.content), r.attachments));
      json result = {{"steerId", steer.id},
                     {"turnId", r.expected_turn_id},
                     {"runId", steer.run_id},
                     {"admissionSeq", steer.admission_seq}};
      for (auto& [key, value] : r.result_extra.items()) result[key] = value;
      return result;
    });
    // The answer goes out only now, after the commit, and before the ticket is answered: the runner, which
    // waits for the ticket, publishes turn.complete only after it.
    if (!outcome) {
      reject(r.op, thread_id, outcome.error());
    } else if (!outcome->outcome.accepted) {
      reject(r.op, thread_id, *outcome->outcome.rejection);
    } else {
      ack(r.op, thread_id, outcome->outcome.result, outcome->replayed);
    }
    if (decision.refusal == Refusal::kNone) {
      actor->gate->answer(decision.generation, outcome && outcome->outcome.accepted && !outcome->replayed);
    }
  });
}

namespace {

// attachments: [{nodeId} | {runId}], each ref naming exactly one.
Result<json> parse_attachments(const json& params) {
  if (!params.contains("attachments") || params["attachments"].is_null()) return json::array();
  const json& refs = params["attachments"];
  if (!refs.is_array())
    return fail(codes::kInvalidArgument, "'attachments' must be an array of {nodeId} or {runId}");
  for (const json& ref : refs) {
    const bool node = ref.is_object() && ref.contains("nodeId") && ref["nodeId"].is_string();
    const bool run = ref.is_object() && ref.contains("runId") && ref["runId"].is_string();
    if (node == run || ref.size() != 1) {
      return fail(codes::kInvalidArgument,
                  "each attachment is {\"nodeId\": ...} or {\"runId\": ...}, got " + ref.dump());
    }
  }
  return refs;
}

}  // namespace

Result<EngineCore::Impl::SteerRequest> EngineCore::Impl::steer_request(const Op& op,
                                                                       std::string expected_turn_id,
                                                                       json result_extra) const {
  std::vector<ContentBlock> content = KEEL_TRY(turn_input(op.params.value("input", json())));
  json attachments = KEEL_TRY(parse_attachments(op.params));
  CommandTransactionContext context =
      KEEL_TRY(make_command_context(op.client_id, op.submission_id, op.method, op.params));
  return SteerRequest{op,
                      std::move(context),
                      std::move(expected_turn_id),
                      std::move(content),
                      std::move(attachments),
                      std::move(result_extra)};
}

void EngineCore::Impl::steer_turn(const std::shared_ptr<ThreadActor>& actor, const Op& op) {
  const std::string& thread_id = actor->thread_id;
  const json expected = op.params.value("expectedTurnId", json());
  if (!expected.is_string() || expected.get_ref<const std::string&>().empty()) {
    return reject(op, thread_id,
                  Error(codes::kInvalidArgument, "'expectedTurnId' must name the turn to steer"));
  }
  auto request = steer_request(op, expected.get<std::string>(), json::object());
  if (!request) return reject(op, thread_id, request.error());
  begin_admission(actor, std::move(*request));
}

void EngineCore::Impl::enqueue_input(const std::shared_ptr<ThreadActor>& actor, const Op& op,
                                     json result_extra) {
  const std::string& thread_id = actor->thread_id;
  auto content = turn_input(op.params.value("input", json()));
  if (!content) return reject(op, thread_id, content.error());
  auto context = make_command_context(op.client_id, op.submission_id, op.method, op.params);
  if (!context) return reject(op, thread_id, context.error());
  auto outcome = run_command(store(), *deps_.clock, *context, [&](Transaction& tx) -> Result<json> {
    json result = KEEL_TRY(
        commands_.apply(tx, KEEL_TRY(protocol::decode_store_command(protocol::OpKind::kTurnEnqueue, op.params))));
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
  if (!actor->active && queue_runs_on(thread_id)) advance_queue(actor);
}

bool EngineCore::Impl::queue_runs_on(const std::string& thread_id) {
  auto tx = store().begin(TxMode::kRead);
  if (!tx) return false;
  auto latest = runs_.latest_for_thread(**tx, thread_id);
  (void)(*tx)->commit();
  return latest && (!*latest || (*latest)->state == RunState::kCompleted);
}

void EngineCore::Impl::route_input(const std::shared_ptr<ThreadActor>& actor, const Op& op) {
  const std::string& thread_id = actor->thread_id;
  if (!actor->active) return submit_turn(actor, op, {{"action", "started"}});
  const bool steerable = actor->gate->steerable();
  if (!steerable || actor->active->turn_kind != "user") {
    const std::string reason = steerable ? "this turn cannot be steered; the input runs next"
                                         : "the turn is ending; the input runs next";
    return enqueue_input(actor, op, {{"action", "enqueued"}, {"reason", reason}});
  }
  auto request = steer_request(op, actor->active->turn_id, {{"action", "steered"}});
  if (!request) return reject(op, thread_id, request.error());
  begin_admission(actor, std::move(*request));
}

void EngineCore::Impl::start_queued(const std::shared_ptr<ThreadActor>& actor, const Op& op) {
  const std::string& thread_id = actor->thread_id;
  if (actor->active) {
    return reject(op, thread_id,
                  Error(codes::kTurnBusy, "a turn is running; the queue continues when it ends"));
  }
  auto context = make_command_context(op.client_id, op.submission_id, op.method, op.params);
  if (!context) return reject(op, thread_id, context.error());
  std::optional<AdmittedTurn> admitted;
  auto outcome = run_command(store(), *deps_.clock, *context, [&](Transaction& tx) -> Result<json> {
    auto front = KEEL_TRY(queue_.pop_front(tx, thread_id));
    if (!front) return fail(codes::kQueueEmpty, "thread " + thread_id + " has no queued input to start");
    auto content = KEEL_TRY(turn_input(front->input));
    admitted = KEEL_TRY(admit_turn(tx, thread_id, content, options_.default_budget_tokens));
    return json{{"turnId", admitted->run.turn_id}, {"runId", admitted->run.id}, {"itemId", front->id}};
  });
  if (!outcome) return reject(op, thread_id, outcome.error());
  if (!outcome->outcome.accepted) return reject(op, thread_id, *outcome->outcome.rejection);
  if (!outcome->replayed && admitted) open_gate(actor, admitted->run);
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
    auto content = KEEL_TRY(turn_input(front->input));
    admitted = KEEL_TRY(admit_turn(tx, thread_id, content, options_.default_budget_tokens));
    return {};
  });
  if (!started) {
    // The queue stays as it was; the user can start it (queue.start) or change it.
    publish("queue.updated", thread_id,
            {{"threadId", thread_id}, {"held", true}, {"error", error_json(started.error())}});
    return;
  }
  if (!admitted) return;
  publish_queue(thread_id);
  announce_turn(actor, *admitted);
}

}  // namespace keel
