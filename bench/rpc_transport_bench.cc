// Events per second through the JSON-RPC transports (stdio over socketpairs, WebSocket over loopback) to 1
// and to 10 clients, and the memory of an idle connected WebSocket client.
//
// Each iteration runs one turn whose scripted model streams 500 text deltas; it ends when every client has
// read that turn's turn.complete. items_per_second = event notifications read by all clients together per
// second (a client reads and counts lines/messages; it does not parse them). The store is SQLite with
// synchronous=OFF so the figure is the transport's, not the disk's. Memory: RSS growth per connected idle
// client, over 200 clients; the clients live in the same process, so the figure includes the client side's
// socket and stream (an upper bound for the server's share).
#include <benchmark/benchmark.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "engine/engine_core.h"
#include "testing/manual_clock.h"
#include "testing/scripted_provider.h"
#include "testing/sequential_ids.h"
#include "testing/temp_dir.h"
#include "transport/direct_transport.h"
#include "transport/stdio_server.h"
#include "transport/websocket_server.h"

namespace keel {
namespace {

namespace beast = boost::beast;
constexpr int kDeltas = 500;
constexpr char kToken[] = "bench-token";

// Counts the messages a client reads and how many of them were turn.complete.
struct Counter {
  std::atomic<uint64_t> events{0};
  std::atomic<uint64_t> completes{0};
  void count(std::string_view message) {
    ++events;
    if (message.find("\"turn.complete\"") != std::string_view::npos) ++completes;
  }
};

struct Engine {
  testing::TempDir dir;
  testing::ManualClock clock;
  testing::SequentialIdSource ids{"b"};
  testing::ScriptedProvider provider;
  ToolRegistry tools;
  AllowAllGatekeeper gate;
  std::unique_ptr<Store> store;
  std::unique_ptr<EngineCore> core;
  std::unique_ptr<DirectTransport> transport;
  std::string thread;

  Engine() {
    store = std::move(open_sqlite_store({.path = dir.file("bench.db"), .synchronous = Synchronous::kOff})).value();
    core = std::make_unique<EngineCore>(EngineDeps{store.get(), &provider, nullptr, &tools, &gate, &clock, &ids},
                                        EngineOptions{});
    transport = std::make_unique<DirectTransport>(*core);
    // The thread is made through the engine directly; the clients only watch.
    std::mutex mu;
    std::condition_variable cv;
    auto sub = transport->on_event([&](const AgentEvent& e) {
      if (e.type == "command.ack" && e.payload.value("submissionId", "") == "create") {
        std::lock_guard<std::mutex> guard(mu);
        thread = e.payload["result"].value("threadId", "");
        cv.notify_all();
      }
    });
    transport->send(Op{"thread.create", "bench", "create", {{"title", "bench"}}});
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return !thread.empty(); });
  }
  ~Engine() {
    transport.reset();
    core.reset();
  }
  void submit(int n) {
    testing::ScriptedResponse response;
    for (int i = 0; i < kDeltas; ++i) response.add(provider_event::TextDelta{"tok "});
    response.add(provider_event::Finish{StopReason::kEnd, "stop"});
    provider.push(std::move(response));
    transport->send(Op{"turn.submit", "bench", "turn-" + std::to_string(n), {{"threadId", thread}, {"input", "go"}}});
  }
};

uint64_t total_events(const std::vector<std::unique_ptr<Counter>>& counters) {
  uint64_t sum = 0;
  for (const auto& counter : counters) sum += counter->events;
  return sum;
}

// The measured part, the same for every transport: one turn per iteration, over once every client has read
// its turn.complete; the items are the notifications all clients read meanwhile.
void run_turns(benchmark::State& state, Engine& engine, const std::vector<std::unique_ptr<Counter>>& counters) {
  uint64_t turns = 0;
  const uint64_t before = total_events(counters);
  for (auto _ : state) {
    engine.submit(static_cast<int>(++turns));
    for (const auto& counter : counters) {
      while (counter->completes.load() < turns) std::this_thread::yield();
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(total_events(counters) - before));
}

void BM_StdioEvents(benchmark::State& state) {
  const int clients = static_cast<int>(state.range(0));
  Engine engine;
  std::vector<std::unique_ptr<Counter>> counters;
  std::vector<std::unique_ptr<StdioServer>> servers;
  std::vector<std::thread> threads;
  std::vector<int> fds;
  for (int i = 0; i < clients; ++i) {
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
      state.SkipWithError("socketpair failed");
      return;
    }
    fds.insert(fds.end(), {pair[0], pair[1]});
    RpcSessionOptions options;
    options.connection_id = "stdio-" + std::to_string(i);
    options.queue.capacity = 1 << 16;  // measure throughput, not the slow-client cut-off
    servers.push_back(std::make_unique<StdioServer>(*engine.transport, pair[1], pair[1], options));
    counters.push_back(std::make_unique<Counter>());
    StdioServer* server = servers.back().get();
    threads.emplace_back([server] { (void)server->run(); });
    Counter* counter = counters.back().get();
    const int fd = pair[0];
    threads.emplace_back([fd, counter] {
      std::string buffer;
      char chunk[65536];
      while (true) {
        const ssize_t n = ::read(fd, chunk, sizeof chunk);
        if (n <= 0) return;
        buffer.append(chunk, static_cast<size_t>(n));
        size_t start = 0;
        size_t newline;
        while ((newline = buffer.find('\n', start)) != std::string::npos) {
          counter->count(std::string_view(buffer).substr(start, newline - start));
          start = newline + 1;
        }
        buffer.erase(0, start);
      }
    });
  }
  run_turns(state, engine, counters);
  for (auto& server : servers) server->stop();
  for (int i = 0; i < clients; ++i) ::shutdown(fds[2 * i], SHUT_RDWR);
  for (auto& t : threads) t.join();
  for (int fd : fds) ::close(fd);
}
BENCHMARK(BM_StdioEvents)->Arg(1)->Arg(10)->Unit(benchmark::kMillisecond)->UseRealTime();

struct WsClient {
  boost::asio::io_context io;
  beast::websocket::stream<boost::asio::ip::tcp::socket> ws{io};
  explicit WsClient(uint16_t port) {
    boost::asio::ip::tcp::resolver resolver(io);
    boost::asio::connect(ws.next_layer(), resolver.resolve("127.0.0.1", std::to_string(port)));
    ws.set_option(beast::websocket::stream_base::decorator([](beast::websocket::request_type& r) {
      r.set(beast::http::field::authorization, std::string("Bearer ") + kToken);
    }));
    ws.handshake("127.0.0.1", "/");
  }
};

void BM_WebSocketEvents(benchmark::State& state) {
  const int clients = static_cast<int>(state.range(0));
  Engine engine;
  WebSocketServerOptions options;
  options.token = kToken;
  options.session.queue.capacity = 1 << 16;
  auto server = std::move(WebSocketServer::start(*engine.transport, options)).value();
  std::vector<std::unique_ptr<WsClient>> sockets;
  std::vector<std::unique_ptr<Counter>> counters;
  std::vector<std::thread> readers;
  for (int i = 0; i < clients; ++i) {
    sockets.push_back(std::make_unique<WsClient>(server->port()));
    counters.push_back(std::make_unique<Counter>());
    WsClient* client = sockets.back().get();
    Counter* counter = counters.back().get();
    readers.emplace_back([client, counter] {
      beast::flat_buffer buffer;
      while (true) {
        beast::error_code error;
        client->ws.read(buffer, error);
        if (error) return;
        const auto data = buffer.data();
        counter->count(std::string_view(static_cast<const char*>(data.data()), data.size()));
        buffer.consume(buffer.size());
      }
    });
  }
  while (server->client_count() < static_cast<size_t>(clients)) std::this_thread::yield();
  run_turns(state, engine, counters);
  server->stop();
  for (auto& t : readers) t.join();
}
BENCHMARK(BM_WebSocketEvents)->Arg(1)->Arg(10)->Unit(benchmark::kMillisecond)->UseRealTime();

long rss_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return 0;
}

void BM_WebSocketIdleClientMemory(benchmark::State& state) {
  constexpr int kClients = 200;
  Engine engine;
  WebSocketServerOptions options;
  options.token = kToken;
  auto server = std::move(WebSocketServer::start(*engine.transport, options)).value();
  double per_client_kib = 0;
  for (auto _ : state) {
    std::vector<std::unique_ptr<WsClient>> clients;
    const long before = rss_kib();
    for (int i = 0; i < kClients; ++i) clients.push_back(std::make_unique<WsClient>(server->port()));
    while (server->client_count() < static_cast<size_t>(kClients)) std::this_thread::yield();
    per_client_kib = static_cast<double>(rss_kib() - before) / kClients;
    clients.clear();
    while (server->client_count() != 0) std::this_thread::yield();
  }
  state.counters["rss_kib_per_idle_client"] = per_client_kib;
  server->stop();
}
BENCHMARK(BM_WebSocketIdleClientMemory)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace keel

BENCHMARK_MAIN();
