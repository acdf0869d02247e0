// bench/mcp_bench.cc — keel's MCP client (issue 19): the round trip of one tools/call over stdio against a
// trivial server, and starting 100 servers with 50 tools each into the tool registry (time and memory).
//
// BM_StdioToolCallRoundTrip: one session to keel-mcp-test-server (2025-11-25, initialize); each iteration
// calls its `add` tool and waits for the result. What it measures is keel's framing, JSON, pending table and
// threads plus one pipe round trip and the server's own parse; the server does nothing else.
// BM_HundredServersFiftyToolsEach: an McpHost with 100 configured stdio servers, each listing 50 tools (its
// own 17 and --tools=33 more), from start() until every server is ready and its tools are registered (5,000
// tools); counters: the tools registered and the RSS growth of keel's process (each server's own memory is
// its process's, not keel's).
#include <benchmark/benchmark.h>

#include <fstream>
#include <future>
#include <string>

#include "keel/clock.h"
#include "keel/tool_registry.h"
#include "mcp/client/session_open.h"
#include "mcp/client/stdio_transport.h"
#include "mcp/host/mcp_host.h"
#include "mcp/host/session_factory.h"
#include "util/thread_scheduler.h"

namespace keel::mcp {
namespace {

// Resident set size of this process in KiB (VmRSS of /proc/self/status); 0 when unreadable.
long rss_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return 0;
}

Result<std::shared_ptr<McpSession>> open_test_server(std::vector<std::string> args) {
  StdioServerSpec spec;
  spec.command = KEEL_MCP_TEST_SERVER;
  spec.args = std::move(args);
  auto transport = make_stdio_transport(std::move(spec));
  if (!transport) return std::unexpected(transport.error());
  return open_mcp_session(std::move(*transport), McpClientOptions{}, McpSessionEvents{});
}

void BM_StdioToolCallRoundTrip(benchmark::State& state) {
  auto session = open_test_server({"--mode=legacy"});
  if (!session) {
    state.SkipWithError(session.error().to_string().c_str());
    return;
  }
  for (auto _ : state) {
    std::promise<Result<McpCallResult>> done;
    McpCallRequest request;
    request.tool = "add";
    request.arguments = {{"a", 1}, {"b", 2}};
    (*session)->call_tool(std::move(request),
                          [&](Result<McpCallResult> result) { done.set_value(std::move(result)); });
    auto result = done.get_future().get();
    if (!result) {
      state.SkipWithError(result.error().to_string().c_str());
      break;
    }
    benchmark::DoNotOptimize(result);
  }
  (*session)->close();
}
BENCHMARK(BM_StdioToolCallRoundTrip)->UseRealTime()->Unit(benchmark::kMicrosecond);

void BM_HundredServersFiftyToolsEach(benchmark::State& state) {
  const int servers = static_cast<int>(state.range(0));
  double rss_growth_kib = 0;
  size_t tools = 0;
  for (auto _ : state) {
    SystemClock clock;
    ThreadScheduler scheduler;
    ToolRegistry registry;
    std::vector<McpServerSettings> settings;
    for (int i = 0; i < servers; ++i) {
      McpServerSettings server;
      server.name = "s" + std::to_string(i);
      server.command = KEEL_MCP_TEST_SERVER;
      server.args = {"--mode=legacy", "--tools=33"};
      settings.push_back(std::move(server));
    }
    const long before = rss_kib();
    McpHost host(std::move(settings), make_mcp_session_factory(nullptr), registry, clock, scheduler);
    host.start();
    const bool settled = host.wait_until(
        [&](const std::vector<McpServerStatus>& all) {
          for (const auto& server : all) {
            if (server.state != McpServerState::kReady) return false;
          }
          return true;
        },
        std::chrono::minutes(5));
    if (!settled) {
      state.SkipWithError("not every server became ready");
      break;
    }
    rss_growth_kib = static_cast<double>(rss_kib() - before);
    tools = registry.snapshot()->tools().size();
    state.PauseTiming();
    host.shutdown();
    state.ResumeTiming();
  }
  state.counters["tools"] = static_cast<double>(tools);
  state.counters["rss_growth_MiB"] = rss_growth_kib / 1024.0;
}
BENCHMARK(BM_HundredServersFiftyToolsEach)
    ->Arg(100)
    ->Iterations(3)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace keel::mcp

BENCHMARK_MAIN();
