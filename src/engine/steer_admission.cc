#include "engine/steer_admission.h"

#include <boost/asio/post.hpp>

#include "engine/engine_errors.h"
#include "store/node_body.h"

namespace keel {

using nlohmann::json;

Result<SteerRequest> SteerAdmission::request(const Op& op, std::string expected_turn_id, const json& input,
                                             json attachments, json result_extra) const {
  std::vector<ContentBlock> content = KEEL_TRY(c_.turns.input(input));
  CommandTransactionContext context =
      KEEL_TRY(make_command_context(op.client_id, op.submission_id, op.method, op.params));
  return SteerRequest{op,
                      std::move(context),
                      std::move(expected_turn_id),
                      std::move(content),
                      std::move(attachments),
                      std::move(result_extra)};
}

void SteerAdmission::begin(std::shared_ptr<ThreadActor> actor, SteerRequest request) {
  auto shared = std::make_shared<SteerRequest>(std::move(request));
  boost::asio::post(c_.admissions, [this, actor, shared] {
    const SteerRequest& r = *shared;
    const std::string& thread_id = actor->thread_id;
    // A hold here blocks only steer admissions: the runner waits for tickets, and this steer has none yet.
    if (c_.fail_points != nullptr) (void)c_.fail_points->hit("steer.admission.before_decide");
    // Atomic with the runner's decision that the turn is over (AdmissionGate): a ticket, or a refusal.
    const AdmissionGate::Decision decision = actor->gate().try_admit(r.expected_turn_id);
    using Refusal = AdmissionGate::Refusal;
    auto outcome = run_command(c_.store, c_.clock, r.context, [&](Transaction& tx) -> Result<json> {
      switch (decision.refusal) {
        case Refusal::kOtherTurnRunning:
          return fail(codes::kSteerTurnMismatch, "turn " + r.expected_turn_id + " is not the running turn (" +
                                                     decision.running_turn_id + "); nothing was admitted");
        case Refusal::kNoTurnRunning:
          for (const RunRecord& run : KEEL_TRY(c_.runs.list_by_thread(tx, thread_id))) {
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
          return fail(codes::kRunNotSteerable,
                      "a " + std::string(to_string(decision.turn_kind)) + " turn cannot be steered");
        case Refusal::kInterrupted:
          return fail(codes::kTurnEnded,
                      "turn " + r.expected_turn_id +
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
          if (auto node = c_.threads.get_node(tx, id); !node) missing = node.error();
        } else {
          if (auto run = c_.runs.get(tx, id); !run) missing = run.error();
        }
        if (missing) {
          if (missing->code() != codes::kNodeNotFound && missing->code() != codes::kRunNotFound)
            return fail(*missing);
          return fail(codes::kAttachmentNotFound,
                      std::string("attachment ") + (is_node ? "node " : "run ") + id + " does not exist");
        }
      }
      SteerRecord steer = KEEL_TRY(c_.runs.admit_steer(tx, decision.run_id, c_.ids.next_id(),
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
      c_.replies.reject(r.op, thread_id, outcome.error());
    } else if (!outcome->outcome.accepted) {
      c_.replies.reject(r.op, thread_id, *outcome->outcome.rejection);
    } else {
      c_.replies.ack(r.op, thread_id, outcome->outcome.result, outcome->replayed);
    }
    if (decision.refusal == Refusal::kNone) {
      actor->gate().answer(decision.generation, outcome && outcome->outcome.accepted && !outcome->replayed);
    }
  });
}

}  // namespace keel
