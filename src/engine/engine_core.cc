// EngineCore: op dispatch onto thread actors, a turn's start and end, interrupts, and the engine's threads.
// The services it delegates to (turn and steer admission, waits, recovery, policy ops) are in their own units
// (docs/architecture.md, The engine's files).
#include "engine/engine_core.h"

#include <algorithm>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include "engine/engine_errors.h"
#include "engine/engine_impl.h"
#include "engine/run_environment.h"
#include "engine/thread_views.h"
#include "protocol/ops.h"
#include "store/event_epoch.h"
#include "store/node_body.h"
#include "store/receipts.h"
#include "util/thread_annotations.h"
#include "util/utf8.h"

namespace keel {

namespace asio = boost::asio;
using nlohmann::json;

int64_t raised_budget(std::optional<int64_t> budget, int64_t extra) {
  // A stored budget is not trusted to be in range (a store written before the bound, or by hand).
  const int64_t base = std::clamp<int64_t>(budget.value_or(0), 0, kMaxBudgetTokens);
  return std::min(base + std::clamp<int64_t>(extra, 0, kMaxBudgetTokens), kMaxBudgetTokens);
}

// ---- AsioScheduler ----

namespace {

struct TimerState {
  TimerState(Strand s, std::function<void()> cb) : strand(s), timer(s), callback(std::move(cb)) {}
  Strand strand;
  asio::steady_timer timer;
  std::function<void()> callback;
  Mutex mu;
  std::condition_variable cv;
  bool cancelled GUARDED_BY(mu) = false;
  bool running GUARDED_BY(mu) = false;
  std::thread::id runner GUARDED_BY(mu);

  void fire(const boost::system::error_code& error) {
    {
      MutexLock guard(mu);
      if (cancelled || error) return;
      running = true;
      runner = std::this_thread::get_id();
    }
    callback();
    {
      MutexLock guard(mu);
      running = false;
    }
    cv.notify_all();
  }
};

class TimerTask final : public ScheduledTask {
 public:
  explicit TimerTask(std::shared_ptr<TimerState> state) : state_(std::move(state)) {}
  ~TimerTask() override {
    {
      MutexLock lock(state_->mu);
      state_->cancelled = true;
      // Destroyed from inside its own callback: the callback has started, nothing is left to cancel.
      if (state_->running && state_->runner != std::this_thread::get_id()) {
        while (state_->running) lock.wait(state_->cv);
      }
    }
    asio::post(state_->strand, [state = state_] { state->timer.cancel(); });
  }

 private:
  std::shared_ptr<TimerState> state_;
};

}  // namespace

std::unique_ptr<ScheduledTask> AsioScheduler::schedule_after(std::chrono::milliseconds delay,
                                                             std::function<void()> callback) {
  auto state = std::make_shared<TimerState>(asio::make_strand(io_), std::move(callback));
  state->timer.expires_after(delay);
  state->timer.async_wait(asio::bind_executor(
      state->strand, [state](const boost::system::error_code& error) { state->fire(error); }));
  return std::make_unique<TimerTask>(state);
}

// ---- EngineCore ----

namespace {

// The epoch this engine numbers its events in (store/event_epoch.h): one write at start, none per event.
// When the store refuses the write (the engine then cannot write anything else either), the epoch after the
// stored one is used without being recorded.
uint64_t begin_event_epoch(Store& store, const Clock& clock) {
  if (auto tx = store.begin(TxMode::kWrite)) {
    auto epoch = take_event_epoch(**tx, clock);
    if (epoch && (*tx)->commit()) return *epoch;
  }
  if (auto tx = store.begin(TxMode::kRead)) {
    if (auto epoch = stored_event_epoch(**tx)) return *epoch + 1;
  }
  return 1;
}

}  // namespace

EngineCore::EngineCore(EngineDeps deps, EngineOptions options)
    : impl_(std::make_unique<Impl>(deps, std::move(options))) {}
EngineCore::~EngineCore() = default;
void EngineCore::submit(Op op) { impl_->submit(std::move(op)); }
std::unique_ptr<EventSubscription> EngineCore::subscribe(std::function<void(const AgentEvent&)> callback) {
  return impl_->subscribe(std::move(callback));
}
Scheduler& EngineCore::scheduler() { return impl_->scheduler(); }
void EngineCore::recover() { impl_->recover(); }

// ---- Impl ----

EngineCore::Impl::Impl(EngineDeps deps, EngineOptions options)
    : deps_(deps),
      options_(std::move(options)),
      threads_(*deps.clock),
      runs_(*deps.clock),
      queue_(*deps.clock),
      interactions_(*deps.clock),
      snapshots_(*deps.clock),
      commands_(*deps.store, *deps.clock, *deps.ids),
      bus_(begin_event_epoch(*deps.store, *deps.clock)),
      work_(asio::make_work_guard(io_)),
      control_(asio::make_strand(io_)) {
  const int count = std::max(1, options_.io_threads);
  for (int i = 0; i < count; ++i) io_threads_.emplace_back([this] { io_.run(); });
  if (options_.recover_on_start) recover();
}

void EngineCore::Impl::stop_for_store_failure() {
  if (store_failed_.exchange(true)) return;
  // Every later turn starts cancelled, queues do not advance, held waits stay in the store for the next
  // start.
  shutdown_.cancel("the store refuses writes");
  {
    MutexLock guard(actors_mu_);
    for (auto& [id, actor] : actors_) {
      asio::post(actor->strand, [actor] { actor->cancel_turn("the store refuses writes"); });
    }
  }
  report_store_failure_when_idle();
}

void EngineCore::Impl::report_store_failure_when_idle() {
  if (!store_failed_.load()) return;
  {
    MutexLock guard(running_mu_);
    if (running_ != 0) return;
  }
  if (store_failure_reported_.exchange(true)) return;
  if (options_.on_store_failed) options_.on_store_failed();
}

EngineCore::Impl::~Impl() {
  // Interrupt every turn and task, let each write its terminal state, then stop the threads.
  shutdown_.cancel("the engine is shutting down");
  {
    MutexLock guard(actors_mu_);
    for (auto& [id, actor] : actors_) {
      asio::post(actor->strand, [actor] { actor->cancel_turn("the engine is shutting down"); });
    }
  }
  {
    MutexLock lock(running_mu_);
    while (running_ != 0) lock.wait(running_cv_);
  }
  // Every turn has ended; a tool that ignores its cancellation is left behind after the grace.
  tool_workers_.shutdown(options_.tool_shutdown_grace);
  admissions_.join();  // their answers are posted to strands the io threads still run
  work_.reset();
  io_.stop();
  for (std::thread& thread : io_threads_) thread.join();
  MutexLock guard(actors_mu_);
  for (auto& [id, actor] : actors_) (void)actor->release();  // their timers, while the io_context lives
  // A model transfer or a tool still running reports to an inbox after this; the report is dropped.
  io_lifetime_->end();
}

std::shared_ptr<ThreadActor> EngineCore::Impl::actor_for(const std::string& thread_id) {
  MutexLock guard(actors_mu_);
  auto& actor = actors_[thread_id];
  if (!actor) actor = std::make_shared<ThreadActor>(thread_id, asio::make_strand(io_), io_lifetime_);
  return actor;
}

void EngineCore::Impl::ack(const Op& op, const std::string& thread_id, json result, bool replayed) {
  publish_event(thread_id, events::command_ack(op, std::move(result), replayed));
}

void EngineCore::Impl::reject(const Op& op, const std::string& thread_id, const Error& error) {
  check_store();  // a command refused because the store is poisoned stops the engine too
  publish_event(thread_id, events::command_rejected(op, error));
}

template <typename Handler>
void EngineCore::Impl::guarded(const Op& op, const std::string& thread_id, Handler&& handler) {
  // Only the identity: the handler may move the op away.
  const Op identity{op.method, op.client_id, op.submission_id, json::object()};
  std::string what;
  try {
    handler();
    return;
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
    what = "an exception that is not a std::exception";
  }
  try {
    reject(identity, thread_id,
           Error(codes::kInternal, "keel failed on this command (a bug, please report it): " + what));
  } catch (...) {  // nothing may leave the boundary, not even a failure to answer
  }
}

void EngineCore::Impl::submit(Op op) {
  guarded(op, protocol::addressed_thread(op.params), [&] { dispatch(std::move(op)); });
}

void EngineCore::Impl::dispatch(Op op) {
  if (!op.params.is_object()) op.params = json::object();
  // A null parameter is an absent one (protocol.md), for every transport: the params decoders
  // (protocol/op_params.h) read no null, and the receipt's fingerprint does not tell `{"x": null}` from `{}`.
  for (auto it = op.params.begin(); it != op.params.end();) {
    it = it->is_null() ? op.params.erase(it) : std::next(it);
  }
  const std::string thread_id = protocol::addressed_thread(op.params);
  // The op table says where an op runs (protocol/ops.h). An op that names no thread, or no op at all, is
  // answered engine-wide (refused there unless it is one of the engine's own).
  const protocol::OpSpec* spec = protocol::find_op(op.method);
  const protocol::OpRoute route = spec != nullptr ? spec->route : protocol::OpRoute::kThread;
  if (thread_id.empty() || route == protocol::OpRoute::kEngine || route == protocol::OpRoute::kSession) {
    asio::post(control_, [this, op = std::move(op)]() mutable {
      guarded(op, protocol::addressed_thread(op.params), [&] { handle_engine_op(std::move(op)); });
    });
    return;
  }
  auto actor = actor_for(thread_id);
  if (route == protocol::OpRoute::kSteerGate) {
    // Not through the strand: the steer's admission is decided at the actor's gate, so it never waits
    // for the turn's own writes (spec §3: a steer never blocks on the running turn, nor the turn on it).
    // turn.steer is the one op on this route.
    if (auto params = params_or_reject<protocol::OpKind::kTurnSteer>(op, thread_id)) {
      steer_turn(actor, op, std::move(*params));
    }
    return;
  }
  asio::post(actor->strand, [this, actor, op = std::move(op)]() mutable {
    guarded(op, actor->thread_id, [&] { handle_on_actor(actor, std::move(op)); });
  });
}

void EngineCore::Impl::handle_engine_op(Op op) {
  const protocol::OpSpec* spec = protocol::find_op(op.method);
  const auto needs_thread = [&] {
    reject(op, "", Error(codes::kInvalidCommand, "'" + op.method + "' needs a threadId, or is not a method"));
  };
  if (spec == nullptr) return needs_thread();
  using enum protocol::OpKind;
  switch (spec->kind) {
    case kInitialize:
      if (auto params = params_or_reject<kInitialize>(op, "")) {
        json result = {{"protocolVersion", kProtocolVersion}, {"unfinished", recovery_.unfinished_runs()}};
        if (json takeover = takeovers_.describe(); !takeover.is_null())
          result["takeover"] = std::move(takeover);
        ack(op, "", std::move(result));
        // A client connecting (after a restart, say) is shown what is asked of it.
        if (params->subscribe) waits_.resend_waits();
      }
      return;
    case kThreadCreate:
      return run_store_command(nullptr, op);
    case kThreadList:
      if (params_or_reject<kThreadList>(op, "")) list_threads(op);
      return;
    case kThreadRead:
      if (auto params = params_or_reject<kThreadRead>(op, "")) read_thread(op, *params);
      return;
    case kQueueList:
      if (auto params = params_or_reject<kQueueList>(op, "")) list_queue(op, *params);
      return;
    case kPolicyRead:
      if (params_or_reject<kPolicyRead>(op, "")) policy_ops_.read("", op);
      return;
    case kPolicySetMode:
    case kPolicyAddRule:
    case kPolicyRemoveRule:
    case kPolicySetHostPermissions:
      if (auto params = accepted(op, "", protocol::PolicyChangeParams::decode(op.params))) {
        policy_ops_.change("", op, *params);
      }
      return;
    case kThreadDelete:
    case kThreadFork:
    case kThreadSelectBranch:
    case kTurnSubmit:
    case kTurnInterrupt:
    case kTurnSteer:
    case kTurnInput:
    case kTurnEnqueue:
    case kQueueStart:
    case kQueueUpdate:
    case kQueueRemove:
    case kRunResume:
    case kRunResolveUncertain:
    case kApprovalResponse:
    case kInteractionResponse:
    case kTakeoverStart:
    case kTakeoverEnd:
    case kSessionSubscribe:  // the transport's own, never the engine's
    case kSessionUnsubscribe:
      return needs_thread();
  }
  needs_thread();
}

bool EngineCore::Impl::replay_receipt(const std::string& thread_id, const Op& op) {
  auto context = make_command_context(op.client_id, op.submission_id, op.method, op.params);
  if (!context) return false;
  auto tx = store().begin(TxMode::kRead);
  if (!tx) return false;
  ReceiptRepository receipts(*deps_.clock);
  auto found = receipts.check(**tx, *context);
  // No receipt, or a conflicting one: the command's own handling answers (and reports the conflict).
  if (!found || !*found) return false;
  const CommandOutcome& outcome = **found;
  if (outcome.accepted) {
    ack(op, thread_id, outcome.result, /*replayed=*/true);
  } else {
    reject(op, thread_id, *outcome.rejection);
  }
  return true;
}

void EngineCore::Impl::handle_on_actor(std::shared_ptr<ThreadActor> actor, Op op) {
  const std::string& method = op.method;
  const protocol::OpSpec* spec = protocol::find_op(method);
  // A duplicate submission replays its first answer whatever the thread does now (spec §5.1): the turn
  // it started may still run or wait, and the state checks below would refuse the duplicate instead.
  if (replay_receipt(actor->thread_id, op)) return;
  if (auto accepted = thread_accepts(actor->activity(), method); !accepted) {
    return reject(op, actor->thread_id, accepted.error());
  }
  const auto unknown = [&] {
    reject(op, actor->thread_id,
           Error(codes::kInvalidCommand, "'" + method + "' is not a method keel knows"));
  };
  if (spec == nullptr) return unknown();
  const std::string& thread_id = actor->thread_id;
  using enum protocol::OpKind;
  switch (spec->kind) {
    case kPolicyRead:
      if (params_or_reject<kPolicyRead>(op, thread_id)) policy_ops_.read(thread_id, op);
      return;
    case kPolicySetMode:
    case kPolicyAddRule:
    case kPolicyRemoveRule:
    case kPolicySetHostPermissions:
      if (auto params = accepted(op, thread_id, protocol::PolicyChangeParams::decode(op.params))) {
        policy_ops_.change(thread_id, op, *params);
      }
      return;
    // These three decode inside their command transaction: malformed params are a refusal recorded with the
    // submission's receipt.
    case kApprovalResponse:
      return waits_.respond_approval(actor, op, protocol::decode<kApprovalResponse>(op.params));
    case kInteractionResponse:
      return waits_.respond_interaction(actor, op, protocol::decode<kInteractionResponse>(op.params));
    case kRunResolveUncertain:
      return recovery_.resolve_uncertain(actor, op, protocol::decode<kRunResolveUncertain>(op.params));
    case kTurnSubmit:
      if (auto params = params_or_reject<kTurnSubmit>(op, thread_id))
        submit_turn(actor, op, std::move(*params));
      return;
    case kTurnInput:
      if (auto params = params_or_reject<kTurnInput>(op, thread_id))
        route_input(actor, op, std::move(*params));
      return;
    case kQueueStart:
      if (params_or_reject<kQueueStart>(op, thread_id)) start_queued(actor, op);
      return;
    case kTurnInterrupt:
      if (auto params = params_or_reject<kTurnInterrupt>(op, thread_id)) interrupt(actor, op, *params);
      return;
    case kRunResume:
      if (auto params = params_or_reject<kRunResume>(op, thread_id)) resume_run(actor, op, *params);
      return;
    case kTakeoverStart:
      if (auto params = params_or_reject<kTakeoverStart>(op, thread_id)) take_over(actor, op, *params);
      return;
    case kTakeoverEnd:
      if (auto params = params_or_reject<kTakeoverEnd>(op, thread_id)) hand_back(actor, op, *params);
      return;
    case kTurnEnqueue:
    case kQueueUpdate: {
      // A malformed command is refused by run_store_command, which records the refusal with its receipt.
      auto command = protocol::decode_store_command(spec->kind, op.params);
      if (!command) return run_store_command(actor, op);
      if (const auto* enqueue = std::get_if<protocol::TurnEnqueueParams>(&*command)) {
        return enqueue_input(actor, op, enqueue->input);
      }
      // A queued input becomes a turn's input later: it must be one now.
      if (auto content = turn_admission_.input(std::get<protocol::QueueUpdateParams>(*command).input);
          !content) {
        return reject(op, thread_id, content.error());
      }
      return run_store_command(actor, op);
    }
    case kThreadDelete:  // thread_accepts refused them under a running turn
    case kThreadSelectBranch:
    case kThreadFork:
    case kQueueRemove:
      return run_store_command(actor, op);
    case kInitialize:  // engine-wide or the transport's: dispatch never sends them here
    case kThreadCreate:
    case kThreadList:
    case kThreadRead:
    case kQueueList:
    case kTurnSteer:
    case kSessionSubscribe:
    case kSessionUnsubscribe:
      return unknown();
  }
  unknown();
}

void EngineCore::Impl::run_store_command(const std::shared_ptr<ThreadActor>& actor, const Op& op) {
  // Only the store commands reach here (the routing above), so the op's row exists.
  const protocol::OpKind kind = protocol::find_op(op.method)->kind;
  auto result = commands_.execute({op.client_id, op.submission_id, kind, op.params});
  std::string thread_id = actor ? actor->thread_id : "";
  if (!result) return reject(op, thread_id, result.error());
  const CommandOutcome& outcome = result->outcome;
  if (!outcome.accepted) return reject(op, thread_id, *outcome.rejection);
  if (thread_id.empty()) thread_id = outcome.result.value("threadId", "");
  ack(op, thread_id, outcome.result, result->replayed);
  if (result->replayed) return;
  if (kind == protocol::OpKind::kQueueUpdate || kind == protocol::OpKind::kQueueRemove) {
    publish_queue(thread_id);
  } else {
    if (kind == protocol::OpKind::kThreadSelectBranch && actor) actor->context().invalidate();
    publish_event(thread_id, events::thread_changed(outcome.result));
  }
}

void EngineCore::Impl::publish_queue(const std::string& thread_id) {
  auto tx = store().begin(TxMode::kRead);
  if (!tx) return;
  auto items = queue_.list(**tx, thread_id);
  auto thread = threads_.get(**tx, thread_id);
  if (!items || !thread) return;
  publish_event(thread_id, events::queue_updated(*thread, *items));
}

void EngineCore::Impl::list_queue(const Op& op, const protocol::QueueListParams& params) {
  const std::string& thread_id = params.thread_id;
  // Taken before the snapshot: every event up to it reports something the snapshot already holds.
  const uint64_t last_seq = bus_.last_seq(thread_id);
  auto tx = store().begin(TxMode::kRead);
  if (!tx) return reject(op, thread_id, tx.error());
  auto thread = threads_.get_live(**tx, thread_id);
  if (!thread) return reject(op, thread_id, thread.error());
  auto items = queue_.list(**tx, thread_id);
  if (!items) return reject(op, thread_id, items.error());
  ack(op, thread_id,
      {{"threadId", thread_id},
       {"items", events::queue_items_payload(*items)},
       {"revision", thread->revision},
       {"lastSeq", last_seq}});
}

void EngineCore::Impl::list_threads(const Op& op) {
  auto tx = store().begin(TxMode::kRead);
  if (!tx) return reject(op, "", tx.error());
  auto list = list_threads_view(**tx, threads_);
  if (!list) return reject(op, "", list.error());
  ack(op, "", std::move(*list));
}

void EngineCore::Impl::read_thread(const Op& op, const protocol::ThreadReadParams& params) {
  const std::string& thread_id = params.thread_id;
  // Taken before the snapshot: every event up to it reports something the snapshot already holds, so a
  // client applies only the events after it (docs/protocol.md, Reconnecting).
  const uint64_t last_seq = bus_.last_seq(thread_id);
  auto tx = store().begin(TxMode::kRead);
  if (!tx) return reject(op, thread_id, tx.error());
  auto view = read_thread_view(**tx, threads_, runs_, thread_id);
  if (!view) return reject(op, thread_id, view.error());
  (*view)["lastSeq"] = last_seq;
  ack(op, thread_id, std::move(*view));
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
  auto outcome = run_command(store(), *deps_.clock, *context, [&](Transaction& tx) -> Result<json> {
    admitted = KEEL_TRY(turn_admission_.admit(tx, thread_id, *content, budget));
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
