// The crash harness (spec §5): runs keel_crash_agent through its scenario (crash_scenario.h) and kills it
// with SIGKILL at every named fail point in turn — each boundary at each of its hits —, right after the
// answer to each scenario command (the agent's own kill point), and at random moments, restarts it until it
// finishes, and checks the invariants of crash_invariants.h after each schedule. The campaign ends with one
// summary line: its seed, how many kills of each kind it made and how many violations it found (the
// interrupt-ACK ones counted apart).
//
// CI runs a bounded slice: every named point at an evenly spread subset of its hits, every ACK, and a few
// random kill chains. KEEL_CRASH_FULL=1 runs the whole campaign (every hit of every point, and random chains
// until at least 1,000 random kills); KEEL_CRASH_SEED replays a random schedule.
//
// The checker's own tests build the agent's files by hand (store, answers, effects), so their verdicts do
// not depend on how a run of the engine happened to interleave.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "crash/crash_invariants.h"
#include "crash/crash_scenario.h"
#include "keel/clock.h"
#include "keel/sqlite_store.h"
#include "keel/store.h"
#include "store/node_body.h"
#include "store/run_repository.h"
#include "store/thread_repository.h"
#include "testing/child_process.h"
#include "testing/temp_dir.h"

namespace keel::crash {
namespace {

#ifndef KEEL_CRASH_AGENT
#error "KEEL_CRASH_AGENT must name the keel_crash_agent executable"
#endif

namespace fs = std::filesystem;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

bool full_campaign() {
  const char* full = std::getenv("KEEL_CRASH_FULL");
  return full != nullptr && std::string(full) == "1";
}

// How one start of the agent ended.
struct Exit {
  bool killed = false;  // by SIGKILL (a fail point, the agent's own kill point, or the harness)
  int status = -1;      // exit status when it exited
  bool finished() const { return !killed && status == 0; }
  std::string describe() const { return killed ? "killed" : "exit " + std::to_string(status); }
};

// One start of keel_crash_agent on `dir` (with `args` after DIR), its output appended to dir/agent.log.
class AgentProcess {
 public:
  AgentProcess(const fs::path& dir, const std::optional<std::string>& failpoints,
               const std::vector<std::string>& args = {}) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    const std::string log = (dir / "agent.log").string();
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_APPEND,
                                     0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    std::vector<std::string> argv = {dir.string()};
    argv.insert(argv.end(), args.begin(), args.end());
    auto spawned = testing::spawn_child(KEEL_CRASH_AGENT, argv, failpoints, &actions);
    posix_spawn_file_actions_destroy(&actions);
    if (!spawned) {
      ADD_FAILURE() << spawned.error().to_string();
      return;
    }
    pid_ = *spawned;
  }
  AgentProcess(const AgentProcess&) = delete;
  AgentProcess& operator=(const AgentProcess&) = delete;
  ~AgentProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      wait();
    }
  }

  // Waits for the process to end (a hang guard kills it after two minutes and reports it).
  Exit wait() {
    Exit exit;
    if (pid_ <= 0) return exit;
    const auto deadline = Clock::now() + std::chrono::minutes(2);
    int status = 0;
    while (::waitpid(pid_, &status, WNOHANG) == 0) {
      if (Clock::now() > deadline) {
        ADD_FAILURE() << "the crash agent hung";
        ::kill(pid_, SIGKILL);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    pid_ = -1;
    exit.killed = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
    exit.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return exit;
  }

  // Kills the process after `delay` unless it ended first; returns how it ended.
  Exit kill_after(std::chrono::microseconds delay) {
    const auto at = Clock::now() + delay;
    int status = 0;
    while (Clock::now() < at) {
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return Exit{.killed = WIFSIGNALED(status), .status = WIFEXITED(status) ? WEXITSTATUS(status) : -1};
      }
      std::this_thread::sleep_for(std::min<std::chrono::microseconds>(std::chrono::microseconds(200), delay));
    }
    ::kill(pid_, SIGKILL);
    return wait();
  }

 private:
  pid_t pid_ = -1;
};

// Restarts the agent without fail points until it finishes (a finished scenario stays finished).
bool run_to_completion(const fs::path& dir, std::string& why) {
  for (int start = 0; start < 3; ++start) {
    AgentProcess agent(dir, std::nullopt);
    const Exit exit = agent.wait();
    if (exit.finished()) return true;
    why = "restart ended with " + exit.describe();
  }
  return false;
}

std::string agent_log(const fs::path& dir) {
  std::ifstream in(dir / "agent.log");
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The logged answer to command `id`, or null.
json answer_to(const fs::path& dir, const std::string& id) {
  json found;
  std::ifstream in(dir / kAcksFile);
  for (std::string line; std::getline(in, line);) {
    json entry = json::parse(line, nullptr, false);
    if (!entry.is_discarded() && entry.value("id", "") == id) found = entry;
  }
  return found;
}

// Collects violations across a campaign, each labelled with the schedule that produced it.
struct Campaign {
  std::vector<std::string> violations;
  int interrupt_violations = 0;
  void check(const fs::path& dir, const std::string& label) {
    std::string why;
    if (!run_to_completion(dir, why)) {
      violations.push_back(label + ": never finished (" + why + ")\n" + agent_log(dir));
      return;
    }
    const CrashCheck check = check_crash_invariants(dir);
    interrupt_violations += check.interrupt_violations;
    for (const std::string& v : check.violations) violations.push_back(label + ": " + v);
  }
  void report() const {
    for (const std::string& v : violations) ADD_FAILURE() << v;
  }
};

// ---- the checker, on files built by hand -------------------------------------------------------------

ContentBlock text(std::string value) {
  ContentBlock block;
  block.kind = ContentBlock::Kind::kText;
  block.text = std::move(value);
  return block;
}

// Writes what a finished scenario leaves, as the engine and the agent would have written it, without
// running either: three completed turns (record_safe and record_inspect, then record_once after its
// approval, then the final text), steers 1 and 2 inside turn 1, every command ACKed (the interrupt of turn 1
// and its resume too), one effect per call. Tests then change one thing and see what the checker says.
class ScenarioFiles {
 public:
  explicit ScenarioFiles(fs::path dir) : dir_(std::move(dir)) {}

  // The store; turn 1's run is left in `turn_1_state` and its later turns are not written unless it is
  // completed (a store as a crash left it).
  void write_store(RunState turn_1_state = RunState::kCompleted) {
    auto store = open_sqlite_store({.path = (dir_ / kStoreFile).string()});
    ASSERT_TRUE(store) << store.error().to_string();
    auto tx = (*store)->begin(TxMode::kWrite);
    ASSERT_TRUE(tx) << tx.error().to_string();
    ThreadRepository threads(clock_);
    ASSERT_TRUE(threads.create(**tx, "thread-1", "crash scenario"));
    for (int turn = 1; turn <= 3; ++turn) {
      const RunState state = turn == 1 ? turn_1_state : RunState::kCompleted;
      write_turn(**tx, turn, state);
      if (state != RunState::kCompleted) break;
    }
    auto committed = (*tx)->commit();
    ASSERT_TRUE(committed) << committed.error().to_string();
  }

  void write_answers() {
    answer("create", {{"threadId", "thread-1"}});
    answer("submit-1", {{"turnId", "turn-1"}, {"runId", "run-1"}, {"userNodeId", "node-1-user"}});
    answer("steer-1", {{"steerId", "steer-id-1"}});
    answer("steer-2", {{"steerId", "steer-id-2"}});
    answer("interrupt-1", {{"interrupted", true}, {"turnId", "turn-1"}});
    answer("resume-1", {{"turnId", "turn-1"}, {"runId", "run-1"}});
    answer("enqueue-2", {{"itemId", "queued-2"}});
    answer("enqueue-3", {{"itemId", "queued-3"}});
  }

  void write_effects() {
    for (int turn = 1; turn <= 3; ++turn) {
      for (const auto& [tool, suffix] :
           {std::pair{kRecordSafe, "a"}, std::pair{kRecordInspect, "b"}, std::pair{kRecordOnce, "c"}}) {
        effect(tool, call_id(turn, suffix));
      }
    }
  }

  // One more line of each file.
  void answer(const std::string& id, json result, const std::string& kind = "ack") {
    sent(id);
    append(kAcksFile,
           json{{"id", id}, {"answer", kind}, {"payload", {{"result", std::move(result)}}}}.dump());
  }
  void sent(const std::string& id) { append(kSentFile, id); }
  void effect(const std::string& tool, const std::string& call) { append(kEffectsFile, tool + " " + call); }

  static std::string call_id(int turn, const std::string& suffix) {
    return "call-" + std::to_string(turn) + "-" + suffix;
  }

 private:
  void append(const char* file, const std::string& line) {
    std::ofstream(dir_ / file, std::ios::app) << line << "\n";
  }

  void node(Transaction& tx, const std::string& id, NodeKind kind, Result<json> body,
            const std::string& run) {
    ASSERT_TRUE(body) << body.error().to_string();
    NewNode node;
    node.id = id;
    node.thread_id = "thread-1";
    node.kind = kind;
    node.body = std::move(*body);
    node.run_id = run;
    auto appended = ThreadRepository(clock_).append(tx, std::move(node));
    ASSERT_TRUE(appended) << appended.error().to_string();
  }

  void write_turn(Transaction& tx, int turn, RunState state) {
    const std::string n = std::to_string(turn);
    const std::string run_id = "run-" + n;
    RunRepository runs(clock_);
    RunRecord record;
    record.id = run_id;
    record.thread_id = "thread-1";
    record.turn_id = "turn-" + n;
    record.state = RunState::kStreamingModel;
    auto run = runs.create(tx, record);
    ASSERT_TRUE(run) << run.error().to_string();
    node(tx, "node-" + n + "-user", NodeKind::kUserMessage,
         encode_user_message({.content = {text("task " + n)}}), run_id);
    // The first response: two calls in parallel, and their results.
    const std::string first = "node-" + n + "-response-1";
    node(tx, first, NodeKind::kAssistantMessage,
         encode_assistant_message(
             {.stop_reason = AssistantStopReason::kToolUse, .provider_stop_reason = "tool_use"}),
         run_id);
    for (const auto& [tool, suffix] : {std::pair{kRecordSafe, "a"}, std::pair{kRecordInspect, "b"}}) {
      node(
          tx, call_id(turn, suffix), NodeKind::kToolCall,
          encode_tool_call({.tool_call_id = call_id(turn, suffix), .name = tool, .assistant_node_id = first}),
          run_id);
    }
    for (const char* suffix : {"a", "b"}) {
      node(tx, call_id(turn, suffix) + "-result", NodeKind::kToolResult,
           encode_tool_result({.tool_call_id = call_id(turn, suffix), .content = {text("recorded")}}),
           run_id);
    }
    if (turn == 1) {  // the steers, taken at the safe point after the results
      for (const char* steer : {"1", "2"}) {
        node(tx, std::string("node-steer-") + steer, NodeKind::kUserMessage,
             encode_user_message({.content = {text(std::string("steer ") + steer)},
                                  .steered = true,
                                  .steer_id = std::string("steer-id-") + steer}),
             run_id);
      }
    }
    // The second response: the never-retry call, its approval, its result.
    const std::string second = "node-" + n + "-response-2";
    node(tx, second, NodeKind::kAssistantMessage,
         encode_assistant_message(
             {.stop_reason = AssistantStopReason::kToolUse, .provider_stop_reason = "tool_use"}),
         run_id);
    node(tx, call_id(turn, "c"), NodeKind::kToolCall,
         encode_tool_call(
             {.tool_call_id = call_id(turn, "c"), .name = kRecordOnce, .assistant_node_id = second}),
         run_id);
    if (state != RunState::kCompleted) {  // a crash left the turn waiting for the approval
      auto moved = runs.transition(tx, run_id, run->revision, state, {});
      ASSERT_TRUE(moved) << moved.error().to_string();
      return;
    }
    node(tx, "node-" + n + "-decision", NodeKind::kApprovalDecision,
         json{{"approvalId", "approval-" + n}, {"toolCallId", call_id(turn, "c")}, {"decision", "accept"}},
         run_id);
    node(tx, call_id(turn, "c") + "-result", NodeKind::kToolResult,
         encode_tool_result({.tool_call_id = call_id(turn, "c"), .content = {text("recorded")}}), run_id);
    node(tx, "node-" + n + "-response-3", NodeKind::kAssistantMessage,
         encode_assistant_message({.content = {text("finished task " + n)}, .provider_stop_reason = "stop"}),
         run_id);
    auto done = runs.transition(tx, run_id, run->revision, RunState::kCompleted, {});
    ASSERT_TRUE(done) << done.error().to_string();
  }

  fs::path dir_;
  SystemClock clock_;
};

TEST(CrashChecker, AcceptsAFinishedScenarioWhereEveryInvariantHolds) {
  testing::TempDir dir;
  ScenarioFiles files(dir.path());
  ASSERT_NO_FATAL_FAILURE(files.write_store());
  files.write_answers();
  files.write_effects();
  const CrashCheck check = check_crash_invariants(dir.path());
  EXPECT_TRUE(check.violations.empty()) << ::testing::PrintToString(check.violations);
  EXPECT_EQ(check.turns_completed, 3);
  EXPECT_EQ(check.steers_acked, 2);
  EXPECT_EQ(check.effects, 9);
}

// Issue 14 point 22: built by hand, so a steer refused under load cannot change the verdict.
TEST(CrashChecker, FindsADoubleExecutedWriteAndALostAck) {
  testing::TempDir dir;
  ScenarioFiles files(dir.path());
  ASSERT_NO_FATAL_FAILURE(files.write_store());
  files.write_answers();
  files.write_effects();
  // A never-retry call that ran twice.
  files.effect(kRecordOnce, ScenarioFiles::call_id(2, "c"));
  // And an ACKed steer whose admission the store does not have (the last answer to an id counts).
  files.answer("steer-2", {{"steerId", "lost"}});
  const auto violations = check_crash_invariants(dir.path()).violations;
  ASSERT_EQ(violations.size(), 2u) << ::testing::PrintToString(violations);
  EXPECT_EQ(violations[0], "record_once call-2-c executed 2 times");
  EXPECT_EQ(violations[1], "steer-2 lost its steer id");
}

TEST(CrashChecker, FindsANeverRetryCallThatRanWithoutItsApprovalOrWasDecidedTwice) {
  testing::TempDir dir;
  ScenarioFiles files(dir.path());
  ASSERT_NO_FATAL_FAILURE(files.write_store(RunState::kWaitingApproval));
  files.write_answers();
  {
    // Turn 1's never-retry call gets a result with no decision, and turn 1 a second decision for call a.
    auto store = open_sqlite_store({.path = (dir.path() / kStoreFile).string()});
    ASSERT_TRUE(store);
    auto tx = (*store)->begin(TxMode::kWrite);
    ASSERT_TRUE(tx);
    SystemClock clock;
    ThreadRepository threads(clock);
    NewNode result;
    result.id = "call-1-c-result";
    result.thread_id = "thread-1";
    result.kind = NodeKind::kToolResult;
    result.body = *encode_tool_result({.tool_call_id = "call-1-c", .content = {text("recorded")}});
    ASSERT_TRUE(threads.append(**tx, result));
    for (const char* id : {"decision-x", "decision-y"}) {
      NewNode decision;
      decision.id = id;
      decision.thread_id = "thread-1";
      decision.kind = NodeKind::kApprovalDecision;
      decision.body = {{"toolCallId", "call-1-a"}, {"decision", "accept"}};
      ASSERT_TRUE(threads.append(**tx, decision));
    }
    ASSERT_TRUE((*tx)->commit());
  }
  const auto violations = check_crash_invariants(dir.path()).violations;
  auto has = [&](const std::string& text) {
    return std::find(violations.begin(), violations.end(), text) != violations.end();
  };
  EXPECT_TRUE(has("a decision for call-1-a, which is not a never-retry call on the path"))
      << ::testing::PrintToString(violations);
  EXPECT_TRUE(has("call-1-a was decided 2 times")) << ::testing::PrintToString(violations);
  EXPECT_TRUE(has("call-1-c asked for approval but no decision is on the path"))
      << ::testing::PrintToString(violations);
}

// Spec §3, §5: the store as a SIGKILL right after an interrupt's ACK left it, before any recovery.
TEST(CrashChecker, FindsAnAckedInterruptWhoseRunIsNotInterruptedAfterARestart) {
  testing::TempDir dir;
  ScenarioFiles files(dir.path());
  // The run still waits for its approval: a recovery would continue it by itself.
  ASSERT_NO_FATAL_FAILURE(files.write_store(RunState::kWaitingApproval));
  files.answer("create", {{"threadId", "thread-1"}});
  files.answer("submit-1", {{"turnId", "turn-1"}, {"runId", "run-1"}});
  files.answer("interrupt-1", {{"interrupted", true}, {"turnId", "turn-1"}});
  const auto violations = check_interrupt_held(dir.path());
  ASSERT_EQ(violations.size(), 1u) << ::testing::PrintToString(violations);
  EXPECT_EQ(violations[0], std::string(kInterruptTag) +
                               "interrupt-1 was ACKed, but after the restart run run-1 is waiting_approval, "
                               "not interrupted");
  // Once run.resume was sent the run may continue: its ACK may have died with the process.
  files.sent("resume-1");
  EXPECT_TRUE(check_interrupt_held(dir.path()).empty());
}

TEST(CrashChecker, AcceptsAnAckedInterruptWhoseRunIsInterrupted) {
  testing::TempDir dir;
  ScenarioFiles files(dir.path());
  ASSERT_NO_FATAL_FAILURE(files.write_store(RunState::kInterrupted));
  files.answer("create", {{"threadId", "thread-1"}});
  files.answer("submit-1", {{"turnId", "turn-1"}, {"runId", "run-1"}});
  files.answer("interrupt-1", {{"interrupted", true}, {"turnId", "turn-1"}});
  EXPECT_TRUE(check_interrupt_held(dir.path()).empty())
      << ::testing::PrintToString(check_interrupt_held(dir.path()));
  // An interrupt that found nothing to interrupt holds nothing either.
  testing::TempDir other;
  ScenarioFiles idle(other.path());
  ASSERT_NO_FATAL_FAILURE(idle.write_store(RunState::kWaitingApproval));
  idle.answer("create", {{"threadId", "thread-1"}});
  idle.answer("interrupt-1", {{"interrupted", false}});
  EXPECT_TRUE(check_interrupt_held(other.path()).empty());
}

// ---- the agent, killed -------------------------------------------------------------------------------

class CrashHarness : public ::testing::Test {
 protected:
  // A clean run: the invariants hold, the interrupt and the resume were ACKed, and it tells how often each
  // fail point is reached and how long the scenario takes.
  std::map<std::string, uint64_t> clean_run(std::chrono::microseconds* duration = nullptr) {
    testing::TempDir dir;
    const auto start = Clock::now();
    AgentProcess agent(dir.path(), std::nullopt);
    const Exit exit = agent.wait();
    if (duration != nullptr) {
      *duration = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start);
    }
    EXPECT_TRUE(exit.finished()) << exit.describe() << "\n" << agent_log(dir.path());
    const CrashCheck check = check_crash_invariants(dir.path());
    EXPECT_TRUE(check.violations.empty()) << ::testing::PrintToString(check.violations);
    EXPECT_EQ(check.turns_completed, 3);
    // Turns 2 and 3 run all three tools; turn 1 may have been interrupted before some of its calls ran.
    EXPECT_GE(check.effects, 6);
    EXPECT_EQ(answer_to(dir.path(), "interrupt-1").value("answer", ""), "ack") << agent_log(dir.path());
    EXPECT_EQ(answer_to(dir.path(), "resume-1").value("answer", ""), "ack")
        << answer_to(dir.path(), "resume-1");
    std::map<std::string, uint64_t> hits;
    std::ifstream in(dir.path() / kHitsFile);
    json parsed = json::parse(in, nullptr, false);
    EXPECT_FALSE(parsed.is_discarded()) << "no hits.json";
    if (parsed.is_object()) {
      for (auto& [name, count] : parsed.items()) hits[name] = count.get<uint64_t>();
    }
    return hits;
  }
};

TEST_F(CrashHarness, CleanRunHoldsEveryInvariantAndReachesEveryKindOfFailPoint) {
  const auto hits = clean_run();
  for (const char* point : {"store.begin", "store.commit", "store.sync.before", "store.sync.after",
                            "receipts.insert", "model.request.before", "model.response.before_commit",
                            "tool.execute.before", "tool.result.before_commit"}) {
    EXPECT_TRUE(hits.contains(point)) << point << " was never reached";
  }
}

// Issue 14 point 5: a SIGKILL right after turn.interrupt was ACKed (the agent kills itself the moment it
// logged the ACK, having held the store's write lock since it sent the interrupt) must find the run
// interrupted after the restart, and the run must continue only through the scenario's run.resume.
TEST_F(CrashHarness, SigkillRightAfterTheInterruptAckLeavesTheRunInterrupted) {
  testing::TempDir dir;
  {
    AgentProcess agent(dir.path(), std::nullopt, {kKillOnAckFlag, "interrupt-1"});
    const Exit exit = agent.wait();
    ASSERT_TRUE(exit.killed) << exit.describe() << "\n" << agent_log(dir.path());
  }
  const json interrupt = answer_to(dir.path(), "interrupt-1");
  ASSERT_EQ(interrupt.value("answer", ""), "ack") << interrupt;
  ASSERT_EQ(interrupt["payload"]["result"].value("interrupted", false), true) << interrupt;
  EXPECT_EQ(answer_to(dir.path(), "resume-1"), json()) << "the agent died at the interrupt's ACK";
  std::string why;
  ASSERT_TRUE(run_to_completion(dir.path(), why)) << why << "\n" << agent_log(dir.path());
  const CrashCheck check = check_crash_invariants(dir.path());
  EXPECT_EQ(check.interrupt_violations, 0) << ::testing::PrintToString(check.violations);
  EXPECT_TRUE(check.violations.empty()) << ::testing::PrintToString(check.violations);
  EXPECT_EQ(answer_to(dir.path(), "resume-1").value("answer", ""), "ack")
      << answer_to(dir.path(), "resume-1");
}

TEST_F(CrashHarness, SigkillCampaignLosesNothing) {
  std::chrono::microseconds duration{};
  const auto hits = clean_run(&duration);
  ASSERT_FALSE(hits.empty());
  const char* env_seed = std::getenv("KEEL_CRASH_SEED");
  const uint64_t seed = env_seed != nullptr ? std::strtoull(env_seed, nullptr, 10) : std::random_device{}();
  std::cout << "[crash] seed " << seed << " (KEEL_CRASH_SEED=" << seed << " replays the random schedule), "
            << (full_campaign() ? "full campaign" : "CI slice") << ", clean run " << duration.count()
            << " us\n";
  const auto started = Clock::now();
  Campaign campaign;

  // 1. Every named fail point, at up to `per_point` of its hits spread evenly (always the first and the
  //    last).
  const uint64_t per_point = full_campaign() ? UINT64_MAX : 6;
  int point_kills = 0;
  int not_reached = 0;
  for (const auto& [point, count] : hits) {
    std::vector<uint64_t> nths;
    if (count <= per_point) {
      for (uint64_t n = 1; n <= count; ++n) nths.push_back(n);
    } else {
      for (uint64_t i = 0; i < per_point; ++i) nths.push_back(1 + i * (count - 1) / (per_point - 1));
    }
    for (uint64_t nth : nths) {
      testing::TempDir dir;
      const std::string spec = point + "=crash@" + std::to_string(nth);
      AgentProcess agent(dir.path(), spec);
      const Exit exit = agent.wait();
      if (exit.killed) {
        ++point_kills;
      } else if (exit.finished()) {
        ++not_reached;  // a race made this run reach the point fewer times
      } else {
        campaign.violations.push_back(spec + ": the agent ended with " + exit.describe() + "\n" +
                                      agent_log(dir.path()));
        continue;
      }
      campaign.check(dir.path(), spec);
    }
  }
  EXPECT_GT(point_kills, 0);

  // 2. Right after the answer to each scenario command.
  int ack_kills = 0;
  for (const ScenarioCommand& command : scenario_commands()) {
    testing::TempDir dir;
    const std::string label = "kill after the answer to " + command.id;
    AgentProcess agent(dir.path(), std::nullopt, {kKillOnAckFlag, command.id});
    const Exit exit = agent.wait();
    if (exit.killed) {
      ++ack_kills;
    } else if (!exit.finished()) {
      campaign.violations.push_back(label + ": the agent ended with " + exit.describe() + "\n" +
                                    agent_log(dir.path()));
      continue;
    }
    campaign.check(dir.path(), label);
  }
  EXPECT_EQ(ack_kills, static_cast<int>(scenario_commands().size()));

  // 3. Random moments: chains of one to three kills, each at a moment within a (re)started scenario. The
  //    full campaign runs chains until it killed at least 1,000 times.
  std::mt19937_64 random(seed);
  const int kill_target = full_campaign() ? 1000 : 0;
  const int min_chains = full_campaign() ? 0 : 12;
  const int max_chains = full_campaign() ? 5000 : 12;
  int random_kills = 0;
  int chains = 0;
  for (; chains < max_chains && (chains < min_chains || random_kills < kill_target); ++chains) {
    testing::TempDir dir;
    const int links = 1 + static_cast<int>(random() % 3);
    std::string label = "seed " + std::to_string(seed) + " chain " + std::to_string(chains) + " kills at";
    for (int link = 0; link < links; ++link) {
      const auto delay = std::chrono::microseconds(random() % (duration.count() + 1));
      label += " " + std::to_string(delay.count()) + "us";
      AgentProcess agent(dir.path(), std::nullopt);
      const Exit exit = agent.kill_after(delay);
      if (exit.killed) ++random_kills;
      if (!exit.killed && !exit.finished()) {
        campaign.violations.push_back(label + ": the agent ended with " + exit.describe());
      }
    }
    campaign.check(dir.path(), label);
  }
  EXPECT_GT(random_kills, 0);
  EXPECT_GE(random_kills, kill_target);

  campaign.report();  // each violation, with the schedule that found it; the summary closes the output
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - started).count();
  std::cout << "[crash] named fail points: " << hits.size()
            << ", schedules that did not reach their point: " << not_reached << ", random chains: " << chains
            << "\n";
  std::cout << "[crash] summary: seed " << seed << "; kills " << point_kills + ack_kills + random_kills
            << " (at named fail points " << point_kills << ", after ACKs " << ack_kills
            << ", at random moments " << random_kills << "); violations " << campaign.violations.size()
            << " (interrupt ACK " << campaign.interrupt_violations << ", other "
            << static_cast<int>(campaign.violations.size()) - campaign.interrupt_violations << "); "
            << seconds << " s\n";
}

}  // namespace
}  // namespace keel::crash
