// The HTTP client streaming from the in-process scripted model server (both on loopback, one process).
//
// BM_StreamThroughput: one Chat Completions stream of ~8 MiB of SSE per iteration; the time runs from the
//   response head to the end of the body (the server renders the whole stream before it sends the head, so
//   this is the client streaming, not the server composing JSON). Reported: bytes_per_second.
// BM_EventLatency: 200 events, each written on its own 2 ms after the previous one; for each, the time from
//   the server's write of the event's last byte completing to the client's on_body holding that byte.
//   Reported: p50_us, p99_us, max_us (negative values are possible in principle: the client thread can run
//   before the server's write completion is observed).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "bench_support.h"
#include "model_server/model_server.h"
#include "providers/http/http_client.h"

namespace keel {
namespace {

using SteadyClock = std::chrono::steady_clock;
using nlohmann::json;

std::unique_ptr<model_server::ModelServer> start_server(json response, std::function<void()> on_write = {}) {
  auto script = model_server::parse_script({{"responses", {std::move(response)}}});
  if (!script) throw std::runtime_error(script.error().to_string());
  model_server::ServerOptions options;
  options.script = std::move(*script);
  options.on_stream_write = std::move(on_write);
  auto server = model_server::ModelServer::start(std::move(options));
  if (!server) throw std::runtime_error(server.error().to_string());
  return std::move(*server);
}

providers::HttpRequest chat_request(const model_server::ModelServer& server) {
  providers::HttpRequest request;
  request.url = server.base_url() + "/v1/chat/completions";
  request.headers = {{"Content-Type", "application/json"}};
  request.body = R"({"model": "m", "stream": true, "messages": [{"role": "user", "content": "go"}]})";
  return request;
}

providers::CurlHttpClient direct_client() {
  providers::HttpClientOptions options;
  options.proxy = providers::ProxySettings{};
  return providers::CurlHttpClient(std::move(options));
}

// Records the arrival of body bytes, and of the end of each SSE event ("\n\n").
class TimingHandler final : public providers::HttpStreamHandler {
 public:
  void on_response_head(int, const std::vector<providers::HttpHeader>&) override {
    head_at_ = SteadyClock::now();
  }
  void on_body(std::string_view chunk) override {
    const auto now = SteadyClock::now();
    bytes_ += chunk.size();
    for (char c : chunk) {
      if (c == '\n' && last_ == '\n') event_ends_.push_back(now);
      last_ = c;
    }
  }
  void on_complete(Result<void> result) override {
    std::lock_guard lock(mu_);
    end_at_ = SteadyClock::now();
    ok_ = result.has_value();
    done_ = true;
    cv_.notify_all();
  }
  bool wait() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return done_; });
    return ok_;
  }
  double seconds_streaming() const { return std::chrono::duration<double>(end_at_ - head_at_).count(); }
  size_t bytes() const { return bytes_; }
  const std::vector<SteadyClock::time_point>& event_ends() const { return event_ends_; }

 private:
  // Written on the client's worker thread only; read after wait() (which orders them).
  SteadyClock::time_point head_at_;
  SteadyClock::time_point end_at_;
  size_t bytes_ = 0;
  char last_ = 0;
  std::vector<SteadyClock::time_point> event_ends_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  bool ok_ = false;
};

void BM_StreamThroughput(benchmark::State& state) {
  const auto piece = static_cast<size_t>(state.range(0));
  constexpr size_t kTextBytes = 8 << 20;
  auto server = start_server({{"match", ""},
                              {"steps",
                               {{{"type", "text"},
                                 {"text", std::string(kTextBytes / piece * piece, 'x')},
                                 {"chunk_size", piece}}}}});
  auto client = direct_client();
  size_t bytes = 0;
  for (auto _ : state) {
    auto handler = std::make_shared<TimingHandler>();
    client.start(chat_request(*server), {}, handler);
    if (!handler->wait()) {
      state.SkipWithError("the stream failed");
      break;
    }
    state.SetIterationTime(handler->seconds_streaming());
    bytes += handler->bytes();
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
  state.counters["body_MiB"] =
      static_cast<double>(bytes) / static_cast<double>(state.iterations()) / (1 << 20);
}
BENCHMARK(BM_StreamThroughput)->Arg(64)->Arg(4096)->UseManualTime()->Unit(benchmark::kMillisecond);

void BM_EventLatency(benchmark::State& state) {
  constexpr int kEvents = 200;
  std::mutex mu;
  std::vector<SteadyClock::time_point> writes;
  auto server = start_server(
      {{"match", ""},
       {"chunk_delay_ms", 2},
       {"steps", {{{"type", "text"}, {"text", std::string(kEvents - 3, 'x')}, {"chunk_size", 1}}}}},
      [&] {
        const auto now = SteadyClock::now();
        std::lock_guard lock(mu);
        writes.push_back(now);
      });
  auto client = direct_client();
  std::vector<double> latencies_us;
  for (auto _ : state) {
    {
      std::lock_guard lock(mu);
      writes.clear();
    }
    auto handler = std::make_shared<TimingHandler>();
    client.start(chat_request(*server), {}, handler);
    if (!handler->wait()) {
      state.SkipWithError("the stream failed");
      break;
    }
    std::lock_guard lock(mu);
    const auto& received = handler->event_ends();
    // One write per event (chunk_delay separates them); the final write (the zero chunk) is not counted.
    for (size_t i = 0; i < std::min(writes.size(), received.size()); ++i) {
      latencies_us.push_back(std::chrono::duration<double, std::micro>(received[i] - writes[i]).count());
    }
  }
  state.counters["events"] = static_cast<double>(latencies_us.size());
  state.counters["p50_us"] = bench::percentile(latencies_us, 0.50);
  state.counters["p99_us"] = bench::percentile(latencies_us, 0.99);
  state.counters["max_us"] = bench::percentile(latencies_us, 1.0);
}
BENCHMARK(BM_EventLatency)->Iterations(5)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace keel

BENCHMARK_MAIN();
