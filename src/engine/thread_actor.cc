#include "engine/thread_actor.h"

#include <stdexcept>

namespace keel {

namespace {

// A broken invariant of the actor is a bug in the engine, answered at the op boundary (EngineCore::Impl::
// guarded) or by the turn's completion handler; never an expected failure.
void require(bool holds, const char* what) {
  if (!holds) throw std::logic_error(std::string("ThreadActor: ") + what);
}

}  // namespace

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
  require(!active_, "begin_turn on a thread that has a turn");
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
  require(active_.has_value(), "interrupt without a turn");
  (void)gate_.interrupt();
  active_->cancel.cancel(why);
}

void ThreadActor::defer_interrupt(Op op) {
  require(active_.has_value(), "an interrupt deferred without a turn");
  active_->interrupts.push_back(std::move(op));
}

std::vector<Op> ThreadActor::take_interrupts() {
  if (!active_) return {};
  return std::exchange(active_->interrupts, {});
}

void ThreadActor::hold(HeldWait wait) {
  require(active_.has_value(), "hold without a turn");
  require(!active_->held.has_value(), "hold while a wait already holds the thread");
  active_->held = std::move(wait);
}

void ThreadActor::set_wait_timer(std::unique_ptr<ScheduledTask> timer) {
  require(held() != nullptr, "a wait timer without a held wait");
  active_->held->timer = std::move(timer);
}

std::optional<HeldWait> ThreadActor::release() {
  if (!active_ || !active_->held) return std::nullopt;
  std::optional<HeldWait> released = std::move(active_->held);
  active_->held.reset();
  return released;
}

void ThreadActor::finish() {
  require(held() == nullptr, "finish while a wait holds the thread");
  gate_.close();
  active_.reset();
}

}  // namespace keel
