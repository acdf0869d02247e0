// engine/steer_admission.h — admitting a steer into a running turn (spec §3): turn.steer, and turn.input
// when it steers.
//
// A steer does not wait for the thread's strand: its transaction runs on the engine's admissions thread,
// where it commits alongside the turn's own writes (the store's group commit can make both durable with one
// sync). The actor's AdmissionGate (engine/admission_gate.h) decides, atomically with the runner's decision
// that the turn is over, whether the steer enters; when it does, the runner waits for the ticket's answer
// before its cutoff or its end. The op's answer goes out after the commit and before the ticket is answered,
// so the runner publishes turn.complete only after it.
//
// Any thread. The context's members must outlive the SteerAdmission, and the admissions pool must be joined
// before it is destroyed.
#pragma once

#include <boost/asio/thread_pool.hpp>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/engine_replies.h"
#include "engine/thread_actor.h"
#include "engine/turn_admission.h"
#include "keel/clock.h"
#include "keel/fail_points.h"
#include "keel/ids.h"
#include "keel/store.h"
#include "store/receipts.h"
#include "store/run_repository.h"
#include "store/thread_repository.h"

namespace keel {

// What a steer's admission needs: the store and the repositories its transaction reads and writes, ids,
// how to answer, the thread its transactions run on, and how a turn's input is read.
struct SteerAdmissionContext {
  Store& store;
  const Clock& clock;
  IdSource& ids;
  ThreadRepository& threads;
  RunRepository& runs;
  EngineReplies& replies;
  boost::asio::thread_pool& admissions;
  const TurnAdmission& turns;
  // The engine's fail points (EngineDeps), or null: `steer.admission.before_decide` is passed on the
  // admissions thread before the gate decides, where a test's hold keeps a steer from being decided.
  FailPoints* fail_points = nullptr;
};

// A steer read from its op: its input, attachments and command context.
struct SteerRequest {
  Op op;
  CommandTransactionContext context;
  std::string expected_turn_id;
  std::vector<ContentBlock> content;
  nlohmann::json attachments;
  nlohmann::json result_extra;  // merged into the recorded ACK result (turn.input adds its action)
};

class SteerAdmission {
 public:
  explicit SteerAdmission(SteerAdmissionContext context) : c_(context) {}

  // The steer `op` asks for with `input` and `attachments` (its decoded params: protocol/op_params.h), aimed
  // at `expected_turn_id`. Errors: input.invalid, input.image_unsupported, and the command context's errors.
  Result<SteerRequest> request(const Op& op, std::string expected_turn_id, const nlohmann::json& input,
                               nlohmann::json attachments, nlohmann::json result_extra) const;

  // Decides and commits the steer on the admissions thread, then answers it. Refusals: steer.turn_mismatch,
  // turn.ended, run.not_steerable, attachment.not_found, and store errors.
  void begin(std::shared_ptr<ThreadActor> actor, SteerRequest request);

 private:
  SteerAdmissionContext c_;
};

}  // namespace keel
