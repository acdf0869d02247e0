#include "engine/thread_actor.h"

#include <utility>

#include "util/assert.h"

// Each check below is an invariant of the engine, not a condition input can reach: the engine calls these
// only in the state that allows them (admission rules, engine/thread_admission.h, decide which op may start,
// interrupt or continue a turn; the runner holds and finishes its own turn), on this actor's strand. A broken
// one is a bug, so it stops the process (util/assert.h).

namespace keel {

ThreadActivity ThreadActor::activity() const {
  ThreadActivity activity;
  activity.stranded = stranded_;
  if (const HeldWait* wait = held()) {
    activity.state = ThreadActivity::State::kWaiting;
    activity.wait_kind = wait->kind;
    activity.wait_id = wait->id;
  } else if (active_) {
    activity.state = ThreadActivity::State::kRunning;
  }
  return activity;
}

void ThreadActor::open_gate(const RunRecord& run) {
  gate_.open(run.turn_id, run.id, run.turn_kind, strand, lifetime_);
}

CancellationToken ThreadActor::begin_turn(const RunRecord& run) {
  if (active_) KEEL_BUG("ThreadActor: begin_turn on a thread that has a turn");
  active_.emplace();
  active_->turn_id = run.turn_id;
  active_->run_id = run.id;
  active_->turn_kind = run.turn_kind;
  open_gate(run);
  return active_->cancel.token();
}

void ThreadActor::cancel_turn(const std::string& why) {
  if (active_) active_->cancel.cancel(why);
}

void ThreadActor::interrupt(const std::string& why) {
  if (!active_) KEEL_BUG("ThreadActor: interrupt without a turn");
  (void)gate_.interrupt();
  active_->cancel.cancel(why);
}

void ThreadActor::defer_interrupt(Op op) {
  if (!active_) KEEL_BUG("ThreadActor: an interrupt deferred without a turn");
  active_->interrupts.push_back(std::move(op));
}

std::vector<Op> ThreadActor::take_interrupts() {
  if (!active_) return {};
  return std::exchange(active_->interrupts, {});
}

void ThreadActor::hold(HeldWait wait) {
  if (!active_) KEEL_BUG("ThreadActor: hold without a turn");
  if (active_->held) KEEL_BUG("ThreadActor: hold while a wait already holds the thread");
  active_->held = std::move(wait);
}

void ThreadActor::set_wait_timer(std::unique_ptr<ScheduledTask> timer) {
  if (held() == nullptr) KEEL_BUG("ThreadActor: a wait timer without a held wait");
  active_->held->timer = std::move(timer);
}

std::optional<HeldWait> ThreadActor::release() {
  if (!active_ || !active_->held) return std::nullopt;
  std::optional<HeldWait> released = std::move(active_->held);
  active_->held.reset();
  return released;
}

void ThreadActor::finish() {
  if (held() != nullptr) KEEL_BUG("ThreadActor: finish while a wait holds the thread");
  gate_.close();
  active_.reset();
}

}  // namespace keel
