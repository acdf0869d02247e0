// EngineCore: op dispatch onto thread actors, turn admission, and the engine's threads.
#include "engine/engine_core.h"

#include <algorithm>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include "engine/engine_errors.h"
#include "engine/engine_impl.h"
#include "engine/run_environment.h"
#include "protocol/ops.h"
#include "store/event_epoch.h"
#include "store/node_body.h"
#include "store/receipts.h"
#include "util/utf8.h"

namespace keel {

namespace asio = boost::asio;
using nlohmann::json;

namespace {

// The thread an op addresses, when it addresses one.
std::string thread_of(const Op& op) {
  if (op.params.is_object() && op.params.contains("threadId") && op.params["threadId"].is_string()) {
    return op.params["threadId"].get<std::string>();
  }
  return "";
}

// A turn's input: a string, an array of content blocks, or {content: [...]}.
Result<std::vector<ContentBlock>> parse_input(const json& input) {
  if (input.is_string()) {
    if (input.get_ref<const std::string&>().empty()) return fail(codes::kInputInvalid, "the input is empty");
    ContentBlock block;
    block.text = input.get<std::string>();
    return std::vector<ContentBlock>{std::move(block)};
  }
  const json* blocks = &input;
  if (input.is_object() && input.contains("content")) blocks = &input["content"];
  auto content = content_from_json(*blocks);
  if (!content)
    return fail(codes::kInputInvalid,
                "the input is not text or content blocks: " + content.error().message());
  if (content->empty()) return fail(codes::kInputInvalid, "the input is empty");
  return content;
}

std::string first_line(const std::vector<ContentBlock>& content) {
  for (const ContentBlock& block : content) {
    if (block.kind != ContentBlock::Kind::kText) continue;
    std::string line = block.text.substr(0, block.text.find('\n'));
    const size_t start = line.find_first_not_of(" \t\r");
    if (start == std::string::npos) continue;
    line = line.substr(start);
    if (line.size() > 80) line = line.substr(0, utf8_prefix_length(line, 77)) + "...";
    return line;
  }
  return "New thread";
}

// A budget parameter: absent, or an integer from 1 to kMaxBudgetTokens (invalid_argument otherwise).
Result<std::optional<int64_t>> budget_param(const json& params, const char* name) {
  if (!params.contains(name)) return std::nullopt;
  const json& value = params[name];
  // An integer above INT64_MAX parses as unsigned: compare before converting.
  const bool in_range = (value.is_number_unsigned() && value.get<uint64_t>() >= 1 &&
                         value.get<uint64_t>() <= static_cast<uint64_t>(kMaxBudgetTokens)) ||
                        (value.is_number_integer() && !value.is_number_unsigned() && value.get<int64_t>() >= 1 &&
                         value.get<int64_t>() <= kMaxBudgetTokens);
  if (!in_range) {
    return fail(codes::kInvalidArgument, std::string("'") + name + "' must be an integer from 1 to " +
                                             std::to_string(kMaxBudgetTokens));
  }
  return value.get<int64_t>();
}

}  // namespace

int64_t raised_budget(std::optional<int64_t> budget, int64_t extra) {
  // A stored budget is not trusted to be in range (a store written before the bound, or by hand).
  const int64_t base = std::clamp<int64_t>(budget.value_or(0), 0, kMaxBudgetTokens);
  return std::min(base + std::clamp<int64_t>(extra, 0, kMaxBudgetTokens), kMaxBudgetTokens);
}

namespace {

bool has_image(const std::vector<ContentBlock>& content) {
  for (const ContentBlock& block : content) {
    if (block.kind == ContentBlock::Kind::kImage) return true;
  }
  return false;
}

}  // namespace

// ---- AsioScheduler ----

namespace {

struct TimerState {
  TimerState(Strand s, std::function<void()> cb) : strand(s), timer(s), callback(std::move(cb)) {}
  Strand strand;
  asio::steady_timer timer;
  std::function<void()> callback;
  std::mutex mu;
  std::condition_variable cv;
  bool cancelled = false;
  bool running = false;
  std::thread::id runner;

  void fire(const boost::system::error_code& error) {
    {
      std::lock_guard<std::mutex> guard(mu);
      if (cancelled || error) return;
      running = true;
      runner = std::this_thread::get_id();
    }
    callback();
    {
      std::lock_guard<std::mutex> guard(mu);
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
      std::unique_lock<std::mutex> lock(state_->mu);
      state_->cancelled = true;
      // Destroyed from inside its own callback: the callback has started, nothing is left to cancel.
      if (state_->running && state_->runner != std::this_thread::get_id()) {
        state_->cv.wait(lock, [&] { return !state_->running; });
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
    std::lock_guard<std::mutex> guard(actors_mu_);
    for (auto& [id, actor] : actors_) {
      asio::post(actor->strand, [actor] {
        if (actor->active) actor->active->cancel.cancel("the store refuses writes");
      });
    }
  }
  report_store_failure_when_idle();
}

void EngineCore::Impl::report_store_failure_when_idle() {
  if (!store_failed_.load()) return;
  {
    std::lock_guard<std::mutex> guard(running_mu_);
    if (running_ != 0) return;
  }
  if (store_failure_reported_.exchange(true)) return;
  if (options_.on_store_failed) options_.on_store_failed();
}

EngineCore::Impl::~Impl() {
  // Interrupt every turn and task, let each write its terminal state, then stop the threads.
  shutdown_.cancel("the engine is shutting down");
  {
    std::lock_guard<std::mutex> guard(actors_mu_);
    for (auto& [id, actor] : actors_) {
      asio::post(actor->strand, [actor] {
        if (actor->active) actor->active->cancel.cancel("the engine is shutting down");
      });
    }
  }
  {
    std::unique_lock<std::mutex> lock(running_mu_);
    running_cv_.wait(lock, [&] { return running_ == 0; });
  }
  // Every turn has ended; a tool that ignores its cancellation is left behind after the grace.
  tool_workers_.shutdown(options_.tool_shutdown_grace);
  admissions_.join();  // their answers are posted to strands the io threads still run
  work_.reset();
  io_.stop();
  for (std::thread& thread : io_threads_) thread.join();
  std::lock_guard<std::mutex> guard(actors_mu_);
  for (auto& [id, actor] : actors_) actor->waiting.reset();  // their timers, while the io_context lives
  // A model transfer or a tool still running reports to an inbox after this; the report is dropped.
  io_lifetime_->end();
}

std::shared_ptr<ThreadActor> EngineCore::Impl::actor_for(const std::string& thread_id) {
  std::lock_guard<std::mutex> guard(actors_mu_);
  auto& actor = actors_[thread_id];
  if (!actor) actor = std::make_shared<ThreadActor>(thread_id, asio::make_strand(io_));
  return actor;
}

void EngineCore::Impl::ack(const Op& op, const std::string& thread_id, json result, bool replayed) {
  publish("command.ack", thread_id,
          {{"clientId", op.client_id},
           {"submissionId", op.submission_id},
           {"method", op.method},
           {"result", std::move(result)},
           {"replayed", replayed}});
}

void EngineCore::Impl::reject(const Op& op, const std::string& thread_id, const Error& error) {
  check_store();  // a command refused because the store is poisoned stops the engine too
  publish("command.rejected", thread_id,
          {{"clientId", op.client_id},
           {"submissionId", op.submission_id},
           {"method", op.method},
           {"error", error_json(error)}});
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
  guarded(op, thread_of(op), [&] { dispatch(std::move(op)); });
}

void EngineCore::Impl::dispatch(Op op) {
  if (!op.params.is_object()) op.params = json::object();
  // A null parameter is an absent one (protocol.md), for every transport: handlers read optional
  // parameters with defaults, and the receipt's fingerprint then does not tell `{"x": null}` from `{}`.
  for (auto it = op.params.begin(); it != op.params.end();) {
    it = it->is_null() ? op.params.erase(it) : std::next(it);
  }
  const std::string thread_id = thread_of(op);
  // The op table says where an op runs (protocol/ops.h). An op that names no thread, or no op at all, is
  // answered engine-wide (refused there unless it is one of the engine's own).
  const protocol::OpSpec* spec = protocol::find_op(op.method);
  const protocol::OpRoute route = spec != nullptr ? spec->route : protocol::OpRoute::kThread;
  if (thread_id.empty() || route == protocol::OpRoute::kEngine || route == protocol::OpRoute::kSession) {
    asio::post(control_, [this, op = std::move(op)]() mutable {
      guarded(op, thread_of(op), [&] { handle_engine_op(std::move(op)); });
    });
    return;
  }
  auto actor = actor_for(thread_id);
  if (route == protocol::OpRoute::kSteerGate) {
    // Not through the strand: the steer's admission is decided at the actor's gate, so it never waits
    // for the turn's own writes (spec §3: a steer never blocks on the running turn, nor the turn on it).
    return steer_turn(actor, op);
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
  switch (spec->kind) {
    case protocol::OpKind::kInitialize:
      ack(op, "", {{"protocolVersion", kProtocolVersion}, {"unfinished", unfinished_runs()}});
      // A client connecting (after a restart, say) is shown what is asked of it.
      if (op.params.value("subscribe", true)) resend_waits();
      return;
    case protocol::OpKind::kThreadCreate:
      return run_store_command(nullptr, op);
    case protocol::OpKind::kThreadList:
      return list_threads(op);
    case protocol::OpKind::kThreadRead:
      return read_thread(op);
    case protocol::OpKind::kQueueList:
      return list_queue(op);
    case protocol::OpKind::kPolicyRead:
    case protocol::OpKind::kPolicySetMode:
    case protocol::OpKind::kPolicyAddRule:
    case protocol::OpKind::kPolicyRemoveRule:
    case protocol::OpKind::kPolicySetHostPermissions:
      return change_policy(nullptr, op);
    case protocol::OpKind::kThreadDelete:
    case protocol::OpKind::kThreadFork:
    case protocol::OpKind::kThreadSelectBranch:
    case protocol::OpKind::kTurnSubmit:
    case protocol::OpKind::kTurnInterrupt:
    case protocol::OpKind::kTurnSteer:
    case protocol::OpKind::kTurnInput:
    case protocol::OpKind::kTurnEnqueue:
    case protocol::OpKind::kQueueStart:
    case protocol::OpKind::kQueueUpdate:
    case protocol::OpKind::kQueueRemove:
    case protocol::OpKind::kRunResume:
    case protocol::OpKind::kRunResolveUncertain:
    case protocol::OpKind::kApprovalResponse:
    case protocol::OpKind::kInteractionResponse:
    case protocol::OpKind::kSessionSubscribe:  // the transport's own, never the engine's
    case protocol::OpKind::kSessionUnsubscribe:
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
  const bool is_interrupt = spec != nullptr && spec->kind == protocol::OpKind::kTurnInterrupt;
  if (actor->stranded && !is_interrupt) return reject(op, actor->thread_id, *actor->stranded);
  if (actor->waiting && (spec == nullptr || !spec->allowed_while_waiting)) {
    return reject(op, actor->thread_id,
                  Error(codes::kThreadWaiting,
                        "the thread waits for " +
                            std::string(actor->waiting->kind == "approval" ? "an approval" : "an answer") +
                            " (" + actor->waiting->id +
                            "); until it continues only "
                            "enqueue, interrupt and the response are accepted"));
  }
  const auto unknown = [&] {
    reject(op, actor->thread_id, Error(codes::kInvalidCommand, "'" + method + "' is not a method keel knows"));
  };
  if (spec == nullptr) return unknown();
  switch (spec->kind) {
    case protocol::OpKind::kPolicyRead:
    case protocol::OpKind::kPolicySetMode:
    case protocol::OpKind::kPolicyAddRule:
    case protocol::OpKind::kPolicyRemoveRule:
    case protocol::OpKind::kPolicySetHostPermissions:
      return change_policy(actor, op);
    case protocol::OpKind::kApprovalResponse:
      return respond_approval(actor, op);
    case protocol::OpKind::kInteractionResponse:
      return respond_interaction(actor, op);
    case protocol::OpKind::kTurnSubmit:
      return submit_turn(actor, op);
    case protocol::OpKind::kTurnInput:
      return route_input(actor, op);
    case protocol::OpKind::kTurnEnqueue:
      return enqueue_input(actor, op);
    case protocol::OpKind::kQueueStart:
      return start_queued(actor, op);
    case protocol::OpKind::kTurnInterrupt:
      return interrupt(actor, op);
    case protocol::OpKind::kRunResume:
      return resume_run(actor, op);
    case protocol::OpKind::kRunResolveUncertain:
      return resolve_uncertain(actor, op);
    case protocol::OpKind::kQueueUpdate:
      // A queued input becomes a turn's input later: it must be one now.
      if (auto content = turn_input(op.params.value("input", json())); !content) {
        return reject(op, actor->thread_id, content.error());
      }
      return run_store_command(actor, op);
    case protocol::OpKind::kThreadDelete:
    case protocol::OpKind::kThreadSelectBranch:
      // Moving the leaf or deleting the thread under a running turn would pull its history away.
      if (actor->active) {
        return reject(op, actor->thread_id,
                      Error(codes::kThreadBusy, "a turn is running on this thread; interrupt it first"));
      }
      return run_store_command(actor, op);
    case protocol::OpKind::kThreadFork:
    case protocol::OpKind::kQueueRemove:
      return run_store_command(actor, op);
    case protocol::OpKind::kInitialize:  // engine-wide or the transport's: dispatch never sends them here
    case protocol::OpKind::kThreadCreate:
    case protocol::OpKind::kThreadList:
    case protocol::OpKind::kThreadRead:
    case protocol::OpKind::kQueueList:
    case protocol::OpKind::kTurnSteer:
    case protocol::OpKind::kSessionSubscribe:
    case protocol::OpKind::kSessionUnsubscribe:
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
  } else if (kind == protocol::OpKind::kThreadFork) {
    publish("thread.updated", thread_id, outcome.result);
  } else {
    if (kind == protocol::OpKind::kThreadSelectBranch && actor) actor->context.invalidate();
    publish("thread.updated", thread_id, outcome.result);
  }
}

namespace {

json queue_items_json(const std::vector<QueuedInput>& items) {
  json list = json::array();
  for (const QueuedInput& item : items) {
    list.push_back({{"itemId", item.id},
                    {"position", item.position},
                    {"input", item.input},
                    {"revision", item.revision}});
  }
  return list;
}

}  // namespace

void EngineCore::Impl::publish_queue(const std::string& thread_id) {
  auto tx = store().begin(TxMode::kRead);
  if (!tx) return;
  auto items = queue_.list(**tx, thread_id);
  auto thread = threads_.get(**tx, thread_id);
  if (!items || !thread) return;
  publish("queue.updated", thread_id,
          {{"threadId", thread_id}, {"items", queue_items_json(*items)}, {"revision", thread->revision}});
}

void EngineCore::Impl::list_queue(const Op& op) {
  const std::string thread_id = thread_of(op);
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
       {"items", queue_items_json(*items)},
       {"revision", thread->revision},
       {"lastSeq", last_seq}});
}

void EngineCore::Impl::list_threads(const Op& op) {
  auto tx = store().begin(TxMode::kRead);
  if (!tx) return reject(op, "", tx.error());
  auto threads = threads_.list(**tx);
  if (!threads) return reject(op, "", threads.error());
  json list = json::array();
  for (const ThreadRecord& t : *threads) {
    list.push_back({{"threadId", t.id},
                    {"title", t.title},
                    {"revision", t.revision},
                    {"leafNodeId", t.leaf_node_id ? json(*t.leaf_node_id) : json(nullptr)},
                    {"parentThreadId", t.parent_thread_id ? json(*t.parent_thread_id) : json(nullptr)},
                    {"updatedAt", t.updated_at}});
  }
  ack(op, "", {{"threads", list}});
}

void EngineCore::Impl::read_thread(const Op& op) {
  const std::string thread_id = thread_of(op);
  // Taken before the snapshot: every event up to it reports something the snapshot already holds, so a
  // client applies only the events after it (docs/protocol.md, Reconnecting).
  const uint64_t last_seq = bus_.last_seq(thread_id);
  auto tx = store().begin(TxMode::kRead);
  if (!tx) return reject(op, thread_id, tx.error());
  auto thread = threads_.get_live(**tx, thread_id);
  if (!thread) return reject(op, thread_id, thread.error());
  json nodes = json::array();
  if (thread->leaf_node_id) {
    auto path = threads_.path_to(**tx, *thread->leaf_node_id);
    if (!path) return reject(op, thread_id, path.error());
    for (const NodeRecord& node : *path) {
      nodes.push_back({{"id", node.id},
                       {"kind", to_string(node.kind)},
                       {"runId", node.run_id ? json(*node.run_id) : json(nullptr)},
                       {"body", node.body},
                       {"createdAt", node.created_at}});
    }
  }
  auto latest = runs_.latest_for_thread(**tx, thread_id);
  json run = nullptr;
  if (latest && *latest) {
    run = {{"runId", (*latest)->id},
           {"turnId", (*latest)->turn_id},
           {"state", to_string((*latest)->state)},
           {"stopReason", (*latest)->stop_reason ? json(*(*latest)->stop_reason) : json(nullptr)},
           {"usage", (*latest)->usage}};
  }
  ack(op, thread_id,
      {{"threadId", thread->id},
       {"title", thread->title},
       {"revision", thread->revision},
       {"leafNodeId", thread->leaf_node_id ? json(*thread->leaf_node_id) : json(nullptr)},
       {"nodes", nodes},
       {"latestRun", run},
       {"lastSeq", last_seq}});
}

void EngineCore::Impl::interrupt(const std::shared_ptr<ThreadActor>& actor, const Op& op) {
  // Always allowed (spec §3): with nothing running it is acknowledged as a no-op.
  const std::string turn_id = op.params.value("turnId", "");
  if (!actor->active || (!turn_id.empty() && turn_id != actor->active->turn_id)) {
    return ack(op, actor->thread_id, {{"interrupted", false}});
  }
  // The decision, in one step on the strand: no steer enters the turn from now on (its gate refuses with
  // turn.ended, whatever the runner does before it sees the cancel), and the runner is woken wherever it
  // waits to write the interrupted state.
  (void)actor->gate->interrupt();
  actor->active->cancel.cancel("interrupted by the user");
  if (actor->waiting && shutdown_.is_cancelled()) {
    // No continuation runs any more: the wait stays in the store, and the next start restores it.
    return reject(op, actor->thread_id,
                  Error(codes::kEngineShutdown, "the engine is shutting down; the wait was not withdrawn"));
  }
  // Answered when the runner has ended and its terminal state is committed (answer_interrupts): an ACK
  // from memory could be followed by a crash that leaves the run to recovery, which would take it up again.
  actor->active->interrupts.push_back(op);
  // A held wait has no runner to see the cancel: its continuation answers the open calls as interrupted.
  if (actor->waiting) continue_held(actor);
}

void EngineCore::Impl::answer_interrupts(const std::shared_ptr<ThreadActor>& actor, RunState final_state) {
  if (!actor->active || actor->active->interrupts.empty()) return;
  const std::vector<Op> waiting = std::exchange(actor->active->interrupts, {});
  const std::string& turn_id = actor->active->turn_id;
  for (const Op& op : waiting) {
    if (is_terminal(final_state)) {
      // The turn may have ended otherwise just before the interrupt reached it (its final reply had
      // arrived): `state` says how.
      ack(op, actor->thread_id,
          {{"interrupted", final_state == RunState::kInterrupted},
           {"turnId", turn_id},
           {"state", to_string(final_state)}});
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

Result<EngineCore::Impl::AdmittedTurn> EngineCore::Impl::admit_turn(Transaction& tx,
                                                                    const std::string& thread_id,
                                                                    const std::vector<ContentBlock>& content,
                                                                    std::optional<int64_t> budget) {
  AdmittedTurn a;
  ThreadRecord thread = KEEL_TRY(threads_.get_live(tx, thread_id));
  // A call whose outcome is unknown has no result yet: no turn may build on that history until the person
  // resolved it (run.resolveUncertain).
  if (auto latest = KEEL_TRY(runs_.latest_for_thread(tx, thread_id));
      latest && latest->state == RunState::kPausedUncertain) {
    return fail(codes::kRunUncertain, "run " + latest->id +
                                          " stopped in a write whose outcome is unknown; resolve it first "
                                          "(run.resolveUncertain: retry, mark_done or fail)");
  }
  // A title a person gave at thread.create stays: no fallback title, no title task.
  a.first_turn = !thread.leaf_node_id.has_value() && !thread.title_given;
  a.first_line = first_line(content);
  RunRecord run;
  run.id = deps_.ids->next_id();
  run.thread_id = thread_id;
  run.turn_id = deps_.ids->next_id();
  run.turn_kind = "user";
  run.state = RunState::kStreamingModel;
  run.budget_tokens = budget;
  run.usage = json::object();
  // The environment the run starts with, frozen with it (spec §5).
  EnvironmentSnapshotRecord environment = KEEL_TRY(capture_environment(
      deps_.ids->next_id(), options_.model, options_.transport, *deps_.tools->snapshot()));
  run.snapshot_id = KEEL_TRY(snapshots_.put(tx, std::move(environment))).id;
  a.run = KEEL_TRY(runs_.create(tx, std::move(run)));
  NewNode turn_context;
  turn_context.id = deps_.ids->next_id();
  turn_context.thread_id = thread_id;
  turn_context.kind = NodeKind::kTurnContext;
  turn_context.run_id = a.run.id;
  turn_context.body = {{"turnId", a.run.turn_id}, {"runId", a.run.id}, {"model", options_.model.model}};
  KEEL_TRY(threads_.append(tx, std::move(turn_context)));
  NewNode user;
  user.id = deps_.ids->next_id();
  user.thread_id = thread_id;
  user.kind = NodeKind::kUserMessage;
  user.run_id = a.run.id;
  user.body = KEEL_TRY(encode_user_message(UserMessageBody{.content = content}));
  a.user = KEEL_TRY(threads_.append(tx, std::move(user)));
  if (a.first_turn) a.titled = KEEL_TRY(threads_.set_title(tx, thread_id, a.first_line));
  return a;
}

void EngineCore::Impl::announce_turn(const std::shared_ptr<ThreadActor>& actor,
                                     const AdmittedTurn& admitted) {
  const std::string& thread_id = actor->thread_id;
  const RunRecord& run = admitted.run;
  if (admitted.titled) {
    publish("thread.updated", thread_id,
            {{"threadId", thread_id},
             {"title", admitted.titled->title},
             {"revision", admitted.titled->revision}});
  }
  publish("turn.start", thread_id, {{"turnId", run.turn_id}, {"runId", run.id}, {"resumed", false}});
  publish("item.complete", thread_id,
          {{"itemId", admitted.user.id},
           {"kind", "user_message"},
           {"turnId", run.turn_id},
           {"node", {{"id", admitted.user.id}, {"kind", "user_message"}, {"body", admitted.user.body}}}});
  start_runner(actor, run, admitted.first_turn, admitted.first_line);
}

Result<std::vector<ContentBlock>> EngineCore::Impl::turn_input(const json& input) const {
  auto content = KEEL_TRY(parse_input(input));
  if (!options_.model.vision && has_image(content)) {
    return fail(codes::kImageUnsupported, "the model '" + options_.model.model + "' does not accept images");
  }
  return content;
}

void EngineCore::Impl::submit_turn(const std::shared_ptr<ThreadActor>& actor, const Op& op,
                                   json result_extra) {
  const std::string& thread_id = actor->thread_id;
  if (actor->active) {
    return reject(op, thread_id,
                  Error(codes::kTurnBusy,
                        "a turn is already running on this thread; steer it, enqueue the input, "
                        "or interrupt it first"));
  }
  auto content = turn_input(op.params.value("input", json()));
  if (!content) return reject(op, thread_id, content.error());
  auto asked_budget = budget_param(op.params, "budgetTokens");
  if (!asked_budget) return reject(op, thread_id, asked_budget.error());
  const std::optional<int64_t> budget = asked_budget->has_value() ? *asked_budget : options_.default_budget_tokens;
  auto context = make_command_context(op.client_id, op.submission_id, op.method, op.params);
  if (!context) return reject(op, thread_id, context.error());

  std::optional<AdmittedTurn> admitted;
  auto outcome = run_command(store(), *deps_.clock, *context, [&](Transaction& tx) -> Result<json> {
    admitted = KEEL_TRY(admit_turn(tx, thread_id, *content, budget));
    json result = {
        {"turnId", admitted->run.turn_id}, {"runId", admitted->run.id}, {"userNodeId", admitted->user.id}};
    for (auto& [key, value] : result_extra.items()) result[key] = value;
    return result;
  });
  if (!outcome) return reject(op, thread_id, outcome.error());
  if (!outcome->outcome.accepted) return reject(op, thread_id, *outcome->outcome.rejection);
  if (!outcome->replayed && admitted) open_gate(actor, admitted->run);
  ack(op, thread_id, outcome->outcome.result, outcome->replayed);
  if (outcome->replayed || !admitted) return;
  announce_turn(actor, *admitted);
}

void EngineCore::Impl::resume_run(const std::shared_ptr<ThreadActor>& actor, const Op& op) {
  const std::string& thread_id = actor->thread_id;
  if (actor->active) {
    return reject(op, thread_id, Error(codes::kTurnBusy, "a turn is already running on this thread"));
  }
  const std::string run_id = op.params.value("runId", "");
  auto extra_param = budget_param(op.params, "additionalBudgetTokens");
  if (!extra_param) return reject(op, thread_id, extra_param.error());
  const std::optional<int64_t> extra = *extra_param;
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
  open_gate(actor, *resumed);
  ack(op, thread_id, {{"turnId", resumed->turn_id}, {"runId", resumed->id}});
  publish("run.updated", thread_id,
          {{"runId", resumed->id}, {"state", to_string(resumed->state)}, {"revision", resumed->revision}});
  publish("turn.start", thread_id, {{"turnId", resumed->turn_id}, {"runId", resumed->id}, {"resumed", true}});
  start_runner(actor, *resumed, false, "");
}

void EngineCore::Impl::start_runner(const std::shared_ptr<ThreadActor>& actor, RunRecord run, bool first_turn,
                                    std::string first_input_text) {
  actor->active.emplace();
  actor->active->turn_id = run.turn_id;
  actor->active->run_id = run.id;
  actor->active->turn_kind = run.turn_kind;
  CancellationToken cancel = actor->active->cancel.token();
  if (shutdown_.is_cancelled()) actor->active->cancel.cancel("the engine is shutting down");
  open_gate(actor, run);
  enter_running();
  spawn_turn_runner(*this, actor, std::move(run), std::move(cancel));
  if (first_turn && deps_.task_provider != nullptr && options_.task_model) {
    enter_running();
    spawn_title_task(*this, actor, std::move(first_input_text));
  }
}

void EngineCore::Impl::open_gate(const std::shared_ptr<ThreadActor>& actor, const RunRecord& run) {
  actor->gate->open(run.turn_id, run.id, run.turn_kind, actor->strand, io_lifetime_);
}

void EngineCore::Impl::turn_finished(const std::shared_ptr<ThreadActor>& actor, RunState final_state) {
  if (actor->waiting) {  // the turn waits durably: it keeps the thread
    // An interrupt that came while the runner was writing its wait (it waited for steer admissions first)
    // withdraws the wait now, as it would have a moment later.
    if (actor->active && !actor->active->interrupts.empty()) {
      if (shutdown_.is_cancelled()) {
        answer_interrupts(actor, final_state);
      } else {
        continue_held(actor);
      }
    }
    leave_running();
    return;
  }
  answer_interrupts(actor, final_state);
  actor->gate->close();
  actor->active.reset();
  // Spec §3: after a normal end the next queued input starts at once; after an interrupt, a budget pause,
  // a failure or an uncertain pause the queue holds until the user resumes the run or starts it.
  if (final_state == RunState::kCompleted && !shutdown_.is_cancelled() && !actor->stranded)
    advance_queue(actor);
  leave_running();  // after advance_queue: a started turn is counted before this one is let go
}

}  // namespace keel
