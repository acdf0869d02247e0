// keel_crash_writer — the child process of sqlite_crash_test.cc. Not part of keel.
//
// Usage: keel_crash_writer <db-path> <threads> <rows-per-tx> <first-tx-id> [max-seconds]
//
// Opens a SQLite store at <db-path> (fail points armed from KEEL_FAILPOINTS) and runs <threads> writer
// threads. Each transaction takes the next tx id and inserts <rows-per-tx> settings rows keyed
// "tx<id>/<k>" whose value is the id (padded, so a transaction spans several pages), then commits. After
// a commit returns success the id is written to stdout as one line with a single write(2) (atomic on a
// pipe, so lines of concurrent threads never interleave). Every 7th transaction is rolled back instead;
// its rows are keyed "rb<id>/<k>" and must never be seen by the parent.
//
// Runs until killed, or until max-seconds (default 60) pass as a safety net; then exits 0. A failed
// commit or any other error is reported on stderr and ends the process with status 3.
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "keel/sqlite_store.h"
#include "keel/store.h"
#include "util/fail_points.h"

namespace {

void write_all(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) std::_Exit(4);  // the parent went away
    done += static_cast<size_t>(n);
  }
}

[[noreturn]] void die(const std::string& what) {
  write_all(2, "keel_crash_writer: " + what + "\n");
  std::_Exit(3);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) die("usage: keel_crash_writer <db-path> <threads> <rows-per-tx> <first-tx-id> [max-seconds]");
  const std::string path = argv[1];
  const int threads = std::atoi(argv[2]);
  const int rows_per_tx = std::atoi(argv[3]);
  const int64_t first_id = std::atoll(argv[4]);
  const int max_seconds = argc > 5 ? std::atoi(argv[5]) : 60;
  if (threads < 1 || rows_per_tx < 1) die("threads and rows-per-tx must be positive");

  keel::FailPoints fail_points;
  if (auto armed = fail_points.arm_from_env(); !armed) die(armed.error().to_string());

  keel::SqliteStoreOptions options{.path = path, .fail_points = &fail_points};
  auto store = keel::open_sqlite_store(options);
  if (!store) die("open: " + store.error().to_string());

  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(max_seconds);
  std::atomic<int64_t> next_id{first_id};
  const std::string padding(300, 'p');
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&] {
      while (std::chrono::steady_clock::now() < deadline) {
        const int64_t id = next_id.fetch_add(1);
        const bool roll_back = id % 7 == 3;
        auto tx = (*store)->begin(keel::TxMode::kWrite);
        if (!tx) {
          if (tx.error().retryable()) continue;
          die("begin: " + tx.error().to_string());
        }
        const std::string prefix = (roll_back ? "rb" : "tx") + std::to_string(id) + "/";
        for (int k = 0; k < rows_per_tx; ++k) {
          auto inserted = (*tx)->execute("INSERT INTO settings (key, value, updated_at) VALUES (?, ?, ?)",
                                         {prefix + std::to_string(k), std::to_string(id) + ":" + padding, k});
          if (!inserted) die("insert: " + inserted.error().to_string());
        }
        if (roll_back) {
          (*tx)->rollback();
          continue;
        }
        if (auto committed = (*tx)->commit(); !committed) die("commit: " + committed.error().to_string());
        write_all(1, std::to_string(id) + "\n");
      }
    });
  }
  for (auto& w : workers) w.join();
  return 0;
}
