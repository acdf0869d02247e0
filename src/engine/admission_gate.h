// engine/admission_gate.h — whether a thread's running turn takes steers, shared by the turn's runner (on
// the thread's strand) and steer admissions (on the admissions thread).
//
// Spec §3 asks that admitting a steer and deciding that the turn is over be linearized, without making a
// steer wait for the turn's own writes. The gate does it with one mutex: an admission checks the turn and
// takes a ticket in one step (try_admit); the runner stops admitting in one step (stop). A steer therefore
// either holds a ticket taken before the stop, and the runner waits for its answer (all_answered /
// answered) before it decides, or it is refused. Each answer wakes the runner through `reports`.
//
// An interrupt closes the gate for good at the moment it is decided (interrupt()), on the thread's strand:
// no steer is admitted after that, even when the runner, which only learns of the interrupt when it next
// runs, would have reopened it. A durable wait (hold()) does not close it: a steer sent while an approval
// or a question waits is admitted into the run's pending set and enters the first model request after the
// wait is settled (spec §3 refuses steers only on mismatch, interrupt or end).
//
// Thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "engine/async_inbox.h"
#include "store/records.h"
#include "util/assert.h"
#include "util/thread_annotations.h"

namespace keel {

class AdmissionGate {
 public:
  enum class Refusal { kNone, kOtherTurnRunning, kNoTurnRunning, kEnding, kInterrupted, kNotSteerable };

  // What try_admit() decided, and what the admission needs to know about the turn.
  struct Decision {
    Refusal refusal = Refusal::kNone;
    std::string running_turn_id;  // "" when no turn runs
    std::string run_id;
    TurnKind turn_kind = TurnKind::kUser;
    uint64_t generation = 0;  // which turn's ticket this is
  };

  // A turn starts: steers for `turn_id` are admitted from now on. Opening again for the turn that is open
  // changes nothing (the turn's ACK opens the gate before its runner starts, and the runner's start opens
  // it too): resetting it would orphan a ticket taken in between, whose steer would then never be waited
  // for.
  void open(std::string turn_id, std::string run_id, TurnKind turn_kind, Strand strand,
            std::shared_ptr<IoLifetime> lifetime) {
    MutexLock guard(mu_);
    if (turn_id_ && *turn_id_ == turn_id && run_id_ == run_id) return;
    turn_id_ = std::move(turn_id);
    run_id_ = std::move(run_id);
    turn_kind_ = turn_kind;
    steerable_ = true;
    interrupted_ = false;
    steers_admitted_ = true;  // a resumed or recovered run reads its stored pending set once
    started_ = finished_ = 0;
    ++generation_;
    reports_ = std::make_shared<AsyncInbox<uint64_t>>(std::move(strand), std::move(lifetime));
  }
  // The turn's coroutine has ended.
  void close() {
    MutexLock guard(mu_);
    turn_id_.reset();
    steerable_ = false;
    interrupted_ = false;
  }

  // ---- the admission side ----

  // Decides, atomically with stop(), whether a steer for `expected_turn_id` may enter; when it may, a
  // ticket is taken and answer() must follow.
  Decision try_admit(const std::string& expected_turn_id) {
    MutexLock guard(mu_);
    Decision d;
    d.generation = generation_;
    if (turn_id_) {
      d.running_turn_id = *turn_id_;
      d.run_id = run_id_;
      d.turn_kind = turn_kind_;
    }
    if (!turn_id_) {
      d.refusal = Refusal::kNoTurnRunning;
    } else if (*turn_id_ != expected_turn_id) {
      d.refusal = Refusal::kOtherTurnRunning;
    } else if (interrupted_) {
      d.refusal = Refusal::kInterrupted;
    } else if (!steerable_) {
      d.refusal = Refusal::kEnding;
    } else if (turn_kind_ != TurnKind::kUser) {
      d.refusal = Refusal::kNotSteerable;
    } else {
      ++started_;
    }
    return d;
  }
  // The ticket's transaction has ended; `admitted` when it committed a new steer. An answer for a turn
  // that is no longer the gate's (it ended without waiting, after a store failure) changes nothing.
  void answer(uint64_t generation, bool admitted) {
    std::shared_ptr<AsyncInbox<uint64_t>> reports;
    uint64_t finished = 0;
    {
      MutexLock guard(mu_);
      if (generation != generation_) return;
      finished = ++finished_;
      // Each answer() follows the try_admit() that took its ticket in the same generation.
      KEEL_ASSERT(finished_ <= started_);
      if (admitted) steers_admitted_ = true;
      reports = reports_;
    }
    if (reports) reports->push(finished);
  }

  // ---- the runner's side ----

  // The turn stops admitting: from now on a steer is refused with turn.ended. Returns the tickets taken
  // until now, which the runner waits for.
  uint64_t stop() {
    MutexLock guard(mu_);
    steerable_ = false;
    return started_;
  }
  // The turn waits durably for an approval or an interaction (spec §5). Steers are still admitted: they
  // stay in the run's pending set, and the continuation's first request takes them (its cutoff waits for
  // tickets taken meanwhile). Returns the tickets taken until now.
  uint64_t hold() const { return started(); }
  // The user interrupted the turn (on the thread's strand, when the interrupt is decided): from now on a
  // steer is refused with turn.ended, and reopen() does not admit again. Returns the tickets taken until
  // now; the runner's early end waits for them and materializes their steers.
  uint64_t interrupt() {
    MutexLock guard(mu_);
    interrupted_ = true;
    steerable_ = false;
    return started_;
  }
  // The turn goes on after all (steers came in while it was deciding, or its wait was answered): it admits
  // again, unless it was interrupted.
  void reopen() {
    MutexLock guard(mu_);
    if (turn_id_ && !interrupted_) steerable_ = true;
  }
  // Tickets taken until now.
  uint64_t started() const {
    MutexLock guard(mu_);
    return started_;
  }
  // Whether every ticket up to `ticket` has been answered.
  bool answered(uint64_t ticket) const {
    MutexLock guard(mu_);
    return finished_ >= ticket;
  }
  // Whether steers were admitted since the last take_admitted(); clears the flag.
  bool take_admitted() {
    MutexLock guard(mu_);
    return std::exchange(steers_admitted_, false);
  }
  bool admitted_since_cutoff() const {
    MutexLock guard(mu_);
    return steers_admitted_;
  }
  std::shared_ptr<AsyncInbox<uint64_t>> reports() const {
    MutexLock guard(mu_);
    return reports_;
  }
  bool steerable() const {
    MutexLock guard(mu_);
    return steerable_;
  }

 private:
  mutable Mutex mu_;
  std::optional<std::string> turn_id_ GUARDED_BY(mu_);
  std::string run_id_ GUARDED_BY(mu_);
  TurnKind turn_kind_ GUARDED_BY(mu_) = TurnKind::kUser;
  bool steerable_ GUARDED_BY(mu_) = false;
  bool interrupted_ GUARDED_BY(mu_) = false;  // interrupt(): nothing is admitted again until the next open()
  bool steers_admitted_ GUARDED_BY(mu_) = false;
  uint64_t started_ GUARDED_BY(mu_) = 0;
  uint64_t finished_ GUARDED_BY(mu_) = 0;
  uint64_t generation_ GUARDED_BY(mu_) = 0;
  std::shared_ptr<AsyncInbox<uint64_t>> reports_ GUARDED_BY(mu_);
};

}  // namespace keel
