// keel_crash_agent DIR [--kill-on-ack ID] — the process the crash harness kills: a whole engine on
// DIR/keel.db (synchronous FULL) playing the scenario of crash_scenario.h as its own client, then waiting
// until the thread is at rest.
//
// It is started again and again on the same DIR: each start first checks, before the engine recovers, that
// an ACKed interrupt held (check_interrupt_held), lets the engine recover, sends every scenario command not
// yet answered (under its fixed submission id, so a command answered just before the last death replays
// its receipt), resumes the interrupted run once the interrupt took effect, resolves runs that recovery
// paused as uncertain (mark_done: a person who checked and saw the write happen), approves every approval
// request (the gatekeeper asks for each never-retry write), and exits 0 once every run ended and the queue
// is empty.
// Fail points come from KEEL_FAILPOINTS (store boundaries and the engine's crash points); after a clean
// finish, DIR/hits.json says how often each point was reached, so the harness knows where it can kill.
// --kill-on-ack ID is the agent's own kill point: right after the answer to command ID (crash_scenario.h).
#include <fcntl.h>
#include <signal.h>
#include <sqlite3.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "crash/crash_invariants.h"
#include "crash/crash_scenario.h"
#include "engine/engine_core.h"
#include "keel/clock.h"
#include "keel/ids.h"
#include "keel/sqlite_store.h"
#include "keel/store.h"
#include "keel/tool.h"
#include "keel/tool_registry.h"
#include "policy/gatekeeper.h"
#include "store/queue_repository.h"
#include "store/run_repository.h"
#include "transport/direct_transport.h"
#include "util/fail_points.h"

namespace keel::crash {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

// Appends `line` to `path` and makes it durable before returning: what the harness counts must survive
// the SIGKILL that may follow at once.
void append_durably(const fs::path& path, const std::string& line) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    std::perror("open");
    std::_Exit(kExitSetupFailed);
  }
  const std::string text = line + "\n";
  if (::write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size()) || ::fsync(fd) != 0) {
    std::perror("write");
    std::_Exit(kExitSetupFailed);
  }
  ::close(fd);
}

// A write tool whose side effect is a line in effects.log.
class RecordingTool final : public AgentTool {
 public:
  RecordingTool(std::string name, ToolRecovery recovery, fs::path effects) : effects_(std::move(effects)) {
    spec_.name = std::move(name);
    spec_.label = spec_.name;
    spec_.description = "records that it ran";
    spec_.parameters = {{"type", "object"},
                        {"properties", {{"text", {{"type", "string"}}}}},
                        {"additionalProperties", false}};
    spec_.effects = ToolEffects::kWrite;
    spec_.recovery = recovery;
  }
  const ToolSpec& spec() const override { return spec_; }
  void execute(ToolCallContext context, json params, std::function<void(Result<ToolResult>)> done) override {
    append_durably(effects_, spec_.name + " " + context.tool_call_id);
    done(text_result("recorded " + params.value("text", "")));
  }

 private:
  ToolSpec spec_;
  fs::path effects_;
};

// The state-free model: for the last "task N" input, the k-th response of its turn is
//   k = 0: record_safe and record_inspect in parallel; k = 1: record_once; k >= 2: the final text.
class CrashModel final : public Provider {
 public:
  std::string name() const override { return "crash-model"; }
  void stream(ProviderRequest request, CancellationToken, std::shared_ptr<ProviderSink> sink) override {
    std::string label = "?";
    size_t responses = 0;
    for (const Message& message : request.messages) {
      if (message.role == Role::kAssistant) ++responses;
      if (message.role != Role::kUser || message.content.empty()) continue;
      const std::string& text = message.content.front().text;
      if (text.starts_with("task ")) {
        label = text.substr(5);
        responses = 0;
      }
    }
    using namespace provider_event;
    auto call = [&](int index, const char* tool, const std::string& suffix) {
      sink->on_event(ToolCallStart{index, "call-" + label + "-" + suffix, tool});
      sink->on_event(ToolCallDelta{index, json{{"text", label + "/" + suffix}}.dump()});
      sink->on_event(ToolCallEnd{index});
    };
    if (responses == 0) {
      call(0, kRecordSafe, "a");
      call(1, kRecordInspect, "b");
    } else if (responses == 1) {
      call(0, kRecordOnce, "c");
    } else {
      sink->on_event(TextDelta{"finished task " + label});
    }
    sink->on_event(Usage{TokenUsage{.input_tokens = 10, .output_tokens = 5}});
    const bool calls = responses < 2;
    sink->on_event(Finish{calls ? StopReason::kToolUse : StopReason::kEnd, calls ? "tool_use" : "stop"});
    sink->on_done({});
  }
};

// Asks for every never-retry write (the person approves it), allows the rest: approvals must survive the
// kills too, and be decided once.
class AskForNeverRetry final : public Gatekeeper {
 public:
  GateVerdict check(const GateRequest& request) override {
    if (request.descriptor->recovery != ToolRecovery::kNeverRetry) return {};
    return GateVerdict{.kind = GateVerdict::Kind::kAsk, .reason = "a write that must not run twice"};
  }
};

// Answers to this process's commands, by submission id.
class Answers {
 public:
  void on_event(const AgentEvent& event) {
    std::lock_guard<std::mutex> guard(mu_);
    ++events_;
    if (event.type == "command.ack" || event.type == "command.rejected") {
      answers_[event.payload.value("submissionId", "")] = event;
    }
    cv_.notify_all();
  }
  // Waits until some event arrives after `seen` (or `bound` passed); returns the count to pass next time.
  uint64_t wait_for_event(uint64_t seen, std::chrono::milliseconds bound) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, bound, [&] { return events_ > seen; });
    return events_;
  }
  std::optional<AgentEvent> wait(const std::string& submission,
                                 std::chrono::milliseconds bound = std::chrono::seconds(60)) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_for(lock, bound, [&] { return answers_.contains(submission); })) return std::nullopt;
    return answers_.at(submission);
  }
  // Forgets the answer to `submission`, before it is sent again.
  void forget(const std::string& submission) {
    std::lock_guard<std::mutex> guard(mu_);
    answers_.erase(submission);
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, AgentEvent> answers_;
  uint64_t events_ = 0;
};

// The store's write lock, taken by a connection of its own (not the engine's Store, so it holds whatever
// the engine does): while it is held no transaction of the engine can commit. Released when destroyed.
class StoreWriteLock {
 public:
  explicit StoreWriteLock(const fs::path& db) {
    sqlite3* raw = nullptr;
    const int opened = sqlite3_open_v2(db.c_str(), &raw, SQLITE_OPEN_READWRITE, nullptr);
    db_.reset(raw);  // sqlite3_open_v2 gives a handle to close even when it fails
    if (opened != SQLITE_OK) return;
    sqlite3_busy_timeout(raw, 10000);
    held_ = sqlite3_exec(raw, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) == SQLITE_OK;
  }
  ~StoreWriteLock() {
    if (held_) sqlite3_exec(db_.get(), "ROLLBACK", nullptr, nullptr, nullptr);
  }
  StoreWriteLock(const StoreWriteLock&) = delete;
  StoreWriteLock& operator=(const StoreWriteLock&) = delete;
  bool held() const { return held_; }

 private:
  struct Close {
    void operator()(sqlite3* db) const { sqlite3_close(db); }
  };
  std::unique_ptr<sqlite3, Close> db_;
  bool held_ = false;
};

class Driver {
 public:
  Driver(fs::path dir, Store& store, EngineTransport& transport, Answers& answers, const Clock& clock,
         std::string kill_on_ack)
      : dir_(std::move(dir)),
        store_(store),
        transport_(transport),
        answers_(answers),
        runs_(clock),
        queue_(clock),
        kill_on_ack_(std::move(kill_on_ack)) {}

  int run() {
    load_acks();
    for (const ScenarioCommand& command : scenario_commands()) {
      if (acks_.contains(command.id)) continue;
      auto params = params_for(command);
      if (!params) continue;  // what it builds on was refused; the checker sees it unanswered
      if (command.method == "run.resume") wait_until_interrupted();
      if (command.id == kill_on_ack_ && command.method == "turn.interrupt") wait_until_waiting();
      if (!request(command.id, command.method, *params)) return kExitNoAnswer;
    }
    return settle();
  }

 private:
  void load_acks() {
    std::ifstream in(dir_ / kAcksFile);
    for (std::string line; std::getline(in, line);) {
      // A line cut short by a death mid-write is not an answer the agent relied on.
      json entry = json::parse(line, nullptr, false);
      if (!entry.is_discarded()) acks_[entry.value("id", "")] = entry;
    }
  }

  std::optional<std::string> result_field(const std::string& command_id, const char* field) const {
    auto it = acks_.find(command_id);
    if (it == acks_.end() || it->second.value("answer", "") != "ack") return std::nullopt;
    const json& result = it->second["payload"]["result"];
    if (!result.contains(field)) return std::nullopt;
    return result[field].get<std::string>();
  }

  std::optional<json> params_for(const ScenarioCommand& command) const {
    if (command.method == "thread.create") return json{{"title", "crash scenario"}};
    auto thread = result_field("create", "threadId");
    if (!thread) return std::nullopt;
    json params = {{"threadId", *thread}};
    if (!command.text.empty()) params["input"] = command.text;
    if (command.method == "turn.steer" || command.method == "turn.interrupt") {
      auto turn = result_field("submit-1", "turnId");
      if (!turn) return std::nullopt;
      params[command.method == "turn.steer" ? "expectedTurnId" : "turnId"] = *turn;
    }
    if (command.method == "run.resume") {
      auto run = result_field("submit-1", "runId");
      if (!run) return std::nullopt;
      params["runId"] = *run;
    }
    return params;
  }

  std::optional<RunRecord> run_of_turn_1() {
    auto thread = result_field("create", "threadId");
    auto turn = result_field("submit-1", "turnId");
    if (!thread || !turn) return std::nullopt;
    auto tx = store_.begin(TxMode::kRead);
    if (!tx) return std::nullopt;
    auto listed = runs_.list_by_thread(**tx, *thread);
    if (!listed) return std::nullopt;
    for (const RunRecord& run : *listed) {
      if (run.turn_id == *turn) return run;
    }
    return std::nullopt;
  }

  // Waits (boundedly) until turn 1's run is in `done`'s states, re-reading the store at each event.
  template <typename Done>
  void wait_for_turn_1(Done done, std::chrono::seconds bound) {
    const auto deadline = std::chrono::steady_clock::now() + bound;
    uint64_t seen = answers_.wait_for_event(0, std::chrono::milliseconds(0));
    while (std::chrono::steady_clock::now() < deadline) {
      if (auto run = run_of_turn_1(); run && done(run->state)) return;
      seen = answers_.wait_for_event(seen, std::chrono::milliseconds(20));
    }
  }

  // A client resumes a run once its interrupt took effect: when this process saw the interrupt ACKed, the
  // run reaches `interrupted` (or ended otherwise) shortly after. An interrupt ACKed by an earlier process
  // took effect before the restart or never will (check_interrupt_held reported it): no wait then.
  void wait_until_interrupted() {
    if (!interrupted_here_) return;
    wait_for_turn_1([](RunState state) { return at_rest(state) || state == RunState::kPausedUncertain; },
                    std::chrono::seconds(60));
  }

  // The kill after an interrupt's ACK tests the interrupt of a turn that holds still (its approval wait):
  // with no runner committing meanwhile, what the store has at the kill is what the interrupt wrote.
  void wait_until_waiting() {
    wait_for_turn_1([](RunState state) { return state == RunState::kWaitingApproval || at_rest(state); },
                    std::chrono::seconds(10));
  }

  // Sends a command under `submission` and logs its answer durably. False when no answer came.
  bool request(const std::string& submission, const std::string& method, const json& params) {
    append_durably(dir_ / kSentFile, submission);  // before it is sent: it may take effect from now on
    if (submission == kill_on_ack_) return request_then_die(submission, method, params);
    auto answer = send_and_wait(submission, method, params);
    if (!answer) {
      std::cerr << "no answer to " << method << " " << submission << "\n";
      return false;
    }
    const json& entry = log_answer(submission, *answer);
    if (method == "turn.interrupt" && entry["answer"] == "ack") {
      interrupted_here_ = answer->payload["result"].value("interrupted", false);
    }
    return true;
  }

  const json& log_answer(const std::string& submission, const AgentEvent& answer) {
    json entry = {{"id", submission},
                  {"answer", answer.type == "command.ack" ? "ack" : "rejected"},
                  {"payload", answer.payload}};
    append_durably(dir_ / kAcksFile, entry.dump());
    return acks_[submission] = std::move(entry);
  }

  // The agent's own kill point: the command is sent while the store cannot commit, and the process dies
  // right after it logged the answer. An ACK that arrives while the lock is held did not wait for its write
  // to be durable, and the kill, with the lock still held, finds the write missing every time; an ACK that
  // waited for its write comes after the lock is let go, and the write is there.
  bool request_then_die(const std::string& submission, const std::string& method, const json& params) {
    {
      StoreWriteLock lock(dir_ / kStoreFile);
      if (!lock.held()) std::cerr << "the store's write lock was not taken\n";
      transport_.send(Op{method, "crash-agent", submission, params});
      if (auto answer = answers_.wait(submission, std::chrono::milliseconds(kHoldStoreMs))) {
        log_answer(submission, *answer);
        ::raise(SIGKILL);
      }
    }
    auto answer = answers_.wait(submission);
    if (!answer) {
      std::cerr << "no answer to " << method << " " << submission << "\n";
      return false;
    }
    log_answer(submission, *answer);
    ::raise(SIGKILL);
    return false;
  }

  std::optional<AgentEvent> send_and_wait(const std::string& submission, const std::string& method,
                                          const json& params) {
    std::optional<AgentEvent> answer;
    // The engine lets a turn go just after its turn.complete and its run's state are out, so a resume
    // sent at once may still find it busy; a client tries again (the refusal wrote nothing). Bounded.
    for (int attempt = 0; attempt < 500; ++attempt) {
      answers_.forget(submission);
      transport_.send(Op{method, "crash-agent", submission, params});
      answer = answers_.wait(submission);
      if (!answer || method != "run.resume" || answer->type != "command.rejected" ||
          answer->payload["error"].value("code", "") != "turn.busy") {
        break;
      }
      answers_.wait_for_event(answers_.wait_for_event(0, std::chrono::milliseconds(0)),
                              std::chrono::milliseconds(10));
    }
    return answer;
  }

  static std::string describe(const std::vector<RunRecord>& runs, int64_t queued) {
    std::string text = std::to_string(queued) + " queued;";
    for (const RunRecord& run : runs) {
      text += " run " + run.id + " " + std::string(to_string(run.state));
      if (run.error) text += " (" + *run.error + ")";
      if (run.pending_tool) {
        auto stored = encode_pending_tool(*run.pending_tool);
        text += " pending " + (stored ? stored->dump() : stored.error().to_string());
      }
      text += ";";
    }
    return text;
  }

  static bool at_rest(RunState state) {
    return state == RunState::kCompleted || state == RunState::kFailed || state == RunState::kInterrupted;
  }

  // Waits until every run of the thread ended and its queue is empty, resolving uncertain runs on the way.
  int settle() {
    auto thread = result_field("create", "threadId");
    if (!thread) return 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    std::string last_seen;
    uint64_t seen = answers_.wait_for_event(0, std::chrono::milliseconds(0));
    while (std::chrono::steady_clock::now() < deadline) {
      std::vector<RunRecord> runs;
      int64_t queued = 0;
      {
        auto tx = store_.begin(TxMode::kRead);
        if (!tx) return kExitSetupFailed;
        auto listed = runs_.list_by_thread(**tx, *thread);
        auto counted = queue_.count(**tx, *thread);
        if (!listed || !counted) return kExitSetupFailed;
        runs = std::move(*listed);
        queued = *counted;
      }
      if (queued > 8)
        append_durably(dir_ / kObservedFile, "queue holds " + std::to_string(queued) + " inputs");
      bool resting = queued == 0;
      for (const RunRecord& run : runs) {
        if (run.state == RunState::kWaitingApproval && run.pending_tool &&
            run.pending_tool->waits_for(WaitKind::kApproval)) {
          const std::string approval = run.pending_tool->wait->id;
          if (!request("approve-" + approval, "approval.response",
                       {{"threadId", *thread}, {"approvalId", approval}, {"decision", "accept"}})) {
            return kExitNoAnswer;
          }
        }
        if (run.state == RunState::kPausedUncertain) {
          if (!request("resolve-" + run.id, "run.resolveUncertain",
                       {{"threadId", *thread}, {"runId", run.id}, {"resolution", "mark_done"}})) {
            return kExitNoAnswer;
          }
        }
        resting = resting && at_rest(run.state);
      }
      if (resting) return 0;
      last_seen = describe(runs, queued);
      // A queue held behind a failed run, or behind an interrupted one the resume did not continue, would
      // wait for a person forever: the checker reports the run.
      if (!runs.empty() && queued > 0 &&
          (runs.back().state == RunState::kFailed ||
           (runs.back().state == RunState::kInterrupted && acks_.contains("resume-1")))) {
        return 0;
      }
      // The store is read again when the engine reports anything (a run moved, an approval was asked).
      seen = answers_.wait_for_event(seen, std::chrono::milliseconds(20));
    }
    std::cerr << "the thread did not come to rest: " << last_seen << "\n";
    return kExitNotSettled;
  }

  fs::path dir_;
  Store& store_;
  EngineTransport& transport_;
  Answers& answers_;
  RunRepository runs_;
  QueueRepository queue_;
  const std::string kill_on_ack_;  // "" when the agent does not kill itself
  std::map<std::string, json> acks_;
  bool interrupted_here_ = false;  // this process saw an interrupt ACKed as interrupted
};

void write_hits(const fs::path& dir, const FailPoints& points) {
  json hits = json::object();
  for (const std::string& name : points.names_seen()) hits[name] = points.hits(name);
  std::ofstream(dir / kHitsFile) << hits.dump(2) << "\n";
}

int run_agent(const fs::path& dir, const std::string& kill_on_ack) {
  // Before the engine opens the store and recovers what the last process left.
  for (const std::string& violation : check_interrupt_held(dir))
    append_durably(dir / kObservedFile, violation);
  FailPoints fail_points;
  if (auto armed = fail_points.arm_from_env(); !armed) {
    std::cerr << armed.error().to_string() << "\n";
    return kExitSetupFailed;
  }
  SystemClock clock;
  UuidV7Source ids(clock);
  auto store = open_sqlite_store(
      {.path = (dir / kStoreFile).string(), .synchronous = Synchronous::kFull, .fail_points = &fail_points});
  if (!store) {
    std::cerr << store.error().to_string() << "\n";
    return kExitSetupFailed;
  }
  ToolRegistry tools;
  for (auto [name, recovery] : {std::pair{kRecordSafe, ToolRecovery::kRetrySafe},
                                std::pair{kRecordInspect, ToolRecovery::kInspectFirst},
                                std::pair{kRecordOnce, ToolRecovery::kNeverRetry}}) {
    auto registered =
        tools.register_tool(std::make_shared<RecordingTool>(name, recovery, dir / kEffectsFile));
    if (!registered) {
      std::cerr << registered.error().to_string() << "\n";
      return kExitSetupFailed;
    }
  }
  CrashModel model;
  AskForNeverRetry gatekeeper;
  int status = 0;
  {
    EngineCore engine(EngineDeps{.store = store->get(),
                                 .provider = &model,
                                 .tools = &tools,
                                 .gatekeeper = &gatekeeper,
                                 .clock = &clock,
                                 .ids = &ids,
                                 .fail_points = &fail_points},
                      EngineOptions{});
    DirectTransport transport(engine);
    Answers answers;
    auto subscription = transport.on_event([&answers](const AgentEvent& event) { answers.on_event(event); });
    Driver driver(dir, **store, transport, answers, clock, kill_on_ack);
    status = driver.run();
  }
  if (status == 0) write_hits(dir, fail_points);
  return status;
}

}  // namespace
}  // namespace keel::crash

int main(int argc, char** argv) {
  const bool kill = argc == 4 && std::string(argv[2]) == keel::crash::kKillOnAckFlag;
  if (argc != 2 && !kill) {
    std::cerr << "usage: keel_crash_agent DIR [" << keel::crash::kKillOnAckFlag << " COMMAND_ID]\n";
    return 2;
  }
  return keel::crash::run_agent(argv[1], kill ? argv[3] : "");
}
