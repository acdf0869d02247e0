// engine/engine_harness.h — a whole engine on a temporary SQLite store, for integration tests and
// benchmarks: scripted provider, simulated time (the engine's clock and scheduler: its timers fire when a
// test advances `clock`), sequential ids, a DirectTransport and an event log. Tests wait on the log's
// events, never on real time.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/engine_core.h"
#include "keel/error_codes.h"
#include "keel/sqlite_store.h"
#include "keel/tool_registry.h"
#include "store/run_repository.h"
#include "store/thread_repository.h"
#include "testing/scripted_provider.h"
#include "testing/sequential_ids.h"
#include "testing/simulated_time.h"
#include "testing/temp_dir.h"
#include "testing/write_gate.h"
#include "transport/direct_transport.h"
#include "util/fail_points.h"
#include "util/thread_annotations.h"

namespace keel::testing {

// Collects every event a subscriber receives; tests wait on it.
class EventLog {
 public:
  void add(const AgentEvent& event) {
    {
      MutexLock guard(mu_);
      events_.push_back(event);
    }
    cv_.notify_all();
  }
  // Waits until `pred(events)` holds. A generous bound keeps a broken engine from hanging the suite; it is
  // a hang guard, not a timing assertion.
  bool wait_until(const std::function<bool(const std::vector<AgentEvent>&)>& pred,
                  std::chrono::seconds bound = std::chrono::seconds(30)) {
    MutexLock lock(mu_);
    const auto give_up = std::chrono::steady_clock::now() + bound;
    while (!pred(events_)) {
      if (lock.wait_until(cv_, give_up) == std::cv_status::timeout) return pred(events_);
    }
    return true;
  }
  bool wait_count(const std::string& type, size_t n) {
    return wait_until([&](const auto& events) { return count_in(events, type) >= n; });
  }
  std::vector<AgentEvent> events() const {
    MutexLock guard(mu_);
    return events_;
  }
  std::vector<AgentEvent> of_type(const std::string& type) const {
    std::vector<AgentEvent> out;
    for (const AgentEvent& event : events()) {
      if (event.type == type) out.push_back(event);
    }
    return out;
  }
  // Event types in order, optionally without item.delta (whose count depends on chunking).
  std::vector<std::string> types(bool with_deltas = true) const {
    std::vector<std::string> out;
    for (const AgentEvent& event : events()) {
      if (with_deltas || !event.is_delta()) out.push_back(event.type);
    }
    return out;
  }
  static size_t count_in(const std::vector<AgentEvent>& events, const std::string& type) {
    size_t n = 0;
    for (const AgentEvent& event : events) n += event.type == type ? 1 : 0;
    return n;
  }

 private:
  mutable Mutex mu_;
  std::condition_variable cv_;
  std::vector<AgentEvent> events_ GUARDED_BY(mu_);
};

// Test tools with predictable behaviour.
class LambdaTool final : public AgentTool {
 public:
  using Body = std::function<void(ToolCallContext, nlohmann::json, std::function<void(Result<ToolResult>)>)>;
  LambdaTool(ToolSpec spec, Body body) : spec_(std::move(spec)), body_(std::move(body)) {}
  const ToolSpec& spec() const override { return spec_; }
  void execute(ToolCallContext context, nlohmann::json params,
               std::function<void(Result<ToolResult>)> done) override {
    body_(std::move(context), std::move(params), std::move(done));
  }

 private:
  ToolSpec spec_;
  Body body_;
};

inline ToolSpec simple_spec(std::string name, ToolEffects effects = ToolEffects::kRead) {
  ToolSpec spec;
  spec.name = std::move(name);
  spec.label = spec.name;
  spec.description = "a test tool";
  spec.parameters = {
      {"type", "object"}, {"properties", {{"text", {{"type", "string"}}}}}, {"additionalProperties", false}};
  spec.effects = effects;
  return spec;
}

struct HarnessOptions {
  EngineOptions engine;
  Synchronous synchronous = Synchronous::kOff;
  Gatekeeper* gatekeeper = nullptr;   // default: allow all
  FailPoints* fail_points = nullptr;  // passed to the store and the engine
  bool with_task_provider = false;
  // false: the harness's simulated time is the engine's scheduler; true: the engine's own timers on its
  // io_context (stress tests that want real jitter from tools that wait).
  bool real_timers = false;
  WriteGate* write_gate = nullptr;  // when set, the engine's writes pass it (testing/write_gate.h)
  std::vector<TakeoverTarget*> takeover_targets{};  // EngineDeps::takeover_targets; they outlive the harness
  const ModelCatalog* models = nullptr;             // EngineDeps::models; outlives the harness
  const SkillCatalog* skills = nullptr;             // EngineDeps::skills; outlives the harness
};

class EngineHarness {
 public:
  explicit EngineHarness(HarnessOptions options = {}) : options_(std::move(options)) {
    auto store = open_sqlite_store({.path = dir.file("keel.db"),
                                    .synchronous = options_.synchronous,
                                    .fail_points = options_.fail_points});
    EXPECT_TRUE(store) << store.error().to_string();
    store_ = std::move(store).value();
    if (options_.write_gate != nullptr) {
      store_ = std::make_unique<GatedStore>(std::move(store_), *options_.write_gate);
    }
    register_test_tools();
  }

  // Replaces the gatekeeper the next start() uses (tests that open a PolicyGatekeeper on the harness's
  // store; it must outlive the engine).
  void set_gatekeeper(Gatekeeper* gatekeeper) { options_.gatekeeper = gatekeeper; }
  // The model catalogue the next start() uses (tests change the configured models across a restart).
  void set_models(const ModelCatalog* models) { options_.models = models; }
  // The skills the next start() uses (tests edit a skill across a restart).
  void set_skills(const SkillCatalog* skills) { options_.skills = skills; }
  // The options the next start() builds the engine with (tests change the configuration across a restart).
  EngineOptions& engine_options() { return options_.engine; }
  // Starts the engine (tests register extra tools or script responses first if they like).
  void start() {
    EngineDeps deps{store_.get(),
                    &provider,
                    options_.with_task_provider ? &task_provider : nullptr,
                    &tools,
                    options_.gatekeeper ? options_.gatekeeper : &allow_all_,
                    &clock,
                    &ids};
    deps.scheduler = options_.real_timers ? nullptr : &clock;
    deps.takeover_targets = options_.takeover_targets;
    deps.fail_points = options_.fail_points;
    deps.models = options_.models;
    deps.skills = options_.skills;
    // Subscribed before recovery, so the log sees the recovered turns' events from their start and a test
    // can wait on them.
    EngineOptions engine_options = options_.engine;
    engine_options.recover_on_start = false;
    engine = std::make_unique<EngineCore>(deps, engine_options);
    transport = std::make_unique<DirectTransport>(*engine);
    subscription = transport->on_event([this](const AgentEvent& event) { log.add(event); });
    if (options_.engine.recover_on_start) engine->recover();
  }

  void stop() {
    subscription.reset();
    transport.reset();
    engine.reset();
  }

  ~EngineHarness() { stop(); }

  // Sends an op and waits for its answer (ack or rejection); returns that event.
  AgentEvent request(const std::string& method, nlohmann::json params) {
    const std::string submission = "sub-" + std::to_string(++submissions_);
    transport->send(Op{method, "test-client", submission, std::move(params)});
    AgentEvent answer;
    EXPECT_TRUE(log.wait_until([&](const std::vector<AgentEvent>& events) {
      for (const AgentEvent& event : events) {
        if ((event.type == "command.ack" || event.type == "command.rejected") &&
            event.payload.value("submissionId", "") == submission) {
          answer = event;
          return true;
        }
      }
      return false;
    })) << "no answer to "
        << method;
    return answer;
  }

  // Sends an op under a given submission id and waits for the answer it gets this time (a duplicate
  // submission gets a second answer carrying the same id).
  AgentEvent request_as(const std::string& submission, const std::string& method, nlohmann::json params) {
    auto answers = [&](const std::vector<AgentEvent>& events) {
      std::vector<AgentEvent> out;
      for (const AgentEvent& event : events) {
        if ((event.type == "command.ack" || event.type == "command.rejected") &&
            event.payload.value("submissionId", "") == submission) {
          out.push_back(event);
        }
      }
      return out;
    };
    const size_t before = answers(log.events()).size();
    transport->send(Op{method, "test-client", submission, std::move(params)});
    AgentEvent answer;
    EXPECT_TRUE(log.wait_until([&](const std::vector<AgentEvent>& events) {
      auto found = answers(events);
      if (found.size() <= before) return false;
      answer = found[before];
      return true;
    })) << "no answer to "
        << method;
    return answer;
  }

  // Sends an op without waiting for its answer.
  void send(const std::string& method, nlohmann::json params) {
    transport->send(Op{method, "test-client", "sub-" + std::to_string(++submissions_), std::move(params)});
  }

  std::string create_thread() {
    // No title: the first turn names the thread, as most tests expect.
    AgentEvent ack = request("thread.create", nlohmann::json::object());
    EXPECT_EQ(ack.type, "command.ack") << ack.payload.dump();
    return ack.payload["result"].value("threadId", "");
  }

  // Submits a turn and waits for its turn.complete (the n-th one of the thread). Returns it.
  AgentEvent run_turn(const std::string& thread_id, nlohmann::json input,
                      nlohmann::json extra = nlohmann::json::object()) {
    const size_t before = completes(thread_id);
    nlohmann::json params = {{"threadId", thread_id}, {"input", std::move(input)}};
    for (auto& [key, value] : extra.items()) params[key] = value;
    AgentEvent ack = request("turn.submit", params);
    EXPECT_EQ(ack.type, "command.ack") << ack.payload.dump();
    return wait_complete(thread_id, before + 1);
  }

  size_t completes(const std::string& thread_id) const {
    size_t n = 0;
    for (const AgentEvent& event : log.events())
      n += event.type == "turn.complete" && event.thread_id == thread_id;
    return n;
  }

  AgentEvent wait_complete(const std::string& thread_id, size_t nth) {
    AgentEvent found;
    EXPECT_TRUE(log.wait_until([&](const std::vector<AgentEvent>& events) {
      size_t n = 0;
      for (const AgentEvent& event : events) {
        if (event.type == "turn.complete" && event.thread_id == thread_id && ++n == nth) {
          found = event;
          return true;
        }
      }
      return false;
    })) << "turn "
        << nth << " of " << thread_id << " did not complete";
    return found;
  }

  // The persisted path of the thread's current branch.
  std::vector<NodeRecord> path(const std::string& thread_id) {
    ThreadRepository threads(clock);
    auto tx = store_->begin(TxMode::kRead);
    EXPECT_TRUE(tx);
    auto thread = threads.get(**tx, thread_id);
    EXPECT_TRUE(thread);
    if (!thread || !thread->leaf_node_id) return {};
    auto path = threads.path_to(**tx, *thread->leaf_node_id);
    EXPECT_TRUE(path);
    return path ? *path : std::vector<NodeRecord>{};
  }

  RunRecord run(const std::string& run_id) {
    RunRepository runs(clock);
    auto tx = store_->begin(TxMode::kRead);
    EXPECT_TRUE(tx);
    if (!tx) return {};
    auto run = runs.get(**tx, run_id);
    EXPECT_TRUE(run) << (run ? "" : run.error().to_string());
    return run ? *run : RunRecord{};
  }

  // Waits for the nth tool progress event of the thread (the nth blocking tool has started).
  void wait_tool_progress(const std::string& thread_id, size_t nth = 1) {
    EXPECT_TRUE(log.wait_until([&](const std::vector<AgentEvent>& events) {
      size_t n = 0;
      for (const AgentEvent& e : events) {
        n += e.thread_id == thread_id && e.type == "item.delta" && e.payload.contains("toolProgress");
      }
      return n >= nth;
    })) << "no tool progress #"
        << nth << " on " << thread_id;
  }

  // Waits until `condition` (typically a look at the store) holds, checking it again on every event: the
  // engine publishes an event after each commit that changes what a test looks at.
  bool wait_for(const std::function<bool()>& condition) {
    return log.wait_until([&](const std::vector<AgentEvent>&) { return condition(); });
  }
  // Waits until the stored run is in `state` (work that starts with the engine, e.g. a recovered run).
  void wait_run_state(const std::string& run_id, RunState state) {
    EXPECT_TRUE(wait_for([&] { return run(run_id).state == state; }))
        << "run " << run_id << " is " << to_string(run(run_id).state);
  }
  // Waits for the nth event of `type` on the thread and returns it.
  AgentEvent wait_event(const std::string& thread_id, const std::string& type, size_t nth = 1) {
    AgentEvent found;
    EXPECT_TRUE(log.wait_until([&](const std::vector<AgentEvent>& events) {
      size_t n = 0;
      for (const AgentEvent& event : events) {
        if (event.type == type && event.thread_id == thread_id && ++n == nth) {
          found = event;
          return true;
        }
      }
      return false;
    })) << "no "
        << type << " #" << nth << " on " << thread_id;
    return found;
  }
  std::vector<std::string> kinds(const std::string& thread_id) {
    std::vector<std::string> out;
    for (const NodeRecord& node : path(thread_id)) out.emplace_back(to_string(node.kind));
    return out;
  }

  Store& store() { return *store_; }

  TempDir dir;
  // The engine's clock and (unless real_timers) its scheduler: advancing it fires the timers due on the way.
  SimulatedTime clock;
  SequentialIdSource ids{"id"};
  ScriptedProvider provider;
  ScriptedProvider task_provider;
  ToolRegistry tools;
  std::unique_ptr<EngineCore> engine;
  std::unique_ptr<DirectTransport> transport;
  std::unique_ptr<EventSubscription> subscription;
  EventLog log;

 private:
  void register_test_tools() {
    auto add = [&](ToolSpec spec, LambdaTool::Body body) {
      auto registered = tools.register_tool(std::make_shared<LambdaTool>(std::move(spec), std::move(body)));
      EXPECT_TRUE(registered) << registered.error().to_string();
    };
    add(simple_spec("echo"), [](ToolCallContext, nlohmann::json params, auto done) {
      done(text_result("echo: " + params.value("text", ""), {{"echoed", params.value("text", "")}}));
    });
    add(simple_spec("fail"), [](ToolCallContext, nlohmann::json, auto done) {
      done(fail("test.tool_failed", "the tool failed on purpose"));
    });
    add(simple_spec("throw"), [](ToolCallContext, nlohmann::json, auto) -> void {
      throw std::runtime_error("the tool threw on purpose");
    });
    add(simple_spec("write_note", ToolEffects::kWrite),
        [](ToolCallContext, nlohmann::json, auto done) { done(text_result("note written")); });
    add(simple_spec("big"),
        [](ToolCallContext, nlohmann::json, auto done) { done(text_result(std::string(100000, 'x'))); });
    // Each reports progress, then waits until the turn is interrupted; block is retry-safe (a read),
    // block_write never-retry (a write).
    for (auto [name, effects] :
         {std::pair{"block", ToolEffects::kRead}, std::pair{"block_write", ToolEffects::kWrite}}) {
      add(simple_spec(name, effects), [this](ToolCallContext context, nlohmann::json, auto done) {
        context.progress(ToolProgress{"working", nullptr});
        auto shared_done = std::make_shared<std::function<void(Result<ToolResult>)>>(std::move(done));
        auto registration = std::make_shared<CancellationRegistration>();
        *registration =
            context.cancel.on_cancel([shared_done] { (*shared_done)(fail(codes::kCancelled, "cancelled")); });
        MutexLock guard(blocked_mu_);
        blocked_.push_back(registration);
      });
    }
  }

  HarnessOptions options_;
  AllowAllGatekeeper allow_all_;
  std::unique_ptr<Store> store_;
  int submissions_ = 0;
  Mutex blocked_mu_;
  std::vector<std::shared_ptr<CancellationRegistration>> blocked_ GUARDED_BY(blocked_mu_);
};

}  // namespace keel::testing
