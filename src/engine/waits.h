// engine/waits.h — durable waits (spec §5, §5.1, §6.1): the responses that settle approvals and
// interactions, timer interactions, the continuation of a held run, waits restored after a restart, and the
// requests sent again to a client that connects.
//
// A wait holds its thread through its ThreadActor (engine/thread_actor.h: hold / release); a response is one
// command transaction that settles the record, bumps the run's revision and records the receipt; the same
// payload again is ACKed without a change, a different one is refused with invalid_command; then the held
// run continues through the TurnLauncher.
//
// Everything that touches an actor runs on its strand; resend_waits on the control strand. The context's
// members must outlive Waits; a timer callback posts to the actor's strand and uses Waits, so the engine
// drops held waits (and their timers) before Waits goes (EngineCore::Impl's destructor).
#pragma once

#include <memory>
#include <string>

#include "engine/engine_replies.h"
#include "engine/store_writer.h"
#include "engine/thread_actor.h"
#include "keel/clock.h"
#include "keel/ids.h"
#include "keel/scheduler.h"
#include "keel/tool_registry.h"
#include "policy/gatekeeper.h"
#include "protocol/op_params.h"
#include "store/interaction_repository.h"
#include "store/run_repository.h"
#include "store/thread_repository.h"

namespace keel {

// How a service hands a run back to the engine to run on (EngineCore::Impl).
class TurnLauncher {
 public:
  // A runner continues `run` on the actor's strand after a durable wait, bound to `generation`.
  virtual void continue_turn(std::shared_ptr<ThreadActor> actor, RunRecord run, CancellationToken cancel,
                             std::shared_ptr<const ToolRegistryGeneration> generation) = 0;
  // The engine is shutting down or stopped on a store failure: nothing continues any more.
  virtual bool stopping() const = 0;

 protected:
  ~TurnLauncher() = default;
};

struct WaitsContext {
  StoreWriter& writer;
  const Clock& clock;
  IdSource& ids;
  Gatekeeper& gatekeeper;
  ToolRegistry& tools;
  Scheduler& scheduler;
  ThreadRepository& threads;
  RunRepository& runs;
  InteractionRepository& interactions;
  EngineReplies& replies;
  TurnLauncher& launcher;
};

class Waits {
 public:
  explicit Waits(WaitsContext context) : c_(context) {}

  // approval.response / interaction.response on the actor's thread, with the op's decoded params: malformed
  // ones are refused inside the command, so the refusal is recorded with the submission's receipt.
  void respond_approval(const std::shared_ptr<ThreadActor>& actor, const Op& op,
                        Result<protocol::ApprovalResponseParams> params);
  void respond_interaction(const std::shared_ptr<ThreadActor>& actor, const Op& op,
                           Result<protocol::InteractionResponseParams> params);
  // Arms the timer of a waiting timer interaction of the actor's held wait; when it fires, the interaction
  // is answered and the run continues.
  void arm_timer(const std::shared_ptr<ThreadActor>& actor, const InteractionRecord& timer);
  // The held wait is settled or withdrawn: a runner continues the run.
  void continue_held(const std::shared_ptr<ThreadActor>& actor);
  // A run waiting for an approval or an interaction holds its thread again after a restart; a wait that
  // was settled before the process died continues at once; timers are re-armed.
  void restore_wait(const std::shared_ptr<ThreadActor>& actor, const RunRecord& run);
  // Sends the requests of every open wait again (initialize{subscribe}: a client that connects after a
  // restart sees what is asked of it).
  void resend_waits();

 private:
  void fire_timer(const std::shared_ptr<ThreadActor>& actor, const std::string& interaction_id);
  WaitsContext c_;
};

}  // namespace keel
