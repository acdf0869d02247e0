// Benchmarks a command unit (spec §5.1): receipt check + domain write + receipt write + durable commit,
// and the replay of a duplicate submission (receipt check only).
#include <benchmark/benchmark.h>

#include <string>

#include "keel/sqlite_store.h"
#include "keel/store.h"
#include "store/commands.h"
#include "testing/manual_clock.h"
#include "testing/sequential_ids.h"
#include "testing/temp_dir.h"

namespace keel {
namespace {

Synchronous sync_mode(int64_t arg) { return arg == 0 ? Synchronous::kFull : Synchronous::kOff; }

// Arg 0: synchronous=FULL (durable), 1: synchronous=OFF (the engine's own cost without the fsync).
void BM_CommandWithReceipt(benchmark::State& state) {
  testing::TempDir dir;
  testing::ManualClock clock;
  testing::SequentialIdSource ids("b");
  auto store = open_sqlite_store({.path = dir.file("bench.db"), .synchronous = sync_mode(state.range(0))});
  if (!store) {
    state.SkipWithError(store.error().to_string().c_str());
    return;
  }
  StoreCommands commands(**store, clock, ids);
  int64_t n = 0;
  for (auto _ : state) {
    auto result = commands.execute(
        {"bench", "s" + std::to_string(n++), protocol::OpKind::kThreadCreate, {{"title", "t"}}});
    if (!result) state.SkipWithError(result.error().to_string().c_str());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_CommandWithReceipt)->Arg(0)->Arg(1)->UseRealTime();

void BM_DuplicateSubmissionReplay(benchmark::State& state) {
  testing::TempDir dir;
  testing::ManualClock clock;
  testing::SequentialIdSource ids("b");
  auto store = open_sqlite_store({.path = dir.file("bench.db")});
  if (!store) {
    state.SkipWithError(store.error().to_string().c_str());
    return;
  }
  StoreCommands commands(**store, clock, ids);
  CommandRequest request{"bench", "dup", protocol::OpKind::kThreadCreate, {{"title", "t"}}};
  if (!commands.execute(request)) state.SkipWithError("first submission failed");
  for (auto _ : state) {
    auto result = commands.execute(request);
    if (!result || !result->replayed) state.SkipWithError("duplicate was not replayed");
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_DuplicateSubmissionReplay)->UseRealTime();

}  // namespace
}  // namespace keel

BENCHMARK_MAIN();
