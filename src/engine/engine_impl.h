// engine/engine_impl.h — EngineCore's insides, shared by engine_core.cc and turn_runner.cc. Not a public
// interface: it includes Asio, and only the engine's own files include it.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "engine/admission_gate.h"
#include "engine/async_inbox.h"
#include "engine/engine_core.h"
#include "engine/event_bus.h"
#include "engine/io_lifetime.h"
#include "engine/policy_ops.h"
#include "engine/recovery.h"
#include "engine/steer_admission.h"
#include "engine/takeovers.h"
#include "engine/thread_actor.h"
#include "engine/tool_dispatch.h"
#include "engine/tool_workers.h"
#include "engine/turn_admission.h"
#include "engine/waits.h"
#include "keel/cancellation.h"
#include "protocol/op_params.h"
#include "store/commands.h"
#include "store/interaction_repository.h"
#include "store/queue_repository.h"
#include "store/receipts.h"
#include "store/records.h"
#include "store/run_repository.h"
#include "store/session_context.h"
#include "store/snapshot_repository.h"
#include "store/thread_repository.h"
#include "util/fail_points.h"
#include "util/thread_annotations.h"

namespace keel {

// Scheduler on an io_context: each task is a steady_timer on its own strand.
class AsioScheduler final : public Scheduler {
 public:
  explicit AsioScheduler(boost::asio::io_context& io) : io_(io) {}
  std::unique_ptr<ScheduledTask> schedule_after(std::chrono::milliseconds delay,
                                                std::function<void()> callback) override;

 private:
  boost::asio::io_context& io_;
};

class EngineCore::Impl final : public EngineReplies, public TurnLauncher, public ThreadActors {
 public:
  Impl(EngineDeps deps, EngineOptions options);
  ~Impl();

  void submit(Op op);
  std::unique_ptr<EventSubscription> subscribe(std::function<void(const AgentEvent&)> callback) {
    return bus_.subscribe(std::move(callback));
  }
  // Once per engine: by the constructor, or by EngineCore::recover() when recover_on_start is false.
  void recover() {
    std::call_once(recovered_, [this] { recovery_.recover_runs(); });
  }

  // ---- used by the turn runner (on the thread's strand) ----
  void publish_event(const std::string& thread_id, events::Event event) override {
    bus_.publish(std::move(event.type), thread_id, std::move(event.payload));
  }
  // Events reporting one commit, published together (one wake-up per subscriber).
  void publish_all(const std::string& thread_id, std::vector<EventBus::Draft> drafts) {
    bus_.publish_all(thread_id, std::move(drafts));
  }
  // Runs `body` in one write transaction and commits it (engine/store_writer.h).
  template <typename F>
  auto write(F&& body) -> decltype(body(std::declval<Transaction&>())) {
    return writer_.write(std::forward<F>(body));
  }
  // After a failed write: when the store is poisoned (a failed sync, e.g. a full disk; keel/store.h) it
  // refuses every write until reopened, so the engine stops (stop_for_store_failure). Any thread.
  void check_store() { writer_.check(); }

  // A named crash point of the engine (EngineDeps::fail_points); an armed error action is ignored here.
  void crash_point(std::string_view name) {
    if (deps_.fail_points != nullptr) (void)deps_.fail_points->hit(name);
  }

  // Runs `work` on a tool worker, never on an I/O thread: for work that may block (a fail point's hold).
  void run_blocking(std::function<void()> work) { (void)tool_workers_.post(std::move(work)); }

  Store& store() { return *deps_.store; }
  const EngineDeps& deps() const { return deps_; }
  const EngineOptions& options() const { return options_; }
  const ModelCatalog& models() const { return models_; }
  ThreadRepository& threads() { return threads_; }
  RunRepository& runs() { return runs_; }
  InteractionRepository& interactions() { return interactions_; }
  SnapshotRepository& snapshots() { return snapshots_; }
  // Arms the timer of a waiting timer interaction of the actor's held wait (on the actor's strand); when it
  // fires, the interaction is answered and the run continues.
  void arm_timer(const std::shared_ptr<ThreadActor>& actor, const InteractionRecord& timer);
  boost::asio::io_context& io() { return io_; }
  // Ended just before io_ is destroyed: inboxes drop what other threads push after that.
  const std::shared_ptr<IoLifetime>& io_lifetime() const { return io_lifetime_; }
  Scheduler& scheduler() { return scheduler_; }
  // Runs a tool call on the engine's tool workers within its time budget (engine/tool_dispatch.h).
  [[nodiscard]] std::unique_ptr<ToolCallHandle> dispatch_tool(const RegisteredTool& tool,
                                                              ToolCallContext context,
                                                              const nlohmann::json& arguments,
                                                              ToolCallSinks sinks) {
    const std::chrono::milliseconds budget =
        tool.implementation->time_budget(arguments).value_or(options_.tool_time_budget);
    return dispatch_tool_call(tool_workers_, scheduler_, tool.implementation, std::move(context), arguments,
                              budget, std::move(sinks));
  }

  // Called on the actor's strand when its turn's coroutine has ended, with the run's last state.
  void turn_finished(const std::shared_ptr<ThreadActor>& actor, RunState final_state);

 private:
  // ---- ThreadActors (engine/recovery.h) ----
  std::shared_ptr<ThreadActor> actor_for(const std::string& thread_id) EXCLUDES(actors_mu_) override;
  // The op boundary: runs an op's handler, and answers an exception escaping it (a bug) with an `internal`
  // rejection instead of letting it end the process with every client and every running turn on it.
  template <typename Handler>
  void guarded(const Op& op, const std::string& thread_id, Handler&& handler);
  void dispatch(Op op);
  void handle_on_actor(std::shared_ptr<ThreadActor> actor, Op op);
  // Answers a duplicate submission from its receipt (true), before any check of the thread's state.
  bool replay_receipt(const std::string& thread_id, const Op& op);
  void handle_engine_op(Op op);
  // An op's decoded params (protocol/op_params.h), or nullopt when it was refused for malformed ones.
  template <typename Params>
  std::optional<Params> accepted(const Op& op, const std::string& thread_id, Result<Params> params) {
    if (!params) {
      reject(op, thread_id, params.error());
      return std::nullopt;
    }
    return std::move(*params);
  }
  template <protocol::OpKind K>
  std::optional<protocol::ParamsOf<K>> params_or_reject(const Op& op, const std::string& thread_id) {
    return accepted(op, thread_id, protocol::decode<K>(op.params));
  }
  void ack(const Op& op, const std::string& thread_id, nlohmann::json result, bool replayed = false) override;
  void reject(const Op& op, const std::string& thread_id, const Error& error) override;
  void run_store_command(const std::shared_ptr<ThreadActor>& actor, const Op& op);
  // After the admission committed: its events, then the turn's runner.
  void announce_turn(const std::shared_ptr<ThreadActor>& actor, const AdmittedTurn& admitted);
  // `result_extra` is merged into the recorded ACK result (turn.input adds its action).
  void submit_turn(const std::shared_ptr<ThreadActor>& actor, const Op& op, protocol::TurnSubmitParams params,
                   nlohmann::json result_extra = nlohmann::json::object());

  // ---- steering and the queue (engine/steering.cc) ----
  void steer_turn(const std::shared_ptr<ThreadActor>& actor, const Op& op, protocol::TurnSteerParams params);
  void route_input(const std::shared_ptr<ThreadActor>& actor, const Op& op, protocol::TurnInputParams params);
  // `input`: the turn's input to queue, checked here.
  void enqueue_input(const std::shared_ptr<ThreadActor>& actor, const Op& op, const nlohmann::json& input,
                     nlohmann::json result_extra = nlohmann::json::object());
  void start_queued(const std::shared_ptr<ThreadActor>& actor, const Op& op);
  // After a turn that ended normally: starts the thread's next queued input, if any.
  void advance_queue(const std::shared_ptr<ThreadActor>& actor) override;
  // Whether an idle thread's queue runs by itself: its last run completed normally, or it has none. After
  // an interrupt, a budget pause, a failure or an uncertain pause the queue holds.
  bool queue_runs_on(const std::string& thread_id);
  void resume_run(const std::shared_ptr<ThreadActor>& actor, const Op& op,
                  const protocol::RunResumeParams& params);
  // turn.interrupt: closes the turn's gate to steers and cancels it at once; the answer waits for the
  // runner's terminal commit (answer_interrupts).
  void interrupt(const std::shared_ptr<ThreadActor>& actor, const Op& op,
                 const protocol::TurnInterruptParams& params);
  // Answers the actor's waiting interrupts once its turn's runner has ended in `final_state`: ACKed when
  // that state is terminal (committed), refused when the store kept the run's last state.
  void answer_interrupts(const std::shared_ptr<ThreadActor>& actor, RunState final_state);
  // takeover.start: the target's take_over(), takeover.updated, then the turn.interrupt path (its answer
  // waits for the interrupted state as turn.interrupt's does). takeover.end: the target's hand_back() and
  // takeover.updated; the run stays as it is (interrupted) until the person continues it.
  void take_over(const std::shared_ptr<ThreadActor>& actor, const Op& op,
                 const protocol::TakeoverParams& params);
  void hand_back(const std::shared_ptr<ThreadActor>& actor, const Op& op,
                 const protocol::TakeoverParams& params);

  // ---- TurnLauncher (engine/waits.h) ----
  void continue_turn(std::shared_ptr<ThreadActor> actor, RunRecord run, CancellationToken cancel,
                     std::shared_ptr<const ToolRegistryGeneration> generation) override;
  bool stopping() const override { return shutdown_.is_cancelled(); }

  // Recovery (engine/recovery.h) runs once per engine.
  std::once_flag recovered_;
  void read_thread(const Op& op, const protocol::ThreadReadParams& params);
  // thread.branches {threadId}: the leaves of the thread's tree and the last event seq before the read.
  void read_branches(const Op& op, const protocol::ThreadBranchesParams& params);
  // queue.list {threadId}: the queued inputs, the thread's revision and the last event seq before the read.
  void list_queue(const Op& op, const protocol::QueueListParams& params);
  void list_threads(const Op& op);
  // thread.create{model} and thread.setModel: model.unknown when the model named is not in the catalogue
  // (refused before the command runs, so without a receipt: the catalogue, not the request, decides it).
  std::optional<Error> check_chosen_model(protocol::OpKind kind, const nlohmann::json& params) const;
  void start_runner(const std::shared_ptr<ThreadActor>& actor, RunRecord run, bool first_turn,
                    std::string first_input_text);
  void publish_queue(const std::string& thread_id);

  EngineDeps deps_;
  EngineOptions options_;
  // EngineDeps::models, or the one model of EngineDeps::provider and EngineOptions::model.
  ModelCatalog own_models_;
  const ModelCatalog& models_ = deps_.models != nullptr ? *deps_.models : own_models_;
  ThreadRepository threads_;
  RunRepository runs_;
  QueueRepository queue_;
  InteractionRepository interactions_;
  SnapshotRepository snapshots_;
  StoreCommands commands_;
  EventBus bus_;
  StoreWriter writer_{*deps_.store, [this] { stop_for_store_failure(); }};
  PolicyOps policy_ops_{{*deps_.store, *deps_.clock, *deps_.gatekeeper, *this}};
  Takeovers takeovers_{deps_.takeover_targets};
  TurnAdmission turn_admission_{
      {*deps_.ids, threads_, runs_, snapshots_, *deps_.tools, models_, deps_.skills}};

  boost::asio::io_context io_;
  std::shared_ptr<IoLifetime> io_lifetime_ = std::make_shared<IoLifetime>();
  // Steer admissions' transactions run here, so they commit while the turn's runner waits for its own
  // commits, and the store's group commit can make both durable with one sync.
  boost::asio::thread_pool admissions_{1};
  SteerAdmission steer_admission_{{*deps_.store, *deps_.clock, *deps_.ids, threads_, runs_, *this,
                                   admissions_, turn_admission_, deps_.fail_points}};
  // Tool calls run here, never on io_threads_ (engine/tool_workers.h).
  ToolWorkers tool_workers_{options_.tool_threads};
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_;
  AsioScheduler io_scheduler_{io_};
  // Every timer of the engine: EngineDeps::scheduler when given (tests: a testing::SimulatedTime), else
  // io_scheduler_. Its callbacks run on any thread and only post onto a strand.
  Scheduler& scheduler_ = deps_.scheduler != nullptr ? *deps_.scheduler : io_scheduler_;
  Strand control_;  // engine-wide ops (thread.create, thread.list, interaction answers)
  std::vector<std::thread> io_threads_;
  Waits waits_{{writer_, *deps_.clock, *deps_.ids, *deps_.gatekeeper, *deps_.tools, scheduler_, threads_,
                runs_, interactions_, *this, *this}};
  Recovery recovery_{{writer_, *deps_.clock, *deps_.ids, *deps_.tools, threads_, runs_, queue_, interactions_,
                      waits_, *this, *this, *this}};

  Mutex actors_mu_;
  std::map<std::string, std::shared_ptr<ThreadActor>> actors_ GUARDED_BY(actors_mu_);

  // Running coroutines (turns and title tasks); the destructor waits for zero.
  Mutex running_mu_;
  std::condition_variable running_cv_;
  int running_ GUARDED_BY(running_mu_) = 0;
  CancellationSource shutdown_;

 public:
  // Counts a coroutine in or out of `running_`.
  void enter_running() EXCLUDES(running_mu_) {
    MutexLock guard(running_mu_);
    ++running_;
  }
  void leave_running() EXCLUDES(running_mu_) {
    bool idle = false;
    {
      MutexLock guard(running_mu_);
      idle = --running_ == 0;
    }
    running_cv_.notify_all();
    if (idle) report_store_failure_when_idle();
  }
  // The store refuses writes for good: every running turn is interrupted (each then ends with an error
  // event: its end cannot be written), no turn starts any more, and once none runs
  // EngineOptions::on_store_failed is called, once. Idempotent; any thread.
  void stop_for_store_failure();

 private:
  void report_store_failure_when_idle() EXCLUDES(running_mu_);
  std::atomic<bool> store_failed_{false};
  std::atomic<bool> store_failure_reported_{false};

 public:
  CancellationToken shutdown_token() const { return shutdown_.token(); }
};

// Spawns the turn loop of `run` on the actor's strand (engine/turn_runner.cc).
// `continuing`: the run continues after a durable wait (TurnRunner's continuation).
// `generation`: the registry generation the caller verified or classified the run with (recovery, a held
// wait); the runner verifies and binds with it. Null: the runner takes the current one, once.
void spawn_turn_runner(EngineCore::Impl& engine, std::shared_ptr<ThreadActor> actor, RunRecord run,
                       CancellationToken cancel, bool continuing = false,
                       std::shared_ptr<const ToolRegistryGeneration> generation = nullptr);
// Spawns best-effort title generation for a thread's first turn.
void spawn_title_task(EngineCore::Impl& engine, std::shared_ptr<ThreadActor> actor, std::string first_input);

}  // namespace keel
