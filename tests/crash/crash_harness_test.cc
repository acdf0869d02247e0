// The crash harness (spec §5): runs keel_crash_agent through its scenario (crash_scenario.h) and kills it
// with SIGKILL at every named fail point in turn — each boundary at each of its hits — and at random
// moments, restarts it until it finishes, and checks the invariants of crash_invariants.h after each
// campaign. It prints how many crash points and random kills it covered and the violations it found.
//
// CI runs a bounded slice: every named point, at an evenly spread subset of its hits, and a few random
// kill chains. KEEL_CRASH_FULL=1 runs the whole campaign (every hit of every point, many random chains);
// KEEL_CRASH_SEED replays a random schedule.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

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
#include "testing/child_process.h"
#include "testing/temp_dir.h"

namespace keel::crash {
namespace {

#ifndef KEEL_CRASH_AGENT
#error "KEEL_CRASH_AGENT must name the keel_crash_agent executable"
#endif

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

bool full_campaign() {
  const char* full = std::getenv("KEEL_CRASH_FULL");
  return full != nullptr && std::string(full) == "1";
}

// How one start of the agent ended.
struct Exit {
  bool killed = false;  // by SIGKILL (a fail point, or the harness)
  int status = -1;      // exit status when it exited
  bool finished() const { return !killed && status == 0; }
  std::string describe() const { return killed ? "killed" : "exit " + std::to_string(status); }
};

// One start of keel_crash_agent on `dir`, its output appended to dir/agent.log.
class AgentProcess {
 public:
  AgentProcess(const fs::path& dir, const std::optional<std::string>& failpoints) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    const std::string log = (dir / "agent.log").string();
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    auto spawned = testing::spawn_child(KEEL_CRASH_AGENT, {dir.string()}, failpoints, &actions);
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
      std::this_thread::sleep_for(std::min<std::chrono::microseconds>(std::chrono::microseconds(200),
                                                                       delay));
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

// Collects violations across a campaign, each labelled with the schedule that produced it.
struct Campaign {
  std::vector<std::string> violations;
  void check(const fs::path& dir, const std::string& label) {
    std::string why;
    if (!run_to_completion(dir, why)) {
      violations.push_back(label + ": never finished (" + why + ")\n" + agent_log(dir));
      return;
    }
    for (const std::string& v : check_crash_invariants(dir).violations) violations.push_back(label + ": " + v);
  }
  void report(const std::string& what) const {
    std::cout << what << "; violations found: " << violations.size() << "\n";
    for (const std::string& v : violations) ADD_FAILURE() << v;
  }
};

class CrashHarness : public ::testing::Test {
 protected:
  // A clean run: the invariants hold, and it tells how often each fail point is reached and how long the
  // scenario takes.
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
    EXPECT_EQ(check.effects, 9) << "three turns, three recording tools each";
    std::map<std::string, uint64_t> hits;
    std::ifstream in(dir.path() / kHitsFile);
    nlohmann::json parsed = nlohmann::json::parse(in, nullptr, false);
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

TEST_F(CrashHarness, CheckerFindsADoubleExecutedWriteAndALostAck) {
  testing::TempDir dir;
  AgentProcess agent(dir.path(), std::nullopt);
  ASSERT_TRUE(agent.wait().finished()) << agent_log(dir.path());
  ASSERT_TRUE(check_crash_invariants(dir.path()).violations.empty());
  // A never-retry call that ran twice.
  std::string once_line;
  {
    std::ifstream in(dir.path() / kEffectsFile);
    for (std::string line; std::getline(in, line);) {
      if (line.starts_with(kRecordOnce)) once_line = line;
    }
  }
  ASSERT_FALSE(once_line.empty());
  std::ofstream(dir.path() / kEffectsFile, std::ios::app) << once_line << "\n";
  // And an ACKed steer whose admission the store does not have.
  std::vector<std::string> answers;
  {
    std::ifstream in(dir.path() / kAcksFile);
    for (std::string line; std::getline(in, line);) answers.push_back(line);
  }
  {
    std::ofstream out(dir.path() / kAcksFile, std::ios::trunc);
    for (const std::string& line : answers) {
      nlohmann::json entry = nlohmann::json::parse(line);
      if (entry["id"] == "steer-2" && entry["answer"] == "ack") entry["payload"]["result"]["steerId"] = "lost";
      out << entry.dump() << "\n";
    }
  }
  const auto violations = check_crash_invariants(dir.path()).violations;
  ASSERT_EQ(violations.size(), 2u) << ::testing::PrintToString(violations);
  EXPECT_NE(violations[0].find("record_once"), std::string::npos) << violations[0];
  EXPECT_NE(violations[0].find("executed 2 times"), std::string::npos) << violations[0];
  EXPECT_NE(violations[1].find("steer-2 lost its steer id"), std::string::npos) << violations[1];
}

TEST_F(CrashHarness, SigkillAtEveryNamedFailPointLosesNothing) {
  const auto hits = clean_run();
  ASSERT_FALSE(hits.empty());
  // The slice: every point, at up to `per_point` of its hits spread evenly (always the first and the last).
  const uint64_t per_point = full_campaign() ? UINT64_MAX : 6;
  Campaign campaign;
  int kills = 0;
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
        ++kills;
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
  EXPECT_GT(kills, 0);
  std::cout << "[crash] named fail points: " << hits.size() << ", kills at them: " << kills
            << ", schedules that did not reach their point: " << not_reached << "\n";
  campaign.report("[crash] fail-point campaign");
}

TEST_F(CrashHarness, SigkillAtRandomMomentsLosesNothing) {
  std::chrono::microseconds duration{};
  clean_run(&duration);
  const char* env_seed = std::getenv("KEEL_CRASH_SEED");
  const uint64_t seed = env_seed != nullptr ? std::strtoull(env_seed, nullptr, 10) : std::random_device{}();
  std::cout << "[crash] random kills: seed " << seed << " (KEEL_CRASH_SEED replays it), clean run "
            << duration.count() << " us\n";
  std::mt19937_64 random(seed);
  const int chains = full_campaign() ? 200 : 12;
  Campaign campaign;
  int kills = 0;
  for (int chain = 0; chain < chains; ++chain) {
    testing::TempDir dir;
    // One to three kills in a row, each at a moment within a (re)started scenario.
    const int links = 1 + static_cast<int>(random() % 3);
    std::string label = "seed " + std::to_string(seed) + " chain " + std::to_string(chain) + " kills at";
    for (int link = 0; link < links; ++link) {
      const auto delay = std::chrono::microseconds(random() % (duration.count() + 1));
      label += " " + std::to_string(delay.count()) + "us";
      AgentProcess agent(dir.path(), std::nullopt);
      const Exit exit = agent.kill_after(delay);
      if (exit.killed) ++kills;
      if (!exit.killed && !exit.finished()) {
        campaign.violations.push_back(label + ": the agent ended with " + exit.describe());
      }
    }
    campaign.check(dir.path(), label);
  }
  EXPECT_GT(kills, 0);
  std::cout << "[crash] random kill chains: " << chains << ", kills: " << kills << "\n";
  campaign.report("[crash] random campaign");
}

}  // namespace
}  // namespace keel::crash
