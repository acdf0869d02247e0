// Recovery at start-up (spec §5): a store with 10,000 threads, 1,000 of which have a run that was
// streaming from the model when the process died (each with its environment snapshot, which recovery
// verifies before the run continues). Measured from the engine's construction:
//   classify_ms — until every unfinished run has been picked up again (each is streaming_model in a new
//                 runner: the scripted model has been asked for its continuation);
//   complete_ms — until every one of them has completed (the model answers at once; each completion is a
//                 durable commit, so this includes 1,000 transactions through the store's group commit).
// Args: sync_off 0 = synchronous=FULL (durable), 1 = synchronous=OFF.
#include <benchmark/benchmark.h>

#include <chrono>
#include <thread>

#include "engine/engine_core.h"
#include "engine/run_environment.h"
#include "keel/sqlite_store.h"
#include "store/node_body.h"
#include "store/run_repository.h"
#include "store/snapshot_repository.h"
#include "store/thread_repository.h"
#include "testing/manual_clock.h"
#include "testing/scripted_provider.h"
#include "testing/sequential_ids.h"
#include "testing/temp_dir.h"

namespace keel {
namespace {

constexpr int kThreads = 10000;
constexpr int kUnfinished = 1000;

// Writes the threads, every tenth with a run left in streaming_model after its user message, with the
// environment snapshot it started with (recovery verifies each one).
Result<void> populate(Store& store, const Clock& clock, IdSource& ids, const ToolRegistry& tools) {
  ThreadRepository threads(clock);
  RunRepository runs(clock);
  SnapshotRepository snapshots(clock);
  auto tx = KEEL_TRY(store.begin(TxMode::kWrite));
  for (int i = 0; i < kThreads; ++i) {
    ThreadRecord thread = KEEL_TRY(threads.create(*tx, ids.next_id(), "thread " + std::to_string(i)));
    if (i % (kThreads / kUnfinished) != 0) continue;
    RunRecord run;
    run.id = ids.next_id();
    run.thread_id = thread.id;
    run.turn_id = ids.next_id();
    run.state = RunState::kStreamingModel;
    run.usage = nlohmann::json::object();
    EnvironmentSnapshotRecord environment =
        KEEL_TRY(capture_environment(ids.next_id(), ModelSettings{}, ProviderTransport{}, *tools.snapshot()));
    run.snapshot_id = KEEL_TRY(snapshots.put(*tx, std::move(environment))).id;
    KEEL_TRY(runs.create(*tx, std::move(run)));
    NewNode user;
    user.id = ids.next_id();
    user.thread_id = thread.id;
    user.kind = NodeKind::kUserMessage;
    ContentBlock text;
    text.text = "summarize the report";
    user.body = KEEL_TRY(encode_user_message(UserMessageBody{.content = {text}}));
    KEEL_TRY(threads.append(*tx, std::move(user)));
  }
  return tx->commit();
}

int64_t count_runs(Store& store, const std::string& state) {
  auto tx = store.begin(TxMode::kRead);
  if (!tx) return -1;
  auto row = (*tx)->query_one("SELECT count(*) FROM runs WHERE state = ?", {state});
  (void)(*tx)->commit();  // a read: its commit only ends the snapshot, what was read stands
  return row && *row ? (**row).integer(0) : -1;
}

void BM_RecoverAtStart(benchmark::State& state) {
  double classify_ms = 0, complete_ms = 0;
  int rounds = 0;
  for (auto _ : state) {
    state.PauseTiming();
    testing::TempDir dir;
    testing::ManualClock clock;
    testing::SequentialIdSource ids("r");
    auto store =
        open_sqlite_store({.path = dir.file("recover.db"),
                           .synchronous = state.range(0) == 0 ? Synchronous::kFull : Synchronous::kOff});
    if (!store) {
      state.SkipWithError(store.error().to_string().c_str());
      return;
    }
    ToolRegistry tools;
    if (auto filled = populate(**store, clock, ids, tools); !filled) {
      state.SkipWithError(filled.error().to_string().c_str());
      return;
    }
    testing::ScriptedProvider provider;
    provider.set_recording(false);
    for (int i = 0; i < kUnfinished; ++i) provider.push(testing::ScriptedResponse::text("done"));
    AllowAllGatekeeper gate;
    state.ResumeTiming();
    const auto start = std::chrono::steady_clock::now();
    auto engine = std::make_unique<EngineCore>(
        EngineDeps{store->get(), &provider, nullptr, &tools, &gate, &clock, &ids}, EngineOptions{});
    // Picked up: the provider has been asked for every continuation.
    while (provider.remaining() > 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
    const auto classified = std::chrono::steady_clock::now();
    while (count_runs(**store, "completed") < kUnfinished)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const auto completed = std::chrono::steady_clock::now();
    state.PauseTiming();
    engine.reset();
    classify_ms += std::chrono::duration<double, std::milli>(classified - start).count();
    complete_ms += std::chrono::duration<double, std::milli>(completed - start).count();
    ++rounds;
    state.ResumeTiming();
  }
  state.counters["threads"] = kThreads;
  state.counters["unfinished_runs"] = kUnfinished;
  state.counters["classify_ms"] = classify_ms / rounds;
  state.counters["complete_ms"] = complete_ms / rounds;
}
BENCHMARK(BM_RecoverAtStart)
    ->ArgNames({"sync_off"})
    ->Arg(0)
    ->Arg(1)
    ->Iterations(3)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace keel

BENCHMARK_MAIN();
