// engine/turn_fixture.h — one running turn's collaborators (TurnJournal, TurnEnding, CallExecutor,
// DurableWait) over a real engine, for the tests of each of them through its own interface.
//
// The engine's insides (EngineCore::Impl) run on a fresh SQLite store in a temporary directory, with
// simulated time as clock and scheduler, sequential ids, a scripted provider, a gatekeeper whose verdict the
// test sets, and test tools that count their executions. The fixture opens a thread with one user message
// and a run streaming the model, and builds the Turn that runner would: no turn runner runs, the test calls
// the collaborator under test on the thread's strand (on_strand) and looks at what it returned, what it
// committed (the store) and what it published (the turn's outbox). The store's "store.commit" fail point
// makes the next commit fail.
#pragma once

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_future.hpp>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "engine/call_executor.h"
#include "engine/durable_wait.h"
#include "engine/engine_harness.h"
#include "engine/engine_impl.h"
#include "engine/turn.h"
#include "engine/turn_ending.h"
#include "engine/turn_journal.h"
#include "keel/fail_points.h"
#include "store/node_body.h"
#include "tools/builtin/timer_tool.h"

namespace keel::testing {

// A gatekeeper whose verdict the test sets; counts the calls it was asked about. Thread-safe: the turn asks
// it on the thread's strand.
class SettableGatekeeper final : public Gatekeeper {
 public:
  void set(GateVerdict::Kind kind, std::string reason = "") {
    std::lock_guard<std::mutex> guard(mu_);
    verdict_.kind = kind;
    verdict_.reason = std::move(reason);
  }
  GateVerdict check(const GateRequest&) override {
    std::lock_guard<std::mutex> guard(mu_);
    ++checks_;
    return verdict_;
  }
  int checks() const {
    std::lock_guard<std::mutex> guard(mu_);
    return checks_;
  }

 private:
  mutable std::mutex mu_;
  GateVerdict verdict_;
  int checks_ = 0;
};

class TurnFixture : public ::testing::Test {
 protected:
  static constexpr char kThreadId[] = "thread-1";
  static constexpr char kRunId[] = "run-1";
  static constexpr char kTurnId[] = "turn-1";

  TurnFixture() {
    store_ = must(open_sqlite_store(
        {.path = dir_.file("keel.db"), .synchronous = Synchronous::kOff, .fail_points = &fail_points}));
    add_tool(simple_spec("echo"),
             [](json params) { return text_result("echo: " + params.value("text", "")); });
    add_tool(simple_spec("fail"),
             [](json) -> Result<ToolResult> { return fail("test.failed", "it failed"); });
    ToolSpec write = simple_spec("write_note", ToolEffects::kWrite);
    write.recovery = ToolRecovery::kNeverRetry;
    add_tool(write, [](json) { return text_result("note written"); });
    must(tools.register_tool(std::make_shared<builtin::TimerTool>()));

    EngineDeps deps{store_.get(), &provider, nullptr, &tools, &gatekeeper, &clock, &ids};
    deps.scheduler = &clock;
    EngineOptions options;
    options.recover_on_start = false;
    engine_ = std::make_unique<EngineCore::Impl>(deps, options);
    subscription_ = engine_->subscribe([this](const AgentEvent& event) { log.add(event); });

    RunRecord run = must(engine_->write([&](Transaction& tx) -> Result<RunRecord> {
      KEEL_TRY(engine_->threads().create(tx, kThreadId, "a thread", true));
      auto body = KEEL_TRY(encode_user_message(UserMessageBody{.content = {text_block("hello")}}));
      NewNode user{
          .id = "user-1", .thread_id = kThreadId, .kind = NodeKind::kUserMessage, .body = std::move(body)};
      KEEL_TRY(engine_->threads().append(tx, std::move(user)));
      RunRecord r;
      r.id = kRunId;
      r.thread_id = kThreadId;
      r.turn_id = kTurnId;
      r.state = RunState::kStreamingModel;
      return engine_->runs().create(tx, std::move(r));
    }));
    actor = std::make_shared<ThreadActor>(kThreadId, boost::asio::make_strand(engine_->io()),
                                          engine_->io_lifetime());
    CancellationToken cancel = on_strand([&] { return actor->begin_turn(run); });
    build_turn(std::move(run), std::move(cancel), /*continuing=*/false);
  }

  ~TurnFixture() override {
    // A held wait's timer refers to the actor: let go, so the actor and its strand go before the engine.
    (void)on_strand([&] { return actor->release(); });
    parts_.reset();
    actor.reset();
    subscription_.reset();
    engine_.reset();  // waits for a continuation it spawned
  }

  // Runs `f` on the thread's strand and returns what it returned: the collaborators are strand-only.
  template <typename F>
  auto on_strand(F f) -> std::invoke_result_t<F&> {
    std::packaged_task<std::invoke_result_t<F&>()> task(std::move(f));
    auto done = task.get_future();
    boost::asio::post(actor->strand, [&task] { task(); });
    return done.get();
  }
  // Runs a coroutine of a collaborator on the thread's strand to its end.
  template <typename T>
  T on_strand(boost::asio::awaitable<T> coroutine) {
    return boost::asio::co_spawn(actor->strand, std::move(coroutine), boost::asio::use_future).get();
  }

  Turn& turn() { return parts_->turn; }
  TurnJournal& journal() { return parts_->journal; }
  CallExecutor& calls() { return parts_->calls; }
  DurableWait& waits() { return parts_->waits; }
  EngineCore::Impl& engine() { return *engine_; }

  // A response asking for these calls ({id, tool, arguments}), planned and committed the way the runner
  // does before it runs them: the run executing tools, every call's node written.
  std::vector<PlannedCall> commit_calls(const std::vector<AssembledToolCall>& asked) {
    AssembledResponse response;
    response.tool_calls = asked;
    std::vector<PlannedCall> planned = on_strand([&] { return calls().plan(response); });
    TurnJournal::Reply reply = reply_with(planned);
    must(on_strand([&] { return journal().commit_reply(reply); }));
    turn().outbox.clear();
    return planned;
  }
  // What the runner commits for a model reply asking for `planned` (the run goes on to execute them).
  TurnJournal::Reply reply_with(const std::vector<PlannedCall>& planned) {
    auto body = must(encode_assistant_message(
        AssistantMessageBody{.content = {}, .stop_reason = AssistantStopReason::kToolUse}));
    return TurnJournal::Reply{.assistant_id = ids.next_id(),
                              .body = std::move(body),
                              .calls = planned,
                              .step_usage = {.input_tokens = 10, .output_tokens = 5},
                              .total = {.input_tokens = 10, .output_tokens = 5},
                              .provider_stop_reason = "tool_calls",
                              .next = RunState::kExecutingTool};
  }
  static AssembledToolCall asked(std::string id, std::string tool, std::string arguments = "{}") {
    return {.index = 0,
            .provider_id = std::move(id),
            .name = std::move(tool),
            .arguments_text = std::move(arguments)};
  }

  // The continuation after a durable wait: the held wait is let go and a new Turn takes up the run from the
  // store, as Waits::continue_held and TurnRunner do.
  void continue_after_wait() {
    CancellationToken cancel = on_strand([&] {
      (void)actor->release();
      return actor->turn()->cancel.token();
    });
    RunRecord run;
    run.id = kRunId;
    run.thread_id = kThreadId;
    run.turn_id = kTurnId;
    parts_.reset();
    build_turn(std::move(run), std::move(cancel), /*continuing=*/true);
  }

  RunRecord stored_run() {
    auto tx = must(store_->begin(TxMode::kRead));
    return must(engine_->runs().get(*tx, kRunId));
  }
  std::vector<NodeRecord> path() {
    auto tx = must(store_->begin(TxMode::kRead));
    ThreadRecord thread = must(engine_->threads().get(*tx, kThreadId));
    return must(engine_->threads().path_to(*tx, *thread.leaf_node_id));
  }
  NodeRecord node(const std::string& id) {
    auto tx = must(store_->begin(TxMode::kRead));
    return must(engine_->threads().get_node(*tx, id));
  }
  // The call's tool_result on the thread's path (a continuation reserves a new node id for it).
  NodeRecord result_for(const PlannedCall& call) {
    for (const NodeRecord& n : path()) {
      if (n.kind == NodeKind::kToolResult && n.body.value("toolCallId", "") == call.tool_call_id) return n;
    }
    ADD_FAILURE() << "no result for " << call.tool_call_id;
    return {};
  }
  // The types of the events the turn's outbox holds.
  std::vector<std::string> outbox_types() {
    std::vector<std::string> types;
    for (const EventBus::Draft& draft : turn().outbox) types.push_back(draft.type);
    return types;
  }
  static std::vector<std::string> types_of(const std::vector<events::Event>& events) {
    std::vector<std::string> types;
    for (const events::Event& event : events) types.push_back(event.type);
    return types;
  }
  // How often the test tool `name` ran, and what the stored run looked like each time it started.
  int executions(const std::string& name) {
    std::lock_guard<std::mutex> guard(mu_);
    return static_cast<int>(seen_[name].size());
  }
  std::vector<RunRecord> runs_seen_by(const std::string& name) {
    std::lock_guard<std::mutex> guard(mu_);
    return seen_[name];
  }

  using json = nlohmann::json;

  TempDir dir_;
  FailPoints fail_points;
  SimulatedTime clock;
  SequentialIdSource ids{"id"};
  ScriptedProvider provider;
  ToolRegistry tools;
  SettableGatekeeper gatekeeper;
  EventLog log;
  std::shared_ptr<ThreadActor> actor;

 private:
  struct Parts {
    explicit Parts(Turn t) : turn(std::move(t)) {}
    Turn turn;
    TurnJournal journal{turn};
    TurnEnding ending{turn, journal};
    CallExecutor calls{turn, journal, ending};
    DurableWait waits{turn, journal, ending, calls};
  };

  static ContentBlock text_block(std::string text) {
    ContentBlock block;
    block.text = std::move(text);
    return block;
  }
  void build_turn(RunRecord run, CancellationToken cancel, bool continuing) {
    std::shared_ptr<const ToolRegistryGeneration> generation = tools.snapshot();
    Turn fresh(*engine_, actor, std::move(run), std::move(cancel), continuing, generation);
    fresh.model = engine_->options().model;
    fresh.provider = engine_->deps().provider;
    fresh.tools = generation;
    parts_ = std::make_unique<Parts>(std::move(fresh));
  }
  // A tool that records the run as the store holds it when the tool starts, then answers with `body`.
  void add_tool(ToolSpec spec, std::function<Result<ToolResult>(json)> body) {
    const std::string name = spec.name;
    must(tools.register_tool(std::make_shared<LambdaTool>(
        std::move(spec), [this, name, body](ToolCallContext, json params, auto done) {
          RunRecord seen = stored_run();
          {
            std::lock_guard<std::mutex> guard(mu_);
            seen_[name].push_back(std::move(seen));
          }
          done(body(std::move(params)));
        })));
  }
  template <typename T>
  static T must(Result<T> result) {
    if (!result) throw std::runtime_error(result.error().to_string());
    return std::move(result).value();
  }
  static void must(Result<void> result) {
    if (!result) throw std::runtime_error(result.error().to_string());
  }

  std::unique_ptr<Store> store_;
  std::unique_ptr<EngineCore::Impl> engine_;
  std::unique_ptr<EventSubscription> subscription_;
  std::unique_ptr<Parts> parts_;
  std::mutex mu_;
  std::map<std::string, std::vector<RunRecord>> seen_;
};

}  // namespace keel::testing
