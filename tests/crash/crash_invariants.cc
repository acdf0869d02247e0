// tests/crash/crash_invariants.cc — see crash_invariants.h.
#include "crash/crash_invariants.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>

#include "crash/crash_scenario.h"
#include "keel/clock.h"
#include "keel/sqlite_store.h"
#include "keel/store.h"
#include "store/node_body.h"
#include "store/queue_repository.h"
#include "store/run_repository.h"
#include "store/session_context.h"
#include "store/thread_repository.h"

namespace keel::crash {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

std::map<std::string, json> read_answers(const fs::path& file) {
  std::map<std::string, json> answers;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    json entry = json::parse(line, nullptr, false);
    if (!entry.is_discarded()) answers[entry.value("id", "")] = entry;
  }
  return answers;
}

bool acked(const std::map<std::string, json>& answers, const std::string& id) {
  auto it = answers.find(id);
  return it != answers.end() && it->second.value("answer", "") == "ack";
}

std::set<std::string> read_sent(const fs::path& file) {
  std::set<std::string> sent;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) sent.insert(line);
  return sent;
}

struct UserInput {
  size_t position = 0;  // index on the path
  std::string text;
  std::optional<std::string> steer_id;
};

class Checker {
 public:
  explicit Checker(fs::path dir) : dir_(std::move(dir)), answers_(read_answers(dir_ / kAcksFile)) {}

  CrashCheck run() {
    check_answers();
    check_effects();
    check_observed();
    auto store = open_sqlite_store({.path = (dir_ / kStoreFile).string()});
    if (!store) return violation("the store does not open: " + store.error().to_string());
    auto tx = (*store)->begin(TxMode::kRead);
    if (!tx) return violation("no read transaction: " + tx.error().to_string());
    check_thread(**tx);
    return std::move(check_);
  }

 private:
  CrashCheck violation(std::string text) {
    check_.violations.push_back(std::move(text));
    return std::move(check_);
  }

  void check_answers() {
    for (const ScenarioCommand& command : scenario_commands()) {
      if (!answers_.contains(command.id))
        check_.violations.push_back("command " + command.id + " never answered");
    }
  }

  void check_effects() {
    std::map<std::string, int> runs_of_call;
    std::ifstream in(dir_ / kEffectsFile);
    for (std::string line; std::getline(in, line);) {
      ++check_.effects;
      std::istringstream fields(line);
      std::string tool;
      std::string call;
      fields >> tool >> call;
      if (tool != kRecordSafe) ++runs_of_call[tool + " " + call];
    }
    for (const auto& [call, runs] : runs_of_call) {
      if (runs > 1) check_.violations.push_back(call + " executed " + std::to_string(runs) + " times");
    }
  }

  void check_observed() {
    std::ifstream in(dir_ / kObservedFile);
    for (std::string line; std::getline(in, line);) {
      check_.interrupt_violations += line.starts_with(kInterruptTag);
      check_.violations.push_back("observed: " + line);
    }
  }

  void check_thread(Transaction& tx) {
    if (!acked(answers_, "create")) return;
    const std::string thread_id = answers_.at("create")["payload"]["result"].value("threadId", "");
    ThreadRepository threads(clock_);
    auto thread = threads.get_live(tx, thread_id);
    if (!thread) {
      check_.violations.push_back("the ACKed thread is gone: " + thread.error().to_string());
      return;
    }
    std::vector<NodeRecord> path;
    if (thread->leaf_node_id) {
      auto read = threads.path_to(tx, *thread->leaf_node_id);
      if (!read) {
        check_.violations.push_back("the thread's path does not read: " + read.error().to_string());
        return;
      }
      path = std::move(*read);
    }
    check_inputs(path);
    check_approvals(path);
    check_tool_results(tx, thread->leaf_node_id.value_or(""));
    check_runs(tx, thread_id);
  }

  void check_inputs(const std::vector<NodeRecord>& path) {
    std::vector<UserInput> inputs;
    for (size_t i = 0; i < path.size(); ++i) {
      if (path[i].kind != NodeKind::kUserMessage) continue;
      auto body = decode_user_message(path[i].body);
      if (!body) {
        check_.violations.push_back("user message " + path[i].id + " does not decode");
        continue;
      }
      inputs.push_back({i, body->content.empty() ? "" : body->content.front().text, body->steer_id});
    }
    auto occurrences = [&](const std::string& text) {
      std::vector<const UserInput*> found;
      for (const UserInput& input : inputs) {
        if (input.text == text) found.push_back(&input);
      }
      return found;
    };
    std::optional<size_t> last_steer;
    for (const ScenarioCommand& command : scenario_commands()) {
      if (command.text.empty()) continue;
      auto found = occurrences(command.text);
      const bool was_acked = acked(answers_, command.id);
      if (was_acked && found.size() != 1) {
        check_.violations.push_back("ACKed " + command.id + " is on the path " +
                                    std::to_string(found.size()) + " times");
      }
      if (!was_acked && found.size() > 1) {
        check_.violations.push_back(command.id + " is on the path " + std::to_string(found.size()) +
                                    " times");
      }
      if (command.method != "turn.steer" || !was_acked || found.size() != 1) continue;
      ++check_.steers_acked;
      const UserInput& steer = *found.front();
      const std::string steer_id = answers_.at(command.id)["payload"]["result"].value("steerId", "");
      if (steer.steer_id != steer_id) check_.violations.push_back(command.id + " lost its steer id");
      // Admission order: the scenario admits steers in its own order, one answer at a time.
      if (last_steer && steer.position < *last_steer) {
        check_.violations.push_back(command.id + " is before an earlier-admitted steer");
      }
      last_steer = steer.position;
      // Inside the turn it steered: after "task 1", before "task 2".
      auto task1 = occurrences("task 1");
      auto task2 = occurrences("task 2");
      if (task1.size() == 1 && steer.position < task1.front()->position) {
        check_.violations.push_back(command.id + " is before the turn it steered");
      }
      if (task2.size() == 1 && steer.position > task2.front()->position) {
        check_.violations.push_back(command.id + " is after the turn it steered");
      }
    }
  }

  // The gatekeeper asks for every never-retry call, so each one that ran was decided first, once; an
  // interrupt during the wait answers the call without running it, and it may then have no decision.
  void check_approvals(const std::vector<NodeRecord>& path) {
    std::map<std::string, int> decisions;
    std::set<std::string> asked;
    std::set<std::string> interrupted;
    for (const NodeRecord& node : path) {
      if (node.kind == NodeKind::kApprovalDecision) ++decisions[node.body.value("toolCallId", "")];
      if (node.kind == NodeKind::kToolResult && node.body.value("interrupted", false)) {
        interrupted.insert(node.body.value("toolCallId", ""));
      }
      if (node.kind != NodeKind::kToolCall) continue;
      auto call = decode_tool_call(node.body);
      if (call && call->name == kRecordOnce) asked.insert(call->tool_call_id);
    }
    for (const auto& [call, count] : decisions) {
      if (!asked.contains(call)) {
        check_.violations.push_back("a decision for " + call +
                                    ", which is not a never-retry call on the path");
      }
      if (count > 1) check_.violations.push_back(call + " was decided " + std::to_string(count) + " times");
    }
    for (const std::string& call : asked) {
      if (!decisions.contains(call) && !interrupted.contains(call)) {
        check_.violations.push_back(call + " asked for approval but no decision is on the path");
      }
    }
  }

  void check_tool_results(Transaction& tx, const std::string& leaf) {
    SessionContextBuilder builder;
    auto messages = builder.build(tx, leaf);
    if (!messages) {
      check_.violations.push_back("buildSessionContext fails: " + messages.error().to_string());
      return;
    }
    std::set<std::string> answered;
    for (const Message& message : *messages) {
      if (message.role == Role::kTool) answered.insert(message.tool_call_id);
    }
    for (const Message& message : *messages) {
      for (const ToolCall& call : message.tool_calls) {
        if (!answered.contains(call.id))
          check_.violations.push_back("tool call " + call.id + " has no result");
      }
    }
  }

  void check_runs(Transaction& tx, const std::string& thread_id) {
    RunRepository runs(clock_);
    QueueRepository queue(clock_);
    auto queued = queue.count(tx, thread_id);
    if (!queued || *queued != 0) {
      check_.violations.push_back("the queue is not empty at the end: " +
                                  (queued ? std::to_string(*queued) : queued.error().to_string()));
    }
    auto listed = runs.list_by_thread(tx, thread_id);
    if (!listed) {
      check_.violations.push_back("runs do not read: " + listed.error().to_string());
      return;
    }
    int turns = 0;
    for (const ScenarioCommand& command : scenario_commands()) {
      turns += (command.method == "turn.submit" || command.method == "turn.enqueue") &&
               acked(answers_, command.id);
    }
    if (static_cast<int>(listed->size()) != turns) {
      check_.violations.push_back(std::to_string(turns) + " turns were ACKed but " +
                                  std::to_string(listed->size()) + " runs exist");
    }
    for (const RunRecord& run : *listed) {
      if (run.state == RunState::kCompleted) {
        ++check_.turns_completed;
      } else {
        check_.violations.push_back("run " + run.id + " ended " + std::string(to_string(run.state)) +
                                    (run.error ? " (" + *run.error + ")" : ""));
      }
    }
  }

  fs::path dir_;
  std::map<std::string, json> answers_;
  SystemClock clock_;
  CrashCheck check_;
};

}  // namespace

CrashCheck check_crash_invariants(const fs::path& dir) { return Checker(dir).run(); }

std::vector<std::string> check_interrupt_held(const fs::path& dir) {
  const std::map<std::string, json> answers = read_answers(dir / kAcksFile);
  const std::set<std::string> sent = read_sent(dir / kSentFile);
  // Each ACKed interrupt and the run.resume that follows it in the scenario.
  std::vector<std::pair<std::string, std::string>> held;  // (interrupt id, turn id)
  const std::vector<ScenarioCommand> commands = scenario_commands();
  for (size_t i = 0; i < commands.size(); ++i) {
    if (commands[i].method != "turn.interrupt" || !acked(answers, commands[i].id)) continue;
    const json& result = answers.at(commands[i].id)["payload"]["result"];
    if (!result.value("interrupted", false)) continue;
    bool resumed = false;
    for (size_t j = i + 1; j < commands.size() && !resumed; ++j) {
      resumed = commands[j].method == "run.resume" && sent.contains(commands[j].id);
    }
    if (!resumed) held.emplace_back(commands[i].id, result.value("turnId", ""));
  }
  std::vector<std::string> violations;
  if (held.empty() || !acked(answers, "create")) return violations;  // an interrupt needs the thread
  auto store = open_sqlite_store({.path = (dir / kStoreFile).string()});
  if (!store) return {kInterruptTag + std::string("the store does not open: ") + store.error().to_string()};
  auto tx = (*store)->begin(TxMode::kRead);
  if (!tx) return {kInterruptTag + std::string("no read transaction: ") + tx.error().to_string()};
  const std::string thread_id = answers.at("create")["payload"]["result"].value("threadId", "");
  SystemClock clock;
  RunRepository runs(clock);
  auto listed = runs.list_by_thread(**tx, thread_id);
  if (!listed) return {kInterruptTag + std::string("runs do not read: ") + listed.error().to_string()};
  for (const auto& [interrupt, turn] : held) {
    auto run =
        std::find_if(listed->begin(), listed->end(), [&](const RunRecord& r) { return r.turn_id == turn; });
    if (run == listed->end()) {
      violations.push_back(kInterruptTag + interrupt + " was ACKed for turn " + turn + ", which has no run");
    } else if (run->state != RunState::kInterrupted) {
      violations.push_back(kInterruptTag + interrupt + " was ACKed, but after the restart run " + run->id +
                           " is " + std::string(to_string(run->state)) + ", not interrupted");
    }
  }
  return violations;
}

}  // namespace keel::crash
