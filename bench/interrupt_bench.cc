// How fast turn.interrupt reaches what is running (spec §3: within 50 ms). A turn either streams from a
// model that never finishes or runs a tool that never finishes; the benchmark submits turn.interrupt and
// measures until the provider's or the tool's cancellation callback runs, until turn.complete (the
// interrupted state persisted, durable SQLite), and until the interrupt's ACK (sent once that state is
// committed). Reported: p50/p99/max in µs over the iterations.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <vector>

#include "bench_support.h"
#include "engine/engine_core.h"
#include "keel/error_codes.h"
#include "keel/sqlite_store.h"
#include "testing/manual_clock.h"
#include "testing/scripted_provider.h"
#include "testing/sequential_ids.h"
#include "testing/temp_dir.h"

namespace keel {
namespace {

using bench::percentile;

using SteadyClock = std::chrono::steady_clock;

// Records when a cancellation arrived.
struct CancelClock {
  std::mutex mu;
  std::condition_variable cv;
  std::optional<SteadyClock::time_point> at;
  void mark() {
    std::lock_guard<std::mutex> guard(mu);
    at = SteadyClock::now();
    cv.notify_all();
  }
  SteadyClock::time_point wait() {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return at.has_value(); });
    return *at;
  }
  void reset() {
    std::lock_guard<std::mutex> guard(mu);
    at.reset();
  }
};

// A model that starts answering and never finishes, until cancelled.
class EndlessProvider final : public Provider {
 public:
  explicit EndlessProvider(CancelClock& clock, bool call_tool) : clock_(clock), call_tool_(call_tool) {}
  std::string name() const override { return "endless"; }
  void stream(ProviderRequest, CancellationToken cancel, std::shared_ptr<ProviderSink> sink) override {
    if (call_tool_) {
      sink->on_event(provider_event::ToolCallStart{0, "c" + std::to_string(++calls_), "hang"});
      sink->on_event(provider_event::ToolCallDelta{0, "{}"});
      sink->on_event(provider_event::ToolCallEnd{0});
      sink->on_event(provider_event::Finish{StopReason::kToolUse, "tool_calls"});
      sink->on_done({});
      return;
    }
    sink->on_event(provider_event::TextDelta{"thinking..."});
    std::lock_guard<std::mutex> guard(mu_);
    registration_ = cancel.on_cancel([this, sink] {
      clock_.mark();
      sink->on_done(fail(codes::kCancelled, "cancelled"));
    });
  }

 private:
  CancelClock& clock_;
  bool call_tool_;
  int calls_ = 0;
  std::mutex mu_;
  CancellationRegistration registration_;
};

// A tool that never finishes, until cancelled.
class HangTool final : public AgentTool {
 public:
  explicit HangTool(CancelClock& clock) : clock_(clock) {
    spec_.name = "hang";
    spec_.label = "Hang";
    spec_.description = "waits until cancelled";
    spec_.parameters = {{"type", "object"}, {"properties", nlohmann::json::object()}};
  }
  const ToolSpec& spec() const override { return spec_; }
  void execute(ToolCallContext context, nlohmann::json,
               std::function<void(Result<ToolResult>)> done) override {
    std::lock_guard<std::mutex> guard(mu_);
    registration_ = context.cancel.on_cancel([this, done] {
      clock_.mark();
      done(fail(codes::kCancelled, "cancelled"));
    });
  }

 private:
  CancelClock& clock_;
  ToolSpec spec_;
  std::mutex mu_;
  CancellationRegistration registration_;
};

// Arg 0: interrupt a streaming model; 1: interrupt a running tool.
void BM_InterruptReachesWhatRuns(benchmark::State& state) {
  const bool tool = state.range(0) == 1;
  testing::TempDir dir;
  testing::ManualClock clock;
  testing::SequentialIdSource ids("b");
  auto store = open_sqlite_store({.path = dir.file("bench.db"), .synchronous = Synchronous::kFull});
  if (!store) {
    state.SkipWithError(store.error().to_string().c_str());
    return;
  }
  CancelClock cancelled;
  EndlessProvider provider(cancelled, tool);
  ToolRegistry tools;
  if (auto registered = tools.register_tool(std::make_shared<HangTool>(cancelled)); !registered) {
    state.SkipWithError(registered.error().to_string().c_str());
    return;
  }
  AllowAllGatekeeper gate;
  EngineCore engine({store->get(), &provider, nullptr, &tools, &gate, &clock, &ids}, EngineOptions{});

  std::mutex mu;
  std::condition_variable cv;
  std::string thread;
  int completes = 0;
  int progress_marks = 0;  // the turn reached the point to interrupt
  int interrupt_acks = 0;
  std::optional<SteadyClock::time_point> completed_at;
  std::optional<SteadyClock::time_point> acked_at;
  auto subscription = engine.subscribe([&](const AgentEvent& event) {
    std::lock_guard<std::mutex> guard(mu);
    if (event.type == "command.ack" && event.payload["method"] == "thread.create") {
      thread = event.payload["result"]["threadId"];
    } else if (event.type == "command.ack" && event.payload["method"] == "turn.interrupt") {
      ++interrupt_acks;
      acked_at = SteadyClock::now();
    } else if (event.type == "turn.complete") {
      ++completes;
      completed_at = SteadyClock::now();
    } else if ((!tool && event.type == "item.delta") ||
               (tool && event.type == "item.start" && event.payload.value("kind", "") == "tool_result")) {
      ++progress_marks;
    } else {
      return;
    }
    cv.notify_all();
  });
  engine.submit(Op{"thread.create", "bench", "create", {}});
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return !thread.empty(); });
  }
  std::vector<double> reach, complete, acked;
  int n = 0;
  for (auto _ : state) {
    cancelled.reset();
    ++n;
    engine.submit(
        Op{"turn.submit", "bench", "t" + std::to_string(n), {{"threadId", thread}, {"input", "go"}}});
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return progress_marks == n; });
    }
    const auto start = SteadyClock::now();
    engine.submit(Op{"turn.interrupt", "bench", "i" + std::to_string(n), {{"threadId", thread}}});
    const auto reached = cancelled.wait();
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return completes == n && interrupt_acks == n; });
    }
    reach.push_back(std::chrono::duration<double, std::micro>(reached - start).count());
    complete.push_back(std::chrono::duration<double, std::micro>(*completed_at - start).count());
    acked.push_back(std::chrono::duration<double, std::micro>(*acked_at - start).count());
  }
  state.counters["reach_p50_us"] = percentile(reach, 0.5);
  state.counters["reach_p99_us"] = percentile(reach, 0.99);
  state.counters["reach_max_us"] = percentile(reach, 1.0);
  state.counters["complete_p50_us"] = percentile(complete, 0.5);
  state.counters["complete_p99_us"] = percentile(complete, 0.99);
  state.counters["ack_p50_us"] = percentile(acked, 0.5);
  state.counters["ack_p99_us"] = percentile(acked, 0.99);
}
BENCHMARK(BM_InterruptReachesWhatRuns)
    ->ArgName("tool")
    ->Arg(0)
    ->Arg(1)
    ->Iterations(200)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace keel

BENCHMARK_MAIN();
