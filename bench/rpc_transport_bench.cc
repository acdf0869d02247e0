// Events per second through the JSON-RPC transports (stdio over socketpairs, WebSocket over loopback) to 1
// and to 10 clients, and the memory of an idle connected WebSocket client.
//
// Each iteration runs one turn whose scripted model streams 500 text deltas; it ends when every client has
// read that turn's turn.complete. items_per_second = event notifications read by all clients together per
// second (a client reads and counts lines/messages; it does not parse them). The store is SQLite with
// synchronous=OFF so the figure is the transport's, not the disk's. Memory: RSS growth per connected idle
// client, over 200 clients; the clients live in the same process, so the figure includes the client side's
// socket and stream (an upper bound for the server's share).
//
// Unauthenticated memory (issue 15, point 4): RSS before and after 200 connections that present no token and
// announce a 1 MiB request body, each sending as much of that body as the server takes (non-blocking, until
// no connection makes progress for 200 ms), then holding the connection open. A server that reads the body
// before it checks the token holds up to 1 MiB per connection; one that reads the bounded header only holds
// almost nothing, and refuses connections past its cap of unauthenticated ones at once.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
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
#include "keel/sqlite_store.h"
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
    store = std::move(open_sqlite_store({.path = dir.file("bench.db"), .synchronous = Synchronous::kOff}))
                .value();
    core = std::make_unique<EngineCore>(
        EngineDeps{store.get(), &provider, nullptr, &tools, &gate, &clock, &ids}, EngineOptions{});
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
    transport->send(
        Op{"turn.submit", "bench", "turn-" + std::to_string(n), {{"threadId", thread}, {"input", "go"}}});
  }
};

uint64_t total_events(const std::vector<std::unique_ptr<Counter>>& counters) {
  uint64_t sum = 0;
  for (const auto& counter : counters) sum += counter->events;
  return sum;
}

// The measured part, the same for every transport: one turn per iteration, over once every client has read
// its turn.complete; the items are the notifications all clients read meanwhile.
void run_turns(benchmark::State& state, Engine& engine,
               const std::vector<std::unique_ptr<Counter>>& counters) {
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

// One unauthenticated client: a non-blocking socket that sends `request` as far as the server reads it.
struct RawSender {
  int fd = -1;
  size_t sent = 0;
  bool done = false;
  ~RawSender() {
    if (fd >= 0) ::close(fd);
  }
  // Sends what the socket takes now; returns the bytes sent.
  size_t push(const std::string& request) {
    if (done) return 0;
    size_t pushed = 0;
    while (sent < request.size()) {
      const ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
      if (n > 0) {
        sent += static_cast<size_t>(n);
        pushed += static_cast<size_t>(n);
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return pushed;
      done = true;  // the server closed the connection
      return pushed;
    }
    done = true;
    return pushed;
  }
};

void BM_WebSocketUnauthenticatedMemory(benchmark::State& state) {
  constexpr int kConnections = 200;
  constexpr size_t kBody = size_t{1} << 20;
  Engine engine;
  WebSocketServerOptions options;
  options.token = kToken;
  auto server = std::move(WebSocketServer::start(*engine.transport, options)).value();
  // The whole body but its last byte: the server waits for the rest with what it read.
  std::string request =
      "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: " + std::to_string(kBody) + "\r\n\r\n";
  request.append(kBody - 1, 'x');
  long before = 0;
  long after = 0;
  size_t body_bytes_sent = 0;
  for (auto _ : state) {
    before = rss_kib();
    std::vector<std::unique_ptr<RawSender>> senders;
    for (int i = 0; i < kConnections; ++i) {
      auto sender = std::make_unique<RawSender>();
      sender->fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_in address{};
      address.sin_family = AF_INET;
      address.sin_port = htons(server->port());
      address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      if (::connect(sender->fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
        state.SkipWithError("connect failed");
        return;
      }
      ::fcntl(sender->fd, F_SETFL, ::fcntl(sender->fd, F_GETFL) | O_NONBLOCK);
      senders.push_back(std::move(sender));
    }
    while (true) {
      size_t progress = 0;
      for (auto& sender : senders) progress += sender->push(request);
      if (progress > 0) continue;
      std::vector<pollfd> waiting;
      for (auto& sender : senders) {
        if (!sender->done) waiting.push_back({sender->fd, POLLOUT, 0});
      }
      if (waiting.empty() || ::poll(waiting.data(), waiting.size(), 200) <= 0) break;
    }
    // The server may still be reading what the kernel buffered: RSS is taken once it holds still.
    after = rss_kib();
    for (int still = 0; still < 5;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      const long now = rss_kib();
      still = now == after ? still + 1 : 0;
      after = now;
    }
    body_bytes_sent = 0;
    for (auto& sender : senders) body_bytes_sent += sender->sent;
  }
  state.counters["rss_mib_before"] = static_cast<double>(before) / 1024;
  state.counters["rss_mib_after"] = static_cast<double>(after) / 1024;
  state.counters["mib_sent_by_clients"] = static_cast<double>(body_bytes_sent) / (1 << 20);
}
BENCHMARK(BM_WebSocketUnauthenticatedMemory)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace keel

BENCHMARK_MAIN();
