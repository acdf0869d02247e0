// store_commit_bench — durable commits per second of the SQLite store (synchronous=FULL, WAL), with one
// writer and with 2..16 concurrent writers sharing one store (group commit).
//
// Each iteration is one write transaction inserting one settings row and committing it; commit() returns
// only once the row is durable. Counters:
//   commits/s         durable commits per second over all threads (wall clock);
//   syncs_per_commit  backend syncs (fsyncs of the group commit) per commit; 1.0 means no grouping.
// The database lives under $KEEL_BENCH_DIR when set (choose the disk you care about), else $TMPDIR or /tmp.
//
//   build/bench/store_commit_bench [--benchmark_format=json]
#include <benchmark/benchmark.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "keel/sqlite_store.h"
#include "keel/store.h"
#include "testing/temp_dir.h"

namespace keel {
namespace {

// Shared by the threads of one benchmark run; set up and torn down by thread 0 (Google Benchmark runs a
// barrier before and after the timed loop).
struct Shared {
  std::unique_ptr<testing::TempDir> dir;
  std::unique_ptr<Store> store;
  StoreStats before;
  std::atomic<uint64_t> next_key{0};
};
Shared shared;

std::unique_ptr<testing::TempDir> make_dir() {
  if (const char* base = std::getenv("KEEL_BENCH_DIR"); base != nullptr && *base != '\0') {
    // TempDir honours TMPDIR; point it at KEEL_BENCH_DIR for this one directory.
    const char* old = std::getenv("TMPDIR");
    std::optional<std::string> saved = old ? std::optional<std::string>(old) : std::nullopt;
    ::setenv("TMPDIR", base, 1);
    auto dir = std::make_unique<testing::TempDir>();
    if (saved) {
      ::setenv("TMPDIR", saved->c_str(), 1);
    } else {
      ::unsetenv("TMPDIR");
    }
    return dir;
  }
  return std::make_unique<testing::TempDir>();
}

void BM_DurableCommit(benchmark::State& state) {
  if (state.thread_index() == 0) {
    shared.dir = make_dir();
    SqliteStoreOptions options{.path = shared.dir->file("bench.db"), .synchronous = Synchronous::kFull};
    auto store = open_sqlite_store(options);
    if (!store) {
      state.SkipWithError(store.error().to_string().c_str());
    } else {
      shared.store = std::move(*store);
      shared.before = shared.store->stats();
    }
  }
  const std::string payload(200, 'p');
  uint64_t commits = 0;
  for (auto _ : state) {
    if (shared.store == nullptr) break;
    const std::string key = "bench-" + std::to_string(shared.next_key.fetch_add(1));
    auto tx = shared.store->begin(TxMode::kWrite);
    if (!tx) {
      state.SkipWithError(tx.error().to_string().c_str());
      break;
    }
    auto inserted =
        (*tx)->execute("INSERT INTO settings (key, value, updated_at) VALUES (?, ?, ?)", {key, payload, 1});
    auto committed = inserted ? (*tx)->commit() : Result<void>(std::unexpected(inserted.error()));
    if (!committed) {
      state.SkipWithError(committed.error().to_string().c_str());
      break;
    }
    ++commits;
  }
  // Per-thread commits, summed over threads and divided by the wall-clock time (UseRealTime).
  state.counters["commits/s"] = benchmark::Counter(static_cast<double>(commits), benchmark::Counter::kIsRate);
  if (state.thread_index() == 0) {
    if (shared.store != nullptr) {
      // After the loop's closing barrier every thread has finished committing.
      const StoreStats after = shared.store->stats();
      const double delta_commits = static_cast<double>(after.commits - shared.before.commits);
      const double delta_syncs = static_cast<double>(after.syncs - shared.before.syncs);
      state.counters["syncs_per_commit"] = delta_commits > 0 ? delta_syncs / delta_commits : 0.0;
    }
    shared.store.reset();
    shared.dir.reset();
    shared.next_key = 0;
  }
}

BENCHMARK(BM_DurableCommit)->Threads(1)->Threads(2)->Threads(4)->Threads(8)->Threads(16)->UseRealTime();

}  // namespace
}  // namespace keel

BENCHMARK_MAIN();
