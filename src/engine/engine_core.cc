// EngineCore: op dispatch onto thread actors, the op boundary, the store failure stop and the engine's
// threads. A turn's start and end are in engine_turns.cc, the read ops in engine_reads.cc; the services it
// delegates to (turn and steer admission, waits, recovery, policy ops) are in their own units
// (docs/architecture.md, The engine's files).
#include "engine/engine_core.h"

#include <algorithm>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include "engine/engine_errors.h"
#include "engine/engine_impl.h"
#include "engine/model_list.h"
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
      own_models_({CatalogModel{.name = options_.model.model,
                                .provider_name = options_.transport.kind,
                                .settings = options_.model,
                                .transport = options_.transport,
                                .reasoning = false,
                                .provider = deps.provider}},
                  options_.model.model),
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
      if (auto error = check_chosen_model(spec->kind, op.params)) return reject(op, "", *error);
      return run_store_command(nullptr, op);
    case kThreadList:
      if (params_or_reject<kThreadList>(op, "")) list_threads(op);
      return;
    case kThreadRead:
      if (auto params = params_or_reject<kThreadRead>(op, "")) read_thread(op, *params);
      return;
    case kThreadBranches:
      if (auto params = params_or_reject<kThreadBranches>(op, "")) read_branches(op, *params);
      return;
    case kModelList:
      if (params_or_reject<kModelList>(op, "")) ack(op, "", model_list_view(models_));
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
    case kThreadSetModel:
    case kThreadSetMcpServers:
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
    case kThreadSetModel:
      if (auto error = check_chosen_model(spec->kind, op.params)) return reject(op, thread_id, *error);
      return run_store_command(actor, op);
    case kThreadSetMcpServers:  // names a server keel may not run now: it enables nothing until then
    case kThreadDelete:         // thread_accepts refused them under a running turn
    case kThreadSelectBranch:
    case kThreadFork:
    case kQueueRemove:
      return run_store_command(actor, op);
    case kInitialize:  // engine-wide or the transport's: dispatch never sends them here
    case kThreadCreate:
    case kThreadList:
    case kThreadRead:
    case kThreadBranches:
    case kModelList:
    case kQueueList:
    case kTurnSteer:
    case kSessionSubscribe:
    case kSessionUnsubscribe:
      return unknown();
  }
  unknown();
}

std::optional<Error> EngineCore::Impl::check_chosen_model(protocol::OpKind kind, const json& params) const {
  // A malformed command passes: run_store_command refuses it and records the refusal with its receipt.
  auto command = protocol::decode_store_command(kind, params);
  if (!command) return std::nullopt;
  std::optional<std::string> model;
  if (const auto* create = std::get_if<protocol::ThreadCreateParams>(&*command)) model = create->model;
  if (const auto* set = std::get_if<protocol::ThreadSetModelParams>(&*command)) model = set->model;
  if (!model || models_.find(*model) != nullptr) return std::nullopt;
  std::string known;
  for (const CatalogModel& listed : models_.models()) known += (known.empty() ? "" : ", ") + listed.name;
  return Error(codes::kModelUnknown, "no model '" + *model + "' is configured (model.list: " + known + ")");
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

}  // namespace keel
