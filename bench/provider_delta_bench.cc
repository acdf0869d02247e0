// provider_delta_bench — the latency from the last byte of a model's SSE event to the engine's item.delta
// for it (issue 7), end to end: the scripted model server writes one text event every 2 ms; the engine
// reads it through the HttpProvider (libcurl, the SSE parser, the wire codec), persists nothing for a
// delta, and publishes item.delta to a subscriber. Each delta is paired with the server write nearest to it
// in time (events are 2 ms apart, far more than the latency): the latency is its arrival minus that write's
// completion, or 0 when the client had the bytes before the server's completion handler ran. One benchmark
// per wire format; reported as p50 / p99 / max in microseconds.
#include <benchmark/benchmark.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

#include "bench_support.h"
#include "engine/engine_core.h"
#include "keel/sqlite_store.h"
#include "model_server/model_server.h"
#include "policy/gatekeeper.h"
#include "providers/http_provider/http_provider.h"
#include "testing/sequential_ids.h"
#include "testing/temp_dir.h"
#include "util/thread_scheduler.h"

namespace keel::bench {
namespace {

using Clock = std::chrono::steady_clock;
using providers::WireFormat;

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

void BM_EventToItemDelta(benchmark::State& state) {
  const auto format = static_cast<WireFormat>(state.range(0));
  constexpr int kChunks = 100;
  std::string text;
  for (int i = 0; i < kChunks; ++i) text += "word" + std::to_string(i % 10) + " ";
  auto script =
      model_server::parse_script({{"responses",
                                   {{{"match", ""},
                                     {"chunk_delay_ms", 2},
                                     {"steps", {{{"type", "text"}, {"text", text}, {"chunk_size", 6}}}}}}}});
  if (!script) {
    state.SkipWithError(script.error().to_string().c_str());
    return;
  }
  std::mutex writes_mu;
  std::vector<int64_t> writes_ns;
  model_server::ServerOptions server_options;
  server_options.script = std::move(*script);
  server_options.on_stream_write = [&] {
    const int64_t at = now_ns();
    std::lock_guard<std::mutex> guard(writes_mu);
    writes_ns.push_back(at);
  };
  auto server = model_server::ModelServer::start(std::move(server_options));
  if (!server) {
    state.SkipWithError(server.error().to_string().c_str());
    return;
  }
  SystemClock clock;
  ThreadScheduler scheduler;
  providers::CurlHttpClient client;
  providers::HttpProviderOptions options;
  options.format = format;
  options.base_url = (*server)->base_url() + (format == WireFormat::kAnthropicMessages ? "" : "/v1");
  providers::HttpProvider provider(std::move(options), client, scheduler, clock,
                                   providers::RetryPolicy::seeded_random(1));

  testing::TempDir dir;
  testing::SequentialIdSource ids("b");
  auto store = open_sqlite_store({.path = dir.file("bench.db"), .synchronous = Synchronous::kOff});
  if (!store) {
    state.SkipWithError(store.error().to_string().c_str());
    return;
  }
  ToolRegistry tools;
  AllowAllGatekeeper gate;
  EngineOptions engine_options;
  engine_options.model.tool_use = false;
  EngineCore engine({store->get(), &provider, nullptr, &tools, &gate, &clock, &ids}, engine_options);

  std::mutex mu;
  std::condition_variable cv;
  std::vector<int64_t> deltas_ns;
  int completes = 0;
  std::string thread;
  auto subscription = engine.subscribe([&](const AgentEvent& event) {
    if (event.type == "item.delta") {
      const int64_t at = now_ns();
      std::lock_guard<std::mutex> guard(mu);
      deltas_ns.push_back(at);
    } else if (event.type == "turn.complete" || event.type == "command.ack") {
      std::lock_guard<std::mutex> guard(mu);
      if (event.type == "turn.complete") ++completes;
      if (event.type == "command.ack" && event.payload.value("method", "") == "thread.create") {
        thread = event.payload["result"]["threadId"];
      }
      cv.notify_all();
    }
  });
  engine.submit(Op{"thread.create", "bench", "create", {}});
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return !thread.empty(); });
  }
  int turns = 0;
  for (auto _ : state) {
    engine.submit(
        Op{"turn.submit", "bench", "t" + std::to_string(++turns), {{"threadId", thread}, {"input", "go"}}});
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return completes == turns; });
  }
  std::lock_guard<std::mutex> guard(mu);
  std::lock_guard<std::mutex> writes_guard(writes_mu);
  std::vector<double> latencies;
  for (const int64_t at : deltas_ns) {
    auto next = std::lower_bound(writes_ns.begin(), writes_ns.end(), at);
    int64_t nearest = next == writes_ns.end() ? writes_ns.back() : *next;
    if (next != writes_ns.begin() && (next == writes_ns.end() || at - *std::prev(next) < *next - at)) {
      nearest = *std::prev(next);
    }
    latencies.push_back(static_cast<double>(std::max<int64_t>(0, at - nearest)) / 1000.0);
  }
  state.counters["deltas"] = static_cast<double>(latencies.size());
  state.counters["p50_us"] = percentile(latencies, 0.5);
  state.counters["p99_us"] = percentile(latencies, 0.99);
  state.counters["max_us"] = percentile(latencies, 1.0);
}
BENCHMARK(BM_EventToItemDelta)
    ->Arg(static_cast<int>(WireFormat::kOpenAiChat))
    ->Arg(static_cast<int>(WireFormat::kOpenAiResponses))
    ->Arg(static_cast<int>(WireFormat::kAnthropicMessages))
    ->Iterations(10)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace keel::bench

BENCHMARK_MAIN();
