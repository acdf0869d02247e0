// Crash tests of the SQLite store: a child process (keel_crash_writer) commits transactions from several
// threads and reports each committed tx id on a pipe; it is killed with SIGKILL — by this test at a random
// moment, or by itself at a fail point — and the store is reopened and checked:
//   - every tx the child reported as committed is present, with all of its rows;
//   - no transaction is partial, and no rolled-back transaction is present;
//   - reports of earlier rounds are still present (recovery never loses committed data).
// The random schedule is seeded; the seed is printed, and KEEL_CRASH_SEED replays one.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "keel/sqlite_store.h"
#include "keel/store.h"
#include "testing/child_process.h"
#include "testing/temp_dir.h"

namespace keel {
namespace {

#ifndef KEEL_CRASH_WRITER
#error "KEEL_CRASH_WRITER must name the keel_crash_writer executable"
#endif

constexpr int kRowsPerTx = 4;
constexpr int64_t kIdsPerRound = 1'000'000;

uint64_t crash_seed() {
  if (const char* env = std::getenv("KEEL_CRASH_SEED"); env != nullptr && *env != '\0') {
    return std::strtoull(env, nullptr, 10);
  }
  return std::random_device{}();
}

// A running keel_crash_writer with its stdout on a pipe. Killed and reaped on destruction if still alive.
class Child {
 public:
  Child(const std::string& db, int threads, int64_t first_id, std::optional<std::string> failpoints) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) {
      ADD_FAILURE() << "pipe2: " << std::strerror(errno);
      return;
    }
    read_fd_ = fds[0];
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);

    auto spawned = testing::spawn_child(
        KEEL_CRASH_WRITER,
        {db, std::to_string(threads), std::to_string(kRowsPerTx), std::to_string(first_id), "30"}, failpoints,
        &actions);
    posix_spawn_file_actions_destroy(&actions);
    ::close(fds[1]);
    if (!spawned) {
      ADD_FAILURE() << spawned.error().to_string();
      pid_ = -1;
    } else {
      pid_ = *spawned;
    }
  }
  ~Child() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      wait();
    }
    if (read_fd_ >= 0) ::close(read_fd_);
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  bool started() const { return pid_ > 0; }

  // Reads reported ids until `deadline`, until `enough` ids were reported, or until the pipe closes (the
  // child died). Returns false on EOF.
  bool read_until(std::chrono::steady_clock::time_point deadline, size_t enough = SIZE_MAX) {
    while (reported_.size() < enough) {
      auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return true;
      pollfd p{read_fd_, POLLIN, 0};
      int ready = ::poll(&p, 1, static_cast<int>(left.count()));
      if (ready < 0 && errno == EINTR) continue;
      if (ready <= 0) return true;
      if (!read_some()) return false;
    }
    return true;
  }
  // Reads everything left in the pipe (the child is dead or dying).
  void drain() {
    while (read_some()) {
    }
  }
  void kill() { ::kill(pid_, SIGKILL); }
  // Reaps the child; returns its wait status.
  int wait() {
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
    return status;
  }

  const std::vector<int64_t>& reported() const { return reported_; }
  const std::string& partial_line() const { return buffer_; }

 private:
  bool read_some() {
    char chunk[4096];
    ssize_t n = ::read(read_fd_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) return true;
    if (n <= 0) return false;
    buffer_.append(chunk, static_cast<size_t>(n));
    size_t newline;
    while ((newline = buffer_.find('\n')) != std::string::npos) {
      reported_.push_back(std::stoll(buffer_.substr(0, newline)));
      buffer_.erase(0, newline + 1);
    }
    return true;
  }

  pid_t pid_ = -1;
  int read_fd_ = -1;
  std::string buffer_;
  std::vector<int64_t> reported_;
};

// What the reopened store holds: rows per tx id, and any rows of rolled-back transactions.
struct Contents {
  std::map<int64_t, int> rows_per_tx;
  int64_t rolled_back_rows = 0;
  int64_t malformed_rows = 0;
};

Contents read_contents(const std::string& db) {
  Contents out;
  auto store = open_sqlite_store(SqliteStoreOptions{.path = db});
  EXPECT_TRUE(store) << "reopening after the crash: " << store.error().to_string();
  if (!store) return out;
  auto tx = (*store)->begin(TxMode::kRead);
  EXPECT_TRUE(tx) << tx.error().to_string();
  if (!tx) return out;
  auto rows = (*tx)->query("SELECT key, value FROM settings");
  EXPECT_TRUE(rows) << rows.error().to_string();
  if (!rows) return out;
  for (const SqlRow& row : *rows) {
    const std::string key = row.text(0);
    const std::string value = row.text(1);
    if (key.rfind("rb", 0) == 0) {
      ++out.rolled_back_rows;
      continue;
    }
    const int64_t id = std::stoll(key.substr(2, key.find('/') - 2));
    if (key.rfind("tx", 0) != 0 || value.rfind(std::to_string(id) + ":", 0) != 0) {
      ++out.malformed_rows;
      continue;
    }
    ++out.rows_per_tx[id];
  }
  return out;
}

// Checks the invariants; `all_reported` are the ids reported in every round so far.
void check_contents(const Contents& contents, const std::set<int64_t>& all_reported,
                    const std::string& round) {
  EXPECT_EQ(contents.rolled_back_rows, 0) << round << ": rows of rolled-back transactions survived";
  EXPECT_EQ(contents.malformed_rows, 0) << round;
  int partial = 0;
  for (const auto& [id, rows] : contents.rows_per_tx) {
    if (rows != kRowsPerTx) {
      ++partial;
      ADD_FAILURE() << round << ": tx " << id << " is partial (" << rows << " of " << kRowsPerTx << " rows)";
    }
  }
  EXPECT_EQ(partial, 0);
  int missing = 0;
  for (int64_t id : all_reported) {
    if (!contents.rows_per_tx.contains(id)) {
      if (++missing <= 10) ADD_FAILURE() << round << ": reported tx " << id << " is missing";
    }
  }
  EXPECT_EQ(missing, 0) << round;
}

class SqliteCrashTest : public ::testing::Test {
 protected:
  void SetUp() override {
    seed_ = crash_seed();
    std::cout << "KEEL_CRASH_SEED=" << seed_ << std::endl;
    RecordProperty("seed", std::to_string(seed_));
    rng_.seed(seed_);
  }
  std::string db() const { return dir_.file("crash.db"); }

  testing::TempDir dir_;
  uint64_t seed_ = 0;
  std::mt19937_64 rng_;
};

TEST_F(SqliteCrashTest, KilledAtRandomMomentsLosesNoReportedCommitAndLeavesNoPartialTransaction) {
  constexpr int kRounds = 20;
  const auto budget_start = std::chrono::steady_clock::now();
  std::set<int64_t> all_reported;
  int rounds_with_commits = 0;
  int mid_stream_rounds = 0;
  for (int round = 0; round < kRounds; ++round) {
    // Mostly kill mid-stream, a random time after the first commit was reported; now and then very early,
    // a random time after the start (during open, or migration of the fresh file in round 0).
    const bool early = std::uniform_int_distribution<int>(0, 9)(rng_) == 0;
    const int delay_ms = early ? std::uniform_int_distribution<int>(0, 15)(rng_)
                               : std::uniform_int_distribution<int>(0, 300)(rng_);
    const int threads = std::uniform_int_distribution<int>(1, 8)(rng_);
    const std::string label = "round " + std::to_string(round) + " (threads " + std::to_string(threads) +
                              ", kill " + std::to_string(delay_ms) + " ms after " +
                              (early ? "the start" : "the first commit") + ", seed " + std::to_string(seed_) +
                              ")";
    Child child(db(), threads, (round + 1) * kIdsPerRound, std::nullopt);
    ASSERT_TRUE(child.started());
    bool alive = true;
    if (!early) {
      alive = child.read_until(std::chrono::steady_clock::now() + std::chrono::seconds(20), 1);
      ++mid_stream_rounds;
      EXPECT_FALSE(child.reported().empty()) << label << ": no commit was reported within 20 s";
    }
    alive = alive && child.read_until(std::chrono::steady_clock::now() + std::chrono::milliseconds(delay_ms));
    child.kill();
    child.drain();
    const int status = child.wait();
    ASSERT_TRUE(alive) << label << ": the child exited before it was killed";
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << label << ": status " << status;
    EXPECT_EQ(child.partial_line(), "") << label << ": a report line was torn";

    if (!child.reported().empty()) ++rounds_with_commits;
    all_reported.insert(child.reported().begin(), child.reported().end());
    check_contents(read_contents(db()), all_reported, label);
    if (HasFailure()) return;
  }
  std::cout << "rounds: " << kRounds << ", reported commits: " << all_reported.size()
            << ", rounds with commits: " << rounds_with_commits << ", seconds: "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - budget_start).count()
            << std::endl;
  EXPECT_GE(rounds_with_commits, mid_stream_rounds);
}

#ifdef KEEL_FAILPOINTS_ENABLED

// Runs a child that kills itself at fail point `spec`; returns what it reported and the store's contents.
struct FailPointRound {
  std::vector<int64_t> reported;
  Contents contents;
};

FailPointRound run_until_fail_point(const std::string& db, int threads, int64_t first_id,
                                    const std::string& spec, const std::string& label) {
  FailPointRound out;
  Child child(db, threads, first_id, spec);
  EXPECT_TRUE(child.started());
  if (!child.started()) return out;
  const bool still_running = child.read_until(std::chrono::steady_clock::now() + std::chrono::seconds(20));
  if (still_running) ADD_FAILURE() << label << ": the fail point never killed the child";
  child.kill();
  child.drain();
  const int status = child.wait();
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << label << ": status " << status;
  out.reported = child.reported();
  out.contents = read_contents(db);
  return out;
}

// With one writer thread every commit is its own sync and transactions are numbered in order, so the
// exact set of durable transactions at each boundary is known. Every 7th transaction (id % 7 == 3) is
// rolled back by the child: it hits "store.begin" but none of the commit points.
//   - the Nth "store.sync.after": N committed transactions are durable, the last one never reported;
//   - the Nth "store.sync.before" or "store.commit": N-1 are durable and reported;
//   - the Nth "store.begin": the committed ones among the first N-1 begun.
TEST_F(SqliteCrashTest, SingleWriterKilledAtEachCommitBoundaryKeepsExactlyTheDurableTransactions) {
  const char* points[] = {"store.begin", "store.commit", "store.sync.before", "store.sync.after"};
  std::set<int64_t> all_reported;
  int round = 0;
  for (const char* point : points) {
    for (int repeat = 0; repeat < 2; ++repeat, ++round) {
      const int nth = std::uniform_int_distribution<int>(1, 25)(rng_);
      const std::string spec = std::string(point) + "=crash@" + std::to_string(nth);
      const std::string label = spec + " (seed " + std::to_string(seed_) + ")";
      const int64_t first = (round + 1) * kIdsPerRound;
      FailPointRound result = run_until_fail_point(db(), 1, first, spec, label);
      all_reported.insert(result.reported.begin(), result.reported.end());
      check_contents(result.contents, all_reported, label);

      std::set<int64_t> expected_reported;
      std::set<int64_t> expected_durable;
      const std::string_view name(point);
      if (name == "store.begin") {
        for (int64_t id = first; id < first + nth - 1; ++id) {
          if (id % 7 != 3) expected_reported.insert(id);
        }
        expected_durable = expected_reported;
      } else {
        int64_t id = first;
        for (int commits = 0; commits < nth; ++id) {
          if (id % 7 == 3) continue;
          ++commits;
          if (commits < nth) expected_reported.insert(id);
          if (commits < nth || name == "store.sync.after") expected_durable.insert(id);
        }
      }
      std::set<int64_t> durable;
      for (const auto& [id, rows] : result.contents.rows_per_tx) {
        if (id >= first && id < first + kIdsPerRound) durable.insert(id);
      }
      EXPECT_EQ(durable, expected_durable) << label;
      EXPECT_EQ(std::set<int64_t>(result.reported.begin(), result.reported.end()), expected_reported)
          << label;
      if (HasFailure()) return;
    }
  }
}

TEST_F(SqliteCrashTest, ConcurrentWritersKilledAtACommitBoundaryLoseNoReportedCommit) {
  const char* points[] = {"store.sync.after", "store.sync.before", "store.commit", "store.begin"};
  std::set<int64_t> all_reported;
  int round = 0;
  for (const char* point : points) {
    for (int repeat = 0; repeat < 2; ++repeat, ++round) {
      const int nth = std::uniform_int_distribution<int>(1, 60)(rng_);
      const int threads = std::uniform_int_distribution<int>(2, 8)(rng_);
      const std::string spec = std::string(point) + "=crash@" + std::to_string(nth);
      const std::string label =
          spec + " with " + std::to_string(threads) + " threads (seed " + std::to_string(seed_) + ")";
      FailPointRound result = run_until_fail_point(db(), threads, (round + 1) * kIdsPerRound, spec, label);
      all_reported.insert(result.reported.begin(), result.reported.end());
      check_contents(result.contents, all_reported, label);
      if (HasFailure()) return;
    }
  }
}

#endif  // KEEL_FAILPOINTS_ENABLED

}  // namespace
}  // namespace keel
