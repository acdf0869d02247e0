// EngineCore::Impl, a turn's start and end: turn.submit and run.resume start one, turn.interrupt and
// takeover.start end one early, turn_finished lets the thread go (or keeps it for a durable wait) and starts
// the next queued input. Op routing is in engine_core.cc.
#include <algorithm>

#include "engine/engine_core.h"
#include "engine/engine_errors.h"
#include "engine/engine_impl.h"
#include "engine/run_environment.h"
#include "engine/thread_views.h"
#include "protocol/ops.h"
#include "store/node_body.h"

namespace keel {

using nlohmann::json;

int64_t raised_budget(std::optional<int64_t> budget, int64_t extra) {
  // A stored budget is not trusted to be in range (a store written before the bound, or by hand).
  const int64_t base = std::clamp<int64_t>(budget.value_or(0), 0, kMaxBudgetTokens);
  return std::min(base + std::clamp<int64_t>(extra, 0, kMaxBudgetTokens), kMaxBudgetTokens);
}

void EngineCore::Impl::interrupt(const std::shared_ptr<ThreadActor>& actor, const Op& op,
                                 const protocol::TurnInterruptParams& params) {
  // Always allowed (spec §3): with nothing running it is acknowledged as a no-op.
  const std::string turn_id = params.turn_id.value_or("");
  if (!actor->turn() || (!turn_id.empty() && turn_id != actor->turn()->turn_id)) {
    return ack(op, actor->thread_id, {{"interrupted", false}});
  }
  // The decision, in one step on the strand: no steer enters the turn from now on (its gate refuses with
  // turn.ended, whatever the runner does before it sees the cancel), and the runner is woken wherever it
  // waits to write the interrupted state.
  actor->interrupt("interrupted by the user");
  if (actor->held() && shutdown_.is_cancelled()) {
    // No continuation runs any more: the wait stays in the store, and the next start restores it.
    return reject(op, actor->thread_id,
                  Error(codes::kEngineShutdown, "the engine is shutting down; the wait was not withdrawn"));
  }
  // Answered when the runner has ended and its terminal state is committed (answer_interrupts): an ACK
  // from memory could be followed by a crash that leaves the run to recovery, which would take it up again.
  actor->defer_interrupt(op);
  // A held wait has no runner to see the cancel: its continuation answers the open calls as interrupted.
  if (actor->held()) waits_.continue_held(actor);
}

void EngineCore::Impl::answer_interrupts(const std::shared_ptr<ThreadActor>& actor, RunState final_state) {
  if (!actor->has_interrupts()) return;
  const std::vector<Op> waiting = actor->take_interrupts();
  const std::string turn_id = actor->turn()->turn_id;
  for (const Op& op : waiting) {
    if (is_terminal(final_state)) {
      // The turn may have ended otherwise just before the interrupt reached it (its final reply had
      // arrived): `state` says how.
      json result = {{"interrupted", final_state == RunState::kInterrupted},
                     {"turnId", turn_id},
                     {"state", to_string(final_state)}};
      // A takeover.start that interrupted the turn says what the person holds.
      if (op.method == protocol::to_string(protocol::OpKind::kTakeoverStart)) {
        result["target"] = op.params.value("target", "");
        result["holder"] = "person";
      }
      ack(op, actor->thread_id, std::move(result));
    } else if (shutdown_.is_cancelled()) {
      reject(op, actor->thread_id,
             Error(codes::kEngineShutdown, "the engine is shutting down; the run keeps its last state"));
    } else {
      reject(op, actor->thread_id,
             Error(codes::kInterruptNotPersisted,
                   "the interrupted state of turn " + turn_id +
                       " could not be committed; the run keeps its last persisted state (" +
                       std::string(to_string(final_state)) + ")"));
    }
  }
}

void EngineCore::Impl::take_over(const std::shared_ptr<ThreadActor>& actor, const Op& op,
                                 const protocol::TakeoverParams& params) {
  const std::string& thread_id = actor->thread_id;
  auto target = takeovers_.find(params.target);
  if (!target) return reject(op, thread_id, target.error());
  {
    auto tx = store().begin(TxMode::kRead);
    if (!tx) return reject(op, thread_id, tx.error());
    if (auto thread = threads_.get_live(**tx, thread_id); !thread)
      return reject(op, thread_id, thread.error());
  }
  // First the target stops acting for the agent, so nothing the interrupted turn still has in flight acts
  // on it after the person started.
  auto taken = (*target)->take_over(thread_id);
  if (!taken) return reject(op, thread_id, taken.error());
  if (takeovers_.set_person_holds(thread_id, params.target, true)) {
    publish_event(thread_id,
                  events::takeover_updated(thread_id, params.target, /*person_holds=*/true, *taken));
  }
  // Then the turn stops as turn.interrupt stops it: the run waits, interrupted, until the person continues.
  if (!actor->turn()) {
    return ack(op, thread_id, {{"interrupted", false}, {"target", params.target}, {"holder", "person"}});
  }
  actor->interrupt("the person took over the " + params.target);
  if (actor->held() && shutdown_.is_cancelled()) {
    return reject(op, thread_id,
                  Error(codes::kEngineShutdown, "the engine is shutting down; the wait was not withdrawn"));
  }
  actor->defer_interrupt(op);
  if (actor->held()) waits_.continue_held(actor);
}

void EngineCore::Impl::hand_back(const std::shared_ptr<ThreadActor>& actor, const Op& op,
                                 const protocol::TakeoverParams& params) {
  const std::string& thread_id = actor->thread_id;
  auto target = takeovers_.find(params.target);
  if (!target) return reject(op, thread_id, target.error());
  json result = {{"target", params.target}, {"holder", "agent"}};
  if (!takeovers_.person_holds(thread_id, params.target)) {
    result["handedBack"] = false;  // the agent holds it already
    return ack(op, thread_id, std::move(result));
  }
  auto back = (*target)->hand_back(thread_id);
  if (!back) return reject(op, thread_id, back.error());
  takeovers_.set_person_holds(thread_id, params.target, false);
  publish_event(thread_id, events::takeover_updated(thread_id, params.target, /*person_holds=*/false, *back));
  result["handedBack"] = true;
  ack(op, thread_id, std::move(result));
}

void EngineCore::Impl::announce_turn(const std::shared_ptr<ThreadActor>& actor,
                                     const AdmittedTurn& admitted) {
  const std::string& thread_id = actor->thread_id;
  const RunRecord& run = admitted.run;
  if (admitted.titled) {
    publish_event(thread_id, events::thread_titled(*admitted.titled));
  }
  publish_event(thread_id, events::turn_start(run, /*resumed=*/false));
  publish_event(thread_id, events::item_complete(admitted.user, run.turn_id));
  start_runner(actor, run, admitted.first_turn, admitted.first_line);
}

void EngineCore::Impl::submit_turn(const std::shared_ptr<ThreadActor>& actor, const Op& op,
                                   protocol::TurnSubmitParams params, json result_extra) {
  const std::string& thread_id = actor->thread_id;
  if (actor->turn()) {
    return reject(op, thread_id,
                  Error(codes::kTurnBusy,
                        "a turn is already running on this thread; steer it, enqueue the input, "
                        "or interrupt it first"));
  }
  auto content = turn_admission_.input(params.input);
  if (!content) return reject(op, thread_id, content.error());
  const std::optional<int64_t> budget =
      params.budget_tokens.has_value() ? params.budget_tokens : options_.default_budget_tokens;
  auto context = make_command_context(op.client_id, op.submission_id, op.method, op.params);
  if (!context) return reject(op, thread_id, context.error());

  std::optional<AdmittedTurn> admitted;
  // A turn under an earlier node moves the thread to a new branch: said by thread.updated, as
  // thread.selectBranch says it, so every client reads the branch again.
  std::optional<json> branched;
  auto outcome = run_command(store(), *deps_.clock, *context, [&](Transaction& tx) -> Result<json> {
    admitted = KEEL_TRY(turn_admission_.admit(tx, thread_id, *content, budget, params.parent_node_id));
    if (params.parent_node_id) {
      ThreadRecord thread = KEEL_TRY(threads_.get(tx, thread_id));
      branched =
          json{{"threadId", thread_id}, {"leafNodeId", admitted->user.id}, {"revision", thread.revision}};
    }
    json result = {
        {"turnId", admitted->run.turn_id}, {"runId", admitted->run.id}, {"userNodeId", admitted->user.id}};
    for (auto& [key, value] : result_extra.items()) result[key] = value;
    return result;
  });
  if (!outcome) return reject(op, thread_id, outcome.error());
  if (!outcome->outcome.accepted) return reject(op, thread_id, *outcome->outcome.rejection);
  if (!outcome->replayed && admitted) actor->open_gate(admitted->run);
  ack(op, thread_id, outcome->outcome.result, outcome->replayed);
  if (outcome->replayed || !admitted) return;
  if (branched) publish_event(thread_id, events::thread_changed(*branched));
  announce_turn(actor, *admitted);
}

void EngineCore::Impl::resume_run(const std::shared_ptr<ThreadActor>& actor, const Op& op,
                                  const protocol::RunResumeParams& params) {
  const std::string& thread_id = actor->thread_id;
  if (actor->turn()) {
    return reject(op, thread_id, Error(codes::kTurnBusy, "a turn is already running on this thread"));
  }
  const std::string run_id = params.run_id.value_or("");
  const std::optional<int64_t> extra = params.additional_budget_tokens;
  auto resumed = write([&](Transaction& tx) -> Result<RunRecord> {
    RunRecord run = KEEL_TRY(run_id.empty() ? [&]() -> Result<RunRecord> {
      auto latest = KEEL_TRY(runs_.latest_for_thread(tx, thread_id));
      if (!latest) return fail(codes::kRunNotFound, "thread " + thread_id + " has no run to resume");
      return *latest;
    }()
                                            : runs_.get(tx, run_id));
    if (run.thread_id != thread_id)
      return fail(codes::kRunNotFound, "run " + run.id + " is not on this thread");
    // Only the thread's latest run continues: an older one would append to a history that went on without it.
    if (auto latest = KEEL_TRY(runs_.latest_for_thread(tx, thread_id)); latest && latest->id != run.id) {
      return fail(codes::kRunNotResumable, "run " + run.id + " is not the thread's latest run (" +
                                               latest->id + "); only the latest run can be resumed");
    }
    if (run.state != RunState::kBudgetPaused && run.state != RunState::kInterrupted) {
      return fail(codes::kRunNotResumable, "run " + run.id + " is " + std::string(to_string(run.state)) +
                                               "; only a budget-paused or interrupted run can be resumed");
    }
    RunUpdate update;
    if (extra) update.budget_tokens = raised_budget(run.budget_tokens, *extra);
    return runs_.transition(tx, run.id, run.revision, RunState::kStreamingModel, update);
  });
  if (!resumed) return reject(op, thread_id, resumed.error());
  actor->open_gate(*resumed);
  ack(op, thread_id, {{"turnId", resumed->turn_id}, {"runId", resumed->id}});
  publish_event(thread_id, events::run_updated(*resumed));
  publish_event(thread_id, events::turn_start(*resumed, /*resumed=*/true));
  start_runner(actor, *resumed, false, "");
}

void EngineCore::Impl::start_runner(const std::shared_ptr<ThreadActor>& actor, RunRecord run, bool first_turn,
                                    std::string first_input_text) {
  CancellationToken cancel = actor->begin_turn(run);
  if (shutdown_.is_cancelled()) actor->cancel_turn("the engine is shutting down");
  enter_running();
  spawn_turn_runner(*this, actor, std::move(run), std::move(cancel));
  if (first_turn && deps_.task_provider != nullptr && options_.task_model) {
    enter_running();
    spawn_title_task(*this, actor, std::move(first_input_text));
  }
}

void EngineCore::Impl::continue_turn(std::shared_ptr<ThreadActor> actor, RunRecord run,
                                     CancellationToken cancel,
                                     std::shared_ptr<const ToolRegistryGeneration> generation) {
  enter_running();
  spawn_turn_runner(*this, std::move(actor), std::move(run), std::move(cancel), /*continuing=*/true,
                    std::move(generation));
}

void EngineCore::Impl::arm_timer(const std::shared_ptr<ThreadActor>& actor, const InteractionRecord& timer) {
  waits_.arm_timer(actor, timer);
}

void EngineCore::Impl::turn_finished(const std::shared_ptr<ThreadActor>& actor, RunState final_state) {
  if (actor->held()) {  // the turn waits durably: it keeps the thread
    // An interrupt that came while the runner was writing its wait (it waited for steer admissions first)
    // withdraws the wait now, as it would have a moment later.
    if (actor->has_interrupts()) {
      if (shutdown_.is_cancelled()) {
        answer_interrupts(actor, final_state);
      } else {
        waits_.continue_held(actor);
      }
    }
    leave_running();
    return;
  }
  answer_interrupts(actor, final_state);
  actor->finish();
  // Spec §3: after a normal end the next queued input starts at once; after an interrupt, a budget pause,
  // a failure or an uncertain pause the queue holds until the user resumes the run or starts it.
  if (final_state == RunState::kCompleted && !shutdown_.is_cancelled() && !actor->stranded())
    advance_queue(actor);
  leave_running();  // after advance_queue: a started turn is counted before this one is let go
}

}  // namespace keel
