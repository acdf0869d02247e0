// engine/thread_actor.h — ThreadActor: one thread's serial execution and what the engine knows about the
// thread in memory: the turn it runs, the durable wait that holds it, whether it is stranded.
//
// Guarantees (the actor keeps them; nothing else writes its state):
//   - at most one turn at a time: begin_turn() only on an idle thread, finish() only after the turn let go;
//   - a held wait exists only inside a turn (HeldWait is part of ActiveTurn), so "is this thread waiting"
//     is one fact, read through activity() / held();
//   - the admission gate follows the turn: begin_turn() opens it for the turn's run, finish() closes it,
//     interrupt() closes it to steers for good in the same step that cancels the turn;
//   - a stranded thread stays stranded until the process ends (its run is left to recovery).
// A call its guarantees forbid (a second turn, a hold without a turn, finishing a held turn) is a bug in the
// engine: it stops the process naming the site (KEEL_BUG, util/assert.h).
//
// Thread-safety: every method is called on `strand` only, except gate(), whose AdmissionGate is
// thread-safe (steer admissions use it from the admissions thread), and the const identity members.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/admission_gate.h"
#include "engine/async_inbox.h"
#include "engine/io_lifetime.h"
#include "engine/thread_admission.h"
#include "keel/cancellation.h"
#include "keel/protocol.h"
#include "keel/scheduler.h"
#include "keel/tool_registry.h"
#include "store/records.h"
#include "store/session_context.h"

namespace keel {

// A durable wait that holds its thread (spec §5): the run waits for an approval or an interaction, no
// runner is alive, and until the wait is settled (or withdrawn by an interrupt) and its continuation ran,
// the thread accepts only what thread_accepts() lets through.
struct HeldWait {
  std::string run_id;
  WaitKind kind = WaitKind::kApproval;
  std::string id;                        // the approval's or the interaction's
  std::unique_ptr<ScheduledTask> timer;  // a timer interaction's, while armed
  // The registry generation the waiting run is bound to (spec §4): a person's answer is checked by, and the
  // continuation binds, the tool of this generation, never one looked up by name in the live registry.
  std::shared_ptr<const ToolRegistryGeneration> tools;
};

// The turn a thread is running, as its actor knows it.
struct ActiveTurn {
  std::string turn_id;
  std::string run_id;
  TurnKind turn_kind = TurnKind::kUser;
  CancellationSource cancel;
  // turn.interrupt ops waiting for their answer: it goes out when the turn's runner has ended and its
  // terminal state is committed (an ACK means persisted, spec §5.1), so a process killed right after the
  // ACK finds the run interrupted and does not take it up again.
  std::vector<Op> interrupts;
  // Set while the turn waits durably and no runner is alive.
  std::optional<HeldWait> held;
};

class ThreadActor {
 public:
  // `lifetime`: the engine's io_context lifetime, handed to the gate's report inbox.
  ThreadActor(std::string id, Strand s, std::shared_ptr<IoLifetime> lifetime)
      : thread_id(std::move(id)), strand(std::move(s)), lifetime_(std::move(lifetime)) {}
  ThreadActor(const ThreadActor&) = delete;
  ThreadActor& operator=(const ThreadActor&) = delete;

  const std::string thread_id;
  const Strand strand;

  // ---- what the thread does ----
  // What admission rules look at (engine/thread_admission.h).
  ThreadActivity activity() const;
  // The turn the thread runs or holds; null when idle.
  const ActiveTurn* turn() const { return active_ ? &*active_ : nullptr; }
  // The durable wait holding the thread; null unless it waits.
  const HeldWait* held() const { return active_ && active_->held ? &*active_->held : nullptr; }
  // Whether the held wait is the one with this approval or interaction id.
  bool holds(std::string_view wait_id) const { return held() != nullptr && held()->id == wait_id; }
  const std::optional<Error>& stranded() const { return stranded_; }

  // ---- the turn's life ----
  // Opens the admission gate for `run` without starting the turn yet (a turn's ACK goes out before its
  // runner starts, and a steer sent on that ACK must find the turn). Opening it again for the same run
  // changes nothing.
  void open_gate(const RunRecord& run);
  // The thread takes up `run` as its turn (a new turn, a resumed, recovered or restored one) and opens the
  // gate for it. The thread must be idle. Returns the turn's cancellation.
  CancellationToken begin_turn(const RunRecord& run);
  // Cancels the turn, if one runs (shutdown, a store failure); steers are still refused only by the
  // runner's own stop.
  void cancel_turn(const std::string& why);
  // turn.interrupt's decision, in one step: no steer enters the turn from now on, and the turn is
  // cancelled. The turn must be active.
  void interrupt(const std::string& why);
  // An interrupt answered once the runner ended (EngineCore::Impl::answer_interrupts).
  void defer_interrupt(Op op);
  std::vector<Op> take_interrupts();
  bool has_interrupts() const { return active_ && !active_->interrupts.empty(); }
  // The turn waits durably: `wait` holds the thread until release(). The turn must be active and not
  // already held.
  void hold(HeldWait wait);
  // Keeps the armed timer of the held wait (dropped, and so disarmed, with the wait).
  void set_wait_timer(std::unique_ptr<ScheduledTask> timer);
  // The held wait is settled or withdrawn: the thread lets it go (its timer with it) and the caller
  // continues the run. Empty when nothing was held.
  std::optional<HeldWait> release();
  // The turn's runner ended and nothing holds the thread: the gate closes and the thread is idle.
  void finish();
  // A turn could not record its end, not even as failed (the store refuses writes): its run keeps its last
  // persisted state, which recovery continues after a restart. Until then the thread refuses new work with
  // `why` (turn.unpersisted), so nothing is built on top of that run.
  void mark_stranded(Error why) { stranded_ = std::move(why); }

  // ---- what the turn uses ----
  // The thread's message history as the next model request sees it (store/session_context.h).
  SessionContextBuilder& context() { return context_; }
  // Shared with steer admissions, which do not run on the strand. Thread-safe.
  AdmissionGate& gate() { return gate_; }

 private:
  std::shared_ptr<IoLifetime> lifetime_;
  SessionContextBuilder context_;
  std::optional<ActiveTurn> active_;
  std::optional<Error> stranded_;
  AdmissionGate gate_;
};

}  // namespace keel
