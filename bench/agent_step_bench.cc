// The engine's own cost per tool step: a scripted provider that answers at once, a no-op tool, a real
// SQLite store. One step = one model response with one tool call + the tool's execution: two transactions,
// the assistant message with its tool_call (and, for a write, the record that the call is dispatched),
// then the tool_result. Reported per step: wall µs, process CPU µs (user and system), the time inside the
// store's syncs, CPU beyond the syncs, store transactions (commits) and syncs.
// Args: sync_off 0 = synchronous=FULL (durable), 1 = synchronous=OFF (everything but the fsyncs);
//       write 0 = a read tool, 1 = a write tool.
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <condition_variable>
#include <mutex>

#include "bench_support.h"
#include "engine/engine_core.h"
#include "keel/sqlite_store.h"
#include "testing/manual_clock.h"
#include "testing/scripted_provider.h"
#include "testing/sequential_ids.h"
#include "testing/temp_dir.h"

namespace keel {
namespace {

using bench::NoopTool;

struct CpuTimes {
  double user = 0;
  double system = 0;
};

CpuTimes cpu_times() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
  };
  return {seconds(usage.ru_utime), seconds(usage.ru_stime)};
}

void BM_ToolStep(benchmark::State& state) {
  constexpr int kStepsPerTurn = 50;
  testing::TempDir dir;
  testing::ManualClock clock;
  testing::SequentialIdSource ids("b");
  auto store =
      open_sqlite_store({.path = dir.file("bench.db"),
                         .synchronous = state.range(0) == 0 ? Synchronous::kFull : Synchronous::kOff});
  if (!store) {
    state.SkipWithError(store.error().to_string().c_str());
    return;
  }
  testing::ScriptedProvider provider;
  provider.set_recording(false);  // the engine's cost, not the test double's copies
  ToolRegistry tools;
  if (auto registered = tools.register_tool(
          std::make_shared<NoopTool>(state.range(1) == 0 ? ToolEffects::kRead : ToolEffects::kWrite));
      !registered) {
    state.SkipWithError(registered.error().to_string().c_str());
    return;
  }
  AllowAllGatekeeper gate;
  EngineCore engine({store->get(), &provider, nullptr, &tools, &gate, &clock, &ids}, EngineOptions{});
  std::mutex mu;
  std::condition_variable cv;
  int completes = 0;
  std::string thread_id;
  // Wakes the benchmark's thread only for the two events it waits for: a wake-up per event would charge
  // the benchmark's own context switches to the engine.
  auto subscription = engine.subscribe([&](const AgentEvent& event) {
    if (event.type == "turn.complete") {
      std::lock_guard<std::mutex> guard(mu);
      ++completes;
      cv.notify_all();
    } else if (event.type == "command.ack" && event.payload["method"] == "thread.create") {
      std::lock_guard<std::mutex> guard(mu);
      thread_id = event.payload["result"]["threadId"];
      cv.notify_all();
    }
  });
  engine.submit(Op{"thread.create", "bench", "create", {}});
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return !thread_id.empty(); });
  }
  double user = 0, system = 0, steps = 0;
  uint64_t commits = 0, syncs = 0, sync_micros = 0;
  int turn = 0;
  for (auto _ : state) {
    state.PauseTiming();
    for (int i = 0; i < kStepsPerTurn; ++i) {
      provider.push(testing::ScriptedResponse::tool_calls({{"c" + std::to_string(i), "noop", "{}"}}));
    }
    provider.push(testing::ScriptedResponse::text("done"));
    const StoreStats before = (*store)->stats();
    const CpuTimes cpu_before = cpu_times();
    state.ResumeTiming();
    engine.submit(
        Op{"turn.submit", "bench", "t" + std::to_string(turn), {{"threadId", thread_id}, {"input", "go"}}});
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return completes == turn + 1; });
    }
    state.PauseTiming();
    ++turn;
    const CpuTimes cpu_after = cpu_times();
    user += cpu_after.user - cpu_before.user;
    system += cpu_after.system - cpu_before.system;
    const StoreStats after = (*store)->stats();
    commits += after.commits - before.commits;
    syncs += after.syncs - before.syncs;
    sync_micros += after.sync_micros - before.sync_micros;
    steps += kStepsPerTurn;
    state.ResumeTiming();
  }
  state.counters["steps"] = steps;
  // Process CPU (every thread: the engine's, the store's, event delivery); system time includes the
  // kernel's side of SQLite's writes and, in the durable variant, of its fsyncs.
  state.counters["cpu_us_per_step"] = (user + system) * 1e6 / steps;
  state.counters["user_us_per_step"] = user * 1e6 / steps;
  state.counters["sys_us_per_step"] = system * 1e6 / steps;
  state.counters["transactions_per_step"] = static_cast<double>(commits) / steps;
  state.counters["syncs_per_step"] = static_cast<double>(syncs) / steps;
  // Time inside the store's syncs (its COMMITs: writing the WAL frames and, when durable, waiting for
  // fsync). With synchronous=OFF a COMMIT is all CPU, so CPU minus it is the engine's cost beyond the syncs
  // (in the durable variant the fsync wait is not CPU, so this figure would undercount there).
  state.counters["sync_us_per_step"] = static_cast<double>(sync_micros) / steps;
  state.counters["cpu_beyond_syncs_us_per_step"] =
      ((user + system) * 1e6 - static_cast<double>(sync_micros)) / steps;
  state.counters["wall_us_per_step"] =
      benchmark::Counter(steps, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_ToolStep)
    ->ArgNames({"sync_off", "write"})
    ->Args({0, 0})
    ->Args({1, 0})
    ->Args({0, 1})
    ->Args({1, 1})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace keel

BENCHMARK_MAIN();
